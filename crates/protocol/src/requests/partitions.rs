//! Partition and segment requests (spec 10.6, 10.9).
//!
//! ```text
//! 402 CREATE_PARTITIONS / 403 DELETE_PARTITIONS  stream_id Id | topic_id Id | partitions_count u32
//! 503 DELETE_SEGMENTS  stream_id Id | topic_id Id | partition_id u32 | segments_count u32
//! ```

use super::{TopicRef, exact};
use crate::wire::DecodeError;

/// Most partitions one create or delete request may name; 0 is refused too
/// (status 2015).
pub const MAX_PARTITIONS_PER_REQUEST: u32 = 1000;

/// Create or delete `partitions_count` partitions (the last N on delete).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionsChange<'a> {
    pub topic: TopicRef<'a>,
    pub partitions_count: u32,
}

impl<'a> PartitionsChange<'a> {
    pub fn decode(body: &'a [u8]) -> Result<Self, DecodeError> {
        exact(body, |r| {
            Ok(Self {
                topic: TopicRef::read(r)?,
                partitions_count: r.u32("partitions count")?,
            })
        })
    }

    /// Whether the count is within 1..=1000 (else status 2015).
    pub fn count_is_valid(&self) -> bool {
        (1..=MAX_PARTITIONS_PER_REQUEST).contains(&self.partitions_count)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeleteSegments<'a> {
    pub topic: TopicRef<'a>,
    pub partition_id: u32,
    pub segments_count: u32,
}

impl<'a> DeleteSegments<'a> {
    pub fn decode(body: &'a [u8]) -> Result<Self, DecodeError> {
        exact(body, |r| {
            Ok(Self {
                topic: TopicRef::read(r)?,
                partition_id: r.u32("partition id")?,
                segments_count: r.u32("segments count")?,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::primitives::Identifier;
    use crate::requests::sdk;
    use iggy_binary_protocol::requests::partitions::{
        CreatePartitionsRequest, DeletePartitionsRequest,
    };
    use iggy_binary_protocol::requests::segments::DeleteSegmentsRequest;
    use iggy_binary_protocol::{WireEncode, WireIdentifier};

    #[test]
    fn given_sdk_partition_requests_when_decoding_should_match() {
        let sdk = CreatePartitionsRequest {
            stream_id: sdk::named("s"),
            topic_id: WireIdentifier::numeric(0),
            partitions_count: 4,
        };
        let bytes = sdk.to_bytes();
        let ours = PartitionsChange::decode(&bytes).unwrap();
        assert_eq!(ours.topic.stream_id, Identifier::Name("s"));
        assert_eq!(ours.partitions_count, 4);
        assert!(ours.count_is_valid());
        let sdk = DeletePartitionsRequest {
            stream_id: WireIdentifier::numeric(1),
            topic_id: WireIdentifier::numeric(0),
            partitions_count: 0,
        };
        assert!(
            !PartitionsChange::decode(&sdk.to_bytes())
                .unwrap()
                .count_is_valid()
        );
    }

    #[test]
    fn given_sdk_delete_segments_when_decoding_should_match() {
        let sdk = DeleteSegmentsRequest {
            stream_id: WireIdentifier::numeric(1),
            topic_id: WireIdentifier::numeric(2),
            partition_id: 3,
            segments_count: 4,
        };
        let bytes = sdk.to_bytes();
        let ours = DeleteSegments::decode(&bytes).unwrap();
        assert_eq!((ours.partition_id, ours.segments_count), (3, 4));
        assert_eq!(ours.topic.topic_id, Identifier::Numeric(2));
    }
}
