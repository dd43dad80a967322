//! Crash tests: producers append with the `Persisted` contract (append, then
//! `wait_durable` before the ack) while the simulated machine crashes after
//! the N-th sync (or the N-th write), with a random torn tail. After the restart every acked
//! record must be present and byte-identical, nothing corrupt readable, and
//! no offset handed out before the crash reused.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use protocol::batch::{Verify, stamp_record, validate_record};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::*;
use crate::error::StorageError;
use crate::offset::Offset;
use crate::seam::{CrashMode, SimFaults};

const TRIALS: u64 = 300;
const PRODUCERS: u64 = 3;
const BATCHES_PER_PRODUCER: u64 = 25;

/// What producers observed before the crash.
#[derive(Debug, Default)]
struct Observed {
    /// Every appended record, stamped, by base offset (acked or not).
    appended: BTreeMap<Offset, Vec<u8>>,
    acked: Vec<Offset>,
    handed_out_end: Offset,
}

async fn produce(
    log: PartitionLog<SimStorage>,
    producer: u64,
    seed: u64,
    observed: Rc<RefCell<Observed>>,
) {
    let mut rng = StdRng::seed_from_u64(seed ^ producer << 40);
    for batch in 0..BATCHES_PER_PRODUCER {
        let tag = producer << 20 | batch;
        let original = record(tag, rng.random_range(1..=4), rng.random_range(1..=150));
        let receipt = match log.append(original.clone(), 1_000 + tag) {
            Ok(receipt) => receipt,
            Err(StorageError::OffsetsNotReserved { .. }) => match log.reserve_offsets(4).await {
                Ok(()) => continue,
                Err(_) => return,
            },
            Err(_) => return,
        };
        let mut stamped = original;
        stamp_record(
            &mut stamped,
            log.options().partition_id,
            receipt.base_offset.0,
            receipt.base_timestamp,
        );
        {
            let mut seen = observed.borrow_mut();
            seen.appended.insert(receipt.base_offset, stamped);
            seen.handed_out_end = seen.handed_out_end.max(receipt.last_offset.next());
        }
        if rng.random_bool(0.7) {
            match log.wait_durable(receipt.last_offset).await {
                Ok(()) => observed.borrow_mut().acked.push(receipt.base_offset),
                Err(_) => return,
            }
        }
    }
}

fn trial_options(rng: &mut StdRng) -> LogOptions {
    LogOptions {
        segment_size_bytes: [700, 3_000, 1 << 20][rng.random_range(0..3)],
        offset_reservation: [8, 64, 1 << 20][rng.random_range(0..3)],
        cache_size_bytes: [0, 1 << 20][rng.random_range(0..2)],
        direct_io: rng.random_bool(0.5),
        direct_sync: rng.random_bool(0.5),
        ..small_options()
    }
}

async fn run_until_crash(storage: &SimStorage, options: &LogOptions, seed: u64) -> Observed {
    let observed = Rc::new(RefCell::new(Observed::default()));
    let Ok((log, _)) = PartitionLog::open(storage.clone(), &dir(), options.clone()).await else {
        return Observed::default();
    };
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|producer| {
            compio::runtime::spawn(produce(log.clone(), producer, seed, Rc::clone(&observed)))
        })
        .collect();
    for producer in producers {
        producer.await.expect("producer task");
    }
    observed.take()
}

/// Reopens the crashed image and checks the Persisted promises.
async fn check_recovered(
    rebooted: &SimStorage,
    options: LogOptions,
    observed: &Observed,
    trial: u64,
) -> RecoveryReport {
    let (log, report) = PartitionLog::open(rebooted.clone(), &dir(), options)
        .await
        .unwrap_or_else(|e| panic!("trial {trial}: {e}"));
    assert!(
        report.next_offset >= observed.handed_out_end,
        "trial {trial}: offsets reused ({report:?})"
    );
    let records = log.read(Offset(0), u32::MAX, u64::MAX).await.unwrap();
    let mut recovered = BTreeMap::new();
    let mut previous_end = Offset(0);
    for polled in &records {
        let bytes = polled.to_record();
        let header =
            validate_record(&bytes, Verify::Checksums).expect("nothing corrupt is readable");
        let base_offset = Offset(header.base_offset);
        assert!(
            base_offset >= previous_end,
            "trial {trial}: offsets must increase"
        );
        previous_end = Offset(header.last_offset()).next();
        let appended = observed.appended.get(&base_offset);
        assert_eq!(
            appended,
            Some(&bytes),
            "trial {trial}: recovered record {base_offset} differs from the appended one"
        );
        recovered.insert(base_offset, bytes);
    }
    for base in &observed.acked {
        assert!(
            recovered.contains_key(base),
            "trial {trial}: durable ack of offset {base} lost"
        );
    }
    let next = log.append(record(1, 1, 1), 0).unwrap();
    assert!(next.base_offset >= observed.handed_out_end);
    report
}

#[compio::test]
async fn given_crash_after_nth_sync_when_reopening_should_keep_every_durable_ack() {
    let (mut acked_total, mut torn_tails, mut unacked_survivors) = (0, 0, 0);
    for trial in 0..TRIALS {
        let mut rng = StdRng::seed_from_u64(trial);
        let options = trial_options(&mut rng);
        let storage = SimStorage::new();
        let crash_point = Some(rng.random_range(1..80));
        let faults = if rng.random_bool(0.5) {
            SimFaults {
                crash_after_syncs: crash_point,
                ..SimFaults::default()
            }
        } else {
            SimFaults {
                crash_after_writes: crash_point,
                ..SimFaults::default()
            }
        };
        storage.set_faults(faults);
        let observed = run_until_crash(&storage, &options, trial).await;
        acked_total += observed.acked.len();
        let mode = if rng.random_bool(0.8) {
            CrashMode::Torn { seed: trial }
        } else {
            CrashMode::Clean
        };
        let rebooted = storage.crash(mode);
        let report = check_recovered(&rebooted, options.clone(), &observed, trial).await;
        torn_tails += usize::from(!report.truncated.is_empty());
        unacked_survivors +=
            usize::from(report.messages > 0 && observed.acked.len() < observed.appended.len());
        // A second crash right after recovery must not lose anything either.
        let again = rebooted.crash(CrashMode::Torn { seed: trial + 1 });
        check_recovered(&again, options, &observed, trial).await;
    }
    assert!(
        acked_total > 500,
        "the trials must exercise acknowledged writes ({acked_total})"
    );
    assert!(
        torn_tails > 10,
        "the trials must exercise torn tails ({torn_tails})"
    );
    assert!(unacked_survivors > 0);
}

#[compio::test]
async fn given_always_failing_fsync_should_never_ack_and_recover_what_is_on_disk() {
    let storage = SimStorage::new();
    let (log, _) = open(&storage, small_options()).await;
    storage.set_faults(SimFaults {
        fail_all_syncs: true,
        ..SimFaults::default()
    });
    let receipt = log.append(record(1, 2, 10), 1).unwrap();
    assert!(matches!(
        log.wait_durable(receipt.last_offset).await,
        Err(StorageError::Poisoned { .. })
    ));
    assert!(matches!(
        log.wait_durable(receipt.last_offset).await,
        Err(StorageError::Poisoned { .. })
    ));
    assert_eq!(log.durable_offset(), None);
    storage.set_faults(SimFaults::default());
    let (log, report) = open(&storage.crash(CrashMode::Clean), small_options()).await;
    assert_eq!(log.last_offset(), None);
    assert!(report.next_offset >= Offset(2));
}
