//! The partition primary's auto-commits not yet applied (storage spec
//! §11): a poll's auto-commit is proposed without waiting for it, and the
//! primary serves it as the consumer's offset meanwhile, so the next
//! `Next` poll continues after it.

use engine::partition::ConsumerKey;
use storage::Offset;

use super::PartitionReplica;
use engine::cluster_partition::Command;

impl PartitionReplica {
    /// A poll's auto-commit of `offset` for `consumer` (storage spec
    /// §11: on the partition primary only, monotonic, submitted before
    /// the poll is answered without waiting for it). Until the group
    /// applies it, this primary serves it as the consumer's offset
    /// (`pending_offset`), so the next `Next` poll continues after it.
    /// Polls served by a backup do not advance the offset.
    pub fn auto_commit(&self, consumer: ConsumerKey, offset: Offset) {
        let Some(view) = self.leading.get() else {
            return;
        };
        let mut pending = self.auto_commits.borrow_mut();
        let entry = pending.entry(consumer).or_insert((view, offset));
        if entry.0 != view || entry.1 < offset {
            *entry = (view, offset);
        }
        drop(pending);
        self.propose(Command::StoreOffset { consumer, offset });
    }

    /// The auto-commit this primary proposed for `consumer` and has not
    /// yet seen applied as `stored` (the group's committed offset); none
    /// once this node no longer leads the view it was proposed in.
    pub fn pending_offset(&self, consumer: ConsumerKey, stored: Option<Offset>) -> Option<Offset> {
        let mut pending = self.auto_commits.borrow_mut();
        let &(view, offset) = pending.get(&consumer)?;
        if self.leading.get() != Some(view) || stored.is_some_and(|stored| stored >= offset) {
            pending.remove(&consumer);
            return None;
        }
        Some(offset)
    }

    /// An explicit offset write or delete for `consumer` supersedes its
    /// pending auto-commit (an explicit store may move the offset back).
    pub fn forget_auto_commit(&self, consumer: ConsumerKey) {
        self.auto_commits.borrow_mut().remove(&consumer);
    }
}
