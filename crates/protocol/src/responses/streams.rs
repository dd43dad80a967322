//! Stream, topic and partition replies (spec 10.4, 10.5).
//!
//! ```text
//! stream record    = id u32 | created_at u64 | topics_count u32 | size_bytes u64
//!                    | messages_count u64 | name Name | options_len u32 | options
//! stream details   = stream record | topics_count × topic record
//! topic record     = id u32 | created_at u64 | partitions_count u32 | message_expiry u64
//!                    | compression u8 | max_topic_size u64 | size_bytes u64
//!                    | messages_count u64 | name Name | options_len u32 | options
//!                    | derived_options_len u32 | derived_options
//! topic details    = topic record | partitions_count × partition record
//! topic list (301) = count u32 | count × topic record
//! partition record = id u32 | created_at u64 | segments_count u32 | current_offset u64
//!                    | size_bytes u64 | messages_count u64          (40 bytes)
//! ```
//!
//! Option blocks are written as given; they must be valid options blocks
//! (the SDK refuses the whole reply otherwise).

use crate::primitives::put_name;
use crate::wire::WireWrite;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamInfo<'a> {
    pub id: u32,
    pub created_at: u64,
    pub topics_count: u32,
    pub size_bytes: u64,
    pub messages_count: u64,
    pub name: &'a str,
    pub options: &'a [u8],
}

impl StreamInfo<'_> {
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32_le(self.id);
        out.put_u64_le(self.created_at);
        out.put_u32_le(self.topics_count);
        out.put_u64_le(self.size_bytes);
        out.put_u64_le(self.messages_count);
        put_name(out, self.name);
        out.put_u32_bytes(self.options);
    }
}

/// Stream records back to back, no count (201).
pub fn encode_streams(out: &mut Vec<u8>, streams: &[StreamInfo<'_>]) {
    for stream in streams {
        stream.encode(out);
    }
}

/// Stream details (200, 202): the record and exactly `topics_count` topics.
pub fn encode_stream_details(out: &mut Vec<u8>, stream: &StreamInfo<'_>, topics: &[TopicInfo<'_>]) {
    assert_eq!(
        stream.topics_count as usize,
        topics.len(),
        "topics_count must match the topics sent"
    );
    stream.encode(out);
    for topic in topics {
        topic.encode(out);
    }
}

/// Topic compression byte (spec 8.9); other values fail the SDK's decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum CompressionAlgorithm {
    None = 1,
    Gzip = 2,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopicInfo<'a> {
    pub id: u32,
    pub created_at: u64,
    pub partitions_count: u32,
    /// µs; 0 and `u64::MAX` both read as "never".
    pub message_expiry: u64,
    pub compression: CompressionAlgorithm,
    /// Bytes; 0 server default, `u64::MAX` unlimited.
    pub max_topic_size: u64,
    pub size_bytes: u64,
    pub messages_count: u64,
    pub name: &'a str,
    /// The option keys the client sent at creation.
    pub options: &'a [u8],
    /// Values the server filled in for keys the client did not send.
    pub derived_options: &'a [u8],
}

impl TopicInfo<'_> {
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32_le(self.id);
        out.put_u64_le(self.created_at);
        out.put_u32_le(self.partitions_count);
        out.put_u64_le(self.message_expiry);
        out.put_u8(self.compression as u8);
        out.put_u64_le(self.max_topic_size);
        out.put_u64_le(self.size_bytes);
        out.put_u64_le(self.messages_count);
        put_name(out, self.name);
        out.put_u32_bytes(self.options);
        out.put_u32_bytes(self.derived_options);
    }
}

/// The topic list (301): a count, then the records.
pub fn encode_topics(out: &mut Vec<u8>, topics: &[TopicInfo<'_>]) {
    out.put_len_u32(topics.len());
    for topic in topics {
        topic.encode(out);
    }
}

/// Topic details (300, 302): the record and exactly `partitions_count`
/// partition records.
pub fn encode_topic_details(
    out: &mut Vec<u8>,
    topic: &TopicInfo<'_>,
    partitions: &[PartitionInfo],
) {
    assert_eq!(
        topic.partitions_count as usize,
        partitions.len(),
        "partitions_count must match the partitions sent"
    );
    topic.encode(out);
    for partition in partitions {
        partition.encode(out);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionInfo {
    pub id: u32,
    pub created_at: u64,
    pub segments_count: u32,
    /// The last offset; 0 when empty.
    pub current_offset: u64,
    pub size_bytes: u64,
    pub messages_count: u64,
}

impl PartitionInfo {
    pub const SIZE: usize = 40;

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32_le(self.id);
        out.put_u64_le(self.created_at);
        out.put_u32_le(self.segments_count);
        out.put_u64_le(self.current_offset);
        out.put_u64_le(self.size_bytes);
        out.put_u64_le(self.messages_count);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iggy_binary_protocol::WireDecode;
    use iggy_binary_protocol::responses::streams::{GetStreamResponse, GetStreamsResponse};
    use iggy_binary_protocol::responses::topics::{GetTopicResponse, GetTopicsResponse};

    fn options() -> Vec<u8> {
        let mut block = Vec::new();
        crate::primitives::put_kv_pair(&mut block, 2, b"durability", 2, b"replicated");
        block
    }

    fn topic<'a>(options: &'a [u8], derived: &'a [u8]) -> TopicInfo<'a> {
        TopicInfo {
            id: 0,
            created_at: 1_767_225_600_000_000,
            partitions_count: 2,
            message_expiry: u64::MAX,
            compression: CompressionAlgorithm::Gzip,
            max_topic_size: 1 << 30,
            size_bytes: 100,
            messages_count: 5,
            name: "t",
            options,
            derived_options: derived,
        }
    }

    fn partition(id: u32) -> PartitionInfo {
        PartitionInfo {
            id,
            created_at: 7,
            segments_count: 1,
            current_offset: 4,
            size_bytes: 50,
            messages_count: 5,
        }
    }

    #[test]
    fn given_topic_details_when_decoded_by_the_sdk_should_match() {
        let (options, mut derived) = (options(), Vec::new());
        crate::primitives::put_kv_pair(
            &mut derived,
            2,
            b"segment_size",
            12,
            &(1u64 << 30).to_le_bytes(),
        );
        let mut out = Vec::new();
        encode_topic_details(
            &mut out,
            &topic(&options, &derived),
            &[partition(0), partition(1)],
        );
        let (sdk, used) = GetTopicResponse::decode(&out).unwrap();
        assert_eq!(used, out.len());
        assert_eq!(
            (
                sdk.topic.name.as_str(),
                sdk.topic.compression_algorithm,
                sdk.topic.max_topic_size
            ),
            ("t", 2, 1 << 30)
        );
        assert_eq!(sdk.topic.options.as_bytes(), &options[..]);
        assert_eq!(sdk.topic.derived_options.as_bytes(), &derived[..]);
        assert_eq!(sdk.partitions.len(), 2);
        assert_eq!(
            (sdk.partitions[1].id, sdk.partitions[1].current_offset),
            (1, 4)
        );
        let mut record = Vec::new();
        partition(0).encode(&mut record);
        assert_eq!(record.len(), PartitionInfo::SIZE);
    }

    #[test]
    fn given_topic_list_when_decoded_by_the_sdk_should_match() {
        let mut out = Vec::new();
        encode_topics(
            &mut out,
            &[
                topic(&[], &[]),
                TopicInfo {
                    id: 1,
                    name: "u",
                    ..topic(&[], &[])
                },
            ],
        );
        let (sdk, used) = GetTopicsResponse::decode(&out).unwrap();
        assert_eq!((sdk.topics.len(), used), (2, out.len()));
        assert_eq!(sdk.topics[1].name.as_str(), "u");
    }

    #[test]
    fn given_stream_details_and_list_when_decoded_by_the_sdk_should_match() {
        let options = options();
        let stream = StreamInfo {
            id: 2,
            created_at: 9,
            topics_count: 1,
            size_bytes: 10,
            messages_count: 11,
            name: "orders",
            options: &[],
        };
        let mut out = Vec::new();
        encode_stream_details(
            &mut out,
            &stream,
            &[TopicInfo {
                partitions_count: 0,
                ..topic(&options, &[])
            }],
        );
        let (sdk, used) = GetStreamResponse::decode(&out).unwrap();
        assert_eq!(used, out.len());
        assert_eq!(
            (
                sdk.stream.id,
                sdk.stream.name.as_str(),
                sdk.stream.messages_count
            ),
            (2, "orders", 11)
        );
        assert_eq!(sdk.topics[0].options.as_bytes(), &options[..]);
        let mut list = Vec::new();
        encode_streams(
            &mut list,
            &[
                stream,
                StreamInfo {
                    id: 3,
                    name: "b",
                    ..stream
                },
            ],
        );
        let (sdk, _) = GetStreamsResponse::decode(&list).unwrap();
        assert_eq!(
            sdk.streams.iter().map(|s| s.id).collect::<Vec<_>>(),
            vec![2, 3]
        );
    }
}
