//! Message replies: the poll reply header (spec 11.5) and send
//! confirmations (10.10).
//!
//! ```text
//! poll reply    = partition_id u32 | current_offset u64 | messages_count u32
//!                 | batch records back to back (not written here)
//! confirmations = count u32 | count × (stream_id u32 | topic_id u32
//!                 | partition_id u32 | base_offset u64)
//! ```

use crate::wire::WireWrite;

/// `partition_id` of an empty poll telling a group member to re-sync.
pub const STALE_ASSIGNMENT_PARTITION: u32 = u32::MAX;

/// The 16 bytes before the records of a poll reply. A poll reply is never
/// shorter than this, even when empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollReplyHeader {
    pub partition_id: u32,
    /// The partition's last committed offset (0 when empty).
    pub current_offset: u64,
    pub messages_count: u32,
}

impl PollReplyHeader {
    pub const SIZE: usize = 16;

    /// An empty poll asking a consumer-group member to re-sync (spec 10.7).
    pub fn stale_assignment(current_offset: u64) -> Self {
        Self {
            partition_id: STALE_ASSIGNMENT_PARTITION,
            current_offset,
            messages_count: 0,
        }
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32_le(self.partition_id);
        out.put_u64_le(self.current_offset);
        out.put_u32_le(self.messages_count);
    }

    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut out = Vec::with_capacity(Self::SIZE);
        self.encode(&mut out);
        out.try_into().expect("the poll reply header is 16 bytes")
    }
}

/// Where one appended batch landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendConfirmation {
    pub stream_id: u32,
    pub topic_id: u32,
    pub partition_id: u32,
    pub base_offset: u64,
}

/// Appends the confirmation list (no trailing bytes: the SDK refuses them).
pub fn encode_send_confirmations(out: &mut Vec<u8>, confirmations: &[SendConfirmation]) {
    out.put_len_u32(confirmations.len());
    for c in confirmations {
        out.put_u32_le(c.stream_id);
        out.put_u32_le(c.topic_id);
        out.put_u32_le(c.partition_id);
        out.put_u64_le(c.base_offset);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::{build_record, stamp_record};
    use iggy_binary_protocol::WireDecode;
    use iggy_binary_protocol::responses::messages::{PollMessagesResponse, SendMessagesResponse};

    #[test]
    fn given_confirmations_when_decoded_by_the_sdk_should_match() {
        let list = [
            SendConfirmation {
                stream_id: 1,
                topic_id: 2,
                partition_id: 3,
                base_offset: 4,
            },
            SendConfirmation {
                stream_id: 5,
                topic_id: 6,
                partition_id: 7,
                base_offset: u64::MAX,
            },
        ];
        let mut out = Vec::new();
        encode_send_confirmations(&mut out, &list);
        let (sdk, used) = SendMessagesResponse::decode(&out).unwrap();
        assert_eq!(used, out.len());
        assert_eq!(sdk.confirmations.len(), 2);
        assert_eq!(sdk.confirmations[1].base_offset, u64::MAX);
        assert_eq!(sdk.confirmations[0].partition_id, 3);
        let mut empty = Vec::new();
        encode_send_confirmations(&mut empty, &[]);
        assert_eq!(empty, [0, 0, 0, 0]);
    }

    #[test]
    fn given_poll_reply_with_a_record_when_decoded_by_the_sdk_should_list_messages() {
        let mut record = build_record(1_000, &[(7, b"a", b""), (8, b"bc", b"")]);
        stamp_record(&mut record, 0, 10, 2_000);
        let mut out = Vec::new();
        PollReplyHeader {
            partition_id: 0,
            current_offset: 11,
            messages_count: 2,
        }
        .encode(&mut out);
        out.extend_from_slice(&record);
        let sdk = PollMessagesResponse::decode(&out).unwrap();
        assert_eq!(
            (
                sdk.header.partition_id,
                sdk.header.current_offset,
                sdk.header.messages_count
            ),
            (0, 11, 2)
        );
        let messages: Vec<_> = sdk.messages.map(Result::unwrap).collect();
        assert_eq!(messages.len(), 2);
        assert_eq!(
            (messages[1].offset, messages[1].id, messages[1].payload),
            (11, 8, &b"bc"[..])
        );
        assert_eq!(messages[0].timestamp, 2_000);
        let stale = PollReplyHeader::stale_assignment(5).to_bytes();
        assert_eq!(&stale[..4], &[0xff; 4]);
    }
}
