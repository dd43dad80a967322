//! A roster of one: `cluster.enabled = true` with a single node runs the
//! cluster path (the metadata group and every partition group as groups
//! of one) without a replica port, PSK or `--replica-id`, and serves the
//! released SDK as a single node does.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::time::Duration;

use harness::sdk::id;
use harness::{ONE_NODE_CLUSTER, ServerOptions, TestServer, Workdir};
use iggy::prelude::*;

fn options() -> ServerOptions {
    ServerOptions::default()
        .config_file(ONE_NODE_CLUSTER)
        .env("IGGY_CONFIG_PATH", "config.toml")
}

/// Logs in as root, retrying while the group of one creates the root
/// user just after start-up.
async fn login(server: &TestServer) -> IggyClient {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let client = harness::sdk::tcp_client(server.tcp()).await;
        match client
            .login_user(harness::ROOT_USERNAME, harness::ROOT_PASSWORD)
            .await
        {
            Ok(_) => return client,
            Err(e) if std::time::Instant::now() < deadline => {
                eprintln!("login not yet accepted: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("login refused: {e}"),
        }
    }
}

/// Sends one message per payload to partition `partition` of stream 0,
/// topic 0.
async fn send(client: &IggyClient, partition: u32, payloads: Vec<String>) {
    let mut messages: Vec<IggyMessage> = payloads
        .into_iter()
        .map(|payload| {
            IggyMessage::builder()
                .payload(payload.into())
                .build()
                .unwrap()
        })
        .collect();
    client
        .send_messages(
            &id(0),
            &id(0),
            &Partitioning::partition_id(partition),
            &mut messages,
        )
        .await
        .unwrap();
}

async fn poll_all(client: &IggyClient, partition: u32) -> Vec<(u64, Vec<u8>)> {
    let polled = client
        .poll_messages(
            &id(0),
            &id(0),
            Some(partition),
            &Consumer::default(),
            &PollingStrategy::offset(0),
            100,
            false,
        )
        .await
        .unwrap();
    polled
        .messages
        .iter()
        .map(|m| (m.header.offset, m.payload.to_vec()))
        .collect()
}

#[tokio::test]
async fn given_a_roster_of_one_when_serving_the_sdk_should_commit_alone_and_keep_everything_across_a_restart()
 {
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &options());
    let client = login(&server).await;

    // Cluster metadata names the one node, as leader, at its bound port.
    let metadata = client.get_cluster_metadata().await.unwrap();
    assert_eq!(metadata.nodes.len(), 1, "{metadata:?}");
    let node = &metadata.nodes[0];
    assert_eq!(node.role, ClusterNodeRole::Leader, "{metadata:?}");
    assert_eq!(
        node.endpoints.tcp,
        server.tcp().port(),
        "the bound TCP port is advertised: {metadata:?}"
    );

    client.create_stream("orders").await.unwrap();
    client
        .create_topic(
            &id(0),
            "events",
            &TopicCreateOptions {
                partitions_count: Some(2),
                ..TopicCreateOptions::default()
            },
        )
        .await
        .unwrap();
    for partition in 0..2u32 {
        send(
            &client,
            partition,
            (0..5).map(|i| format!("p{partition}-m{i}")).collect(),
        )
        .await;
    }
    let consumer = Consumer::new(id(7));
    client
        .store_consumer_offset(&consumer, &id(0), &id(0), Some(1), 3)
        .await
        .unwrap();
    let before: Vec<_> = [poll_all(&client, 0).await, poll_all(&client, 1).await].into();
    for (partition, messages) in before.iter().enumerate() {
        let expected: Vec<(u64, Vec<u8>)> = (0..5)
            .map(|i| (i, format!("p{partition}-m{i}").into_bytes()))
            .collect();
        assert_eq!(messages, &expected, "partition {partition}");
    }
    // The group of one keeps its metadata journal where a cluster node does.
    assert!(
        workdir.data().join("cluster/metadata").is_dir(),
        "the metadata group's directory"
    );
    drop(client);

    let (status, _) = server.stop();
    assert!(status.success(), "SIGTERM stops the node cleanly: {status}");
    let server = TestServer::start(&workdir, &options());
    let client = login(&server).await;
    let after: Vec<_> = [poll_all(&client, 0).await, poll_all(&client, 1).await].into();
    assert_eq!(after, before, "every message survives the restart");
    let offset = client
        .get_consumer_offset(&consumer, &id(0), &id(0), Some(1))
        .await
        .unwrap()
        .expect("the stored offset survives the restart");
    assert_eq!(offset.stored_offset, 3);
    // New writes continue the log.
    send(&client, 0, vec!["late".to_owned()]).await;
    let last = poll_all(&client, 0).await;
    assert_eq!(last.last(), Some(&(5, b"late".to_vec())), "{last:?}");
}

#[tokio::test]
async fn given_a_roster_of_one_without_root_credentials_should_generate_a_password_shown_once() {
    // As a single node: the password is generated, shown once when the
    // root user is created, and not again at the next start.
    let workdir = Workdir::new();
    let options = options()
        .without_env("IGGY_ROOT_USERNAME")
        .without_env("IGGY_ROOT_PASSWORD");
    let server = TestServer::start(&workdir, &options);
    let output = harness::output(workdir.path());
    let marker = "with the generated password '";
    let at = output.find(marker).expect("the password is shown") + marker.len();
    let password = &output[at..at + output[at..].find('\'').expect("quoted")];
    let client = harness::sdk::tcp_client(server.tcp()).await;
    client.login_user("iggy", password).await.unwrap();
    drop(client);
    assert!(server.stop().0.success());
    let server = TestServer::start(&workdir, &options);
    let shown = harness::output(workdir.path()).matches(marker).count();
    assert_eq!(shown, 1, "shown only when created");
    let client = harness::sdk::tcp_client(server.tcp()).await;
    client.login_user("iggy", password).await.unwrap();

    // A roster of two still needs them (every node creates the same user).
    let two = format!(
        "{ONE_NODE_CLUSTER}tcp_replica = 6\n\n[[cluster.nodes]]\nname = \"solo-1\"\nip = \"127.0.0.1\"\n\
         replica_id = 1\n\n[cluster.nodes.ports]\ntcp = 1\nhttp = 2\nquic = 3\nwebsocket = 4\n\
         tcp_replica = 5\n"
    );
    let options = options.config_file(&two).arg("--replica-id").arg("0");
    let (status, output) = harness::run_to_exit(&Workdir::new(), &options);
    assert!(!status.success(), "{output}");
    assert!(
        output.contains("IGGY_ROOT"),
        "names what is missing: {output}"
    );
}

#[tokio::test]
async fn given_a_roster_of_one_when_starting_should_open_no_replica_listener() {
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &options());
    let client = login(&server).await;
    client.ping().await.unwrap();
    let output = harness::output(workdir.path());
    assert!(
        output.contains("metadata replica started (a group of one)"),
        "{output}"
    );
    assert!(!output.contains("cannot listen for replicas"), "{output}");
}

#[tokio::test]
async fn given_auto_commit_polls_in_a_row_when_polling_next_should_continue_after_each_one() {
    // The auto-commit is proposed to the group without waiting for it
    // (storage spec §11): the primary serves it as the consumer's offset
    // at once, so back-to-back `Next` polls never repeat a message.
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &options());
    let client = login(&server).await;
    client.create_stream("s").await.unwrap();
    client
        .create_topic(&id(0), "t", &TopicCreateOptions::default())
        .await
        .unwrap();
    send(&client, 0, (0..40).map(|i| format!("m{i}")).collect()).await;
    let consumer = Consumer::new(id(3));
    let mut seen = Vec::new();
    for _ in 0..40 {
        let polled = client
            .poll_messages(
                &id(0),
                &id(0),
                Some(0),
                &consumer,
                &PollingStrategy::next(),
                1,
                true,
            )
            .await
            .unwrap();
        seen.extend(polled.messages.iter().map(|m| m.header.offset));
    }
    assert_eq!(seen, (0..40).collect::<Vec<u64>>());
    let stored = client
        .get_consumer_offset(&consumer, &id(0), &id(0), Some(0))
        .await
        .unwrap()
        .expect("stored");
    assert_eq!(stored.stored_offset, 39);
}

#[tokio::test]
async fn given_messages_when_purging_the_topic_should_answer_once_the_partitions_are_empty() {
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &options());
    let client = login(&server).await;
    client.create_stream("s").await.unwrap();
    let two = TopicCreateOptions {
        partitions_count: Some(2),
        ..TopicCreateOptions::default()
    };
    client.create_topic(&id(0), "t", &two).await.unwrap();
    for partition in 0..2 {
        send(
            &client,
            partition,
            (0..4).map(|i| format!("m{i}")).collect(),
        )
        .await;
    }
    let topic = client.get_topic(&id(0), &id(0)).await.unwrap().unwrap();
    assert_eq!(topic.messages_count, 8);
    client.purge_topic(&id(0), &id(0)).await.unwrap();
    let topic = client.get_topic(&id(0), &id(0)).await.unwrap().unwrap();
    assert_eq!(topic.messages_count, 0, "the purge's answer comes after it");
    assert_eq!(topic.partitions_count, 2);
    assert!(poll_all(&client, 0).await.is_empty());
    assert!(poll_all(&client, 1).await.is_empty());
}

/// A data directory written by the single-node build (before session 16,
/// `tests/fixtures/single-node-data`: stream `orders`, topic `events` of
/// two partitions holding `p<partition>-m<0..5>`, consumer 7's offset 3 on
/// partition 1, user `alice`), started by this build with and without a
/// `[cluster]` roster of one: the group of one adopts it (docs/cluster.md),
/// so everything stays, new messages follow on, and the adoption holds
/// across the next restart.
#[tokio::test]
async fn given_a_single_node_builds_data_when_started_should_adopt_everything() {
    for explicit in [false, true] {
        let workdir = Workdir::new();
        copy_dir(&fixture("single-node-data"), &workdir.data());
        let options = if explicit {
            options()
        } else {
            ServerOptions::default()
        };
        let before: Vec<Vec<(u64, Vec<u8>)>> = (0..2)
            .map(|p| {
                (0..5)
                    .map(|i| (i, format!("p{p}-m{i}").into_bytes()))
                    .collect()
            })
            .collect();
        let consumer = Consumer::new(id(7));
        for round in 0..2 {
            let server = TestServer::start(&workdir, &options);
            let client = login(&server).await;
            check_adopted(&client, &before, &consumer, (round > 0).then_some(5)).await;
            if round == 0 {
                send(&client, 0, vec!["late".to_owned()]).await;
                let last = poll_all(&client, 0).await;
                assert_eq!(last.last(), Some(&(5, b"late".to_vec())), "{last:?}");
            }
            let alice = harness::sdk::tcp_client(server.tcp()).await;
            alice.login_user("alice", "secret-pass").await.unwrap();
            drop((client, alice));
            let (status, _) = server.stop();
            assert!(status.success(), "round {round}: {status}");
            assert!(
                !workdir.data().join("metadata").exists(),
                "the single node's metadata was moved aside"
            );
        }
        let kept = std::fs::read_dir(workdir.data())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("metadata.single-node-")
            })
            .count();
        assert_eq!(
            kept, 1,
            "the single node's metadata is kept aside, not deleted"
        );
    }
}

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Checks that the roster of one serves what the single node held:
/// `before`'s messages (with "late" at `late` on partition 0) and the
/// stored offset 3 of `consumer` on partition 1.
async fn check_adopted(
    client: &IggyClient,
    before: &[Vec<(u64, Vec<u8>)>],
    consumer: &Consumer,
    late: Option<u64>,
) {
    let mut expected = before.to_vec();
    if let Some(offset) = late {
        expected[0].push((offset, b"late".to_vec()));
    }
    let after: Vec<_> = [poll_all(client, 0).await, poll_all(client, 1).await].into();
    assert_eq!(after, expected, "every message is adopted");
    let offset = client
        .get_consumer_offset(consumer, &id(0), &id(0), Some(1))
        .await
        .unwrap()
        .expect("the stored offset is adopted");
    assert_eq!(offset.stored_offset, 3);
}
