use super::*;
use crate::error::StorageError;
use crate::offset::Offset;
use crate::partition::{DIRECT_IO_ALIGN, INDEX_ENTRY_SIZE, IndexEntry, segment_file_name};
use crate::seam::CrashMode;

/// A log with three flushed batches (offsets 0..6) in segment 0, closed.
async fn three_batches(storage: &SimStorage) -> Vec<Vec<u8>> {
    let (log, _) = open(
        storage,
        LogOptions {
            cache_size_bytes: 1 << 20,
            ..small_options()
        },
    )
    .await;
    for tag in 0..3 {
        log.append(record(tag, 2, 60), 10 + tag).unwrap();
        log.flush().await.unwrap();
    }
    let stamped = all_records(&log).await;
    log.close().await.unwrap();
    stamped
}

#[compio::test]
async fn given_incomplete_last_record_when_opening_should_truncate_to_last_whole_record() {
    let storage = SimStorage::new();
    let stamped = three_batches(&storage).await;
    let mut bytes = file(&storage, &log_path(0));
    bytes.truncate(bytes.len() - 17);
    storage.overwrite_durably(&log_path(0), bytes).unwrap();
    let (log, report) = open(&storage, small_options()).await;
    let keep = (stamped[0].len() + stamped[1].len()) as u64;
    assert_eq!(report.truncated.len(), 1);
    assert_eq!(
        (
            report.truncated[0].position,
            report.truncated[0].file.clone()
        ),
        (keep, log_path(0))
    );
    assert_eq!(file(&storage, &log_path(0)).len() as u64, keep);
    assert_eq!(log.last_offset(), Some(Offset(3)));
    let read = all_records(&log).await;
    assert_eq!(read, stamped[..2]);
    assert!(
        report.next_offset >= Offset(6),
        "offsets of the dropped batch are not reused"
    );
}

#[compio::test]
async fn given_bad_checksum_in_last_record_when_opening_should_treat_it_as_torn() {
    let storage = SimStorage::new();
    three_batches(&storage).await;
    let mut bytes = file(&storage, &log_path(0));
    let last = bytes.len() - 5;
    bytes[last] ^= 1;
    storage.overwrite_durably(&log_path(0), bytes).unwrap();
    let (log, report) = open(&storage, small_options()).await;
    assert!(
        report.truncated[0].reason.contains("invalid last record"),
        "{:?}",
        report.truncated
    );
    assert_eq!(log.last_offset(), Some(Offset(3)));
}

#[compio::test]
async fn given_corrupt_record_before_valid_data_when_opening_should_refuse_naming_file_and_position()
 {
    let storage = SimStorage::new();
    let stamped = three_batches(&storage).await;
    let mut bytes = file(&storage, &log_path(0));
    let second = stamped[0].len();
    bytes[second + 280] ^= 1;
    storage
        .overwrite_durably(&log_path(0), bytes.clone())
        .unwrap();
    let error = PartitionLog::open(storage.clone(), &dir(), small_options())
        .await
        .err()
        .expect("must refuse");
    assert!(
        matches!(&error, StorageError::Corrupt { file: f, position, .. } if *f == log_path(0) && *position == second as u64),
        "{error}"
    );
    assert_eq!(
        file(&storage, &log_path(0)),
        bytes,
        "nothing is changed on refusal"
    );
}

#[compio::test]
async fn given_zero_filled_tail_when_opening_should_truncate_it() {
    let storage = SimStorage::new();
    three_batches(&storage).await;
    let mut bytes = file(&storage, &log_path(0));
    let len = bytes.len() as u64;
    bytes.extend_from_slice(&[0; 5000]);
    storage.overwrite_durably(&log_path(0), bytes).unwrap();
    let (log, report) = open(&storage, small_options()).await;
    assert_eq!(
        (
            report.truncated[0].position,
            report.truncated[0].dropped_bytes
        ),
        (len, 5000)
    );
    assert_eq!(log.last_offset(), Some(Offset(5)));
}

#[compio::test]
async fn given_missing_or_bogus_index_when_opening_should_rebuild_it() {
    let storage = SimStorage::new();
    three_batches(&storage).await;
    let good = IndexEntry::decode_all(&file(&storage, &index_path(0)));
    assert_eq!(good.len(), 3, "one entry per flushed chunk");
    assert_eq!(good[1].offset, Offset(2));
    let mut bogus = good[0].encode().to_vec();
    bogus.extend_from_slice(
        &IndexEntry {
            offset: Offset(2),
            timestamp: 11,
            position: 7,
        }
        .encode(),
    );
    bogus.extend_from_slice(&[1, 2, 3]);
    storage.overwrite_durably(&index_path(0), bogus).unwrap();
    let (log, report) = open(&storage, small_options()).await;
    assert_eq!(report.indexes_rebuilt, [index_path(0)]);
    assert_eq!(
        IndexEntry::decode_all(&file(&storage, &index_path(0)))[0],
        good[0]
    );
    assert_eq!(file(&storage, &index_path(0)).len() % INDEX_ENTRY_SIZE, 0);
    assert_eq!(
        messages_of(&log.read(Offset(4), 10, u64::MAX).await.unwrap()).len(),
        2
    );
    log.close().await.unwrap();

    let dir_names = crate::seam::Storage::read_dir(&storage, &dir())
        .await
        .unwrap();
    assert!(dir_names.contains(&segment_file_name(Offset(0), "index")));
    crate::seam::Storage::remove_file(&storage, &index_path(0))
        .await
        .unwrap();
    let (log, report) = open(&storage, small_options()).await;
    assert_eq!(report.indexes_rebuilt, [index_path(0)]);
    assert_eq!(
        messages_of(&log.read(Offset(0), 10, u64::MAX).await.unwrap()).len(),
        6
    );
}

#[compio::test]
async fn given_full_recovered_segment_when_opening_should_start_a_new_active_segment() {
    let storage = SimStorage::new();
    three_batches(&storage).await;
    let options = LogOptions {
        segment_size_bytes: 512,
        ..small_options()
    };
    let (log, report) = open(&storage, options).await;
    assert_eq!(report.segments, 2);
    assert_eq!(log.segments()[1].start_offset, Offset(6));
    assert_eq!(
        log.append(record(7, 1, 10), 99).unwrap().base_offset,
        Offset(6)
    );
}

fn direct_options() -> LogOptions {
    LogOptions {
        direct_io: true,
        direct_sync: true,
        segment_size_bytes: 1 << 20,
        cache_size_bytes: 1 << 20,
        ..small_options()
    }
}

#[compio::test]
async fn given_direct_io_when_writing_should_pad_blocks_and_trim_them_at_close() {
    let storage = SimStorage::new();
    let (log, _) = open(&storage, direct_options()).await;
    let mut stamped = Vec::new();
    for tag in 0..3 {
        let receipt = log.append(record(tag, 2, 60), 10 + tag).unwrap();
        log.wait_durable(receipt.last_offset).await.unwrap();
        stamped.extend(log.read(receipt.base_offset, 2, u64::MAX).await.unwrap());
    }
    let logical: usize = stamped.iter().map(|r| r.to_record().len()).sum();
    let on_disk = file(&storage, &log_path(0));
    assert_eq!(on_disk.len() as u64, DIRECT_IO_ALIGN, "padded to a block");
    assert!(on_disk[logical..].iter().all(|&b| b == 0));
    log.close().await.unwrap();
    assert_eq!(file(&storage, &log_path(0)).len(), logical);
    let (log, report) = open(&storage, direct_options()).await;
    assert!(report.truncated.is_empty());
    let read = all_records(&log).await;
    assert_eq!(
        read,
        stamped
            .iter()
            .map(PolledRecord::to_record)
            .collect::<Vec<_>>()
    );
}

#[compio::test]
async fn given_direct_io_padding_after_a_crash_when_opening_should_drop_it_quietly() {
    let storage = SimStorage::new();
    let (log, _) = open(&storage, direct_options()).await;
    let receipt = log.append(record(1, 3, 50), 10).unwrap();
    log.wait_durable(receipt.last_offset).await.unwrap();
    let logical = log.read(Offset(0), 3, u64::MAX).await.unwrap()[0]
        .to_record()
        .len();
    let rebooted = storage.crash(CrashMode::Clean);
    let (log, report) = open(&rebooted, direct_options()).await;
    assert!(report.truncated.is_empty(), "padding is not a torn tail");
    assert_eq!(file(&rebooted, &log_path(0)).len(), logical);
    assert_eq!(log.last_offset(), Some(Offset(2)));
    let receipt = log.append(record(2, 1, 50), 20).unwrap();
    log.wait_durable(receipt.last_offset).await.unwrap();
    assert_eq!(log.read(Offset(0), 10, u64::MAX).await.unwrap().len(), 2);
}

#[compio::test]
async fn given_a_lost_rewrite_of_a_padded_block_when_opening_should_cut_the_unsynced_tail() {
    let storage = SimStorage::new();
    let (log, _) = open(&storage, direct_options()).await;
    let receipt = log.append(record(1, 2, 60), 10).unwrap();
    log.wait_durable(receipt.last_offset).await.unwrap();
    let first = log.read(Offset(0), 2, u64::MAX).await.unwrap()[0].to_record();
    log.close().await.unwrap();
    // The block after the first record stayed zero (its rewrite was lost),
    // while a later block of the same unsynced write reached the disk.
    let later = record(2, 1, 60);
    let mut bytes = first.clone();
    bytes.resize(DIRECT_IO_ALIGN as usize, 0);
    bytes.extend_from_slice(&later);
    storage.overwrite_durably(&log_path(0), bytes).unwrap();
    let (log, report) = open(&storage, direct_options()).await;
    assert_eq!(report.truncated.len(), 1);
    assert_eq!(report.truncated[0].position, first.len() as u64);
    assert_eq!(log.last_offset(), Some(Offset(1)));
}

#[compio::test]
async fn given_direct_io_on_a_real_filesystem_when_reopening_should_read_every_record() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("partition");
    let open_real = || PartitionLog::open(crate::seam::RealStorage, &dir, direct_options());
    let (log, _) = open_real().await.unwrap();
    let mut expected = Vec::new();
    for tag in 0..20 {
        let receipt = log.append(record(tag, 3, 333), 10 + tag).unwrap();
        log.wait_durable(receipt.last_offset).await.unwrap();
        expected.extend(log.read(receipt.base_offset, 3, u64::MAX).await.unwrap());
    }
    let expected: Vec<Vec<u8>> = expected.iter().map(PolledRecord::to_record).collect();
    let logical: usize = expected.iter().map(Vec::len).sum();
    let segment = dir.join(segment_file_name(Offset(0), "log"));
    let padded = std::fs::metadata(&segment).unwrap().len();
    if direct_io_supported(&segment) {
        assert_eq!(padded, (logical as u64).next_multiple_of(DIRECT_IO_ALIGN));
    }
    drop(log);
    // Reopened without a clean close: the padding is dropped as such.
    let (log, report) = open_real().await.unwrap();
    assert!(report.truncated.is_empty(), "{report:?}");
    assert_eq!(std::fs::metadata(&segment).unwrap().len(), logical as u64);
    let receipt = log.append(record(99, 1, 10), 1_000).unwrap();
    log.wait_durable(receipt.last_offset).await.unwrap();
    log.close().await.unwrap();
    let (log, _) = open_real().await.unwrap();
    let read = all_records(&log).await;
    assert_eq!(read.len(), expected.len() + 1);
    assert_eq!(read[..expected.len()], expected[..]);
}

fn direct_io_supported(path: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .is_ok()
}

#[compio::test]
async fn given_asynchronous_direct_io_when_crashing_should_keep_only_what_was_synced() {
    let storage = SimStorage::new();
    let options = LogOptions {
        direct_sync: false,
        ..direct_options()
    };
    let (log, _) = open(&storage, options.clone()).await;
    let durable = log.append(record(1, 2, 60), 10).unwrap();
    log.wait_durable(durable.last_offset).await.unwrap();
    log.append(record(2, 2, 60), 20).unwrap();
    log.flush().await.unwrap();
    let rebooted = storage.crash(CrashMode::Clean);
    let (log, _) = open(&rebooted, options).await;
    assert_eq!(
        log.last_offset(),
        Some(Offset(1)),
        "the flushed, unsynced batch is gone"
    );
    assert_eq!(all_records(&log).await.len(), 1);
}

#[compio::test]
async fn given_direct_writes_refused_when_flushing_should_fall_back_to_the_page_cache() {
    let storage = SimStorage::new();
    storage.set_faults(crate::seam::SimFaults {
        refuse_direct_writes: true,
        ..Default::default()
    });
    let (log, _) = open(&storage, direct_options()).await;
    for tag in 0..5 {
        let receipt = log.append(record(tag, 2, 60), 10 + tag).unwrap();
        log.wait_durable(receipt.last_offset).await.unwrap();
    }
    let written = all_records(&log).await;
    let rebooted = storage.crash(CrashMode::Clean);
    let (log, report) = open(&rebooted, direct_options()).await;
    assert!(report.truncated.is_empty());
    assert_eq!(all_records(&log).await, written);
}
