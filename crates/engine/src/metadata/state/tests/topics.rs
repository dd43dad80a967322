use super::*;
use crate::metadata::ids::{PartitionId, StreamId, TOPIC_ID_LIMIT, TopicId};
use crate::metadata::topic::option_value::{OptionEntry, OptionValue};
use crate::metadata::topic::options::{
    KEY_DURABILITY, KEY_MAX_TOPIC_SIZE, KEY_SEGMENT_SIZE, MaxTopicSize,
};

fn with_stream() -> Harness {
    let mut h = Harness::new();
    h.ok(create_stream("s"));
    h
}

fn partition_ids(h: &Harness) -> Vec<u32> {
    let topic = h.state.find_topic(&id(0), &id(0)).expect("topic exists");
    topic.partitions().iter().map(|p| p.id.0).collect()
}

#[test]
fn given_topics_when_deleting_and_creating_should_reuse_lowest_free_id() {
    let mut h = with_stream();
    for topic in ["a", "b", "c"] {
        h.ok(create_topic(id(0), topic, 1));
    }
    h.ok(OpKind::DeleteTopic {
        stream: id(0),
        topic: name("a"),
    });
    let outcome = h.ok(create_topic(id(0), "d", 2));
    let expected = ApplyOutcome::TopicCreated {
        stream: StreamId(0),
        topic: TopicId(0),
        partitions_count: 2,
    };
    assert_eq!(outcome, expected);
}

#[test]
fn given_topic_names_when_creating_should_be_unique_per_stream_only() {
    let mut h = with_stream();
    h.ok(create_stream("other"));
    h.ok(create_topic(id(0), "t", 1));
    assert_eq!(h.code(create_topic(id(0), "t", 1)), 2013);
    h.ok(create_topic(id(1), "t", 1));
    assert_eq!(h.code(create_topic(id(0), "", 1)), 2014);
    assert_eq!(h.code(create_topic(id(9), "t", 1)), 1009);
    h.ok(create_topic(id(0), "u", 1));
    let rename = OpKind::UpdateTopic {
        stream: id(0),
        topic: name("u"),
        name: "t".into(),
        options: vec![],
    };
    assert_eq!(h.code(rename), 2013);
}

#[test]
fn given_partition_counts_when_creating_topic_should_enforce_limits() {
    let mut h = with_stream();
    h.ok(create_topic(id(0), "empty", 0));
    h.ok(create_topic(id(0), "max", 1000));
    assert_eq!(h.code(create_topic(id(0), "over", 1001)), 2015);
    assert_eq!(
        h.state
            .find_topic(&id(0), &name("max"))
            .map(|t| t.partitions_count()),
        Ok(1000)
    );
}

#[test]
fn given_full_stream_when_creating_topic_should_return_2021() {
    let mut h = with_stream();
    for index in 0..TOPIC_ID_LIMIT {
        h.state
            .apply(&MetadataOp {
                timestamp_us: 1,
                actor: UserId::ROOT,
                kind: create_topic(id(0), &format!("t{index}"), 0),
            })
            .expect("below the topic limit");
    }
    assert_eq!(h.code(create_topic(id(0), "one-too-many", 0)), 2021);
}

#[test]
fn given_partitions_when_creating_and_deleting_should_append_and_remove_highest() {
    let mut h = with_stream();
    h.ok(create_topic(id(0), "t", 3));
    let created = h.ok(OpKind::CreatePartitions {
        stream: id(0),
        topic: id(0),
        count: 2,
    });
    let expected = ApplyOutcome::PartitionsCreated {
        stream: StreamId(0),
        topic: TopicId(0),
        first: PartitionId(3),
        count: 2,
    };
    assert_eq!(created, expected);
    assert_eq!(partition_ids(&h), vec![0, 1, 2, 3, 4]);
    let deleted = h.ok(OpKind::DeletePartitions {
        stream: id(0),
        topic: id(0),
        count: 3,
    });
    let expected = ApplyOutcome::PartitionsDeleted {
        stream: StreamId(0),
        topic: TopicId(0),
        first: PartitionId(2),
        count: 3,
    };
    assert_eq!(deleted, expected);
    assert_eq!(partition_ids(&h), vec![0, 1]);
    h.ok(OpKind::CreatePartitions {
        stream: id(0),
        topic: id(0),
        count: 1,
    });
    assert_eq!(partition_ids(&h), vec![0, 1, 2]);
}

#[test]
fn given_bad_partition_counts_when_changing_partitions_should_return_codes() {
    let mut h = with_stream();
    h.ok(create_topic(id(0), "t", 2));
    assert_eq!(
        h.code(OpKind::CreatePartitions {
            stream: id(0),
            topic: id(0),
            count: 0
        }),
        2015
    );
    assert_eq!(
        h.code(OpKind::CreatePartitions {
            stream: id(0),
            topic: id(0),
            count: 1001
        }),
        2015
    );
    assert_eq!(
        h.code(OpKind::DeletePartitions {
            stream: id(0),
            topic: id(0),
            count: 3
        }),
        2019
    );
    assert_eq!(
        h.code(OpKind::DeletePartitions {
            stream: id(0),
            topic: id(5),
            count: 1
        }),
        2010
    );
}

#[test]
fn given_partition_id_space_near_limit_when_creating_should_return_3013() {
    let mut h = with_stream();
    h.ok(create_topic(id(0), "t", 1000));
    for _ in 0..998 {
        h.state
            .apply(&MetadataOp {
                timestamp_us: 1,
                actor: UserId::ROOT,
                kind: OpKind::CreatePartitions {
                    stream: id(0),
                    topic: id(0),
                    count: 1000,
                },
            })
            .expect("below the partition limit");
    }
    let topic = h.state.find_topic(&id(0), &id(0)).expect("topic");
    assert_eq!(topic.partitions_count(), 999_000);
    h.ok(OpKind::CreatePartitions {
        stream: id(0),
        topic: id(0),
        count: 1000,
    });
    assert_eq!(
        h.code(OpKind::CreatePartitions {
            stream: id(0),
            topic: id(0),
            count: 1
        }),
        3013
    );
}

#[test]
fn given_segments_deletion_when_partition_missing_should_return_3007() {
    let mut h = with_stream();
    h.ok(create_topic(id(0), "t", 1));
    let ok = OpKind::DeleteSegments {
        stream: id(0),
        topic: id(0),
        partition: PartitionId(0),
        count: 4,
    };
    assert!(matches!(
        h.ok(ok),
        ApplyOutcome::SegmentsDeleted { count: 4, .. }
    ));
    let missing = OpKind::DeleteSegments {
        stream: id(0),
        topic: id(0),
        partition: PartitionId(1),
        count: 1,
    };
    assert_eq!(h.code(missing), 3007);
}

#[test]
fn given_options_when_creating_topic_should_store_resolved_and_client_sent_values() {
    let mut h = with_stream();
    let sent = vec![
        OptionEntry::new(KEY_DURABILITY, OptionValue::String("persisted".into())),
        OptionEntry::new(KEY_SEGMENT_SIZE, OptionValue::U64(2 << 20)),
    ];
    h.ok(OpKind::CreateTopic {
        stream: id(0),
        name: "t".into(),
        partitions_count: 1,
        options: sent.clone(),
    });
    let topic = h.state.find_topic(&id(0), &name("t")).expect("topic");
    assert_eq!(topic.options.segment_size_bytes, 2 << 20);
    assert_eq!(topic.client_options, sent);
    assert_eq!(topic.derived_options().len(), 7);

    let bad = vec![OptionEntry::new("unknown", OptionValue::Bool(true))];
    let refused = OpKind::CreateTopic {
        stream: id(0),
        name: "u".into(),
        partitions_count: 1,
        options: bad,
    };
    assert_eq!(h.code(refused), 4041);
}

#[test]
fn given_update_when_changing_max_size_should_validate_against_segment_size() {
    let mut h = with_stream();
    h.ok(create_topic(id(0), "t", 1));
    let update = |bytes: u64| OpKind::UpdateTopic {
        stream: id(0),
        topic: id(0),
        name: "renamed".into(),
        options: vec![OptionEntry::new(
            KEY_MAX_TOPIC_SIZE,
            OptionValue::U64(bytes),
        )],
    };
    assert_eq!(h.code(update(1 << 20)), 1019);
    h.ok(update(4 << 30));
    let topic = h
        .state
        .find_topic(&id(0), &name("renamed"))
        .expect("renamed");
    assert_eq!(topic.options.max_topic_size, MaxTopicSize::Bytes(4 << 30));
    assert_eq!(topic.client_options.len(), 1);
    let frozen = OpKind::UpdateTopic {
        stream: id(0),
        topic: id(0),
        name: "renamed".into(),
        options: vec![OptionEntry::new(
            KEY_SEGMENT_SIZE,
            OptionValue::U64(2 << 20),
        )],
    };
    assert_eq!(h.code(frozen), 4041);
}

#[test]
fn given_stream_level_permission_when_managing_topics_should_follow_rules() {
    use crate::metadata::permissions::StreamPermissions;
    let mut h = with_stream();
    h.ok(create_stream("other"));
    let mut permissions = Permissions::default();
    let manage = StreamPermissions {
        manage_topics: true,
        ..StreamPermissions::default()
    };
    permissions.streams.insert(StreamId(0), manage);
    h.ok(create_user("topic-admin", Some(permissions)));
    let admin = UserId(1);
    assert!(h.apply_as(admin, create_topic(id(0), "t", 1)).is_ok());
    assert_eq!(h.code_as(admin, create_topic(id(1), "t", 1)), 41);
    assert!(
        h.apply_as(
            admin,
            OpKind::PurgeTopic {
                stream: id(0),
                topic: id(0)
            }
        )
        .is_ok()
    );
    assert_eq!(h.code_as(admin, OpKind::DeleteStream { stream: id(0) }), 41);
}
