//! The partition's rules on the simulated disk: auto-commit and offsets
//! across a process kill, and purges interrupted by a crash at every sync.

use std::path::PathBuf;

use protocol::batch::build_record;
use storage::seam::{CrashMode, SimFaults};
use storage::{LogOptions, SimStorage};

use super::*;

fn dir() -> PathBuf {
    PathBuf::from("/data/streams/1/topics/1/partitions/0")
}

fn options() -> PartitionOptions {
    PartitionOptions {
        log: LogOptions {
            segment_size_bytes: 4096,
            offset_reservation: 64,
            ..LogOptions::default()
        },
        durability: Durability::Replicated,
        offset_durability: Durability::Replicated,
        replicated_by_group: false,
    }
}

async fn open(storage: &SimStorage, committed_purge: u64) -> Opened<SimStorage> {
    Partition::open(storage.clone(), &dir(), options(), committed_purge)
        .await
        .expect("open")
}

async fn append(partition: &Partition<SimStorage>, tag: u64, count: usize) -> Committed {
    let payloads: Vec<Vec<u8>> = (0..count)
        .map(|i| format!("{tag}-{i}").into_bytes())
        .collect();
    let messages: Vec<(u128, &[u8], &[u8])> = payloads
        .iter()
        .enumerate()
        .map(|(i, p)| (u128::from(tag) << 32 | i as u128, p.as_slice(), &b""[..]))
        .collect();
    let record = build_record(tag, &messages);
    let whole = 0..record.len();
    partition
        .append(record, whole, || tag)
        .await
        .expect("append")
        .1
}

const CONSUMER: ConsumerKey = (ConsumerKind::Consumer, 7);

#[compio::test]
async fn given_auto_commit_poll_when_the_process_is_killed_should_resume_after_the_last_served() {
    let storage = SimStorage::new();
    let partition = open(&storage, 0).await.partition;
    append(&partition, 1, 5).await;
    append(&partition, 2, 5).await;
    let polled = partition
        .poll(
            PollRequest {
                start: PollStart::Next,
                count: 4,
                consumer: CONSUMER,
                auto_commit: true,
                max_bytes: u64::MAX,
            },
            0,
        )
        .await
        .unwrap();
    assert_eq!(polled.records.iter().map(|r| r.count).sum::<u32>(), 4);
    assert_eq!(partition.stored_offset(CONSUMER), Some(Offset(3)));

    let killed = storage.crash(CrashMode::Process);
    let reopened = open(&killed, 0).await.partition;
    assert_eq!(
        reopened.log().last_offset(),
        Some(Offset(9)),
        "acknowledged appends survive"
    );
    let next = reopened
        .poll(
            PollRequest {
                start: PollStart::Next,
                count: 100,
                consumer: CONSUMER,
                auto_commit: false,
                max_bytes: u64::MAX,
            },
            0,
        )
        .await
        .unwrap();
    assert_eq!(
        next.records.first().map(|r| r.first_offset),
        Some(Offset(4))
    );
}

#[compio::test]
async fn given_offset_beyond_the_end_when_storing_should_refuse() {
    let storage = SimStorage::new();
    let partition = open(&storage, 0).await.partition;
    let refused = partition.store_offset(CONSUMER, Offset(0), 0).await;
    assert!(matches!(
        refused,
        Err(PartitionError::OffsetBeyondEnd { offset: Offset(0) })
    ));
    append(&partition, 1, 2).await;
    assert!(
        partition
            .store_offset(CONSUMER, Offset(1), 0)
            .await
            .unwrap()
            .0
    );
    assert!(matches!(
        partition
            .delete_offset((ConsumerKind::Consumer, 8), 0)
            .await,
        Err(PartitionError::OffsetNotFound)
    ));
}

#[compio::test]
async fn given_group_served_beyond_its_offset_when_asked_should_report_in_flight() {
    let storage = SimStorage::new();
    let partition = open(&storage, 0).await.partition;
    append(&partition, 1, 3).await;
    let group = (ConsumerKind::ConsumerGroup, 1);
    partition
        .poll(
            PollRequest {
                start: PollStart::Offset(Offset(0)),
                count: 3,
                consumer: group,
                auto_commit: false,
                max_bytes: u64::MAX,
            },
            0,
        )
        .await
        .unwrap();
    assert!(partition.in_flight(group));
    let (caught_up, _) = partition.store_offset(group, Offset(2), 0).await.unwrap();
    assert!(caught_up && !partition.in_flight(group));
}

/// A purge committed by the metadata but cut short by a crash after any
/// number of syncs is carried out at the next open; a completed one is
/// never repeated (messages appended after it survive the next open).
#[compio::test]
async fn given_purge_interrupted_at_every_sync_when_reopening_should_complete_it_exactly_once() {
    let mut crash_point = 0u64;
    loop {
        let storage = SimStorage::new();
        let partition = open(&storage, 0).await.partition;
        append(&partition, 1, 4).await;
        partition
            .store_offset(CONSUMER, Offset(2), 0)
            .await
            .unwrap();
        partition.flush(true).await.unwrap();
        storage.set_faults(SimFaults {
            crash_after_syncs: Some(storage.syncs_done() + crash_point),
            ..SimFaults::default()
        });
        let finished = partition.purge(1).await.is_ok();
        let rebooted = storage.crash(CrashMode::Clean);
        let opened = open(&rebooted, 1).await;
        let partition = opened.partition;
        assert_eq!(
            partition.log().last_offset(),
            None,
            "crash point {crash_point}"
        );
        assert_eq!(
            partition.stored_offset(CONSUMER),
            None,
            "crash point {crash_point}"
        );
        assert_eq!(partition.purge_generation(), 1);
        append(&partition, 2, 1).await;
        partition.flush(true).await.unwrap();
        let appended = partition.log().last_offset();
        assert!(appended.is_some());
        let again = open(&rebooted.crash(CrashMode::Clean), 1).await;
        assert!(!again.purge_completed, "a recorded purge never runs twice");
        assert_eq!(again.partition.log().last_offset(), appended);
        if finished {
            assert!(
                !opened.purge_completed,
                "a finished purge is recorded durably"
            );
            break;
        }
        assert!(opened.purge_completed, "an interrupted purge is completed");
        crash_point += 1;
        assert!(crash_point < 64, "a purge finishes within 64 syncs");
    }
}

#[compio::test]
async fn given_partition_created_after_a_purge_when_reopened_should_keep_its_messages() {
    let storage = SimStorage::new();
    let partition = Partition::create(storage.clone(), &dir(), options(), 3)
        .await
        .unwrap();
    append(&partition, 1, 2).await;
    partition.flush(true).await.unwrap();
    let reopened = open(&storage.crash(CrashMode::Clean), 3).await;
    assert!(
        !reopened.purge_completed,
        "it never missed the topic's purges"
    );
    assert_eq!(reopened.partition.log().last_offset(), Some(Offset(1)));
}

#[compio::test]
async fn given_appends_and_stores_when_committed_should_number_them_in_order_per_partition() {
    let storage = SimStorage::new();
    let partition = open(&storage, 0).await.partition;
    let first = append(&partition, 1, 2).await;
    let (_, stored) = partition
        .store_offset(CONSUMER, Offset(1), 0)
        .await
        .unwrap();
    let second = append(&partition, 2, 2).await;
    assert_eq!(
        stored.op.0,
        first.op.0 + 1,
        "an offset store is an op of the group"
    );
    assert_eq!(second.op.0, stored.op.0 + 1);
    assert!(second.commit >= second.op, "answered only once committed");
}

#[compio::test]
async fn given_restart_when_appending_should_never_reuse_an_op_number() {
    let storage = SimStorage::new();
    let partition = open(&storage, 0).await.partition;
    let before = append(&partition, 1, 1).await;
    let killed = storage.crash(CrashMode::Process);
    let reopened = open(&killed, 0).await.partition;
    let after = append(&reopened, 2, 1).await;
    assert!(after.op > before.op, "op numbers grow across a restart");
}

#[compio::test]
async fn given_many_concurrent_appends_when_the_pipeline_fills_should_all_commit() {
    let storage = SimStorage::new();
    let partition = std::rc::Rc::new(open(&storage, 0).await.partition);
    let tasks: Vec<_> = (0..300u64)
        .map(|tag| {
            let partition = partition.clone();
            compio::runtime::spawn(async move { append(&partition, tag, 1).await })
        })
        .collect();
    let mut ops = Vec::new();
    for task in tasks {
        ops.push(task.await.unwrap().op);
    }
    ops.sort();
    ops.dedup();
    assert_eq!(ops.len(), 300, "every append got its own op");
    assert_eq!(partition.log().last_offset(), Some(Offset(299)));
}

#[compio::test]
async fn given_a_batch_not_yet_written_when_polling_should_not_serve_it() {
    let storage = SimStorage::new();
    let partition = open(&storage, 0).await.partition;
    append(&partition, 1, 2).await;
    // Appended to the log's cache but not yet written (no acknowledgement).
    let pending = build_record(2, &[(9, &b"late"[..], &b""[..])]);
    partition.log().append(pending, 7).unwrap();
    let served = served_from_zero(&partition).await;
    assert_eq!(served, 2, "only the written, acknowledged batch");
    partition.flush(false).await.unwrap();
    let served = served_from_zero(&partition).await;
    assert_eq!(served, 3, "visible once written");
}

/// How many messages a poll from offset 0 serves (up to 10).
async fn served_from_zero(partition: &Partition<SimStorage>) -> u32 {
    let request = PollRequest {
        start: PollStart::Offset(Offset(0)),
        count: 10,
        consumer: CONSUMER,
        auto_commit: false,
        max_bytes: u64::MAX,
    };
    let polled = partition.poll(request, 0).await.unwrap();
    polled.records.iter().map(|r| r.count).sum()
}
