//! Partitions owned by this shard, and the operations other shards send to
//! them (append, poll, consumer offsets, flush).
//!
//! A partition is owned by exactly one shard (`node::ownership`). Handlers
//! call [`Node::partition`]: on the owner the operation runs directly,
//! otherwise it travels to the owner's inbox as a [`PartitionCall`] and the
//! answer comes back on a oneshot channel. Replies are owned bytes so they
//! can cross threads.

use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use crossfire::oneshot::{TxOneshot, oneshot};
use engine::cluster_partition::{Applied, Command};
use engine::metadata::topic::options::{Durability, TopicOptions};
pub use engine::partition::Committed;
use engine::partition::{Partition, PartitionError, PartitionOptions, PollRequest};
use engine::replicated::GroupError;
use protocol::ErrorCode;
use protocol::batch::BATCH_HEADER_SIZE;
use protocol::responses::PollReplyHeader;
use storage::{LogOptions, Offset, PartitionLog, RealStorage, StorageError};
use tracing::{error, info, warn};

use super::Node;
use super::ownership::{namespace, owner};
use super::partition_replica::{Outcome, PartitionReplica};
use super::partition_stats::PartitionStats;
use super::poll_opening::open_polled;
use super::shard_message::ShardMessage;
use server::config::DirectIo;

pub use engine::partition::{ConsumerKey, PollStart};

#[derive(Debug)]
pub enum PartitionOp {
    /// The batch record at `buffer[range]` (a request frame, usually),
    /// appended without copying.
    Append {
        buffer: Vec<u8>,
        range: std::ops::Range<usize>,
    },
    Poll {
        start: PollStart,
        count: u32,
        consumer: ConsumerKey,
        auto_commit: bool,
        max_bytes: u64,
    },
    GetOffset {
        consumer: ConsumerKey,
    },
    /// `wait`: answered once committed (ack level `Quorum`); otherwise, in
    /// a cluster, once proposed (`NoAck`, replication spec §4.3). A single
    /// node always answers once it is stored.
    StoreOffset {
        consumer: ConsumerKey,
        offset: Offset,
        wait: bool,
    },
    DeleteOffset {
        consumer: ConsumerKey,
        wait: bool,
    },
    /// Whether a consumer group was served messages it has not committed.
    InFlight {
        consumer: ConsumerKey,
    },
    Flush {
        fsync: bool,
    },
    /// The log's segments, oldest first (the web console's segment list).
    Segments,
}

#[derive(Debug)]
pub enum PartitionReply {
    Appended {
        base_offset: Offset,
        committed: Committed,
    },
    /// A poll reply body: shared slices of the stored records.
    Polled(PolledBody),
    /// `(current_offset, stored_offset)`; `None` when nothing is stored.
    Offset(Option<(Offset, Offset)>),
    Done,
    /// An offset was stored; `caught_up` when it reaches the highest offset
    /// ever served to that consumer (a pending revocation may complete).
    Stored {
        caught_up: bool,
        committed: Committed,
    },
    /// A stored offset was deleted.
    Deleted(Committed),
    InFlight(bool),
    Segments(Vec<storage::partition::SegmentInfo>),
    Failed(ErrorCode),
}

/// A poll reply body without copying the records: the 16-byte poll header,
/// then each record's (possibly rewritten) batch header and its frames, a
/// slice of the cache or of a disk read. `bytes::Bytes` is shared across
/// shards by reference count.
#[derive(Debug, Clone)]
pub struct PolledBody {
    pub header: PollReplyHeader,
    pub records: Vec<([u8; BATCH_HEADER_SIZE], bytes::Bytes)>,
}

impl PolledBody {
    /// The body's length in bytes.
    pub fn byte_len(&self) -> usize {
        PollReplyHeader::SIZE
            + self
                .records
                .iter()
                .map(|(h, f)| h.len() + f.len())
                .sum::<usize>()
    }

    /// The body as parts to write in order.
    pub fn into_parts(self) -> impl Iterator<Item = bytes::Bytes> {
        std::iter::once(bytes::Bytes::copy_from_slice(&self.header.to_bytes())).chain(
            self.records
                .into_iter()
                .flat_map(|(header, frames)| [bytes::Bytes::copy_from_slice(&header), frames]),
        )
    }
}

pub struct PartitionCall {
    pub ns: u64,
    pub op: PartitionOp,
    pub reply: TxOneshot<PartitionReply>,
}

/// Identifies a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionAddr {
    pub stream: u32,
    pub topic: u32,
    pub partition: u32,
}

impl PartitionAddr {
    pub fn ns(&self) -> u64 {
        namespace(self.stream, self.topic, self.partition)
    }
}

/// One partition owned by this shard: the engine's partition (its rules
/// over the real disk) and the figures every shard's replies show.
pub struct OwnedPartition {
    pub partition: Rc<Partition<RealStorage>>,
    stats: Arc<PartitionStats>,
    partition_id: u32,
    /// This node's replica of the partition's group, through which every
    /// change goes.
    replica: PartitionReplica,
}

/// The file in a cluster partition's directory naming the incarnation the
/// directory holds (a counter file, `storage::counter_file`): a directory
/// of an older incarnation is removed before the new one is created.
pub const CREATED_REVISION_FILE: &str = "created.revision";
/// The fence of a partition refused for lost history (single node).
pub const RETIREMENT_FENCE_FILE: &str = "retirement.fence";

/// How much later than this process's start a create must be stamped for
/// the node to count as up when it committed (clock skew between nodes).
const LIVE_CREATE_MARGIN_US: u64 = 1_000_000;

/// How long a cluster node's purge waits for its partition group to
/// carry it out before it answers (the group then finishes it later).
const PURGE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// How long a cluster node's segment deletion waits for the checkpoint it
/// asked its partition group for (retention stops below the last one).
const CHECKPOINT_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Waits until `done` holds, looking every millisecond, for at most
/// `limit` (what a partition group carries out within a tick or two).
async fn wait_until(limit: std::time::Duration, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + limit;
    while !done() && std::time::Instant::now() < deadline {
        compio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
}

/// Most bytes one poll reply carries (well below the frame caps).
pub const POLL_MAX_BYTES: u64 = 8 * 1024 * 1024;

/// `<data>/streams/<s>/topics/<t>/partitions/<p>`.
pub fn partition_path(data: &Path, stream: u32, topic: u32, partition: u32) -> PathBuf {
    data.join("streams")
        .join(stream.to_string())
        .join("topics")
        .join(topic.to_string())
        .join("partitions")
        .join(partition.to_string())
}

impl Node {
    pub fn partition_dir(&self, addr: PartitionAddr) -> PathBuf {
        partition_path(&self.ctx.data_path, addr.stream, addr.topic, addr.partition)
    }

    pub fn owns(&self, ns: u64) -> bool {
        owner(ns, self.ctx.shard_count) == usize::from(self.shard_id)
    }

    fn partition_options(&self, addr: PartitionAddr, options: &TopicOptions) -> PartitionOptions {
        let persisted = options.durability == Durability::Persisted;
        let direct_io = match self.ctx.limits.direct_io {
            DirectIo::Always => true,
            DirectIo::Fsync => persisted || self.ctx.cluster.replicas > 1,
            DirectIo::Never => false,
        };
        // A partition written with direct I/O leaves nothing in the page
        // cache: with `system.partition.cache_size` set it keeps its newest
        // batches in memory instead, up to the shard's share.
        let shared_cache = self.partition_cache.clone().filter(|_| direct_io);
        let log = LogOptions {
            partition_id: u64::from(addr.partition),
            segment_size_bytes: options.segment_size_bytes,
            messages_required_to_save: u64::from(options.messages_required_to_save),
            size_of_messages_required_to_save: options.size_of_messages_required_to_save_bytes,
            validate_checksum_on_read: self.ctx.limits.validate_checksum_on_read,
            write_behind_bytes: self.ctx.limits.write_behind_bytes,
            // Every batch is fsynced: bypassing the page cache makes the
            // fsync cheap (see storage's `partition::direct`). A larger
            // cluster's segments bypass the page cache too: three nodes each
            // writing every byte fill it past the kernel's dirty limits
            // and writeback throttles them (cluster_bench, session 15:
            // replicated buffered 138-181 MB/s, p99 27-31 ms, against
            // 387-449, p99 7.6-8.9, direct).
            direct_io,
            // A larger roster's group journal is fsynced under
            // `persisted`, and so are the segments before a checkpoint (a
            // `replicated` group's are not: a power-lost tail is refilled
            // from the peers at boot). A roster of one writes a `persisted`
            // batch with O_DSYNC instead of a write and an fdatasync, as
            // its journal writes its record, the two beside each other.
            direct_sync: persisted && self.ctx.cluster.replicas == 1,
            // The offsets come from the group's ops.
            follow_log_end: true,
            cache_size_bytes: shared_cache
                .as_ref()
                .map_or(storage::partition::DEFAULT_CACHE_SIZE_BYTES, |shared| {
                    shared.limit()
                }),
            shared_cache,
            ..LogOptions::default()
        };
        PartitionOptions {
            log,
            durability: options.durability,
            offset_durability: options.consumer_offset_durability,
        }
    }

    /// Opens a partition this shard owns, carrying out a purge the
    /// metadata committed (`purge_generation`) that a crash interrupted.
    pub(super) async fn open_partition(
        &self,
        addr: PartitionAddr,
        options: &TopicOptions,
        purge_generation: u64,
    ) -> Result<(), StorageError> {
        let dir = self.partition_dir(addr);
        // A single node that initialized this partition and lost its
        // directory has nobody to refill it from: it refuses to serve it
        // rather than start it empty (a cluster node refills it from its
        // peers; a roster of one has none, and is fenced the same way).
        // Once refused, it stays refused (its retirement fence) even if a
        // directory appears there later: only a delete clears it.
        if self.ctx.cluster.replicas == 1 {
            let reason = if self.retired(addr).await {
                Some(format!(
                    "the partition's history was lost earlier and it is retired ({}), so the \
                     directory {} is not its history; restore the directory from a backup and \
                     remove the fence only if the backup holds everything acknowledged, or \
                     delete the partition (or its topic) to drop it",
                    self.retirement_fence(addr).display(),
                    dir.display()
                ))
            } else if self.lost_history(addr).await {
                self.retire(addr).await?;
                Some(format!(
                    "the partition directory {} is missing, but this node initialized the \
                     partition ({}): its history is lost; restore the directory from a backup, \
                     or delete the partition (or its topic) to drop it",
                    dir.display(),
                    self.initialization_record(addr).display()
                ))
            } else {
                None
            };
            if let Some(reason) = reason {
                error!(?addr, "refusing to serve this partition: {reason}");
                self.fenced.borrow_mut().insert(addr.ns(), (None, reason));
                return Ok(());
            }
        }
        // A cluster node that missed a delete and re-create of this
        // partition holds an older incarnation's directory: it is removed
        // (replication spec §6.1), never served as the new one.
        if dir.exists() && !self.holds_incarnation(addr).await {
            warn!(
                dir = %dir.display(),
                incarnation = ?self.incarnation(addr),
                "removing a partition directory of another incarnation"
            );
            std::fs::remove_dir_all(&dir).map_err(|source| StorageError::Io {
                operation: "remove a stale partition directory",
                path: dir.clone(),
                source,
            })?;
            let options = self.partition_options(addr, options);
            let durability = options.durability;
            let partition = Partition::create(RealStorage, &dir, options, purge_generation).await?;
            self.record_incarnation(addr, &dir).await?;
            self.publish_initialization(addr).await?;
            return self
                .adopt_partition(addr, partition, durability, false)
                .await;
        }
        let options = self.partition_options(addr, options);
        let durability = options.durability;
        // A committed purge is the partition group's op
        // (`PartitionReplica::request_purge`), never carried out locally.
        let opened = Partition::open(RealStorage, &dir, options, 0).await?;
        if !opened.report.truncated.is_empty() {
            warn!(dir = %dir.display(), truncated = ?opened.report.truncated, "recovered a partition with a torn tail");
        }
        for problem in &opened.offset_problems {
            warn!(dir = %dir.display(), ?problem, "ignored an unreadable consumer offset");
        }
        if opened.purge_completed {
            info!(?addr, "completed a purge interrupted by a restart");
        }
        self.publish_initialization(addr).await?;
        self.adopt_partition(addr, opened.partition, durability, false)
            .await?;
        self.request_purge(addr.ns(), purge_generation);
        Ok(())
    }

    /// Cluster mode: the incarnation of a partition (its `created_at_us`)
    /// as the metadata names it.
    pub(super) fn incarnation(&self, addr: PartitionAddr) -> Option<u64> {
        let metadata = self.metadata();
        let partition = metadata
            .stream(engine::metadata::StreamId(addr.stream))?
            .topic(engine::metadata::TopicId(addr.topic))?
            .partition(engine::metadata::PartitionId(addr.partition))?;
        Some(partition.created_at_us)
    }

    /// Cluster mode: whether the partition's directory holds the
    /// incarnation the metadata names (so an op replayed after a restart
    /// adopts it instead of creating the partition afresh).
    pub(super) async fn holds_incarnation(&self, addr: PartitionAddr) -> bool {
        let Some(incarnation) = self.incarnation(addr) else {
            return false;
        };
        let path = self.partition_dir(addr).join(CREATED_REVISION_FILE);
        matches!(storage::counter_file::load(&RealStorage, &path).await, Ok(Some(held)) if held == incarnation)
    }

    /// Creates a new partition of a topic that was purged
    /// `purge_generation` times (it records that, so no later open purges
    /// it for them).
    pub(super) async fn create_partition(
        &self,
        addr: PartitionAddr,
        options: &TopicOptions,
        purge_generation: u64,
    ) -> Result<(), StorageError> {
        let dir = self.partition_dir(addr);
        let options = self.partition_options(addr, options);
        let durability = options.durability;
        let partition = Partition::create(RealStorage, &dir, options, purge_generation).await?;
        self.record_incarnation(addr, &dir).await?;
        self.publish_initialization(addr).await?;
        self.adopt_partition(addr, partition, durability, true)
            .await
    }

    /// Cluster mode: asks the partition's group to carry out purge number
    /// `generation` (a no-op for one it carried out).
    fn request_purge(&self, ns: u64, generation: u64) {
        if generation == 0 {
            return;
        }
        if let Some(owned) = self.partitions.borrow().get(&ns) {
            owned.replica.request_purge(generation);
        }
    }

    /// `<data>/partition-initialization/<namespace>/created.revision`: the
    /// incarnation this node initialized the partition with, kept outside
    /// its directory so that losing the directory is noticed (replication
    /// spec §6.1, the seed README's "Upgrade recovery").
    fn initialization_record(&self, addr: PartitionAddr) -> std::path::PathBuf {
        self.ctx
            .data_path
            .join("partition-initialization")
            .join(addr.ns().to_string())
            .join(CREATED_REVISION_FILE)
    }

    /// Records that the partition's current incarnation is initialized
    /// here (before it first serves).
    async fn publish_initialization(&self, addr: PartitionAddr) -> Result<(), StorageError> {
        let Some(incarnation) = self.incarnation(addr) else {
            return Ok(());
        };
        let path = self.initialization_record(addr);
        let held = storage::counter_file::load(&RealStorage, &path)
            .await
            .ok()
            .flatten();
        if held == Some(incarnation) {
            return Ok(());
        }
        let parent = path.parent().expect("a record has a directory");
        std::fs::create_dir_all(parent).map_err(|source| StorageError::Io {
            operation: "create a partition initialization directory",
            path: parent.to_path_buf(),
            source,
        })?;
        storage::counter_file::store(&RealStorage, &path, incarnation).await
    }

    /// Whether this node initialized the partition's current incarnation
    /// and has since lost its directory (its history).
    pub(super) async fn lost_history(&self, addr: PartitionAddr) -> bool {
        let path = self.initialization_record(addr);
        let held = storage::counter_file::load(&RealStorage, &path)
            .await
            .ok()
            .flatten();
        held.is_some() && held == self.incarnation(addr) && !self.partition_dir(addr).exists()
    }

    /// Single node: the fence that keeps a partition whose history was lost
    /// offline on every later boot (`retirement.fence`, beside its
    /// initialization record; it holds the retired incarnation).
    fn retirement_fence(&self, addr: PartitionAddr) -> std::path::PathBuf {
        self.initialization_record(addr)
            .with_file_name(RETIREMENT_FENCE_FILE)
    }

    /// Whether the partition's current incarnation is fenced off.
    pub(super) async fn retired(&self, addr: PartitionAddr) -> bool {
        let fence = storage::counter_file::load(&RealStorage, &self.retirement_fence(addr))
            .await
            .ok()
            .flatten();
        fence.is_some() && fence == self.incarnation(addr)
    }

    /// Writes the fence (durably, before the refusal is reported).
    async fn retire(&self, addr: PartitionAddr) -> Result<(), StorageError> {
        let Some(incarnation) = self.incarnation(addr) else {
            return Ok(());
        };
        storage::counter_file::store(&RealStorage, &self.retirement_fence(addr), incarnation).await
    }

    /// A deleted partition's record goes with it.
    pub(super) fn forget_initialization(&self, addr: PartitionAddr) {
        if let Some(dir) = self.initialization_record(addr).parent()
            && let Err(e) = std::fs::remove_dir_all(dir)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            warn!(dir = %dir.display(), "cannot remove a partition initialization record: {e}");
        }
    }

    /// Cluster mode: records which incarnation a new partition directory
    /// holds (`created.revision`).
    async fn record_incarnation(
        &self,
        addr: PartitionAddr,
        dir: &std::path::Path,
    ) -> Result<(), StorageError> {
        let incarnation = self.incarnation(addr).unwrap_or(0);
        let path = dir.join(CREATED_REVISION_FILE);
        storage::counter_file::store(&RealStorage, &path, incarnation).await?;
        Ok(())
    }

    async fn adopt_partition(
        &self,
        addr: PartitionAddr,
        partition: Partition<RealStorage>,
        durability: Durability,
        created: bool,
    ) -> Result<(), StorageError> {
        let ns = addr.ns();
        let partition = Rc::new(partition);
        let incarnation = self.incarnation(addr).unwrap_or(0);
        // Only a node that was up when the create committed may start the
        // group normal in its created view (replication spec §2): a create
        // replayed while catching up after a restart or a wipe (stamped
        // before this process started) boots the group blank, to be given
        // the view's log.
        let live = incarnation > self.ctx.started_at_us + LIVE_CREATE_MARGIN_US;
        let started = PartitionReplica::start(
            self.ctx.cluster.clone(),
            ns,
            incarnation,
            &self.partition_dir(addr),
            durability == Durability::Persisted,
            partition.clone(),
            created && live,
        )
        .await;
        let replica = match started {
            Ok(replica) => replica,
            Err(GroupError::Storage(e)) => return Err(e),
            // Replication spec §5.6, §6.1: the partition is tombstoned here
            // (not served, files kept); the rest of the node serves on.
            Err(e) => {
                error!(
                    ?addr,
                    dir = %self.partition_dir(addr).display(),
                    "refusing to serve this partition: {e}"
                );
                self.fenced
                    .borrow_mut()
                    .insert(ns, (Some(partition), e.to_string()));
                return Ok(());
            }
        };
        let owned = OwnedPartition {
            partition,
            stats: self.ctx.partition_stats.cell(ns),
            partition_id: addr.partition,
            replica,
        };
        owned.publish_stats();
        // A background flush can roll segments over after an append has
        // returned; republish then too, so replies never show a stale count.
        let stats = owned.stats.clone();
        owned
            .log()
            .observe_flushes(Rc::new(move |log| publish_stats(log, &stats)));
        self.partitions.borrow_mut().insert(ns, Rc::new(owned));
        Ok(())
    }

    /// Cluster mode: a frame of a partition group, to that partition's
    /// owner (this shard or another); a frame of another incarnation, or
    /// of a partition not materialized here yet, is dropped (the sender
    /// retransmits).
    pub fn deliver_replica_frame(&self, frame: consensus::wire::Frame) {
        let ns = frame.group;
        let target = owner(ns, self.ctx.shard_count);
        if target != usize::from(self.shard_id) {
            if let Err(message) = self.ctx.try_send(target, ShardMessage::ReplicaFrame(frame)) {
                drop(message);
                warn!(
                    ns,
                    shard = target,
                    "a shard's inbox is full; partition frame dropped"
                );
            }
            return;
        }
        let partition = self.partitions.borrow().get(&ns).cloned();
        match partition.as_ref().map(|p| &p.replica) {
            Some(replica) if replica.incarnation == frame.incarnation => {
                replica.deliver(frame.from, frame.message);
            }
            _ => {}
        }
    }

    /// Runs a partition operation on its owner shard.
    pub async fn partition(&self, ns: u64, op: PartitionOp) -> PartitionReply {
        let target = owner(ns, self.ctx.shard_count);
        if target == usize::from(self.shard_id) {
            return self.execute_partition_op(ns, op).await;
        }
        let (tx, rx) = oneshot();
        self.ctx
            .send(
                target,
                ShardMessage::Partition(PartitionCall { ns, op, reply: tx }),
            )
            .await;
        rx.await.unwrap_or(PartitionReply::Failed(ErrorCode::Error))
    }

    /// Serves a call from another shard without blocking the inbox loop.
    pub fn serve_partition_call(self: &Rc<Self>, call: PartitionCall) {
        let node = self.clone();
        compio::runtime::spawn(async move {
            let reply = node.execute_partition_op(call.ns, call.op).await;
            call.reply.send(reply);
        })
        .detach();
    }

    /// Polls `partition` and opens the sealed records of the reply here, on
    /// the owner, while a disk read's bytes are in this core's cache
    /// (`poll_opening`).
    async fn poll_opened(
        &self,
        partition: &OwnedPartition,
        request: PollRequest,
    ) -> Result<PartitionReply, PartitionError> {
        let reply = partition.poll(request).await?;
        let PartitionReply::Polled(mut body) = reply else {
            return Ok(reply);
        };
        let keyring = self.ctx.encryption.as_deref();
        Ok(match open_polled(keyring, &mut body.records) {
            Ok(()) => PartitionReply::Polled(body),
            Err(code) => PartitionReply::Failed(code),
        })
    }

    async fn execute_partition_op(&self, ns: u64, op: PartitionOp) -> PartitionReply {
        let Some(partition) = self.partitions.borrow().get(&ns).cloned() else {
            if self.fenced.borrow().contains_key(&ns) {
                return PartitionReply::Failed(ErrorCode::CannotReadPartitions);
            }
            return PartitionReply::Failed(ErrorCode::PartitionNotFound);
        };
        let result = match op {
            PartitionOp::Append { buffer, range } => partition.append(buffer, range).await,
            PartitionOp::Poll {
                start,
                count,
                consumer,
                auto_commit,
                max_bytes,
            } => {
                let request = PollRequest {
                    start,
                    count,
                    consumer,
                    auto_commit,
                    max_bytes,
                };
                self.poll_opened(&partition, request).await
            }
            PartitionOp::GetOffset { consumer } => Ok(partition.get_offset(consumer)),
            PartitionOp::StoreOffset {
                consumer,
                offset,
                wait,
            } => partition.store_offset(consumer, offset, wait).await,
            PartitionOp::DeleteOffset { consumer, wait } => {
                partition.delete_offset(consumer, wait).await
            }
            PartitionOp::InFlight { consumer } => Ok(PartitionReply::InFlight(
                partition.partition.in_flight(consumer),
            )),
            PartitionOp::Flush { fsync } => partition.flush(fsync).await,
            PartitionOp::Segments => Ok(PartitionReply::Segments(partition.log().segments())),
        };
        result.unwrap_or_else(|e| match e {
            PartitionError::OffsetBeyondEnd { .. } => {
                PartitionReply::Failed(ErrorCode::InvalidOffset)
            }
            PartitionError::OffsetNotFound => {
                PartitionReply::Failed(ErrorCode::ConsumerOffsetNotFound)
            }
            PartitionError::Storage(e) => {
                error!(ns, "partition operation failed: {e}");
                PartitionReply::Failed(storage_error_code(&e))
            }
        })
    }
}

/// The numbers of a change answered before it was numbered (`NoAck`).
const UNNUMBERED: Committed = Committed {
    op: consensus::Op::ZERO,
    commit: consensus::Op::ZERO,
};

/// The reply to a change committed through the partition's group.
fn replicated_reply(outcome: Outcome) -> PartitionReply {
    match outcome {
        Outcome::Done {
            applied,
            op,
            commit,
        } => {
            let committed = Committed { op, commit };
            match applied {
                Applied::Appended { base_offset } => PartitionReply::Appended {
                    base_offset,
                    committed,
                },
                Applied::Stored { caught_up } => PartitionReply::Stored {
                    caught_up,
                    committed,
                },
                // Purges are proposed by the group's primary, never by a
                // client request that waits for this reply.
                Applied::Deleted | Applied::Purged => PartitionReply::Deleted(committed),
                Applied::Failed(code) => PartitionReply::Failed(code),
            }
        }
        Outcome::Refused(code) => PartitionReply::Failed(code),
    }
}

/// The wire code for a storage failure.
/// Publishes a log's figures for every shard's replies.
fn publish_stats(log: &PartitionLog<RealStorage>, stats: &PartitionStats) {
    stats.set(
        log.size_bytes(),
        log.messages_count(),
        log.last_offset().map_or(0, |last| last.0),
        log.segments_count() as u64,
    );
}

fn storage_error_code(e: &StorageError) -> ErrorCode {
    match e {
        StorageError::InvalidRecord { .. } => ErrorCode::InvalidMessagesCount,
        StorageError::Deleted { .. } => ErrorCode::PartitionNotFound,
        StorageError::NoSpace { .. } => ErrorCode::CannotSaveMessagesToSegment,
        _ => ErrorCode::CannotAppendMessage,
    }
}

impl OwnedPartition {
    pub fn log(&self) -> &PartitionLog<RealStorage> {
        self.partition.log()
    }

    fn publish_stats(&self) {
        publish_stats(self.log(), &self.stats);
    }

    async fn append(
        &self,
        buffer: Vec<u8>,
        range: std::ops::Range<usize>,
    ) -> Result<PartitionReply, PartitionError> {
        let outcome = self.replica.submit(Command::Append { buffer, range }).await;
        self.publish_stats();
        Ok(replicated_reply(outcome))
    }

    /// The consumer's offset as this node serves it: the group's, or on
    /// the partition primary a later auto-commit not yet applied.
    fn serving_offset(&self, consumer: ConsumerKey) -> Option<Offset> {
        let stored = self.partition.stored_offset(consumer);
        let pending = self.replica.pending_offset(consumer, stored);
        pending.or(stored)
    }

    async fn poll(&self, mut request: PollRequest) -> Result<PartitionReply, PartitionError> {
        // In a cluster the auto-commit is an op of the group, proposed
        // without waiting for it (replication spec §4.3); the primary
        // continues `Next` after it at once.
        let auto_commit = std::mem::take(&mut request.auto_commit);
        if request.start == PollStart::Next {
            request.start = self
                .serving_offset(request.consumer)
                .map_or(PollStart::Offset(Offset::ZERO), |o| {
                    PollStart::Offset(o.next())
                });
        }
        let polled = self.partition.poll(request).await?;
        if let (true, Some(last)) = (
            auto_commit,
            polled
                .records
                .last()
                .map(|r| r.first_offset.plus(u64::from(r.count) - 1)),
        ) && self
            .serving_offset(request.consumer)
            .is_none_or(|served| served < last)
        {
            self.replica.auto_commit(request.consumer, last);
        }
        let messages: u32 = polled.records.iter().map(|r| r.count).sum();
        let body = PolledBody {
            header: PollReplyHeader {
                partition_id: self.partition_id,
                current_offset: polled.current_offset.0,
                messages_count: messages,
            },
            records: polled
                .records
                .iter()
                .map(|r| (r.header, r.bytes.slice(r.frames.clone())))
                .collect(),
        };
        Ok(PartitionReply::Polled(body))
    }

    fn get_offset(&self, consumer: ConsumerKey) -> PartitionReply {
        let stored = self.serving_offset(consumer);
        PartitionReply::Offset(stored.map(|s| (self.partition.current_offset(), s)))
    }

    async fn store_offset(
        &self,
        consumer: ConsumerKey,
        offset: Offset,
        wait: bool,
    ) -> Result<PartitionReply, PartitionError> {
        self.replica.forget_auto_commit(consumer);
        let command = Command::StoreOffset { consumer, offset };
        if !wait {
            // NoAck: checked here, proposed, answered at once.
            if self
                .partition
                .log()
                .last_offset()
                .is_none_or(|last| offset > last)
            {
                return Err(PartitionError::OffsetBeyondEnd { offset });
            }
            self.replica.propose(command);
            return Ok(PartitionReply::Stored {
                caught_up: false,
                committed: UNNUMBERED,
            });
        }
        Ok(replicated_reply(self.replica.submit(command).await))
    }

    async fn delete_offset(
        &self,
        consumer: ConsumerKey,
        wait: bool,
    ) -> Result<PartitionReply, PartitionError> {
        self.replica.forget_auto_commit(consumer);
        let command = Command::DeleteOffset { consumer };
        if !wait {
            if self.partition.stored_offset(consumer).is_none() {
                return Err(PartitionError::OffsetNotFound);
            }
            self.replica.propose(command);
            return Ok(PartitionReply::Deleted(UNNUMBERED));
        }
        Ok(replicated_reply(self.replica.submit(command).await))
    }

    async fn flush(&self, fsync: bool) -> Result<PartitionReply, PartitionError> {
        self.partition.flush(fsync).await?;
        // A flush may have rolled segments over.
        self.publish_stats();
        Ok(PartitionReply::Done)
    }

    /// Purge number `generation`: the partition's group carries it out as
    /// an op of its own, as soon as its primary proposes it.
    pub(super) async fn purge(&self, generation: u64) -> Result<(), PartitionError> {
        self.replica.request_purge(generation);
        // The group's primary proposes it within a tick; wait (a while) for
        // this node to apply it, so that the purge's answer and the stats
        // after it show the partition empty.
        wait_until(PURGE_WAIT, || {
            self.partition.purge_generation() >= generation
        })
        .await;
        self.publish_stats();
        if self.partition.purge_generation() < generation {
            warn!(
                partition = self.partition_id,
                generation, "the purge is not applied here yet; it completes later"
            );
            let partition = self.partition.clone();
            let stats = self.stats.clone();
            compio::runtime::spawn(async move {
                // Until applied, or the partition is gone (only this task
                // still holds it).
                while partition.purge_generation() < generation && Rc::strong_count(&partition) > 1
                {
                    compio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
                publish_stats(partition.log(), &stats);
            })
            .detach();
        }
        Ok(())
    }

    pub(super) async fn delete_segments(&self, count: u32) -> Result<usize, PartitionError> {
        // Retention stops at the group's last checkpoint (the journal above
        // it names batches in these segments): ask for one at the committed
        // end first and wait (a while) for it.
        let target = self.partition.committed_end();
        if self.partition.checkpointed_end() < target {
            self.replica.request_checkpoint();
            wait_until(CHECKPOINT_WAIT, || {
                self.partition.checkpointed_end() >= target
            })
            .await;
        }
        let deleted = self.partition.delete_segments(count).await?;
        self.publish_stats();
        Ok(deleted)
    }
}
