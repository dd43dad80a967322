use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::*;
use crate::metadata::ids::{ConsumerGroupId, PartitionId, StreamId, TopicId};

fn with_topic(partitions_count: u32) -> Harness {
    let mut h = Harness::new();
    h.ok(create_stream("s"));
    h.ok(create_topic(id(0), "t", partitions_count));
    h
}

fn create_group(group: &str) -> OpKind {
    OpKind::CreateConsumerGroup {
        stream: id(0),
        topic: id(0),
        name: group.to_owned(),
    }
}

fn join(group: Ident, client: u128) -> OpKind {
    OpKind::JoinConsumerGroup {
        stream: id(0),
        topic: id(0),
        group,
        client: ClientId(client),
        in_flight: Vec::new(),
    }
}

fn leave(group: Ident, client: u128) -> OpKind {
    OpKind::LeaveConsumerGroup {
        stream: id(0),
        topic: id(0),
        group,
        client: ClientId(client),
    }
}

fn assigned(h: &Harness, client: u128) -> Option<Vec<u32>> {
    let assignment = h
        .state
        .assignment(&id(0), &id(0), &id(0), ClientId(client))
        .expect("group");
    assignment.map(|a| a.partitions.iter().map(|p| p.0).collect())
}

fn generation(h: &Harness) -> u64 {
    h.state
        .find_group(&id(0), &id(0), &id(0))
        .expect("group")
        .generation
}

#[test]
fn given_deleted_group_when_creating_should_never_reuse_its_id() {
    let mut h = with_topic(1);
    let created = h.ok(create_group("a"));
    let expected = ApplyOutcome::GroupCreated {
        stream: StreamId(0),
        topic: TopicId(0),
        group: ConsumerGroupId(0),
    };
    assert_eq!(created, expected);
    h.ok(OpKind::DeleteConsumerGroup {
        stream: id(0),
        topic: id(0),
        group: name("a"),
    });
    let again = h.ok(create_group("a"));
    assert!(matches!(
        again,
        ApplyOutcome::GroupCreated {
            group: ConsumerGroupId(1),
            ..
        }
    ));
}

#[test]
fn given_group_names_and_ids_when_applying_should_return_5004_5005_5000() {
    let mut h = with_topic(1);
    h.ok(create_group("g"));
    assert_eq!(h.code(create_group("g")), 5004);
    assert_eq!(h.code(create_group("")), 5005);
    let missing = OpKind::DeleteConsumerGroup {
        stream: id(0),
        topic: id(0),
        group: id(9),
    };
    assert_eq!(h.code(missing), 5000);
    h.register(1, UserId::ROOT);
    assert_eq!(h.code(join(name("nope"), 1)), 5000);
    assert_eq!(h.code(join(id(0), 2)), 100);
    assert_eq!(h.code(leave(id(0), 1)), 5006);
    let no_topic = OpKind::CreateConsumerGroup {
        stream: id(0),
        topic: id(4),
        name: "g".into(),
    };
    assert_eq!(h.code(no_topic), 2010);
}

#[test]
fn given_joins_and_leaves_when_rebalancing_should_share_fairly_and_bump_generation() {
    let mut h = with_topic(3);
    h.ok(create_group("g"));
    for client in [1, 2] {
        h.register(client, UserId::ROOT);
    }
    h.ok(join(id(0), 2));
    assert_eq!(assigned(&h, 2), Some(vec![0, 1, 2]));
    // Cooperative join: the first member in ClientId order (1) may hold one
    // extra; member 2 gives up its excess from the end of its list.
    h.ok(join(id(0), 1));
    assert_eq!(assigned(&h, 1), Some(vec![1, 2]));
    assert_eq!(assigned(&h, 2), Some(vec![0]));
    assert_eq!(generation(&h), 2);
    let again = h.ok(join(id(0), 1));
    assert!(matches!(
        again,
        ApplyOutcome::GroupJoined { changed: false, .. }
    ));
    assert_eq!(generation(&h), 2);
    h.ok(leave(id(0), 2));
    assert_eq!(assigned(&h, 1), Some(vec![0, 1, 2]));
    assert_eq!(assigned(&h, 2), None);
    assert_eq!(generation(&h), 3);
}

#[test]
fn given_partition_changes_when_group_has_members_should_rebalance() {
    let mut h = with_topic(2);
    h.ok(create_group("g"));
    h.register(1, UserId::ROOT);
    h.register(2, UserId::ROOT);
    h.ok(join(id(0), 1));
    h.ok(join(id(0), 2));
    h.ok(OpKind::CreatePartitions {
        stream: id(0),
        topic: id(0),
        count: 2,
    });
    assert_eq!(assigned(&h, 1), Some(vec![0, 2]));
    assert_eq!(assigned(&h, 2), Some(vec![1, 3]));
    h.ok(OpKind::DeletePartitions {
        stream: id(0),
        topic: id(0),
        count: 3,
    });
    assert_eq!(assigned(&h, 1), Some(vec![0]));
    assert_eq!(assigned(&h, 2), Some(vec![]));
    assert_eq!(generation(&h), 4);
}

#[test]
fn given_unregistered_client_when_member_should_leave_every_group() {
    let mut h = with_topic(2);
    h.ok(create_group("a"));
    h.ok(create_group("b"));
    h.register(1, UserId::ROOT);
    h.register(2, UserId::ROOT);
    for group in [0, 1] {
        h.ok(join(id(group), 1));
    }
    h.ok(join(id(0), 2));
    assert_eq!(h.state.client_memberships(ClientId(1)).len(), 2);
    let outcome = h.ok(OpKind::UnregisterClient {
        client: ClientId(1),
    });
    assert_eq!(
        outcome,
        ApplyOutcome::ClientUnregistered {
            client: ClientId(1),
            groups_left: 2
        }
    );
    assert_eq!(assigned(&h, 2), Some(vec![0, 1]));
    assert!(h.state.client(ClientId(1)).is_none());
    assert_eq!(
        h.code(OpKind::UnregisterClient {
            client: ClientId(1)
        }),
        100
    );
}

#[test]
fn given_random_membership_changes_when_rebalancing_should_keep_invariants() {
    let mut rng = StdRng::seed_from_u64(11);
    let mut h = with_topic(5);
    h.ok(create_group("g"));
    for client in 0..6 {
        h.register(client, UserId::ROOT);
    }
    let mut last_generation = 0;
    for _ in 0..300 {
        let client = rng.random_range(0..6);
        let partition = PartitionId(rng.random_range(0..8));
        let kind = match rng.random_range(0..5) {
            0 => join(id(0), client),
            1 => OpKind::JoinConsumerGroup {
                stream: id(0),
                topic: id(0),
                group: id(0),
                client: ClientId(client),
                in_flight: vec![partition, PartitionId(partition.0 / 2)],
            },
            2 => leave(id(0), client),
            3 => OpKind::CompleteRevocation {
                stream: id(0),
                topic: id(0),
                group: id(0),
                partition,
            },
            _ => OpKind::CreatePartitions {
                stream: id(0),
                topic: id(0),
                count: 1,
            },
        };
        let changed = !matches!(
            h.apply(kind),
            Ok(ApplyOutcome::GroupJoined { changed: false, .. })
                | Ok(ApplyOutcome::RevocationCompleted { changed: false, .. })
                | Err(_)
        );
        let topic = h.state.find_topic(&id(0), &id(0)).expect("topic");
        let group = topic.group(ConsumerGroupId(0)).expect("group");
        assert!(group.assignment_is_valid(topic.partitions_count()));
        let owners = (0..topic.partitions_count()).filter(|p| {
            let partition = PartitionId(*p);
            group.owner_of(partition).is_some() || group.pending_revocation(partition).is_some()
        });
        let expected_owned = if group.members_count() > 0 {
            topic.partitions_count()
        } else {
            0
        };
        assert_eq!(owners.count() as u32, expected_owned);
        assert_eq!(group.generation > last_generation, changed);
        last_generation = group.generation;
    }
}

#[test]
fn given_in_flight_partition_when_joining_should_hand_over_after_completion() {
    let mut h = with_topic(2);
    h.ok(create_group("g"));
    h.register(1, UserId::ROOT);
    h.register(2, UserId::ROOT);
    h.ok(join(id(0), 1));
    h.ok(OpKind::JoinConsumerGroup {
        stream: id(0),
        topic: id(0),
        group: name("g"),
        client: ClientId(2),
        in_flight: vec![PartitionId(1)],
    });
    assert_eq!(assigned(&h, 1), Some(vec![0]));
    assert_eq!(assigned(&h, 2), Some(vec![]));
    let group = h.state.find_group(&id(0), &id(0), &id(0)).expect("group");
    assert!(group.may_commit(ClientId(1), PartitionId(1)));
    let complete = OpKind::CompleteRevocation {
        stream: id(0),
        topic: id(0),
        group: id(0),
        partition: PartitionId(1),
    };
    let outcome = h.ok(complete.clone());
    assert!(matches!(
        outcome,
        ApplyOutcome::RevocationCompleted { changed: true, .. }
    ));
    assert_eq!(assigned(&h, 2), Some(vec![1]));
    assert_eq!(generation(&h), 3);
    let again = h.ok(complete);
    assert!(matches!(
        again,
        ApplyOutcome::RevocationCompleted { changed: false, .. }
    ));
}
