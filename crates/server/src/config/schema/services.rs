//! Smaller top-level sections: `[consumer_group]`, `[data_maintenance]`,
//! `[personal_access_token]`, `[heartbeat]`, `[telemetry]`, `[node]`,
//! `[metadata]`, `[partition]` and `[message_bus]`.

use serde::{Deserialize, Serialize};

use crate::config::values::{ByteSize, ConfigDuration};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerGroupConfig {
    pub rebalancing_timeout: ConfigDuration,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataMaintenanceConfig {
    pub messages: MessagesMaintenanceConfig,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessagesMaintenanceConfig {
    pub cleaner_enabled: bool,
    pub interval: ConfigDuration,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersonalAccessTokenConfig {
    pub max_tokens_per_user: u32,
    pub cleaner: PersonalAccessTokenCleanerConfig,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersonalAccessTokenCleanerConfig {
    pub enabled: bool,
    pub interval: ConfigDuration,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeartbeatConfig {
    pub enabled: bool,
    pub interval: ConfigDuration,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TelemetryConfig {
    pub enabled: bool,
    pub service_name: String,
    pub logs: TelemetryExportConfig,
    pub traces: TelemetryExportConfig,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TelemetryExportConfig {
    pub transport: TelemetryTransport,
    pub endpoint: String,
}

/// OpenTelemetry export protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TelemetryTransport {
    Grpc,
    Http,
}

/// `[node]`: single-node identity published in cluster metadata.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeConfig {
    /// Client-facing host (IP literal or RFC 1123 name, no port).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advertised_address: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetadataConfig {
    pub prepare_queue_depth: u32,
    pub journal_slots: u32,
    pub clients_table_max: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionConfig {
    pub prepare_queue_depth: u32,
    pub evicted_ring_capacity: u32,
    pub evicted_ring_bytes_max: ByteSize,
    pub transfer_served_cache_bytes_max: ByteSize,
    pub transfer_artifact_bytes_max: ByteSize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageBusConfig {
    pub max_batch: u32,
    pub max_message_size: ByteSize,
    pub peer_queue_capacity: u32,
    pub reconnect_period: ConfigDuration,
    pub close_peer_timeout: ConfigDuration,
    pub close_grace: ConfigDuration,
    pub handshake_grace: ConfigDuration,
}
