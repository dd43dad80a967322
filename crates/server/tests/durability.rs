//! Durability and retention through the real binary: acknowledged
//! `Persisted` messages survive SIGKILL; the cleaner deletes expired sealed
//! segments.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::time::{Duration, Instant};

use harness::sdk::{id, name, read_back, root_client};
use harness::{ServerOptions, TestServer, Workdir};
use iggy::prelude::*;

fn payload_message(tag: &str, i: u32, size: usize) -> IggyMessage {
    let mut payload = format!("{tag}-{i}-").into_bytes();
    payload.resize(size.max(payload.len()), b'.');
    IggyMessage::builder()
        .payload(payload.into())
        .build()
        .unwrap()
}

#[tokio::test]
async fn given_persisted_topic_when_killed_should_keep_every_acknowledged_message() {
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &ServerOptions::default());
    let client = root_client(server.tcp()).await;
    client.create_stream("crash").await.unwrap();
    let options = TopicCreateOptions {
        durability: Durability::Persisted,
        ..TopicCreateOptions::default()
    };
    client
        .create_topic(&name("crash"), "t", &options)
        .await
        .unwrap();
    let mut acknowledged = 0u32;
    for batch in 0..40u32 {
        let mut messages: Vec<IggyMessage> = (0..25)
            .map(|i| payload_message("m", batch * 25 + i, 100))
            .collect();
        client
            .send_messages(
                &name("crash"),
                &name("t"),
                &Partitioning::partition_id(0),
                &mut messages,
            )
            .await
            .unwrap();
        acknowledged += 25;
    }
    drop(client);
    server.kill();

    let server = TestServer::start(&workdir, &ServerOptions::default());
    let client = root_client(server.tcp()).await;
    let consumer = Consumer::new(id(1));
    let mut next = 0u64;
    while next < u64::from(acknowledged) {
        let polled = client
            .poll_messages(
                &name("crash"),
                &name("t"),
                Some(0),
                &consumer,
                &PollingStrategy::offset(next),
                300,
                false,
            )
            .await
            .unwrap();
        assert!(
            !polled.messages.is_empty(),
            "offset {next} of {acknowledged} is missing after SIGKILL"
        );
        for message in &polled.messages {
            assert_eq!(message.header.offset, next);
            assert!(message.payload.starts_with(format!("m-{next}-").as_bytes()));
            next += 1;
        }
    }
    assert_eq!(next, u64::from(acknowledged));
}

/// The issue's reproduction: 10 messages under the default policy, an idle
/// moment, SIGKILL. A process kill is not a power loss: what the server
/// acknowledged is in the kernel and must come back.
#[tokio::test]
async fn given_default_policy_when_killed_after_idle_should_keep_acknowledged_messages() {
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &ServerOptions::default());
    let client = root_client(server.tcp()).await;
    client.create_stream("idle").await.unwrap();
    client
        .create_topic(&name("idle"), "t", &TopicCreateOptions::default())
        .await
        .unwrap();
    for i in 0..10u32 {
        let mut one = vec![payload_message("idle", i, 32)];
        client
            .send_messages(
                &name("idle"),
                &name("t"),
                &Partitioning::partition_id(0),
                &mut one,
            )
            .await
            .unwrap();
    }
    tokio::time::sleep(Duration::from_millis(1200)).await;
    drop(client);
    server.kill();

    let server = TestServer::start(&workdir, &ServerOptions::default());
    let client = root_client(server.tcp()).await;
    let polled = client
        .poll_messages(
            &name("idle"),
            &name("t"),
            Some(0),
            &Consumer::new(id(1)),
            &PollingStrategy::offset(0),
            100,
            false,
        )
        .await
        .unwrap();
    let payloads: Vec<_> = polled.messages.iter().map(|m| m.payload.to_vec()).collect();
    let expected: Vec<_> = (0..10u32)
        .map(|i| payload_message("idle", i, 32).payload.to_vec())
        .collect();
    assert_eq!(
        payloads, expected,
        "every acknowledged message, once, in order"
    );
}

#[tokio::test]
async fn given_expired_sealed_segment_when_cleaner_runs_should_delete_it_and_keep_the_active_one() {
    let workdir = Workdir::new();
    let options = ServerOptions::default().env("IGGY_DATA_MAINTENANCE_MESSAGES_INTERVAL", "1s");
    let server = TestServer::start(&workdir, &options);
    let client = root_client(server.tcp()).await;
    client.create_stream("ret").await.unwrap();
    let topic_options = TopicCreateOptions {
        message_expiry: Some(IggyExpiry::ExpireDuration(IggyDuration::from(
            Duration::from_secs(1),
        ))),
        segment_size: Some(IggyByteSize::from(1_048_576u64)),
        ..TopicCreateOptions::default()
    };
    client
        .create_topic(&name("ret"), "t", &topic_options)
        .await
        .unwrap();
    for batch in 0..3u32 {
        let mut messages: Vec<IggyMessage> = (0..6)
            .map(|i| payload_message("r", batch * 6 + i, 100_000))
            .collect();
        client
            .send_messages(
                &name("ret"),
                &name("t"),
                &Partitioning::partition_id(0),
                &mut messages,
            )
            .await
            .unwrap();
    }
    let consumer = Consumer::new(id(1));
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let polled = client
            .poll_messages(
                &name("ret"),
                &name("t"),
                Some(0),
                &consumer,
                &PollingStrategy::first(),
                1,
                false,
            )
            .await
            .unwrap();
        let first = polled
            .messages
            .first()
            .map(|m| m.header.offset)
            .expect("the active segment is never deleted");
        if first > 0 {
            assert_eq!(polled.current_offset, 17, "only old data went");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the cleaner never deleted the expired sealed segment"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn given_many_metadata_operations_when_restarting_should_recover_from_snapshot_and_journal() {
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &ServerOptions::default());
    let client = root_client(server.tcp()).await;
    // The root user is operation 1; 1005 more cross the snapshot interval.
    for i in 0..1005 {
        client.create_stream(&format!("stream-{i}")).await.unwrap();
    }
    client.delete_stream(&name("stream-7")).await.unwrap();
    drop(client);
    server.kill();
    // A single node's metadata journal, or a group of one's.
    let snapshot_written = ["metadata", "cluster/metadata"].iter().any(|dir| {
        let dir = workdir.data().join(dir);
        dir.join("snapshot.bin").exists() || dir.join("snapshot.slots").exists()
    });
    assert!(snapshot_written, "a snapshot was written");

    let server = TestServer::start(&workdir, &ServerOptions::default());
    let client = root_client(server.tcp()).await;
    let streams = client.get_streams().await.unwrap();
    assert_eq!(streams.len(), 1004);
    assert!(streams.iter().all(|s| s.name != "stream-7"));
    let recreated = client.create_stream("again").await.unwrap();
    assert_eq!(
        recreated.id, 7,
        "the lowest free id is reused after recovery"
    );
}

#[tokio::test]
async fn given_purged_topic_when_restarting_should_stay_purged_and_keep_new_messages() {
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &ServerOptions::default());
    let client = root_client(server.tcp()).await;
    client.create_stream("p").await.unwrap();
    client
        .create_topic(&name("p"), "t", &TopicCreateOptions::default())
        .await
        .unwrap();
    let send = |tag: &'static str, count: u32| {
        let client = &client;
        async move {
            let mut messages: Vec<IggyMessage> =
                (0..count).map(|i| payload_message(tag, i, 10)).collect();
            client
                .send_messages(
                    &name("p"),
                    &name("t"),
                    &Partitioning::partition_id(0),
                    &mut messages,
                )
                .await
                .unwrap();
        }
    };
    send("old", 5).await;
    client.purge_topic(&name("p"), &name("t")).await.unwrap();
    send("new", 2).await;
    drop(client);
    assert!(server.stop().0.success());

    let server = TestServer::start(&workdir, &ServerOptions::default());
    let client = root_client(server.tcp()).await;
    let polled = read_back(&client, "p", "t", 0, PollingStrategy::first(), 10).await;
    let payloads: Vec<_> = polled
        .messages
        .iter()
        .map(|m| (m.header.offset, m.payload.clone()))
        .collect();
    assert_eq!(payloads.len(), 2, "{payloads:?}");
    assert_eq!(payloads[0].0, 0);
    assert!(payloads.iter().all(|(_, p)| p.starts_with(b"new-")));
}

/// A partition added after a purge must not look, at the next start, like
/// one that missed that purge (it would be emptied, losing what it held).
#[tokio::test]
async fn given_partition_added_after_a_purge_when_restarting_should_keep_its_messages() {
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &ServerOptions::default());
    let client = root_client(server.tcp()).await;
    client.create_stream("grow").await.unwrap();
    client
        .create_topic(&name("grow"), "t", &TopicCreateOptions::default())
        .await
        .unwrap();
    client.purge_topic(&name("grow"), &name("t")).await.unwrap();
    client
        .create_partitions(&name("grow"), &name("t"), 1)
        .await
        .unwrap();
    let mut messages: Vec<IggyMessage> = (0..5).map(|i| payload_message("new", i, 16)).collect();
    client
        .send_messages(
            &name("grow"),
            &name("t"),
            &Partitioning::partition_id(1),
            &mut messages,
        )
        .await
        .unwrap();
    drop(client);
    server.kill();

    let server = TestServer::start(&workdir, &ServerOptions::default());
    let client = root_client(server.tcp()).await;
    let polled = read_back(&client, "grow", "t", 1, PollingStrategy::offset(0), 10).await;
    assert_eq!(
        polled.messages.len(),
        5,
        "the new partition kept its messages"
    );
}

/// A send to partition 0 of `lost`/`t` is refused with 3004.
async fn assert_partition_zero_refused(client: &IggyClient, why: &str) {
    let mut messages = vec![payload_message("refused", 0, 10)];
    let refused = client
        .send_messages(
            &name("lost"),
            &name("t"),
            &Partitioning::partition_id(0),
            &mut messages,
        )
        .await
        .expect_err(why);
    assert_eq!(refused.as_code(), 3004, "{why}: {refused}");
}

/// A partition directory lost while the server was down is noticed: the
/// server initialized that partition (its record in
/// `partition-initialization/` says so) and has nobody to refill it from,
/// so it refuses to serve it (3004) instead of starting it empty, serves
/// the other partitions, and a delete of the topic drops it.
#[tokio::test]
async fn given_a_lost_partition_directory_when_restarting_should_refuse_that_partition_only() {
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &ServerOptions::default());
    let client = root_client(server.tcp()).await;
    client.create_stream("lost").await.unwrap();
    let options = TopicCreateOptions {
        partitions_count: Some(2),
        ..TopicCreateOptions::default()
    };
    client
        .create_topic(&name("lost"), "t", &options)
        .await
        .unwrap();
    for partition in 0..2 {
        let mut messages: Vec<IggyMessage> = (0..3)
            .map(|i| payload_message("p", partition * 10 + i, 10))
            .collect();
        client
            .send_messages(
                &name("lost"),
                &name("t"),
                &Partitioning::partition_id(partition),
                &mut messages,
            )
            .await
            .unwrap();
    }
    drop(client);
    let (status, _) = server.stop();
    assert!(status.success());
    let records = workdir.data().join("partition-initialization");
    assert_eq!(
        std::fs::read_dir(&records).unwrap().count(),
        2,
        "one record each"
    );
    let partition_zero = std::fs::read_dir(workdir.data().join("streams"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|s| s.path().join("topics"))
        .flat_map(|t| std::fs::read_dir(t).unwrap().filter_map(Result::ok))
        .map(|t| t.path().join("partitions").join("0"))
        .find(|p| p.exists())
        .unwrap();
    std::fs::remove_dir_all(&partition_zero).unwrap();

    let server = TestServer::start(&workdir, &ServerOptions::default());
    let client = root_client(server.tcp()).await;
    let mut messages = vec![payload_message("after", 0, 10)];
    assert_partition_zero_refused(&client, "a partition whose history is lost is not served").await;
    assert!(!partition_zero.exists(), "not recreated empty");
    let polled = client
        .poll_messages(
            &name("lost"),
            &name("t"),
            Some(1),
            &Consumer::new(id(1)),
            &PollingStrategy::offset(0),
            10,
            false,
        )
        .await
        .unwrap();
    assert_eq!(polled.messages.len(), 3, "the other partition serves");
    let log = std::fs::read_to_string(workdir.data().join("logs/iggy-server.log")).unwrap();
    assert!(
        log.contains("refusing to serve this partition")
            && log.contains(&partition_zero.display().to_string()),
        "the refusal names the directory"
    );
    // The refusal is fenced: a directory that appears there later (an
    // empty one here) is not taken for the partition's history.
    drop(client);
    let (status, _) = server.stop();
    assert!(status.success());
    let fences = std::fs::read_dir(&records)
        .unwrap()
        .filter(|ns| {
            ns.as_ref()
                .unwrap()
                .path()
                .join("retirement.fence")
                .exists()
        })
        .count();
    assert_eq!(fences, 1, "the lost partition only");
    std::fs::create_dir_all(&partition_zero).unwrap();
    let server = TestServer::start(&workdir, &ServerOptions::default());
    let client = root_client(server.tcp()).await;
    assert_partition_zero_refused(&client, "a retired partition stays refused").await;
    let log = std::fs::read_to_string(workdir.data().join("logs/iggy-server.log")).unwrap();
    assert!(
        log.contains("retirement.fence"),
        "the refusal names the fence"
    );
    // Deleting the topic drops it and its records; a new topic serves.
    client
        .delete_topic(&name("lost"), &name("t"))
        .await
        .unwrap();
    assert_eq!(std::fs::read_dir(&records).unwrap().count(), 0);
    client
        .create_topic(&name("lost"), "t", &options)
        .await
        .unwrap();
    client
        .send_messages(
            &name("lost"),
            &name("t"),
            &Partitioning::partition_id(0),
            &mut messages,
        )
        .await
        .unwrap();
}

/// Every payload of partition 0 of `stream`/`t`, polled from offset 0 in
/// pages.
async fn all_payloads(client: &IggyClient, stream: &str) -> Vec<Vec<u8>> {
    let mut payloads = Vec::new();
    loop {
        let offset = payloads.len() as u64;
        let polled = read_back(
            client,
            stream,
            "t",
            0,
            PollingStrategy::offset(offset),
            5_000,
        )
        .await;
        if polled.messages.is_empty() {
            return payloads;
        }
        payloads.extend(polled.messages.iter().map(|m| m.payload.to_vec()));
    }
}

/// Direct I/O for every partition with a node cache: batches beyond a
/// partition's 8 MiB floor are served from memory while they are cached and
/// from the disk once evicted, and a SIGKILL loses nothing acknowledged (the
/// cache never holds a batch recovery would not find).
#[tokio::test]
async fn given_direct_io_and_a_node_cache_when_polling_and_after_a_kill_should_serve_every_acknowledged_message()
 {
    let workdir = Workdir::new();
    let options = ServerOptions::default()
        .env("IGGY_SYSTEM_PARTITION_DIRECT_IO", "always")
        .env("IGGY_SYSTEM_PARTITION_CACHE_SIZE", "24 MiB");
    let server = TestServer::start(&workdir, &options);
    let client = root_client(server.tcp()).await;
    client.create_stream("cached").await.unwrap();
    client
        .create_topic(&name("cached"), "t", &TopicCreateOptions::default())
        .await
        .unwrap();
    let mut expected = Vec::new();
    for batch in 0..30u32 {
        let mut messages: Vec<IggyMessage> = (0..1_000)
            .map(|i| payload_message("c", batch * 1_000 + i, 1_000))
            .collect();
        expected.extend(messages.iter().map(|m| m.payload.to_vec()));
        client
            .send_messages(
                &name("cached"),
                &name("t"),
                &Partitioning::partition_id(0),
                &mut messages,
            )
            .await
            .unwrap();
    }
    assert!(
        all_payloads(&client, "cached").await == expected,
        "every message once, in order, from the cache and the disk"
    );
    drop(client);
    server.kill();

    let server = TestServer::start(&workdir, &options);
    let client = root_client(server.tcp()).await;
    assert!(
        all_payloads(&client, "cached").await == expected,
        "every acknowledged message after a SIGKILL"
    );
}
