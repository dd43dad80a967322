//! The in-memory state of one partition log: its segments, the cache of
//! recent batches and the offset counters. Pure bookkeeping, no I/O; the
//! write, read and recovery paths borrow it briefly and never across an
//! `.await`.
//!
//! Cache invariant: `cache` holds consecutive batches in offset order; the
//! written ones form a prefix and the `unwritten_batches` newest ones are
//! not yet in any segment file. Every offset below the first unwritten
//! batch (or below `next_offset` when none) is in a segment file.

use bytes::Bytes;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::rc::Rc;

use super::direct::DirectWriter;
use super::index::{IndexEntry, push_sparse};
use crate::offset::Offset;
use crate::seam::MAX_IOVECS;

/// One segment: a `.log` file of batch records and its sparse `.index`.
#[derive(Debug)]
pub struct Segment<F> {
    pub start_offset: Offset,
    pub first_offset: Option<Offset>,
    pub last_offset: Option<Offset>,
    /// Bytes written to the `.log` file (the next write position).
    pub size_bytes: u64,
    pub index_size_bytes: u64,
    /// Encoded index entries not yet written to the `.index` file.
    pub pending_index: Vec<u8>,
    pub messages: u64,
    /// Base timestamp of the newest batch (0 when empty).
    pub max_timestamp: u64,
    pub index: Vec<IndexEntry>,
    pub sealed: bool,
    /// Bytes were written since the last fsync of the `.log` file.
    pub unsynced: bool,
    /// The `.log` bytes below this had their write-back started
    /// (`PartitionLog::write_behind`).
    pub written_back: u64,
    /// Bytes written through the page cache above `written_back` (direct
    /// writes leave none).
    pub dirty_bytes: u64,
    /// The page cache of the `.log` bytes below this was dropped
    /// (`PartitionLog::write_behind`, partitions with a shared cache).
    pub uncached_below: u64,
    /// Reads, and writes unless `direct` is set.
    pub log: Rc<F>,
    /// The direct-I/O write handle of the active segment, if enabled.
    pub direct: Option<DirectWriter<F>>,
    pub index_file: Rc<F>,
    pub log_path: PathBuf,
}

impl<F> Segment<F> {
    pub fn new(start_offset: Offset, log: Rc<F>, index_file: Rc<F>, log_path: PathBuf) -> Self {
        Self {
            start_offset,
            first_offset: None,
            last_offset: None,
            size_bytes: 0,
            index_size_bytes: 0,
            pending_index: Vec::new(),
            messages: 0,
            max_timestamp: 0,
            index: Vec::new(),
            sealed: false,
            unsynced: false,
            written_back: 0,
            dirty_bytes: 0,
            uncached_below: 0,
            log,
            direct: None,
            index_file,
            log_path,
        }
    }
}

/// A stamped batch record held in memory.
#[derive(Debug, Clone)]
pub struct CachedBatch {
    pub base_offset: Offset,
    pub last_offset: Offset,
    pub base_timestamp: u64,
    pub bytes: Bytes,
    pub written: bool,
}

/// The next run of unwritten batches to write with one vectored write.
#[derive(Debug)]
pub struct FlushChunk {
    pub position: u64,
    pub buffers: Vec<Bytes>,
    pub first: IndexEntry,
    pub last_offset: Offset,
    pub last_timestamp: u64,
    pub messages: u64,
    pub size_bytes: u64,
    /// The chunk reaches the segment size: seal the segment after it.
    pub rolls: bool,
}

#[derive(Debug)]
pub struct LogState<F> {
    pub segments: Vec<Segment<F>>,
    pub cache: VecDeque<CachedBatch>,
    pub unwritten_batches: usize,
    pub unwritten_messages: u64,
    pub unwritten_bytes: u64,
    pub cached_written_bytes: u64,
    pub next_offset: Offset,
    pub last_offset: Option<Offset>,
    pub last_timestamp: u64,
    /// Every offset below it is durable (written and fsynced).
    pub durable_end: Offset,
    /// Offsets below it are durably reserved (see `frontier`).
    pub frontier: Offset,
    pub frontier_renewing: bool,
    pub flush_scheduled: bool,
    /// A write found the disk full: appends are refused, and every refused
    /// append retries the flush, until a flush succeeds.
    pub no_space: bool,
    pub poison: Option<String>,
    pub deleted: bool,
    pub closed: bool,
    /// Incremented by every purge.
    pub generation: u64,
    /// Directory entries were created or removed since the last dir sync.
    pub dir_dirty: bool,
    /// The shard's budget `cached_written_bytes` is charged to, if any.
    pub shared_cache: Option<super::SharedCache>,
}

impl<F> Drop for LogState<F> {
    fn drop(&mut self) {
        if let Some(shared) = &self.shared_cache {
            shared.release(self.cached_written_bytes);
        }
    }
}

impl<F> LogState<F> {
    pub fn new(
        segments: Vec<Segment<F>>,
        next_offset: Offset,
        last_offset: Option<Offset>,
        last_timestamp: u64,
    ) -> Self {
        assert!(!segments.is_empty(), "a log always has an active segment");
        Self {
            segments,
            cache: VecDeque::new(),
            unwritten_batches: 0,
            unwritten_messages: 0,
            unwritten_bytes: 0,
            cached_written_bytes: 0,
            next_offset,
            last_offset,
            last_timestamp,
            durable_end: next_offset,
            frontier: next_offset,
            frontier_renewing: false,
            flush_scheduled: false,
            no_space: false,
            poison: None,
            deleted: false,
            closed: false,
            generation: 0,
            dir_dirty: false,
            shared_cache: None,
        }
    }

    pub fn active(&self) -> &Segment<F> {
        self.segments
            .last()
            .expect("a log always has an active segment")
    }

    pub fn active_mut(&mut self) -> &mut Segment<F> {
        self.segments
            .last_mut()
            .expect("a log always has an active segment")
    }

    /// The offset order every transition keeps: durable ≤ written ≤ next
    /// ≤ frontier (an offset is fsynced only once written, written only
    /// once appended, appended only once durably reserved), the newest
    /// offset is below the next one, and the unwritten counters agree with
    /// the cache. Called after append, flush, sync, roll and recovery.
    pub fn check_offsets(&self) {
        let written_end = self.written_end();
        assert!(self.durable_end <= written_end, "durable <= written");
        assert!(written_end <= self.next_offset, "written <= next offset");
        assert!(self.next_offset <= self.frontier, "next offset <= frontier");
        assert!(
            self.last_offset.is_none_or(|last| last < self.next_offset),
            "the newest offset is below the next one"
        );
        assert!(
            self.unwritten_batches <= self.cache.len(),
            "unwritten in cache"
        );
        assert_eq!(
            self.unwritten_batches == 0,
            self.unwritten_bytes == 0,
            "unwritten batches and bytes agree"
        );
        assert!(!self.active().sealed, "the active segment is never sealed");
    }

    /// Every appended offset below this is in a segment file.
    pub fn written_end(&self) -> Offset {
        self.first_unwritten()
            .map_or(self.next_offset, |batch| batch.base_offset)
    }

    fn first_unwritten(&self) -> Option<&CachedBatch> {
        self.cache.get(self.cache.len() - self.unwritten_batches)
    }

    /// Adds a freshly stamped batch to the cache as unwritten.
    pub fn push_batch(&mut self, batch: CachedBatch, messages: u64) {
        assert!(
            batch.base_offset >= self.next_offset,
            "offsets must never go backwards"
        );
        assert!(
            batch.base_timestamp >= self.last_timestamp,
            "timestamps must never go backwards"
        );
        self.unwritten_batches += 1;
        self.unwritten_messages += messages;
        self.unwritten_bytes += batch.bytes.len() as u64;
        self.next_offset = batch.last_offset.next();
        self.last_offset = Some(batch.last_offset);
        self.last_timestamp = batch.base_timestamp;
        self.cache.push_back(batch);
    }

    /// Plans the next vectored write into the active segment: up to
    /// `MAX_IOVECS` unwritten batches, stopping after the batch that makes
    /// the segment reach `segment_size_bytes` (the soft limit).
    pub fn plan_flush_chunk(&self, segment_size_bytes: u64) -> Option<FlushChunk> {
        let first = self.first_unwritten()?;
        let position = self.active().size_bytes;
        let mut chunk = FlushChunk {
            position,
            buffers: Vec::new(),
            first: IndexEntry {
                offset: first.base_offset,
                timestamp: first.base_timestamp,
                position,
            },
            last_offset: first.last_offset,
            last_timestamp: first.base_timestamp,
            messages: 0,
            size_bytes: 0,
            rolls: false,
        };
        for batch in self
            .cache
            .iter()
            .skip(self.cache.len() - self.unwritten_batches)
            .take(MAX_IOVECS)
        {
            chunk.buffers.push(batch.bytes.clone());
            chunk.last_offset = batch.last_offset;
            chunk.last_timestamp = batch.base_timestamp;
            chunk.messages += batch.last_offset.messages_since(batch.base_offset) + 1;
            chunk.size_bytes += batch.bytes.len() as u64;
            if position + chunk.size_bytes >= segment_size_bytes {
                chunk.rolls = true;
                break;
            }
        }
        Some(chunk)
    }

    /// Records that `chunk` is now in the active segment's files. With a
    /// `region` (the chunk's records, consecutive, as written from the
    /// shard's arena) the cache keeps slices of it instead of the records.
    pub fn apply_flushed_chunk(
        &mut self,
        chunk: &FlushChunk,
        region: Option<&Bytes>,
        cache_limit_bytes: u64,
    ) {
        let count = chunk.buffers.len();
        assert!(
            count > 0 && count <= self.unwritten_batches,
            "flushed more batches than were pending"
        );
        assert!(
            region.is_none_or(|r| r.len() as u64 == chunk.size_bytes),
            "the region holds exactly the chunk"
        );
        let start = self.cache.len() - self.unwritten_batches;
        let mut at = 0;
        for batch in self.cache.range_mut(start..start + count) {
            batch.written = true;
            if let Some(region) = region {
                let copy = region.slice(at..at + batch.bytes.len());
                debug_assert_eq!(copy, batch.bytes, "the region holds the records");
                at += batch.bytes.len();
                batch.bytes = copy;
            }
        }
        self.unwritten_batches -= count;
        self.unwritten_messages -= chunk.messages;
        self.unwritten_bytes -= chunk.size_bytes;
        self.cached_written_bytes += chunk.size_bytes;
        if let Some(shared) = &self.shared_cache {
            shared.charge(chunk.size_bytes);
        }
        let segment = self.active_mut();
        assert_eq!(
            segment.size_bytes, chunk.position,
            "a flush must append at the segment end"
        );
        segment.first_offset.get_or_insert(chunk.first.offset);
        segment.last_offset = Some(chunk.last_offset);
        segment.size_bytes += chunk.size_bytes;
        segment.messages += chunk.messages;
        segment.max_timestamp = chunk.last_timestamp;
        segment.unsynced = true;
        segment
            .pending_index
            .extend_from_slice(&chunk.first.encode());
        push_sparse(&mut segment.index, chunk.first);
        self.evict_cache(cache_limit_bytes);
    }

    /// Drops the oldest written batches while the written part of the cache
    /// is above its budget, or above the shared budget's floor while the
    /// shard's total is over that budget; unwritten batches are never
    /// dropped.
    pub fn evict_cache(&mut self, cache_limit_bytes: u64) {
        loop {
            let shared_over = self
                .shared_cache
                .as_ref()
                .is_some_and(|s| s.over() && self.cached_written_bytes > s.floor());
            if self.cached_written_bytes <= cache_limit_bytes && !shared_over {
                break;
            }
            match self.cache.front() {
                Some(batch) if batch.written => {
                    let len = batch.bytes.len() as u64;
                    self.uncache_written(len);
                    self.cache.pop_front();
                }
                _ => break,
            }
        }
    }

    pub fn uncache_written(&mut self, len: u64) {
        self.cached_written_bytes -= len;
        if let Some(shared) = &self.shared_cache {
            shared.release(len);
        }
    }

    /// Drops every cached batch whose last offset is at or below `offset`
    /// (they were deleted with their segments).
    pub fn drop_cached_up_to(&mut self, offset: Offset) {
        while let Some(batch) = self.cache.front() {
            if batch.last_offset > offset || !batch.written {
                break;
            }
            let len = batch.bytes.len() as u64;
            self.uncache_written(len);
            self.cache.pop_front();
        }
    }

    pub fn messages_count(&self) -> u64 {
        self.segments.iter().map(|s| s.messages).sum::<u64>() + self.unwritten_messages
    }

    pub fn size_bytes(&self) -> u64 {
        self.segments.iter().map(|s| s.size_bytes).sum::<u64>() + self.unwritten_bytes
    }

    pub fn first_offset(&self) -> Option<Offset> {
        let on_disk = self.segments.iter().find_map(|s| s.first_offset);
        on_disk.or_else(|| self.cache.front().map(|batch| batch.base_offset))
    }
}
