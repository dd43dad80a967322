//! Partitions owned by this shard, and the operations other shards send to
//! them (append, poll, consumer offsets, flush).
//!
//! A partition is owned by exactly one shard (`node::ownership`). Handlers
//! call [`Node::partition`]: on the owner the operation runs directly,
//! otherwise it travels to the owner's inbox as a [`PartitionCall`] and the
//! answer comes back on a oneshot channel. Replies are owned bytes so they
//! can cross threads.

use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;

use crossfire::oneshot::{TxOneshot, oneshot};
use engine::metadata::topic::options::{Durability, TopicOptions};
use protocol::ErrorCode;
use protocol::batch::BATCH_HEADER_SIZE;
use protocol::responses::PollReplyHeader;
use storage::offsets::{ConsumerKind, OffsetStore};
use storage::{LogOptions, PartitionLog, RealStorage, StorageError};
use tracing::{error, warn};

use super::Node;
use super::ownership::{namespace, owner};
use super::partition_stats::PartitionStats;
use super::shard_message::ShardMessage;
use server::config::DirectIo;

/// Where a poll starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PollStart {
    Offset(u64),
    Timestamp(u64),
    First,
    Last,
    /// Stored offset of this consumer + 1, or 0.
    Next,
}

/// Whose offset (the storage kind and the numeric id).
pub type ConsumerKey = (ConsumerKind, u32);

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
    StoreOffset {
        consumer: ConsumerKey,
        offset: u64,
    },
    DeleteOffset {
        consumer: ConsumerKey,
    },
    /// Whether a consumer group was served messages it has not committed.
    InFlight {
        consumer: ConsumerKey,
    },
    Flush {
        fsync: bool,
    },
}

#[derive(Debug)]
pub enum PartitionReply {
    Appended {
        base_offset: u64,
    },
    /// A poll reply body: shared slices of the stored records.
    Polled(PolledBody),
    /// `(current_offset, stored_offset)`; `None` when nothing is stored.
    Offset(Option<(u64, u64)>),
    Done,
    /// An offset was stored; `caught_up` when it reaches the highest offset
    /// ever served to that consumer (a pending revocation may complete).
    Stored {
        caught_up: bool,
    },
    InFlight(bool),
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

/// One partition owned by this shard.
pub struct OwnedPartition {
    pub log: PartitionLog<RealStorage>,
    offsets_store: OffsetStore<RealStorage>,
    offsets: std::cell::RefCell<HashMap<ConsumerKey, u64>>,
    /// The highest offset served to each consumer group (not persisted: after
    /// a restart no member survives, so nothing is in flight).
    served: std::cell::RefCell<HashMap<ConsumerKey, u64>>,
    stats: Arc<PartitionStats>,
    durability: Durability,
    offset_durability: Durability,
    partition_id: u32,
}

/// Most bytes one poll reply carries (well below the frame caps).
pub const POLL_MAX_BYTES: u64 = 8 * 1024 * 1024;

impl Node {
    pub fn partition_dir(&self, addr: PartitionAddr) -> PathBuf {
        self.ctx
            .data_path
            .join("streams")
            .join(addr.stream.to_string())
            .join("topics")
            .join(addr.topic.to_string())
            .join("partitions")
            .join(addr.partition.to_string())
    }

    pub fn owns(&self, ns: u64) -> bool {
        owner(ns, self.ctx.shard_count) == usize::from(self.shard_id)
    }

    /// Opens (creating if missing) a partition this shard owns.
    pub(super) async fn open_partition(
        &self,
        addr: PartitionAddr,
        options: &TopicOptions,
    ) -> Result<(), StorageError> {
        let ns = addr.ns();
        let dir = self.partition_dir(addr);
        let persisted = options.durability == Durability::Persisted;
        let log_options = LogOptions {
            partition_id: u64::from(addr.partition),
            segment_size_bytes: options.segment_size_bytes,
            messages_required_to_save: u64::from(options.messages_required_to_save),
            size_of_messages_required_to_save: options.size_of_messages_required_to_save_bytes,
            validate_checksum_on_read: self.ctx.limits.validate_checksum_on_read,
            // Every batch is fsynced: bypassing the page cache makes the
            // fsync cheap (see storage's `partition::direct`).
            direct_io: match self.ctx.limits.direct_io {
                DirectIo::Always => true,
                DirectIo::Fsync => persisted,
                DirectIo::Never => false,
            },
            direct_sync: persisted,
            ..LogOptions::default()
        };
        let (log, report) = PartitionLog::open(RealStorage, &dir, log_options).await?;
        if !report.truncated.is_empty() {
            warn!(dir = %dir.display(), truncated = ?report.truncated, "recovered a partition with a torn tail");
        }
        let offsets_store = OffsetStore::new(RealStorage, &dir);
        offsets_store.create_dirs().await?;
        let loaded = offsets_store.load_all().await?;
        for problem in &loaded.problems {
            warn!(dir = %dir.display(), ?problem, "ignored an unreadable consumer offset");
        }
        let offsets = loaded
            .offsets
            .iter()
            .map(|o| ((o.kind, o.id), o.offset))
            .collect();
        let partition = OwnedPartition {
            log,
            offsets_store,
            offsets: std::cell::RefCell::new(offsets),
            served: std::cell::RefCell::new(HashMap::new()),
            stats: self.ctx.partition_stats.cell(ns),
            durability: options.durability,
            offset_durability: options.consumer_offset_durability,
            partition_id: addr.partition,
        };
        partition.publish_stats();
        // A background flush can roll segments over after an append has
        // returned; republish then too, so replies never show a stale count.
        let stats = partition.stats.clone();
        partition
            .log
            .observe_flushes(Rc::new(move |log| publish_stats(log, &stats)));
        self.partitions.borrow_mut().insert(ns, Rc::new(partition));
        Ok(())
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

    async fn execute_partition_op(&self, ns: u64, op: PartitionOp) -> PartitionReply {
        let Some(partition) = self.partitions.borrow().get(&ns).cloned() else {
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
                partition
                    .poll(start, count, consumer, auto_commit, max_bytes)
                    .await
            }
            PartitionOp::GetOffset { consumer } => Ok(partition.get_offset(consumer)),
            PartitionOp::StoreOffset { consumer, offset } => {
                partition.store_offset(consumer, offset).await
            }
            PartitionOp::DeleteOffset { consumer } => partition.delete_offset(consumer).await,
            PartitionOp::InFlight { consumer } => {
                Ok(PartitionReply::InFlight(partition.in_flight(consumer)))
            }
            PartitionOp::Flush { fsync } => partition.flush(fsync).await,
        };
        result.unwrap_or_else(|e| {
            error!(ns, "partition operation failed: {e}");
            PartitionReply::Failed(storage_error_code(&e))
        })
    }
}

/// The wire code for a storage failure.
/// Publishes a log's figures for every shard's replies.
fn publish_stats(log: &PartitionLog<RealStorage>, stats: &PartitionStats) {
    stats.set(
        log.size_bytes(),
        log.messages_count(),
        log.last_offset().unwrap_or(0),
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
    fn publish_stats(&self) {
        publish_stats(&self.log, &self.stats);
    }

    fn current_offset(&self) -> u64 {
        self.log.last_offset().unwrap_or(0)
    }

    async fn append(
        &self,
        buffer: Vec<u8>,
        range: std::ops::Range<usize>,
    ) -> Result<PartitionReply, StorageError> {
        // Producers faster than the disk wait for a flush (bounded memory),
        // and appends that outrun the offset renewal wait for a reservation.
        let receipt = self
            .log
            .append_at_when_ready(buffer, range, super::process_stats::now_us)
            .await?;
        // An acknowledged batch is at least in the kernel (it survives a
        // process kill); `persisted` also waits for the fsync (power loss).
        match self.durability {
            Durability::Persisted => self.log.wait_durable(receipt.last_offset).await?,
            _ => self.log.wait_written(receipt.last_offset).await?,
        }
        self.publish_stats();
        Ok(PartitionReply::Appended {
            base_offset: receipt.base_offset,
        })
    }

    async fn resolve_start(
        &self,
        start: PollStart,
        count: u32,
        consumer: ConsumerKey,
    ) -> Result<Option<u64>, StorageError> {
        let Some(last) = self.log.last_offset() else {
            return Ok(None);
        };
        Ok(match start {
            PollStart::Offset(offset) => Some(offset),
            PollStart::First => Some(self.log.first_offset().unwrap_or(0)),
            PollStart::Last => Some(last.saturating_sub(u64::from(count.max(1)) - 1)),
            PollStart::Next => Some(self.offsets.borrow().get(&consumer).map_or(0, |o| o + 1)),
            PollStart::Timestamp(ts) => self.log.find_offset_by_timestamp(ts).await?,
        }
        .filter(|&offset| offset <= last))
    }

    async fn poll(
        &self,
        start: PollStart,
        count: u32,
        consumer: ConsumerKey,
        auto_commit: bool,
        max_bytes: u64,
    ) -> Result<PartitionReply, StorageError> {
        let current_offset = self.current_offset();
        let from = if count == 0 {
            None
        } else {
            self.resolve_start(start, count, consumer).await?
        };
        let records = match from {
            Some(from) => self.log.read(from, count, max_bytes).await?,
            None => Vec::new(),
        };
        let messages: u32 = records.iter().map(|r| r.count).sum();
        let body = PolledBody {
            header: PollReplyHeader {
                partition_id: self.partition_id,
                current_offset,
                messages_count: messages,
            },
            records: records
                .iter()
                .map(|r| (r.header, r.bytes.slice(r.frames.clone())))
                .collect(),
        };
        if consumer.0 == ConsumerKind::ConsumerGroup
            && let Some(last) = records
                .last()
                .map(|r| r.first_offset + u64::from(r.count) - 1)
        {
            let mut served = self.served.borrow_mut();
            let entry = served.entry(consumer).or_insert(last);
            *entry = (*entry).max(last);
        }
        if auto_commit
            && let Some(last) = records
                .last()
                .map(|r| r.first_offset + u64::from(r.count) - 1)
        {
            let advanced = self
                .offsets
                .borrow()
                .get(&consumer)
                .is_none_or(|&stored| last > stored);
            if advanced {
                self.offsets.borrow_mut().insert(consumer, last);
                self.offsets_store
                    .store(consumer.0, consumer.1, last, false)
                    .await?;
            }
        }
        Ok(PartitionReply::Polled(body))
    }

    fn get_offset(&self, consumer: ConsumerKey) -> PartitionReply {
        let stored = self.offsets.borrow().get(&consumer).copied();
        PartitionReply::Offset(stored.map(|s| (self.current_offset(), s)))
    }

    async fn store_offset(
        &self,
        consumer: ConsumerKey,
        offset: u64,
    ) -> Result<PartitionReply, StorageError> {
        match self.log.last_offset() {
            Some(last) if offset <= last => {}
            _ => return Ok(PartitionReply::Failed(ErrorCode::InvalidOffset)),
        }
        self.offsets.borrow_mut().insert(consumer, offset);
        let fsync = self.offset_durability == Durability::Persisted;
        self.offsets_store
            .store(consumer.0, consumer.1, offset, fsync)
            .await?;
        let caught_up = self
            .served
            .borrow()
            .get(&consumer)
            .is_none_or(|&served| offset >= served);
        Ok(PartitionReply::Stored { caught_up })
    }

    /// Served beyond the stored offset: moving this partition now could
    /// redeliver what the current owner is still processing.
    fn in_flight(&self, consumer: ConsumerKey) -> bool {
        let Some(&served) = self.served.borrow().get(&consumer) else {
            return false;
        };
        self.offsets
            .borrow()
            .get(&consumer)
            .is_none_or(|&stored| stored < served)
    }

    async fn delete_offset(&self, consumer: ConsumerKey) -> Result<PartitionReply, StorageError> {
        if self.offsets.borrow_mut().remove(&consumer).is_none() {
            return Ok(PartitionReply::Failed(ErrorCode::ConsumerOffsetNotFound));
        }
        self.offsets_store.delete(consumer.0, consumer.1).await?;
        Ok(PartitionReply::Done)
    }

    async fn flush(&self, fsync: bool) -> Result<PartitionReply, StorageError> {
        if fsync {
            self.log.sync().await?
        } else {
            self.log.flush().await?
        }
        // A flush may have rolled segments over.
        self.publish_stats();
        Ok(PartitionReply::Done)
    }

    /// Purge: an empty log from offset 0 and no stored offsets.
    pub(super) async fn purge(&self) -> Result<(), StorageError> {
        self.log.purge().await?;
        self.offsets.borrow_mut().clear();
        self.offsets_store.delete_all().await?;
        self.publish_stats();
        Ok(())
    }

    /// The lowest stored offset: retention never deletes past it.
    pub(super) fn barrier(&self) -> Option<u64> {
        self.offsets.borrow().values().copied().min()
    }

    pub(super) async fn delete_segments(&self, count: u32) -> Result<usize, StorageError> {
        let deleted = self
            .log
            .delete_oldest_sealed_segments(count as usize, self.barrier())
            .await?;
        self.publish_stats();
        Ok(deleted)
    }
}
