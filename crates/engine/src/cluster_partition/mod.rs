//! A partition group of a cluster (replication spec §2, §4): appends and
//! consumer-offset changes of one partition incarnation committed through
//! Viewstamped Replication (`crate::replicated`) and applied on every
//! replica to its own copy of the partition (segments and offset files).
//!
//! The segment is the op's log: as an append is journaled, its batch is
//! written to the segment (`hold_body`) and the journal record keeps only
//! the entry's fixed part and the body's first `APPEND_PREFIX` bytes (kind
//! and base offset), so each batch is written once per replica. The
//! batches above the committed end are held, never served; applying an
//! append commits its batch; a view change that drops ops cuts their
//! batches (`PartitionLog::truncate_tail`); at open, a record's batch is
//! read back from the segment (the journal ends before one the segment
//! lacks) and a batch no record names is cut. Retention keeps what the
//! latest checkpoint does not cover.
//!
//! A purge restarts the log at offset 0 (storage spec §6.5). It keeps the
//! purged segments in `purged-<op>/` until a checkpoint covers it, since
//! the journal may still name their batches: a record's batch is looked
//! up in the segments of the nearest purge after its op, else in the log.
//! An append journaled while a purge is pending (journaled, not applied)
//! is not held, its offsets belonging to the log the purge starts: its
//! record keeps the whole body until the purge applies, and the batch is
//! held then. `purge.op` names the purge that last emptied the log; a
//! replay after a restart skips the ops below it.
//!
//! The primary fixes what must be equal everywhere before it prepares: the
//! batch's base offset (the end of its log plus the appends in its
//! pipeline) and the timestamp (the entry's), and it checks the batch's
//! layout, so an append that is prepared always applies. Applying is
//! idempotent for appends: the segments outlive the group's checkpoint,
//! so after a restart the journal replays ops the log already holds, and
//! an append whose base offset is below the log's end is taken as done
//! (one below the last purge carried out is skipped whole).
//!
//! ```text
//! op body (little-endian)
//!   0 u8 kind   1 append | 2 store offset | 3 delete offset | 4 purge
//!   append        1 u64 base offset   9.. the batch record (header, messages)
//!   store offset  1 u8 consumer kind (1 consumer, 2 group)  2 u32 id  6 u64 offset
//!   delete offset 1 u8 consumer kind  2 u32 id
//!   purge         1 u64 purge generation (the metadata's, for the topic)
//! result
//!   0 u32 code (0 = done, else the wire error code)
//!   done: append 4 u64 base offset | store offset 4 u8 caught up
//!         | delete, purge: nothing
//! checkpoint state
//!   0 u64 the log's next offset (the segments must hold everything below)
//!   8 u32 n, then n stored consumer offsets in key order:
//!         u8 consumer kind | u32 id | u64 offset        (13 bytes each)
//!   then u64 purge generation of that log | u64 the checkpoint's op
//!   (earlier builds' checkpoints end after the offsets, or after the
//!   first u64)
//! ```
//!
//! State transfer (replication spec §6.5): the checkpoint a replica
//! installs carries the log's end and the offsets, not the messages. A
//! replica whose log ends below the checkpoint's end refills the gap
//! from its peers' segments first (`LogSource`: whole committed batches,
//! appended at their stamped offsets and times, so its segments hold the
//! same bytes as theirs); when the peers' retention already dropped the
//! start of the gap, its log restarts where theirs begin.

mod codec;
mod fetch;
#[cfg(test)]
mod tests;

pub use codec::*;
use codec::{APPEND, append_body, decode_checkpoint, encode_checkpoint};
pub use fetch::*;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::rc::Rc;

use bytes::Bytes;

use consensus::vsr::message::{Entry, Message, ReplicaId};
use consensus::{ClientId, Op, RequestNumber, View};
use protocol::ErrorCode;
use protocol::batch::{BatchHeader, Verify, stamp_record, validate_record};
use storage::{Offset, Storage, StorageError};

use crate::partition::{Partition, PartitionError};
use crate::replicated::{
    Effect, Group, GroupError, Placement, Restore, StateMachine, Submitted, Submitter, Sync, Work,
    wait_for_space,
};

/// Appends applied between background syncs of a `persisted` partition's
/// segments, so that a checkpoint (which fsyncs them first) never meets a
/// large unsynced tail.
const BACKGROUND_SYNC_APPENDS: u32 = 16;

/// The group's state machine: this node's copy of the partition.
pub struct PartitionMachine<S: Storage> {
    partition: Rc<Partition<S>>,
    /// Appends applied since the last background sync.
    unsynced: u32,
    /// Where a checkpoint's missing log comes from; without one, a
    /// checkpoint above this log is refused.
    source: Option<LogSource>,
    /// The log's end after each journaled append not yet applied, by op
    /// (its batch is held in the segment: `hold_body`).
    held: BTreeMap<Op, Offset>,
    /// Purges journaled and not applied yet: the log restarts at 0 when
    /// one applies, so no batch journaled behind one is held before it
    /// applies.
    pending_purges: BTreeSet<Op>,
    /// Appends journaled whole (behind a pending purge, or behind another
    /// such append), not applied yet: their base offset, timestamp and
    /// batch. Once no purge is pending they are held in order.
    unheld: BTreeMap<Op, (Offset, u64, Bytes)>,
    /// The op applied last (a checkpoint's state names it).
    applied: Op,
    /// The committed end the latest checkpoint's state recorded, and the
    /// purge generation of that log.
    snapshot_end: std::cell::Cell<(Offset, u64)>,
    /// At boot the checkpoint's end lay above this log (a `replicated`
    /// topic's segments are not fsynced before a checkpoint, so a power
    /// loss can take their tail): the log is refilled from the peers up to
    /// this offset before the group serves (`refill_boot_gap`).
    boot_gap: Option<Offset>,
}

impl<S: Storage> PartitionMachine<S> {
    /// Appends the peers' committed batches until this log reaches
    /// `target` (a checkpoint's end).
    async fn refill(&self, source: &LogSource, target: Offset) -> Result<(), String> {
        let log = self.partition.log();
        let storage =
            |e: PartitionError| format!("refilling {}: {e}", self.partition.dir().display());
        while log.next_offset() < target {
            let from = log.next_offset();
            let fetched = source(from, target).await?;
            if fetched.first > from {
                // The peers' retention dropped [from, first): so does this
                // replica, as it would have by the same rule.
                tracing::info!(
                    dir = %self.partition.dir().display(),
                    from = from.0,
                    first = fetched.first.0,
                    "the peers no longer hold the start of the gap; the log restarts where theirs begins"
                );
                self.partition
                    .restart_log_at(fetched.first)
                    .await
                    .map_err(storage)?;
            }
            let mut rest = &fetched.records[..];
            while !rest.is_empty() {
                let header =
                    BatchHeader::read(rest).map_err(|e| format!("a fetched batch: {e}"))?;
                let len = usize::try_from(header.batch_length).unwrap_or(usize::MAX);
                let Some(record) = rest.get(..len) else {
                    return Err(format!("a fetched batch of {len} bytes is cut short"));
                };
                validate_record(record, Verify::Layout)
                    .map_err(|e| format!("a fetched batch: {e}"))?;
                let base_offset = Offset(header.base_offset);
                if base_offset.plus(u64::from(header.message_count)) > target {
                    break; // beyond the checkpoint: repair brings it as ops
                }
                if base_offset != log.next_offset() {
                    return Err(format!(
                        "a fetched batch starts at {} where this log ends at {}",
                        base_offset.0,
                        log.next_offset().0
                    ));
                }
                self.partition
                    .apply_append(
                        bytes::Bytes::copy_from_slice(record),
                        base_offset,
                        header.base_timestamp,
                    )
                    .await
                    .map_err(storage)?;
                rest = &rest[len..];
            }
            if log.next_offset() == from && fetched.first <= from {
                return Err(format!(
                    "the peers sent nothing at offset {} (they end at {})",
                    from.0, fetched.end.0
                ));
            }
        }
        self.partition.flush(true).await.map_err(storage)?;
        // Postcondition: the log reaches the checkpoint.
        assert!(log.next_offset() >= target, "refilled to the checkpoint");
        Ok(())
    }

    /// Keeps an append's batch out of the log until no purge is pending
    /// (`hold_unheld`); its journal record holds it whole meanwhile.
    fn keep_unheld(&mut self, entry: &Entry, base_offset: Offset) {
        let record = entry.body.slice(APPEND_PREFIX..);
        self.unheld
            .insert(entry.op, (base_offset, entry.timestamp_us, record));
    }

    /// No purge is pending any more: the appends journaled behind one go
    /// to the log in op order, held as `hold_body` would have held them.
    async fn hold_unheld(&mut self) {
        for (op, (base_offset, timestamp_us, record)) in std::mem::take(&mut self.unheld) {
            let messages = BatchHeader::read(&record).map_or(0, |h| u64::from(h.message_count));
            if let Err(e) = self
                .partition
                .hold_append(record, base_offset, timestamp_us)
                .await
            {
                // The journal holds the batch whole: applying it writes it.
                tracing::warn!(
                    op = op.0,
                    "cannot hold a batch journaled behind a purge: {e}"
                );
                return;
            }
            self.held.insert(op, base_offset.plus(messages));
        }
    }

    async fn apply_append(&self, entry: &Entry, base_offset: Offset) -> Applied {
        loop {
            let applied = self
                .partition
                .apply_append(
                    entry.body.slice(APPEND_PREFIX..),
                    base_offset,
                    entry.timestamp_us,
                )
                .await;
            match applied {
                Ok(base_offset) => return Applied::Appended { base_offset },
                // A full disk here is this node's alone: wait for room
                // rather than diverge from the replicas that applied it.
                Err(PartitionError::Storage(StorageError::NoSpace { dir })) => {
                    tracing::warn!(dir = %dir.display(), op = entry.op.0, "no space to apply a committed append; retrying");
                    compio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
                // A committed op that cannot be applied: fail-stop
                // (replication spec §6.7).
                Err(e) => panic!("cannot apply committed append {}: {e}", entry.op),
            }
        }
    }
}

/// Makes every append so far as durable as the partition's policy asks
/// before a checkpoint drops the journal's records of them: fsynced under
/// `persisted`; under `replicated` only written (a cluster's segments use
/// direct I/O, but neither the file's size nor the device's cache is
/// synced here). A power loss before
/// that leaves the log below the checkpoint, and the boot refills it from
/// the peers (`PartitionMachine::restore`, replication spec §4.3).
async fn sync_segments<S: Storage>(partition: &Partition<S>) -> Result<(), StorageError> {
    partition
        .flush(partition.is_persisted())
        .await
        .map_err(partition_storage)
}

/// A partition group's first checkpoint for a log kept outside any group
/// (a single node's partition in `partition_dir`, adopted by a group of
/// one): the log's end, the stored offsets and the purge generation as of
/// op 1, seeded into the empty journal in `journal_dir`. Returns the log's
/// end.
pub async fn adopt_log<S: Storage>(
    storage: S,
    partition_dir: &Path,
    journal_dir: &Path,
) -> Result<Offset, StorageError> {
    let options = storage::LogOptions {
        follow_log_end: true,
        ..storage::LogOptions::default()
    };
    let (log, _) = storage::PartitionLog::open(storage.clone(), partition_dir, options).await?;
    let next = log.next_offset();
    drop(log);
    let loaded = storage::offsets::OffsetStore::new(storage.clone(), partition_dir)
        .load_all()
        .await?;
    let mut offsets: Vec<_> = loaded
        .offsets
        .iter()
        .filter(|o| o.offset < next)
        .map(|o| ((o.kind, o.id), o.offset))
        .collect();
    offsets.sort_unstable_by_key(|&(key, _)| key);
    let generation = storage::purge_gen::load(&storage, partition_dir).await;
    let op = Op(1);
    let state = encode_checkpoint(next, &offsets, CheckpointPurge { generation, op });
    storage
        .create_dir_all(journal_dir)
        .await
        .map_err(storage::error::io_error(
            "create a partition journal",
            journal_dir,
        ))?;
    crate::replicated::seed_checkpoint(storage, journal_dir, op, 0, &state).await?;
    Ok(next)
}

/// What an op below a purge this replica already carried out answers at
/// a replay (its effect is gone with the purge).
fn skipped(decoded: Decoded) -> Applied {
    match decoded {
        Decoded::Append { base_offset, .. } => Applied::Appended { base_offset },
        Decoded::StoreOffset { .. } => Applied::Stored { caught_up: false },
        Decoded::DeleteOffset { .. } => Applied::Deleted,
        Decoded::Purge { .. } => Applied::Purged,
    }
}

/// The op of the purge whose segments `dir` (a `purged_dir`) keeps.
fn purge_op_of(dir: &Path) -> Option<Op> {
    let name = dir.file_name()?.to_str()?;
    name.strip_prefix(PURGED_PREFIX)?.parse().ok().map(Op)
}

/// Where a purge at `op` keeps the purged segments until a checkpoint
/// covers it: the journal's records of earlier appends keep only their
/// heads, and a restart before that checkpoint reads their batches there.
fn purged_dir(partition_dir: &Path, op: Op) -> std::path::PathBuf {
    partition_dir.join(format!("{PURGED_PREFIX}{:020}", op.0))
}

const PURGED_PREFIX: &str = "purged-";

/// The purged-segment directories in `partition_dir`, oldest first; with
/// `up_to`, only those of purges at or below that op.
async fn purged_dirs<S: Storage>(
    storage: &S,
    partition_dir: &Path,
    up_to: Option<Op>,
) -> Result<Vec<std::path::PathBuf>, StorageError> {
    let names = storage
        .read_dir(partition_dir)
        .await
        .map_err(storage::error::io_error(
            "list a partition directory",
            partition_dir,
        ))?;
    let mut ops: Vec<u64> = names
        .iter()
        .filter_map(|name| name.strip_prefix(PURGED_PREFIX)?.parse().ok())
        .filter(|op| up_to.is_none_or(|up_to| *op <= up_to.0))
        .collect();
    ops.sort_unstable();
    Ok(ops
        .into_iter()
        .map(|op| purged_dir(partition_dir, Op(op)))
        .collect())
}

/// A partition's storage failure as the group reports it (the log's own
/// calls fail only in storage).
fn partition_storage(e: PartitionError) -> StorageError {
    match e {
        PartitionError::Storage(e) => e,
        other => unreachable!("a log operation fails only in storage: {other}"),
    }
}

impl<S: Storage> StateMachine for PartitionMachine<S> {
    async fn apply(&mut self, entry: &Entry) -> Vec<u8> {
        let decoded = decode(&entry.body).unwrap_or_else(|e| {
            panic!("committed partition op {} cannot be decoded: {e}", entry.op)
        });
        while let Some(held) = self.held.first_entry()
            && *held.key() <= entry.op
        {
            held.remove();
        }
        while let Some(unheld) = self.unheld.first_entry()
            && *unheld.key() <= entry.op
        {
            unheld.remove();
        }
        self.applied = entry.op;
        self.pending_purges = self.pending_purges.split_off(&entry.op.next());
        if entry.op < self.partition.purge_op() {
            // A replay after a restart: a later purge this replica already
            // carried out took what this op did (and that purge is still
            // pending here, so nothing unheld is held yet).
            debug_assert!(!self.pending_purges.is_empty() || self.unheld.is_empty());
            return skipped(decoded).encode();
        }
        let applied = match decoded {
            Decoded::Append { base_offset, .. } => {
                let applied = self.apply_append(entry, base_offset).await;
                self.unsynced += 1;
                if self.unsynced >= BACKGROUND_SYNC_APPENDS && self.partition.is_persisted() {
                    self.unsynced = 0;
                    let log = self.partition.log().clone();
                    compio::runtime::spawn(async move {
                        if let Err(e) = log.sync().await {
                            tracing::error!("background segment sync failed: {e}");
                        }
                    })
                    .detach();
                }
                applied
            }
            Decoded::StoreOffset { consumer, offset } => {
                match self.partition.apply_store_offset(consumer, offset).await {
                    Ok(caught_up) => Applied::Stored { caught_up },
                    Err(PartitionError::OffsetBeyondEnd { .. }) => {
                        Applied::Failed(ErrorCode::InvalidOffset)
                    }
                    Err(e) => panic!("cannot apply committed offset store {}: {e}", entry.op),
                }
            }
            Decoded::Purge { generation } => {
                let aside = purged_dir(self.partition.dir(), entry.op);
                if let Err(e) = self
                    .partition
                    .apply_purge(generation, entry.op, &aside)
                    .await
                {
                    panic!("cannot apply committed purge {}: {e}", entry.op);
                }
                if self.pending_purges.is_empty() {
                    self.hold_unheld().await;
                }
                Applied::Purged
            }
            Decoded::DeleteOffset { consumer } => {
                match self.partition.apply_delete_offset(consumer).await {
                    Ok(()) => Applied::Deleted,
                    Err(PartitionError::OffsetNotFound) => {
                        Applied::Failed(ErrorCode::ConsumerOffsetNotFound)
                    }
                    Err(e) => panic!("cannot apply committed offset delete {}: {e}", entry.op),
                }
            }
        };
        applied.encode()
    }

    /// An append's batch is written to the segment as the op is journaled
    /// (the segment is the op's log); the journal keeps the op's kind and
    /// base offset, the first `APPEND_PREFIX` bytes.
    async fn hold_body(&mut self, entry: &Entry) -> Result<Option<usize>, StorageError> {
        let (base_offset, messages) = match decode(&entry.body) {
            Ok(Decoded::Append {
                base_offset,
                messages,
            }) => (base_offset, messages),
            Ok(Decoded::Purge { .. }) => {
                self.pending_purges.insert(entry.op);
                return Ok(None);
            }
            _ => return Ok(None),
        };
        if !self.pending_purges.is_empty() || !self.unheld.is_empty() {
            // Its offsets follow a purge not applied yet (or a batch not
            // in the log yet): the journal keeps it whole until then.
            self.keep_unheld(entry, base_offset);
            return Ok(None);
        }
        // A full disk stalls the group here until space is freed (the
        // primary refuses new appends meanwhile); the log takes the batch
        // once, whichever try succeeds.
        let partition = &self.partition;
        wait_for_space(partition.dir(), async || {
            partition
                .hold_append(
                    entry.body.slice(APPEND_PREFIX..),
                    base_offset,
                    entry.timestamp_us,
                )
                .await
                .map_err(partition_storage)
        })
        .await?;
        self.held
            .insert(entry.op, base_offset.plus(u64::from(messages)));
        Ok(Some(APPEND_PREFIX))
    }

    async fn sync_held(&mut self, fsync: bool) -> Result<(), StorageError> {
        if self.held.is_empty() {
            return Ok(());
        }
        self.partition
            .sync_held(fsync)
            .await
            .map_err(partition_storage)
    }

    async fn held_body(
        &mut self,
        entry: &Entry,
        len: usize,
    ) -> Result<Option<Bytes>, StorageError> {
        let Some(head) = entry.body.get(..APPEND_PREFIX) else {
            return Ok(None);
        };
        let (kind, base) = head.split_first().expect("a 9-byte prefix");
        let base_offset = Offset(u64::from_le_bytes(base.try_into().expect("8 bytes")));
        if *kind != APPEND {
            return Ok(None);
        }
        let aside = purged_dirs(self.partition.storage(), self.partition.dir(), None).await?;
        let nearest = aside.iter().find(|dir| purge_op_of(dir) > Some(entry.op));
        let Some(record) = self
            .partition
            .held_batch(base_offset, nearest.map(|dir| dir.as_path()))
            .await
            .map_err(partition_storage)?
        else {
            return Ok(None);
        };
        if APPEND_PREFIX + record.len() != len {
            return Ok(None);
        }
        let messages = BatchHeader::read(&record).map_or(0, |h| u64::from(h.message_count));
        self.held.insert(entry.op, base_offset.plus(messages));
        Ok(Some(Bytes::from(encode_append(base_offset, &record))))
    }

    /// The log keeps the batches of ops up to `after` (committed ones, and
    /// the held ones a view change kept); those of later ops go.
    async fn cut_held(&mut self, after: Op) -> Result<(), StorageError> {
        let kept = self.held.range(..=after).next_back().map(|(_, end)| *end);
        let keep_end = kept.unwrap_or_else(|| self.partition.committed_end());
        self.held.split_off(&after.next());
        self.pending_purges.split_off(&after.next());
        self.unheld.split_off(&after.next());
        self.partition
            .cut_held(keep_end)
            .await
            .map_err(partition_storage)
    }

    /// Retention may now take what the checkpoint covers, and the purged
    /// segments kept for the journal's older records go.
    async fn checkpointed(&mut self, op: Op) -> Result<(), StorageError> {
        let (end, generation) = self.snapshot_end.get();
        // A purge applied since the snapshot restarted the log: the
        // checkpoint covers none of the new one.
        if generation == self.partition.purge_generation() {
            self.partition.set_checkpointed_end(end);
        }
        let (storage, dir) = (self.partition.storage(), self.partition.dir());
        for purged in purged_dirs(storage, dir, Some(op)).await? {
            if let Err(e) = storage.remove_dir_all(&purged).await {
                tracing::warn!(dir = %purged.display(), "cannot remove purged segments: {e}");
            }
        }
        Ok(())
    }

    /// A full disk stalls the checkpoint's sync of the segments until
    /// space is freed, as it stalls the group's other writes.
    async fn persist(&mut self) -> Result<(), StorageError> {
        let partition = &self.partition;
        wait_for_space(partition.dir(), async || sync_segments(partition).await).await
    }

    fn persist_beside(&mut self) -> Option<Work> {
        let partition = self.partition.clone();
        Some(Box::pin(async move {
            let dir = partition.dir().to_path_buf();
            wait_for_space(&dir, async || sync_segments(&partition).await).await
        }))
    }

    fn snapshot(&self) -> Vec<u8> {
        let generation = self.partition.purge_generation();
        self.snapshot_end
            .set((self.partition.committed_end(), generation));
        encode_checkpoint(
            self.partition.committed_end(),
            &self.partition.consumer_offsets(),
            CheckpointPurge {
                generation,
                op: self.applied,
            },
        )
    }

    fn journaled_whole(&mut self, entry: &Entry) {
        match decode(&entry.body) {
            Ok(Decoded::Purge { .. }) => {
                self.pending_purges.insert(entry.op);
            }
            Ok(Decoded::Append { base_offset, .. }) => self.keep_unheld(entry, base_offset),
            _ => {}
        }
    }

    async fn restore(&mut self, bytes: &[u8], from: Restore) -> Result<(), String> {
        let (next, offsets, purge) = decode_checkpoint(bytes)?;
        if let Some(purge) = purge {
            self.applied = purge.op;
        }
        if from == Restore::Boot
            && let Some(purge) = purge
            && self.partition.purge_op() > purge.op
        {
            // A purge after the checkpoint emptied this log, whose end the
            // checkpoint's no longer describes: the replay goes on from the
            // restarted log.
            self.partition.restore_committed_end(Offset::ZERO);
            return Ok(());
        }
        if from == Restore::Transfer
            && let Some(purge) = purge
        {
            let local = self.partition.purge_generation();
            if purge.generation < local {
                return Err(format!(
                    "a transferred checkpoint of purge generation {} is older than this \
                     replica's {local}",
                    purge.generation
                ));
            }
            if purge.generation > local {
                // This replica missed a purge the checkpoint carries out:
                // its log restarts for the peers' batches.
                self.held.clear();
                self.pending_purges.clear();
                self.unheld.clear();
                self.partition
                    .purge_for_transfer(purge.generation, purge.op)
                    .await
                    .map_err(|e| format!("carrying out a transferred purge: {e}"))?;
            }
        }
        if from == Restore::Transfer {
            // What this replica held above its commit point may differ
            // from the history the checkpoint carries: it goes first.
            self.held.clear();
            let committed = self.partition.committed_end();
            self.partition
                .cut_held(committed)
                .await
                .map_err(|e| format!("cutting the held log before a transfer: {e}"))?;
        }
        let held = self.partition.log().next_offset();
        if held < next && from == Restore::Boot && self.source.is_none() {
            // The peers are reachable only once the group runs: its task
            // refills the log before it serves (`refill_boot_gap`). Until
            // then the committed end is what this log holds, so the boot's
            // cut of unjournaled batches keeps all of it.
            tracing::warn!(
                dir = %self.partition.dir().display(),
                log_end = held.0,
                checkpoint_end = next.0,
                "the checkpoint lies above this replica's log (its unsynced tail was lost); \
                 the group refills it from the peers before it serves"
            );
            self.partition.restore_committed_end(held);
            self.boot_gap = Some(next);
            return Ok(());
        }
        if held < next {
            let Some(source) = self.source.clone() else {
                return Err(format!(
                    "this replica's log of {} ends at offset {}, below the checkpoint's {}, \
                     and it has no peer to refill from here",
                    self.partition.dir().display(),
                    held.0,
                    next.0
                ));
            };
            tracing::info!(
                dir = %self.partition.dir().display(),
                from = held.0,
                to = next.0,
                "refilling the partition log from the peers"
            );
            self.refill(&source, next).await?;
        }
        self.partition.restore_committed_end(next);
        // At boot the offset files are at least as new as this replica's
        // own checkpoint (the journal replays what lies above it).
        if let (Restore::Transfer, Some(offsets)) = (from, offsets) {
            self.partition
                .install_offsets(&offsets)
                .await
                .map_err(|e| format!("installing a checkpoint's offsets: {e}"))?;
        }
        Ok(())
    }
}

/// The answer to a submission.
#[derive(Debug)]
pub enum Submit {
    /// Prepared as this node's request `request`; its result comes with
    /// the `Effect::Reply` for it.
    Prepared {
        request: RequestNumber,
        effects: Vec<Effect>,
    },
    /// Invalid as asked; nothing was prepared.
    Rejected(ErrorCode),
    /// Not the primary of a normal view: the primary of `view` is.
    NotPrimary { view: View },
    /// The pipeline is full; nothing was prepared (safe to retry).
    Busy,
}

pub struct ReplicatedPartition<S: Storage> {
    group: Group<S, PartitionMachine<S>>,
    partition: Rc<Partition<S>>,
    /// This boot's client for the ops this node submits.
    submitter: Submitter,
}

impl<S: Storage> ReplicatedPartition<S> {
    /// Opens the group of `partition` with its journal in `dir`; `created`:
    /// the partition is being created as its create op commits (a group
    /// with no trace here starts normal in its created view, see
    /// `Group::create`).
    pub async fn open(
        storage: S,
        dir: &Path,
        placement: Placement,
        nonce: u64,
        partition: Rc<Partition<S>>,
        created: bool,
    ) -> Result<Self, GroupError> {
        assert!(nonce != 0, "a boot nonce is never zero");
        let machine = PartitionMachine {
            partition: partition.clone(),
            unsynced: 0,
            source: None,
            held: BTreeMap::new(),
            pending_purges: BTreeSet::new(),
            unheld: BTreeMap::new(),
            applied: Op::ZERO,
            snapshot_end: std::cell::Cell::new((Offset::ZERO, 0)),
            boot_gap: None,
        };
        let mut group = if created {
            Group::create(storage, dir, placement, nonce, machine).await?
        } else {
            Group::open(storage, dir, placement, nonce, machine).await?
        };
        // Its segments' fsync and the snapshot's write run beside the
        // prepares; the caller polls them (`group_mut().poll_checkpoint`).
        group.checkpoint_beside();
        Ok(ReplicatedPartition {
            group,
            partition,
            submitter: Submitter::new(nonce, placement.identity.replica),
        })
    }

    pub fn group(&self) -> &Group<S, PartitionMachine<S>> {
        &self.group
    }

    pub fn group_mut(&mut self) -> &mut Group<S, PartitionMachine<S>> {
        &mut self.group
    }

    /// See `Group::set_outbox`.
    pub fn set_outbox(&mut self, outbox: Box<dyn FnMut(consensus::vsr::message::Envelope)>) {
        self.group.set_outbox(outbox);
    }

    /// Whether the boot found the checkpoint above this log and the log
    /// still waits for its refill (`refill_boot_gap`).
    pub fn has_boot_gap(&self) -> bool {
        self.group.machine().boot_gap.is_some()
    }

    /// Refills the log up to the boot's checkpoint from the peers (through
    /// the log source, which must be set); the group serves only after
    /// this. Fails when no peer sends the missing batches in time (a
    /// quorum lost the same unsynced tail: those writes are gone, and the
    /// group is not served rather than diverge).
    pub async fn refill_boot_gap(&mut self) -> Result<(), GroupError> {
        let machine = self.group.machine_mut();
        let Some(target) = machine.boot_gap else {
            return Ok(());
        };
        let source = machine
            .source
            .clone()
            .expect("a boot gap is refilled through the log source");
        let dir = self.partition.dir().to_path_buf();
        machine
            .refill(&source, target)
            .await
            .map_err(|reason| GroupError::Format {
                what: "the log below the checkpoint",
                dir,
                reason,
            })?;
        self.partition.restore_committed_end(target);
        machine.boot_gap = None;
        // Postcondition: the log reaches the checkpoint it restored.
        assert!(
            self.partition.log().next_offset() >= target,
            "the boot gap is filled"
        );
        Ok(())
    }

    /// Where a transferred checkpoint's missing log is fetched from.
    pub fn set_log_source(&mut self, source: LogSource) {
        self.group.machine_mut().source = Some(source);
    }

    pub fn partition(&self) -> &Rc<Partition<S>> {
        &self.partition
    }

    pub fn client(&self) -> ClientId {
        self.submitter.client()
    }

    /// Where the next append starts: after the newest append in the
    /// pipeline, or at the end of the applied log; a purge of a newer
    /// generation in the pipeline restarts it at 0, as applying it will.
    fn head_offset(&self) -> Offset {
        let replica = self.group.replica();
        let decoded = |op: Op| decode(&replica.entry(op).expect("the log holds its pipeline").body);
        // The newest append, unless a purge lies above it (purges are
        // rare: then the pipeline is walked in order).
        let mut op = replica.head();
        while op > replica.commit_min() {
            match decoded(op) {
                Ok(Decoded::Append {
                    base_offset,
                    messages,
                }) => return base_offset.plus(u64::from(messages)),
                Ok(Decoded::Purge { .. }) => break,
                _ => op = Op(op.0 - 1),
            }
        }
        if op == replica.commit_min() {
            return self.partition.committed_end();
        }
        let mut next = self.partition.committed_end();
        let mut generation = self.partition.purge_generation();
        for op in replica.commit_min().0 + 1..=replica.head().0 {
            match decoded(Op(op)) {
                Ok(Decoded::Append {
                    base_offset,
                    messages,
                }) => next = base_offset.plus(u64::from(messages)),
                Ok(Decoded::Purge { generation: g }) if g > generation => {
                    generation = g;
                    next = Offset::ZERO;
                }
                _ => {}
            }
        }
        next
    }

    /// Submits a change at `now_us` (the primary stamps and prepares it).
    /// A prepared append's batch leaves `command` (its buffer becomes the
    /// op's body where the bytes before the batch can take the body's
    /// prefix; nothing is copied then): keep the command only for its kind.
    pub async fn submit(
        &mut self,
        command: &mut Command,
        now_us: u64,
    ) -> Result<Submit, GroupError> {
        self.submit_as(command, now_us, Sync::Now).await
    }

    /// `submit`, with the journal sync now or left to `sync_prepared`
    /// (group commit: the next submission is stamped after this one).
    pub async fn submit_as(
        &mut self,
        command: &mut Command,
        now_us: u64,
        sync: Sync,
    ) -> Result<Submit, GroupError> {
        let replica = self.group.replica();
        if !replica.is_primary() {
            return Ok(Submit::NotPrimary {
                view: replica.view(),
            });
        }
        let body = match command {
            Command::Append { buffer, range } => {
                let Some(record) = buffer.get(range.clone()) else {
                    return Ok(Submit::Rejected(ErrorCode::InvalidMessagesCount));
                };
                let header = match validate_record(record, Verify::Layout) {
                    Ok(header) => header,
                    Err(_) => return Ok(Submit::Rejected(ErrorCode::InvalidMessagesCount)),
                };
                if header.message_count == 0 {
                    return Ok(Submit::Rejected(ErrorCode::InvalidMessagesCount));
                }
                // Stamped here as every replica's log will stamp it (this
                // offset, the op's timestamp), so each stores the op's
                // body as it is, without a copy.
                let base_offset = self.head_offset();
                let partition_id = self.partition.log().options().partition_id;
                let timestamp = replica.next_timestamp(now_us);
                let (mut body, start) =
                    append_body(std::mem::take(buffer), range.clone(), base_offset);
                stamp_record(
                    &mut body[start + APPEND_PREFIX..],
                    partition_id,
                    base_offset.0,
                    timestamp,
                );
                Bytes::from(body).slice(start..)
            }
            other => Bytes::from(encode_command(other).expect("not an append")),
        };
        Ok(
            match self
                .submitter
                .submit_as(&mut self.group, body, now_us, sync)
                .await?
            {
                Submitted::Prepared { request, effects } => Submit::Prepared { request, effects },
                Submitted::NotPrimary { view } => Submit::NotPrimary { view },
                Submitted::Busy => Submit::Busy,
            },
        )
    }

    /// Syncs the journal under the submissions prepared with `Sync::Later`
    /// and commits what that allows.
    pub async fn sync_prepared(&mut self) -> Result<Vec<Effect>, GroupError> {
        self.group.sync_prepared().await
    }

    /// A frame from a peer.
    pub async fn on_message(
        &mut self,
        from: ReplicaId,
        message: Message,
    ) -> Result<Vec<Effect>, GroupError> {
        self.group.on_message(from, message).await
    }

    /// One tick of the group's timers.
    pub async fn on_tick(&mut self) -> Result<Vec<Effect>, GroupError> {
        self.group.on_tick().await
    }
}
