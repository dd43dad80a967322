//! Cooperative rebalancing: a partition whose messages were served to the
//! group but not committed moves to a joining member only once the previous
//! owner commits, or when the rebalancing timeout forces it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::time::{Duration, Instant};

use harness::sdk::{name, root_client};
use harness::{ServerOptions, TestServer, Workdir};
use iggy::prelude::*;

async fn setup(server: &TestServer) -> (IggyClient, IggyClient) {
    let admin = root_client(server.tcp()).await;
    admin.create_stream("s").await.unwrap();
    let options = TopicCreateOptions {
        partitions_count: Some(2),
        ..TopicCreateOptions::default()
    };
    admin.create_topic(&name("s"), "t", &options).await.unwrap();
    for p in 0..2 {
        let mut messages: Vec<IggyMessage> = (0..10)
            .map(|i| {
                IggyMessage::builder()
                    .payload(format!("p{p}-{i}").into())
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
    let a = root_client(server.tcp()).await;
    a.join_consumer_group(&name("s"), &name("t"), &name("g"))
        .await
        .unwrap();
    for p in 0..2 {
        let polled = a
            .poll_messages(
                &name("s"),
                &name("t"),
                Some(p),
                &Consumer::group(name("g")),
                &PollingStrategy::next(),
                10,
                false,
            )
            .await
            .unwrap();
        assert_eq!(
            polled.messages.len(),
            10,
            "member A owns both partitions at first"
        );
    }
    (admin, a)
}

/// Partitions assigned to each member, sorted by member.
async fn assignment(admin: &IggyClient) -> Vec<Vec<u32>> {
    let details = admin
        .get_consumer_group(&name("s"), &name("t"), &name("g"))
        .await
        .unwrap()
        .unwrap();
    details
        .members
        .iter()
        .map(|m| m.partitions.clone())
        .collect()
}

async fn wait_until_both_assigned(admin: &IggyClient, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let owned: usize = assignment(admin).await.iter().map(Vec::len).sum();
        if owned == 2 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the pending partition never moved: {:?}",
            assignment(admin).await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn given_uncommitted_partition_when_member_joins_should_move_it_after_the_commit() {
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &ServerOptions::default());
    let (admin, a) = setup(&server).await;
    let b = root_client(server.tcp()).await;
    b.join_consumer_group(&name("s"), &name("t"), &name("g"))
        .await
        .unwrap();
    let owned: Vec<u32> = assignment(&admin).await.concat();
    assert_eq!(
        owned.len(),
        1,
        "the in-flight partition waits for its commit: {owned:?}"
    );
    let pending = 1 - owned[0];
    a.store_consumer_offset(
        &Consumer::group(name("g")),
        &name("s"),
        &name("t"),
        Some(pending),
        9,
    )
    .await
    .unwrap();
    wait_until_both_assigned(&admin, Duration::from_secs(5)).await;
    let polled = b
        .poll_messages(
            &name("s"),
            &name("t"),
            Some(pending),
            &Consumer::group(name("g")),
            &PollingStrategy::next(),
            10,
            false,
        )
        .await
        .unwrap();
    assert!(
        polled.messages.is_empty(),
        "the new owner resumes after the committed offset"
    );
}

#[tokio::test]
async fn given_uncommitted_partition_when_timeout_passes_should_force_the_handover() {
    let workdir = Workdir::new();
    let options = ServerOptions::default().env("IGGY_CONSUMER_GROUP_REBALANCING_TIMEOUT", "1s");
    let server = TestServer::start(&workdir, &options);
    let (admin, _a) = setup(&server).await;
    let b = root_client(server.tcp()).await;
    b.join_consumer_group(&name("s"), &name("t"), &name("g"))
        .await
        .unwrap();
    assert_eq!(assignment(&admin).await.concat().len(), 1);
    wait_until_both_assigned(&admin, Duration::from_secs(10)).await;
}
