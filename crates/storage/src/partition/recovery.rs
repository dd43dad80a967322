//! Recovery: rebuilds a partition log from its directory at open.
//!
//! Segments are scanned in offset order and every record is verified
//! (layout, checksums, strictly increasing offsets). A torn tail, meaning an
//! incomplete record, or an invalid record with nothing but zeros after it,
//! is truncated to the last whole record and reported. A bad record with
//! data after it is corruption: open fails with `Corrupt` naming the file
//! and byte position, so the partition is not served and nothing after the
//! damage is silently dropped. Index entries are checked against the log and
//! a missing, damaged or short index is rebuilt. The next offset is
//! `max(log end, durable offset frontier)`, and a fresh reservation is
//! persisted before the log accepts appends.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use protocol::batch::{BATCH_HEADER_SIZE, BatchHeader, Verify, validate_record};

use super::direct::{self, DIRECT_IO_ALIGN};
use super::index::{
    INDEX_ENTRY_SIZE, INDEX_EXTENSION, IndexEntry, LOG_EXTENSION, MEMORY_INDEX_GAP_BYTES,
    parse_log_file_name, push_sparse, segment_path,
};
use super::state::{LogState, Segment};
use super::{LogOptions, PartitionLog, frontier};
use crate::error::{Result, StorageError, io_error};
use crate::offset::Offset;
use crate::seam::{Storage, StorageFile, read_whole};

/// Largest record accepted (the message-bus frame cap).
pub const MAX_RECORD_SIZE_BYTES: u64 = 64 << 20;
/// Recovery reads the log in chunks of this size.
const RECOVERY_READ_BYTES: u64 = 4 << 20;
/// An index whose last entry is further than this from the log end is
/// considered short and gets entries appended.
const INDEX_REBUILD_TAIL_BYTES: u64 = 4 << 20;

/// What recovery found and changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    pub segments: usize,
    pub messages: u64,
    pub next_offset: Offset,
    /// Offsets never to be used: reserved before the restart, not in the log.
    pub skipped_offsets: Range<Offset>,
    pub truncated: Vec<TruncatedTail>,
    pub indexes_rebuilt: Vec<PathBuf>,
}

/// A torn tail cut off a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TruncatedTail {
    pub file: PathBuf,
    pub position: u64,
    pub dropped_bytes: u64,
    pub reason: String,
}

/// The verified facts of one scanned segment.
#[derive(Debug, Default)]
struct ScannedSegment {
    valid_end: u64,
    torn_reason: Option<String>,
    first_offset: Option<Offset>,
    last_offset: Option<Offset>,
    messages: u64,
    max_timestamp: u64,
    /// Leading entries of the stored index that match the log.
    valid_index_entries: usize,
    stored_index: Vec<IndexEntry>,
    memory_index: Vec<IndexEntry>,
    /// Records after the last valid stored entry, candidates for rebuild.
    unindexed: Vec<IndexEntry>,
    /// The scan stopped at the first record at or above this offset
    /// (`PartitionLog::truncate_tail`), not at a torn tail.
    cut_at: Option<Offset>,
    cut: bool,
}

impl ScannedSegment {
    /// Accounts one verified record, merge-walking the stored index: an
    /// entry must describe exactly the record at its position.
    fn visit(&mut self, position: u64, header: &BatchHeader) {
        let entry = IndexEntry {
            offset: Offset(header.base_offset),
            timestamp: header.base_timestamp,
            position,
        };
        match self.stored_index.get(self.valid_index_entries) {
            Some(stored) if *stored == entry => {
                self.valid_index_entries += 1;
                self.unindexed.clear();
            }
            Some(stored) if stored.position <= position => {
                self.stored_index.truncate(self.valid_index_entries);
                self.note_unindexed(entry);
            }
            _ => self.note_unindexed(entry),
        }
        push_sparse(&mut self.memory_index, entry);
        self.first_offset.get_or_insert(entry.offset);
        self.last_offset = Some(Offset(header.last_offset()));
        self.messages += u64::from(header.message_count);
        self.max_timestamp = header.base_timestamp;
        self.valid_end = position + header.batch_length;
    }
}

impl ScannedSegment {
    /// Remembers a record not covered by the stored index, sparsely.
    fn note_unindexed(&mut self, entry: IndexEntry) {
        let valid = self
            .valid_index_entries
            .checked_sub(1)
            .map(|at| &self.stored_index[at]);
        let reference = self.unindexed.last().or(valid).map(|e| e.position);
        if reference.is_none_or(|at| entry.position - at >= MEMORY_INDEX_GAP_BYTES) {
            self.unindexed.push(entry);
        }
    }
}

pub(super) async fn open<S: Storage>(
    storage: S,
    dir: &Path,
    options: LogOptions,
) -> Result<(PartitionLog<S>, RecoveryReport)> {
    storage
        .create_dir_all(dir)
        .await
        .map_err(io_error("create partition directory", dir))?;
    let names = storage
        .read_dir(dir)
        .await
        .map_err(io_error("list partition directory", dir))?;
    let mut starts: Vec<Offset> = names
        .iter()
        .filter_map(|name| parse_log_file_name(name))
        .collect();
    starts.sort_unstable();
    let mut report = RecoveryReport::default();
    let mut segments = Vec::with_capacity(starts.len());
    let (mut last_offset, mut last_timestamp) = (None, 0);
    for start in starts {
        let segment = recover_segment(&storage, dir, start, last_offset, &mut report, None).await?;
        if segment.last_offset.is_some() {
            last_offset = segment.last_offset;
            last_timestamp = segment.max_timestamp;
        }
        report.messages += segment.messages;
        segments.push(segment);
    }
    if options.follow_log_end {
        let kept = contiguous_prefix(&segments);
        if kept < segments.len() {
            for segment in segments.drain(kept..) {
                tracing::warn!(
                    dir = %dir.display(),
                    start = segment.start_offset.0,
                    "a segment starts above the end of the one before it (a crash took that \
                     one's unsynced tail): it and the later ones go, and the group refills them"
                );
                for extension in [LOG_EXTENSION, INDEX_EXTENSION] {
                    let path = segment_path(dir, segment.start_offset, extension);
                    storage
                        .remove_file(&path)
                        .await
                        .map_err(io_error("remove a segment past a gap", &path))?;
                }
            }
            let newest = segments
                .iter()
                .rev()
                .find_map(|s| s.last_offset.map(|last| (last, s.max_timestamp)));
            last_offset = newest.map(|(last, _)| last);
            last_timestamp = newest.map_or(0, |(_, timestamp)| timestamp);
            report.messages = segments.iter().map(|s| s.messages).sum();
        }
    }
    let log_end = last_offset.map_or(Offset::ZERO, Offset::next);
    let frontier = frontier::load(&storage, dir).await?;
    let last_start = segments
        .last()
        .map_or(Offset::ZERO, |s: &Segment<S::File>| s.start_offset);
    let next_offset = if options.follow_log_end {
        log_end.max(last_start)
    } else {
        log_end.max(frontier).max(last_start)
    };
    let needs_new_segment = segments
        .last()
        .is_none_or(|s| s.size_bytes >= options.segment_size_bytes);
    if needs_new_segment {
        segments.push(create_segment(&storage, dir, next_offset).await?);
    }
    let active = segments.len() - 1;
    segments
        .iter_mut()
        .enumerate()
        .for_each(|(i, s)| s.sealed = i < active);
    if options.direct_io
        && let Some(active) = segments.last_mut()
    {
        active.direct = direct::open_writer(&storage, active, options.direct_sync).await?;
    }
    make_durable(&storage, dir, &segments).await?;
    let reserved = next_offset.plus(options.offset_reservation);
    frontier::store(&storage, dir, reserved).await?;
    report.segments = segments.len();
    report.next_offset = next_offset;
    report.skipped_offsets = log_end..next_offset;
    let mut state = LogState::new(segments, next_offset, last_offset, last_timestamp);
    state.frontier = reserved;
    // Postcondition: no offset below the old frontier is minted again.
    assert!(
        (options.follow_log_end || next_offset >= frontier) && next_offset >= log_end,
        "no offset reused"
    );
    state.check_offsets();
    let log = PartitionLog::from_state(storage, dir.to_path_buf(), options, state);
    tracing::info!(dir = %dir.display(), next_offset = next_offset.0, messages = report.messages, "partition log recovered");
    Ok((log, report))
}

/// How many of `segments` (oldest first) continue one another: each
/// starts where the one before it ends. A log that follows a replicated
/// group only ever grows at its end (a purge or a refill past retention
/// restarts it with one segment), so a segment starting above its
/// predecessor's end means the predecessor lost its unsynced tail in a
/// crash: what lies past that gap cannot be served as this log.
fn contiguous_prefix<F>(segments: &[Segment<F>]) -> usize {
    let mut end = None;
    for (i, segment) in segments.iter().enumerate() {
        if end.is_some_and(|end| segment.start_offset > end) {
            return i;
        }
        end = Some(
            segment
                .last_offset
                .map_or(segment.start_offset, Offset::next),
        );
    }
    segments.len()
}

async fn create_segment<S: Storage>(
    storage: &S,
    dir: &Path,
    start: Offset,
) -> Result<Segment<S::File>> {
    let log_path = segment_path(dir, start, LOG_EXTENSION);
    let index_path = segment_path(dir, start, INDEX_EXTENSION);
    let log = storage
        .create(&log_path)
        .await
        .map_err(io_error("create segment", &log_path))?;
    let index = storage
        .create(&index_path)
        .await
        .map_err(io_error("create index", &index_path))?;
    Ok(Segment::new(start, Rc::new(log), Rc::new(index), log_path))
}

/// Fsyncs every segment and the directory, so the recovered state (which
/// polls may serve right away) is durable before the log accepts writes.
async fn make_durable<S: Storage>(
    storage: &S,
    dir: &Path,
    segments: &[Segment<S::File>],
) -> Result<()> {
    for segment in segments {
        segment
            .log
            .sync_data()
            .await
            .map_err(io_error("fsync segment", &segment.log_path))?;
        let index_path = segment.log_path.with_extension(INDEX_EXTENSION);
        segment
            .index_file
            .sync_data()
            .await
            .map_err(io_error("fsync index", &index_path))?;
    }
    storage
        .sync_dir(dir)
        .await
        .map_err(io_error("fsync partition directory", dir))
}

/// Recovers one segment's files; with `cut_at`, everything from the first
/// record at or above that offset is cut off as well (not reported: it
/// was asked for).
pub(super) async fn recover_segment<S: Storage>(
    storage: &S,
    dir: &Path,
    start: Offset,
    previous_last: Option<Offset>,
    report: &mut RecoveryReport,
    cut_at: Option<Offset>,
) -> Result<Segment<S::File>> {
    let log_path = segment_path(dir, start, LOG_EXTENSION);
    if previous_last.is_some_and(|last| start <= last) {
        let reason = format!("segment starts at {start}, inside the previous segment");
        return Err(StorageError::Corrupt {
            file: log_path,
            position: 0,
            reason,
        });
    }
    let log = storage
        .open(&log_path)
        .await
        .map_err(io_error("open segment", &log_path))?;
    let len = log
        .size_bytes()
        .await
        .map_err(io_error("stat segment", &log_path))?;
    let index_path = segment_path(dir, start, INDEX_EXTENSION);
    let stored = read_whole(storage, &index_path)
        .await
        .map_err(io_error("read index", &index_path))?;
    let mut scan = ScannedSegment {
        stored_index: IndexEntry::decode_all(stored.as_deref().unwrap_or(&[])),
        cut_at,
        ..Default::default()
    };
    scan_segment(&log, &log_path, len, start, &mut scan).await?;
    if scan.cut {
        tracing::debug!(file = %log_path.display(), position = scan.valid_end, dropped = len - scan.valid_end, "cutting the log's tail");
        log.set_len(scan.valid_end)
            .await
            .map_err(io_error("cut the log's tail", &log_path))?;
    } else if is_direct_padding(&log, &log_path, scan.valid_end, len).await? {
        tracing::debug!(file = %log_path.display(), bytes = len - scan.valid_end, "dropping direct-I/O padding");
        log.set_len(scan.valid_end)
            .await
            .map_err(io_error("truncate padding", &log_path))?;
    } else if scan.valid_end < len {
        let reason = scan.torn_reason.clone().unwrap_or_default();
        tracing::warn!(file = %log_path.display(), position = scan.valid_end, dropped = len - scan.valid_end, %reason, "truncating torn tail");
        log.set_len(scan.valid_end)
            .await
            .map_err(io_error("truncate torn tail", &log_path))?;
        report.truncated.push(TruncatedTail {
            file: log_path.clone(),
            position: scan.valid_end,
            dropped_bytes: len - scan.valid_end,
            reason,
        });
    }
    let index_file = recover_index(storage, &index_path, stored.as_deref(), &scan, report).await?;
    let index_size_bytes = index_file
        .size_bytes()
        .await
        .map_err(io_error("stat index", &index_path))?;
    let mut segment = Segment::new(start, Rc::new(log), Rc::new(index_file), log_path);
    segment.first_offset = scan.first_offset;
    segment.last_offset = scan.last_offset;
    segment.size_bytes = scan.valid_end;
    segment.index_size_bytes = index_size_bytes;
    segment.messages = scan.messages;
    segment.max_timestamp = scan.max_timestamp;
    segment.index = scan.memory_index;
    Ok(segment)
}

/// Keeps the stored index when every entry matches the log and it covers
/// the tail well enough; otherwise rebuilds it.
async fn recover_index<S: Storage>(
    storage: &S,
    index_path: &Path,
    stored: Option<&[u8]>,
    scan: &ScannedSegment,
    report: &mut RecoveryReport,
) -> Result<S::File> {
    let entries_valid =
        stored.is_some_and(|bytes| bytes.len() == scan.valid_index_entries * INDEX_ENTRY_SIZE);
    if entries_valid && tail_is_indexed(scan) {
        return storage
            .open(index_path)
            .await
            .map_err(io_error("open index", index_path));
    }
    report.indexes_rebuilt.push(index_path.to_path_buf());
    rebuild_index(storage, index_path, scan).await
}

fn tail_is_indexed(scan: &ScannedSegment) -> bool {
    let indexed_up_to = scan
        .stored_index
        .get(scan.valid_index_entries.wrapping_sub(1))
        .map_or(0, |e| e.position);
    scan.unindexed.is_empty() || scan.valid_end - indexed_up_to < INDEX_REBUILD_TAIL_BYTES
}

/// Keeps the valid prefix of the stored index and appends sparse entries
/// for the records after it.
async fn rebuild_index<S: Storage>(
    storage: &S,
    path: &Path,
    scan: &ScannedSegment,
) -> Result<S::File> {
    let mut entries: Vec<IndexEntry> = scan.stored_index[..scan.valid_index_entries].to_vec();
    entries.extend_from_slice(&scan.unindexed);
    let bytes: Vec<u8> = entries.iter().flat_map(IndexEntry::encode).collect();
    let file = storage
        .create(path)
        .await
        .map_err(io_error("create index", path))?;
    let compio::BufResult(written, _) = file.write_all_at(bytes, 0).await;
    written.map_err(io_error("write index", path))?;
    Ok(file)
}

/// Verifies every record of a segment; stops at a torn tail, fails on
/// corruption followed by data.
async fn scan_segment<F: StorageFile>(
    file: &F,
    path: &Path,
    len: u64,
    start: Offset,
    scan: &mut ScannedSegment,
) -> Result<()> {
    let mut position = 0u64;
    let mut want = RECOVERY_READ_BYTES;
    while position < len {
        if len - position < BATCH_HEADER_SIZE as u64 {
            return torn(scan, position, "incomplete batch header");
        }
        let buf = file
            .read_exact_at(want.min(len - position) as usize, position)
            .await
            .map_err(io_error("read segment", path))?;
        let mut at = 0usize;
        want = RECOVERY_READ_BYTES;
        while buf.len() - at >= BATCH_HEADER_SIZE {
            let here = position + at as u64;
            let record_len = match BatchHeader::read(&buf[at..]) {
                Ok(header)
                    if (BATCH_HEADER_SIZE as u64..=MAX_RECORD_SIZE_BYTES)
                        .contains(&header.batch_length) =>
                {
                    header.batch_length
                }
                _ => return unreadable_header(file, path, len, here, scan).await,
            };
            if let Ok(header) = BatchHeader::read(&buf[at..])
                && scan.cut_at.is_some_and(|cut| header.base_offset >= cut.0)
            {
                assert_eq!(scan.valid_end, here, "a cut falls between records");
                scan.cut = true;
                return Ok(());
            }
            if here + record_len > len {
                return torn(scan, here, "incomplete record");
            }
            if at as u64 + record_len > buf.len() as u64 {
                want = want.max(record_len);
                break;
            }
            let record = &buf[at..at + record_len as usize];
            match check_record(record, start, scan.last_offset) {
                Ok(header) => scan.visit(here, &header),
                Err(reason) => {
                    return invalid_record(file, path, len, here, here + record_len, reason, scan)
                        .await;
                }
            }
            at += record_len as usize;
        }
        position += at as u64;
    }
    Ok(())
}

fn check_record(
    record: &[u8],
    start: Offset,
    previous_last: Option<Offset>,
) -> std::result::Result<BatchHeader, String> {
    let header = validate_record(record, Verify::Checksums).map_err(|e| e.to_string())?;
    let base_offset = Offset(header.base_offset);
    if base_offset < start || previous_last.is_some_and(|last| base_offset <= last) {
        return Err(format!("base offset {} out of order", header.base_offset));
    }
    Ok(header)
}

fn torn(scan: &mut ScannedSegment, position: u64, reason: &str) -> Result<()> {
    assert_eq!(
        scan.valid_end, position,
        "a torn tail starts after the last valid record"
    );
    scan.torn_reason = Some(reason.to_owned());
    Ok(())
}

async fn unreadable_header<F: StorageFile>(
    file: &F,
    path: &Path,
    len: u64,
    here: u64,
    scan: &mut ScannedSegment,
) -> Result<()> {
    if rest_is_zero(file, path, here, len).await? {
        return torn(scan, here, "zero-filled tail");
    }
    // A direct write rewrites the zero-padded last block together with the
    // blocks after it (see `direct`); a power loss may keep the later
    // blocks but not the rewrite. Zeros from a record boundary to the next
    // block boundary therefore start an unsynced tail, not corruption.
    let block_end = here.next_multiple_of(DIRECT_IO_ALIGN).min(len);
    if !here.is_multiple_of(DIRECT_IO_ALIGN) && rest_is_zero(file, path, here, block_end).await? {
        return torn(scan, here, "zero padding followed by an unsynced write");
    }
    Err(StorageError::Corrupt {
        file: path.to_path_buf(),
        position: here,
        reason: "unreadable batch header followed by data".to_owned(),
    })
}

async fn invalid_record<F: StorageFile>(
    file: &F,
    path: &Path,
    len: u64,
    here: u64,
    end: u64,
    reason: String,
    scan: &mut ScannedSegment,
) -> Result<()> {
    if end == len || rest_is_zero(file, path, end, len).await? {
        return torn(scan, here, &format!("invalid last record: {reason}"));
    }
    Err(StorageError::Corrupt {
        file: path.to_path_buf(),
        position: here,
        reason: format!("{reason}; valid data follows"),
    })
}

/// The bytes after the last record are the zero padding of a direct write
/// (see `direct`): fewer than one block, all zeros, up to a block boundary.
async fn is_direct_padding<F: StorageFile>(
    file: &F,
    path: &Path,
    valid_end: u64,
    len: u64,
) -> Result<bool> {
    let padding =
        valid_end < len && len.is_multiple_of(DIRECT_IO_ALIGN) && len - valid_end < DIRECT_IO_ALIGN;
    Ok(padding && rest_is_zero(file, path, valid_end, len).await?)
}

async fn rest_is_zero<F: StorageFile>(
    file: &F,
    path: &Path,
    mut from: u64,
    len: u64,
) -> Result<bool> {
    while from < len {
        let take = RECOVERY_READ_BYTES.min(len - from);
        let bytes = file
            .read_exact_at(take as usize, from)
            .await
            .map_err(io_error("read segment", path))?;
        if bytes.iter().any(|&b| b != 0) {
            return Ok(false);
        }
        from += take;
    }
    Ok(true)
}
