//! A journal of several files: `rotate` starts a new one, `compact` drops
//! the ones a stored snapshot covers whole (or keeps one as the spare the
//! next rotation writes over), and a cut below the active file makes the
//! file holding it active again. Names and their meaning: `format`.

use std::path::PathBuf;
use std::rc::Rc;

use super::*;

impl<S: Storage> Journal<S> {
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
    pub(super) async fn drop_older_locked(&self, sequence: u64) -> Result<()> {
        for path in self.take_covered_files(sequence) {
            self.inner
                .storage
                .remove_file(&path)
                .await
                .map_err(|error| self.poison("remove journal file", error))?;
        }
        Ok(())
    }

    /// A cut below the active file: the files after the one holding
    /// `sequence` go (durably, or a crash would bring their records back)
    /// and that one becomes the active file again; the caller holds `io`
    /// and then cuts it.
    pub(super) async fn reactivate_locked(&self, sequence: u64) -> Result<()> {
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
}

/// A journal file's name: `journal.wal` (from sequence 0, the first file
/// of every journal), `journal.<first>.wal` (a file started by `rotate`,
/// holding sequences from `first`) or `journal.<first>.rwal` (the same,
/// possibly written over an older file: its records end at the first
/// entry that does not continue them, whatever follows).
pub(super) fn file_name(first: u64, recycled: bool) -> String {
    match (first, recycled) {
        (0, _) => JOURNAL_FILE_NAME.to_owned(),
        (first, false) => format!("journal.{first}.wal"),
        (first, true) => format!("journal.{first}.rwal"),
    }
}

/// The lowest sequence of the journal file `name`, and whether it may be
/// written over an older one, if it is a journal file.
pub(super) fn parse_file_name(name: &str) -> Option<(u64, bool)> {
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
pub(super) const SPARE_FILE_NAME: &str = "journal.spare.rwal";
