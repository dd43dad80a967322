//! `[cluster]`: VSR timing, replica authentication and TLS, shard
//! placement of connections, and the `[[cluster.nodes]]` roster that every
//! node shares. The roster is ignored while `cluster.enabled = false`.

use serde::{Deserialize, Serialize};

use crate::config::values::ConfigDuration;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterConfig {
    pub enabled: bool,
    pub name: String,
    pub heartbeat_timeout: ConfigDuration,
    pub commit_broadcast_interval: ConfigDuration,
    pub prepare_retransmit_interval: ConfigDuration,
    pub view_change_retransmit_interval: ConfigDuration,
    pub view_change_status_timeout: ConfigDuration,
    pub request_start_view_retransmit_interval: ConfigDuration,
    pub view_probe_attempts_max: u32,
    pub repair_retry_interval: ConfigDuration,
    pub repair_chunk_max: u32,
    /// Zero disables the wedged-superblock exit.
    pub superblock_wedged_fatal_timeout: ConfigDuration,
    pub auth: ClusterAuthConfig,
    pub tls: ClusterTlsConfig,
    pub coordinator: ClusterCoordinatorConfig,
    pub nodes: Vec<ClusterNode>,
}

impl ClusterConfig {
    /// The roster entry with this replica id, if any.
    pub fn node(&self, replica_id: u8) -> Option<&ClusterNode> {
        self.nodes.iter().find(|node| node.replica_id == replica_id)
    }

    /// Mutable access, e.g. to put bound ports back before the dump.
    pub fn node_mut(&mut self, replica_id: u8) -> Option<&mut ClusterNode> {
        self.nodes
            .iter_mut()
            .find(|node| node.replica_id == replica_id)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterAuthConfig {
    pub enabled: bool,
    /// Secret PSK. Never dumped.
    pub shared_secret: String,
    /// Secret retiring PSK. Never dumped.
    pub previous_shared_secret: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterTlsConfig {
    pub enabled: bool,
    pub self_signed: bool,
    pub cert_file: String,
    pub key_file: String,
    pub ca_file: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterCoordinatorConfig {
    pub skip_shard_zero_for_replicas: bool,
    pub skip_shard_zero_for_clients: bool,
}

/// One `[[cluster.nodes]]` roster entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterNode {
    pub name: String,
    /// Roster address for replica traffic; not a client bind interface.
    pub ip: String,
    pub replica_id: u8,
    pub ports: NodePorts,
    /// Client-facing host; defaults to `ip`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advertised_address: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub advertised_addresses: Vec<AdvertisedAddress>,
}

impl ClusterNode {
    /// The host published to clients that no CIDR selector matches.
    pub fn default_advertised_host(&self) -> &str {
        self.advertised_address.as_deref().unwrap_or(&self.ip)
    }
}

/// Listener ports of a roster node; in cluster mode the only source of
/// ports, so every enabled transport needs one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodePorts {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quic: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub websocket: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_replica: Option<u16>,
}

/// Clients whose IP falls in `client_cidr` are given `address`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdvertisedAddress {
    pub client_cidr: String,
    pub address: String,
}
