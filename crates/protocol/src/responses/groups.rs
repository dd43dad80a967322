//! Consumer group and consumer offset replies (spec 10.7, 10.8).
//!
//! ```text
//! group record  = id u32 | partitions_count u32 | members_count u32 | name Name
//! group details = group record | members_count × (member_id u32 | partitions_count u32
//!                 | partitions_count × partition_id u32)
//! assignment    = generation u64 | count u32 | count × partition_id u32   (606)
//! offset        = partition_id u32 | current_offset u64 | stored_offset u64 (120, 20 bytes)
//! ```

use crate::primitives::put_name;
use crate::wire::WireWrite;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConsumerGroupInfo<'a> {
    pub id: u32,
    pub partitions_count: u32,
    pub members_count: u32,
    pub name: &'a str,
}

impl ConsumerGroupInfo<'_> {
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32_le(self.id);
        out.put_u32_le(self.partitions_count);
        out.put_u32_le(self.members_count);
        put_name(out, self.name);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupMember<'a> {
    pub id: u32,
    pub partitions: &'a [u32],
}

/// Group records back to back (601).
pub fn encode_groups(out: &mut Vec<u8>, groups: &[ConsumerGroupInfo<'_>]) {
    for group in groups {
        group.encode(out);
    }
}

/// Group details (600, 602): the record and exactly `members_count` members.
pub fn encode_group_details(
    out: &mut Vec<u8>,
    group: &ConsumerGroupInfo<'_>,
    members: &[GroupMember<'_>],
) {
    assert_eq!(
        group.members_count as usize,
        members.len(),
        "members_count must match the members sent"
    );
    group.encode(out);
    for member in members {
        out.put_u32_le(member.id);
        out.put_len_u32(member.partitions.len());
        for &partition in member.partitions {
            out.put_u32_le(partition);
        }
    }
}

/// A member's partitions (606). Sent even when the member owns none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Assignment<'a> {
    pub generation: u64,
    pub partitions: &'a [u32],
}

impl Assignment<'_> {
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.put_u64_le(self.generation);
        out.put_len_u32(self.partitions.len());
        for &partition in self.partitions {
            out.put_u32_le(partition);
        }
    }
}

/// A stored consumer offset (120).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConsumerOffsetInfo {
    pub partition_id: u32,
    /// The partition's last offset.
    pub current_offset: u64,
    pub stored_offset: u64,
}

impl ConsumerOffsetInfo {
    pub const SIZE: usize = 20;

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32_le(self.partition_id);
        out.put_u64_le(self.current_offset);
        out.put_u64_le(self.stored_offset);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iggy_binary_protocol::WireDecode;
    use iggy_binary_protocol::responses::consumer_groups::{
        ConsumerGroupDetailsResponse, GetConsumerGroupsResponse, SyncConsumerGroupResponse,
    };
    use iggy_binary_protocol::responses::consumer_offsets::ConsumerOffsetResponse;

    #[test]
    fn given_group_details_when_decoded_by_the_sdk_should_match() {
        let group = ConsumerGroupInfo {
            id: 3,
            partitions_count: 4,
            members_count: 2,
            name: "workers",
        };
        let members = [
            GroupMember {
                id: 10,
                partitions: &[0, 2],
            },
            GroupMember {
                id: 11,
                partitions: &[],
            },
        ];
        let mut out = Vec::new();
        encode_group_details(&mut out, &group, &members);
        let (sdk, used) = ConsumerGroupDetailsResponse::decode(&out).unwrap();
        assert_eq!(used, out.len());
        assert_eq!(
            (
                sdk.group.id,
                sdk.group.partitions_count,
                sdk.group.name.as_str()
            ),
            (3, 4, "workers")
        );
        assert_eq!(sdk.members[0].partitions, vec![0, 2]);
        assert_eq!(sdk.members[1].id, 11);
        let mut list = Vec::new();
        encode_groups(
            &mut list,
            &[
                group,
                ConsumerGroupInfo {
                    id: 4,
                    name: "g2",
                    ..group
                },
            ],
        );
        let (sdk, _) = GetConsumerGroupsResponse::decode(&list).unwrap();
        assert_eq!(sdk.groups.len(), 2);
        assert_eq!(sdk.groups[1].name.as_str(), "g2");
    }

    #[test]
    fn given_assignment_and_offset_when_decoded_by_the_sdk_should_match() {
        let mut out = Vec::new();
        Assignment {
            generation: 9,
            partitions: &[1, 5],
        }
        .encode(&mut out);
        let (sdk, used) = SyncConsumerGroupResponse::decode(&out).unwrap();
        assert_eq!(
            (sdk.generation, sdk.partitions, used),
            (9, vec![1, 5], out.len())
        );
        let mut empty = Vec::new();
        Assignment {
            generation: 1,
            partitions: &[],
        }
        .encode(&mut empty);
        assert_eq!(empty.len(), 12);

        let mut out = Vec::new();
        ConsumerOffsetInfo {
            partition_id: 2,
            current_offset: 40,
            stored_offset: 39,
        }
        .encode(&mut out);
        assert_eq!(out.len(), ConsumerOffsetInfo::SIZE);
        let (sdk, _) = ConsumerOffsetResponse::decode(&out).unwrap();
        assert_eq!(
            (sdk.partition_id, sdk.current_offset, sdk.stored_offset),
            (2, 40, 39)
        );
    }
}
