//! One partition as the engine runs it, over the storage seam: its log,
//! the stored offset of each consumer, and what each consumer group was
//! served. Every change is an op of the partition's replicated group
//! (which drives this module, never the reverse): the group writes a batch
//! as the op is journaled (`hold_append`) and applies committed ops here
//! (`apply_append`, `apply_store_offset`, `apply_delete_offset`,
//! `apply_purge`). The server moves requests to the owning shard and
//! renders replies.
//!
//! The rules: a poll serves only the committed log and starts where its
//! strategy says (`Next` = the consumer's stored offset + 1); an offset is
//! stored only below the log's end; a purge empties the log and every
//! offset and then records its generation (and, in a group, its op), so a
//! purge interrupted by a crash is carried out again and a completed one
//! never twice.
//!
//! Invariants: a stored offset never exceeds the log's last offset when it
//! is stored; `served` only grows until a purge; the recorded purge
//! generation never decreases.

use std::cell::{Cell, RefCell};

use consensus::Op;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use storage::offsets::{ConsumerKind, OffsetProblem, OffsetStore};
use storage::{
    LogOptions, Offset, PartitionLog, PolledRecord, RecoveryReport, Storage, StorageError,
    purge_gen,
};

use crate::metadata::topic::options::Durability;

/// The op a change of the partition was numbered in its group, and the
/// group's commit point when it was answered (reply header `op`/`commit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Committed {
    pub op: Op,
    pub commit: Op,
}

/// Whose offset: the storage kind and the numeric id.
pub type ConsumerKey = (ConsumerKind, u32);

/// Where a poll starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PollStart {
    Offset(Offset),
    Timestamp(u64),
    First,
    Last,
    /// The consumer's stored offset + 1, or 0.
    Next,
}

#[derive(Debug, thiserror::Error)]
pub enum PartitionError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error("offset {offset} is beyond the partition's last message")]
    OffsetBeyondEnd { offset: Offset },
    #[error("no offset is stored for this consumer")]
    OffsetNotFound,
}

pub type Result<T> = std::result::Result<T, PartitionError>;

/// How a partition behaves (its topic's options).
#[derive(Debug, Clone)]
pub struct PartitionOptions {
    pub log: LogOptions,
    pub durability: Durability,
    pub offset_durability: Durability,
}

/// What a poll asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollRequest {
    pub start: PollStart,
    /// Messages at most (0 polls nothing).
    pub count: u32,
    pub consumer: ConsumerKey,
    /// Store the last offset served as the consumer's offset: the server
    /// proposes it to the partition's group (replication spec §4.3); the
    /// poll itself stores nothing.
    pub auto_commit: bool,
    pub max_bytes: u64,
}

/// A poll's result: the partition's current offset and the records.
#[derive(Debug, Clone)]
pub struct Polled {
    pub current_offset: Offset,
    pub records: Vec<PolledRecord>,
}

/// What opening found.
pub struct Opened<S: Storage> {
    pub partition: Partition<S>,
    pub report: RecoveryReport,
    pub offset_problems: Vec<OffsetProblem>,
    /// A committed purge was carried out now (the process stopped between
    /// its commit and its completion).
    pub purge_completed: bool,
}

pub struct Partition<S: Storage> {
    storage: S,
    dir: PathBuf,
    log: PartitionLog<S>,
    offsets_store: OffsetStore<S>,
    offsets: RefCell<HashMap<ConsumerKey, Offset>>,
    /// The highest offset served to each consumer group. Not persisted:
    /// after a restart no member survives, so nothing is in flight.
    served: RefCell<HashMap<ConsumerKey, Offset>>,
    durability: Durability,
    offset_durability: Durability,
    /// Cluster mode: the end of the committed log. The log holds the
    /// batches of ops prepared but not committed above it (`hold_append`),
    /// which nothing serves or counts.
    committed_end: Cell<Offset>,
    /// Cluster mode: the committed end as of the group's last durable
    /// checkpoint. The journal may name the batches above it (whose
    /// records keep only their heads), so retention keeps them.
    checkpointed_end: Cell<Offset>,
    purge_generation: Cell<u64>,
    /// Cluster mode: the op of the group's purge that last emptied the log
    /// (`purge.op`): a replay skips the ops below it.
    purge_op: Cell<u64>,
}

impl<S: Storage> Partition<S> {
    /// Opens (creating if missing) the partition in `dir`. A purge the
    /// metadata committed (`committed_purge_generation`) but that the disk
    /// does not record yet is carried out before the partition serves.
    pub async fn open(
        storage: S,
        dir: &Path,
        options: PartitionOptions,
        committed_purge_generation: u64,
    ) -> std::result::Result<Opened<S>, StorageError> {
        let (log, report) = PartitionLog::open(storage.clone(), dir, options.log).await?;
        let offsets_store = OffsetStore::new(storage.clone(), dir);
        offsets_store.create_dirs().await?;
        let loaded = offsets_store.load_all().await?;
        let offsets = loaded
            .offsets
            .iter()
            .map(|o| ((o.kind, o.id), o.offset))
            .collect();
        let recorded = purge_gen::load(&storage, dir).await;
        let purge_op = purge_gen::load_op(&storage, dir).await?;
        // A group's restore and replay raise it to what it committed.
        let committed_end = Cell::new(log.start_offset());
        let partition = Partition {
            checkpointed_end: committed_end.clone(),
            committed_end,
            storage,
            dir: dir.to_path_buf(),
            log,
            offsets_store,
            offsets: RefCell::new(offsets),
            served: RefCell::new(HashMap::new()),
            durability: options.durability,
            offset_durability: options.offset_durability,
            purge_generation: Cell::new(recorded),
            purge_op: Cell::new(purge_op),
        };
        let purge_completed = recorded < committed_purge_generation;
        if purge_completed {
            partition
                .purge(committed_purge_generation)
                .await
                .map_err(|e| match e {
                    PartitionError::Storage(e) => e,
                    other => unreachable!("a purge fails only in storage: {other}"),
                })?;
        }
        Ok(Opened {
            partition,
            report,
            offset_problems: loaded.problems,
            purge_completed,
        })
    }

    /// Creates a new partition of a topic whose purges so far number
    /// `topic_purge_generation`: it records that generation before serving,
    /// so a later open never mistakes it for a partition that missed them.
    pub async fn create(
        storage: S,
        dir: &Path,
        options: PartitionOptions,
        topic_purge_generation: u64,
    ) -> std::result::Result<Partition<S>, StorageError> {
        let opened = Partition::open(storage, dir, options, 0).await?;
        let partition = opened.partition;
        assert_eq!(
            partition.log.last_offset(),
            None,
            "a new partition is empty"
        );
        if topic_purge_generation > partition.purge_generation.get() {
            purge_gen::store(&partition.storage, dir, topic_purge_generation).await?;
            partition.purge_generation.set(topic_purge_generation);
        }
        Ok(partition)
    }

    pub fn log(&self) -> &PartitionLog<S> {
        &self.log
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The offset of the newest message (0 when empty), as replies show it.
    pub fn current_offset(&self) -> Offset {
        self.log.last_offset().unwrap_or(Offset::ZERO)
    }

    pub fn purge_generation(&self) -> u64 {
        self.purge_generation.get()
    }

    /// Cluster mode: the op of the group's purge that last emptied the log
    /// (0 when none did); the ops below it were purged.
    pub fn purge_op(&self) -> consensus::Op {
        consensus::Op(self.purge_op.get())
    }

    /// Cluster mode: writes a prepared op's batch at the offset its primary
    /// stamped (`base_offset`), with the op's timestamp, as the op is
    /// journaled: the segment is the op's log, and nothing serves it until
    /// `apply_append` commits it. A batch the log holds already (the op
    /// was journaled again, or held before a restart) is left as it is.
    pub async fn hold_append(
        &self,
        record: bytes::Bytes,
        base_offset: Offset,
        timestamp_us: u64,
    ) -> Result<()> {
        let next = self.log.next_offset();
        if base_offset < next {
            return Ok(());
        }
        assert_eq!(
            base_offset, next,
            "a replicated append lands at the end of the log"
        );
        let receipt = self
            .log
            .append_shared_when_ready(record, || timestamp_us)
            .await?;
        assert_eq!(receipt.base_offset, base_offset, "offsets as stamped");
        Ok(())
    }

    /// Cluster mode: commits an op's batch (`hold_append` wrote it as the
    /// op was journaled; one the log lacks, journaled by an earlier build,
    /// is written now): a poll sees it as soon as this returns. The group's
    /// journal holds the op, so the segment write is neither awaited nor
    /// fsynced here.
    pub async fn apply_append(
        &self,
        record: bytes::Bytes,
        base_offset: Offset,
        timestamp_us: u64,
    ) -> Result<Offset> {
        let messages = protocol::batch::BatchHeader::read(&record)
            .map(|h| u64::from(h.message_count))
            .unwrap_or(0);
        if base_offset >= self.log.next_offset() {
            self.hold_append(record, base_offset, timestamp_us).await?;
        }
        let end = base_offset.plus(messages);
        assert!(
            end <= self.log.next_offset(),
            "a committed batch lies whole in the log"
        );
        self.committed_end.set(self.committed_end.get().max(end));
        Ok(base_offset)
    }

    /// Cluster mode: the end of the committed log (see `hold_append`).
    pub fn committed_end(&self) -> Offset {
        self.committed_end.get()
    }

    /// Cluster mode: a checkpoint says the log is committed up to `end`
    /// (at boot, or installed by a state transfer).
    pub fn restore_committed_end(&self, end: Offset) {
        let end = end.max(self.log.start_offset());
        self.committed_end.set(end);
        self.checkpointed_end.set(end);
    }

    /// Cluster mode: how far the group's durable checkpoints cover the
    /// log (retention stops below it).
    pub fn checkpointed_end(&self) -> Offset {
        self.checkpointed_end.get()
    }

    /// Cluster mode: the group's checkpoint covering the log up to `end`
    /// is durable.
    pub fn set_checkpointed_end(&self, end: Offset) {
        self.checkpointed_end
            .set(self.checkpointed_end.get().max(end));
    }

    /// Cluster mode: drops the held batches at or above `keep_end` (a view
    /// change dropped their ops), never a committed one.
    pub async fn cut_held(&self, keep_end: Offset) -> Result<()> {
        assert!(
            keep_end >= self.committed_end.get(),
            "a committed batch is never cut"
        );
        self.log.truncate_tail(keep_end).await?;
        Ok(())
    }

    /// Cluster mode: makes every held batch as durable as the group's
    /// journal sync: fsynced with `fsync`, else written to the kernel.
    pub async fn sync_held(&self, fsync: bool) -> Result<()> {
        if let Some(last) = self.log.last_offset() {
            if fsync {
                self.log.wait_durable(last).await?;
            } else {
                self.log.wait_written(last).await?;
            }
        }
        Ok(())
    }

    /// Cluster mode: the whole stored batch that starts at `base_offset`
    /// (held or committed). `aside`: the purged segments of the nearest
    /// purge after the batch's op, if one ran: they hold it (offsets
    /// restart at every purge, so the log may hold another batch at that
    /// offset), unless a crash stopped that purge before it moved the
    /// batch's segment, which the log then still holds.
    pub async fn held_batch(
        &self,
        base_offset: Offset,
        aside: Option<&Path>,
    ) -> Result<Option<bytes::Bytes>> {
        if let Some(dir) = aside {
            let options = LogOptions {
                follow_log_end: true,
                ..LogOptions::default()
            };
            let (log, _) = PartitionLog::open(self.storage.clone(), dir, options).await?;
            if let Some(batch) = batch_at(&log, base_offset).await? {
                return Ok(Some(batch));
            }
        }
        batch_at(&self.log, base_offset).await
    }

    pub fn storage(&self) -> &S {
        &self.storage
    }

    /// Cluster mode: stores a committed offset op (checked against this
    /// log as every replica checks it, so all agree). Returns whether it
    /// reaches what this node served to that consumer.
    pub async fn apply_store_offset(&self, consumer: ConsumerKey, offset: Offset) -> Result<bool> {
        match self.visible_offset() {
            Some(last) if offset <= last => {}
            _ => return Err(PartitionError::OffsetBeyondEnd { offset }),
        }
        self.offsets.borrow_mut().insert(consumer, offset);
        let fsync = self.offset_durability == Durability::Persisted;
        self.offsets_store
            .store(consumer.0, consumer.1, offset, fsync)
            .await?;
        Ok(self
            .served
            .borrow()
            .get(&consumer)
            .is_none_or(|&served| offset >= served))
    }

    /// Cluster mode: deletes a consumer's offset as a committed op says.
    pub async fn apply_delete_offset(&self, consumer: ConsumerKey) -> Result<()> {
        if self.offsets.borrow_mut().remove(&consumer).is_none() {
            return Err(PartitionError::OffsetNotFound);
        }
        self.offsets_store.delete(consumer.0, consumer.1).await?;
        Ok(())
    }

    /// Cluster mode: every stored consumer offset, in key order (what a
    /// partition group's checkpoint carries).
    pub fn consumer_offsets(&self) -> Vec<(ConsumerKey, Offset)> {
        let mut offsets: Vec<_> = self
            .offsets
            .borrow()
            .iter()
            .map(|(&key, &offset)| (key, offset))
            .collect();
        offsets.sort_unstable_by_key(|&(key, _)| key);
        offsets
    }

    /// Cluster mode: makes the stored offsets exactly `offsets` (a
    /// checkpoint's), storing what differs and deleting what it lacks.
    pub async fn install_offsets(&self, offsets: &[(ConsumerKey, Offset)]) -> Result<()> {
        let fsync = self.offset_durability == Durability::Persisted;
        let wanted: HashMap<ConsumerKey, Offset> = offsets.iter().copied().collect();
        let held: Vec<(ConsumerKey, Offset)> = self.consumer_offsets();
        for (consumer, _) in held.iter().filter(|(key, _)| !wanted.contains_key(key)) {
            self.offsets.borrow_mut().remove(consumer);
            self.offsets_store.delete(consumer.0, consumer.1).await?;
        }
        for (&consumer, &offset) in &wanted {
            if self.stored_offset(consumer) != Some(offset) {
                self.offsets.borrow_mut().insert(consumer, offset);
                self.offsets_store
                    .store(consumer.0, consumer.1, offset, fsync)
                    .await?;
            }
        }
        // Postcondition: the offsets are the checkpoint's.
        assert_eq!(
            self.offsets.borrow().len(),
            wanted.len(),
            "offsets as given"
        );
        Ok(())
    }

    /// Cluster mode: an empty log restarting at `start` (see
    /// `PartitionLog::restart_at`).
    pub async fn restart_log_at(&self, start: Offset) -> Result<()> {
        self.log.restart_at(start).await?;
        Ok(())
    }

    /// The newest offset a poll may serve: the committed log's last, never
    /// a held batch of an op not committed yet (replication spec §4.4:
    /// reads never above the commit point).
    pub fn visible_offset(&self) -> Option<Offset> {
        let committed = self.committed_end.get().checked_minus(1)?;
        Some(self.log.last_offset()?.min(committed))
    }

    async fn resolve_start(
        &self,
        start: PollStart,
        count: u32,
        consumer: ConsumerKey,
    ) -> Result<Option<Offset>> {
        let Some(last) = self.visible_offset() else {
            return Ok(None);
        };
        let from = match start {
            PollStart::Offset(offset) => Some(offset),
            PollStart::First => Some(self.log.first_offset().unwrap_or(Offset::ZERO)),
            PollStart::Last => Some(last.saturating_minus(u64::from(count.max(1)) - 1)),
            PollStart::Next => Some(
                self.stored_offset(consumer)
                    .map_or(Offset::ZERO, Offset::next),
            ),
            PollStart::Timestamp(ts) => self.log.find_offset_by_timestamp(ts).await?,
        };
        // A start below the log's first offset (retention or a purge took
        // it) begins at the first: the count below is reckoned from there.
        let first = self.log.first_offset();
        Ok(from
            .map(|offset| first.map_or(offset, |first| offset.max(first)))
            .filter(|&offset| offset <= last))
    }

    /// Reads up to `count` messages (at most `max_bytes`) from where
    /// `start` says. A consumer group's served mark advances.
    pub async fn poll(&self, request: PollRequest) -> Result<Polled> {
        let PollRequest {
            start,
            count,
            consumer,
            auto_commit: _,
            max_bytes,
        } = request;
        // What the consumer may read up to, as the reply reports it.
        let current_offset = self.visible_offset().unwrap_or(Offset::ZERO);
        let from = if count == 0 {
            None
        } else {
            self.resolve_start(start, count, consumer).await?
        };
        let records = match (from, self.visible_offset()) {
            (Some(from), Some(visible)) if from <= visible => {
                let available = visible.messages_since(from).saturating_add(1);
                let count = count.min(u32::try_from(available).unwrap_or(u32::MAX));
                // Sealed frames are served only once opened, which
                // authenticates them: they are not rehashed here.
                let authenticated = crate::encryption::opening_authenticates;
                self.log
                    .read_authenticated(from, count, max_bytes, authenticated)
                    .await?
            }
            _ => Vec::new(),
        };
        // Postcondition: nothing served beyond what may be acknowledged.
        assert!(
            records.last().is_none_or(
                |r| Some(r.first_offset.plus(u64::from(r.count) - 1)) <= self.visible_offset()
            ),
            "polls never serve above the commit point"
        );
        let last_served = records
            .last()
            .map(|r| r.first_offset.plus(u64::from(r.count) - 1));
        if let Some(last) = last_served
            && consumer.0 == ConsumerKind::ConsumerGroup
        {
            let mut served = self.served.borrow_mut();
            let entry = served.entry(consumer).or_insert(last);
            *entry = (*entry).max(last);
        }
        Ok(Polled {
            current_offset,
            records,
        })
    }

    pub fn stored_offset(&self, consumer: ConsumerKey) -> Option<Offset> {
        self.offsets.borrow().get(&consumer).copied()
    }

    /// Served beyond the stored offset: moving this partition now could
    /// redeliver what the current owner is still processing.
    pub fn in_flight(&self, consumer: ConsumerKey) -> bool {
        let Some(&served) = self.served.borrow().get(&consumer) else {
            return false;
        };
        self.stored_offset(consumer)
            .is_none_or(|stored| stored < served)
    }

    /// Whether appends are acknowledged only once fsynced (`persisted`).
    pub fn is_persisted(&self) -> bool {
        self.durability == Durability::Persisted
    }

    pub async fn flush(&self, fsync: bool) -> Result<()> {
        if fsync {
            self.log.sync().await?;
        } else {
            self.log.flush().await?;
        }
        Ok(())
    }

    /// Purge number `generation`: an empty log from offset 0 and no stored
    /// offsets, then the generation recorded (last, so a crash before it
    /// makes the next open purge again).
    pub async fn purge(&self, generation: u64) -> Result<()> {
        self.purge_from(generation, Offset::ZERO, None).await
    }

    /// Cluster mode: purge number `generation` as the committed op `op` of
    /// the partition's group: the log restarts empty at offset 0 (storage
    /// spec §6.5), its segments kept in `aside` while the journal may still
    /// name their batches, and the stored offsets go. A generation already
    /// carried out is a no-op (returns false).
    pub async fn apply_purge(
        &self,
        generation: u64,
        op: consensus::Op,
        aside: &Path,
    ) -> Result<bool> {
        if generation <= self.purge_generation.get() {
            return Ok(false);
        }
        // Precondition: nothing is held above the committed end (the group
        // holds no batch of an op journaled behind an unapplied purge).
        assert_eq!(
            self.log.next_offset(),
            self.committed_end.get(),
            "no batch is held across a purge"
        );
        assert!(op.0 > self.purge_op.get(), "purge ops only go up");
        self.purge_from(generation, Offset::ZERO, Some((aside, op)))
            .await?;
        Ok(true)
    }

    /// Cluster mode: a checkpoint installed from a peer was taken after
    /// purge number `generation` (at or below the checkpoint's `op`), which
    /// this replica missed: its log restarts empty at 0 for the peers'
    /// batches to refill, and its offsets go.
    pub async fn purge_for_transfer(&self, generation: u64, op: consensus::Op) -> Result<()> {
        assert!(generation > self.purge_generation.get(), "a missed purge");
        self.log.purge().await?;
        self.purge_bookkeeping(generation, Some(op)).await
    }

    async fn purge_from(
        &self,
        generation: u64,
        start: Offset,
        group_op: Option<(&Path, consensus::Op)>,
    ) -> Result<()> {
        assert!(
            generation >= self.purge_generation.get(),
            "purge generations never go back"
        );
        match group_op {
            Some((aside, _)) => self.log.restart_at_aside(start, aside).await?,
            None => self.log.restart_at(start).await?,
        }
        self.purge_bookkeeping(generation, group_op.map(|(_, op)| op))
            .await
    }

    /// After the log restarted: the offsets go, then `purge.op` (cluster
    /// mode) and last `purge.gen` are recorded, so that a crash before
    /// either makes the next boot (or the replayed op) purge again.
    async fn purge_bookkeeping(&self, generation: u64, op: Option<consensus::Op>) -> Result<()> {
        self.offsets.borrow_mut().clear();
        self.served.borrow_mut().clear();
        self.offsets_store.delete_all().await?;
        if let Some(op) = op {
            purge_gen::store_op(&self.storage, &self.dir, op.0).await?;
            self.purge_op.set(op.0);
        }
        purge_gen::store(&self.storage, &self.dir, generation).await?;
        self.purge_generation.set(generation);
        assert_eq!(self.log.last_offset(), None, "a purged log is empty");
        self.committed_end.set(self.log.start_offset());
        self.checkpointed_end
            .set(self.checkpointed_end.get().min(self.log.start_offset()));
        Ok(())
    }

    /// The lowest stored offset: retention never deletes past it, nor past
    /// what the group's last checkpoint covers (the journal above it names
    /// batches in these segments, and the batches above the committed end
    /// are the held log of ops not committed yet).
    pub fn barrier(&self) -> Option<Offset> {
        let stored = self.offsets.borrow().values().copied().min();
        let journaled = self.checkpointed_end.get().min(self.committed_end.get());
        let below = journaled.checked_minus(1).unwrap_or(Offset::ZERO);
        Some(stored.map_or(below, |stored| stored.min(below)))
    }

    /// Deletes up to `count` of the oldest sealed segments, never past the
    /// barrier. Returns how many went.
    pub async fn delete_segments(&self, count: u32) -> Result<usize> {
        let deleted = self
            .log
            .delete_oldest_sealed_segments(count as usize, self.barrier())
            .await?;
        Ok(deleted)
    }
}

/// The whole stored batch of `log` that starts at `base_offset`, if any.
async fn batch_at<S: Storage>(
    log: &PartitionLog<S>,
    base_offset: Offset,
) -> Result<Option<bytes::Bytes>> {
    if base_offset >= log.next_offset() {
        return Ok(None);
    }
    let records = log.read(base_offset, u32::MAX, 1).await?;
    Ok(records
        .first()
        .filter(|r| r.first_offset == base_offset)
        .map(|r| bytes::Bytes::from(r.to_record())))
}
