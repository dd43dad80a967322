//! `truncate_tail`: random appends, flushes, cuts at batch boundaries and
//! reopenings against a model of the batches the log must hold, with and
//! without direct I/O, and a cut that survives a crash.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::*;
use crate::seam::CrashMode;

fn replicated_options(direct_io: bool) -> LogOptions {
    LogOptions {
        follow_log_end: true,
        direct_io,
        ..small_options()
    }
}

/// A batch the model holds: its base and last offsets and its bytes as
/// the log returns them.
type Held = (Offset, Offset, Vec<u8>);

async fn check(log: &PartitionLog<SimStorage>, model: &[Held], step: &str) {
    let next = model
        .last()
        .map_or(Offset::ZERO, |(_, last, _)| last.next());
    assert_eq!(log.next_offset(), next, "{step}: next offset");
    assert_eq!(
        log.last_offset(),
        model.last().map(|(_, last, _)| *last),
        "{step}: last offset"
    );
    let held: Vec<Vec<u8>> = model.iter().map(|(_, _, bytes)| bytes.clone()).collect();
    assert_eq!(all_records(log).await, held, "{step}: records");
}

async fn run(seed: u64, direct_io: bool) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut storage = SimStorage::new();
    let options = replicated_options(direct_io);
    let (mut log, _) = open(&storage, options.clone()).await;
    let mut model: Vec<Held> = Vec::new();
    let mut tag = 1u64;
    let mut now = 1_000u64;
    for step in 0..120 {
        match rng.random_range(0..10) {
            0..=4 => {
                let count = rng.random_range(1..6);
                let len = rng.random_range(1..300);
                log.ensure_reserved(count as u64).await.expect("reserve");
                let receipt = log.append(record(tag, count, len), now).expect("append");
                tag += 1;
                now += rng.random_range(0..3);
                let stored = log
                    .read(receipt.base_offset, u32::MAX, u64::MAX)
                    .await
                    .expect("read back");
                model.push((
                    receipt.base_offset,
                    receipt.last_offset,
                    stored[0].to_record(),
                ));
            }
            5 => log.flush().await.expect("flush"),
            6..=7 if !model.is_empty() => {
                let keep = rng.random_range(0..=model.len());
                let keep_end = if keep == model.len() {
                    model
                        .last()
                        .map_or(Offset::ZERO, |(_, last, _)| last.next())
                } else {
                    model[keep].0
                };
                if rng.random_bool(0.5) {
                    log.flush().await.expect("flush");
                }
                log.truncate_tail(keep_end).await.expect("cut");
                model.truncate(keep);
                check(
                    &log,
                    &model,
                    &format!("seed {seed} step {step}: after a cut"),
                )
                .await;
            }
            8 => {
                // A crash right after a cut (or anything else): a cut is
                // durable when it returns, and written batches survive a
                // process kill; unwritten ones are the model's to drop.
                log.flush().await.expect("flush");
                drop(log);
                storage = storage.crash(CrashMode::Process);
                let (reopened, _) = open(&storage, options.clone()).await;
                log = reopened;
                check(&log, &model, &format!("seed {seed} step {step}: reopened")).await;
            }
            _ => {}
        }
    }
    check(&log, &model, &format!("seed {seed}: at the end")).await;
}

#[compio::test]
async fn given_random_appends_and_cuts_when_read_and_reopened_should_hold_exactly_the_kept_batches()
{
    for seed in 0..40 {
        run(seed, false).await;
        run(seed, true).await;
    }
}

/// Appends 30 batches of three 200-byte records (several segments);
/// their base offsets.
async fn append_thirty(log: &PartitionLog<SimStorage>) -> Vec<Offset> {
    let mut bases = Vec::new();
    for tag in 1..=30 {
        log.ensure_reserved(3).await.expect("reserve");
        bases.push(
            log.append(record(tag, 3, 200), 1_000 + tag)
                .unwrap()
                .base_offset,
        );
    }
    bases
}

#[compio::test]
async fn given_a_cut_when_power_is_lost_after_it_should_stay_cut() {
    let storage = SimStorage::new();
    let options = replicated_options(false);
    let (log, _) = open(&storage, options.clone()).await;
    let bases = append_thirty(&log).await;
    log.sync().await.expect("sync");
    assert!(log.segments_count() > 2, "the cut spans segments");
    log.truncate_tail(bases[7]).await.expect("cut");
    let survived = storage.crash(CrashMode::Clean);
    let (log, _) = open(&survived, options).await;
    assert_eq!(log.next_offset(), bases[7]);
    assert_eq!(all_records(&log).await.len(), 7);
    // It takes appends again at the cut.
    log.ensure_reserved(2).await.expect("reserve");
    let receipt = log.append(record(99, 2, 10), 5_000).unwrap();
    assert_eq!(receipt.base_offset, bases[7]);
}

/// A log that follows a replicated group and was never fsynced: a power
/// loss can leave a sealed segment's tail gone while a newer segment file
/// (its creation durable) survives. Reopened, the log ends where its
/// contiguous prefix ends: the newer segments go, and nothing past the gap
/// is served or counted as held.
#[compio::test]
async fn given_a_lost_unsynced_tail_below_a_newer_segment_when_reopened_should_end_at_the_gap() {
    let storage = SimStorage::new();
    let options = replicated_options(false);
    let (log, _) = open(&storage, options.clone()).await;
    let bases = append_thirty(&log).await;
    log.flush().await.expect("written, never fsynced");
    assert!(log.segments_count() > 2, "several segments");
    let survived = storage.crash(CrashMode::Clean);
    let (log, _) = open(&survived, options.clone()).await;
    let held = all_records(&log).await;
    let next = log.next_offset();
    assert!(next < bases[29].plus(3), "the power loss took the tail");
    assert_eq!(
        held.len() as u64 * 3,
        next.0,
        "every offset below the end is held: no gap is served"
    );
    // The log takes appends again at its end, and keeps them.
    log.ensure_reserved(2).await.expect("reserve");
    let receipt = log.append(record(99, 2, 10), 5_000).unwrap();
    assert_eq!(receipt.base_offset, next);
    log.sync().await.expect("sync");
    let (reopened, _) = open(&survived, options).await;
    assert_eq!(reopened.next_offset(), next.plus(2));
}

/// A purge restarts the log at 0 with its segments moved aside; a crash
/// makes the replayed purge run the restart again. The second run must
/// not move the fresh empty segment over the purged one of the same name.
#[compio::test]
async fn given_a_restart_aside_run_twice_when_reading_aside_should_keep_the_purged_batches() {
    let storage = SimStorage::new();
    let options = replicated_options(false);
    let (log, _) = open(&storage, options.clone()).await;
    for tag in 1..=6 {
        log.ensure_reserved(3).await.expect("reserve");
        log.append(record(tag, 3, 200), 1_000 + tag)
            .expect("append");
    }
    log.flush().await.expect("flush");
    let purged = all_records(&log).await;
    let aside = dir().join("purged-00000000000000000007");
    log.restart_at_aside(Offset::ZERO, &aside)
        .await
        .expect("restart");
    log.restart_at_aside(Offset::ZERO, &aside)
        .await
        .expect("again");
    assert_eq!(log.next_offset(), Offset::ZERO);
    assert!(all_records(&log).await.is_empty());
    let (kept, _) = PartitionLog::open(storage.clone(), &aside, options)
        .await
        .expect("open the purged segments");
    assert_eq!(all_records(&kept).await, purged);
}
