use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::files::SPARE_FILE_NAME;
use super::*;
use crate::seam::{CrashMode, SimFaults, SimStorage};

const CRASH_TRIALS: u64 = 150;

fn dir() -> &'static Path {
    Path::new("/data/metadata")
}

fn payload(sequence: u64) -> Vec<u8> {
    format!("operation {sequence}").into_bytes()
}

async fn open(storage: &SimStorage) -> (Journal<SimStorage>, JournalRecovery) {
    Journal::open(storage.clone(), dir())
        .await
        .expect("open journal")
}

#[compio::test]
async fn given_synced_records_when_reopening_should_replay_them_in_order() {
    let storage = SimStorage::new();
    let (journal, recovery) = open(&storage).await;
    assert_eq!(recovery, JournalRecovery::default());
    for expected in 1..=5 {
        assert_eq!(journal.append(&payload(expected)).unwrap(), expected);
    }
    journal.sync().await.unwrap();
    let (journal, recovery) = open(&storage.crash(CrashMode::Clean)).await;
    let sequences: Vec<u64> = recovery.records.iter().map(|r| r.sequence).collect();
    assert_eq!(sequences, [1, 2, 3, 4, 5]);
    assert_eq!(recovery.records[2].payload, payload(3));
    assert_eq!(journal.append(b"next").unwrap(), 6);
}

#[compio::test]
async fn given_concurrent_waiters_should_share_fsyncs() {
    let storage = SimStorage::new();
    let (journal, _) = open(&storage).await;
    let before = storage.syncs_done();
    let tasks: Vec<_> = (0..10)
        .map(|_| {
            let journal = journal.clone();
            compio::runtime::spawn(async move {
                let sequence = journal.append(b"op").unwrap();
                journal.wait_durable(sequence).await.unwrap();
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(journal.durable_sequence(), 10);
    assert!(storage.syncs_done() - before < 10);
}

#[compio::test]
async fn given_corruption_before_valid_entries_when_opening_should_refuse_with_position() {
    let storage = SimStorage::new();
    let (journal, _) = open(&storage).await;
    for sequence in 1..=3 {
        journal.append(&payload(sequence)).unwrap();
    }
    journal.sync().await.unwrap();
    let path = dir().join(JOURNAL_FILE_NAME);
    let mut bytes = storage.file_bytes(&path).unwrap();
    let second = ENTRY_HEADER_SIZE + payload(1).len();
    bytes[second + ENTRY_HEADER_SIZE] ^= 1;
    storage.overwrite_durably(&path, bytes).unwrap();
    let error = Journal::open(storage.clone(), dir())
        .await
        .err()
        .expect("refused");
    assert!(
        matches!(&error, StorageError::Corrupt { file, position, .. } if *file == path && *position == second as u64),
        "{error}"
    );
}

#[compio::test]
async fn given_snapshot_when_reopening_should_return_it_and_the_records_after_it() {
    let storage = SimStorage::new();
    let (journal, _) = open(&storage).await;
    for sequence in 1..=10 {
        journal.append(&payload(sequence)).unwrap();
    }
    let path = dir().join(JOURNAL_FILE_NAME);
    journal.write_snapshot(6, b"state@6").await.unwrap();
    let compacted = storage.file_bytes(&path).unwrap().len();
    assert_eq!(
        compacted,
        (7..=10)
            .map(|s| ENTRY_HEADER_SIZE + payload(s).len())
            .sum::<usize>()
    );
    journal.append(&payload(11)).unwrap();
    journal.sync().await.unwrap();
    let (journal, recovery) = open(&storage.crash(CrashMode::Clean)).await;
    assert_eq!(
        recovery.snapshot,
        Some(Snapshot {
            sequence: 6,
            payload: b"state@6".to_vec()
        })
    );
    assert_eq!(
        recovery
            .records
            .iter()
            .map(|r| r.sequence)
            .collect::<Vec<_>>(),
        [7, 8, 9, 10, 11]
    );
    assert_eq!(journal.append(b"x").unwrap(), 12);
}

#[compio::test]
async fn given_failed_fsync_should_poison_the_journal() {
    let storage = SimStorage::new();
    let (journal, _) = open(&storage).await;
    let sequence = journal.append(b"op").unwrap();
    storage.set_faults(SimFaults {
        fail_next_sync: true,
        ..SimFaults::default()
    });
    assert!(matches!(
        journal.wait_durable(sequence).await,
        Err(StorageError::Poisoned { .. })
    ));
    assert!(matches!(
        journal.append(b"op"),
        Err(StorageError::Poisoned { .. })
    ));
    assert!(matches!(
        journal.sync().await,
        Err(StorageError::Poisoned { .. })
    ));
}

/// Appends, syncs and snapshots until the simulated crash; returns the
/// highest acknowledged-durable sequence.
async fn run_until_crash(storage: &SimStorage, rng: &mut StdRng) -> u64 {
    let Ok((journal, _)) = Journal::open(storage.clone(), dir()).await else {
        return 0;
    };
    let durable = Rc::new(RefCell::new(0u64));
    for _ in 0..60 {
        let Ok(sequence) = journal.append(&payload(journal.last_sequence() + 1)) else {
            break;
        };
        let outcome = match rng.random_range(0..10) {
            0..5 => journal.wait_durable(sequence).await,
            5 => journal.write_snapshot(sequence, &payload(sequence)).await,
            // A snapshot written beside the journal, covering all but the
            // newest record, which stays in the older file.
            6 if sequence > 1 => {
                let covered = sequence - 1;
                match journal.rotate().await {
                    Ok(()) => match journal.store_snapshot(covered, &payload(covered)).await {
                        Ok(()) => journal.compact(covered).await,
                        Err(error) => Err(error),
                    },
                    Err(error) => Err(error),
                }
            }
            _ => Ok(()),
        };
        match outcome {
            Ok(()) if journal.durable_sequence() >= sequence => *durable.borrow_mut() = sequence,
            Ok(()) => {}
            Err(_) => break,
        }
    }
    durable.take()
}

#[compio::test]
async fn given_crash_after_nth_sync_when_reopening_should_keep_every_durable_record() {
    for trial in 0..CRASH_TRIALS {
        let mut rng = StdRng::seed_from_u64(trial);
        let storage = SimStorage::new();
        let point = Some(rng.random_range(1..60));
        let faults = if rng.random_bool(0.5) {
            SimFaults {
                crash_after_syncs: point,
                ..SimFaults::default()
            }
        } else {
            SimFaults {
                crash_after_writes: point,
                ..SimFaults::default()
            }
        };
        storage.set_faults(faults);
        let durable = run_until_crash(&storage, &mut rng).await;
        let rebooted = storage.crash(CrashMode::Torn { seed: trial });
        let (_, recovery) = Journal::open(rebooted, dir())
            .await
            .unwrap_or_else(|e| panic!("trial {trial}: {e}"));
        let covered = recovery.snapshot.as_ref().map_or(0, |s| s.sequence);
        if let Some(snapshot) = &recovery.snapshot {
            assert_eq!(snapshot.payload, payload(snapshot.sequence));
        }
        for (index, record) in recovery.records.iter().enumerate() {
            assert_eq!(
                record.sequence,
                covered + 1 + index as u64,
                "trial {trial}: sequences continue the snapshot"
            );
            assert_eq!(record.payload, payload(record.sequence), "trial {trial}");
        }
        let last = recovery.records.last().map_or(covered, |r| r.sequence);
        assert!(
            last >= durable,
            "trial {trial}: durable record {durable} lost (recovered up to {last})"
        );
    }
}

#[compio::test]
async fn given_full_disk_when_syncing_should_keep_the_records_and_succeed_once_freed() {
    let storage = SimStorage::new();
    let (journal, _) = open(&storage).await;
    journal.append(&payload(1)).unwrap();
    journal.sync().await.unwrap();
    journal.append(&payload(2)).unwrap();
    storage.set_faults(SimFaults {
        no_space: true,
        ..SimFaults::default()
    });
    let error = journal.sync().await.unwrap_err();
    assert!(matches!(error, StorageError::NoSpace { .. }), "{error}");
    let snapshot = journal.write_snapshot(1, b"state").await;
    assert!(matches!(snapshot, Err(StorageError::NoSpace { .. })));
    journal.append(&payload(3)).unwrap();
    storage.set_faults(SimFaults::default());
    journal.sync().await.unwrap();
    let (_, recovery) = open(&storage.crash(CrashMode::Clean)).await;
    let sequences: Vec<u64> = recovery.records.iter().map(|r| r.sequence).collect();
    assert_eq!(sequences, [1, 2, 3], "nothing lost, nothing doubled");
    assert_eq!(recovery.records[1].payload, payload(2));
}

#[compio::test]
async fn given_a_cut_after_a_record_when_crashing_should_keep_only_the_prefix_and_continue_it() {
    let storage = SimStorage::new();
    let (journal, _) = open(&storage).await;
    for expected in 1..=5 {
        journal.append(&payload(expected)).unwrap();
    }
    journal.sync().await.unwrap();
    journal.append(&payload(6)).unwrap(); // pending, then cut too
    journal.truncate_after(3).await.unwrap();
    assert_eq!(journal.last_sequence(), 3);
    assert_eq!(journal.durable_sequence(), 3);
    assert_eq!(journal.append(b"four again").unwrap(), 4);
    journal.sync().await.unwrap();
    let (journal, recovery) = open(&storage.crash(CrashMode::Clean)).await;
    let sequences: Vec<u64> = recovery.records.iter().map(|r| r.sequence).collect();
    assert_eq!(sequences, [1, 2, 3, 4]);
    assert_eq!(recovery.records[3].payload, b"four again");
    assert_eq!(journal.append(b"five").unwrap(), 5);
}

#[compio::test]
async fn given_a_cut_not_synced_again_when_crashing_should_still_be_cut() {
    let storage = SimStorage::new();
    let (journal, _) = open(&storage).await;
    for expected in 1..=4 {
        journal.append(&payload(expected)).unwrap();
    }
    journal.sync().await.unwrap();
    journal.truncate_after(1).await.unwrap();
    let (_, recovery) = open(&storage.crash(CrashMode::Clean)).await;
    let sequences: Vec<u64> = recovery.records.iter().map(|r| r.sequence).collect();
    assert_eq!(sequences, [1], "the cut is durable when it returns");
}

#[compio::test]
async fn given_an_installed_snapshot_when_reopening_should_resume_after_it_with_no_records() {
    let storage = SimStorage::new();
    let (journal, _) = open(&storage).await;
    for expected in 1..=3 {
        journal.append(&payload(expected)).unwrap();
    }
    journal.sync().await.unwrap();
    journal
        .install_snapshot(40, b"state at 40".to_vec())
        .await
        .unwrap();
    assert_eq!(journal.append(b"41").unwrap(), 41);
    journal.sync().await.unwrap();
    let (journal, recovery) = open(&storage.crash(CrashMode::Clean)).await;
    let snapshot = recovery.snapshot.expect("the installed snapshot");
    assert_eq!(
        (snapshot.sequence, snapshot.payload),
        (40, b"state at 40".to_vec())
    );
    let sequences: Vec<u64> = recovery.records.iter().map(|r| r.sequence).collect();
    assert_eq!(sequences, [41]);
    assert_eq!(journal.append(b"42").unwrap(), 42);
}

#[compio::test]
async fn given_compactions_cuts_and_pending_records_when_reopening_should_keep_exactly_the_live_records()
 {
    // Positions are tracked, not re-read: two compactions with records
    // pending across them, then a cut, must leave the file equal to what a
    // replay finds.
    let storage = SimStorage::new();
    let (journal, _) = open(&storage).await;
    for sequence in 1..=8 {
        journal.append(&payload(sequence)).unwrap();
    }
    journal.sync().await.unwrap();
    journal.append(&payload(9)).unwrap(); // pending across the compaction
    journal.write_snapshot(4, b"state@4").await.unwrap();
    for sequence in 10..=12 {
        journal.append(&payload(sequence)).unwrap();
    }
    journal.write_snapshot(9, b"state@9").await.unwrap();
    journal.append(&payload(13)).unwrap();
    journal.truncate_after(11).await.unwrap();
    assert_eq!(journal.append(b"twelve again").unwrap(), 12);
    journal.sync().await.unwrap();
    let path = dir().join(JOURNAL_FILE_NAME);
    let expected = [10, 11]
        .iter()
        .map(|&s| ENTRY_HEADER_SIZE + payload(s).len())
        .sum::<usize>()
        + ENTRY_HEADER_SIZE
        + b"twelve again".len();
    assert_eq!(storage.file_bytes(&path).unwrap().len(), expected);
    let (journal, recovery) = open(&storage.crash(CrashMode::Clean)).await;
    assert_eq!(recovery.snapshot.map(|s| s.sequence), Some(9));
    let sequences: Vec<u64> = recovery.records.iter().map(|r| r.sequence).collect();
    assert_eq!(sequences, [10, 11, 12]);
    assert_eq!(recovery.records[2].payload, b"twelve again");
    assert_eq!(journal.append(b"x").unwrap(), 13);
}

#[compio::test]
async fn given_unsynced_records_when_snapshotting_should_not_fsync_the_covered_ones_yet_keep_the_rest_durable()
 {
    let (storage, syncs) = snapshot_of_six_written_records(false).await;
    // The snapshot (file, directory) and the rewrite (file, directory):
    // nothing for the old file, whose records 1..=4 the snapshot replaces.
    assert_eq!(syncs, 4, "no fsync of the old file");
    let (_, recovery) = open(&storage.crash(CrashMode::Clean)).await;
    assert_eq!(recovery.snapshot.map(|s| s.sequence), Some(4));
    let kept: Vec<u64> = recovery.records.iter().map(|r| r.sequence).collect();
    assert_eq!(
        kept,
        [5, 6],
        "the records after the snapshot survive a power loss"
    );
}

#[compio::test]
async fn given_unsynced_records_mode_when_snapshotting_should_sync_only_the_snapshot_and_recover_after_any_crash()
 {
    for mode in [CrashMode::Process, CrashMode::Clean] {
        let (storage, syncs) = snapshot_of_six_written_records(true).await;
        assert_eq!(syncs, 2, "the snapshot's file and directory only");
        let (_, recovery) = open(&storage.crash(mode)).await;
        assert_eq!(recovery.snapshot.map(|s| s.sequence), Some(4));
        let kept: Vec<u64> = recovery.records.iter().map(|r| r.sequence).collect();
        if mode == CrashMode::Process {
            assert_eq!(kept, [5, 6], "a process kill keeps the page cache");
        } else {
            // A power loss may drop the unsynced records, never leave a gap
            // after the snapshot.
            assert!(kept.is_empty() || kept == [5] || kept == [5, 6], "{kept:?}");
        }
    }
}

#[compio::test]
async fn given_direct_io_when_syncing_snapshotting_cutting_and_crashing_should_keep_every_durable_record()
 {
    let storage = SimStorage::new();
    let (journal, _) = open(&storage).await;
    journal.append(&payload(1)).unwrap();
    journal.sync().await.unwrap();
    assert!(
        journal.use_direct_io().await.unwrap(),
        "the simulated disk has direct I/O"
    );
    // Records of odd sizes, so writes rewrite partial blocks.
    for sequence in 2..=9 {
        journal
            .append(&vec![sequence as u8; 1000 + 777 * sequence as usize])
            .unwrap();
        journal.sync().await.unwrap();
        assert_eq!(journal.durable_sequence(), sequence);
    }
    journal.write_snapshot(4, b"state@4").await.unwrap();
    journal.append(&payload(10)).unwrap();
    journal.sync().await.unwrap();
    journal.truncate_after(8).await.unwrap();
    journal.append(&payload(9)).unwrap();
    journal.sync().await.unwrap();
    let storage = storage.crash(CrashMode::Clean);
    let (reopened, recovery) = open(&storage).await;
    assert_eq!(recovery.snapshot.map(|s| s.sequence), Some(4));
    let kept: Vec<u64> = recovery.records.iter().map(|r| r.sequence).collect();
    assert_eq!(
        kept,
        [5, 6, 7, 8, 9],
        "every synced record survives a power loss"
    );
    assert_eq!(recovery.records[0].payload, vec![5u8; 1000 + 777 * 5]);
    assert_eq!(recovery.records[4].payload, payload(9));
    assert_eq!(recovery.truncated_tail, None, "padding is not a torn tail");
    // The reopened journal continues, direct again.
    assert!(reopened.use_direct_io().await.unwrap());
    reopened.append(&payload(10)).unwrap();
    reopened.sync().await.unwrap();
    let (_, recovery) = open(&storage.crash(CrashMode::Clean)).await;
    let kept: Vec<u64> = recovery.records.iter().map(|r| r.sequence).collect();
    assert_eq!(kept, [5, 6, 7, 8, 9, 10]);
}

/// Appends records 1..=6, writes them without an fsync, snapshots at 4;
/// the storage and the fsyncs the snapshot took.
async fn snapshot_of_six_written_records(unsynced_records: bool) -> (SimStorage, u64) {
    let storage = SimStorage::new();
    let (journal, _) = open(&storage).await;
    journal.set_unsynced_records(unsynced_records);
    for sequence in 1..=6 {
        journal.append(&payload(sequence)).unwrap();
    }
    journal.write_out().await.unwrap();
    let before = storage.syncs_done();
    journal.write_snapshot(4, b"state@4").await.unwrap();
    (storage.clone(), storage.syncs_done() - before)
}

#[compio::test]
async fn given_snapshot_slots_when_snapshotting_and_crashing_should_recover_the_newest_with_one_fsync_each()
 {
    let storage = SimStorage::new();
    let (journal, _) = open(&storage).await;
    journal.use_snapshot_slots();
    journal.set_unsynced_records(true);
    for sequence in 1..=12 {
        journal.append(&payload(sequence)).unwrap();
    }
    journal.write_out().await.unwrap();
    // The first snapshot creates the file (atomically), the next ones
    // overwrite a slot in place: one fdatasync, nothing else.
    journal.write_snapshot(3, b"state@3").await.unwrap();
    for sequence in [6, 8] {
        let before = storage.syncs_done();
        let state = format!("state@{sequence}").into_bytes();
        journal.write_snapshot(sequence, &state).await.unwrap();
        assert_eq!(storage.syncs_done() - before, 1, "one fdatasync");
    }
    // A snapshot larger than a slot rewrites the file with bigger slots.
    journal.write_snapshot(9, &[9u8; 10_000]).await.unwrap();
    journal.write_snapshot(10, b"state@10").await.unwrap();
    assert!(
        !storage
            .exists(&dir().join(SNAPSHOT_FILE_NAME))
            .await
            .unwrap(),
        "no snapshot.bin is written"
    );
    let storage = storage.crash(CrashMode::Process);
    let (reopened, recovery) = open(&storage).await;
    let snapshot = recovery.snapshot.unwrap();
    assert_eq!(
        (snapshot.sequence, snapshot.payload),
        (10, b"state@10".to_vec())
    );
    let kept: Vec<u64> = recovery.records.iter().map(|r| r.sequence).collect();
    assert_eq!(kept, [11, 12]);
    // Reopened, it overwrites the older slot (the one holding 9), so a
    // power loss after this snapshot finds it, and before it finds 10.
    reopened.use_snapshot_slots();
    reopened.write_snapshot(11, b"state@11").await.unwrap();
    let (_, recovery) = open(&storage.crash(CrashMode::Clean)).await;
    let snapshot = recovery.snapshot.unwrap();
    assert_eq!(
        (snapshot.sequence, snapshot.payload),
        (11, b"state@11".to_vec())
    );
}

fn file_exists(storage: &SimStorage, name: &str) -> bool {
    storage.file_bytes(&dir().join(name)).is_some()
}

#[compio::test]
async fn given_snapshots_stored_beside_appends_when_compacting_should_drop_whole_files_and_recover_after_any_crash()
 {
    for mode in [CrashMode::Process, CrashMode::Clean] {
        for unsynced in [true, false] {
            let storage = SimStorage::new();
            let (journal, _) = open(&storage).await;
            journal.use_snapshot_slots();
            journal.set_unsynced_records(unsynced);
            for sequence in 1..=6 {
                journal.append(&payload(sequence)).unwrap();
            }
            journal.sync().await.unwrap();
            // A checkpoint at 4 (6 in the pipeline): new records go to a
            // new file while the snapshot is written beside them.
            journal.rotate().await.unwrap();
            let storing = {
                let journal = journal.clone();
                compio::runtime::spawn(async move { journal.store_snapshot(4, b"state@4").await })
            };
            for sequence in 7..=9 {
                journal.append(&payload(sequence)).unwrap();
                journal.sync().await.unwrap();
            }
            storing.await.unwrap().unwrap();
            journal.compact(4).await.unwrap();
            assert!(
                file_exists(&storage, JOURNAL_FILE_NAME),
                "5 and 6 live there"
            );
            // The next one at 8 drops the first file whole, no copy.
            journal.rotate().await.unwrap();
            journal.store_snapshot(8, b"state@8").await.unwrap();
            journal.append(&payload(10)).unwrap();
            journal.sync().await.unwrap();
            journal.compact(8).await.unwrap();
            // The covered file is removed by a task beside the caller.
            for _ in 0..10 {
                let _ = compio::runtime::spawn(async {}).await;
            }
            assert!(!file_exists(&storage, JOURNAL_FILE_NAME));
            assert!(file_exists(&storage, "journal.7.wal"), "9 lives there");
            assert!(file_exists(&storage, "journal.10.wal"));
            let (reopened, recovery) = open(&storage.crash(mode)).await;
            assert_eq!(recovery.snapshot.map(|s| s.sequence), Some(8));
            let kept: Vec<u64> = recovery.records.iter().map(|r| r.sequence).collect();
            if mode == CrashMode::Process || !unsynced {
                assert_eq!(kept, [9, 10], "{mode:?} unsynced {unsynced}");
            } else {
                assert!(
                    kept.is_empty() || kept == [9] || kept == [9, 10],
                    "{kept:?}"
                );
            }
            let next = kept.last().map_or(9, |last| last + 1);
            assert_eq!(reopened.append(b"next").unwrap(), next);
        }
    }
}

#[compio::test]
async fn given_a_cut_below_the_active_file_when_reopening_should_keep_only_the_prefix_and_continue_in_its_file()
 {
    let storage = SimStorage::new();
    let (journal, _) = open(&storage).await;
    for sequence in 1..=5 {
        journal.append(&payload(sequence)).unwrap();
    }
    journal.rotate().await.unwrap();
    for sequence in 6..=8 {
        journal.append(&payload(sequence)).unwrap();
    }
    journal.rotate().await.unwrap();
    journal.append(&payload(9)).unwrap();
    journal.sync().await.unwrap();
    journal.truncate_after(3).await.unwrap();
    assert!(!file_exists(&storage, "journal.6.wal"));
    assert!(!file_exists(&storage, "journal.9.wal"));
    assert_eq!(journal.append(b"four again").unwrap(), 4);
    journal.sync().await.unwrap();
    let (reopened, recovery) = open(&storage.crash(CrashMode::Clean)).await;
    let kept: Vec<u64> = recovery.records.iter().map(|r| r.sequence).collect();
    assert_eq!(kept, [1, 2, 3, 4]);
    assert_eq!(recovery.records[3].payload, b"four again");
    assert_eq!(reopened.append(b"x").unwrap(), 5);
}

#[compio::test]
async fn given_a_file_that_starts_past_a_lost_tail_when_opening_should_end_the_journal_at_the_gap()
{
    let storage = SimStorage::new();
    let (journal, _) = open(&storage).await;
    for sequence in 1..=3 {
        journal.append(&payload(sequence)).unwrap();
    }
    journal.sync().await.unwrap();
    // Records 4 and 5 were lost from the first file; the next file holds 6.
    let mut later = Vec::new();
    format::encode_entry(6, &payload(6), &mut later);
    let path = dir().join("journal.6.wal");
    storage.create(&path).await.unwrap();
    storage.sync_dir(dir()).await.unwrap();
    storage.overwrite_durably(&path, later).unwrap();
    let storage = storage.crash(CrashMode::Clean);
    let (reopened, recovery) = open(&storage).await;
    let kept: Vec<u64> = recovery.records.iter().map(|r| r.sequence).collect();
    assert_eq!(kept, [1, 2, 3]);
    assert!(recovery.truncated_tail.is_some());
    assert!(!file_exists(&storage, "journal.6.wal"), "dropped");
    assert_eq!(reopened.append(b"x").unwrap(), 4);
}

#[compio::test]
async fn given_recycled_files_when_rotating_and_killed_at_each_step_should_recover_exactly_the_records_written()
 {
    let storage = SimStorage::new();
    let (journal, _) = open(&storage).await;
    journal.use_snapshot_slots();
    journal.set_unsynced_records(true);
    journal.use_recycled_files();
    let mut rng = StdRng::seed_from_u64(7);
    let body = |sequence: u64, len: usize| vec![sequence as u8; len];
    let mut lens = std::collections::BTreeMap::new();
    let check = |lens: &std::collections::BTreeMap<u64, usize>, storage: &SimStorage| {
        let lens = lens.clone();
        let storage = storage.peek_crash(CrashMode::Process);
        async move {
            let (reopened, recovery) = open(&storage).await;
            let covered = recovery.snapshot.as_ref().map_or(0, |s| s.sequence);
            let expected: Vec<(u64, Vec<u8>)> = lens
                .range(covered + 1..)
                .map(|(&s, &len)| (s, body(s, len)))
                .collect();
            let found: Vec<(u64, Vec<u8>)> = recovery
                .records
                .into_iter()
                .map(|r| (r.sequence, r.payload))
                .collect();
            assert_eq!(found, expected, "a process kill keeps every written record");
            drop(reopened);
        }
    };
    for cycle in 0..8u64 {
        for _ in 0..rng.random_range(1..6) {
            let sequence = journal.last_sequence() + 1;
            let len = rng.random_range(1..3_000);
            assert_eq!(journal.append(&body(sequence, len)).unwrap(), sequence);
            lens.insert(sequence, len);
        }
        journal.write_out().await.unwrap();
        check(&lens, &storage).await;
        let covered = journal.last_sequence() - 1;
        journal.rotate().await.unwrap();
        check(&lens, &storage).await;
        journal
            .store_snapshot(covered, &payload(covered))
            .await
            .unwrap();
        journal.compact(covered).await.unwrap();
        check(&lens, &storage).await;
        if cycle >= 2 {
            assert!(
                file_exists(&storage, SPARE_FILE_NAME),
                "cycle {cycle}: a spare is kept"
            );
        }
    }
    // Written over older files, shorter than what they held.
    let listed = storage.read_dir(dir()).await.unwrap();
    assert!(
        listed
            .iter()
            .any(|name| name.ends_with(".rwal") && name != SPARE_FILE_NAME),
        "{listed:?}"
    );
    // A cut below the active file, then a clean reopen.
    let last = journal.last_sequence();
    journal.truncate_after(last - 2).await.unwrap();
    lens.retain(|&s, _| s <= last - 2);
    check(&lens, &storage).await;
}

/// Random runs of what a partition group does to its journal (appends,
/// writes, rotations, snapshots beside the appends, compactions, cuts),
/// with and without recycled files; after every step a process kill must
/// recover the newest stored snapshot and exactly the written records
/// above it, and a power loss (clean or torn) that snapshot and a prefix of
/// them.
#[compio::test]
async fn given_random_rotations_snapshots_and_cuts_when_killed_after_any_step_should_recover_the_written_records()
 {
    for trial in 0..150u64 {
        let mut rng = StdRng::seed_from_u64(1_000 + trial);
        let recycle = trial % 2 == 0;
        let storage = SimStorage::new();
        let (journal, _) = open(&storage).await;
        journal.use_snapshot_slots();
        journal.set_unsynced_records(true);
        if recycle {
            journal.use_recycled_files();
        }
        let body = |sequence: u64, len: usize| vec![(sequence % 251) as u8; len];
        let mut model: BTreeMap<u64, usize> = BTreeMap::new();
        let mut written = 0u64;
        let mut snapshot = 0u64;
        for step in 0..120 {
            let last = journal.last_sequence();
            match rng.random_range(0..10) {
                0..4 => {
                    let len = rng.random_range(1..2_500);
                    journal.append(&body(last + 1, len)).unwrap();
                    model.insert(last + 1, len);
                }
                4 | 5 => {
                    journal.write_out().await.unwrap();
                    written = last;
                }
                6 => {
                    journal.rotate().await.unwrap();
                    written = last;
                }
                7 | 8 if written > snapshot => {
                    let covered = rng.random_range(snapshot + 1..=written);
                    journal
                        .store_snapshot(covered, &payload(covered))
                        .await
                        .unwrap();
                    snapshot = covered;
                    if rng.random_bool(0.8) {
                        journal.compact(covered).await.unwrap();
                    }
                }
                9 if last > snapshot => {
                    let cut = rng.random_range(snapshot..last);
                    journal.truncate_after(cut).await.unwrap();
                    model.retain(|&s, _| s <= cut);
                    written = cut;
                }
                _ => {}
            }
            // The covered files' removal runs beside; let it.
            let _ = compio::runtime::spawn(async {}).await;
            let image = storage.peek_crash(CrashMode::Process);
            let (_, recovery) = Journal::open(image, dir())
                .await
                .unwrap_or_else(|e| panic!("trial {trial} step {step}: {e}"));
            let covered = recovery.snapshot.as_ref().map_or(0, |s| s.sequence);
            assert_eq!(
                covered, snapshot,
                "trial {trial} step {step}: the newest snapshot"
            );
            let expected: Vec<(u64, Vec<u8>)> = model
                .range(snapshot + 1..)
                .filter(|&(&s, _)| s <= written)
                .map(|(&s, &len)| (s, body(s, len)))
                .collect();
            let found: Vec<(u64, Vec<u8>)> = recovery
                .records
                .into_iter()
                .map(|r| (r.sequence, r.payload))
                .collect();
            assert_eq!(
                found, expected,
                "trial {trial} step {step} (recycle {recycle})"
            );
            // A power loss keeps the snapshot and a prefix of the rest.
            let mode = if step % 2 == 0 {
                CrashMode::Clean
            } else {
                CrashMode::Torn {
                    seed: trial * 1_000 + step,
                }
            };
            let image = storage.peek_crash(mode);
            let listing: Vec<(String, Vec<u64>)> = image
                .read_dir(dir())
                .await
                .unwrap()
                .into_iter()
                .map(|name| {
                    let bytes = image.file_bytes(&dir().join(&name)).unwrap_or_default();
                    let seqs = replay::replay_recycled(&bytes, None)
                        .records
                        .iter()
                        .map(|r| r.sequence)
                        .collect();
                    (name, seqs)
                })
                .collect();
            let (_, recovery) = Journal::open_unsynced(image, dir())
                .await
                .unwrap_or_else(|e| {
                    panic!(
                        "trial {trial} step {step} {mode:?}: {e}; {listing:?}; snapshot {snapshot}"
                    )
                });
            assert_eq!(
                recovery.snapshot.map(|s| s.sequence),
                Some(snapshot).filter(|&s| s > 0)
            );
            let kept: Vec<(u64, Vec<u8>)> = recovery
                .records
                .into_iter()
                .map(|r| (r.sequence, r.payload))
                .collect();
            assert!(
                expected.starts_with(&kept),
                "trial {trial} step {step} {mode:?}: {:?} not a prefix",
                kept.iter().map(|r| r.0).collect::<Vec<_>>()
            );
        }
    }
}
