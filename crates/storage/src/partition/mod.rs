//! The partition log: segments of batch records on disk, a cache of recent
//! batches in memory, group-committed durability and recovery.
//!
//! Order of events for a batch: `append` validates it, stamps partition id,
//! base offset and base timestamp into the caller's buffer (no copy) and
//! caches it; once the flush thresholds are reached a background task writes
//! the pending batches to the active segment with vectored writes (`write`);
//! `sync`/`wait_durable` flush and fdatasync with group commit.
//! `append_at_when_ready` first awaits `ready_for_append`, which writes
//! pending batches when more than `max_unwritten_bytes` wait (backpressure)
//! and reserves offsets. Polls read
//! from the cache when resident, otherwise from segment files (`read`).
//! Recovery (`recovery`) verifies every record at open.
//!
//! Invariants: offsets strictly increase and are never reused (see
//! `frontier`); a failed write or fsync poisons the log for good; no
//! `RefCell` borrow is held across an `.await`. The log is a cheap `Rc`
//! handle: clones share one log on one thread.

mod arena;
pub(crate) mod direct;
mod frontier;
mod index;
mod read;
mod recovery;
mod retention;
mod shared_cache;
mod state;
mod truncate;
mod write;

#[cfg(test)]
mod tests;

use bytes::Bytes;
use std::cell::{Cell, Ref, RefCell, RefMut};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use protocol::batch::{BATCH_HEADER_SIZE, Verify, is_stamped, stamp_record, validate_record};

pub use direct::DIRECT_IO_ALIGN;
pub use frontier::{DEFAULT_OFFSET_RESERVATION, FRONTIER_FILE_NAME};
pub use index::{INDEX_ENTRY_SIZE, IndexEntry, segment_file_name};
pub use recovery::{RecoveryReport, TruncatedTail};
pub use shared_cache::SharedCache;

use crate::error::{Result, StorageError};
use crate::lock::AsyncLock;
use crate::offset::Offset;
use crate::seam::Storage;
use state::{CachedBatch, LogState};

/// Defaults from the topic options of the spec (§5).
pub const DEFAULT_SEGMENT_SIZE_BYTES: u64 = 1 << 30;
pub const DEFAULT_MESSAGES_REQUIRED_TO_SAVE: u64 = 1024;
pub const DEFAULT_SIZE_OF_MESSAGES_REQUIRED_TO_SAVE: u64 = 1 << 20;
/// Bytes appended but not yet written that a partition holds before it
/// slows producers down (`PartitionLog::ready_for_append`).
pub const DEFAULT_MAX_UNWRITTEN_BYTES: u64 = 8 << 20;
/// Written batches kept in memory for polls of fresh data.
pub const DEFAULT_CACHE_SIZE_BYTES: u64 = 8 << 20;
/// Bytes a segment written through the page cache gathers before their
/// write-back is started.
pub const DEFAULT_WRITE_BEHIND_BYTES: u64 = 4 << 20;

/// How one partition log behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogOptions {
    pub partition_id: u64,
    /// Soft limit: the batch that crosses it is written whole.
    pub segment_size_bytes: u64,
    /// Flush once this many messages are pending...
    pub messages_required_to_save: u64,
    /// ...or this many bytes, whichever comes first.
    pub size_of_messages_required_to_save: u64,
    /// Re-verify checksums of records read from disk.
    pub validate_checksum_on_read: bool,
    /// Written batches a partition keeps in memory (at most).
    pub cache_size_bytes: u64,
    /// A budget shared with the shard's other partitions (`shared_cache`):
    /// the partition caches up to `cache_size_bytes` while the shard's
    /// total stays within it.
    pub shared_cache: Option<SharedCache>,
    /// Offsets reserved durably ahead of use (see `frontier`).
    pub offset_reservation: u64,
    /// Write the active segment with direct I/O (see `direct`).
    pub direct_io: bool,
    /// With `direct_io`: open it `O_DSYNC`, so every write is durable when
    /// it completes (for partitions that fsync every batch anyway).
    pub direct_sync: bool,
    /// Appended bytes allowed to wait for a write before
    /// `ready_for_append` makes the next producer wait for a flush.
    pub max_unwritten_bytes: u64,
    /// Offsets come from a replicated log (cluster mode): recovery resumes
    /// at the log's end, never above it at the offset frontier, because
    /// every replica must mint the offsets the replicated ops name.
    pub follow_log_end: bool,
    /// A segment written through the page cache starts the write-back of
    /// every this many bytes it gathers; 0 leaves write-back to the
    /// kernel (see `PartitionLog::write_behind`).
    pub write_behind_bytes: u64,
}

impl Default for LogOptions {
    fn default() -> Self {
        Self {
            partition_id: 0,
            segment_size_bytes: DEFAULT_SEGMENT_SIZE_BYTES,
            messages_required_to_save: DEFAULT_MESSAGES_REQUIRED_TO_SAVE,
            size_of_messages_required_to_save: DEFAULT_SIZE_OF_MESSAGES_REQUIRED_TO_SAVE,
            validate_checksum_on_read: false,
            cache_size_bytes: DEFAULT_CACHE_SIZE_BYTES,
            shared_cache: None,
            offset_reservation: DEFAULT_OFFSET_RESERVATION,
            direct_io: false,
            direct_sync: false,
            max_unwritten_bytes: DEFAULT_MAX_UNWRITTEN_BYTES,
            follow_log_end: false,
            write_behind_bytes: DEFAULT_WRITE_BEHIND_BYTES,
        }
    }
}

impl LogOptions {
    fn validate(&self) -> Result<()> {
        let fail = |reason: &str| {
            Err(StorageError::InvalidOptions {
                reason: reason.to_owned(),
            })
        };
        if self.segment_size_bytes == 0 {
            return fail("segment_size_bytes must be positive");
        }
        if self.messages_required_to_save == 0 || self.size_of_messages_required_to_save == 0 {
            return fail("flush thresholds must be positive");
        }
        if self.max_unwritten_bytes == 0 {
            return fail("max_unwritten_bytes must be positive");
        }
        if self.offset_reservation == 0 {
            return fail("offset_reservation must be positive");
        }
        Ok(())
    }
}

/// What `append` assigned to a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendReceipt {
    pub base_offset: Offset,
    pub last_offset: Offset,
    pub base_timestamp: u64,
    pub size_bytes: u64,
    pub message_count: u32,
}

/// A record (or a run of its messages) selected by a read, ready to be
/// written into a poll reply as `header` followed by `bytes[frames]`.
#[derive(Debug, Clone)]
pub struct PolledRecord {
    /// The stored batch header, or one rewritten for a partial selection.
    pub header: [u8; BATCH_HEADER_SIZE],
    /// Shared bytes holding the frames (a cached record or a disk read).
    pub bytes: Bytes,
    pub frames: Range<usize>,
    pub first_offset: Offset,
    pub count: u32,
}

impl PolledRecord {
    pub fn frame_bytes(&self) -> &[u8] {
        &self.bytes[self.frames.clone()]
    }

    /// Header and frames as one contiguous record (copies; for tests/tools).
    pub fn to_record(&self) -> Vec<u8> {
        let mut record = self.header.to_vec();
        record.extend_from_slice(self.frame_bytes());
        record
    }
}

/// A sealed or active segment as seen by retention and stats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentInfo {
    pub start_offset: Offset,
    pub last_offset: Option<Offset>,
    pub size_bytes: u64,
    pub messages: u64,
    pub max_timestamp: u64,
    pub sealed: bool,
}

struct Inner<S: Storage> {
    storage: S,
    dir: PathBuf,
    options: LogOptions,
    state: RefCell<LogState<S::File>>,
    /// Serialises file mutations: flush, fsync, rollover, retention.
    io: AsyncLock,
    /// Serialises writes of the offset frontier. Separate from `io` so a
    /// reservation never waits behind a long flush; taken after `io` when
    /// both are needed.
    frontier_io: AsyncLock,
    /// Called after each background flush (which may roll segments over),
    /// so an owner can republish figures it derives from the log.
    flush_observer: RefCell<Option<FlushObserver<S>>>,
    /// The largest record appended or read since open: a segment read
    /// covers records up to this size whole (`read`).
    record_max_bytes: Cell<u64>,
}

/// See [`PartitionLog::observe_flushes`].
/// It receives the log, so it need not hold a handle (no reference cycle).
pub type FlushObserver<S> = Rc<dyn Fn(&PartitionLog<S>)>;

/// One partition's log; clones are handles to the same log.
pub struct PartitionLog<S: Storage> {
    inner: Rc<Inner<S>>,
}

impl<S: Storage> Clone for PartitionLog<S> {
    fn clone(&self) -> Self {
        Self {
            inner: Rc::clone(&self.inner),
        }
    }
}

impl<S: Storage> PartitionLog<S> {
    /// Opens (creating if needed) the log in `dir`, verifying every record
    /// and truncating a torn tail. See `recovery`.
    pub async fn open(
        storage: S,
        dir: &Path,
        options: LogOptions,
    ) -> Result<(Self, RecoveryReport)> {
        options.validate()?;
        recovery::open(storage, dir, options).await
    }

    fn from_state(
        storage: S,
        dir: PathBuf,
        options: LogOptions,
        mut state: LogState<S::File>,
    ) -> Self {
        state.shared_cache = options.shared_cache.clone();
        let inner = Inner {
            storage,
            dir,
            options,
            state: RefCell::new(state),
            io: AsyncLock::default(),
            frontier_io: AsyncLock::default(),
            flush_observer: RefCell::new(None),
            record_max_bytes: Cell::new(0),
        };
        Self {
            inner: Rc::new(inner),
        }
    }

    /// Registers a callback run after every successful background flush.
    pub fn observe_flushes(&self, observer: FlushObserver<S>) {
        *self.inner.flush_observer.borrow_mut() = Some(observer);
    }

    fn state(&self) -> Ref<'_, LogState<S::File>> {
        self.inner.state.borrow()
    }

    fn state_mut(&self) -> RefMut<'_, LogState<S::File>> {
        self.inner.state.borrow_mut()
    }

    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    pub fn options(&self) -> &LogOptions {
        &self.inner.options
    }

    /// Appends one batch record: validates its layout (checksums are the
    /// caller's job), stamps the server fields in place and caches it.
    /// Synchronous, so offsets follow arrival order. A timestamp earlier
    /// than the previous batch's is raised to it, keeping timestamps
    /// monotonic for timestamp lookups.
    pub fn append(&self, record: Vec<u8>, now_us: u64) -> Result<AppendReceipt> {
        let whole = 0..record.len();
        self.append_at(record, whole, now_us)
    }

    /// Appends the record held at `buffer[range]` (e.g. a request frame's
    /// batch) without copying it: the record is stamped in place and the
    /// cache keeps a slice of `buffer`.
    pub fn append_at(
        &self,
        buffer: Vec<u8>,
        range: Range<usize>,
        now_us: u64,
    ) -> Result<AppendReceipt> {
        self.append_record(Record::Owned(buffer, range), now_us)
    }

    /// Appends a shared record (a replicated op's body) without copying it
    /// when it already carries the stamp this log gives it (its primary
    /// stamped it at the same offset and time); otherwise a stamped copy
    /// is stored.
    pub fn append_shared(&self, record: Bytes, now_us: u64) -> Result<AppendReceipt> {
        self.append_record(Record::Shared(record), now_us)
    }

    fn append_record(&self, record: Record, now_us: u64) -> Result<AppendReceipt> {
        self.check_writable()?;
        if self.state().no_space {
            self.schedule_flush();
            return Err(StorageError::NoSpace {
                dir: self.inner.dir.clone(),
            });
        }
        let header = validate_record(record.bytes(), Verify::Layout)
            .map_err(|source| StorageError::InvalidRecord { source })?;
        self.note_record_len(header.batch_length);
        let receipt = {
            let mut state = self.state_mut();
            let base_offset = state.next_offset;
            let messages = u64::from(header.message_count);
            if base_offset.plus(messages) > state.frontier {
                let error = StorageError::OffsetsNotReserved {
                    next_offset: base_offset,
                    frontier: state.frontier,
                };
                drop(state);
                self.schedule_frontier_renewal(messages);
                return Err(error);
            }
            let base_timestamp = now_us.max(state.last_timestamp);
            let (stamped, bytes) = record.stamp(
                self.inner.options.partition_id,
                base_offset.0,
                base_timestamp,
            );
            let receipt = AppendReceipt {
                base_offset,
                last_offset: Offset(stamped.last_offset()),
                base_timestamp,
                size_bytes: bytes.len() as u64,
                message_count: stamped.message_count,
            };
            let batch = CachedBatch {
                base_offset,
                last_offset: receipt.last_offset,
                base_timestamp,
                bytes,
                written: false,
            };
            state.push_batch(batch, messages);
            assert_eq!(
                state.next_offset,
                receipt.last_offset.next(),
                "appended at the end"
            );
            state.check_offsets();
            receipt
        };
        self.after_append();
        Ok(receipt)
    }

    /// Where the log starts: its oldest segment's first offset (at or
    /// below its first message).
    pub fn start_offset(&self) -> Offset {
        self.state().segments[0].start_offset
    }

    /// The offset the next appended message will get.
    pub fn next_offset(&self) -> Offset {
        self.state().next_offset
    }

    /// The durable frontier: every message with an offset at or below it
    /// is written and fsynced. After a restart that skipped reserved
    /// offsets it may name an offset that holds no message.
    pub fn durable_offset(&self) -> Option<Offset> {
        self.state().durable_end.checked_minus(1)
    }

    /// Every message with an offset at or below it is in a segment file
    /// (the kernel has it; it survives a process kill).
    pub fn written_offset(&self) -> Option<Offset> {
        self.state().written_end().checked_minus(1)
    }

    pub fn first_offset(&self) -> Option<Offset> {
        self.state().first_offset()
    }

    /// The offset of the newest message, `None` when the log is empty.
    pub fn last_offset(&self) -> Option<Offset> {
        self.state().last_offset
    }

    pub fn segments_count(&self) -> usize {
        self.state().segments.len()
    }

    pub fn size_bytes(&self) -> u64 {
        self.state().size_bytes()
    }

    pub fn messages_count(&self) -> u64 {
        self.state().messages_count()
    }

    /// Bytes appended but not yet written to a segment file.
    pub fn unflushed_bytes(&self) -> u64 {
        self.state().unwritten_bytes
    }

    pub fn is_poisoned(&self) -> bool {
        self.state().poison.is_some()
    }

    pub fn segments(&self) -> Vec<SegmentInfo> {
        let state = self.state();
        let info = |s: &state::Segment<S::File>| SegmentInfo {
            start_offset: s.start_offset,
            last_offset: s.last_offset,
            size_bytes: s.size_bytes,
            messages: s.messages,
            max_timestamp: s.max_timestamp,
            sealed: s.sealed,
        };
        state.segments.iter().map(info).collect()
    }

    /// Fails when the log must refuse writes (poisoned or deleted).
    fn check_writable(&self) -> Result<()> {
        let state = self.state();
        if state.deleted {
            return Err(StorageError::Deleted {
                dir: self.inner.dir.clone(),
            });
        }
        if state.closed {
            return Err(StorageError::Closed {
                dir: self.inner.dir.clone(),
            });
        }
        match &state.poison {
            Some(cause) => Err(StorageError::Poisoned {
                dir: self.inner.dir.clone(),
                cause: cause.clone(),
            }),
            None => Ok(()),
        }
    }
}

/// A record to append: in a buffer of its own (stamped in place) or shared
/// (stored as it is when already stamped right, else copied).
enum Record {
    Owned(Vec<u8>, Range<usize>),
    Shared(Bytes),
}

impl Record {
    /// The record's bytes; an owned range past its buffer reads as empty
    /// (and so fails validation).
    fn bytes(&self) -> &[u8] {
        match self {
            Record::Owned(buffer, range) => buffer.get(range.clone()).unwrap_or_default(),
            Record::Shared(bytes) => bytes,
        }
    }

    /// Stamps the validated record and returns it as the bytes to cache.
    fn stamp(
        self,
        partition_id: u64,
        base_offset: u64,
        base_timestamp: u64,
    ) -> (protocol::batch::BatchHeader, Bytes) {
        let stamp =
            |buffer: &mut [u8]| stamp_record(buffer, partition_id, base_offset, base_timestamp);
        match self {
            Record::Owned(mut buffer, range) => {
                let header = stamp(&mut buffer[range.clone()]);
                (header, Bytes::from(buffer).slice(range))
            }
            Record::Shared(bytes) => {
                if is_stamped(&bytes, partition_id, base_offset, base_timestamp) {
                    let header = protocol::batch::BatchHeader::read(&bytes)
                        .expect("a validated record has a header");
                    (header, bytes)
                } else {
                    let mut buffer = bytes.to_vec();
                    let header = stamp(&mut buffer);
                    (header, Bytes::from(buffer))
                }
            }
        }
    }
}
