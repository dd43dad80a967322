//! Consumer groups: membership keyed by client session and the partition
//! assignment (storage spec §9).
//!
//! A join runs the cooperative rebalance of [`cooperative`]: partitions that
//! still have polled-but-uncommitted data (the join operation names them,
//! as seen by the primary) are not moved at once but parked as pending
//! revocations until a `CompleteRevocation` operation (offset caught up, or
//! the rebalancing timeout) hands them over. A leave, a member removal or a
//! partition-count change runs an eager rebalance: all assignments and
//! pending revocations are cleared and the partitions, in ID order, are dealt
//! round-robin over the members in `ClientId` order. Every change bumps the
//! generation.
//!
//! Invariants ([`ConsumerGroup::assignment_is_valid`]): a partition is either
//! in exactly one member's list or pending, never both; with at least one
//! member every partition is one of the two; revocations name members.

mod cooperative;

use std::collections::{BTreeMap, BTreeSet};

use super::ids::{ClientId, ConsumerGroupId, PartitionId};
use super::names::Named;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupMember {
    pub client_id: ClientId,
    pub joined_at_us: u64,
    /// Partitions this member may poll, ascending.
    pub partitions: Vec<PartitionId>,
}

/// A partition being handed from one member to another once the group's
/// offset catches up with what was served (storage spec §9, step 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingRevocation {
    pub partition: PartitionId,
    /// The previous owner: it no longer polls but may still commit.
    pub from: ClientId,
    /// The member that receives the partition when the revocation completes.
    pub to: ClientId,
    pub since_us: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerGroup {
    pub id: ConsumerGroupId,
    name: String,
    pub created_at_us: u64,
    /// Bumped on every membership or assignment change.
    pub generation: u64,
    members: BTreeMap<ClientId, GroupMember>,
    pending: BTreeMap<PartitionId, PendingRevocation>,
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
            pending: BTreeMap::new(),
        }
    }

    /// Rebuilds a group from a snapshot; the caller validates the assignment.
    pub(crate) fn restore(
        header: ConsumerGroup,
        members: impl IntoIterator<Item = GroupMember>,
        pending: impl IntoIterator<Item = PendingRevocation>,
    ) -> Self {
        let mut group = header;
        group.members = members.into_iter().map(|m| (m.client_id, m)).collect();
        group.pending = pending.into_iter().map(|p| (p.partition, p)).collect();
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

    /// Pending revocations in partition order (the server forces those
    /// older than the rebalancing timeout).
    pub fn pending_revocations(&self) -> impl Iterator<Item = &PendingRevocation> {
        self.pending.values()
    }

    pub fn pending_revocation(&self, partition: PartitionId) -> Option<&PendingRevocation> {
        self.pending.get(&partition)
    }

    /// Whether `client` may write the group's offset for `partition`: its
    /// owner, or the previous owner while the revocation is pending.
    pub fn may_commit(&self, client: ClientId, partition: PartitionId) -> bool {
        self.owner_of(partition) == Some(client)
            || self
                .pending
                .get(&partition)
                .is_some_and(|p| p.from == client)
    }

    /// Adds a member and rebalances cooperatively; `in_flight` lists the
    /// partitions with polled-but-uncommitted data. Joining again changes
    /// nothing.
    pub(crate) fn join(
        &mut self,
        client: ClientId,
        now_us: u64,
        partitions_count: u32,
        in_flight: &[PartitionId],
    ) -> bool {
        if self.members.contains_key(&client) {
            return false;
        }
        let member = GroupMember {
            client_id: client,
            joined_at_us: now_us,
            partitions: Vec::new(),
        };
        self.members.insert(client, member);
        self.rebalance_cooperative(partitions_count, in_flight, now_us);
        self.generation += 1;
        self.assert_assignment(partitions_count);
        true
    }

    /// Hands a pending partition to its target; `false` if nothing was
    /// pending for it (an eager rebalance may have cleared it meanwhile).
    pub(crate) fn complete_revocation(
        &mut self,
        partition: PartitionId,
        partitions_count: u32,
    ) -> bool {
        let Some(pending) = self.pending.remove(&partition) else {
            return false;
        };
        match self.members.get_mut(&pending.to) {
            Some(target) => {
                target.partitions.push(partition);
                target.partitions.sort_unstable();
                self.generation += 1;
                self.assert_assignment(partitions_count);
            }
            // The target has gone: spec §9 asks for a full eager rebalance.
            None => self.rebalance(partitions_count),
        }
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
        self.pending.clear();
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
        let listed = self.members.values().flat_map(|m| m.partitions.iter());
        for partition in listed.chain(self.pending.keys()) {
            if partition.0 >= partitions_count || !seen.insert(*partition) {
                return false;
            }
        }
        let revocations_name_members = self.pending.iter().all(|(partition, p)| {
            p.partition == *partition && self.is_member(p.from) && self.is_member(p.to)
        });
        let complete = self.members.is_empty() || seen.len() == partitions_count as usize;
        revocations_name_members && complete
    }
}

#[cfg(test)]
mod tests;
