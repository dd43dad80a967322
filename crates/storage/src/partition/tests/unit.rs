use std::rc::Rc;

use protocol::batch::{
    BATCH_HEADER_SIZE, BatchHeader, MESSAGE_HEADER_SIZE, Verify, validate_record,
};

use super::*;
use crate::error::StorageError;
use crate::offset::Offset;
use crate::partition::INDEX_ENTRY_SIZE;
use crate::seam::{CrashMode, SimFaults};

#[compio::test]
async fn given_fresh_log_when_appending_should_stamp_consecutive_offsets() {
    let storage = SimStorage::new();
    let (log, report) = open(&storage, small_options()).await;
    assert_eq!(report.next_offset, Offset(0));
    assert_eq!(log.last_offset(), None);
    let first = log.append(record(1, 3, 10), 500).unwrap();
    let second = log.append(record(2, 2, 10), 400).unwrap();
    assert_eq!(
        (first.base_offset, first.last_offset),
        (Offset(0), Offset(2))
    );
    assert_eq!(
        (second.base_offset, second.last_offset),
        (Offset(3), Offset(4))
    );
    assert_eq!(second.base_timestamp, 500, "timestamps never go backwards");
    assert_eq!(log.last_offset(), Some(Offset(4)));
    assert_eq!(log.messages_count(), 5);
    let polled = log.read(Offset(0), 10, u64::MAX).await.unwrap();
    let header = BatchHeader::read(&polled[0].to_record()).unwrap();
    assert_eq!(
        (
            header.partition_id,
            header.base_offset,
            header.base_timestamp
        ),
        (1, 0, 500)
    );
    validate_record(&polled[1].to_record(), Verify::Checksums).unwrap();
}

#[compio::test]
async fn given_invalid_record_when_appending_should_reject_without_consuming_offsets() {
    let storage = SimStorage::new();
    let (log, _) = open(&storage, small_options()).await;
    let mut bad = record(1, 2, 10);
    bad.pop();
    assert!(matches!(
        log.append(bad, 1),
        Err(StorageError::InvalidRecord { .. })
    ));
    assert_eq!(log.next_offset(), Offset(0));
}

#[compio::test]
async fn given_flushed_batches_beyond_cache_when_reading_should_serve_identical_bytes_from_disk() {
    let storage = SimStorage::new();
    let options = LogOptions {
        cache_size_bytes: 0,
        ..small_options()
    };
    let (log, _) = open(&storage, options).await;
    let mut stamped = Vec::new();
    for tag in 0..6 {
        let receipt = log.append(record(tag, 2, 40), 1_000 + tag).unwrap();
        stamped.push(log.read(receipt.base_offset, 2, u64::MAX).await.unwrap()[0].to_record());
    }
    log.flush().await.unwrap();
    assert_eq!(log.unflushed_bytes(), 0);
    let polled = log.read(Offset(0), 100, u64::MAX).await.unwrap();
    let from_disk: Vec<Vec<u8>> = polled.iter().map(PolledRecord::to_record).collect();
    assert_eq!(from_disk, stamped);
    let on_disk = file(&storage, &log_path(0));
    assert_eq!(
        on_disk,
        stamped.concat(),
        "the .log file is the stamped records, concatenated"
    );
}

#[compio::test]
async fn given_tiny_segment_size_when_flushing_should_roll_after_the_crossing_batch() {
    let storage = SimStorage::new();
    let options = LogOptions {
        segment_size_bytes: 1000,
        ..small_options()
    };
    let (log, _) = open(&storage, options).await;
    let size = log.append(record(1, 3, 100), 1).unwrap().size_bytes;
    assert!(size < 1000);
    log.append(record(2, 3, 100), 2).unwrap();
    log.append(record(3, 1, 10), 3).unwrap();
    log.flush().await.unwrap();
    let segments = log.segments();
    assert_eq!(segments.len(), 2);
    assert!(
        segments[0].sealed && segments[0].size_bytes > 1000,
        "the crossing batch is written whole"
    );
    assert_eq!(
        (segments[0].start_offset, segments[0].last_offset),
        (Offset(0), Some(Offset(5)))
    );
    assert_eq!(
        (segments[1].start_offset, segments[1].last_offset),
        (Offset(6), Some(Offset(6)))
    );
    assert_eq!(file(&storage, &index_path(0)).len(), INDEX_ENTRY_SIZE);
    assert!(storage.file_bytes(&log_path(6)).is_some());
}

#[compio::test]
async fn given_byte_and_count_limits_when_reading_should_slice_and_always_progress() {
    let storage = SimStorage::new();
    let (log, _) = open(&storage, small_options()).await;
    for tag in 0..4 {
        log.append(record(tag, 5, 20), tag).unwrap();
    }
    let middle = messages_of(&log.read(Offset(7), 4, u64::MAX).await.unwrap());
    assert_eq!(
        middle.iter().map(|m| m.offset).collect::<Vec<_>>(),
        [7, 8, 9, 10].map(Offset)
    );
    let one_record = log.read(Offset(0), 100, 1).await.unwrap();
    assert_eq!(one_record.len(), 1, "a read returns at least one record");
    assert!(log.read(Offset(20), 10, u64::MAX).await.unwrap().is_empty());
    let last = messages_of(&log.read_last(3, u64::MAX).await.unwrap());
    assert_eq!(
        last.iter().map(|m| m.offset).collect::<Vec<_>>(),
        [17, 18, 19].map(Offset)
    );
}

/// Records larger than the read-ahead (1 MiB) are each read from the disk
/// once, not cut at the read-ahead and read again: a read covers the largest
/// record seen, up to the next index entry.
#[compio::test]
async fn given_records_larger_than_the_read_ahead_when_polling_should_read_each_once() {
    let storage = SimStorage::new();
    let options = LogOptions {
        segment_size_bytes: 64 << 20,
        cache_size_bytes: 0,
        ..small_options()
    };
    let (log, _) = open(&storage, options).await;
    let records: Vec<Vec<u8>> = (0..3).map(|tag| record(tag, 3, 400_000)).collect();
    let record_len = records[0].len() as u64;
    assert!(record_len > 1 << 20, "larger than the read-ahead");
    for (tag, record) in (0..).zip(records) {
        log.append(record, tag).unwrap();
        log.flush().await.unwrap();
    }
    for first in [3, 0, 6] {
        let before = storage.bytes_read();
        let polled = log.read(Offset(first), 3, u64::MAX).await.unwrap();
        assert_eq!(polled[0].first_offset, Offset(first));
        assert_eq!(storage.bytes_read() - before, record_len, "poll at {first}");
    }
    let before = storage.bytes_read();
    let polled = log.read(Offset(0), 9, u64::MAX).await.unwrap();
    assert_eq!(messages_of(&polled).len(), 9);
    assert_eq!(storage.bytes_read() - before, 3 * record_len);
}

#[compio::test]
async fn given_timestamps_when_finding_by_timestamp_should_return_first_batch_at_or_after() {
    let storage = SimStorage::new();
    let (log, _) = open(
        &storage,
        LogOptions {
            cache_size_bytes: 0,
            ..small_options()
        },
    )
    .await;
    for tag in 0..10u64 {
        log.append(record(tag, 2, 300), 100 * (tag + 1)).unwrap();
    }
    log.flush().await.unwrap();
    log.append(record(99, 1, 10), 5_000).unwrap();
    assert_eq!(
        log.find_offset_by_timestamp(0).await.unwrap(),
        Some(Offset(0))
    );
    assert_eq!(
        log.find_offset_by_timestamp(350).await.unwrap(),
        Some(Offset(6))
    );
    assert_eq!(
        log.find_offset_by_timestamp(1_000).await.unwrap(),
        Some(Offset(18))
    );
    assert_eq!(
        log.find_offset_by_timestamp(4_000).await.unwrap(),
        Some(Offset(20)),
        "unwritten batches count too"
    );
    assert_eq!(log.find_offset_by_timestamp(6_000).await.unwrap(), None);
}

#[compio::test]
async fn given_concurrent_durable_appends_should_share_fsyncs() {
    let storage = SimStorage::new();
    let (log, _) = open(
        &storage,
        LogOptions {
            offset_reservation: 1 << 20,
            ..small_options()
        },
    )
    .await;
    let before = storage.syncs_done();
    let mut tasks = Vec::new();
    for tag in 0..16 {
        let log = log.clone();
        tasks.push(compio::runtime::spawn(async move {
            let receipt = log.append(record(tag, 1, 10), tag).unwrap();
            log.wait_durable(receipt.last_offset).await.unwrap();
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(log.durable_offset(), Some(Offset(15)));
    let syncs = storage.syncs_done() - before;
    assert!(syncs < 16, "16 durable appends took {syncs} syncs");
}

#[compio::test]
async fn given_failed_fsync_should_poison_writes_but_keep_durable_reads() {
    let storage = SimStorage::new();
    let (log, _) = open(&storage, small_options()).await;
    log.append(record(1, 2, 10), 1).unwrap();
    log.sync().await.unwrap();
    log.append(record(2, 2, 10), 2).unwrap();
    storage.set_faults(SimFaults {
        fail_next_sync: true,
        ..SimFaults::default()
    });
    let error = log.sync().await.unwrap_err();
    assert!(
        matches!(&error, StorageError::Poisoned { dir: d, cause } if *d == dir() && cause.contains("fsync")),
        "{error}"
    );
    assert!(log.is_poisoned());
    assert!(matches!(
        log.append(record(3, 1, 10), 3),
        Err(StorageError::Poisoned { .. })
    ));
    assert!(matches!(
        log.flush().await,
        Err(StorageError::Poisoned { .. })
    ));
    assert!(
        matches!(log.sync().await, Err(StorageError::Poisoned { .. })),
        "never retries and pretends"
    );
    assert_eq!(log.durable_offset(), Some(Offset(1)));
    log.wait_durable(Offset(1)).await.unwrap();
    assert_eq!(
        messages_of(&log.read(Offset(0), 2, u64::MAX).await.unwrap()).len(),
        2
    );
}

#[compio::test]
async fn given_short_write_should_poison_and_recover_cleanly_on_reopen() {
    let storage = SimStorage::new();
    let (log, _) = open(&storage, small_options()).await;
    log.append(record(1, 2, 10), 1).unwrap();
    log.sync().await.unwrap();
    log.append(record(2, 2, 100), 2).unwrap();
    storage.set_faults(SimFaults {
        short_next_write: Some(300),
        ..SimFaults::default()
    });
    assert!(matches!(
        log.flush().await,
        Err(StorageError::Poisoned { .. })
    ));
    storage.set_faults(SimFaults::default());
    let rebooted = storage.crash(crate::seam::CrashMode::Clean);
    let (log, report) = open(&rebooted, small_options()).await;
    assert_eq!(log.last_offset(), Some(Offset(1)));
    assert!(
        report.next_offset >= Offset(4),
        "offsets handed out before the crash are not reused"
    );
}

#[compio::test]
async fn given_exhausted_reservation_when_appending_should_ask_to_reserve_then_succeed() {
    let storage = SimStorage::new();
    let (log, _) = open(
        &storage,
        LogOptions {
            offset_reservation: 4,
            ..small_options()
        },
    )
    .await;
    let error = log.append(record(1, 10, 10), 1).unwrap_err();
    assert!(matches!(
        error,
        StorageError::OffsetsNotReserved {
            next_offset: Offset(0),
            frontier: Offset(4)
        }
    ));
    log.reserve_offsets(10).await.unwrap();
    assert_eq!(
        log.append(record(1, 10, 10), 1).unwrap().last_offset,
        Offset(9)
    );
}

#[compio::test]
async fn given_a_small_reservation_when_ensuring_before_each_append_should_never_refuse() {
    let storage = SimStorage::new();
    let (log, _) = open(
        &storage,
        LogOptions {
            offset_reservation: 4,
            ..small_options()
        },
    )
    .await;
    for tag in 0..50 {
        log.ensure_reserved(7).await.unwrap();
        let receipt = log.append(record(tag, 7, 10), tag).unwrap();
        assert_eq!(receipt.base_offset, Offset(tag * 7));
    }
}

#[compio::test]
async fn given_more_unwritten_bytes_than_allowed_when_readying_an_append_should_write_them_first() {
    let storage = SimStorage::new();
    let options = LogOptions {
        max_unwritten_bytes: 1_000,
        messages_required_to_save: 1 << 20,
        size_of_messages_required_to_save: 1 << 20,
        segment_size_bytes: 1 << 20,
        ..small_options()
    };
    let (log, _) = open(&storage, options).await;
    for tag in 0..20 {
        log.ready_for_append(2).await.unwrap();
        log.append(record(tag, 2, 100), tag).unwrap();
        assert!(
            log.state().unwritten_bytes < 1_000 + 400,
            "at most one batch beyond the bound waits"
        );
    }
    assert!(file(&storage, &log_path(0)).len() >= 1_000);
}

#[compio::test]
async fn given_a_small_reservation_when_appending_when_ready_should_never_refuse() {
    let storage = SimStorage::new();
    let options = LogOptions {
        offset_reservation: 4,
        ..small_options()
    };
    let (log, _) = open(&storage, options).await;
    for tag in 0..30 {
        let record = record(tag, 7, 10);
        let range = 0..record.len();
        let receipt = log
            .append_at_when_ready(record, range, || tag)
            .await
            .unwrap();
        assert_eq!(receipt.base_offset, Offset(tag * 7));
    }
}

#[compio::test]
async fn given_a_flush_in_progress_when_reserving_should_not_wait_for_it() {
    let storage = SimStorage::new();
    let (log, _) = open(
        &storage,
        LogOptions {
            offset_reservation: 4,
            ..small_options()
        },
    )
    .await;
    log.append(record(1, 3, 10), 1).unwrap();
    // Hold the I/O lock the way a long flush does.
    let io = log.inner.io.lock().await;
    log.reserve_offsets(100).await.unwrap();
    assert!(log.state().frontier >= Offset(103));
    drop(io);
    log.ensure_reserved(100).await.unwrap();
    log.append(record(2, 100, 1), 2).unwrap();
}

#[compio::test]
async fn given_clean_close_when_reopening_should_continue_without_skipping() {
    let storage = SimStorage::new();
    let (log, _) = open(&storage, small_options()).await;
    log.append(record(1, 3, 10), 1).unwrap();
    log.close().await.unwrap();
    assert!(matches!(
        log.append(record(2, 1, 10), 2),
        Err(StorageError::Closed { .. })
    ));
    let (log, report) = open(&storage, small_options()).await;
    assert_eq!(report.next_offset, Offset(3));
    assert!(report.skipped_offsets.is_empty());
    assert_eq!(
        log.append(record(2, 1, 10), 2).unwrap().base_offset,
        Offset(3)
    );
}

#[compio::test]
async fn given_a_kill_when_offsets_follow_the_log_end_should_resume_at_the_end_not_the_frontier() {
    for follow_log_end in [false, true] {
        let storage = SimStorage::new();
        let options = LogOptions {
            follow_log_end,
            ..small_options()
        };
        let (log, _) = open(&storage, options.clone()).await;
        log.append(record(1, 3, 10), 1).unwrap();
        log.flush().await.unwrap();
        drop(log);
        let storage = storage.crash(CrashMode::Process);
        let (_, report) = open(&storage, options).await;
        if follow_log_end {
            // A replicated log: every replica mints what the ops name.
            assert_eq!(report.next_offset, Offset(3));
            assert!(report.skipped_offsets.is_empty());
        } else {
            // A single node never reuses an offset it may have shown.
            assert_eq!(report.next_offset, Offset(64));
        }
    }
}

#[compio::test]
async fn given_sealed_segments_when_deleting_oldest_should_respect_active_and_barrier() {
    let storage = SimStorage::new();
    let (log, _) = open(
        &storage,
        LogOptions {
            segment_size_bytes: 600,
            ..small_options()
        },
    )
    .await;
    for tag in 0..4 {
        log.append(record(tag, 2, 200), 100 + tag).unwrap();
    }
    log.flush().await.unwrap();
    assert_eq!(
        log.segments_count(),
        5,
        "each batch crosses the segment size"
    );
    assert_eq!(log.expired_sealed_segments(101 + 50, 50), 2);
    assert_eq!(log.sealed_segments_over_budget(2 * 752), 2);
    assert_eq!(
        log.delete_oldest_sealed_segments(10, Some(Offset(2)))
            .await
            .unwrap(),
        1,
        "segment [2,3] is above the barrier"
    );
    assert_eq!(log.first_offset(), Some(Offset(2)));
    assert_eq!(
        messages_of(&log.read(Offset(0), 1, u64::MAX).await.unwrap())[0].offset,
        Offset(2),
        "reads start at the oldest retained"
    );
    assert_eq!(
        log.delete_oldest_sealed_segments(10, None).await.unwrap(),
        3
    );
    assert_eq!(
        log.segments_count(),
        1,
        "the active segment is never deleted"
    );
    assert!(
        storage.file_bytes(&log_path(0)).is_none() && storage.file_bytes(&index_path(0)).is_none()
    );
    assert_eq!(log.messages_count(), 0);
}

#[compio::test]
async fn given_purge_should_reset_to_single_empty_segment_at_zero() {
    let storage = SimStorage::new();
    let (log, _) = open(
        &storage,
        LogOptions {
            segment_size_bytes: 600,
            ..small_options()
        },
    )
    .await;
    for tag in 0..3 {
        log.append(record(tag, 2, 200), tag).unwrap();
    }
    log.sync().await.unwrap();
    log.purge().await.unwrap();
    assert_eq!(
        (log.segments_count(), log.next_offset(), log.last_offset()),
        (1, Offset(0), None)
    );
    assert!(log.read(Offset(0), 10, u64::MAX).await.unwrap().is_empty());
    assert_eq!(
        log.append(record(9, 1, 10), 9).unwrap().base_offset,
        Offset(0)
    );
    log.delete().await.unwrap();
    assert!(matches!(
        log.append(record(9, 1, 10), 9),
        Err(StorageError::Deleted { .. })
    ));
    assert!(storage.file_bytes(&log_path(0)).is_none());
}

#[compio::test]
async fn given_bit_rot_after_open_when_reading_with_validation_should_refuse_the_record() {
    let storage = SimStorage::new();
    let (log, _) = open(
        &storage,
        LogOptions {
            cache_size_bytes: 0,
            ..small_options()
        },
    )
    .await;
    log.append(record(1, 2, 50), 1).unwrap();
    log.append(record(2, 2, 50), 2).unwrap();
    log.flush().await.unwrap();
    let mut bytes = file(&storage, &log_path(0));
    let second = bytes.len() / 2;
    bytes[second + 300] ^= 0x40;
    storage.overwrite_durably(&log_path(0), bytes).unwrap();
    assert_eq!(
        messages_of(&log.read(Offset(0), 2, u64::MAX).await.unwrap()).len(),
        2,
        "the first record is intact"
    );
    let error = log.read(Offset(2), 2, u64::MAX).await.unwrap_err();
    assert!(
        matches!(error, StorageError::Corrupt { position, .. } if position == second as u64),
        "{error}"
    );
}

/// A record whose frames the caller authenticates (sealed frames) is not
/// rehashed: changed frame bytes pass to the caller, a changed stated
/// checksum or header field is still caught by the batch checksum.
#[compio::test]
async fn given_frames_the_caller_authenticates_when_reading_should_check_only_the_batch_checksum() {
    let storage = SimStorage::new();
    let options = LogOptions {
        cache_size_bytes: 0,
        ..small_options()
    };
    let (log, _) = open(&storage, options).await;
    log.append(record(1, 2, 50), 1).unwrap();
    log.flush().await.unwrap();
    let intact = file(&storage, &log_path(0));
    let payload_byte = BATCH_HEADER_SIZE + MESSAGE_HEADER_SIZE + 3;
    let stated_checksum_byte = BATCH_HEADER_SIZE + 2;
    let base_offset_byte = 8;
    for (at, caller_sees_it) in [
        (payload_byte, true),
        (stated_checksum_byte, false),
        (base_offset_byte, false),
    ] {
        let mut bytes = intact.clone();
        bytes[at] ^= 0x40;
        storage.overwrite_durably(&log_path(0), bytes).unwrap();
        let read = log
            .read_authenticated(Offset(0), 2, u64::MAX, |_| true)
            .await;
        assert_eq!(read.is_ok(), caller_sees_it, "byte {at}");
        let all_checked = log.read(Offset(0), 2, u64::MAX).await;
        assert!(
            matches!(all_checked, Err(StorageError::Corrupt { .. })),
            "byte {at}"
        );
    }
}

#[compio::test]
async fn given_record_inside_a_frame_when_appending_should_cache_it_without_copying() {
    let storage = SimStorage::new();
    let (log, _) = open(&storage, small_options()).await;
    let mut frame = vec![0xEE; 300];
    frame.extend_from_slice(&record(1, 3, 10));
    let range = 300..frame.len();
    let receipt = log.append_at(frame, range, 700).unwrap();
    assert_eq!(
        (receipt.base_offset, receipt.last_offset),
        (Offset(0), Offset(2))
    );
    let first = log.read(Offset(0), 10, u64::MAX).await.unwrap();
    let second = log.read(Offset(0), 10, u64::MAX).await.unwrap();
    assert_eq!(
        first[0].frame_bytes().as_ptr(),
        second[0].frame_bytes().as_ptr(),
        "polls share the cached bytes"
    );
    let header = BatchHeader::read(&first[0].to_record()).unwrap();
    assert_eq!((header.base_offset, header.base_timestamp), (0, 700));
    validate_record(&first[0].to_record(), Verify::Checksums).unwrap();
    assert!(log.append_at(vec![0; 10], 5..20, 1).is_err());
}

#[compio::test]
async fn given_flush_observer_when_threshold_triggers_background_flush_should_be_called() {
    let storage = SimStorage::new();
    let options = LogOptions {
        messages_required_to_save: 2,
        ..small_options()
    };
    let (log, _) = open(&storage, options).await;
    let calls = Rc::new(std::cell::Cell::new(0u32));
    let seen = calls.clone();
    log.observe_flushes(Rc::new(move |log| {
        assert_eq!(
            log.unflushed_bytes(),
            0,
            "called after the flush wrote everything pending"
        );
        seen.set(seen.get() + 1);
    }));
    log.append(record(1, 1, 10), 1).unwrap();
    log.append(record(2, 1, 10), 2).unwrap();
    for _ in 0..100 {
        if calls.get() > 0 {
            break;
        }
        compio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    assert_eq!(calls.get(), 1);
}

/// A segment written through the page cache starts the write-back of each
/// `write_behind_bytes` it gathers, in order and without gaps, and so does
/// one written with plain O_DIRECT from its small (buffered) writes; one
/// written with large direct writes, or with the option 0, has nothing to
/// start.
#[compio::test]
async fn given_buffered_segment_when_flushing_megabytes_should_start_write_back_behind() {
    let options = LogOptions {
        segment_size_bytes: 64 << 20,
        messages_required_to_save: 1,
        size_of_messages_required_to_save: 1,
        max_unwritten_bytes: 64 << 20,
        offset_reservation: 1 << 20,
        write_behind_bytes: 4 << 20,
        ..small_options()
    };
    // (direct, write_behind_bytes, messages of 1 KB per batch, batches)
    let cases = [
        (false, 4 << 20, 1000, 10),
        (true, 4 << 20, 1000, 10),
        (false, 0, 1000, 10),
        (true, 4 << 20, 100, 100),
    ];
    for (direct, every, messages, batches) in cases {
        let storage = SimStorage::new();
        let options = LogOptions {
            direct_io: direct,
            write_behind_bytes: every,
            ..options.clone()
        };
        let (log, _) = open(&storage, options).await;
        for tag in 0..batches {
            log.append(record(tag, messages, 1000), 100 + tag).unwrap();
            log.flush().await.unwrap();
        }
        let size = file(&storage, &log_path(0)).len() as u64;
        let started = storage.writebacks(&log_path(0));
        if (direct && messages == 1000) || every == 0 {
            assert!(started.is_empty(), "{started:?}");
            continue;
        }
        assert!(started.len() >= 2, "{started:?} of {size} bytes");
        let mut next = 0;
        for (pos, len) in started {
            assert_eq!(pos, next, "contiguous");
            assert!(len >= every, "{len}");
            next = pos + len;
        }
        assert!(size - next < every, "{next} of {size}");
    }
}

#[compio::test]
async fn given_full_disk_when_flushing_should_refuse_appends_keep_reads_and_resume() {
    full_disk_stalls_and_resumes(small_options()).await;
}

#[compio::test]
async fn given_full_disk_under_direct_io_when_flushing_should_refuse_appends_keep_reads_and_resume()
{
    full_disk_stalls_and_resumes(LogOptions {
        direct_io: true,
        direct_sync: true,
        ..small_options()
    })
    .await;
}

async fn full_disk_stalls_and_resumes(options: LogOptions) {
    let storage = SimStorage::new();
    let (log, _) = open(&storage, options.clone()).await;
    log.append(record(1, 3, 10), 100).unwrap();
    storage.set_faults(SimFaults {
        no_space: true,
        ..SimFaults::default()
    });
    let error = log.flush().await.unwrap_err();
    assert!(matches!(error, StorageError::NoSpace { .. }), "{error}");
    assert!(!log.is_poisoned(), "a full disk does not poison the log");
    let refused = log.append(record(2, 1, 10), 200).unwrap_err();
    assert!(matches!(refused, StorageError::NoSpace { .. }), "{refused}");
    assert_eq!(
        messages_of(&log.read(Offset(0), 10, u64::MAX).await.unwrap()).len(),
        3,
        "accepted messages stay readable"
    );

    storage.set_faults(SimFaults::default());
    log.flush().await.unwrap();
    let resumed = log.append(record(3, 2, 10), 300).unwrap();
    assert_eq!(
        resumed.base_offset,
        Offset(3),
        "no offset was spent on refusals"
    );
    log.sync().await.unwrap();
    log.close().await.unwrap();
    let (reopened, report) = open(&storage.crash(CrashMode::Clean), options).await;
    assert_eq!(report.next_offset, Offset(5));
    assert_eq!(
        messages_of(&reopened.read(Offset(0), 10, u64::MAX).await.unwrap()).len(),
        5
    );
}

#[compio::test]
async fn given_written_but_unsynced_batches_when_the_process_is_killed_should_keep_them() {
    let storage = SimStorage::new();
    let (log, _) = open(&storage, small_options()).await;
    let before = storage.syncs_done();
    let mut tasks = Vec::new();
    for tag in 0..4 {
        let log = log.clone();
        tasks.push(compio::runtime::spawn(async move {
            let receipt = log.append(record(tag, 1, 10), tag).unwrap();
            log.wait_written(receipt.last_offset).await.unwrap();
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(storage.syncs_done(), before, "written, not fsynced");
    assert_eq!(
        log.unflushed_bytes(),
        0,
        "every acknowledged batch is written"
    );

    let killed = storage.crash(CrashMode::Process);
    let (reopened, report) = open(&killed, small_options()).await;
    assert_eq!(report.messages, 4, "a process kill keeps written batches");
    let polled = reopened.read(Offset(0), 10, u64::MAX).await.unwrap();
    assert_eq!(polled.iter().map(|r| r.count).sum::<u32>(), 4);

    let power_lost = storage.crash(CrashMode::Clean);
    let (_, report) = open(&power_lost, small_options()).await;
    assert_eq!(report.messages, 0, "a power loss keeps only fsynced bytes");
}

#[compio::test]
async fn given_a_shared_cache_budget_when_partitions_flush_should_keep_the_shard_total_within_it_and_release_on_drop()
 {
    let storage = SimStorage::new();
    let shared = crate::partition::SharedCache::with_floor(3_000, 600);
    let options = LogOptions {
        cache_size_bytes: 1 << 20,
        shared_cache: Some(shared.clone()),
        segment_size_bytes: 1 << 20,
        offset_reservation: 1 << 20,
        ..small_options()
    };
    let open_at = |name: &str| {
        let storage = storage.clone();
        let options = options.clone();
        let dir = dir().join(name);
        async move { PartitionLog::open(storage, &dir, options).await.unwrap().0 }
    };
    let first = open_at("a").await;
    let second = open_at("b").await;
    let batch = record(1, 2, 40).len() as u64;
    for tag in 0..40 {
        first.append(record(tag, 2, 40), tag).unwrap();
        first.flush().await.unwrap();
        assert!(
            shared.used() <= 3_000,
            "one partition stays within the budget"
        );
    }
    let alone = shared.used();
    assert!(alone > 3_000 - batch, "it uses the budget: {alone}");
    for tag in 0..40 {
        second.append(record(tag, 2, 40), tag).unwrap();
        second.flush().await.unwrap();
        assert!(
            shared.used() <= 3_000 + 600 + batch,
            "the second partition keeps its floor: {}",
            shared.used()
        );
    }
    // Everything reads back whole, from the cache or the disk.
    assert_eq!(all_records(&first).await.len(), 40);
    let before = shared.used();
    drop(first);
    assert!(shared.used() < before, "a dropped log releases its share");
    drop(second);
    assert_eq!(shared.used(), 0);
}
