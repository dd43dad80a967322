use super::*;
use crate::error::StorageError;
use crate::partition::{INDEX_ENTRY_SIZE, IndexEntry, segment_file_name};

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
    let stamped = log
        .read(0, 100, u64::MAX)
        .await
        .unwrap()
        .iter()
        .map(PolledRecord::to_record)
        .collect();
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
    assert_eq!(log.last_offset(), Some(3));
    let read: Vec<Vec<u8>> = log
        .read(0, 100, u64::MAX)
        .await
        .unwrap()
        .iter()
        .map(PolledRecord::to_record)
        .collect();
    assert_eq!(read, stamped[..2]);
    assert!(
        report.next_offset >= 6,
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
    assert_eq!(log.last_offset(), Some(3));
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
    assert_eq!(log.last_offset(), Some(5));
}

#[compio::test]
async fn given_missing_or_bogus_index_when_opening_should_rebuild_it() {
    let storage = SimStorage::new();
    three_batches(&storage).await;
    let good = IndexEntry::decode_all(&file(&storage, &index_path(0)));
    assert_eq!(good.len(), 3, "one entry per flushed chunk");
    assert_eq!(good[1].offset, 2);
    let mut bogus = good[0].encode().to_vec();
    bogus.extend_from_slice(
        &IndexEntry {
            offset: 2,
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
        messages_of(&log.read(4, 10, u64::MAX).await.unwrap()).len(),
        2
    );
    log.close().await.unwrap();

    let dir_names = crate::seam::Storage::read_dir(&storage, &dir())
        .await
        .unwrap();
    assert!(dir_names.contains(&segment_file_name(0, "index")));
    crate::seam::Storage::remove_file(&storage, &index_path(0))
        .await
        .unwrap();
    let (log, report) = open(&storage, small_options()).await;
    assert_eq!(report.indexes_rebuilt, [index_path(0)]);
    assert_eq!(
        messages_of(&log.read(0, 10, u64::MAX).await.unwrap()).len(),
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
    assert_eq!(log.segments()[1].start_offset, 6);
    assert_eq!(log.append(record(7, 1, 10), 99).unwrap().base_offset, 6);
}
