//! A partition a single node wrote, outside any group, adopted by a group
//! of one (`adopt_log`): what it held stays readable at its offsets, its
//! stored offsets stay, and new appends follow on.

use super::*;

#[compio::test]
async fn given_a_single_node_partition_when_a_group_of_one_adopts_it_should_serve_it_and_follow_on()
{
    let storage = SimStorage::new();
    storage
        .create_dir_all(&partition_dir())
        .await
        .expect("dirs");
    // A single node's partition, as its build wrote it: a segment log at
    // the offsets it stamped, and an offset file.
    let (log, _) = storage::PartitionLog::open(
        storage.clone(),
        &partition_dir(),
        LogOptions {
            offset_reservation: 64,
            ..LogOptions::default()
        },
    )
    .await
    .expect("opens");
    for tag in 1..=4 {
        log.ensure_reserved(3).await.expect("reserved");
        log.append(record(tag, 3), 1_000 + tag).expect("appended");
    }
    log.sync().await.expect("synced");
    drop(log);
    storage::offsets::OffsetStore::new(storage.clone(), &partition_dir())
        .store(ConsumerKind::Consumer, 5, Offset(7), true)
        .await
        .expect("stored");
    let end = adopt_log(storage.clone(), &partition_dir(), &journal_dir())
        .await
        .expect("adopted");
    assert_eq!(end, Offset(12));

    let partition = Partition::open(storage.clone(), &partition_dir(), options(), 0)
        .await
        .expect("opens")
        .partition;
    let placement = Placement {
        replicas: 1,
        ..crate::replicated::net::placement(0, Limits::default())
    };
    let mut net: Net<ReplicatedPartition<SimStorage>> = Net::new(1);
    net.storages[0] = storage;
    let node = ReplicatedPartition::open(
        net.storages[0].clone(),
        &journal_dir(),
        placement,
        77,
        Rc::new(partition),
        false,
    )
    .await
    .expect("the group opens from the seeded checkpoint");
    net.nodes[0] = Some(node);
    net.tick(40).await;
    let adopted = net.node(0).partition().clone();
    assert_eq!(
        adopted.committed_end(),
        Offset(12),
        "all of it is committed"
    );
    assert_eq!(
        adopted.stored_offset((ConsumerKind::Consumer, 5)),
        Some(Offset(7))
    );
    let polled = adopted
        .poll(PollRequest {
            start: PollStart::First,
            count: 100,
            consumer: (ConsumerKind::Consumer, 1),
            auto_commit: false,
            max_bytes: u64::MAX,
        })
        .await
        .expect("polls");
    let offsets: Vec<u64> = polled.records.iter().map(|r| r.first_offset.0).collect();
    assert_eq!(offsets, [0, 3, 6, 9]);
    let batch = record(9, 2);
    let mut command = Command::Append {
        range: 0..batch.len(),
        buffer: batch,
    };
    let node = net.node_mut(0);
    let Submit::Prepared { effects, .. } = node
        .submit(&mut command, 5_000_000)
        .await
        .expect("storage works")
    else {
        panic!("the group of one prepares");
    };
    net.take(effects);
    net.deliver().await;
    net.tick(5).await;
    let (.., result) = net.replies.last().expect("answered");
    assert_eq!(
        Applied::decode(&command, result),
        Some(Applied::Appended {
            base_offset: Offset(12)
        })
    );
}
