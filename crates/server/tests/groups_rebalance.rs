//! A consumer group on 3 partitions whose members go 1, then 3, then 2:
//! with offsets stored after processing, every message is consumed exactly
//! once across members, and no partition is ever assigned to two members.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use harness::sdk::{name, root_client};
use harness::{ServerOptions, TestServer, Workdir};
use iggy::prelude::*;

const PARTITIONS: u32 = 3;
const PER_PARTITION: u32 = 100;

/// Polls one batch as a group member, records it, stores the offset.
async fn consume_once(member: &IggyClient, seen: &mut Vec<String>) -> usize {
    let group = Consumer::group(name("g"));
    let polled = member
        .poll_messages(
            &name("s"),
            &name("t"),
            None,
            &group,
            &PollingStrategy::next(),
            7,
            false,
        )
        .await
        .unwrap();
    let Some(last) = polled.messages.last() else {
        return 0;
    };
    seen.extend(
        polled
            .messages
            .iter()
            .map(|m| String::from_utf8(m.payload.to_vec()).unwrap()),
    );
    member
        .store_consumer_offset(
            &group,
            &name("s"),
            &name("t"),
            Some(polled.partition_id),
            last.header.offset,
        )
        .await
        .unwrap();
    polled.messages.len()
}

async fn assert_disjoint(observer: &IggyClient, expected_members: u32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let details = observer
            .get_consumer_group(&name("s"), &name("t"), &name("g"))
            .await
            .unwrap()
            .unwrap();
        let mut owned = BTreeSet::new();
        let all: Vec<u32> = details
            .members
            .iter()
            .flat_map(|m| m.partitions.iter().copied())
            .collect();
        assert!(
            all.iter().all(|p| owned.insert(*p)),
            "a partition has two owners: {:?}",
            details.members
        );
        if details.members_count == expected_members && owned.len() == PARTITIONS as usize {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "group never settled on {expected_members} members: {details:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn member(server: &TestServer) -> IggyClient {
    let client = root_client(server.tcp()).await;
    client
        .join_consumer_group(&name("s"), &name("t"), &name("g"))
        .await
        .unwrap();
    client
}

#[tokio::test]
async fn given_members_going_one_three_two_when_consuming_should_see_every_message_exactly_once() {
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &ServerOptions::default());
    let admin = root_client(server.tcp()).await;
    admin.create_stream("s").await.unwrap();
    let options = TopicCreateOptions {
        partitions_count: Some(PARTITIONS),
        ..TopicCreateOptions::default()
    };
    admin.create_topic(&name("s"), "t", &options).await.unwrap();
    for p in 0..PARTITIONS {
        let mut messages: Vec<IggyMessage> = (0..PER_PARTITION)
            .map(|i| {
                IggyMessage::builder()
                    .payload(format!("p{p}-m{i}").into())
                    .build()
                    .unwrap()
            })
            .collect();
        admin
            .send_messages(
                &name("s"),
                &name("t"),
                &Partitioning::partition_id(p),
                &mut messages,
            )
            .await
            .unwrap();
    }
    admin
        .create_consumer_group(&name("s"), &name("t"), "g")
        .await
        .unwrap();

    let mut seen = Vec::new();
    let a = member(&server).await;
    assert_disjoint(&admin, 1).await;
    while seen.len() < 60 {
        consume_once(&a, &mut seen).await;
    }

    let b = member(&server).await;
    let c = member(&server).await;
    assert_disjoint(&admin, 3).await;
    for _ in 0..10 {
        for m in [&a, &b, &c] {
            consume_once(m, &mut seen).await;
        }
    }

    c.shutdown().await.unwrap();
    drop(c);
    assert_disjoint(&admin, 2).await;
    let total = (PARTITIONS * PER_PARTITION) as usize;
    let deadline = Instant::now() + Duration::from_secs(30);
    while seen.len() < total {
        let got = consume_once(&a, &mut seen).await + consume_once(&b, &mut seen).await;
        if got == 0 {
            assert!(
                Instant::now() < deadline,
                "stalled at {} of {total}",
                seen.len()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let unique: BTreeSet<&String> = seen.iter().collect();
    assert_eq!(seen.len(), total, "no message was delivered twice");
    assert_eq!(unique.len(), total, "every message was delivered");
}
