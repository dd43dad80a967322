//! SDK helpers for integration tests: a logged-in TCP client.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;

use iggy::prelude::*;

pub async fn tcp_client(addr: SocketAddr) -> IggyClient {
    let client = IggyClient::builder()
        .with_tcp()
        .with_server_address(addr.to_string())
        .build()
        .unwrap();
    client.connect().await.unwrap();
    client
}

pub async fn root_client(addr: SocketAddr) -> IggyClient {
    let client = tcp_client(addr).await;
    client
        .login_user(super::ROOT_USERNAME, super::ROOT_PASSWORD)
        .await
        .unwrap();
    client
}

pub fn id(n: u32) -> Identifier {
    Identifier::numeric(n).unwrap()
}

pub fn name(s: &str) -> Identifier {
    Identifier::named(s).unwrap()
}

/// Polls as plain consumer 1 without committing (the common read-back).
pub async fn read_back(
    client: &IggyClient,
    stream: &str,
    topic: &str,
    partition: u32,
    strategy: PollingStrategy,
    count: u32,
) -> PolledMessages {
    client
        .poll_messages(
            &name(stream),
            &name(topic),
            Some(partition),
            &Consumer::new(id(1)),
            &strategy,
            count,
            false,
        )
        .await
        .unwrap()
}
