//! The read path: polls by offset (from the cache when resident, otherwise
//! from segment files through the sparse index and a forward scan) and
//! lookups by timestamp.
//!
//! Reads never take the `io` lock: bytes below a segment's recorded size are
//! immutable, and a segment file handle stays valid even if retention
//! removes the file meanwhile. A record read from disk is checked (layout
//! always, checksums when `validate_checksum_on_read`; frames a caller
//! authenticates itself up to the batch checksum) and a failure is a
//! `Corrupt` error naming file and position: corrupt bytes are never served.

use bytes::Bytes;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use protocol::batch::{BATCH_HEADER_SIZE, BatchHeader, Verify, slice_record, validate_record};

use super::index::floor_entry;
use super::{PartitionLog, PolledRecord};
use crate::error::{Result, StorageError, io_error};
use crate::offset::Offset;
use crate::seam::{Storage, StorageFile};

/// Smallest disk read: records are parsed out of reads this large.
const READ_AHEAD_BYTES: u64 = 1 << 20;

/// The running selection of a read: cursor, limits and chosen records.
struct Selection {
    cursor: Offset,
    remaining: u32,
    max_bytes: u64,
    used_bytes: u64,
    records: Vec<PolledRecord>,
}

impl Selection {
    fn is_full(&self) -> bool {
        self.remaining == 0 || self.used_bytes >= self.max_bytes
    }

    /// Offers the record at `bytes[start..start + len]`; returns false once
    /// the selection is full. A record that would exceed `max_bytes` is
    /// refused unless nothing was selected yet (a read always progresses).
    fn offer(&mut self, bytes: &Bytes, start: usize, len: usize) -> bool {
        let record = &bytes[start..start + len];
        let Some(slice) = slice_record(record, self.cursor.0, self.remaining) else {
            return true;
        };
        let first_offset = Offset(slice.first_offset);
        let size = (BATCH_HEADER_SIZE + slice.frames.len()) as u64;
        if !self.records.is_empty() && self.used_bytes + size > self.max_bytes {
            self.remaining = 0;
            return false;
        }
        assert!(
            first_offset >= self.cursor,
            "a slice never starts before the cursor"
        );
        self.used_bytes += size;
        self.remaining -= slice.count;
        self.cursor = first_offset.plus(u64::from(slice.count));
        let frames = start + slice.frames.start..start + slice.frames.end;
        let record = PolledRecord {
            header: slice.header,
            bytes: bytes.clone(),
            frames,
            first_offset,
            count: slice.count,
        };
        self.records.push(record);
        !self.is_full()
    }
}

/// Where the next part of a read comes from.
enum Source<F> {
    Cache,
    Segment {
        file: Rc<F>,
        path: PathBuf,
        position: u64,
        /// What the first read should cover beyond the read-ahead.
        first_read_bytes: u64,
        end: u64,
        last_offset: Offset,
    },
    Nothing,
}

impl<S: Storage> PartitionLog<S> {
    /// Reads messages with offsets `>= from_offset`: at most `max_messages`
    /// and about `max_bytes` (at least one record). An offset below the
    /// oldest retained message starts at the oldest one.
    pub async fn read(
        &self,
        from_offset: Offset,
        max_messages: u32,
        max_bytes: u64,
    ) -> Result<Vec<PolledRecord>> {
        self.read_authenticated(from_offset, max_messages, max_bytes, |_| false)
            .await
    }

    /// `read`, for a caller that authenticates the frames of the records
    /// `authenticates` names when it opens them (sealed frames, opened with
    /// their key): with `validate_checksum_on_read` such a record is checked
    /// up to its batch checksum (`Verify::BatchChecksum`), and its frames are
    /// not rehashed here.
    pub async fn read_authenticated(
        &self,
        from_offset: Offset,
        max_messages: u32,
        max_bytes: u64,
        authenticates: impl Fn(&BatchHeader) -> bool,
    ) -> Result<Vec<PolledRecord>> {
        let mut selection = Selection {
            cursor: from_offset,
            remaining: max_messages,
            max_bytes,
            used_bytes: 0,
            records: Vec::new(),
        };
        while !selection.is_full() {
            match self.next_source(selection.cursor) {
                Source::Nothing => break,
                Source::Cache => {
                    self.read_cache(&mut selection);
                    break;
                }
                Source::Segment {
                    file,
                    path,
                    position,
                    first_read_bytes,
                    end,
                    last_offset,
                } => {
                    let span = Span {
                        position,
                        first_read_bytes,
                        end,
                    };
                    self.read_segment(&*file, &path, span, &mut selection, &authenticates)
                        .await?;
                    selection.cursor = selection.cursor.max(last_offset.next());
                }
            }
        }
        Ok(selection.records)
    }

    /// The last `count` messages (the "last" polling strategy).
    pub async fn read_last(&self, count: u32, max_bytes: u64) -> Result<Vec<PolledRecord>> {
        let Some(last) = self.last_offset() else {
            return Ok(Vec::new());
        };
        let from = last.saturating_minus(u64::from(count).saturating_sub(1));
        self.read(from, count, max_bytes).await
    }

    fn next_source(&self, cursor: Offset) -> Source<S::File> {
        let state = self.state();
        if cursor >= state.next_offset {
            return Source::Nothing;
        }
        if state
            .cache
            .front()
            .is_some_and(|front| cursor >= front.base_offset)
        {
            return Source::Cache;
        }
        let segment = state
            .segments
            .iter()
            .find(|s| s.last_offset.is_some_and(|last| last >= cursor));
        match segment {
            Some(segment) => {
                let entry = floor_entry(&segment.index, cursor, |e| e.offset);
                let position = entry.map_or(0, |e| e.position);
                let next = segment.index.partition_point(|e| e.position <= position);
                let next_position = segment
                    .index
                    .get(next)
                    .map_or(segment.size_bytes, |e| e.position);
                // Records up to the largest seen, but not past the next
                // index entry (which starts a record): a poll of a small
                // record does not read a large flush's worth.
                let record_max = self.inner.record_max_bytes.get();
                Source::Segment {
                    file: Rc::clone(&segment.log),
                    path: segment.log_path.clone(),
                    position,
                    first_read_bytes: record_max.min(next_position.saturating_sub(position)),
                    end: segment.size_bytes,
                    last_offset: segment.last_offset.unwrap_or(cursor),
                }
            }
            None if state.cache.is_empty() => Source::Nothing,
            None => Source::Cache,
        }
    }

    fn read_cache(&self, selection: &mut Selection) {
        let state = self.state();
        let from = selection.cursor;
        for batch in state.cache.iter().filter(|b| b.last_offset >= from) {
            if !selection.offer(&batch.bytes, 0, batch.bytes.len()) {
                break;
            }
        }
    }

    async fn read_segment(
        &self,
        file: &S::File,
        path: &Path,
        span: Span,
        selection: &mut Selection,
        authenticates: &impl Fn(&BatchHeader) -> bool,
    ) -> Result<()> {
        let validate = self.inner.options.validate_checksum_on_read;
        let record_max = scan_records(file, path, span, |bytes, start, header, at| {
            if Offset(header.last_offset()) < selection.cursor {
                return Ok(false);
            }
            let verify = match (validate, authenticates(header)) {
                (false, _) => Verify::Layout,
                (true, false) => Verify::Checksums,
                (true, true) => Verify::BatchChecksum,
            };
            let len = header.batch_length as usize;
            validate_record(&bytes[start..start + len], verify).map_err(|error| {
                corrupt(path, at, format!("record fails verification: {error}"))
            })?;
            Ok(!selection.offer(bytes, start, len))
        })
        .await?;
        self.note_record_len(record_max);
        Ok(())
    }

    /// Records that a record of `len` bytes exists (see `record_max_bytes`).
    pub(super) fn note_record_len(&self, len: u64) {
        let max = &self.inner.record_max_bytes;
        max.set(max.get().max(len));
    }

    /// The offset of the first batch whose base timestamp is `>= timestamp_us`.
    pub async fn find_offset_by_timestamp(&self, timestamp_us: u64) -> Result<Option<Offset>> {
        let on_disk = {
            let state = self.state();
            let segment = state
                .segments
                .iter()
                .find(|s| s.last_offset.is_some() && s.max_timestamp >= timestamp_us);
            segment.map(|s| {
                let entry = timestamp_us
                    .checked_sub(1)
                    .and_then(|below| floor_entry(&s.index, below, |e| e.timestamp));
                (
                    Rc::clone(&s.log),
                    s.log_path.clone(),
                    entry.map_or(0, |e| e.position),
                    s.size_bytes,
                )
            })
        };
        if let Some((file, path, position, end)) = on_disk {
            let mut found = None;
            let span = Span {
                position,
                first_read_bytes: READ_AHEAD_BYTES,
                end,
            };
            scan_records(&*file, &path, span, |_, _, header, _| {
                if header.base_timestamp >= timestamp_us {
                    found = Some(Offset(header.base_offset));
                }
                Ok(found.is_some())
            })
            .await?;
            return Ok(found);
        }
        let state = self.state();
        Ok(state
            .cache
            .iter()
            .find(|b| !b.written && b.base_timestamp >= timestamp_us)
            .map(|b| b.base_offset))
    }
}

fn corrupt(path: &Path, position: u64, reason: String) -> StorageError {
    StorageError::Corrupt {
        file: path.to_path_buf(),
        position,
        reason,
    }
}

/// Where a scan reads: `file[position..end]`, the first read covering at
/// least `first_read_bytes`.
struct Span {
    position: u64,
    first_read_bytes: u64,
    end: u64,
}

/// Walks the records of `file[span.position..span.end]` in order, reading
/// ahead in large chunks. `visit(chunk, start, header, file position)` sees
/// each record whole at `chunk[start..start + batch_length]` and returns true
/// to stop. Any record boundary that does not add up is `Corrupt`. Returns
/// the largest record length seen.
///
/// A read covers at least the read-ahead, the caller's first read size and
/// the largest record this scan has seen, so a record larger than the
/// read-ahead is rarely cut at a read's end and read again.
async fn scan_records<F: StorageFile>(
    file: &F,
    path: &Path,
    span: Span,
    mut visit: impl FnMut(&Bytes, usize, &BatchHeader, u64) -> Result<bool>,
) -> Result<u64> {
    let Span {
        mut position, end, ..
    } = span;
    let mut want = span.first_read_bytes.max(READ_AHEAD_BYTES);
    let mut record_max = 0u64;
    while position < end {
        let len = want.min(end - position);
        let bytes = file
            .read_exact_at(len as usize, position)
            .await
            .map_err(io_error("segment read", path))?;
        let chunk = Bytes::from(bytes);
        let mut at = 0usize;
        while chunk.len() - at >= BATCH_HEADER_SIZE {
            let record_position = position + at as u64;
            let header = BatchHeader::read(&chunk[at..])
                .map_err(|e| corrupt(path, record_position, e.to_string()))?;
            let record_len = header.batch_length;
            if record_len < BATCH_HEADER_SIZE as u64
                || header.message_count == 0
                || record_position + record_len > end
            {
                return Err(corrupt(
                    path,
                    record_position,
                    format!("impossible batch_length {record_len}"),
                ));
            }
            record_max = record_max.max(record_len);
            if at as u64 + record_len > chunk.len() as u64 {
                break;
            }
            if visit(&chunk, at, &header, record_position)? {
                return Ok(record_max);
            }
            at += record_len as usize;
        }
        if at == 0 && position + (chunk.len() as u64) >= end {
            return Err(corrupt(
                path,
                position,
                "record runs past the end of the segment".to_owned(),
            ));
        }
        // A record cut at the end of this chunk starts the next read, which
        // holds it whole (`record_max` covers it when its header was read).
        want = record_max.max(READ_AHEAD_BYTES);
        position += at as u64;
    }
    Ok(record_max)
}
