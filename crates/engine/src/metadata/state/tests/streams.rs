use super::*;
use crate::metadata::ids::{StreamId, TopicId};
use crate::metadata::ops::TopicPurged;

#[test]
fn given_deleted_stream_when_creating_should_reuse_lowest_free_id() {
    let mut h = Harness::new();
    for stream in ["a", "b", "c"] {
        h.ok(create_stream(stream));
    }
    h.ok(OpKind::DeleteStream { stream: name("b") });
    h.ok(OpKind::DeleteStream { stream: id(0) });
    assert_eq!(
        h.ok(create_stream("d")),
        ApplyOutcome::StreamCreated {
            stream: StreamId(0)
        }
    );
    assert_eq!(
        h.ok(create_stream("e")),
        ApplyOutcome::StreamCreated {
            stream: StreamId(1)
        }
    );
    assert_eq!(
        h.ok(create_stream("f")),
        ApplyOutcome::StreamCreated {
            stream: StreamId(3)
        }
    );
}

#[test]
fn given_existing_name_when_creating_or_renaming_stream_should_return_1012() {
    let mut h = Harness::new();
    h.ok(create_stream("a"));
    h.ok(create_stream("b"));
    assert_eq!(h.code(create_stream("a")), 1012);
    assert_eq!(
        h.code(OpKind::UpdateStream {
            stream: name("b"),
            name: "a".into()
        }),
        1012
    );
    h.ok(OpKind::UpdateStream {
        stream: name("b"),
        name: "b".into(),
    });
    h.ok(OpKind::UpdateStream {
        stream: name("b"),
        name: "c".into(),
    });
    assert!(h.state.find_stream(&name("c")).is_some());
    assert!(h.state.find_stream(&name("b")).is_none());
    assert_eq!(
        h.ok(create_stream("b")),
        ApplyOutcome::StreamCreated {
            stream: StreamId(2)
        }
    );
}

#[test]
fn given_bad_names_or_unknown_stream_when_applying_should_return_codes() {
    let mut h = Harness::new();
    assert_eq!(h.code(create_stream("")), 1013);
    assert_eq!(h.code(create_stream(&"x".repeat(256))), 1013);
    assert_eq!(h.code(OpKind::DeleteStream { stream: id(7) }), 1009);
    assert_eq!(
        h.code(OpKind::PurgeStream {
            stream: name("nope")
        }),
        1009
    );
    assert_eq!(
        h.code(OpKind::UpdateStream {
            stream: id(0),
            name: "x".into()
        }),
        1009
    );
}

#[test]
fn given_numeric_name_when_resolving_stream_should_read_it_as_id() {
    let mut h = Harness::new();
    h.ok(create_stream("first"));
    h.ok(create_stream("second"));
    assert_eq!(
        h.state.find_stream(&name("1")).map(|s| s.name()),
        Some("second")
    );
    assert_eq!(
        h.state.find_stream(&Ident::parse("first")).map(|s| s.id),
        Some(StreamId(0))
    );
}

#[test]
fn given_stream_with_topics_when_deleting_should_remove_everything_below() {
    let mut h = Harness::new();
    h.ok(create_stream("s"));
    h.ok(create_topic(name("s"), "t1", 2));
    h.ok(create_topic(name("s"), "t2", 1));
    h.ok(OpKind::CreateConsumerGroup {
        stream: id(0),
        topic: id(0),
        name: "g".into(),
    });
    h.ok(OpKind::DeleteStream { stream: name("s") });
    assert_eq!(h.state.streams_count(), 0);
    assert_eq!(h.state.namespaces().count(), 0);
    h.ok(create_stream("s"));
    assert_eq!(
        h.state.find_stream(&id(0)).map(|s| s.topics_count()),
        Some(0)
    );
}

#[test]
fn given_stream_with_topics_when_purging_should_bump_every_topic_generation() {
    let mut h = Harness::new();
    h.ok(create_stream("s"));
    h.ok(create_topic(id(0), "a", 1));
    h.ok(create_topic(id(0), "b", 1));
    h.ok(OpKind::PurgeTopic {
        stream: id(0),
        topic: id(1),
    });
    let outcome = h.ok(OpKind::PurgeStream { stream: id(0) });
    let purged = |topic, purge_generation| TopicPurged {
        stream: StreamId(0),
        topic: TopicId(topic),
        purge_generation,
    };
    assert_eq!(
        outcome,
        ApplyOutcome::StreamPurged {
            stream: StreamId(0),
            topics: vec![purged(0, 1), purged(1, 2)]
        }
    );
    assert_eq!(
        h.state
            .find_topic(&id(0), &id(0))
            .map(|t| t.partitions_count()),
        Ok(1)
    );
}

#[test]
fn given_user_without_permission_when_managing_streams_should_return_41() {
    let mut h = Harness::new();
    h.ok(create_user("reader", None));
    h.ok(create_stream("s"));
    assert_eq!(h.code_as(UserId(1), create_stream("t")), 41);
    assert_eq!(
        h.code_as(UserId(1), OpKind::DeleteStream { stream: id(0) }),
        41
    );
    // Not found passes through: the unauthorized caller still learns 1009.
    assert_eq!(
        h.code_as(UserId(1), OpKind::DeleteStream { stream: id(5) }),
        1009
    );
    // A deleted or unknown actor is denied.
    assert_eq!(h.code_as(UserId(42), create_stream("t")), 41);
}
