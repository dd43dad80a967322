//! What the links need to know, taken once from the server configuration
//! (`[cluster]`, `[message_bus]`) and checked there.

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use super::LinkError;
use crate::cluster::cluster_id;
use crate::cluster::handshake::{MacKey, PskKeys, ReplicaId};
use crate::cluster::tls::LinkTls;
use crate::config::ServerConfig;

/// Incoming frames buffered for the consensus wiring before readers wait.
pub const INBOUND_CAPACITY_DEFAULT: usize = 1024;

#[derive(Debug, Clone)]
pub struct LinkConfig {
    /// First 16 bytes of BLAKE3(`cluster.name`).
    pub cluster: u128,
    pub replica_id: ReplicaId,
    /// Every other roster node and its `ip:tcp_replica`.
    pub peers: Vec<(ReplicaId, SocketAddr)>,
    /// `cluster.auth`, or `None` when it is off.
    pub psk: Option<PskKeys>,
    /// `message_bus.max_message_size`: the largest frame read or sent.
    pub max_message_size: usize,
    /// `message_bus.peer_queue_capacity`, per lane.
    pub peer_queue_capacity: usize,
    /// `message_bus.max_batch`: frames per vectored write.
    pub max_batch: usize,
    /// `message_bus.reconnect_period`: pause between dial attempts.
    pub reconnect_period: Duration,
    /// `message_bus.handshake_grace`: bound on connect plus handshake.
    pub handshake_grace: Duration,
    pub inbound_capacity: usize,
    /// `cluster.tls`, or `None` when it is off.
    pub tls: Option<LinkTls>,
}

impl LinkConfig {
    /// The links of `replica_id` under `config`.
    pub fn from_server_config(
        config: &ServerConfig,
        replica_id: ReplicaId,
    ) -> Result<LinkConfig, LinkError> {
        let mut peers = Vec::new();
        for node in config
            .cluster
            .nodes
            .iter()
            .filter(|n| n.replica_id != replica_id)
        {
            peers.push((node.replica_id, node_address(config, node.replica_id)?));
        }
        let own = config
            .cluster
            .node(replica_id)
            .ok_or(LinkError::NotInRoster { replica_id })?;
        let tls = if config.cluster.tls.enabled {
            if !config.cluster.auth.enabled {
                return Err(LinkError::TlsWithoutAuth);
            }
            let names = config
                .cluster
                .nodes
                .iter()
                .map(|n| (n.replica_id, n.ip.clone()))
                .collect();
            Some(LinkTls::from_config(&config.cluster.tls, &own.ip, names)?)
        } else {
            None
        };
        let bus = &config.message_bus;
        Ok(LinkConfig {
            cluster: cluster_id(&config.cluster.name),
            replica_id,
            peers,
            psk: psk_keys(config)?,
            max_message_size: bus.max_message_size.as_bytes() as usize,
            peer_queue_capacity: bus.peer_queue_capacity as usize,
            max_batch: bus.max_batch as usize,
            reconnect_period: bus.reconnect_period.get(),
            handshake_grace: bus.handshake_grace.get(),
            inbound_capacity: INBOUND_CAPACITY_DEFAULT,
            tls,
        })
    }

    /// Preconditions `Links::start` relies on (validated configuration
    /// guarantees them).
    pub(super) fn check(&self) {
        assert!(
            self.peers.iter().all(|(id, _)| *id != self.replica_id),
            "self is not a peer"
        );
        let mut ids: Vec<_> = self.peers.iter().map(|(id, _)| *id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), self.peers.len(), "peer ids are unique");
        assert!(self.max_message_size > protocol::header::HEADER_SIZE);
        assert!(self.peer_queue_capacity > 0 && self.max_batch > 0 && self.inbound_capacity > 0);
        assert!(!self.reconnect_period.is_zero() && !self.handshake_grace.is_zero());
    }
}

/// `ip:tcp_replica` of a roster node.
pub fn node_address(config: &ServerConfig, replica_id: ReplicaId) -> Result<SocketAddr, LinkError> {
    let node = config
        .cluster
        .node(replica_id)
        .ok_or(LinkError::NotInRoster { replica_id })?;
    let port = node
        .ports
        .tcp_replica
        .ok_or(LinkError::NoReplicaPort { replica_id })?;
    resolve(&node.ip, port)
}

/// Binds this node's replica listener on its roster `ip:tcp_replica`.
pub fn bind_listener(address: SocketAddr) -> Result<std::net::TcpListener, LinkError> {
    let listener = std::net::TcpListener::bind(address)
        .map_err(|source| LinkError::Bind { address, source })?;
    listener
        .set_nonblocking(true)
        .map_err(LinkError::Listener)?;
    Ok(listener)
}
/// Keys of `cluster.auth`, or `None` when it is off.
fn psk_keys(config: &ServerConfig) -> Result<Option<PskKeys>, LinkError> {
    let auth = &config.cluster.auth;
    if !auth.enabled {
        return Ok(None);
    }
    let current =
        MacKey::derive(auth.shared_secret.as_bytes()).ok_or(LinkError::SecretTooShort {
            key: "cluster.auth.shared_secret",
        })?;
    let previous = match auth.previous_shared_secret.as_str() {
        "" => None,
        secret => Some(
            MacKey::derive(secret.as_bytes()).ok_or(LinkError::SecretTooShort {
                key: "cluster.auth.previous_shared_secret",
            })?,
        ),
    };
    Ok(Some(PskKeys { current, previous }))
}

fn resolve(host: &str, port: u16) -> Result<SocketAddr, LinkError> {
    let fail = |reason: String| LinkError::Resolve {
        host: host.to_owned(),
        reason,
    };
    (host, port)
        .to_socket_addrs()
        .map_err(|e| fail(e.to_string()))?
        .next()
        .ok_or_else(|| fail("no address".to_owned()))
}
