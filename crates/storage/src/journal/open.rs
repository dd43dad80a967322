//! Opening a journal: its snapshot (`snapshot.bin` or the newest valid
//! slot of `snapshot.slots`) and its files, each replayed and chained to
//! the next (`replay`), with torn tails and gaps cut as `format` says.

use std::path::Path;
use std::rc::Rc;

use super::files::{SPARE_FILE_NAME, parse_file_name};
use super::*;

impl<S: Storage> Journal<S> {
    /// Opens (creating if needed) the journal in `metadata_dir`.
    pub async fn open(storage: S, metadata_dir: &Path) -> Result<(Self, JournalRecovery)> {
        Self::open_with(storage, metadata_dir, false).await
    }

    /// `open` for a journal whose records are never fsynced (it is then
    /// `set_unsynced_records(true)`): after a power loss any part of what it
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
            unsynced_records: std::cell::Cell::new(unsynced),
            recycle: std::cell::Cell::new(false),
        };
        Ok((
            Self {
                inner: Rc::new(inner),
            },
            recovery,
        ))
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
