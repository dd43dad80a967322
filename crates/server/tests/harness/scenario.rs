//! The transport-independent scenario: every client transport runs the
//! same commands and checks through the SDK's `IggyClient`.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::net::SocketAddr;

use iggy::prelude::*;

use super::sdk::{id, name};

/// How a client reaches the server.
#[derive(Debug, Clone)]
pub enum Carrier {
    Tcp(SocketAddr),
    /// With the CA file that signs the server's certificate.
    TcpTls(SocketAddr, String),
    Quic(SocketAddr),
    WebSocket(SocketAddr),
    WebSocketTls(SocketAddr, String),
    /// A base URL (`http://` or `https://`).
    Http(String),
}

/// A connected client logged in as root.
pub async fn connect(carrier: &Carrier) -> IggyClient {
    let builder = IggyClient::builder();
    let client = match carrier {
        Carrier::Tcp(addr) => builder
            .with_tcp()
            .with_server_address(addr.to_string())
            .build(),
        Carrier::TcpTls(addr, ca) => builder
            .with_tcp()
            .with_server_address(format!("localhost:{}", addr.port()))
            .with_tls_enabled(true)
            .with_tls_domain("localhost".to_owned())
            .with_tls_ca_file(ca.clone())
            .build(),
        Carrier::Quic(addr) => builder
            .with_quic()
            .with_server_address(addr.to_string())
            .with_server_name("localhost".to_owned())
            .build(),
        Carrier::WebSocket(addr) => builder
            .with_websocket()
            .with_server_address(addr.to_string())
            .build(),
        Carrier::WebSocketTls(addr, ca) => builder
            .with_websocket()
            .with_server_address(format!("localhost:{}", addr.port()))
            .with_tls_enabled(true)
            .with_tls_domain("localhost".to_owned())
            .with_tls_ca_file(ca.clone())
            .build(),
        Carrier::Http(url) => builder.with_http().with_api_url(url.clone()).build(),
    }
    .unwrap();
    client.connect().await.unwrap();
    client
        .login_user(super::ROOT_USERNAME, super::ROOT_PASSWORD)
        .await
        .unwrap_or_else(|e| panic!("login over {carrier:?}: {e}"));
    client
}

fn message(stream: &str, i: u32) -> IggyMessage {
    let mut headers = BTreeMap::new();
    headers.insert(
        HeaderKey::try_from("seq").unwrap(),
        HeaderValue::from(i as u64),
    );
    IggyMessage::builder()
        .payload(format!("{stream}-{i}").into_bytes().into())
        .user_headers(headers)
        .build()
        .unwrap()
}

/// Creates `stream` with a 3-partition topic, sends 300 messages with
/// headers (100 by partition id, 100 by key, 100 balanced), polls them back
/// with each strategy, stores and reads an offset, then deletes the stream.
pub async fn run(client: &IggyClient, stream: &str) {
    client.ping().await.unwrap();
    client.create_stream(stream).await.unwrap();
    let options = TopicCreateOptions {
        partitions_count: Some(3),
        ..TopicCreateOptions::default()
    };
    client
        .create_topic(&name(stream), "t", &options)
        .await
        .unwrap();
    let (s, t) = (name(stream), name("t"));
    let mut sent = 0u32;
    for partitioning in [
        Partitioning::partition_id(1),
        Partitioning::messages_key_str("same-key").unwrap(),
        Partitioning::balanced(),
    ] {
        for _ in 0..10 {
            let mut batch: Vec<IggyMessage> =
                (sent..sent + 10).map(|i| message(stream, i)).collect();
            client
                .send_messages(&s, &t, &partitioning, &mut batch)
                .await
                .unwrap();
            sent += 10;
        }
    }
    let topic = client.get_topic(&s, &t).await.unwrap().unwrap();
    let total: u64 = topic.partitions.iter().map(|p| p.messages_count).sum();
    assert_eq!(total, 300);

    // Partition 1 got the first 100 in order (offsets 0..99) and maybe more.
    let consumer = Consumer::new(id(3));
    let first = client
        .poll_messages(
            &s,
            &t,
            Some(1),
            &consumer,
            &PollingStrategy::first(),
            100,
            false,
        )
        .await
        .unwrap();
    assert_eq!(first.messages.len(), 100);
    for (i, m) in first.messages.iter().enumerate() {
        assert_eq!(m.header.offset, i as u64);
        assert_eq!(m.payload.as_ref(), format!("{stream}-{i}").as_bytes());
        let headers = m.user_headers_map().unwrap().unwrap();
        let seq = headers.get(&HeaderKey::try_from("seq").unwrap()).unwrap();
        assert_eq!(seq.as_uint64().unwrap(), i as u64);
        assert!(m.header.timestamp > 0);
    }
    let at = client
        .poll_messages(
            &s,
            &t,
            Some(1),
            &consumer,
            &PollingStrategy::offset(42),
            5,
            false,
        )
        .await
        .unwrap();
    assert_eq!(at.messages[0].header.offset, 42);
    let ts = first.messages[50].header.timestamp;
    let since = client
        .poll_messages(
            &s,
            &t,
            Some(1),
            &consumer,
            &PollingStrategy::timestamp(ts.into()),
            1000,
            false,
        )
        .await
        .unwrap();
    assert!(since.messages.iter().all(|m| m.header.timestamp >= ts));
    let last = client
        .poll_messages(
            &s,
            &t,
            Some(1),
            &consumer,
            &PollingStrategy::last(),
            1,
            false,
        )
        .await
        .unwrap();
    assert_eq!(last.messages.len(), 1);
    let next = client
        .poll_messages(
            &s,
            &t,
            Some(1),
            &consumer,
            &PollingStrategy::next(),
            10,
            true,
        )
        .await
        .unwrap();
    assert_eq!(next.messages[0].header.offset, 0);
    let stored = client
        .get_consumer_offset(&consumer, &s, &t, Some(1))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.stored_offset, 9);
    client
        .store_consumer_offset(&consumer, &s, &t, Some(1), 20)
        .await
        .unwrap();
    let next = client
        .poll_messages(
            &s,
            &t,
            Some(1),
            &consumer,
            &PollingStrategy::next(),
            1,
            false,
        )
        .await
        .unwrap();
    assert_eq!(next.messages[0].header.offset, 21);

    // Every message arrived exactly once across the partitions.
    let mut seen = Vec::new();
    for partition in 0..3 {
        let all = client
            .poll_messages(
                &s,
                &t,
                Some(partition),
                &consumer,
                &PollingStrategy::first(),
                1000,
                false,
            )
            .await
            .unwrap();
        seen.extend(all.messages.iter().map(|m| m.payload.to_vec()));
    }
    seen.sort();
    let mut expected: Vec<Vec<u8>> = (0..300)
        .map(|i| format!("{stream}-{i}").into_bytes())
        .collect();
    expected.sort();
    assert_eq!(seen, expected);

    assert!(client.get_stream(&name("missing")).await.unwrap().is_none());
    client.delete_stream(&s).await.unwrap();
    assert!(client.get_stream(&s).await.unwrap().is_none());
}
