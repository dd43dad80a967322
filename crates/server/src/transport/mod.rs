//! Client transports. Listeners are bound on the main thread before the
//! shards start (so every bound address is known up front), then served by
//! shard 0; connections carry frames to the session layer, which is the same
//! for every transport.
//!
//! Built so far: plaintext TCP and the HTTP API. QUIC and WebSocket are
//! configured but not built in this release: they are never bound, the
//! start-up log says so, and the runtime dump reports them as disabled.

pub mod tcp;

use std::net::SocketAddr;
use std::rc::Rc;

use anyhow::Context;
use tracing::{info, warn};

use crate::http::HttpSettings;
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
    http: Option<(std::net::TcpListener, HttpSettings)>,
}

/// Binds every enabled, built transport.
pub fn bind(
    plan: &ListenerPlan,
    http_settings: HttpSettings,
) -> anyhow::Result<(Listeners, BoundAddresses)> {
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
    let http = if plan.http.enabled {
        let listener = std::net::TcpListener::bind(plan.http.address)
            .with_context(|| format!("http.address: cannot bind {}", plan.http.address))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        info!(%addr, "HTTP listener bound (REST API)");
        bound.http = Some(addr);
        Some((listener, http_settings))
    } else {
        info!("HTTP listener disabled by configuration (http.enabled = false)");
        None
    };
    for (name, config) in [("QUIC", &plan.quic), ("WebSocket", &plan.websocket)] {
        if config.enabled {
            warn!(address = %config.address, "{name} transport is enabled in configuration but not built in this release; not bound");
        }
    }
    Ok((Listeners { tcp, http }, bound))
}

/// Starts the accept loops on shard 0.
pub fn serve(shard: &Rc<Shard>, listeners: Listeners) {
    if let Some(listener) = listeners.tcp {
        tcp::serve(shard, listener);
    }
    if let Some((listener, settings)) = listeners.http {
        crate::http::serve(shard, listener, settings);
    }
}
