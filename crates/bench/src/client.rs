//! Opening an authenticated SDK client on the chosen transport.
//!
//! Every actor gets its own client (its own connection), and setup uses one
//! more. TCP sockets set `TCP_NODELAY` so small batches are not held back by
//! Nagle's algorithm and latency figures measure the server, not the kernel.

use anyhow::Context;
use iggy::prelude::{Client, IggyClient, UserClient};

use crate::args::Transport;
use crate::plan::ConnectionPlan;

/// Builds, connects and logs in a client.
pub async fn connect(plan: &ConnectionPlan) -> anyhow::Result<IggyClient> {
    let address = plan.address.clone();
    let builder = IggyClient::builder();
    let client = match plan.transport {
        Transport::Tcp => builder
            .with_tcp()
            .with_server_address(address)
            .with_no_delay()
            .build(),
        Transport::Http => builder.with_http().with_api_url(address).build(),
        Transport::Quic => builder.with_quic().with_server_address(address).build(),
        Transport::WebSocket => builder
            .with_websocket()
            .with_server_address(address)
            .build(),
    }
    .with_context(|| format!("cannot configure a {:?} client", plan.transport))?;
    client
        .connect()
        .await
        .with_context(|| format!("cannot connect to {}", plan.address))?;
    client
        .login_user(&plan.username, &plan.password)
        .await
        .with_context(|| format!("cannot log in as `{}`", plan.username))?;
    Ok(client)
}
