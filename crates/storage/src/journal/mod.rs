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

mod direct;
mod files;
mod format;
mod open;
mod replay;
mod slots;

#[cfg(test)]
mod tests;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;
use std::rc::Rc;

use compio::BufResult;

pub use format::{ENTRY_HEADER_SIZE, MAX_ENTRY_PAYLOAD_BYTES, SNAPSHOT_MAGIC, SNAPSHOT_VERSION};

use crate::error::{Result, StorageError, io_error};
use crate::lock::AsyncLock;
use crate::partition::direct::{AlignedWrite, plan_write};
use crate::seam::{
    DIRECT_IO_ALIGN, RING_WRITE_BYTES, Storage, StorageFile, read_whole, replace_unsynced,
    write_atomically,
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
        let (written, bytes) = if len < RING_WRITE_BYTES {
            (
                file.write_vectored_all_at_blocking(&[&bytes[..]], end),
                bytes,
            )
        } else {
            let BufResult(written, bytes) = file.write_all_at(bytes, end).await;
            (written, bytes)
        };
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
    pub async fn write_snapshot(&self, sequence: u64, payload: &[u8]) -> Result<()> {
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
            self.store_snapshot_locked(sequence, payload).await?;
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
    pub async fn store_snapshot(&self, sequence: u64, payload: &[u8]) -> Result<()> {
        assert!(
            sequence <= self.last_sequence(),
            "store_snapshot({sequence}) for a record never appended"
        );
        let _snapshot_io = self.inner.snapshot_io.lock().await;
        self.check_writable()?;
        self.store_snapshot_locked(sequence, payload).await
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
