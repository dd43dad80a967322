use super::*;

const NONE: &[PartitionId] = &[];

fn group() -> ConsumerGroup {
    ConsumerGroup::new(ConsumerGroupId(0), "g".into(), 0)
}

fn assigned(group: &ConsumerGroup, client: u128) -> Vec<u32> {
    let member = group.member(ClientId(client)).expect("member");
    member.partitions.iter().map(|p| p.0).collect()
}

fn partitions(ids: &[u32]) -> Vec<PartitionId> {
    ids.iter().copied().map(PartitionId).collect()
}

#[test]
fn given_first_member_when_joining_should_receive_every_partition() {
    let mut g = group();
    assert!(g.join(ClientId(20), 1, 5, NONE));
    assert_eq!(assigned(&g, 20), vec![0, 1, 2, 3, 4]);
    assert_eq!(g.generation, 1);
}

#[test]
fn given_second_member_when_joining_without_in_flight_should_move_excess_at_once() {
    let mut g = group();
    g.join(ClientId(20), 1, 5, NONE);
    assert!(g.join(ClientId(10), 2, 5, NONE));
    // Fair share 2, one extra for the first member in ClientId order (10).
    assert_eq!(assigned(&g, 20), vec![0, 1]);
    assert_eq!(assigned(&g, 10), vec![2, 3, 4]);
    assert_eq!(g.generation, 2);
    assert_eq!(g.owner_of(PartitionId(3)), Some(ClientId(10)));
}

#[test]
fn given_in_flight_partition_when_joining_should_park_it_as_pending_revocation() {
    let mut g = group();
    g.join(ClientId(1), 1, 4, NONE);
    assert!(g.join(ClientId(2), 7, 4, &partitions(&[3])));
    assert_eq!(assigned(&g, 1), vec![0, 1]);
    assert_eq!(assigned(&g, 2), vec![2]);
    let pending = g.pending_revocation(PartitionId(3)).expect("pending");
    assert_eq!(
        (pending.from, pending.to, pending.since_us),
        (ClientId(1), ClientId(2), 7)
    );
    assert_eq!(g.owner_of(PartitionId(3)), None);
    assert!(g.may_commit(ClientId(1), PartitionId(3)));
    assert!(!g.may_commit(ClientId(2), PartitionId(3)));
    assert!(g.complete_revocation(PartitionId(3), 4));
    assert_eq!(assigned(&g, 2), vec![2, 3]);
    assert!(!g.complete_revocation(PartitionId(3), 4));
    assert_eq!(g.generation, 3);
}

#[test]
fn given_pending_revocation_when_member_leaves_should_rebalance_eagerly() {
    let mut g = group();
    g.join(ClientId(1), 1, 2, NONE);
    g.join(ClientId(2), 2, 2, &partitions(&[1]));
    assert_eq!(g.pending_revocations().count(), 1);
    assert!(g.leave(ClientId(2), 2));
    assert_eq!(g.pending_revocations().count(), 0);
    assert_eq!(assigned(&g, 1), vec![0, 1]);
}

#[test]
fn given_member_when_joining_again_should_change_nothing() {
    let mut g = group();
    g.join(ClientId(1), 0, 2, NONE);
    assert!(!g.join(ClientId(1), 5, 2, NONE));
    assert_eq!(g.generation, 1);
}

#[test]
fn given_more_members_than_partitions_when_rebalancing_should_leave_some_idle() {
    let mut g = group();
    for client in 0..4 {
        g.join(ClientId(client), 0, 2, NONE);
    }
    assert_eq!(assigned(&g, 0), vec![0]);
    assert_eq!(assigned(&g, 1), vec![1]);
    assert!(assigned(&g, 3).is_empty());
    assert!(g.leave(ClientId(0), 2));
    assert_eq!(assigned(&g, 1), vec![0]);
    assert_eq!(assigned(&g, 2), vec![1]);
    assert!(!g.leave(ClientId(0), 2));
    assert_eq!(g.generation, 5);
}

#[test]
fn given_partition_count_change_when_rebalancing_should_deal_round_robin() {
    let mut g = group();
    g.join(ClientId(1), 0, 1, NONE);
    g.join(ClientId(2), 0, 1, NONE);
    g.partitions_changed(4);
    assert_eq!(assigned(&g, 1), vec![0, 2]);
    assert_eq!(assigned(&g, 2), vec![1, 3]);
    g.partitions_changed(1);
    assert_eq!(assigned(&g, 1), vec![0]);
    assert!(assigned(&g, 2).is_empty());
    assert_eq!(g.generation, 4);
}
