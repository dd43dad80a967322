//! Consumer groups: membership keyed by client session and the partition
//! assignment (storage spec §9).
//!
//! Every membership or partition-count change runs an eager rebalance: all
//! assignments are cleared and the topic's partitions, in ID order, are dealt
//! round-robin over the members in `ClientId` order, and the generation is
//! bumped. The cooperative join protocol of spec §9 (pending revocations that
//! wait for the group's offset) needs per-partition served/committed offsets
//! from the partition plane; it would replace `rebalance` on join only, with
//! its state held in `GroupMember`.
//!
//! Invariants (checked by [`ConsumerGroup::assert_assignment`]): a partition
//! is assigned to at most one member, and with at least one member every
//! partition of the topic is assigned.

use std::collections::{BTreeMap, BTreeSet};

use super::ids::{ClientId, ConsumerGroupId, PartitionId};
use super::names::Named;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupMember {
    pub client_id: ClientId,
    pub joined_at_us: u64,
    /// Assigned partitions, ascending.
    pub partitions: Vec<PartitionId>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerGroup {
    pub id: ConsumerGroupId,
    name: String,
    pub created_at_us: u64,
    /// Bumped on every membership or assignment change.
    pub generation: u64,
    members: BTreeMap<ClientId, GroupMember>,
}

impl Named for ConsumerGroup {
    fn name(&self) -> &str {
        &self.name
    }
    fn set_name(&mut self, name: String) {
        self.name = name;
    }
}

impl ConsumerGroup {
    pub fn new(id: ConsumerGroupId, name: String, created_at_us: u64) -> Self {
        Self {
            id,
            name,
            created_at_us,
            generation: 0,
            members: BTreeMap::new(),
        }
    }

    /// Rebuilds a group from a snapshot; the caller validates the assignment.
    pub(crate) fn restore(
        header: ConsumerGroup,
        members: impl IntoIterator<Item = GroupMember>,
    ) -> Self {
        let mut group = header;
        group.members = members.into_iter().map(|m| (m.client_id, m)).collect();
        group
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn members(&self) -> impl Iterator<Item = &GroupMember> {
        self.members.values()
    }

    pub fn members_count(&self) -> usize {
        self.members.len()
    }

    pub fn member(&self, client: ClientId) -> Option<&GroupMember> {
        self.members.get(&client)
    }

    pub fn is_member(&self, client: ClientId) -> bool {
        self.members.contains_key(&client)
    }

    /// The member currently permitted to poll `partition`, if any.
    pub fn owner_of(&self, partition: PartitionId) -> Option<ClientId> {
        self.members
            .values()
            .find(|m| m.partitions.contains(&partition))
            .map(|m| m.client_id)
    }

    /// Adds a member and rebalances. Joining again changes nothing.
    pub(crate) fn join(&mut self, client: ClientId, now_us: u64, partitions_count: u32) -> bool {
        if self.members.contains_key(&client) {
            return false;
        }
        let member = GroupMember {
            client_id: client,
            joined_at_us: now_us,
            partitions: Vec::new(),
        };
        self.members.insert(client, member);
        self.rebalance(partitions_count);
        true
    }

    /// Removes a member and rebalances; `false` if it was not a member.
    pub(crate) fn leave(&mut self, client: ClientId, partitions_count: u32) -> bool {
        if self.members.remove(&client).is_none() {
            return false;
        }
        self.rebalance(partitions_count);
        true
    }

    /// The topic's partition count changed.
    pub(crate) fn partitions_changed(&mut self, partitions_count: u32) {
        self.rebalance(partitions_count);
    }

    /// Eager rebalance: clear everything, deal partitions round-robin.
    fn rebalance(&mut self, partitions_count: u32) {
        for member in self.members.values_mut() {
            member.partitions.clear();
        }
        let member_count = self.members.len();
        if member_count > 0 {
            let mut members: Vec<&mut GroupMember> = self.members.values_mut().collect();
            for partition in 0..partitions_count {
                let slot = partition as usize % member_count;
                members[slot].partitions.push(PartitionId(partition));
            }
        }
        self.generation += 1;
        self.assert_assignment(partitions_count);
    }

    /// Asserts the assignment invariants of the module docs.
    pub fn assert_assignment(&self, partitions_count: u32) {
        assert!(
            self.assignment_is_valid(partitions_count),
            "group assignment invariants"
        );
    }

    /// Whether the invariants of the module docs hold (also used to vet
    /// decoded snapshots).
    pub fn assignment_is_valid(&self, partitions_count: u32) -> bool {
        let mut seen = BTreeSet::new();
        for member in self.members.values() {
            for partition in &member.partitions {
                if partition.0 >= partitions_count || !seen.insert(*partition) {
                    return false;
                }
            }
        }
        self.members.is_empty() || seen.len() == partitions_count as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group() -> ConsumerGroup {
        ConsumerGroup::new(ConsumerGroupId(0), "g".into(), 0)
    }

    fn assigned(group: &ConsumerGroup, client: u128) -> Vec<u32> {
        let member = group.member(ClientId(client)).expect("member");
        member.partitions.iter().map(|p| p.0).collect()
    }

    #[test]
    fn given_members_when_joining_should_deal_partitions_round_robin() {
        let mut g = group();
        assert!(g.join(ClientId(20), 1, 5));
        assert_eq!(assigned(&g, 20), vec![0, 1, 2, 3, 4]);
        assert!(g.join(ClientId(10), 2, 5));
        assert_eq!(assigned(&g, 10), vec![0, 2, 4]);
        assert_eq!(assigned(&g, 20), vec![1, 3]);
        assert_eq!(g.generation, 2);
        assert_eq!(g.owner_of(PartitionId(3)), Some(ClientId(20)));
    }

    #[test]
    fn given_member_when_joining_again_should_change_nothing() {
        let mut g = group();
        g.join(ClientId(1), 0, 2);
        assert!(!g.join(ClientId(1), 5, 2));
        assert_eq!(g.generation, 1);
    }

    #[test]
    fn given_more_members_than_partitions_when_rebalancing_should_leave_some_idle() {
        let mut g = group();
        for client in 0..4 {
            g.join(ClientId(client), 0, 2);
        }
        assert_eq!(assigned(&g, 0), vec![0]);
        assert_eq!(assigned(&g, 1), vec![1]);
        assert!(assigned(&g, 3).is_empty());
        assert!(g.leave(ClientId(0), 2));
        assert_eq!(assigned(&g, 1), vec![0]);
        assert_eq!(assigned(&g, 2), vec![1]);
        assert!(!g.leave(ClientId(0), 2));
        assert_eq!(g.generation, 5);
    }

    #[test]
    fn given_partition_count_change_when_rebalancing_should_cover_new_partitions() {
        let mut g = group();
        g.join(ClientId(1), 0, 1);
        g.join(ClientId(2), 0, 1);
        g.partitions_changed(4);
        assert_eq!(assigned(&g, 1), vec![0, 2]);
        assert_eq!(assigned(&g, 2), vec![1, 3]);
        g.partitions_changed(1);
        assert_eq!(assigned(&g, 1), vec![0]);
        assert!(assigned(&g, 2).is_empty());
        assert_eq!(g.generation, 4);
    }
}
