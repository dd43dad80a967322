//! The typed configuration schema: [`ServerConfig`] and one struct per
//! TOML table, grouped by section in the files of this module.
//!
//! The embedded `default_config.toml` is the documented source of every
//! default; [`ServerConfig::embedded_defaults`] parses it. Optional keys are
//! `Option`s that disappear from serialized output when unset.

mod cluster;
mod services;
mod system;
mod transport;

use serde::{Deserialize, Serialize};

pub use cluster::{
    AdvertisedAddress, ClusterAuthConfig, ClusterConfig, ClusterCoordinatorConfig, ClusterNode,
    ClusterTlsConfig, NodePorts,
};
pub use services::{
    ConsumerGroupConfig, DataMaintenanceConfig, HeartbeatConfig, MessageBusConfig,
    MessagesMaintenanceConfig, MetadataConfig, NodeConfig, PartitionConfig,
    PersonalAccessTokenCleanerConfig, PersonalAccessTokenConfig, TelemetryConfig,
    TelemetryExportConfig, TelemetryTransport,
};
pub use system::{
    DirectIo, DirectoryConfig, EncryptionConfig, LoggingConfig, MemoryPoolConfig, RecoveryConfig,
    RuntimeConfig, SegmentConfig, ShardingConfig, SystemConfig, SystemPartitionConfig,
};
pub use transport::{
    CorsConfig, HttpConfig, HttpTlsConfig, JwtConfig, ListenerTlsConfig, MetricsConfig,
    QuicCertificateConfig, QuicConfig, TRUSTED_ISSUER_ALGORITHMS, TcpConfig, TrustedIssuer,
    WEBSOCKET_MAX_FRAME_DEFAULT, WEBSOCKET_MAX_MESSAGE_DEFAULT, WEBSOCKET_READ_BUFFER_DEFAULT,
    WEBSOCKET_WRITE_BUFFER_DEFAULT, WebSocketConfig,
};

use crate::config::values::ByteSize;

/// The embedded default file, always the base layer of loading.
pub const DEFAULT_CONFIG_TOML: &str = include_str!("../default_config.toml");

/// The secret keys: masked when applied from the environment and never
/// written to the runtime dump.
pub const SECRET_KEYS: [&str; 6] = [
    "http.jwt.encoding_secret",
    "http.jwt.decoding_secret",
    "system.encryption.key",
    "system.encryption.previous_keys",
    "cluster.auth.shared_secret",
    "cluster.auth.previous_shared_secret",
];

/// The complete server configuration, one field per top-level table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerConfig {
    pub consumer_group: ConsumerGroupConfig,
    pub data_maintenance: DataMaintenanceConfig,
    pub http: HttpConfig,
    pub tcp: TcpConfig,
    pub quic: QuicConfig,
    pub websocket: WebSocketConfig,
    pub personal_access_token: PersonalAccessTokenConfig,
    pub heartbeat: HeartbeatConfig,
    pub telemetry: TelemetryConfig,
    pub system: SystemConfig,
    pub cluster: ClusterConfig,
    #[serde(default)]
    pub node: NodeConfig,
    pub metadata: MetadataConfig,
    pub partition: PartitionConfig,
    pub message_bus: MessageBusConfig,
}

impl ServerConfig {
    /// The embedded defaults as a TOML table.
    pub(crate) fn embedded_default_table() -> toml::Table {
        DEFAULT_CONFIG_TOML
            .parse()
            .expect("the embedded default_config.toml is valid TOML; pinned by a unit test")
    }

    /// The embedded defaults, typed.
    pub fn embedded_defaults() -> Self {
        Self::deserialize(toml::Value::Table(Self::embedded_default_table()))
            .expect("the embedded default_config.toml matches the schema; pinned by a unit test")
    }

    /// A configuration with every optional key set and one element in
    /// every array of tables, so serializing it reveals the whole key tree.
    pub(crate) fn schema_sample() -> Self {
        let mut sample = Self::embedded_defaults();
        let websocket = &mut sample.websocket;
        websocket.read_buffer_size = Some(ByteSize::kib(1));
        websocket.write_buffer_size = Some(ByteSize::kib(1));
        websocket.max_write_buffer_size = Some(ByteSize::kib(2));
        websocket.max_message_size = Some(ByteSize::kib(1));
        websocket.max_frame_size = Some(ByteSize::kib(1));
        sample.node.advertised_address = Some("localhost".to_owned());
        sample.http.jwt.trusted_issuers = vec![TrustedIssuer {
            issuer: "issuer".to_owned(),
            audience: Some("audience".to_owned()),
            jwks_url: "https://issuer/jwks".to_owned(),
            key_file: Some("issuer.pem".to_owned()),
            algorithms: Some(vec!["RS256".to_owned()]),
            jwks_refresh_interval: Some(std::time::Duration::from_secs(300).into()),
            user_id: 1,
        }];
        sample.cluster.nodes.truncate(1);
        for node in &mut sample.cluster.nodes {
            node.ports = NodePorts {
                tcp: Some(1),
                quic: Some(1),
                http: Some(1),
                websocket: Some(1),
                tcp_replica: Some(1),
            };
            node.advertised_address = Some("localhost".to_owned());
            node.advertised_addresses = vec![AdvertisedAddress {
                client_cidr: "0.0.0.0/0".to_owned(),
                address: "localhost".to_owned(),
            }];
        }
        sample
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::config::values::{ConfigDuration, CpuAllocation, TokenExpiry};

    #[test]
    fn given_embedded_file_when_parsed_should_hold_documented_defaults() {
        let config = ServerConfig::embedded_defaults();
        assert_eq!(
            config.consumer_group.rebalancing_timeout,
            ConfigDuration::from_secs(30)
        );
        assert_eq!(config.http.address.to_string(), "127.0.0.1:3000");
        assert_eq!(config.http.max_request_size, ByteSize::new(2_000_000));
        assert_eq!(
            config.http.cors.allowed_methods,
            ["GET", "POST", "PUT", "DELETE"]
        );
        assert_eq!(
            config.http.jwt.access_token_expiry,
            TokenExpiry::After(Duration::from_secs(3_600))
        );
        assert!(config.http.jwt.trusted_issuers.is_empty());
        assert_eq!(config.tcp.address.to_string(), "127.0.0.1:8090");
        assert_eq!(config.quic.address.to_string(), "127.0.0.1:8080");
        assert_eq!(config.quic.initial_mtu, ByteSize::new(1_200));
        assert_eq!(config.websocket.address.to_string(), "127.0.0.1:8092");
        assert_eq!(config.websocket.max_frame_size, None);
        assert_eq!(config.system.path, "local_data");
        assert_eq!(config.system.runtime.path, "runtime");
        assert_eq!(config.system.logging.level, "info");
        assert_eq!(
            config.system.logging.max_total_size,
            ByteSize::new(4_000_000_000)
        );
        assert_eq!(
            config.system.logging.retention,
            ConfigDuration::from_secs(7 * 86_400)
        );
        assert_eq!(config.system.memory_pool.size, ByteSize::gib(4));
        assert_eq!(config.system.sharding.cpu_allocation, CpuAllocation::All);
        assert_eq!(
            config.system.sharding.shutdown_poll_interval,
            ConfigDuration::from_millis(50)
        );
        assert!(!config.cluster.enabled);
        assert_eq!(config.cluster.nodes.len(), 2);
        assert_eq!(config.cluster.nodes[1].ports.tcp_replica, Some(9091));
        assert_eq!(
            config.cluster.superblock_wedged_fatal_timeout,
            ConfigDuration::from_secs(120)
        );
        assert_eq!(config.node.advertised_address, None);
        assert_eq!(config.metadata.journal_slots, 1_024);
        assert_eq!(
            config.partition.transfer_served_cache_bytes_max,
            ByteSize::mib(2_176)
        );
        assert_eq!(config.message_bus.max_message_size, ByteSize::mib(64));
    }

    #[test]
    fn given_embedded_defaults_when_validated_should_pass() {
        let warnings = ServerConfig::embedded_defaults()
            .validate(None)
            .expect("defaults are valid");
        assert!(warnings.is_empty(), "{warnings:?}");
    }
}
