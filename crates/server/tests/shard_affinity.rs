//! A TCP or WebSocket connection, plaintext or TLS, moves to the shard that
//! owns the partition its requests go to (`session::moving`), between two
//! requests, with its session: the
//! official SDK goes on sending, polling and storing offsets as if nothing
//! happened, its request numbers stay deduplicated, and the server keeps
//! counting it as one connection.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use harness::http::{request, root_token};
use harness::scenario::{self, Carrier};
use harness::sdk::{id, name, read_back, root_client};
use harness::{ServerOptions, TestServer, Workdir};
use iggy::prelude::*;

const PARTITIONS: u32 = 8;
const BATCHES: u32 = 6;

fn metric(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .map_or(0.0, |value| value.parse().expect("a float value"))
}

fn payload(partition: u32, batch: u32, i: u32) -> String {
    format!("p{partition}-b{batch}-m{i}")
}

#[tokio::test]
async fn given_requests_to_partitions_of_both_shards_when_serving_should_move_and_lose_nothing() {
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &ServerOptions::default());
    let client = root_client(server.tcp()).await;
    moves_and_loses_nothing(&server, &client, "tcp").await;
}

#[tokio::test]
async fn given_a_websocket_connection_when_serving_should_move_with_its_framing() {
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &ServerOptions::default());
    let address = server.address("websocket").expect("WebSocket is served");
    let client = scenario::connect(&Carrier::WebSocket(address)).await;
    moves_and_loses_nothing(&server, &client, "websocket").await;
}

#[tokio::test]
async fn given_a_tls_connection_when_serving_should_move_with_its_tls_session() {
    let workdir = Workdir::new();
    let (server, cert) = start_with_tls(&workdir, "tcp");
    let carrier = Carrier::TcpTls(server.tcp(), cert);
    let client = scenario::connect(&carrier).await;
    moves_and_loses_nothing(&server, &client, "tcp").await;
}

#[tokio::test]
async fn given_a_wss_connection_when_serving_should_move_with_its_tls_session_and_framing() {
    let workdir = Workdir::new();
    let (server, cert) = start_with_tls(&workdir, "websocket");
    let address = server.address("websocket").expect("WebSocket is served");
    let client = scenario::connect(&Carrier::WebSocketTls(address, cert)).await;
    moves_and_loses_nothing(&server, &client, "websocket").await;
}

/// A server whose `listener` (`tcp` or `websocket`) serves TLS with a
/// certificate for localhost, and that certificate's file.
fn start_with_tls(workdir: &Workdir, listener: &str) -> (TestServer, String) {
    let (cert, key) = workdir.localhost_certificate();
    let options = ServerOptions {
        config_file: Some(format!(
            "[{listener}.tls]\nenabled = true\nself_signed = false\ncert_file = \"{cert}\"\nkey_file = \"{key}\"\n"
        )),
        ..ServerOptions::default()
    };
    (TestServer::start(workdir, &options), cert)
}

/// Sends runs of batches to each partition in turn, reads them back, stores
/// offsets and logs out, checking that the connection moved at least once.
async fn moves_and_loses_nothing(server: &TestServer, client: &IggyClient, transport: &str) {
    let http = server.address("http").expect("HTTP is served");
    let token = root_token(http);
    client.create_stream("s").await.unwrap();
    client
        .create_topic(
            &name("s"),
            "t",
            &TopicCreateOptions {
                partitions_count: Some(PARTITIONS),
                ..TopicCreateOptions::default()
            },
        )
        .await
        .unwrap();

    // Partition by partition: the partitions of the two shards come in
    // runs longer than the streak that moves a connection.
    for partition in 0..PARTITIONS {
        for batch in 0..BATCHES {
            let mut messages: Vec<IggyMessage> = (0..3)
                .map(|i| IggyMessage::from(payload(partition, batch, i)))
                .collect();
            client
                .send_messages(
                    &name("s"),
                    &name("t"),
                    &Partitioning::partition_id(partition),
                    &mut messages,
                )
                .await
                .unwrap();
        }
    }
    let moved = metric(
        &request(http, "GET", "/metrics", Some(&token), None).text(),
        "iggy_connections_moved_total",
    );
    assert!(moved >= 1.0, "the connection moved ({moved} times)");

    // Polls and offsets follow it; every message is there once, in order.
    for partition in (0..PARTITIONS).rev() {
        let polled = read_back(client, "s", "t", partition, PollingStrategy::offset(0), 100).await;
        let got: Vec<String> = polled
            .messages
            .iter()
            .map(|m| String::from_utf8(m.payload.to_vec()).unwrap())
            .collect();
        let want: Vec<String> = (0..BATCHES)
            .flat_map(|b| (0..3).map(move |i| payload(partition, b, i)))
            .collect();
        assert_eq!(got, want, "partition {partition}");
        let offsets: Vec<u64> = polled.messages.iter().map(|m| m.header.offset).collect();
        assert_eq!(offsets, (0..u64::from(BATCHES * 3)).collect::<Vec<_>>());
        client
            .store_consumer_offset(
                &Consumer::new(id(7)),
                &name("s"),
                &name("t"),
                Some(partition),
                5,
            )
            .await
            .unwrap();
        let stored = client
            .get_consumer_offset(
                &Consumer::new(id(7)),
                &name("s"),
                &name("t"),
                Some(partition),
            )
            .await
            .unwrap()
            .expect("stored");
        assert_eq!(stored.stored_offset, 5);
    }

    // A batch larger than a TLS connection seals before it sends (1 MiB),
    // a WebSocket message of several reads, goes in and comes back whole.
    let big: Vec<String> = (0..1100)
        .map(|i| format!("{i:04}{}", "x".repeat(996)))
        .collect();
    let mut messages: Vec<IggyMessage> = big.iter().map(|p| IggyMessage::from(p.clone())).collect();
    client
        .send_messages(
            &name("s"),
            &name("t"),
            &Partitioning::partition_id(0),
            &mut messages,
        )
        .await
        .unwrap();
    let polled = read_back(
        client,
        "s",
        "t",
        0,
        PollingStrategy::offset(u64::from(BATCHES * 3)),
        1100,
    )
    .await;
    let got: Vec<String> = polled
        .messages
        .iter()
        .map(|m| String::from_utf8(m.payload.to_vec()).unwrap())
        .collect();
    assert_eq!(got, big);

    // Still one connection, one client, whatever it moved through.
    let metrics = request(http, "GET", "/metrics", Some(&token), None).text();
    let open = format!("iggy_connections{{transport=\"{transport}\"}}");
    assert_eq!(metric(&metrics, &open), 1.0, "{open}");
    let me = client.get_me().await.unwrap();
    let clients = client.get_clients().await.unwrap();
    assert_eq!(
        clients
            .iter()
            .filter(|c| c.client_id == me.client_id)
            .count(),
        1
    );
    // Logging out on whichever shard it is on ends the session there.
    client.logout_user().await.unwrap();
    let err = client.get_streams().await.unwrap_err();
    assert_eq!(err.as_code(), IggyError::Unauthenticated.as_code(), "{err}");
}
