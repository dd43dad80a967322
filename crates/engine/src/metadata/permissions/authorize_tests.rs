//! Exhaustive check of the storage spec §12 rules table: for every action and
//! every single flag (10 global, 6 stream, 4 topic), the action is allowed
//! exactly when the flag is in the row's "any of" list.

use std::collections::BTreeMap;

use super::*;
use crate::metadata::permissions::{GLOBAL_FLAG_COUNT, STREAM_FLAG_COUNT, TOPIC_FLAG_COUNT};

const GLOBAL: [&str; GLOBAL_FLAG_COUNT] = [
    "G.manage_servers",
    "G.read_servers",
    "G.manage_users",
    "G.read_users",
    "G.manage_streams",
    "G.read_streams",
    "G.manage_topics",
    "G.read_topics",
    "G.poll_messages",
    "G.send_messages",
];
const STREAM: [&str; STREAM_FLAG_COUNT] = [
    "S.manage_stream",
    "S.read_stream",
    "S.manage_topics",
    "S.read_topics",
    "S.poll_messages",
    "S.send_messages",
];
const TOPIC: [&str; TOPIC_FLAG_COUNT] = [
    "T.manage_topic",
    "T.read_topic",
    "T.poll_messages",
    "T.send_messages",
];

const USER: UserId = UserId(7);
const OTHER: UserId = UserId(8);
const S: StreamId = StreamId(1);
const T: TopicId = TopicId(2);

/// Permissions with exactly the named flag set (on stream `S` / topic `T`).
fn single_flag(name: &str) -> Permissions {
    let mut permissions = Permissions::default();
    if let Some(i) = GLOBAL.iter().position(|n| *n == name) {
        let mut flags = [false; GLOBAL_FLAG_COUNT];
        flags[i] = true;
        permissions.global = GlobalPermissions::from_flags(flags);
    } else if let Some(i) = STREAM.iter().position(|n| *n == name) {
        let mut flags = [false; STREAM_FLAG_COUNT];
        flags[i] = true;
        permissions
            .streams
            .insert(S, StreamPermissions::from_flags(flags, BTreeMap::new()));
    } else {
        let i = TOPIC.iter().position(|n| *n == name).expect("known flag");
        let mut flags = [false; TOPIC_FLAG_COUNT];
        flags[i] = true;
        let topics = BTreeMap::from([(T, TopicPermissions::from_flags(flags))]);
        permissions
            .streams
            .insert(S, StreamPermissions::from_flags([false; 6], topics));
    }
    permissions
}

const READ_TOPIC_GS: [&str; 8] = [
    "G.read_streams",
    "G.manage_streams",
    "G.manage_topics",
    "G.read_topics",
    "S.manage_stream",
    "S.read_stream",
    "S.manage_topics",
    "S.read_topics",
];

fn rules() -> Vec<(Action, Vec<&'static str>)> {
    let read_topic: Vec<_> = READ_TOPIC_GS
        .iter()
        .copied()
        .chain(["T.manage_topic", "T.read_topic"])
        .collect();
    let all: Vec<_> = GLOBAL
        .iter()
        .chain(&STREAM)
        .chain(&TOPIC)
        .copied()
        .collect();
    vec![
        (
            Action::ReadServers,
            vec!["G.manage_servers", "G.read_servers"],
        ),
        (
            Action::ReadUsers { target: None },
            vec!["G.manage_users", "G.read_users"],
        ),
        (
            Action::ReadUsers {
                target: Some(OTHER),
            },
            vec!["G.manage_users", "G.read_users"],
        ),
        (Action::ManageUsers, vec!["G.manage_users"]),
        (
            Action::ChangePassword { target: OTHER },
            vec!["G.manage_users"],
        ),
        (
            Action::ListStreams,
            vec!["G.manage_streams", "G.read_streams"],
        ),
        (
            Action::GetStream { stream: S },
            vec![
                "G.manage_streams",
                "G.read_streams",
                "S.manage_stream",
                "S.read_stream",
            ],
        ),
        (Action::CreateStream, vec!["G.manage_streams"]),
        (
            Action::ManageStream { stream: S },
            vec!["G.manage_streams", "S.manage_stream"],
        ),
        (Action::ListTopics { stream: S }, READ_TOPIC_GS.to_vec()),
        (
            Action::ReadTopic {
                stream: S,
                topic: T,
            },
            read_topic,
        ),
        (
            Action::CreateTopic { stream: S },
            vec![
                "G.manage_streams",
                "G.manage_topics",
                "S.manage_stream",
                "S.manage_topics",
            ],
        ),
        (
            Action::ManageTopic {
                stream: S,
                topic: T,
            },
            vec![
                "G.manage_streams",
                "G.manage_topics",
                "S.manage_stream",
                "S.manage_topics",
                "T.manage_topic",
            ],
        ),
        (
            Action::PollMessages {
                stream: S,
                topic: T,
            },
            vec![
                "G.poll_messages",
                "G.read_topics",
                "G.manage_topics",
                "G.read_streams",
                "G.manage_streams",
                "S.poll_messages",
                "S.manage_stream",
                "S.read_stream",
                "S.manage_topics",
                "S.read_topics",
                "T.manage_topic",
                "T.read_topic",
                "T.poll_messages",
            ],
        ),
        (
            Action::SendMessages {
                stream: S,
                topic: T,
            },
            vec![
                "G.send_messages",
                "G.manage_streams",
                "G.manage_topics",
                "S.send_messages",
                "S.manage_stream",
                "S.manage_topics",
                "T.manage_topic",
                "T.send_messages",
            ],
        ),
        (Action::ManageOwnTokens, all.clone()),
        (Action::Authenticated, all),
    ]
}

#[test]
fn given_each_single_flag_when_authorizing_each_action_should_match_rules_table() {
    let flags: Vec<&str> = GLOBAL
        .iter()
        .chain(&STREAM)
        .chain(&TOPIC)
        .copied()
        .collect();
    for (action, allowed) in rules() {
        for flag in &flags {
            let permissions = single_flag(flag);
            let subject = Subject {
                user_id: USER,
                permissions: Some(&permissions),
            };
            let expected = allowed.contains(flag);
            assert_eq!(
                authorize(subject, action),
                expected,
                "{action:?} with {flag}"
            );
        }
    }
}

#[test]
fn given_flags_on_another_stream_or_topic_when_authorizing_should_deny() {
    let permissions = single_flag("T.manage_topic");
    let subject = Subject {
        user_id: USER,
        permissions: Some(&permissions),
    };
    assert!(!authorize(
        subject,
        Action::ManageTopic {
            stream: S,
            topic: TopicId(3)
        }
    ));
    assert!(!authorize(
        subject,
        Action::ManageTopic {
            stream: StreamId(3),
            topic: T
        }
    ));
    let stream_level = single_flag("S.manage_stream");
    let subject = Subject {
        user_id: USER,
        permissions: Some(&stream_level),
    };
    assert!(!authorize(
        subject,
        Action::ManageStream {
            stream: StreamId(3)
        }
    ));
}

#[test]
fn given_root_or_no_permissions_when_authorizing_should_short_circuit() {
    let root = Subject {
        user_id: UserId::ROOT,
        permissions: None,
    };
    let nobody = Subject {
        user_id: USER,
        permissions: None,
    };
    for (action, _) in rules() {
        assert!(authorize(root, action), "{action:?}");
    }
    assert!(!authorize(nobody, Action::ListStreams));
    assert!(authorize(nobody, Action::ManageOwnTokens));
    assert!(authorize(nobody, Action::Authenticated));
}

#[test]
fn given_oneself_when_reading_user_or_changing_password_should_allow() {
    let nobody = Subject {
        user_id: USER,
        permissions: None,
    };
    assert!(authorize(nobody, Action::ReadUsers { target: Some(USER) }));
    assert!(authorize(nobody, Action::ChangePassword { target: USER }));
    assert!(!authorize(nobody, Action::ReadUsers { target: None }));
    assert!(!authorize(nobody, Action::ChangePassword { target: OTHER }));
}
