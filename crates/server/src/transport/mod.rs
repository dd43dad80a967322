//! Client transports. Listeners are bound on the main thread before the
//! shards start (so every bound address is known up front), then served by
//! shard 0; connections carry frames to the session layer, which is the same
//! for every transport.
//!
//! Built so far: plaintext TCP. QUIC, WebSocket and HTTP are configured but
//! not built in this release: they are never bound, the start-up log says so,
//! and the runtime dump reports them as disabled.

pub mod tcp;

use std::net::SocketAddr;
use std::rc::Rc;

use anyhow::Context;
use tracing::{info, warn};

use crate::shard::Shard;

/// One transport's configured state.
#[derive(Debug, Clone)]
pub struct ListenerConfig {
    pub enabled: bool,
    pub address: SocketAddr,
}

/// What to bind.
#[derive(Debug, Clone)]
pub struct ListenerPlan {
    pub tcp: ListenerConfig,
    pub http: ListenerConfig,
    pub quic: ListenerConfig,
    pub websocket: ListenerConfig,
}

/// The addresses actually bound (None = not served).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BoundAddresses {
    pub tcp: Option<SocketAddr>,
    pub http: Option<SocketAddr>,
    pub quic: Option<SocketAddr>,
    pub websocket: Option<SocketAddr>,
}

/// Bound sockets, handed to shard 0.
pub struct Listeners {
    tcp: Option<std::net::TcpListener>,
}

/// Binds every enabled, built transport.
pub fn bind(plan: &ListenerPlan) -> anyhow::Result<(Listeners, BoundAddresses)> {
    let mut bound = BoundAddresses::default();
    let tcp = if plan.tcp.enabled {
        let listener = std::net::TcpListener::bind(plan.tcp.address)
            .with_context(|| format!("tcp.address: cannot bind {}", plan.tcp.address))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        info!(%addr, "TCP listener bound (binary protocol)");
        bound.tcp = Some(addr);
        Some(listener)
    } else {
        info!("TCP listener disabled by configuration (tcp.enabled = false)");
        None
    };
    for (name, config) in [
        ("HTTP", &plan.http),
        ("QUIC", &plan.quic),
        ("WebSocket", &plan.websocket),
    ] {
        if config.enabled {
            warn!(address = %config.address, "{name} transport is enabled in configuration but not built in this release; not bound");
        }
    }
    Ok((Listeners { tcp }, bound))
}

/// Starts the accept loops on shard 0.
pub fn serve(shard: &Rc<Shard>, listeners: Listeners) {
    if let Some(listener) = listeners.tcp {
        tcp::serve(shard, listener);
    }
}
