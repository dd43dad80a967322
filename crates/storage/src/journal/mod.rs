//! The metadata journal: an append-only write-ahead log of opaque records
//! in `metadata/journal.wal`, plus an atomic snapshot in
//! `metadata/snapshot.bin` that lets the covered WAL prefix be compacted.
//!
//! `append` is synchronous and returns the record's sequence; records are
//! buffered and written by `wait_durable`/`sync`, which group-commit: one
//! write and one fsync cover every caller waiting at that moment. A failed
//! write or fsync poisons the journal. `open` returns the snapshot (if any)
//! and every valid record after it; see `replay` for torn tails and
//! corruption. `write_snapshot` writes the snapshot (tmp, fsync, rename,
//! fsync dir) and then rewrites the WAL without the covered prefix the same
//! way, so a crash at any point leaves a consistent pair. A caller that
//! goes on appending while a snapshot is written (a partition group's
//! checkpoint) instead starts a new file (`rotate`, `journal.<first>.wal`),
//! writes the snapshot beside its appends (`store_snapshot`), and then
//! drops the older files the snapshot covers whole (`compact`): no record
//! is copied. Formats: `format`.

mod format;
mod replay;
mod slots;

#[cfg(test)]
mod tests;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use compio::BufResult;

pub use format::{ENTRY_HEADER_SIZE, MAX_ENTRY_PAYLOAD_BYTES, SNAPSHOT_MAGIC, SNAPSHOT_VERSION};

use crate::error::{Result, StorageError, io_error};
use crate::lock::AsyncLock;
use crate::partition::direct::{AlignedWrite, plan_write};
use crate::seam::{
    DIRECT_IO_ALIGN, Storage, StorageFile, read_whole, replace_unsynced, write_atomically,
};

pub const JOURNAL_FILE_NAME: &str = "journal.wal";
pub const SNAPSHOT_FILE_NAME: &str = "snapshot.bin";

/// One journal record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalRecord {
    pub sequence: u64,
    pub payload: Vec<u8>,
}

/// The latest snapshot: state as of `sequence`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub sequence: u64,
    pub payload: Vec<u8>,
}

/// What `open` found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JournalRecovery {
    pub snapshot: Option<Snapshot>,
    /// Records after the snapshot, in sequence order.
    pub records: Vec<JournalRecord>,
    /// `(position, dropped bytes, reason)` of a truncated torn tail.
    pub truncated_tail: Option<(u64, u64, String)>,
}

/// The direct write handle of a journal and the bytes of its file's last
/// partial block, which each direct write rewrites unchanged before the new
/// records (`crate::partition::direct`, whose layout rule this follows).
#[derive(Debug)]
struct DirectJournal<F> {
    file: Rc<F>,
    tail: Vec<u8>,
}

#[derive(Debug)]
struct JournalState<F> {
    /// The active file (the newest): reads, cuts, and writes unless
    /// `direct` is set.
    file: Rc<F>,
    /// The lowest sequence the active file may hold (its name; 0 for
    /// `journal.wal`).
    active_first: u64,
    /// The active file's path.
    active_path: PathBuf,
    /// A covered file kept for `rotate` to write over (`use_recycled_files`).
    spare: Option<PathBuf>,
    /// The older files (`rotate`), oldest first: each one's lowest
    /// sequence and path; it holds the records below the next one's.
    older: Vec<(u64, PathBuf)>,
    /// The direct write handle (`O_DIRECT | O_DSYNC`, `use_direct_io`): a
    /// write through it is durable when it completes, with no page-cache
    /// copy and no fsync.
    direct: Option<DirectJournal<F>>,
    /// Bytes of whole entries in the file (the next write position).
    end: u64,
    pending: Vec<u8>,
    last_sequence: u64,
    written_sequence: u64,
    durable_sequence: u64,
    poison: Option<String>,
    /// Where each record in the file (or pending) starts, by sequence: a
    /// cut or a compaction finds its position without reading the file.
    starts: BTreeMap<u64, u64>,
    /// Snapshots go to `snapshot.slots` in place (`use_snapshot_slots`).
    use_slots: bool,
    /// That file's slot capacity (0: no usable file yet), the slot the next
    /// snapshot goes to, and its open handle.
    slots: (u64, u8, Option<Rc<F>>),
    /// The sequence of the newest durable snapshot (0: none).
    snapshot_sequence: u64,
}

struct JournalInner<S: Storage> {
    storage: S,
    dir: PathBuf,
    state: RefCell<JournalState<S::File>>,
    io: AsyncLock,
    /// Serialises snapshot writes; `store_snapshot` takes only this one, so
    /// appends and their writes go on beside it (order: `io`, then this).
    snapshot_io: AsyncLock,
    /// Records are durable only where a caller syncs them; a compaction
    /// then rewrites the kept records without fsyncs (`set_unsynced_records`).
    unsynced_records: std::cell::Cell<bool>,
    /// `rotate` writes over a covered file (`use_recycled_files`).
    recycle: std::cell::Cell<bool>,
}

/// The metadata journal; clones are handles to the same journal.
pub struct Journal<S: Storage> {
    inner: Rc<JournalInner<S>>,
}

impl<S: Storage> Clone for Journal<S> {
    fn clone(&self) -> Self {
        Self {
            inner: Rc::clone(&self.inner),
        }
    }
}

impl<S: Storage> Journal<S> {
    /// Opens (creating if needed) the journal in `metadata_dir`.
    pub async fn open(storage: S, metadata_dir: &Path) -> Result<(Self, JournalRecovery)> {
        Self::open_with(storage, metadata_dir, false).await
    }

    /// `open` for a journal whose records are never fsynced
    /// (`set_unsynced_records`): after a power loss any part of what it
    /// wrote may be missing or torn, and its owner treats its head as
    /// uncertain, so every file's records end at the first entry that does
    /// not continue them (a cut torn tail) instead of failing the open.
    pub async fn open_unsynced(storage: S, metadata_dir: &Path) -> Result<(Self, JournalRecovery)> {
        Self::open_with(storage, metadata_dir, true).await
    }

    async fn open_with(
        storage: S,
        metadata_dir: &Path,
        unsynced: bool,
    ) -> Result<(Self, JournalRecovery)> {
        storage
            .create_dir_all(metadata_dir)
            .await
            .map_err(io_error("create metadata directory", metadata_dir))?;
        let mut snapshot = load_snapshot(&storage, metadata_dir).await?;
        let slots_path = metadata_dir.join(slots::SLOTS_FILE_NAME);
        let slots = read_whole(&storage, &slots_path)
            .await
            .map_err(io_error("read snapshot slots", &slots_path))?
            .map(|bytes| slots::read(&bytes))
            .unwrap_or_default();
        if let Some((_, newest)) = &slots.newest
            && snapshot
                .as_ref()
                .is_none_or(|s| newest.sequence > s.sequence)
        {
            snapshot = Some(newest.clone());
        }
        let mut recovery = JournalRecovery {
            snapshot,
            ..JournalRecovery::default()
        };
        let snapshot_sequence = recovery.snapshot.as_ref().map_or(0, |s| s.sequence);
        let listed = storage
            .read_dir(metadata_dir)
            .await
            .map_err(io_error("list journal files", metadata_dir))?;
        let spare = listed
            .iter()
            .any(|name| name == SPARE_FILE_NAME)
            .then(|| metadata_dir.join(SPARE_FILE_NAME));
        let mut names: Vec<(u64, String)> = listed
            .into_iter()
            .filter_map(|name| Some((parse_file_name(&name)?.0, name)))
            .collect();
        names.sort();
        if names.is_empty() {
            names.push((0, JOURNAL_FILE_NAME.to_owned()));
        }
        // Every file in order, each replayed on its own; the records above
        // the snapshot must run on from file to file. A gap at a file's
        // start (an older file's unsynced tail lost in a power loss) ends
        // the journal there, as a torn tail does.
        let mut older = Vec::new();
        let mut opened = None;
        let mut records = Vec::new();
        let mut starts = BTreeMap::new();
        let mut chain_end = None;
        for (index, (first, name)) in names.iter().enumerate() {
            let path = metadata_dir.join(name);
            let exists = storage
                .exists(&path)
                .await
                .map_err(io_error("stat journal", &path))?;
            let file = if exists {
                storage.open(&path).await
            } else {
                storage.create(&path).await
            };
            let file = file.map_err(io_error("open journal", &path))?;
            let bytes = read_whole(&storage, &path)
                .await
                .map_err(io_error("read journal", &path))?
                .unwrap_or_default();
            let recycled = parse_file_name(name).is_some_and(|(_, recycled)| recycled);
            let replayed = if recycled || unsynced {
                replay::replay_recycled(&bytes, (*first > 0).then_some(*first))
            } else {
                replay::replay(&bytes, &path)?
            };
            if let Some(record) = replayed.records.first()
                && record.sequence < *first
            {
                return Err(StorageError::Corrupt {
                    file: path.clone(),
                    position: 0,
                    reason: format!("record {} in a file from {first}", record.sequence),
                });
            }
            let above = replayed
                .records
                .iter()
                .find(|r| r.sequence > snapshot_sequence)
                .map(|r| r.sequence);
            // The sequence this file must go on from: a later file that
            // starts past it, or whose records do, follows a lost tail.
            let expected = chain_end.unwrap_or(snapshot_sequence) + 1;
            // The first file of a rotating journal may also start past the
            // snapshot, when the files before it were lost with their
            // unsynced directory entries.
            let named = index > 0 || *first > 0;
            if named && (*first > expected || above.is_some_and(|above| above != expected)) {
                let end = expected - 1;
                // This file and every later one go.
                for (_, later) in &names[index..] {
                    let later = metadata_dir.join(later);
                    tracing::warn!(file = %later.display(), after = end, "dropping a journal file after a gap");
                    storage
                        .remove_file(&later)
                        .await
                        .map_err(io_error("remove journal file", &later))?;
                }
                let reason = format!("a file from {first} after record {end}");
                recovery.truncated_tail = Some((0, bytes.len() as u64, reason));
                break;
            }
            let tail = &bytes[usize::try_from(replayed.valid_end).unwrap_or(bytes.len())..];
            let padding = (tail.len() as u64) < DIRECT_IO_ALIGN && tail.iter().all(|&b| b == 0);
            if recycled && !tail.is_empty() {
                // What an older file held past the records written over it.
                file.set_len(replayed.valid_end)
                    .await
                    .map_err(io_error("truncate journal", &path))?;
            } else if unsynced && !padding && !tail.is_empty() {
                let dropped = tail.len() as u64;
                let reason = replayed.torn_reason.clone().unwrap_or_default();
                tracing::warn!(file = %path.display(), position = replayed.valid_end, dropped, %reason, "cutting an unsynced journal's torn tail");
                file.set_len(replayed.valid_end)
                    .await
                    .map_err(io_error("truncate journal", &path))?;
                recovery.truncated_tail = Some((replayed.valid_end, dropped, reason));
            } else if padding && !tail.is_empty() {
                // A direct write's zero padding after the last record.
                file.set_len(replayed.valid_end)
                    .await
                    .map_err(io_error("truncate journal", &path))?;
            } else if replayed.valid_end < bytes.len() as u64 {
                let dropped = bytes.len() as u64 - replayed.valid_end;
                let reason = replayed.torn_reason.clone().unwrap_or_default();
                tracing::warn!(file = %path.display(), position = replayed.valid_end, dropped, %reason, "truncating torn journal tail");
                file.set_len(replayed.valid_end)
                    .await
                    .map_err(io_error("truncate journal", &path))?;
                recovery.truncated_tail = Some((replayed.valid_end, dropped, reason));
            }
            file.sync_data()
                .await
                .map_err(io_error("fsync journal", &path))?;
            let mut position = 0u64;
            for record in &replayed.records {
                starts.insert(record.sequence, position);
                position += (ENTRY_HEADER_SIZE + record.payload.len()) as u64;
            }
            assert_eq!(position, replayed.valid_end, "records tile the valid file");
            if let Some(last) = replayed.records.last()
                && last.sequence > snapshot_sequence
            {
                chain_end = Some(last.sequence);
            }
            records.extend(replayed.records);
            if let Some((first, path, _, _)) =
                opened.replace((*first, path, file, replayed.valid_end))
            {
                older.push((first, path));
            }
        }
        if opened.is_none() {
            // Every file followed a gap: the journal starts again, empty.
            let path = metadata_dir.join(JOURNAL_FILE_NAME);
            let file = storage
                .create(&path)
                .await
                .map_err(io_error("create journal", &path))?;
            opened = Some((0, path, file, 0));
        }
        storage
            .sync_dir(metadata_dir)
            .await
            .map_err(io_error("fsync metadata directory", metadata_dir))?;
        let (active_first, path, file, end) = opened.expect("a file is open");
        recovery.records = records_after(records, snapshot_sequence, &path)?;
        let last_sequence = recovery
            .records
            .last()
            .map_or(snapshot_sequence, |r| r.sequence);
        if active_first > last_sequence + 1 {
            return Err(StorageError::Corrupt {
                file: path,
                position: 0,
                reason: format!(
                    "the file starts at {active_first}, the journal ends at {last_sequence}"
                ),
            });
        }
        let state = JournalState {
            file: Rc::new(file),
            active_first,
            active_path: path.clone(),
            spare,
            older,
            direct: None,
            end,
            pending: Vec::new(),
            last_sequence,
            written_sequence: last_sequence,
            durable_sequence: last_sequence,
            poison: None,
            starts,
            use_slots: false,
            slots: (slots.capacity, slots.next_slot(), None),
            snapshot_sequence,
        };
        let inner = JournalInner {
            storage,
            dir: metadata_dir.to_path_buf(),
            state: RefCell::new(state),
            io: AsyncLock::default(),
            snapshot_io: AsyncLock::default(),
            unsynced_records: std::cell::Cell::new(false),
            recycle: std::cell::Cell::new(false),
        };
        Ok((
            Self {
                inner: Rc::new(inner),
            },
            recovery,
        ))
    }

    /// Declares that this journal's records are never fsynced by their
    /// owner (a `replicated` partition group, whose process-kill
    /// durability is the page cache and whose head is uncertain after a
    /// power loss, replication spec §6.3). A compaction then replaces the
    /// file with its kept records without fsyncing them: still atomic for
    /// a process kill; after a power loss either file may be there, each
    /// consistent with the snapshot, which stays fully durable.
    pub fn set_unsynced_records(&self, unsynced: bool) {
        self.inner.unsynced_records.set(unsynced);
    }

    /// The active file's path.
    fn path(&self) -> PathBuf {
        self.inner.state.borrow().active_path.clone()
    }

    fn check_writable(&self) -> Result<()> {
        match &self.inner.state.borrow().poison {
            Some(cause) => Err(StorageError::Poisoned {
                dir: self.inner.dir.clone(),
                cause: cause.clone(),
            }),
            None => Ok(()),
        }
    }

    /// A whole-file rewrite (snapshot, compaction) that failed: on a full
    /// disk nothing changed (the rewrite is atomic) and it can be retried;
    /// anything else poisons.
    fn failed_write(&self, operation: &str, error: io::Error) -> StorageError {
        if crate::error::is_disk_full(&error) {
            StorageError::NoSpace {
                dir: self.inner.dir.clone(),
            }
        } else {
            self.poison(operation, error)
        }
    }

    fn poison(&self, operation: &str, error: io::Error) -> StorageError {
        let cause = format!("{operation} on {} failed: {error}", self.path().display());
        let mut state = self.inner.state.borrow_mut();
        if state.poison.is_none() {
            tracing::error!(%cause, "metadata journal poisoned; it refuses writes from now on");
            state.poison = Some(cause);
        }
        StorageError::Poisoned {
            dir: self.inner.dir.clone(),
            cause: state.poison.clone().unwrap_or_default(),
        }
    }

    /// Buffers one record and returns its sequence. Not durable until
    /// `wait_durable(sequence)` returns.
    pub fn append(&self, payload: &[u8]) -> Result<u64> {
        self.append_parts(&[payload])
    }

    /// `append` of the payload `parts` joined (copied once, into the
    /// pending write).
    pub fn append_parts(&self, parts: &[&[u8]]) -> Result<u64> {
        self.check_writable()?;
        let len: usize = parts.iter().map(|part| part.len()).sum();
        if len > MAX_ENTRY_PAYLOAD_BYTES {
            let reason =
                format!("journal payload of {len} bytes exceeds {MAX_ENTRY_PAYLOAD_BYTES}");
            return Err(StorageError::InvalidOptions { reason });
        }
        let mut state = self.inner.state.borrow_mut();
        state.last_sequence += 1;
        let sequence = state.last_sequence;
        let start = state.end + state.pending.len() as u64;
        state.starts.insert(sequence, start);
        format::encode_entry_parts(sequence, parts, &mut state.pending);
        Ok(sequence)
    }

    pub fn last_sequence(&self) -> u64 {
        self.inner.state.borrow().last_sequence
    }

    /// The highest durable sequence (0 when none).
    pub fn durable_sequence(&self) -> u64 {
        self.inner.state.borrow().durable_sequence
    }

    /// Makes every record appended so far durable.
    pub async fn sync(&self) -> Result<()> {
        self.wait_durable(self.last_sequence()).await
    }

    /// Returns once `sequence` is written and fsynced; concurrent callers
    /// share one write and one fsync.
    pub async fn wait_durable(&self, sequence: u64) -> Result<()> {
        assert!(
            sequence <= self.last_sequence(),
            "wait_durable({sequence}) for a record never appended"
        );
        if self.durable_sequence() >= sequence {
            return Ok(());
        }
        let _io = self.inner.io.lock().await;
        if self.durable_sequence() >= sequence {
            return Ok(());
        }
        self.write_pending_locked().await?;
        if self.durable_sequence() >= sequence {
            return Ok(()); // written directly, durable already
        }
        let (file, written) = {
            let state = self.inner.state.borrow();
            (Rc::clone(&state.file), state.written_sequence)
        };
        self.check_writable()?;
        file.sync_data()
            .await
            .map_err(|error| self.poison("fsync", error))?;
        let mut state = self.inner.state.borrow_mut();
        state.durable_sequence = state.durable_sequence.max(written);
        assert!(
            state.durable_sequence >= sequence,
            "a completed sync must cover the sequence"
        );
        Ok(())
    }

    /// Writes the pending buffer at the end of the file; the caller holds
    /// the `io` lock.
    async fn write_pending_locked(&self) -> Result<()> {
        self.check_writable()?;
        let (file, bytes, end, last) = {
            let mut state = self.inner.state.borrow_mut();
            let bytes = std::mem::take(&mut state.pending);
            (
                Rc::clone(&state.file),
                bytes,
                state.end,
                state.last_sequence,
            )
        };
        if bytes.is_empty() {
            return Ok(());
        }
        let direct = self
            .inner
            .state
            .borrow()
            .direct
            .as_ref()
            .map(|d| (Rc::clone(&d.file), d.tail.clone()));
        if let Some((direct_file, tail)) = direct {
            return self
                .write_direct_locked(&direct_file, &tail, bytes, end, last)
                .await;
        }
        let len = bytes.len() as u64;
        let BufResult(written, bytes) = file.write_all_at(bytes, end).await;
        if let Err(error) = written {
            if !crate::error::is_disk_full(&error) {
                return Err(self.poison("write", error));
            }
            // A full disk: keep the entries and write them again, at the
            // same position, on the next sync.
            let mut state = self.inner.state.borrow_mut();
            let newer = std::mem::replace(&mut state.pending, bytes);
            state.pending.extend_from_slice(&newer);
            return Err(StorageError::NoSpace {
                dir: self.inner.dir.clone(),
            });
        }
        let mut state = self.inner.state.borrow_mut();
        state.end = end + len;
        state.written_sequence = last;
        // Reuse the buffer: a fresh one for every write of large records
        // costs a page fault and a zeroed page per 4 KiB.
        if state.pending.is_empty() {
            let mut bytes = bytes;
            bytes.clear();
            state.pending = bytes;
        }
        Ok(())
    }

    /// Writes the pending `bytes` through the direct handle: from the
    /// block holding `end`, its `tail` rewritten first, padded with zeros
    /// to a block. Durable when it returns (`O_DSYNC`).
    async fn write_direct_locked(
        &self,
        direct_file: &S::File,
        tail: &[u8],
        bytes: Vec<u8>,
        end: u64,
        last: u64,
    ) -> Result<()> {
        let len = bytes.len() as u64;
        let records = [bytes::Bytes::from(bytes)];
        let plan = plan_write(end, tail, &records);
        let data_len = plan.data_len;
        let BufResult(written, buffer) = direct_file.write_all_at(plan.buffer, plan.position).await;
        if let Err(error) = written {
            if !crate::error::is_disk_full(&error) {
                return Err(self.poison("direct write", error));
            }
            let mut state = self.inner.state.borrow_mut();
            let mut kept = records[0].to_vec();
            kept.extend_from_slice(&state.pending);
            state.pending = kept;
            return Err(StorageError::NoSpace {
                dir: self.inner.dir.clone(),
            });
        }
        let mut state = self.inner.state.borrow_mut();
        state.end = end + len;
        state.written_sequence = last;
        state.durable_sequence = state.durable_sequence.max(last);
        if let Some(direct) = &mut state.direct {
            direct.tail = AlignedWrite::next_tail(buffer, data_len);
            assert_eq!(
                direct.tail.len() as u64,
                state.end % DIRECT_IO_ALIGN,
                "the tail is the last partial block"
            );
        }
        Ok(())
    }

    /// Writes from now on go straight to the device, each durable when it
    /// completes (`O_DIRECT | O_DSYNC`): for a journal whose every record
    /// is synced before it is acknowledged, this saves the page-cache copy
    /// and the separate fsync. Returns false where the filesystem has no
    /// direct I/O (the journal stays buffered). The file may then end with
    /// fewer than `DIRECT_IO_ALIGN` zero bytes of padding after its last
    /// record, which `open` cuts off.
    pub async fn use_direct_io(&self) -> Result<bool> {
        let _io = self.inner.io.lock().await;
        self.write_pending_locked().await?;
        self.check_writable()?;
        self.open_direct_locked().await
    }

    /// (Re)opens the direct handle on the current file and loads its tail;
    /// the caller holds the `io` lock and has written every pending record.
    async fn open_direct_locked(&self) -> Result<bool> {
        let path = self.path();
        let direct_file = match self.inner.storage.open_direct(&path, true).await {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::Unsupported => {
                tracing::debug!(file = %path.display(), %error, "journal stays buffered");
                self.inner.state.borrow_mut().direct = None;
                return Ok(false);
            }
            Err(error) => return Err(self.poison("open for direct I/O", error)),
        };
        let (file, end, unsynced) = {
            let state = self.inner.state.borrow();
            (
                Rc::clone(&state.file),
                state.end,
                state.written_sequence > state.durable_sequence,
            )
        };
        if unsynced {
            // Records written through the page cache so far become durable
            // before direct writes follow them.
            file.sync_data()
                .await
                .map_err(|error| self.poison("fsync", error))?;
        }
        let tail_len = end % DIRECT_IO_ALIGN;
        let tail = if tail_len == 0 {
            Vec::new()
        } else {
            file.read_exact_at(tail_len as usize, end - tail_len)
                .await
                .map_err(|error| self.poison("read journal tail", error))?
        };
        let mut state = self.inner.state.borrow_mut();
        state.durable_sequence = state.durable_sequence.max(state.written_sequence);
        state.direct = Some(DirectJournal {
            file: Rc::new(direct_file),
            tail,
        });
        Ok(true)
    }

    /// Writes every record appended so far to the file, without an fsync:
    /// they survive a process kill, not a power loss (the `replicated`
    /// durability of a partition group's journal).
    pub async fn write_out(&self) -> Result<()> {
        let _io = self.inner.io.lock().await;
        self.write_pending_locked().await
    }

    /// Stores a snapshot of the state as of `sequence` (which must be
    /// appended) and compacts the WAL prefix it covers. The covered records
    /// are never fsynced for it: the snapshot replaces them, and the records
    /// after it are rewritten durably. So a journal written without fsyncs
    /// (a `replicated` partition group) drops its covered pages from the
    /// page cache, mostly before the kernel ever writes them back.
    pub async fn write_snapshot(&self, sequence: u64, payload: Vec<u8>) -> Result<()> {
        assert!(
            sequence <= self.last_sequence(),
            "write_snapshot({sequence}) for a record never appended"
        );
        let _io = self.inner.io.lock().await;
        // Pending records are written first: compaction copies the file.
        self.write_pending_locked().await?;
        self.check_writable()?;
        {
            let _snapshot_io = self.inner.snapshot_io.lock().await;
            self.store_snapshot_locked(sequence, &payload).await?;
        }
        self.compact_locked(sequence).await?;
        assert!(
            self.durable_sequence() >= sequence,
            "a snapshot leaves its records durable"
        );
        Ok(())
    }

    /// The first half of `write_snapshot`, which runs beside the journal's
    /// own writes: makes the snapshot of the state as of `sequence` (which
    /// must be appended) durable, and compacts nothing. Appends, writes,
    /// syncs and cuts of records above `sequence` go on meanwhile; `compact`
    /// then drops the covered records. A crash between the two leaves both,
    /// and `open` skips the records the snapshot covers.
    pub async fn store_snapshot(&self, sequence: u64, payload: Vec<u8>) -> Result<()> {
        assert!(
            sequence <= self.last_sequence(),
            "store_snapshot({sequence}) for a record never appended"
        );
        let _snapshot_io = self.inner.snapshot_io.lock().await;
        self.check_writable()?;
        self.store_snapshot_locked(sequence, &payload).await
    }

    /// From now on `rotate` writes over a file a compaction covered instead
    /// of creating one (`journal.<first>.rwal`), for a journal whose records
    /// are never fsynced (`set_unsynced_records`): a rewritten page-cache
    /// page costs a fraction of a fresh one (about 7x here), and a process
    /// kill keeps the file exactly as written, its older bytes past the
    /// records ignored at `open`.
    pub fn use_recycled_files(&self) {
        assert!(
            self.inner.unsynced_records.get(),
            "only a journal that is never fsynced recycles its files"
        );
        self.inner.recycle.set(true);
    }

    /// Starts a new active file, `journal.<next>.wal`, for the records from
    /// the next sequence on; the current file becomes the newest older one.
    /// With `store_snapshot` beside the appends and then `compact`, a
    /// snapshot drops whole files and never copies a record. In a fsynced
    /// journal the older file's records are durable, and the new file's
    /// name too, before the new file holds any record.
    pub async fn rotate(&self) -> Result<()> {
        let _io = self.inner.io.lock().await;
        self.write_pending_locked().await?;
        self.check_writable()?;
        let (file, active_first, end, last, unsynced_writes) = {
            let state = self.inner.state.borrow();
            (
                Rc::clone(&state.file),
                state.active_first,
                state.end,
                state.last_sequence,
                state.written_sequence > state.durable_sequence,
            )
        };
        if end == 0 && active_first == last + 1 {
            return Ok(()); // the active file is new and empty already
        }
        let fsynced = !self.inner.unsynced_records.get();
        if fsynced && unsynced_writes {
            file.sync_data()
                .await
                .map_err(|error| self.poison("fsync", error))?;
            let mut state = self.inner.state.borrow_mut();
            state.durable_sequence = state.durable_sequence.max(state.written_sequence);
        }
        let first = last + 1;
        let recycle = self.inner.recycle.get();
        let path = self.inner.dir.join(file_name(first, recycle));
        let spare = self
            .inner
            .state
            .borrow_mut()
            .spare
            .take()
            .filter(|_| recycle);
        let new_file = match spare {
            Some(spare) => {
                self.inner
                    .storage
                    .rename(&spare, &path)
                    .await
                    .map_err(|error| self.poison("rename spare journal file", error))?;
                self.inner.storage.open(&path).await
            }
            None => self.inner.storage.create(&path).await,
        }
        .map_err(|error| self.poison("create journal file", error))?;
        if fsynced {
            self.inner
                .storage
                .sync_dir(&self.inner.dir)
                .await
                .map_err(|error| self.poison("fsync journal directory", error))?;
        }
        let direct = {
            let old_path = self.path();
            let mut state = self.inner.state.borrow_mut();
            let old_first = state.active_first;
            state.older.push((old_first, old_path));
            state.active_first = first;
            state.active_path = path;
            state.file = Rc::new(new_file);
            state.end = 0;
            state.direct.is_some()
        };
        if direct {
            self.open_direct_locked().await?;
        }
        Ok(())
    }

    /// The second half of a snapshot written beside the journal: drops the
    /// older files (`rotate`) that hold only records up to `sequence`,
    /// which a stored snapshot covers (`store_snapshot`). Records it covers
    /// in a file that also holds later ones stay until a later compaction;
    /// `open` skips them.
    pub async fn compact(&self, sequence: u64) -> Result<()> {
        assert!(
            self.inner.state.borrow().snapshot_sequence >= sequence,
            "compact({sequence}) below no stored snapshot"
        );
        self.check_writable()?;
        let covered = self.take_covered_files(sequence);
        {
            let mut state = self.inner.state.borrow_mut();
            // The snapshot holds every record up to `sequence`.
            state.durable_sequence = state.durable_sequence.max(sequence);
        }
        if covered.is_empty() {
            return Ok(());
        }
        let mut covered = covered.into_iter().peekable();
        // Kept for the next rotation to write over. Never `journal.wal`:
        // only a name that carries its first sequence tells, after a crash
        // that lost the renames, its own records from a later file's.
        if self.inner.recycle.get()
            && self.inner.state.borrow().spare.is_none()
            && covered
                .peek()
                .is_some_and(|path| !path.ends_with(JOURNAL_FILE_NAME))
        {
            let kept = covered.next().expect("one covered file");
            let spare = self.inner.dir.join(SPARE_FILE_NAME);
            self.inner
                .storage
                .rename(&kept, &spare)
                .await
                .map_err(|error| self.poison("rename covered journal file", error))?;
            self.inner.state.borrow_mut().spare = Some(spare);
        }
        let covered: Vec<PathBuf> = covered.collect();
        if covered.is_empty() {
            return Ok(());
        }
        // Removed beside the caller: no later file takes a covered one's
        // name (names are first sequences, and every later one is above
        // the snapshot), and a file that stays is skipped at `open`.
        let storage = self.inner.storage.clone();
        compio::runtime::spawn(async move {
            for path in covered {
                if let Err(error) = storage.remove_file(&path).await {
                    tracing::warn!(file = %path.display(), %error, "a covered journal file stays");
                }
            }
        })
        .detach();
        Ok(())
    }

    /// Forgets every older file whose records all lie at or below
    /// `sequence` and returns their paths, for the caller to remove.
    fn take_covered_files(&self, sequence: u64) -> Vec<PathBuf> {
        let mut state = self.inner.state.borrow_mut();
        let nexts: Vec<u64> = state
            .older
            .iter()
            .skip(1)
            .map(|(first, _)| *first)
            .chain([state.active_first])
            .collect();
        let mut covered = Vec::new();
        let mut kept = Vec::new();
        let mut below = 0;
        for ((first, path), next) in std::mem::take(&mut state.older).into_iter().zip(nexts) {
            if next - 1 <= sequence {
                covered.push(path);
                below = below.max(next);
            } else {
                kept.push((first, path));
            }
        }
        state.older = kept;
        let starts = state.starts.split_off(&below);
        state.starts = starts;
        covered
    }

    /// Removes every older file whose records all lie at or below
    /// `sequence` (a snapshot covers them, so one that a crash brings back
    /// is skipped at `open`: no directory fsync); the caller holds `io`.
    async fn drop_older_locked(&self, sequence: u64) -> Result<()> {
        for path in self.take_covered_files(sequence) {
            self.inner
                .storage
                .remove_file(&path)
                .await
                .map_err(|error| self.poison("remove journal file", error))?;
        }
        Ok(())
    }

    /// Snapshots from now on are written in place into `snapshot.slots`
    /// (`slots`): one fdatasync each instead of a temporary file, its
    /// fsync, a rename and a directory fsync. For a journal that snapshots
    /// often (a partition group). An older build does not read that file.
    pub fn use_snapshot_slots(&self) {
        self.inner.state.borrow_mut().use_slots = true;
    }

    /// Makes the snapshot of the state as of `sequence` durable; the caller
    /// holds the `snapshot_io` lock.
    async fn store_snapshot_locked(&self, sequence: u64, payload: &[u8]) -> Result<()> {
        self.write_snapshot_image(sequence, payload).await?;
        let mut state = self.inner.state.borrow_mut();
        state.snapshot_sequence = state.snapshot_sequence.max(sequence);
        Ok(())
    }

    async fn write_snapshot_image(&self, sequence: u64, payload: &[u8]) -> Result<()> {
        let storage = &self.inner.storage;
        let image = format::encode_snapshot(sequence, payload);
        let (use_slots, (capacity, next, handle)) = {
            let state = self.inner.state.borrow();
            (state.use_slots, state.slots.clone())
        };
        if !use_slots {
            let snapshot_path = self.inner.dir.join(SNAPSHOT_FILE_NAME);
            return write_atomically(storage, &snapshot_path, image)
                .await
                .map_err(|error| self.failed_write("snapshot write", error));
        }
        let path = self.inner.dir.join(slots::SLOTS_FILE_NAME);
        if image.len() as u64 > capacity {
            let capacity = slots::capacity_for(image.len());
            write_atomically(storage, &path, slots::whole_file(capacity, &image))
                .await
                .map_err(|error| self.failed_write("snapshot slots write", error))?;
            self.inner.state.borrow_mut().slots = (capacity, 1, None);
            return Ok(());
        }
        let file = match handle {
            Some(file) => file,
            None => Rc::new(
                storage
                    .open(&path)
                    .await
                    .map_err(|error| self.poison("open snapshot slots", error))?,
            ),
        };
        let BufResult(written, _) = file.write_all_at(image, u64::from(next) * capacity).await;
        written.map_err(|error| self.poison("snapshot slot write", error))?;
        file.sync_data()
            .await
            .map_err(|error| self.poison("snapshot slot fsync", error))?;
        self.inner.state.borrow_mut().slots = (capacity, 1 - next, Some(file));
        Ok(())
    }

    /// Cuts every record after `sequence`, durably (replicated groups: a
    /// view's log replaces an unapplied tail, replication spec §5.3).
    /// Pending records are written first, so the cut is one `set_len` and
    /// one fsync; the next `append` continues at `sequence + 1`.
    pub async fn truncate_after(&self, sequence: u64) -> Result<()> {
        let _io = self.inner.io.lock().await;
        self.write_pending_locked().await?;
        self.check_writable()?;
        if sequence + 1 < self.inner.state.borrow().active_first {
            self.reactivate_locked(sequence + 1).await?;
        }
        let (file, end, last) = {
            let state = self.inner.state.borrow();
            (Rc::clone(&state.file), state.end, state.last_sequence)
        };
        if sequence >= last {
            return Ok(());
        }
        let first = {
            let state = self.inner.state.borrow();
            state.starts.keys().next().copied().unwrap_or(last)
        };
        assert!(
            sequence + 1 >= first,
            "a cut never reaches into the snapshot ({sequence} below record {first})"
        );
        let keep = {
            let state = self.inner.state.borrow();
            state.starts.get(&(sequence + 1)).copied().unwrap_or(end)
        };
        assert!(keep <= end, "pending records were written first");
        file.set_len(keep)
            .await
            .map_err(|error| self.poison("truncate", error))?;
        file.sync_data()
            .await
            .map_err(|error| self.poison("fsync", error))?;
        let direct = {
            let mut state = self.inner.state.borrow_mut();
            state.end = keep;
            state.starts.retain(|&s, _| s <= sequence);
            state.last_sequence = sequence;
            state.written_sequence = sequence;
            state.durable_sequence = state.durable_sequence.min(sequence);
            assert_eq!(state.end, keep, "the file ends at the cut");
            state.direct.is_some()
        };
        if direct {
            self.open_direct_locked().await?;
        }
        Ok(())
    }

    /// A cut below the active file: the files after the one holding
    /// `sequence` go (durably, or a crash would bring their records back)
    /// and that one becomes the active file again; the caller holds `io`
    /// and then cuts it.
    async fn reactivate_locked(&self, sequence: u64) -> Result<()> {
        let (index, keep, doomed) = {
            let state = self.inner.state.borrow();
            let keep = state
                .older
                .iter()
                .rposition(|(first, _)| *first <= sequence)
                .expect("the oldest file holds every sequence below the next");
            let mut doomed: Vec<PathBuf> = state.older[keep + 1..]
                .iter()
                .map(|(_, path)| path.clone())
                .collect();
            doomed.push(state.active_path.clone());
            (keep, state.older[keep].clone(), doomed)
        };
        for path in &doomed {
            self.inner
                .storage
                .remove_file(path)
                .await
                .map_err(|error| self.poison("remove journal file", error))?;
        }
        self.inner
            .storage
            .sync_dir(&self.inner.dir)
            .await
            .map_err(|error| self.poison("fsync journal directory", error))?;
        let file = self
            .inner
            .storage
            .open(&keep.1)
            .await
            .map_err(|error| self.poison("reopen journal file", error))?;
        let end = file
            .size_bytes()
            .await
            .map_err(|error| self.poison("size journal file", error))?;
        let direct = {
            let mut state = self.inner.state.borrow_mut();
            state.older.truncate(index + 1);
            let (first, path) = state.older.pop().expect("the kept file");
            state.active_first = first;
            state.active_path = path;
            state.file = Rc::new(file);
            state.end = end;
            state.direct.is_some()
        };
        if direct {
            self.open_direct_locked().await?;
        }
        Ok(())
    }

    /// Installs a snapshot received by state transfer, as of `sequence`
    /// (above everything journaled here): the snapshot is written, then the
    /// WAL is emptied, each atomically; the next `append` is `sequence + 1`.
    pub async fn install_snapshot(&self, sequence: u64, payload: Vec<u8>) -> Result<()> {
        let _io = self.inner.io.lock().await;
        self.write_pending_locked().await?;
        self.check_writable()?;
        assert!(
            sequence > self.last_sequence(),
            "an installed snapshot is above the journal"
        );
        {
            let _snapshot_io = self.inner.snapshot_io.lock().await;
            self.store_snapshot_locked(sequence, &payload).await?;
        }
        // Every record is below the snapshot: the older files go whole.
        self.drop_older_locked(sequence).await?;
        let storage = &self.inner.storage;
        let path = self.path();
        write_atomically(storage, &path, Vec::new())
            .await
            .map_err(|error| self.failed_write("journal reset", error))?;
        let new_file = storage
            .open(&path)
            .await
            .map_err(|error| self.poison("journal reopen", error))?;
        let direct = {
            let mut state = self.inner.state.borrow_mut();
            state.file = Rc::new(new_file);
            state.end = 0;
            state.starts.clear();
            state.last_sequence = sequence;
            state.written_sequence = sequence;
            state.durable_sequence = sequence;
            state.direct.is_some()
        };
        if direct {
            self.open_direct_locked().await?;
        }
        Ok(())
    }

    /// Rewrites the WAL without the entries up to `sequence`, reading only
    /// the entries it keeps.
    async fn compact_locked(&self, sequence: u64) -> Result<()> {
        self.drop_older_locked(sequence).await?;
        if sequence < self.inner.state.borrow().active_first {
            let mut state = self.inner.state.borrow_mut();
            state.durable_sequence = state.durable_sequence.max(sequence);
            return Ok(()); // the active file holds no covered record
        }
        let path = self.path();
        let (file, end, keep_from) = {
            let state = self.inner.state.borrow();
            let keep_from = state
                .starts
                .range(sequence + 1..)
                .next()
                .map_or(state.end, |(_, &start)| start.min(state.end));
            (Rc::clone(&state.file), state.end, keep_from)
        };
        let len = usize::try_from(end - keep_from)
            .map_err(|error| self.poison("compaction", io::Error::other(error)))?;
        let kept = if len == 0 {
            Vec::new()
        } else {
            file.read_exact_at(len, keep_from)
                .await
                .map_err(|error| self.poison("compaction read", error))?
        };
        let kept_len = kept.len() as u64;
        let unsynced = self.inner.unsynced_records.get();
        let replaced = if unsynced {
            replace_unsynced(&self.inner.storage, &path, kept).await
        } else {
            write_atomically(&self.inner.storage, &path, kept).await
        };
        replaced.map_err(|error| self.failed_write("compaction write", error))?;
        let new_file = self
            .inner
            .storage
            .open(&path)
            .await
            .map_err(|error| self.poison("compaction reopen", error))?;
        let direct = {
            let mut state = self.inner.state.borrow_mut();
            state.file = Rc::new(new_file);
            state.end = kept_len;
            // The snapshot covers every record up to `sequence`, and a
            // synced rewrite made every written record after it durable.
            let durable = if unsynced {
                sequence
            } else {
                state.written_sequence
            };
            state.durable_sequence = state.durable_sequence.max(durable);
            state.starts = std::mem::take(&mut state.starts)
                .into_iter()
                .filter(|&(s, _)| s > sequence)
                .map(|(s, start)| (s, start - keep_from))
                .collect();
            state.direct.is_some()
        };
        if direct {
            self.open_direct_locked().await?;
        }
        Ok(())
    }
}

async fn load_snapshot<S: Storage>(storage: &S, dir: &Path) -> Result<Option<Snapshot>> {
    let path = dir.join(SNAPSHOT_FILE_NAME);
    let Some(bytes) = read_whole(storage, &path)
        .await
        .map_err(io_error("read snapshot", &path))?
    else {
        return Ok(None);
    };
    let (sequence, payload) =
        format::decode_snapshot(&bytes).map_err(|reason| StorageError::Corrupt {
            file: path.clone(),
            position: 0,
            reason,
        })?;
    Ok(Some(Snapshot { sequence, payload }))
}

/// A journal file's name: `journal.wal` (from sequence 0, the first file
/// of every journal), `journal.<first>.wal` (a file started by `rotate`,
/// holding sequences from `first`) or `journal.<first>.rwal` (the same,
/// possibly written over an older file: its records end at the first
/// entry that does not continue them, whatever follows).
fn file_name(first: u64, recycled: bool) -> String {
    match (first, recycled) {
        (0, _) => JOURNAL_FILE_NAME.to_owned(),
        (first, false) => format!("journal.{first}.wal"),
        (first, true) => format!("journal.{first}.rwal"),
    }
}

/// The lowest sequence of the journal file `name`, and whether it may be
/// written over an older one, if it is a journal file.
fn parse_file_name(name: &str) -> Option<(u64, bool)> {
    if name == JOURNAL_FILE_NAME {
        return Some((0, false));
    }
    let rest = name.strip_prefix("journal.")?;
    let (number, recycled) = match rest.strip_suffix(".rwal") {
        Some(number) => (number, true),
        None => (rest.strip_suffix(".wal")?, false),
    };
    let first: u64 = number.parse().ok()?;
    (first > 0 && file_name(first, recycled) == name).then_some((first, recycled))
}

/// A covered file kept to be written over by the next `rotate`.
const SPARE_FILE_NAME: &str = "journal.spare.rwal";

/// The records after the snapshot; they must continue it without a gap.
fn records_after(
    records: Vec<JournalRecord>,
    snapshot_sequence: u64,
    path: &Path,
) -> Result<Vec<JournalRecord>> {
    let after: Vec<JournalRecord> = records
        .into_iter()
        .filter(|r| r.sequence > snapshot_sequence)
        .collect();
    match after.first() {
        Some(first) if first.sequence != snapshot_sequence + 1 => Err(StorageError::Corrupt {
            file: path.to_path_buf(),
            position: 0,
            reason: format!(
                "journal resumes at sequence {} but the snapshot ends at {snapshot_sequence}",
                first.sequence
            ),
        }),
        _ => Ok(after),
    }
}
