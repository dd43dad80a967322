//! The write path: background flushes, vectored writes into the active
//! segment, rollover, group-committed fsync, the offset frontier renewal
//! and poisoning.
//!
//! Every file mutation runs under the log's async `io` lock, so positions
//! are assigned by exactly one writer. Group commit: `wait_durable` callers
//! queue on that lock; the first one flushes and fsyncs everything appended
//! so far, and the callers it covered return without another fsync. A
//! failed write or fsync poisons the log: the bytes may or may not be on
//! disk, so it never retries and never claims durability again.

use std::io;
use std::path::Path;
use std::rc::Rc;

use compio::BufResult;
use protocol::batch::BatchHeader;

use super::direct::{self, AlignedWrite, DIRECT_IO_ALIGN};
use super::index::{INDEX_EXTENSION, LOG_EXTENSION, segment_path};
use super::state::Segment;
use super::{PartitionLog, frontier};
use crate::error::{Result, StorageError};
use crate::offset::Offset;
use crate::seam::{RING_WRITE_BYTES, Storage, StorageFile};

/// Renew the offset reservation when fewer than `reservation / DIVISOR`
/// reserved offsets remain.
const FRONTIER_RENEWAL_DIVISOR: u64 = 2;
/// Chunks below this are written through the page cache even to a
/// segment written with plain O_DIRECT (`flush_locked`).
const DIRECT_WRITE_MIN_BYTES: u64 = 256 << 10;
/// Buffered index bytes that trigger an index write (170 entries).
const INDEX_WRITE_BATCH_BYTES: usize = 170 * super::index::INDEX_ENTRY_SIZE;

impl<S: Storage> PartitionLog<S> {
    /// Called after every append: starts a background flush when a flush
    /// threshold is reached and renews the offset reservation early.
    /// Queues a background flush unless one is queued already.
    pub(super) fn schedule_flush(&self) {
        let flush = {
            let mut state = self.state_mut();
            let flush = !state.flush_scheduled;
            state.flush_scheduled = true;
            flush
        };
        if flush {
            self.spawn_flush();
        }
    }

    fn spawn_flush(&self) {
        let log = self.clone();
        compio::runtime::spawn(async move {
            // Cleared only once this flush holds the I/O lock: appends
            // that arrive while an earlier flush runs then queue at most
            // one more flush instead of one each.
            let io_guard = log.inner.io.lock().await;
            log.state_mut().flush_scheduled = false;
            let flushed = log.flush_locked().await;
            drop(io_guard);
            match flushed {
                Ok(()) => {
                    let observer = log.inner.flush_observer.borrow().clone();
                    if let Some(observer) = observer {
                        observer(&log);
                    }
                }
                Err(
                    StorageError::Deleted { .. }
                    | StorageError::Purged { .. }
                    | StorageError::NoSpace { .. },
                ) => {}
                Err(error) => {
                    tracing::warn!(dir = %log.dir().display(), %error, "background flush failed")
                }
            }
        })
        .detach();
    }

    pub(super) fn after_append(&self) {
        let options = &self.inner.options;
        let (flush, renew) = {
            let mut state = self.state_mut();
            let over_threshold = state.unwritten_messages >= options.messages_required_to_save
                || state.unwritten_bytes >= options.size_of_messages_required_to_save;
            let flush = over_threshold && !state.flush_scheduled;
            state.flush_scheduled |= flush;
            let remaining = state.frontier.messages_since(state.next_offset);
            (
                flush,
                remaining < options.offset_reservation / FRONTIER_RENEWAL_DIVISOR,
            )
        };
        if flush {
            self.spawn_flush();
        }
        if renew {
            self.schedule_frontier_renewal(0);
        }
    }

    /// Writes every pending batch to the active segment (rolling over as
    /// needed). Does not fsync.
    pub async fn flush(&self) -> Result<()> {
        let _io = self.inner.io.lock().await;
        self.flush_locked().await
    }

    /// Makes everything appended so far durable.
    pub async fn sync(&self) -> Result<()> {
        let Some(last) = self.state().next_offset.checked_minus(1) else {
            return Ok(());
        };
        self.wait_durable(last).await
    }

    /// Returns once `offset` (an offset already handed out by `append`) is
    /// written and fsynced, sharing one fsync with concurrent callers.
    pub async fn wait_durable(&self, offset: Offset) -> Result<()> {
        let generation = {
            let state = self.state();
            assert!(
                offset < state.next_offset,
                "wait_durable({offset}) for an offset never appended"
            );
            if state.durable_end > offset {
                return Ok(());
            }
            state.generation
        };
        let _io = self.inner.io.lock().await;
        self.check_generation(generation)?;
        if self.state().durable_end > offset {
            return Ok(());
        }
        self.flush_locked().await?;
        self.sync_locked().await?;
        assert!(
            self.state().durable_end > offset,
            "a completed sync must cover the offset"
        );
        Ok(())
    }

    /// Returns once `offset` (an offset already handed out by `append`) is
    /// written to its segment file (in the kernel's page cache, so it
    /// survives a process kill but not a power loss), sharing one write
    /// with concurrent callers. No fsync.
    pub async fn wait_written(&self, offset: Offset) -> Result<()> {
        let generation = {
            let state = self.state();
            assert!(
                offset < state.next_offset,
                "wait_written({offset}) for an offset never appended"
            );
            if state.written_end() > offset {
                return Ok(());
            }
            state.generation
        };
        let _io = self.inner.io.lock().await;
        self.check_generation(generation)?;
        if self.state().written_end() > offset {
            return Ok(());
        }
        self.flush_locked().await?;
        let state = self.state();
        assert!(
            state.written_end() > offset,
            "a completed flush must cover the offset"
        );
        assert!(
            state.durable_end <= state.written_end() && state.written_end() <= state.next_offset,
            "durable <= written <= next offset"
        );
        Ok(())
    }

    /// Flush loop; the caller holds the `io` lock.
    pub(super) async fn flush_locked(&self) -> Result<()> {
        loop {
            self.check_writable()?;
            let (chunk, log, direct, copied, log_path) = {
                let state = self.state();
                let Some(chunk) = state.plan_flush_chunk(self.inner.options.segment_size_bytes)
                else {
                    // Postcondition: everything appended is in a segment.
                    assert_eq!(state.written_end(), state.next_offset, "flushed to the end");
                    state.check_offsets();
                    return Ok(());
                };
                let active = state.active();
                assert!(!active.sealed, "the active segment is never sealed");
                let mut arena = state.shared_cache.as_ref().map(|shared| shared.arena());
                // A small chunk for a segment written with plain O_DIRECT
                // goes through the page cache instead: a direct write
                // waits for the device (and rewrites the tail block), so a
                // one-message batch took twice as long (1-message and
                // 100-message sends x0.55-0.66, docs/benchmarks.md,
                // session 18). With O_DSYNC every write stays direct: it
                // saves the fsync that would follow.
                let small =
                    !self.inner.options.direct_sync && chunk.size_bytes < DIRECT_WRITE_MIN_BYTES;
                let direct = active.direct.as_ref().filter(|_| !small).map(|writer| {
                    let planned = direct::plan_write(
                        chunk.position,
                        &writer.tail,
                        &chunk.buffers,
                        arena.as_deref_mut(),
                    );
                    (Rc::clone(&writer.file), planned)
                });
                // A buffered write of a partition with an arena writes (and
                // caches) a copy of the records there.
                let copied = match (&direct, arena.as_deref_mut()) {
                    (None, Some(arena)) => arena.copy(&chunk.buffers),
                    _ => None,
                };
                (
                    chunk,
                    Rc::clone(&active.log),
                    direct,
                    copied,
                    active.log_path.clone(),
                )
            };
            // The region the cache keeps instead of the records, and where
            // they start in it (after the rewritten tail).
            let mut region = None;
            let wrote_direct = direct.is_some();
            let written = match direct {
                Some((file, planned)) => {
                    let BufResult(written, buffer) =
                        file.write_all_at(planned.buffer, planned.position).await;
                    if let Err(error) = &written
                        && error.raw_os_error() == Some(libc::EINVAL)
                    {
                        // The device wants a larger alignment than
                        // `DIRECT_IO_ALIGN`: nothing was written, so write
                        // this segment through the page cache instead.
                        tracing::warn!(file = %log_path.display(), %error, "direct write refused; writing through the page cache");
                        self.state_mut().active_mut().direct = None;
                        continue;
                    }
                    if written.is_ok() {
                        let tail = AlignedWrite::next_tail(&buffer, planned.data_len);
                        let records_at = (chunk.position - planned.position) as usize;
                        if let Some(writer) = self.state_mut().active_mut().direct.as_mut() {
                            writer.tail = tail;
                        }
                        if planned.in_arena {
                            region = Some(buffer.slice(records_at..planned.data_len));
                        }
                    }
                    written
                }
                None => {
                    let buffers = match &copied {
                        Some(copy) => vec![copy.clone()],
                        None => chunk.buffers.clone(),
                    };
                    region = copied;
                    if chunk.size_bytes >= RING_WRITE_BYTES {
                        // A large write goes through the ring: the kernel
                        // copies it at once when it can, and otherwise
                        // (dirty-page throttling, page reclaim) hands it to
                        // a kernel worker instead of stopping this shard's
                        // thread, and every other connection on it, for the
                        // 8-22 ms such a write took under sustained load
                        // (`perf trace`). The writer itself still waits:
                        // alternated with the blocking call, the throughput
                        // was within noise (docs/benchmarks.md, session 17).
                        log.write_vectored_all_at(buffers, chunk.position).await.0
                    } else {
                        // Into the page cache: a blocking copy on this
                        // thread is cheaper than a round trip through the
                        // ring for small writes (measured: 1-message sends
                        // +20%; docs/benchmarks.md).
                        log.write_vectored_all_at_blocking(&buffers, chunk.position)
                    }
                }
            };
            // A full disk stalls the log instead of poisoning it: the chunk
            // stays unflushed and is written again, at the same position,
            // once a later flush finds space.
            written.map_err(|error| self.write_failed("segment write", &log_path, error))?;
            self.clear_no_space();
            let rolls = chunk.rolls;
            {
                let mut state = self.state_mut();
                if !wrote_direct && let Some(writer) = state.active_mut().direct.as_mut() {
                    // Written through the page cache: the next direct
                    // write rewrites the block these bytes end in.
                    writer.tail = direct::tail_after(&writer.tail, &chunk.buffers);
                }
                state.apply_flushed_chunk(
                    &chunk,
                    region.as_ref(),
                    self.inner.options.cache_size_bytes,
                );
                let active = state.active_mut();
                // A synchronous direct write (O_DSYNC) is already durable.
                if wrote_direct && self.inner.options.direct_sync {
                    active.unsynced = false;
                }
            }
            self.write_behind(wrote_direct, chunk.size_bytes);
            self.write_index_locked(rolls).await?;
            if rolls {
                self.roll_locked(chunk.last_offset.next()).await?;
            }
        }
    }

    /// A segment written through the page cache (or the small writes of
    /// one written with plain O_DIRECT) starts the write-back of every
    /// `write_behind_bytes` it gathers, instead of leaving them dirty
    /// until the kernel's own thresholds: under sustained load those let
    /// gigabytes pile up and then pause every writer of the machine
    /// (dirty-page throttling) while the disk catches up, which the
    /// partition's next write (on the shard's thread) then waits out. The
    /// pages stay cached for readers; durability is unchanged (an fsync
    /// still makes a segment durable).
    fn write_behind(&self, wrote_direct: bool, written: u64) {
        let every = self.inner.options.write_behind_bytes;
        let (log, from, end, drop) = {
            let mut state = self.state_mut();
            let keeps_own = state.shared_cache.is_some();
            let segment = state.active_mut();
            let end = segment.size_bytes;
            if wrote_direct {
                // Nothing dirty from this write; with nothing dirty before
                // it either, there is nothing to start below the end.
                if segment.dirty_bytes == 0 {
                    segment.written_back = end;
                }
                return;
            }
            segment.dirty_bytes += written;
            if every == 0 || segment.dirty_bytes < every {
                return;
            }
            let from = segment.written_back;
            segment.written_back = end;
            segment.dirty_bytes = 0;
            // A partition with a shared cache keeps its newest batches
            // itself (in the arena): the pages of the range whose
            // write-back started last time are dropped, so the kernel
            // reuses them for the next writes instead of taking memory it
            // has not touched lately (copies into such pages were 35% of
            // the CPU on 100-message batches, docs/benchmarks.md, session
            // 18).
            let drop = keeps_own.then_some((segment.uncached_below, from));
            if keeps_own {
                segment.uncached_below = from;
            }
            (Rc::clone(&segment.log), from, end, drop)
        };
        // Advisory: a failure here loses nothing, and a real I/O error
        // surfaces at the next fsync.
        if let Err(error) = log.start_writeback(from, end - from) {
            tracing::debug!(%error, "starting a segment's write-back failed");
        }
        if let Some((below, to)) = drop.filter(|(below, to)| to > below)
            && let Err(error) = log.drop_cached(below, to - below)
        {
            tracing::debug!(%error, "dropping a segment's written pages failed");
        }
    }

    /// Writes the active segment's buffered index entries once they fill
    /// `INDEX_WRITE_BATCH_BYTES`, or always with `force` (rollover, close).
    /// Entries are batched because the index is a hint: recovery rebuilds
    /// entries lost in a crash, and skipping a write per flush saves an I/O
    /// round trip on every durable append.
    pub(super) async fn write_index_locked(&self, force: bool) -> Result<()> {
        let (file, bytes, position, path) = {
            let mut state = self.state_mut();
            let active = state.active_mut();
            if active.pending_index.is_empty()
                || (!force && active.pending_index.len() < INDEX_WRITE_BATCH_BYTES)
            {
                return Ok(());
            }
            let bytes = std::mem::take(&mut active.pending_index);
            let path = active.log_path.with_extension(INDEX_EXTENSION);
            (
                Rc::clone(&active.index_file),
                bytes,
                active.index_size_bytes,
                path,
            )
        };
        let len = bytes.len() as u64;
        let BufResult(written, bytes) = file.write_all_at(bytes, position).await;
        if let Err(error) = written {
            let error = self.write_failed("index write", &path, error);
            if matches!(error, StorageError::NoSpace { .. }) {
                let mut state = self.state_mut();
                let active = state.active_mut();
                let newer = std::mem::replace(&mut active.pending_index, bytes);
                active.pending_index.extend_from_slice(&newer);
            }
            return Err(error);
        }
        self.state_mut().active_mut().index_size_bytes += len;
        Ok(())
    }

    /// Seals the active segment and starts a new one at `start_offset`.
    pub(super) async fn roll_locked(&self, start_offset: Offset) -> Result<()> {
        self.trim_padding_locked().await?;
        let segment = self.create_segment(start_offset).await?;
        let mut state = self.state_mut();
        let active = state.active_mut();
        assert!(
            active.last_offset.is_none_or(|last| last < start_offset),
            "segments must not overlap"
        );
        active.sealed = true;
        state.segments.push(segment);
        state.dir_dirty = true;
        assert_eq!(
            state.active().start_offset,
            start_offset,
            "rolled to the new segment"
        );
        state.check_offsets();
        Ok(())
    }

    /// Ends direct writes to the active segment and cuts the zero padding
    /// after its last record (see `direct`), so a sealed or cleanly closed
    /// segment ends exactly at its last record.
    async fn trim_padding_locked(&self) -> Result<()> {
        let trim = {
            let mut state = self.state_mut();
            let active = state.active_mut();
            let writer = active.direct.take();
            (writer.is_some() && !active.size_bytes.is_multiple_of(DIRECT_IO_ALIGN)).then(|| {
                (
                    Rc::clone(&active.log),
                    active.size_bytes,
                    active.log_path.clone(),
                )
            })
        };
        if let Some((log, size, path)) = trim {
            log.set_len(size)
                .await
                .map_err(|error| self.poison("segment padding trim", &path, error))?;
            // The new length becomes durable with the next sync.
            self.state_mut().active_mut().unsynced = true;
        }
        Ok(())
    }

    /// Creates the two files of a new, empty segment.
    pub(super) async fn create_segment(&self, start_offset: Offset) -> Result<Segment<S::File>> {
        let storage = &self.inner.storage;
        let log_path = segment_path(&self.inner.dir, start_offset, LOG_EXTENSION);
        let index_path = segment_path(&self.inner.dir, start_offset, INDEX_EXTENSION);
        let log = storage
            .create(&log_path)
            .await
            .map_err(|error| self.poison("segment create", &log_path, error))?;
        let index = storage
            .create(&index_path)
            .await
            .map_err(|error| self.poison("index create", &index_path, error))?;
        let mut segment = Segment::new(start_offset, Rc::new(log), Rc::new(index), log_path);
        if self.inner.options.direct_io {
            let synchronous = self.inner.options.direct_sync;
            segment.direct = direct::open_writer(storage, &segment, synchronous).await?;
        }
        Ok(segment)
    }

    /// Fsyncs every segment written since the last sync, oldest first, then
    /// the directory if segments were created or removed; the caller holds
    /// the `io` lock and has flushed.
    pub(super) async fn sync_locked(&self) -> Result<()> {
        let (target, dirty, dir_dirty) = {
            let state = self.state();
            let dirty: Vec<_> = state
                .segments
                .iter()
                .filter(|s| s.unsynced)
                .map(|s| (Rc::clone(&s.log), s.log_path.clone()))
                .collect();
            (state.written_end(), dirty, state.dir_dirty)
        };
        for (file, path) in &dirty {
            self.check_writable()?;
            file.sync_data()
                .await
                .map_err(|error| self.poison("fsync", path, error))?;
        }
        if dir_dirty {
            let dir = &self.inner.dir;
            self.inner
                .storage
                .sync_dir(dir)
                .await
                .map_err(|error| self.poison("directory fsync", dir, error))?;
        }
        let mut state = self.state_mut();
        state.segments.iter_mut().for_each(|s| s.unsynced = false);
        state.dir_dirty &= !dir_dirty;
        state.durable_end = state.durable_end.max(target);
        assert!(
            state.durable_end >= target,
            "a sync covers what was written"
        );
        state.check_offsets();
        Ok(())
    }

    /// Clean shutdown: makes everything durable and lowers the offset
    /// frontier to the log end, so the next open skips no offsets. Every
    /// later write fails with `Closed`.
    pub async fn close(&self) -> Result<()> {
        let _io = self.inner.io.lock().await;
        self.flush_locked().await?;
        self.write_index_locked(true).await?;
        self.trim_padding_locked().await?;
        self.sync_locked().await?;
        let _frontier = self.inner.frontier_io.lock().await;
        let next_offset = self.state().next_offset;
        self.state_mut().closed = true;
        frontier::store(&self.inner.storage, &self.inner.dir, next_offset).await
    }

    /// Records the first failure for good and returns the error to report.
    /// A failed write: a full disk (ENOSPC, EDQUOT) stalls the log until a
    /// later write succeeds; anything else poisons it.
    pub(super) fn write_failed(
        &self,
        operation: &str,
        path: &Path,
        error: io::Error,
    ) -> StorageError {
        if !crate::error::is_disk_full(&error) {
            return self.poison(operation, path, error);
        }
        let mut state = self.state_mut();
        if !state.no_space {
            tracing::error!(dir = %self.inner.dir.display(), "{operation} on {} failed: {error}; refusing new messages until space is freed", path.display());
            state.no_space = true;
        }
        StorageError::NoSpace {
            dir: self.inner.dir.clone(),
        }
    }

    fn clear_no_space(&self) {
        let mut state = self.state_mut();
        if state.no_space {
            tracing::info!(dir = %self.inner.dir.display(), "space is available again; accepting messages");
            state.no_space = false;
        }
    }

    pub(super) fn poison(&self, operation: &str, path: &Path, error: io::Error) -> StorageError {
        let cause = format!("{operation} on {} failed: {error}", path.display());
        let mut state = self.state_mut();
        if state.poison.is_none() {
            tracing::error!(dir = %self.inner.dir.display(), %cause, "partition log poisoned; it refuses writes from now on");
            state.poison = Some(cause);
        }
        let cause = state.poison.clone().unwrap_or_default();
        StorageError::Poisoned {
            dir: self.inner.dir.clone(),
            cause,
        }
    }

    /// Durably reserves offsets for at least `messages` more messages plus
    /// a full reservation chunk. Await it after `OffsetsNotReserved`.
    pub async fn reserve_offsets(&self, messages: u64) -> Result<()> {
        let _frontier = self.inner.frontier_io.lock().await;
        self.renew_frontier_locked(messages).await
    }

    /// Waits until the log can take an append of `messages` messages:
    /// while more than `max_unwritten_bytes` wait to be written (producers
    /// outrunning the disk) it writes them first, so memory stays bounded
    /// and the producer is slowed to the disk's pace; then it makes sure
    /// the offsets are reserved (`ensure_reserved`).
    pub async fn ready_for_append(&self, messages: u64) -> Result<()> {
        if self.state().unwritten_bytes >= self.inner.options.max_unwritten_bytes {
            self.flush().await?;
        }
        self.ensure_reserved(messages).await
    }

    /// `append_at` once the log can take the record (`ready_for_append`),
    /// stamped with the time `now_us` gives after any wait: producers that
    /// outrun the disk or the offset reservation wait instead of failing.
    pub async fn append_at_when_ready(
        &self,
        buffer: Vec<u8>,
        range: std::ops::Range<usize>,
        now_us: impl FnOnce() -> u64,
    ) -> Result<super::AppendReceipt> {
        let header = buffer
            .get(range.clone())
            .and_then(|record| BatchHeader::read(record).ok());
        if let Some(header) = header {
            self.ready_for_append(u64::from(header.message_count))
                .await?;
        }
        self.append_at(buffer, range, now_us())
    }

    /// `append_shared` once the log can take the record, as
    /// `append_at_when_ready` waits.
    pub async fn append_shared_when_ready(
        &self,
        record: bytes::Bytes,
        now_us: impl FnOnce() -> u64,
    ) -> Result<super::AppendReceipt> {
        if let Ok(header) = BatchHeader::read(&record) {
            self.ready_for_append(u64::from(header.message_count))
                .await?;
        }
        self.append_shared(record, now_us())
    }

    /// Returns once an append of `messages` messages cannot fail with
    /// `OffsetsNotReserved`: at once while the reservation covers them,
    /// otherwise after reserving more. Nothing may await between this and
    /// the append.
    pub async fn ensure_reserved(&self, messages: u64) -> Result<()> {
        // Other appends may use up a fresh reservation while this one waits.
        loop {
            let short = {
                let state = self.state();
                state.next_offset.plus(messages) > state.frontier
            };
            if !short {
                return Ok(());
            }
            self.reserve_offsets(messages).await?;
        }
    }

    pub(super) fn schedule_frontier_renewal(&self, messages: u64) {
        {
            let mut state = self.state_mut();
            if state.frontier_renewing || state.poison.is_some() || state.deleted || state.closed {
                return;
            }
            state.frontier_renewing = true;
        }
        let log = self.clone();
        compio::runtime::spawn(async move {
            match log.reserve_offsets(messages).await {
                Ok(()) | Err(StorageError::Deleted { .. } | StorageError::Closed { .. }) => {}
                Err(error) => {
                    tracing::warn!(dir = %log.dir().display(), %error, "offset reservation failed")
                }
            }
            log.state_mut().frontier_renewing = false;
        })
        .detach();
    }

    pub(super) async fn renew_frontier_locked(&self, messages: u64) -> Result<()> {
        self.check_writable()?;
        let reservation = self.inner.options.offset_reservation;
        let (current, wanted) = {
            let state = self.state();
            (
                state.frontier,
                state.next_offset.plus(messages).plus(reservation),
            )
        };
        if current >= wanted.saturating_minus(reservation / FRONTIER_RENEWAL_DIVISOR) {
            return Ok(());
        }
        let dir = &self.inner.dir;
        if let Err(error) = frontier::store(&self.inner.storage, dir, wanted).await {
            let io = io::Error::other(error.to_string());
            return Err(self.poison("offset frontier write", &frontier::frontier_path(dir), io));
        }
        let mut state = self.state_mut();
        state.frontier = state.frontier.max(wanted);
        Ok(())
    }
}
