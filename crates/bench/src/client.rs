//! Opening an authenticated SDK client on the chosen transport.
//!
//! Every actor gets its own client (its own connection), and setup uses one
//! more. TCP sockets set `TCP_NODELAY` so small batches are not held back by
//! Nagle's algorithm and latency figures measure the server, not the kernel.
//! The SDK retries connecting forever by default; a benchmark should rather
//! fail, so retries are capped and the whole handshake has a deadline.

use std::time::Duration;

use anyhow::Context;
use iggy::prelude::{Client, IggyClient, UserClient};

use crate::args::Transport;
use crate::plan::ConnectionPlan;

/// Connection attempts the SDK makes before giving up.
const CONNECT_RETRIES: u32 = 3;
/// Deadline for connecting and logging in, retries included.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// Builds, connects and logs in a client.
pub async fn connect(plan: &ConnectionPlan) -> anyhow::Result<IggyClient> {
    tokio::time::timeout(CONNECT_TIMEOUT, connect_and_login(plan))
        .await
        .with_context(|| {
            format!(
                "no answer from {} within {}s",
                plan.address,
                CONNECT_TIMEOUT.as_secs()
            )
        })?
}

/// Applies the plan's TLS settings to a TCP or WebSocket client builder
/// (two SDK types with the same methods).
macro_rules! with_tls {
    ($builder:expr, $tls:expr) => {{
        let mut builder = $builder;
        if let Some(tls) = &$tls {
            builder = builder
                .with_tls_enabled(true)
                .with_tls_domain(tls.domain.clone())
                .with_tls_validate_certificate(tls.verify);
            if let Some(ca) = &tls.ca_file {
                builder = builder.with_tls_ca_file(ca.clone());
            }
        }
        builder
    }};
}

async fn connect_and_login(plan: &ConnectionPlan) -> anyhow::Result<IggyClient> {
    let address = plan.address.clone();
    let retries = Some(CONNECT_RETRIES);
    let builder = IggyClient::builder();
    let client = match plan.transport {
        Transport::Tcp => {
            let tcp = builder
                .with_tcp()
                .with_server_address(address)
                .with_no_delay()
                .with_reconnection_max_retries(retries);
            with_tls!(tcp, plan.tls).build()
        }
        Transport::Http => builder.with_http().with_api_url(address).build(),
        Transport::Quic => builder
            .with_quic()
            .with_server_address(address)
            .with_reconnection_max_retries(retries)
            .build(),
        Transport::WebSocket => {
            let ws = builder
                .with_websocket()
                .with_server_address(address)
                .with_reconnection_max_retries(retries);
            with_tls!(ws, plan.tls).build()
        }
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
