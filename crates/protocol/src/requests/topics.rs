//! Topic requests (spec 10.5).
//!
//! ```text
//! 300 GET_TOPIC / 303 DELETE_TOPIC / 305 PURGE_TOPIC  stream_id Id | topic_id Id
//! 301 GET_TOPICS    stream_id Id (a StreamRef)
//! 302 CREATE_TOPIC  stream_id Id | partitions_count u32 | name Name | options to end
//! 304 UPDATE_TOPIC  stream_id Id | topic_id Id | name Name | options to end
//! ```

use super::{exact, options_to_end};
use crate::primitives::{Identifier, Options, WireName};
use crate::wire::{DecodeError, Reader};

/// A request naming one topic (get, delete, purge, list groups).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopicRef<'a> {
    pub stream_id: Identifier<'a>,
    pub topic_id: Identifier<'a>,
}

impl<'a> TopicRef<'a> {
    pub fn decode(body: &'a [u8]) -> Result<Self, DecodeError> {
        exact(body, Self::read)
    }

    pub(crate) fn read(r: &mut Reader<'a>) -> Result<Self, DecodeError> {
        Ok(Self {
            stream_id: Identifier::decode(r, "stream id")?,
            topic_id: Identifier::decode(r, "topic id")?,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateTopic<'a> {
    pub stream_id: Identifier<'a>,
    pub partitions_count: u32,
    pub name: WireName<'a>,
    pub options: Options<'a>,
}

impl<'a> CreateTopic<'a> {
    pub fn decode(body: &'a [u8]) -> Result<Self, DecodeError> {
        exact(body, |r| {
            Ok(Self {
                stream_id: Identifier::decode(r, "stream id")?,
                partitions_count: r.u32("partitions count")?,
                name: WireName::decode(r, "topic name")?,
                options: options_to_end(r)?,
            })
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpdateTopic<'a> {
    pub topic: TopicRef<'a>,
    pub name: WireName<'a>,
    pub options: Options<'a>,
}

impl<'a> UpdateTopic<'a> {
    pub fn decode(body: &'a [u8]) -> Result<Self, DecodeError> {
        exact(body, |r| {
            Ok(Self {
                topic: TopicRef::read(r)?,
                name: WireName::decode(r, "topic name")?,
                options: options_to_end(r)?,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::requests::sdk;
    use iggy_binary_protocol::requests::topics::{
        CreateTopicRequest, GetTopicRequest, UpdateTopicRequest,
    };
    use iggy_binary_protocol::{WireEncode, WireIdentifier, WireName as SdkName, WireOptions};

    fn durability_options() -> Vec<u8> {
        let mut block = Vec::new();
        crate::primitives::put_kv_pair(
            &mut block,
            2,
            b"consumer_offset_durability",
            2,
            b"replicated",
        );
        crate::primitives::put_kv_pair(&mut block, 2, b"durability", 2, b"replicated");
        block
    }

    #[test]
    fn given_sdk_create_topic_when_decoding_should_match() {
        let sdk = CreateTopicRequest {
            stream_id: sdk::named("s"),
            partitions_count: 3,
            name: SdkName::new("t").unwrap(),
            options: WireOptions::from_slice(&durability_options()).unwrap(),
        };
        let bytes = sdk.to_bytes();
        let ours = CreateTopic::decode(&bytes).unwrap();
        assert_eq!(ours.stream_id, Identifier::Name("s"));
        assert_eq!(ours.partitions_count, 3);
        assert_eq!(ours.name.as_str(), "t");
        assert_eq!(ours.options.len(), 2);
        assert_eq!(ours.options.get("durability").unwrap().value, b"replicated");
    }

    #[test]
    fn given_sdk_update_and_get_topic_when_decoding_should_match() {
        let sdk = UpdateTopicRequest {
            stream_id: WireIdentifier::numeric(1),
            topic_id: sdk::named("t"),
            name: SdkName::new("t2").unwrap(),
            options: WireOptions::empty(),
        };
        let bytes = sdk.to_bytes();
        let ours = UpdateTopic::decode(&bytes).unwrap();
        assert_eq!(
            ours.topic,
            TopicRef {
                stream_id: Identifier::Numeric(1),
                topic_id: Identifier::Name("t")
            }
        );
        assert_eq!(ours.name.as_str(), "t2");
        let get = GetTopicRequest {
            stream_id: WireIdentifier::numeric(1),
            topic_id: WireIdentifier::numeric(2),
        };
        let bytes = get.to_bytes();
        let ours = TopicRef::decode(&bytes).unwrap();
        assert_eq!(ours.topic_id, Identifier::Numeric(2));
    }
}
