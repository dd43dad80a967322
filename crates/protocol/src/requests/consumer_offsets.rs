//! Consumer offset requests (spec 10.8), and the offset routing request
//! (123), which reuses the GET body.
//!
//! ```text
//! target     = consumer | stream_id Id | topic_id Id | partition (flag u8 | id u32)
//! 120 GET    target
//! 121 STORE  target | offset u64 | ack u8
//! 122 DELETE target | ack u8
//! ```

use super::{TopicRef, exact};
use crate::primitives::{Consumer, read_optional_partition};
use crate::wire::{DecodeError, Reader};

/// Which consumer's offset, on which partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetTarget<'a> {
    pub consumer: Consumer<'a>,
    pub topic: TopicRef<'a>,
    /// `None`: partition 0 for individual consumers on reads; writes need it.
    pub partition_id: Option<u32>,
}

impl<'a> OffsetTarget<'a> {
    pub fn decode(body: &'a [u8]) -> Result<Self, DecodeError> {
        exact(body, Self::read)
    }

    pub(crate) fn read(r: &mut Reader<'a>) -> Result<Self, DecodeError> {
        Ok(Self {
            consumer: Consumer::decode(r)?,
            topic: TopicRef::read(r)?,
            partition_id: read_optional_partition(r)?,
        })
    }
}

/// How an offset write is acknowledged (spec 8.9). SDK 0.11.0 sends Quorum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum AckLevel {
    NoAck = 0,
    Quorum = 1,
}

fn ack(r: &mut Reader<'_>) -> Result<AckLevel, DecodeError> {
    let at = r.position();
    match r.u8("ack level")? {
        0 => Ok(AckLevel::NoAck),
        1 => Ok(AckLevel::Quorum),
        other => Err(DecodeError::InvalidValue {
            field: "ack level",
            at,
            value: u64::from(other),
        }),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreConsumerOffset<'a> {
    pub target: OffsetTarget<'a>,
    pub offset: u64,
    pub ack: AckLevel,
}

impl<'a> StoreConsumerOffset<'a> {
    pub fn decode(body: &'a [u8]) -> Result<Self, DecodeError> {
        exact(body, |r| {
            Ok(Self {
                target: OffsetTarget::read(r)?,
                offset: r.u64("offset")?,
                ack: ack(r)?,
            })
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeleteConsumerOffset<'a> {
    pub target: OffsetTarget<'a>,
    pub ack: AckLevel,
}

impl<'a> DeleteConsumerOffset<'a> {
    pub fn decode(body: &'a [u8]) -> Result<Self, DecodeError> {
        exact(body, |r| {
            Ok(Self {
                target: OffsetTarget::read(r)?,
                ack: ack(r)?,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::primitives::{ConsumerKind, Identifier};
    use crate::requests::sdk;
    use iggy_binary_protocol::requests::consumer_offsets::{
        DeleteConsumerOffsetRequest, GetConsumerOffsetRequest, StoreConsumerOffsetRequest,
    };
    use iggy_binary_protocol::{AckLevel as SdkAck, WireConsumer, WireEncode, WireIdentifier};

    #[test]
    fn given_sdk_offset_requests_when_decoding_should_match() {
        let consumer = WireConsumer::consumer_group(sdk::named("g"));
        let get = GetConsumerOffsetRequest {
            consumer: consumer.clone(),
            stream_id: WireIdentifier::numeric(1),
            topic_id: WireIdentifier::numeric(2),
            partition_id: None,
        };
        let bytes = get.to_bytes();
        let ours = OffsetTarget::decode(&bytes).unwrap();
        assert_eq!(ours.consumer, sdk::consumer(&consumer));
        assert_eq!(ours.consumer.kind, ConsumerKind::ConsumerGroup);
        assert_eq!(ours.partition_id, None);

        let store = StoreConsumerOffsetRequest {
            consumer: WireConsumer::consumer(WireIdentifier::numeric(1)),
            stream_id: sdk::named("s"),
            topic_id: sdk::named("t"),
            partition_id: Some(0),
            offset: 99,
            ack: SdkAck::Quorum,
        };
        let bytes = store.to_bytes();
        let ours = StoreConsumerOffset::decode(&bytes).unwrap();
        assert_eq!(
            (ours.offset, ours.ack, ours.target.partition_id),
            (99, AckLevel::Quorum, Some(0))
        );
        assert_eq!(ours.target.topic.stream_id, Identifier::Name("s"));

        let delete = DeleteConsumerOffsetRequest {
            consumer: WireConsumer::consumer(WireIdentifier::numeric(1)),
            stream_id: WireIdentifier::numeric(1),
            topic_id: WireIdentifier::numeric(1),
            partition_id: Some(3),
            ack: SdkAck::NoAck,
        };
        let bytes = delete.to_bytes();
        let ours = DeleteConsumerOffset::decode(&bytes).unwrap();
        assert_eq!(
            (ours.ack, ours.target.partition_id),
            (AckLevel::NoAck, Some(3))
        );
        let mut bad_ack = delete.to_bytes().to_vec();
        *bad_ack.last_mut().unwrap() = 2;
        assert!(DeleteConsumerOffset::decode(&bad_ack).is_err());
    }
}
