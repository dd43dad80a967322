//! The permission matrix through the real binary: a user holding exactly one
//! global permission tries one command of each family; allowed commands
//! succeed, denied ones fail with 41 Unauthorized (storage spec §12).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use harness::sdk::{id, name, root_client, tcp_client};
use harness::{ServerOptions, TestServer, Workdir};
use iggy::prelude::*;

const FLAGS: [&str; 10] = [
    "manage_servers",
    "read_servers",
    "manage_users",
    "read_users",
    "manage_streams",
    "read_streams",
    "manage_topics",
    "read_topics",
    "poll_messages",
    "send_messages",
];

fn only(flag: &str) -> Permissions {
    let mut g = GlobalPermissions::default();
    match flag {
        "manage_servers" => g.manage_servers = true,
        "read_servers" => g.read_servers = true,
        "manage_users" => g.manage_users = true,
        "read_users" => g.read_users = true,
        "manage_streams" => g.manage_streams = true,
        "read_streams" => g.read_streams = true,
        "manage_topics" => g.manage_topics = true,
        "read_topics" => g.read_topics = true,
        "poll_messages" => g.poll_messages = true,
        "send_messages" => g.send_messages = true,
        other => panic!("unknown flag {other}"),
    }
    Permissions {
        global: g,
        streams: None,
    }
}

/// Which flags allow each command (spec §12, global column).
fn allowed(command: &str) -> &'static [&'static str] {
    match command {
        "get_stats" => &["manage_servers", "read_servers"],
        "get_users" => &["manage_users", "read_users"],
        "create_user" => &["manage_users"],
        "get_streams" | "get_stream" => &["manage_streams", "read_streams"],
        "create_stream" => &["manage_streams"],
        "get_topics" => &[
            "manage_streams",
            "read_streams",
            "manage_topics",
            "read_topics",
        ],
        "create_topic" => &["manage_streams", "manage_topics"],
        "poll" => &[
            "poll_messages",
            "read_topics",
            "manage_topics",
            "read_streams",
            "manage_streams",
        ],
        "send" => &["send_messages", "manage_streams", "manage_topics"],
        other => panic!("unknown command {other}"),
    }
}

async fn attempt(client: &IggyClient, command: &str, tag: &str) -> Result<(), IggyError> {
    match command {
        "get_stats" => client.get_stats().await.map(drop),
        "get_users" => client.get_users().await.map(drop),
        "create_user" => client
            .create_user(&format!("made-{tag}"), "secret", UserStatus::Active, None)
            .await
            .map(drop),
        "get_streams" => client.get_streams().await.map(drop),
        "get_stream" => client.get_stream(&name("base")).await.map(drop),
        "create_stream" => client.create_stream(&format!("s-{tag}")).await.map(drop),
        "get_topics" => client.get_topics(&name("base")).await.map(drop),
        "create_topic" => client
            .create_topic(
                &name("base"),
                &format!("t-{tag}"),
                &TopicCreateOptions::default(),
            )
            .await
            .map(drop),
        "poll" => client
            .poll_messages(
                &name("base"),
                &name("t"),
                Some(0),
                &Consumer::new(id(1)),
                &PollingStrategy::first(),
                1,
                false,
            )
            .await
            .map(drop),
        "send" => {
            let mut messages = vec![IggyMessage::builder().payload("x".into()).build().unwrap()];
            client
                .send_messages(
                    &name("base"),
                    &name("t"),
                    &Partitioning::partition_id(0),
                    &mut messages,
                )
                .await
                .map(drop)
        }
        other => panic!("unknown command {other}"),
    }
}

#[tokio::test]
async fn given_single_global_permission_when_calling_each_command_should_allow_exactly_the_spec_table()
 {
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &ServerOptions::default());
    let root = root_client(server.tcp()).await;
    root.create_stream("base").await.unwrap();
    root.create_topic(&name("base"), "t", &TopicCreateOptions::default())
        .await
        .unwrap();
    let commands = [
        "get_stats",
        "get_users",
        "create_user",
        "get_streams",
        "get_stream",
        "create_stream",
        "get_topics",
        "create_topic",
        "poll",
        "send",
    ];
    let mut mismatches = Vec::new();
    for flag in FLAGS {
        let username = format!("user-{flag}");
        root.create_user(&username, "secret", UserStatus::Active, Some(only(flag)))
            .await
            .unwrap();
        let client = tcp_client(server.tcp()).await;
        client.login_user(&username, "secret").await.unwrap();
        for command in commands {
            let result = attempt(&client, command, flag).await;
            let expected = allowed(command).contains(&flag);
            match (&result, expected) {
                (Ok(()), true) => {}
                (Err(e), false) if e.as_code() == 41 => {}
                _ => mismatches.push(format!(
                    "{flag} / {command}: expected allowed={expected}, got {result:?}"
                )),
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "permission mismatches:\n{}",
        mismatches.join("\n")
    );
    assert_eq!(
        root.get_streams().await.unwrap().len(),
        2,
        "only manage_streams created a stream"
    );
}

#[tokio::test]
async fn given_stream_and_topic_permissions_when_calling_should_scope_them_to_their_resources() {
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &ServerOptions::default());
    let root = root_client(server.tcp()).await;
    for stream in ["mine", "other"] {
        root.create_stream(stream).await.unwrap();
        for topic in ["t0", "t1"] {
            root.create_topic(&name(stream), topic, &TopicCreateOptions::default())
                .await
                .unwrap();
        }
    }
    // Read access to stream "mine" (id 0), and send access to its topic t1 only.
    let topic_permissions = TopicPermissions {
        send_messages: true,
        ..TopicPermissions::default()
    };
    let stream_permissions = StreamPermissions {
        read_stream: true,
        topics: Some(std::collections::BTreeMap::from([(
            1usize,
            topic_permissions,
        )])),
        ..StreamPermissions::default()
    };
    let permissions = Permissions {
        global: GlobalPermissions::default(),
        streams: Some(std::collections::BTreeMap::from([(
            0usize,
            stream_permissions,
        )])),
    };
    root.create_user("scoped", "secret", UserStatus::Active, Some(permissions))
        .await
        .unwrap();
    let client = tcp_client(server.tcp()).await;
    client.login_user("scoped", "secret").await.unwrap();

    assert!(client.get_stream(&name("mine")).await.unwrap().is_some());
    assert_eq!(
        client
            .get_stream(&name("other"))
            .await
            .unwrap_err()
            .as_code(),
        41
    );
    assert_eq!(
        client.get_streams().await.unwrap_err().as_code(),
        41,
        "listing all streams needs a global flag"
    );
    let send = |topic: &'static str| {
        let client = &client;
        async move {
            let mut messages = vec![IggyMessage::builder().payload("x".into()).build().unwrap()];
            client
                .send_messages(
                    &name("mine"),
                    &name(topic),
                    &Partitioning::partition_id(0),
                    &mut messages,
                )
                .await
        }
    };
    send("t1").await.unwrap();
    assert_eq!(send("t0").await.unwrap_err().as_code(), 41);
    assert_eq!(
        client
            .delete_stream(&name("mine"))
            .await
            .unwrap_err()
            .as_code(),
        41
    );
    assert_eq!(
        root.get_streams().await.unwrap().len(),
        2,
        "the denied delete changed nothing"
    );
}
