//! Direct writes planned in the shard's arena (`partition::arena`): the
//! cache keeps slices of the written regions, which must read back exactly
//! as appended, survive crashes like any direct write, and be reused once
//! evicted.

use super::*;
use crate::partition::SharedCache;
use crate::seam::CrashMode;

/// Direct, synchronous writes with a shared budget of `limit` bytes.
fn arena_options(shared: &SharedCache) -> LogOptions {
    LogOptions {
        direct_io: true,
        direct_sync: true,
        segment_size_bytes: 64 << 20,
        cache_size_bytes: 64 << 20,
        shared_cache: Some(shared.clone()),
        offset_reservation: 1 << 20,
        max_unwritten_bytes: 64 << 20,
        ..small_options()
    }
}

/// A record above the arena's minimum write (two 40 KB messages).
fn large(tag: u64) -> Vec<u8> {
    record(tag, 2, 40_000)
}

/// Compares records without printing megabytes on a mismatch.
fn same_records(read: &[Vec<u8>], expected: &[Vec<u8>], context: &str) {
    let lens = |records: &[Vec<u8>]| records.iter().map(Vec::len).collect::<Vec<_>>();
    assert_eq!(lens(read), lens(expected), "{context}: record lengths");
    for (i, (got, want)) in read.iter().zip(expected).enumerate() {
        let first = got.iter().zip(want).position(|(a, b)| a != b);
        assert!(
            first.is_none(),
            "{context}: record {i} differs at byte {first:?}"
        );
    }
}

#[compio::test]
async fn given_large_direct_writes_when_read_back_and_after_crashes_should_be_what_was_appended() {
    let storage = SimStorage::new();
    let shared = SharedCache::with_floor(64 << 20, 64 << 20);
    let (log, _) = open(&storage, arena_options(&shared)).await;
    let mut stamped = Vec::new();
    for tag in 0..6 {
        // An odd-sized small record between large ones leaves a partial
        // block, so the next region starts with a rewritten tail.
        let small = log.append(record(100 + tag, 1, 37), tag).unwrap();
        let receipt = log.append(large(tag), tag).unwrap();
        log.wait_durable(receipt.last_offset).await.unwrap();
        for (base, count) in [(small.base_offset, 1), (receipt.base_offset, 2)] {
            stamped.extend(log.read(base, count, u64::MAX).await.unwrap());
        }
    }
    assert!(
        shared.arena_blocks() >= 1,
        "the large writes used the arena"
    );
    let expected: Vec<Vec<u8>> = stamped.iter().map(PolledRecord::to_record).collect();
    same_records(&all_records(&log).await, &expected, "the cache");

    for mode in [CrashMode::Process, CrashMode::Clean] {
        let rebooted = storage.crash(mode);
        let fresh = SharedCache::with_floor(64 << 20, 64 << 20);
        let (reopened, report) = open(&rebooted, arena_options(&fresh)).await;
        assert!(report.truncated.is_empty(), "{mode:?}: nothing torn");
        same_records(
            &all_records(&reopened).await,
            &expected,
            &format!("{mode:?}"),
        );
    }
}

#[compio::test]
async fn given_a_small_budget_when_many_large_batches_are_written_should_reuse_evicted_blocks() {
    let storage = SimStorage::new();
    let shared = SharedCache::with_floor(1 << 20, 1 << 20);
    let (log, _) = open(&storage, arena_options(&shared)).await;
    // 400 x 80 KB: four blocks' worth through a 1 MiB budget.
    let mut receipts = Vec::new();
    for tag in 0..400 {
        let receipt = log.append(large(tag), tag).unwrap();
        log.wait_durable(receipt.last_offset).await.unwrap();
        receipts.push(receipt);
    }
    assert!(
        shared.arena_blocks() <= 2,
        "evicted regions' blocks are cut again: {} allocated",
        shared.arena_blocks()
    );
    assert!(shared.used() <= 1 << 20, "within the budget");
    // The newest batches come from the cache, the oldest from the disk;
    // both read back as appended.
    for receipt in [receipts[0], receipts[200], receipts[399]] {
        let polled = log.read(receipt.base_offset, 2, u64::MAX).await.unwrap();
        let messages = messages_of(&polled);
        assert_eq!(messages.len(), 2);
        let tag = messages[0].id >> 32;
        assert_eq!(
            messages
                .iter()
                .map(|m| m.payload.clone())
                .collect::<Vec<_>>(),
            payloads(tag as u64, 2, 40_000)
        );
    }
}

#[compio::test]
async fn given_plain_direct_io_when_small_and_large_writes_mix_should_read_back_and_recover_them() {
    let storage = SimStorage::new();
    let shared = SharedCache::with_floor(64 << 20, 64 << 20);
    let options = LogOptions {
        direct_sync: false,
        ..arena_options(&shared)
    };
    let mut stamped = Vec::new();
    let (log, _) = open(&storage, options.clone()).await;
    // Small ones go through the page cache, large ones (300 KB) direct;
    // each direct write starts at the block a buffered one ended in.
    for tag in 0..8 {
        let (count, size) = if tag % 3 == 2 { (3, 100_000) } else { (2, 997) };
        let receipt = log.append(record(tag, count, size), tag).unwrap();
        log.wait_written(receipt.last_offset).await.unwrap();
        stamped.extend(
            log.read(receipt.base_offset, count as u32, u64::MAX)
                .await
                .unwrap(),
        );
    }
    let expected: Vec<Vec<u8>> = stamped.iter().map(PolledRecord::to_record).collect();
    same_records(&all_records(&log).await, &expected, "the cache");

    let killed = storage.peek_crash(CrashMode::Process);
    let (reopened, report) = open(&killed, options.clone()).await;
    assert!(
        report.truncated.is_empty(),
        "a kill keeps every written batch"
    );
    same_records(&all_records(&reopened).await, &expected, "after a kill");

    log.sync().await.unwrap();
    let power_lost = storage.crash(CrashMode::Clean);
    let (reopened, _) = open(&power_lost, options).await;
    same_records(
        &all_records(&reopened).await,
        &expected,
        "after a sync and a power loss",
    );
}

#[compio::test]
async fn given_a_shared_cache_when_small_writes_are_written_back_should_drop_the_pages_before() {
    let storage = SimStorage::new();
    let shared = SharedCache::with_floor(64 << 20, 64 << 20);
    let options = LogOptions {
        direct_sync: false,
        write_behind_bytes: 1 << 20,
        ..arena_options(&shared)
    };
    let (log, _) = open(&storage, options).await;
    let mut receipts = Vec::new();
    for tag in 0..40 {
        // 100 KB batches: under the direct minimum, so through the page cache.
        let receipt = log.append(record(tag, 100, 1000), tag).unwrap();
        log.wait_written(receipt.last_offset).await.unwrap();
        receipts.push(receipt);
    }
    let started = storage.writebacks(&log_path(0));
    let dropped = storage.dropped(&log_path(0));
    assert!(started.len() >= 3, "{started:?}");
    // Each drop covers the range started the time before, in order.
    assert_eq!(
        dropped.len(),
        started.len() - 1,
        "{dropped:?} after {started:?}"
    );
    for (drop, start) in dropped.iter().zip(&started) {
        assert_eq!(drop, start, "drops follow the write-backs one behind");
    }
    let polled = log
        .read(receipts[0].base_offset, 100, u64::MAX)
        .await
        .unwrap();
    assert_eq!(messages_of(&polled).len(), 100, "the data stays readable");
}
