//! The cooperative join rebalance (storage spec §9), deterministic given the
//! operation's timestamp and in-flight set:
//!
//! 1. Partitions nobody holds (and that are not pending) go round-robin to
//!    members holding none.
//! 2. Fair share is ⌊P / M⌋, the first `P mod M` members (in `ClientId`
//!    order) allowed one extra. Each member above its allowance gives up the
//!    excess from the end of its list, dealt round-robin over members that
//!    hold nothing and are not already the target of a pending revocation.
//! 3. A handed-off partition without in-flight data moves at once; one with
//!    in-flight data becomes a pending revocation.

use std::collections::BTreeSet;

use super::{ConsumerGroup, PendingRevocation};
use crate::metadata::ids::{ClientId, PartitionId};

impl ConsumerGroup {
    pub(super) fn rebalance_cooperative(
        &mut self,
        partitions_count: u32,
        in_flight: &[PartitionId],
        now_us: u64,
    ) {
        self.assign_unowned(partitions_count);
        self.hand_off_excess(partitions_count, in_flight, now_us);
        for member in self.members.values_mut() {
            member.partitions.sort_unstable();
        }
    }

    fn assign_unowned(&mut self, partitions_count: u32) {
        let held: BTreeSet<PartitionId> = self
            .members
            .values()
            .flat_map(|m| m.partitions.iter().copied())
            .chain(self.pending.keys().copied())
            .collect();
        let unowned: Vec<PartitionId> = (0..partitions_count)
            .map(PartitionId)
            .filter(|p| !held.contains(p))
            .collect();
        let idle: Vec<ClientId> = self
            .members
            .values()
            .filter(|m| m.partitions.is_empty())
            .map(|m| m.client_id)
            .collect();
        // The joining member holds nothing, so `idle` is never empty here.
        assert!(unowned.is_empty() || !idle.is_empty(), "a joiner is idle");
        for (index, partition) in unowned.into_iter().enumerate() {
            let receiver = idle[index % idle.len()];
            let member = self.members.get_mut(&receiver).expect("idle member exists");
            member.partitions.push(partition);
        }
    }

    fn hand_off_excess(&mut self, partitions_count: u32, in_flight: &[PartitionId], now_us: u64) {
        let member_count = self.members.len();
        assert!(member_count > 0, "a join leaves at least one member");
        let targets: BTreeSet<ClientId> = self.pending.values().map(|p| p.to).collect();
        let recipients: Vec<ClientId> = self
            .members
            .values()
            .filter(|m| m.partitions.is_empty() && !targets.contains(&m.client_id))
            .map(|m| m.client_id)
            .collect();
        if recipients.is_empty() {
            return;
        }
        let fair = partitions_count as usize / member_count;
        let extra = partitions_count as usize % member_count;
        let mut handoffs: Vec<(ClientId, PartitionId)> = Vec::new();
        for (index, member) in self.members.values_mut().enumerate() {
            let allowance = fair + usize::from(index < extra);
            if member.partitions.len() > allowance {
                let excess = member.partitions.split_off(allowance);
                handoffs.extend(excess.into_iter().map(|p| (member.client_id, p)));
            }
        }
        for (index, (from, partition)) in handoffs.into_iter().enumerate() {
            let to = recipients[index % recipients.len()];
            if in_flight.contains(&partition) {
                let pending = PendingRevocation {
                    partition,
                    from,
                    to,
                    since_us: now_us,
                };
                self.pending.insert(partition, pending);
            } else {
                let member = self.members.get_mut(&to).expect("recipient exists");
                member.partitions.push(partition);
            }
        }
    }
}
