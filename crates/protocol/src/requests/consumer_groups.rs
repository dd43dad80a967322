//! Consumer group requests (spec 10.7). The list (601) is a `TopicRef`.
//!
//! ```text
//! 600 GET / 603 DELETE / 604 JOIN / 605 LEAVE / 606 SYNC
//!                           stream_id Id | topic_id Id | group_id Id
//! 602 CREATE_CONSUMER_GROUP stream_id Id | topic_id Id | name Name
//! ```

use super::{TopicRef, exact};
use crate::primitives::{Identifier, WireName};
use crate::wire::DecodeError;

/// A request naming one consumer group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupRef<'a> {
    pub topic: TopicRef<'a>,
    pub group_id: Identifier<'a>,
}

impl<'a> GroupRef<'a> {
    pub fn decode(body: &'a [u8]) -> Result<Self, DecodeError> {
        exact(body, |r| {
            Ok(Self {
                topic: TopicRef::read(r)?,
                group_id: Identifier::decode(r, "group id")?,
            })
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateConsumerGroup<'a> {
    pub topic: TopicRef<'a>,
    pub name: WireName<'a>,
}

impl<'a> CreateConsumerGroup<'a> {
    pub fn decode(body: &'a [u8]) -> Result<Self, DecodeError> {
        exact(body, |r| {
            Ok(Self {
                topic: TopicRef::read(r)?,
                name: WireName::decode(r, "group name")?,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::requests::sdk;
    use iggy_binary_protocol::requests::consumer_groups::{
        CreateConsumerGroupRequest, JoinConsumerGroupRequest, SyncConsumerGroupRequest,
    };
    use iggy_binary_protocol::{WireEncode, WireIdentifier, WireName as SdkName};

    #[test]
    fn given_sdk_group_requests_when_decoding_should_match() {
        let sdk = CreateConsumerGroupRequest {
            stream_id: WireIdentifier::numeric(1),
            topic_id: sdk::named("t"),
            name: SdkName::new("workers").unwrap(),
        };
        let bytes = sdk.to_bytes();
        let ours = CreateConsumerGroup::decode(&bytes).unwrap();
        assert_eq!(ours.name.as_str(), "workers");
        assert_eq!(ours.topic.topic_id, Identifier::Name("t"));
        let join = JoinConsumerGroupRequest {
            stream_id: WireIdentifier::numeric(1),
            topic_id: WireIdentifier::numeric(2),
            group_id: sdk::named("workers"),
        };
        assert_eq!(
            GroupRef::decode(&join.to_bytes()).unwrap().group_id,
            Identifier::Name("workers")
        );
        let sync = SyncConsumerGroupRequest {
            stream_id: WireIdentifier::numeric(1),
            topic_id: WireIdentifier::numeric(2),
            group_id: WireIdentifier::numeric(3),
        };
        let mut bytes = sync.to_bytes().to_vec();
        assert_eq!(
            GroupRef::decode(&bytes).unwrap().group_id,
            Identifier::Numeric(3)
        );
        bytes.push(0);
        assert!(GroupRef::decode(&bytes).is_err());
    }
}
