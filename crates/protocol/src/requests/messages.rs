//! Message requests: poll (spec 10.10, also codes 103 and 104), flush, and
//! the send metadata section (11.1).
//!
//! ```text
//! 100 POLL   consumer | stream_id Id | topic_id Id | partition (flag u8 | id u32)
//!            | strategy (kind u8 | value u64) | count u32 | auto_commit u8
//! 102 FLUSH  stream_id Id | topic_id Id | partition_id u32 | fsync u8
//! 101 SEND   metadata_length u32 | stream_id Id | topic_id Id | partitioning
//!            | messages_count u32 | batch record (256-byte header + frames)
//! ```
//!
//! The send decoder does not copy the batch: it returns the byte range of
//! the record inside the body, so the server validates and stamps it in
//! place (`batch::validate_record`, `batch::stamp_record`).

use super::{TopicRef, exact};
use crate::batch::{BATCH_HEADER_SIZE, BatchError, BatchHeader, Verify, validate_record};
use crate::primitives::{
    Consumer, Identifier, Partitioning, PollingStrategy, read_optional_partition,
};
use crate::wire::{DecodeError, Reader};
use std::ops::Range;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollMessages<'a> {
    pub consumer: Consumer<'a>,
    pub topic: TopicRef<'a>,
    pub partition_id: Option<u32>,
    pub strategy: PollingStrategy,
    pub count: u32,
    pub auto_commit: bool,
}

impl<'a> PollMessages<'a> {
    pub fn decode(body: &'a [u8]) -> Result<Self, DecodeError> {
        exact(body, |r| {
            Ok(Self {
                consumer: Consumer::decode(r)?,
                topic: TopicRef::read(r)?,
                partition_id: read_optional_partition(r)?,
                strategy: PollingStrategy::decode(r)?,
                count: r.u32("count")?,
                auto_commit: r.flag("auto commit")?,
            })
        })
    }
}

/// Code 102 (the reference answers it with status 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlushUnsavedBuffer<'a> {
    pub topic: TopicRef<'a>,
    pub partition_id: u32,
    pub fsync: bool,
}

impl<'a> FlushUnsavedBuffer<'a> {
    pub fn decode(body: &'a [u8]) -> Result<Self, DecodeError> {
        exact(body, |r| {
            Ok(Self {
                topic: TopicRef::read(r)?,
                partition_id: r.u32("partition id")?,
                fsync: r.flag("fsync")?,
            })
        })
    }
}

/// The metadata section of a send, and where its batch record lies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendMessages<'a> {
    pub stream_id: Identifier<'a>,
    pub topic_id: Identifier<'a>,
    pub partitioning: Partitioning<'a>,
    pub messages_count: u32,
    /// The batch record within the body: from the end of the metadata
    /// section to the end of the body.
    pub batch: Range<usize>,
}

impl<'a> SendMessages<'a> {
    pub fn decode(body: &'a [u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(body);
        let declared = r.u32("metadata length")? as usize;
        let mut meta = Reader::new(r.bytes("metadata", declared)?);
        let stream_id = Identifier::decode(&mut meta, "stream id")?;
        let topic_id = Identifier::decode(&mut meta, "topic id")?;
        let partitioning = Partitioning::decode(&mut meta)?;
        let messages_count = meta.u32("messages count")?;
        if !meta.is_empty() {
            return Err(DecodeError::LengthMismatch {
                field: "metadata",
                declared,
                actual: meta.position(),
            });
        }
        let start = r.position();
        if r.remaining() < BATCH_HEADER_SIZE {
            let have = r.remaining();
            return Err(DecodeError::Truncated {
                field: "batch header",
                at: start,
                need: BATCH_HEADER_SIZE,
                have,
            });
        }
        Ok(Self {
            stream_id,
            topic_id,
            partitioning,
            messages_count,
            batch: start..body.len(),
        })
    }

    /// The batch record inside `body` (the body this was decoded from).
    pub fn record<'b>(&self, body: &'b [u8]) -> &'b [u8] {
        &body[self.batch.clone()]
    }

    /// Validates the record (spec 11.4 step 3) and checks that its count
    /// matches `messages_count` and that it claims no encryption key (the
    /// server alone sets `key_id`, when it encrypts at rest).
    pub fn validate(&self, body: &[u8], verify: Verify) -> Result<BatchHeader, BatchError> {
        let header = validate_record(self.record(body), verify)?;
        if header.key_id != 0 {
            return Err(BatchError::KeyIdNotZero {
                found: header.key_id,
            });
        }
        if header.message_count != self.messages_count {
            return Err(BatchError::MessageCountMismatch {
                declared: self.messages_count,
                actual: header.message_count,
            });
        }
        Ok(header)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::requests::sdk;
    use iggy_binary_protocol::requests::messages::{
        FlushUnsavedBufferRequest, PollMessagesRequest, RawMessage, SendMessagesEncoder,
    };
    use iggy_binary_protocol::{
        WireConsumer, WireEncode, WireIdentifier, WirePartitioning, WirePollingStrategy,
    };

    #[test]
    fn given_sdk_poll_request_when_decoding_should_match() {
        let sdk = PollMessagesRequest {
            consumer: WireConsumer::consumer(WireIdentifier::numeric(1)),
            stream_id: sdk::named("s"),
            topic_id: sdk::named("t"),
            partition_id: Some(0),
            strategy: WirePollingStrategy::timestamp(77),
            count: 10,
            auto_commit: true,
        };
        let bytes = sdk.to_bytes();
        let ours = PollMessages::decode(&bytes).unwrap();
        assert_eq!(ours.consumer, sdk::consumer(&sdk.consumer));
        assert_eq!(ours.topic.topic_id, Identifier::Name("t"));
        assert_eq!(
            (
                ours.partition_id,
                ours.strategy,
                ours.count,
                ours.auto_commit
            ),
            (Some(0), PollingStrategy::Timestamp(77), 10, true)
        );
        for (strategy, expected) in [
            (WirePollingStrategy::first(), PollingStrategy::First),
            (WirePollingStrategy::last(), PollingStrategy::Last),
            (WirePollingStrategy::next(), PollingStrategy::Next),
            (WirePollingStrategy::offset(5), PollingStrategy::Offset(5)),
        ] {
            let bytes = PollMessagesRequest {
                strategy,
                partition_id: None,
                ..sdk.clone()
            }
            .to_bytes();
            assert_eq!(PollMessages::decode(&bytes).unwrap().strategy, expected);
        }
    }

    #[test]
    fn given_sdk_flush_request_when_decoding_should_match() {
        let sdk = FlushUnsavedBufferRequest {
            stream_id: WireIdentifier::numeric(1),
            topic_id: WireIdentifier::numeric(2),
            partition_id: 3,
            fsync: true,
        };
        let bytes = sdk.to_bytes();
        let ours = FlushUnsavedBuffer::decode(&bytes).unwrap();
        assert_eq!((ours.partition_id, ours.fsync), (3, true));
    }

    fn sdk_send(partitioning: &WirePartitioning) -> Vec<u8> {
        let messages = [
            RawMessage {
                id: 1,
                origin_timestamp: 1_000,
                headers: None,
                payload: b"hello",
            },
            RawMessage {
                id: 2,
                origin_timestamp: 1_005,
                headers: Some(&[2, 1, 0, 0, 0, b'k', 2, 1, 0, 0, 0, b'v']),
                payload: b"world",
            },
        ];
        let mut buf = bytes::BytesMut::new();
        SendMessagesEncoder::encode(
            &mut buf,
            &sdk::named("s"),
            &WireIdentifier::numeric(1),
            partitioning,
            &messages,
        )
        .unwrap();
        buf.to_vec()
    }

    #[test]
    fn given_sdk_send_body_when_decoding_should_locate_a_valid_batch() {
        for (partitioning, expected) in [
            (
                WirePartitioning::PartitionId(2),
                Partitioning::PartitionId(2),
            ),
            (WirePartitioning::Balanced, Partitioning::Balanced),
            (
                WirePartitioning::MessagesKey(b"key".to_vec()),
                Partitioning::MessagesKey(b"key"),
            ),
        ] {
            let body = sdk_send(&partitioning);
            let ours = SendMessages::decode(&body).unwrap();
            assert_eq!(ours.stream_id, Identifier::Name("s"));
            assert_eq!(ours.partitioning, expected);
            assert_eq!(ours.messages_count, 2);
            assert_eq!(ours.batch.end, body.len());
            let header = ours.validate(&body, Verify::Checksums).unwrap();
            assert_eq!((header.message_count, header.origin_timestamp), (2, 1_000));
        }
    }

    #[test]
    fn given_inconsistent_send_bodies_when_decoding_should_reject() {
        let body = sdk_send(&WirePartitioning::PartitionId(0));
        let mut wrong_length = body.clone();
        wrong_length[0] += 1;
        assert!(SendMessages::decode(&wrong_length).is_err());
        assert!(SendMessages::decode(&body[..body.len() - 300]).is_err());
        let mut wrong_count = body.clone();
        let count_at = 4 + u32::from_le_bytes(body[..4].try_into().unwrap()) as usize - 4;
        wrong_count[count_at] = 3;
        let decoded = SendMessages::decode(&wrong_count).unwrap();
        assert!(matches!(
            decoded.validate(&wrong_count, Verify::Layout),
            Err(BatchError::MessageCountMismatch { .. })
        ));
    }
}
