//! Encoders for every reply body of spec 10 and 11, one file per family,
//! plus the result section of result-framed replies (spec 6.2).
//!
//! Inputs are plain, domain-neutral structs defined here (borrowing names
//! and option blocks); the server converts its own types at the boundary.
//! Encoders append to a `Vec<u8>`. Where a record carries a count of the
//! entries that follow (stream topics, topic partitions, group members),
//! the details encoder takes the entries and asserts the count matches.
//! The result section is not written by these encoders: `reply` adds it
//! exactly when the reply's operation is result-framed.

mod groups;
mod messages;
mod streams;
mod system;
mod users;

pub use groups::{
    Assignment, ConsumerGroupInfo, ConsumerOffsetInfo, GroupMember, encode_group_details,
    encode_groups,
};
pub use messages::{
    PollReplyHeader, STALE_ASSIGNMENT_PARTITION, SendConfirmation, encode_send_confirmations,
};
pub use streams::{
    CompressionAlgorithm, PartitionInfo, StreamInfo, TopicInfo, encode_stream_details,
    encode_streams, encode_topic_details, encode_topics,
};
pub use system::{
    CacheMetric, ClientGroup, ClientInfo, ClusterMetadata, ClusterNode, NodeRole, NodeStatus,
    OptionDescriptor, PollRouting, Stats, Transport, encode_client_details, encode_clients,
    encode_describe_options,
};
pub use users::{
    LoginReply, PersonalAccessTokenInfo, UserInfo, encode_personal_access_tokens, encode_raw_token,
    encode_user_details, encode_users,
};

use crate::error::ErrorCode;
use crate::wire::WireWrite;

/// The result section of a success: `count = 0`, then the payload.
pub const RESULT_SUCCESS: [u8; 4] = [0; 4];

/// Appends the success prefix `[0]`.
pub fn put_result_success(out: &mut Vec<u8>) {
    out.put_bytes(&RESULT_SUCCESS);
}

/// Appends a rejection `[1][0][code]`: one entry, index 0, no payload.
pub fn put_result_rejection(out: &mut Vec<u8>, code: ErrorCode) {
    out.put_u32_le(1);
    out.put_u32_le(0);
    out.put_u32_le(code.as_u32());
}

/// The 12-byte rejection body.
pub fn result_rejection(code: ErrorCode) -> [u8; 12] {
    let mut out = [0u8; 12];
    out[..4].copy_from_slice(&1u32.to_le_bytes());
    out[8..].copy_from_slice(&code.as_u32().to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use iggy_binary_protocol::{result_code, result_section_len};

    #[test]
    fn given_result_sections_when_read_by_the_sdk_helpers_should_give_code_and_length() {
        let mut success = Vec::new();
        put_result_success(&mut success);
        success.extend_from_slice(b"payload");
        assert_eq!(result_code(&success), Some(0));
        assert_eq!(result_section_len(&success), Some(4));
        let mut rejection = Vec::new();
        put_result_rejection(&mut rejection, ErrorCode::StreamNameAlreadyExists);
        assert_eq!(rejection, [1, 0, 0, 0, 0, 0, 0, 0, 0xf4, 0x03, 0, 0]);
        assert_eq!(
            rejection,
            result_rejection(ErrorCode::StreamNameAlreadyExists)
        );
        assert_eq!(result_code(&rejection), Some(1012));
    }
}
