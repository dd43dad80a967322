//! The heartbeat verifier through the real binary: a silent group member is
//! disconnected and leaves its group; a silent non-member is left alone.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::time::{Duration, Instant};

use harness::sdk::{name, root_client};
use harness::{ServerOptions, TestServer, Workdir};
use iggy::prelude::*;

async fn members(client: &IggyClient) -> u32 {
    client
        .get_consumer_group(&name("s"), &name("t"), &name("g"))
        .await
        .unwrap()
        .unwrap()
        .members_count
}

#[tokio::test]
async fn given_silent_group_member_when_heartbeat_window_passes_should_release_its_membership() {
    let workdir = Workdir::new();
    let server = TestServer::start(
        &workdir,
        &ServerOptions::default().env("IGGY_HEARTBEAT_INTERVAL", "1s"),
    );
    let observer = root_client(server.tcp()).await;
    observer.create_stream("s").await.unwrap();
    let options = TopicCreateOptions {
        partitions_count: Some(2),
        ..TopicCreateOptions::default()
    };
    observer
        .create_topic(&name("s"), "t", &options)
        .await
        .unwrap();
    observer
        .create_consumer_group(&name("s"), &name("t"), "g")
        .await
        .unwrap();

    // Pings only every 60 s, so it stays silent past the 1.2 s window.
    let url = format!(
        "iggy+tcp://iggy:iggy@{}?heartbeat_interval=60s&reconnection_retries=0",
        server.tcp()
    );
    let member = IggyClient::from_connection_string(&url).unwrap();
    member.connect().await.unwrap();
    member
        .join_consumer_group(&name("s"), &name("t"), &name("g"))
        .await
        .unwrap();
    assert_eq!(members(&observer).await, 1);

    let deadline = Instant::now() + Duration::from_secs(15);
    while members(&observer).await != 0 {
        assert!(
            Instant::now() < deadline,
            "the silent member was never released"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The observer (no memberships, requests every 200 ms) kept its connection.
    observer.ping().await.unwrap();
}

#[tokio::test]
async fn given_silent_raw_member_when_window_passes_should_receive_stale_client_eviction() {
    use harness::raw::{connect, login, read_frame, send};
    use protocol::CommandCode;
    use protocol::header::{EvictionHeader, EvictionReason};

    let workdir = Workdir::new();
    let server = TestServer::start(
        &workdir,
        &ServerOptions::default().env("IGGY_HEARTBEAT_INTERVAL", "1s"),
    );
    let admin = root_client(server.tcp()).await;
    admin.create_stream("s").await.unwrap();
    admin
        .create_topic(&name("s"), "t", &TopicCreateOptions::default())
        .await
        .unwrap();
    admin
        .create_consumer_group(&name("s"), &name("t"), "g")
        .await
        .unwrap();

    let mut raw = connect(server.tcp());
    let session = login(&mut raw);
    let numeric = |id: u32| [&[1u8, 4][..], &id.to_le_bytes()].concat();
    let body = [numeric(0), numeric(0), numeric(0)].concat();
    send(&mut raw, CommandCode::JoinConsumerGroup, session, 1, &body);
    let (_, joined) = read_frame(&mut raw).expect("join answered");
    assert_eq!(
        joined,
        0u32.to_le_bytes(),
        "joined: an empty result section"
    );

    // Silent now: the next frame is the unsolicited eviction, then the close.
    let (header, _) = read_frame(&mut raw).expect("an eviction arrives");
    let eviction = EvictionHeader::decode(&header).unwrap();
    assert_eq!(eviction.reason, EvictionReason::StaleClient);
    assert!(read_frame(&mut raw).is_none(), "then the connection closes");
    let deadline = Instant::now() + Duration::from_secs(10);
    while members(&admin).await != 0 {
        assert!(
            Instant::now() < deadline,
            "the evicted member kept its membership"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
