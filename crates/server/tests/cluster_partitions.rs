//! Three real `iggy-server` processes replicate messages and consumer
//! offsets through partition groups: every node serves the same messages,
//! sends and offset writes reaching a follower are forwarded, the SDK's
//! routed auto-commit polls (codes 103, 14, 104) work, every partitioning
//! mode and polling strategy works, and a restart of every node keeps it all.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::time::{Duration, Instant};

use harness::TestServer;
use harness::cluster::*;
use harness::http::{request, root_token};
use iggy::prelude::*;

#[test]
fn given_three_nodes_when_messages_are_sent_should_replicate_messages_and_offsets() {
    let (mut nodes, leader, runtime) = cluster_with_orders();
    let follower = (leader + 1) % usize::from(NODES);
    let tcp = tcp_of;
    runtime.block_on(async {
        let client = harness::sdk::root_client(tcp(&nodes, leader)).await;
        create_topic_t(tcp(&nodes, leader), 2).await;
        for batch in 0..3 {
            send_to(tcp(&nodes, leader), 0, &format!("b{batch}"), 10)
                .await
                .unwrap();
        }
        // The SDK lists every roster node and moves to the leader.
        let metadata = client.get_cluster_metadata().await.unwrap();
        assert_eq!(metadata.nodes.len(), usize::from(NODES));
        let leaders = metadata
            .nodes
            .iter()
            .filter(|n| n.role == ClusterNodeRole::Leader)
            .count();
        assert_eq!(leaders, 1, "{metadata:?}");
    });
    // Over HTTP on a follower: its partition replica forwards the send to
    // the group's primary (replication spec §4.5).
    let token = root_token(nodes[follower].http);
    let body = br#"{"partitioning":{"kind":"partition_id","value":"AAAAAA=="},"messages":[
        {"id":0,"payload":"dmlhLWZvbGxvd2VyLTA="},{"id":0,"payload":"dmlhLWZvbGxvd2VyLTE="},
        {"id":0,"payload":"dmlhLWZvbGxvd2VyLTI="},{"id":0,"payload":"dmlhLWZvbGxvd2VyLTM="},
        {"id":0,"payload":"dmlhLWZvbGxvd2VyLTQ="}]}"#;
    let response = request(
        nodes[follower].http,
        "POST",
        "/streams/orders/topics/t/messages",
        Some(&token),
        Some(body),
    );
    assert!(
        matches!(response.status, 200 | 201 | 204),
        "{} {}",
        response.status,
        response.text()
    );
    let expected = messages_on_at_least(&runtime, tcp(&nodes, leader), 0, 35);
    assert_eq!(expected.len(), 35, "every message on the leader");
    assert_eq!(
        expected.iter().map(|(o, _)| *o).collect::<Vec<_>>(),
        (0..35).collect::<Vec<_>>(),
        "offsets in order, none skipped"
    );
    assert_eq!(expected[30].1, b"via-follower-0");
    for (i, node) in nodes.iter().enumerate() {
        eventually(&format!("node {i} serves every message"), || {
            messages_at(node, 0) == expected
        });
    }

    // An offset stored through a follower is stored on every node.
    runtime.block_on(async {
        let client = harness::sdk::root_client(tcp(&nodes, follower)).await;
        store_offset_t(&client, 5, 12).await;
    });
    for i in 0..nodes.len() {
        eventually(&format!("node {i} holds the stored offset"), || {
            runtime.block_on(stored_offset_on(tcp(&nodes, i), 5)) == Some(12)
        });
    }

    // NoAck (which the SDK never sends): answered once proposed, then
    // stored on every node.
    {
        let mut raw = harness::raw::connect(tcp_of(&nodes, leader));
        let session = harness::raw::login(&mut raw);
        let mut body = vec![1, 1, 4];
        body.extend_from_slice(&6u32.to_le_bytes());
        body.extend_from_slice(&[2, 6]);
        body.extend_from_slice(b"orders");
        body.extend_from_slice(&[2, 1, b't', 1, 0, 0, 0, 0]);
        body.extend_from_slice(&20u64.to_le_bytes());
        body.push(0);
        harness::raw::send(
            &mut raw,
            protocol::CommandCode::StoreConsumerOffset,
            session,
            1,
            &body,
        );
        let (header, _) = harness::raw::read_frame(&mut raw).unwrap();
        let status = protocol::header::ReplyHeader::decode(&header)
            .unwrap()
            .status;
        assert_eq!(status, 0, "a NoAck store is answered");
    }
    for i in 0..nodes.len() {
        eventually(&format!("node {i} holds the NoAck offset"), || {
            runtime.block_on(stored_offset_on(tcp_of(&nodes, i), 6)) == Some(20)
        });
    }

    // A consumer group polls with auto-commit: the SDK routes it to the
    // partition's primary (codes 103, 14, 104) and the commit is replicated.
    runtime.block_on(async {
        let client = harness::sdk::root_client(tcp(&nodes, follower)).await;
        let (stream, topic) = (harness::sdk::name("orders"), harness::sdk::name("t"));
        client
            .create_consumer_group(&stream, &topic, "readers")
            .await
            .unwrap();
        let group = harness::sdk::name("readers");
        client
            .join_consumer_group(&stream, &topic, &group)
            .await
            .unwrap();
        let polled = client
            .poll_messages(
                &stream,
                &topic,
                Some(0),
                &Consumer::group(group.clone()),
                &PollingStrategy::next(),
                10,
                true,
            )
            .await
            .unwrap();
        assert_eq!(polled.messages.len(), 10);
        assert_eq!(polled.messages[9].header.offset, 9);
    });
    let routed: u64 = nodes
        .iter()
        .map(|node| {
            requests_of(node, "message.poll_primary") + requests_of(node, "consumer_session.attach")
        })
        .sum();
    assert!(routed >= 2, "the SDK routed the auto-commit poll (14, 104)");
    for i in 0..nodes.len() {
        eventually(
            &format!("node {i} holds the group's committed offset"),
            || {
                runtime.block_on(async {
                    let client = harness::sdk::tcp_client(tcp(&nodes, i)).await;
                    client.login_user("iggy", "iggy").await.ok()?;
                    client
                        .get_consumer_offset(
                            &Consumer::group(harness::sdk::name("readers")),
                            &harness::sdk::name("orders"),
                            &harness::sdk::name("t"),
                            Some(0),
                        )
                        .await
                        .ok()?
                        .map(|o| o.stored_offset)
                }) == Some(9)
            },
        );
    }

    // The leader dies: the survivors elect, and sends go on through them.
    nodes[leader].server.take().unwrap().kill();
    eventually("a survivor accepts a send", || {
        runtime
            .block_on(send_to(tcp(&nodes, follower), 0, "after-kill", 5))
            .is_ok()
    });
    let after = runtime.block_on(messages_on(tcp(&nodes, follower), 0));
    assert!(after.len() >= 40, "{} messages", after.len());
    assert_eq!(after[..35], expected[..], "nothing acknowledged lost");

    // The killed node restarts on its data and catches up.
    let node = &mut nodes[leader];
    node.server = Some(TestServer::start(&node.workdir, &node.options));
    eventually("the restarted node serves what the survivors serve", || {
        let restarted = runtime.block_on(messages_on(tcp(&nodes, leader), 0));
        restarted.len() >= after.len() && restarted == messages_at(&nodes[follower], 0)
    });
    for node in &nodes {
        let streams = node.workdir.path().join("local_data/streams");
        let journals = find_named(&streams, "prepares-");
        assert_eq!(
            journals,
            2,
            "{}: a journal per partition",
            streams.display()
        );
    }
}

#[test]
fn given_each_partitioning_and_strategy_when_every_node_restarts_should_keep_everything() {
    let (mut nodes, leader, runtime) = cluster_with_orders();
    let follower = (leader + 2) % usize::from(NODES);
    let tcp = tcp_of;
    let (stream, topic) = (harness::sdk::name("orders"), harness::sdk::name("t"));
    let batch = |tag: &str, count: u32| -> Vec<IggyMessage> {
        (0..count)
            .map(|i| {
                IggyMessage::builder()
                    .payload(format!("{tag}-{i}").into_bytes().into())
                    .build()
                    .unwrap()
            })
            .collect()
    };
    runtime.block_on(async {
        // A client of a follower: the SDK moves to the leader by itself.
        let client = harness::sdk::root_client(tcp(&nodes, follower)).await;
        create_topic_t(tcp(&nodes, follower), 3).await;
        let sends = [
            (Partitioning::partition_id(1), batch("fixed", 10)),
            (Partitioning::balanced(), batch("rr-a", 4)),
            (Partitioning::balanced(), batch("rr-b", 4)),
            (Partitioning::balanced(), batch("rr-c", 4)),
            (
                Partitioning::messages_key_str("customer-7").unwrap(),
                batch("keyed", 5),
            ),
        ];
        for (partitioning, mut messages) in sends {
            client
                .send_messages(&stream, &topic, &partitioning, &mut messages)
                .await
                .unwrap();
        }

        // Each polling strategy, on partition 1 (the ten fixed messages
        // first).
        let poll = |strategy: PollingStrategy, count: u32, consumer: u32| {
            let client = &client;
            let (stream, topic) = (stream.clone(), topic.clone());
            async move {
                client
                    .poll_messages(
                        &stream,
                        &topic,
                        Some(1),
                        &Consumer::new(harness::sdk::id(consumer)),
                        &strategy,
                        count,
                        false,
                    )
                    .await
                    .unwrap()
                    .messages
                    .into_iter()
                    .map(|m| m.header.offset)
                    .collect::<Vec<u64>>()
            }
        };
        assert_eq!(poll(PollingStrategy::offset(2), 3, 1).await, [2, 3, 4]);
        assert_eq!(poll(PollingStrategy::first(), 2, 1).await, [0, 1]);
        let last = poll(PollingStrategy::last(), 1, 1).await;
        assert_eq!(last.len(), 1);
        let all = client
            .poll_messages(
                &stream,
                &topic,
                Some(1),
                &Consumer::new(harness::sdk::id(1)),
                &PollingStrategy::offset(0),
                100,
                false,
            )
            .await
            .unwrap();
        let third = all.messages[3].header.timestamp;
        let by_time = poll(PollingStrategy::timestamp(third.into()), 1, 1).await;
        assert!(by_time[0] <= 3, "{by_time:?}");
        client
            .store_consumer_offset(
                &Consumer::new(harness::sdk::id(3)),
                &stream,
                &topic,
                Some(1),
                4,
            )
            .await
            .unwrap();
        // This client stays on the follower it logged in to (only the SDK's
        // own sign-in moves to the leader), whose reads are its applied
        // state: the stored offset shows there once it applied the commit.
        let started = Instant::now();
        while poll(PollingStrategy::next(), 2, 3).await != [5, 6] {
            assert!(started.elapsed() < DEADLINE, "Next never started after 4");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    let before: Vec<Vec<(u64, Vec<u8>)>> = (0..3)
        .map(|p| runtime.block_on(messages_on(tcp(&nodes, leader), p)))
        .collect();
    assert_eq!(
        before.iter().map(Vec::len).sum::<usize>(),
        27,
        "every message"
    );
    for (i, node) in nodes.iter().enumerate() {
        eventually(&format!("node {i} holds every message"), || {
            (0..3).all(|p| messages_at(node, p) == before[p as usize])
        });
    }

    // SIGTERM stops every node cleanly; a restart of all three keeps it all.
    for node in &mut nodes {
        let (status, _) = node.server.take().unwrap().stop();
        assert!(status.success(), "{status:?}");
    }
    for node in &mut nodes {
        node.server = Some(TestServer::start(&node.workdir, &node.options));
    }
    for i in 0..nodes.len() {
        eventually(
            &format!("node {i} serves every message after the restart"),
            || (0..3).all(|p| messages_at(&nodes[i], p) == before[p as usize]),
        );
        eventually(&format!("node {i} keeps the stored offset"), || {
            runtime.block_on(stored_offset_on_partition(tcp(&nodes, i), 3, 1)) == Some(4)
        });
    }
}

#[test]
fn given_a_partition_recreated_while_a_node_was_down_when_it_returns_should_serve_only_the_new_one()
{
    let (mut nodes, leader, runtime) = cluster_with_orders();
    let away = (leader + 1) % usize::from(NODES);
    let tcp = tcp_of;
    let (stream, topic) = (harness::sdk::name("orders"), harness::sdk::name("t"));
    runtime.block_on(async {
        create_topic_t(tcp(&nodes, leader), 2).await;
        send_to(tcp(&nodes, leader), 1, "old", 5).await.unwrap();
    });
    eventually("the node about to leave holds the old messages", || {
        messages_at(&nodes[away], 1).len() == 5
    });
    let (status, _) = nodes[away].server.take().unwrap().stop();
    assert!(status.success());
    runtime.block_on(async {
        let client = harness::sdk::root_client(tcp(&nodes, leader)).await;
        // Partition 1 goes, and a new partition 1 takes its id.
        client.delete_partitions(&stream, &topic, 1).await.unwrap();
        client.create_partitions(&stream, &topic, 1).await.unwrap();
        send_to(tcp(&nodes, leader), 1, "new", 3).await.unwrap();
    });
    let expected = messages_on_at_least(&runtime, tcp(&nodes, leader), 1, 3);
    assert_eq!(expected.len(), 3, "only the new incarnation's messages");
    let node = &mut nodes[away];
    node.server = Some(TestServer::start(&node.workdir, &node.options));
    eventually("the returning node serves the new partition only", || {
        messages_at(&nodes[away], 1) == expected
    });
}

/// A purge in a cluster: the metadata commits it and each partition's
/// group carries it out as an op of its own on every node, so the messages
/// and stored offsets go everywhere; offsets restart at 0 after it (storage
/// spec §6.5), and a restart of every node neither brings messages back nor
/// purges again.
#[test]
fn given_a_purged_topic_when_every_node_restarts_should_stay_purged_and_keep_new_messages() {
    let (mut nodes, leader, runtime) = cluster_with_orders();
    runtime.block_on(async {
        let tcp = tcp_of(&nodes, leader);
        create_topic_t(tcp, 2).await;
        send_to(tcp, 0, "old", 5).await.unwrap();
        send_to(tcp, 1, "old", 4).await.unwrap();
        let client = harness::sdk::root_client(tcp).await;
        store_offset_t(&client, 7, 3).await;
        client
            .purge_topic(&harness::sdk::name("orders"), &harness::sdk::name("t"))
            .await
            .unwrap();
    });
    for (i, node) in nodes.iter().enumerate() {
        eventually(&format!("node {i} serves a purged topic"), || {
            (0..2).all(|p| try_messages_at(node, p).is_some_and(|m| m.is_empty()))
        });
    }
    assert_eq!(
        runtime.block_on(stored_offset_on(tcp_of(&nodes, leader), 7)),
        None
    );
    runtime
        .block_on(send_to(tcp_of(&nodes, leader), 0, "new", 3))
        .unwrap();
    let after = messages_on_at_least(&runtime, tcp_of(&nodes, leader), 0, 3);
    let offsets: Vec<u64> = after.iter().map(|(offset, _)| *offset).collect();
    assert_eq!(offsets, [0, 1, 2], "offsets restart at 0");
    for node in &mut nodes {
        let (status, _) = node.server.take().unwrap().stop();
        assert!(status.success(), "{status:?}");
    }
    for node in &mut nodes {
        node.server = Some(TestServer::start(&node.workdir, &node.options));
    }
    for (i, node) in nodes.iter().enumerate() {
        eventually(
            &format!("node {i} keeps the purge and the new messages"),
            || {
                messages_at(node, 0) == after
                    && try_messages_at(node, 1).is_some_and(|m| m.is_empty())
            },
        );
    }
}

/// Every file under `dir` with its bytes (directories skipped).
fn files_under(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                out.push((path, bytes));
            }
        }
    }
    out
}

/// The bytes of the segment files (`*.log`) of partition 0 of `orders/t`
/// on one node, in segment order.
fn segment_bytes(data: &std::path::Path) -> Vec<u8> {
    let mut segments: Vec<_> = files_under(data)
        .into_iter()
        .filter(|(path, _)| {
            path.extension().is_some_and(|e| e == "log")
                && path.to_string_lossy().contains("partitions")
        })
        .collect();
    segments.sort();
    segments.into_iter().flat_map(|(_, bytes)| bytes).collect()
}

#[test]
fn given_encryption_on_every_node_when_sending_should_store_one_sealing_everywhere_and_serve_plaintext()
 {
    const MARKER: &str = "CLUSTER-PLAINTEXT-MARKER";
    let nodes = start_cluster(
        "[system.encryption]\nenabled = true\nkey = \"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\"\n\n",
    );
    let (mut nodes, leader, runtime) = with_orders(nodes);
    let follower = (leader + 1) % usize::from(NODES);
    runtime.block_on(async {
        create_topic_t(tcp_of(&nodes, leader), 1).await;
        // One send on the leader, one through a follower (forwarded sealed).
        send_to(tcp_of(&nodes, leader), 0, &format!("{MARKER}-leader"), 5)
            .await
            .unwrap();
        send_to(
            tcp_of(&nodes, follower),
            0,
            &format!("{MARKER}-follower"),
            5,
        )
        .await
        .unwrap();
    });
    let expected: Vec<Vec<u8>> = (0..5)
        .map(|i| format!("{MARKER}-leader-{i}").into_bytes())
        .chain((0..5).map(|i| format!("{MARKER}-follower-{i}").into_bytes()))
        .collect();
    // Every node opens the sealed batches it applied.
    for (i, node) in nodes.iter().enumerate() {
        eventually(&format!("node {i} serves the plaintext"), || {
            let served = messages_at(node, 0);
            served.into_iter().map(|(_, p)| p).collect::<Vec<_>>() == expected
        });
    }
    // No plaintext on any node's disk, and each node stores the same sealed
    // bytes: the batch was sealed once, on the node that took the send. A
    // graceful stop writes what the partitions still buffer.
    for node in &mut nodes {
        let (status, _) = node.server.take().unwrap().stop();
        assert!(status.success(), "{status:?}");
    }
    let segments: Vec<Vec<u8>> = nodes
        .iter()
        .map(|node| {
            let data = node.workdir.data();
            let leaked: Vec<_> = files_under(&data)
                .into_iter()
                .filter(|(_, bytes)| bytes.windows(MARKER.len()).any(|w| w == MARKER.as_bytes()))
                .map(|(path, _)| path)
                .collect();
            assert!(leaked.is_empty(), "plaintext on disk: {leaked:?}");
            segment_bytes(&data)
        })
        .collect();
    assert!(
        !segments[0].is_empty(),
        "no segment among {:?}",
        files_under(&nodes[0].workdir.data())
            .into_iter()
            .map(|(p, _)| p)
            .collect::<Vec<_>>()
    );
    assert!(
        segments.iter().all(|s| s == &segments[0]),
        "every replica stores the same sealed bytes"
    );
}
