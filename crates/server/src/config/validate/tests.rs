//! Tests of the validation rules: each case breaks one rule of an otherwise
//! valid configuration and checks the key, the value and the allowed text.

use super::*;
use crate::config::schema::{AdvertisedAddress, TrustedIssuer};
use crate::config::values::{ByteSize, TokenExpiry};

type Mutation = fn(&mut ServerConfig);

fn defaults() -> ServerConfig {
    ServerConfig::embedded_defaults()
}

/// A two-node cluster with auth, valid for replica 0.
fn cluster() -> ServerConfig {
    let mut config = defaults();
    config.cluster.enabled = true;
    config
}

fn refusal(config: &ServerConfig, replica_id: Option<u8>) -> (String, String, String) {
    match config.validate(replica_id) {
        Err(ConfigError::InvalidValue {
            key,
            value,
            allowed,
            ..
        }) => (key, value, allowed),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn check_refused(
    cases: &[(&str, Mutation, &str, &str)],
    base: fn() -> ServerConfig,
    replica_id: Option<u8>,
) {
    for (expected_key, mutate, expected_value, allowed_part) in cases {
        let mut config = base();
        mutate(&mut config);
        let (key, value, allowed) = refusal(&config, replica_id);
        assert_eq!(key, *expected_key);
        assert_eq!(value, *expected_value, "value of {key}");
        assert!(
            allowed.contains(allowed_part),
            "{key}: {allowed:?} lacks {allowed_part:?}"
        );
    }
}

#[test]
fn given_single_key_violations_when_validating_should_name_key_value_and_allowed() {
    let cases: &[(&str, Mutation, &str, &str)] = &[
        (
            "consumer_group.rebalancing_timeout",
            |c| c.consumer_group.rebalancing_timeout = ConfigDuration::ZERO,
            "\"0s\"",
            "non-zero",
        ),
        (
            "data_maintenance.messages.interval",
            |c| c.data_maintenance.messages.interval = ConfigDuration::ZERO,
            "\"0s\"",
            "non-zero",
        ),
        (
            "personal_access_token.max_tokens_per_user",
            |c| c.personal_access_token.max_tokens_per_user = 0,
            "0",
            "greater than 0",
        ),
        (
            "heartbeat.interval",
            |c| c.heartbeat.interval = ConfigDuration::ZERO,
            "\"0s\"",
            "non-zero",
        ),
        (
            "http.jwt.algorithm",
            |c| c.http.jwt.algorithm = "RS256".into(),
            "\"RS256\"",
            "HS256, HS384, HS512",
        ),
        (
            "http.jwt.access_token_expiry",
            |c| c.http.jwt.access_token_expiry = TokenExpiry::ServerDefault,
            "\"server_default\"",
            "sentinel",
        ),
        (
            "http.cors.allowed_methods",
            |c| c.http.cors.allowed_methods.push("FETCH".into()),
            "\"FETCH\"",
            "HTTP method",
        ),
        (
            "http.cors.allowed_origins[1]",
            |c| c.http.cors.allowed_origins = vec!["https://a".into(), "*".into()],
            "\"*\"",
            "first entry",
        ),
        (
            "http.cors.allow_credentials",
            |c| c.http.cors.allow_credentials = true,
            "true",
            "wildcard",
        ),
        (
            "http.metrics.endpoint",
            |c| c.http.metrics.endpoint = "metrics".into(),
            "\"metrics\"",
            "starting with \"/\"",
        ),
        (
            "http.tls.cert_file",
            |c| {
                c.http.tls.enabled = true;
                c.http.tls.cert_file.clear();
            },
            "\"\"",
            "non-empty",
        ),
        (
            "http.jwt.trusted_issuers[0].user_id",
            |c| {
                c.http.jwt.trusted_issuers = vec![TrustedIssuer {
                    issuer: "i".into(),
                    audience: None,
                    jwks_url: "u".into(),
                    key_file: None,
                    algorithms: None,
                    jwks_refresh_interval: None,
                    user_id: 0,
                }]
            },
            "0",
            "non-zero",
        ),
        (
            "tcp.tls.key_file",
            |c| {
                c.tcp.tls.enabled = true;
                c.tcp.tls.self_signed = false;
                c.tcp.tls.key_file.clear();
            },
            "\"\"",
            "self_signed = false",
        ),
        (
            "quic.max_concurrent_bidi_streams",
            |c| c.quic.max_concurrent_bidi_streams = 0,
            "0",
            "at least 1",
        ),
        (
            "quic.stream_receive_window",
            |c| c.quic.stream_receive_window = ByteSize::mib(65),
            "\"65 MiB\"",
            "receive_window",
        ),
        (
            "quic.certificate.cert_file",
            |c| c.quic.certificate.self_signed = false,
            "\"\"",
            "self_signed = false",
        ),
        (
            "websocket.read_buffer_size",
            |c| c.websocket.read_buffer_size = Some(ByteSize::ZERO),
            "\"0 B\"",
            "non-zero",
        ),
        (
            "websocket.max_message_size",
            |c| c.websocket.max_message_size = Some(ByteSize::mib(65)),
            "\"65 MiB\"",
            "message_bus.max_message_size",
        ),
        (
            "websocket.max_frame_size",
            |c| c.websocket.max_message_size = Some(ByteSize::mib(1)),
            "\"16 MiB\"",
            "websocket.max_message_size",
        ),
        (
            "websocket.max_write_buffer_size",
            |c| c.websocket.max_write_buffer_size = Some(ByteSize::kib(128)),
            "\"128 KiB\"",
            "write_buffer_size",
        ),
        (
            "telemetry.service_name",
            |c| {
                c.telemetry.enabled = true;
                c.telemetry.service_name.clear();
            },
            "\"\"",
            "non-empty",
        ),
        (
            "system.path",
            |c| c.system.path = " ".into(),
            "\" \"",
            "non-empty",
        ),
        (
            "system.logging.level",
            |c| c.system.logging.level.clear(),
            "\"\"",
            "non-empty",
        ),
        (
            "system.logging.max_total_size",
            |c| c.system.logging.max_total_size = ByteSize::new(1_000),
            "\"1 KB\"",
            "max_file_size",
        ),
        (
            "system.logging.retention",
            |c| c.system.logging.retention = ConfigDuration::from_millis(500),
            "\"500ms\"",
            "at least 1s",
        ),
        (
            "system.encryption.key",
            |c| {
                c.system.encryption.enabled = true;
                c.system.encryption.key = "c2VjcmV0".into();
            },
            "(secret of 8 bytes)",
            "32 bytes",
        ),
        (
            "system.segment.archive_expired",
            |c| c.system.segment.archive_expired = true,
            "true",
            "false",
        ),
        (
            "system.recovery.recreate_missing_state",
            |c| c.system.recovery.recreate_missing_state = true,
            "true",
            "false",
        ),
        (
            "system.memory_pool.size",
            |c| c.system.memory_pool.size = ByteSize::new(1_073_741_825),
            "\"1073741825 B\"",
            "multiple of 4096",
        ),
        (
            "system.memory_pool.bucket_capacity",
            |c| c.system.memory_pool.bucket_capacity = 100,
            "100",
            "power of two",
        ),
        (
            "system.sharding.inbox_capacity",
            |c| c.system.sharding.inbox_capacity = 0,
            "0",
            "1 ..= 1048576",
        ),
        (
            "system.sharding.reply_inbox_capacity",
            |c| c.system.sharding.reply_inbox_capacity = 1_048_577,
            "1048577",
            "1 ..= 1048576",
        ),
        (
            "system.sharding.shutdown_drain_timeout",
            |c| c.system.sharding.shutdown_drain_timeout = ConfigDuration::from_secs(601),
            "\"10m 1s\"",
            "at most 10m",
        ),
        (
            "system.sharding.shutdown_poll_interval",
            |c| c.system.sharding.shutdown_poll_interval = ConfigDuration::ZERO,
            "\"0s\"",
            "greater than 0s",
        ),
        (
            "system.sharding.shutdown_join_timeout",
            |c| c.system.sharding.shutdown_join_timeout = ConfigDuration::from_secs(5),
            "\"5s\"",
            "shutdown_drain_timeout",
        ),
        (
            "system.sharding.reconcile_periodic_interval",
            |c| c.system.sharding.reconcile_periodic_interval = ConfigDuration::from_secs(31),
            "\"31s\"",
            "at most 30s",
        ),
        (
            "cluster.heartbeat_timeout",
            |c| c.cluster.heartbeat_timeout = ConfigDuration::from_secs(1),
            "\"1s\"",
            "at least 2s",
        ),
        (
            "cluster.heartbeat_timeout",
            |c| c.cluster.commit_broadcast_interval = ConfigDuration::from_secs(2),
            "\"5s\"",
            "8s in total",
        ),
        (
            "cluster.view_change_status_timeout",
            |c| c.cluster.view_change_retransmit_interval = ConfigDuration::from_secs(2),
            "\"5s\"",
            "(8s)",
        ),
        (
            "cluster.view_probe_attempts_max",
            |c| c.cluster.view_probe_attempts_max = 101,
            "101",
            "1 ..= 100",
        ),
        (
            "cluster.repair_chunk_max",
            |c| c.cluster.repair_chunk_max = 256,
            "256",
            "peer_queue_capacity (256)",
        ),
        (
            "cluster.superblock_wedged_fatal_timeout",
            |c| c.cluster.superblock_wedged_fatal_timeout = ConfigDuration::from_secs(10),
            "\"10s\"",
            "at least 30s",
        ),
        (
            "cluster.auth.shared_secret",
            |c| {
                c.cluster.auth.enabled = true;
                c.cluster.auth.shared_secret = "short".into();
            },
            "(secret of 5 bytes)",
            "at least 32 bytes",
        ),
        (
            "node.advertised_address",
            |c| c.node.advertised_address = Some("host:80".into()),
            "\"host:80\"",
            "without a port",
        ),
        (
            "node.advertised_address",
            |c| c.tcp.address = "0.0.0.0:8090".parse().expect("address"),
            "(not set)",
            "`tcp.address`",
        ),
        (
            "metadata.prepare_queue_depth",
            |c| c.metadata.prepare_queue_depth = 128,
            "128",
            "1 ..= 127",
        ),
        (
            "metadata.journal_slots",
            |c| c.metadata.journal_slots = 255,
            "255",
            "256 ..= 1048576",
        ),
        (
            "metadata.clients_table_max",
            |c| c.metadata.clients_table_max = 1,
            "1",
            "2 ..= 65536",
        ),
        (
            "partition.evicted_ring_capacity",
            |c| c.partition.evicted_ring_capacity = 0,
            "0",
            "1 ..= 65536",
        ),
        (
            "partition.evicted_ring_bytes_max",
            |c| c.partition.evicted_ring_bytes_max = ByteSize::mib(257),
            "\"257 MiB\"",
            "at most 256 MiB",
        ),
        (
            "partition.transfer_artifact_bytes_max",
            |c| c.message_bus.max_message_size = ByteSize::mib(128),
            "\"1088 MiB\"",
            "1152 MiB",
        ),
        (
            "message_bus.max_batch",
            |c| c.message_bus.max_batch = 513,
            "513",
            "1 ..= 512",
        ),
        (
            "message_bus.max_message_size",
            |c| c.message_bus.max_message_size = ByteSize::new(256),
            "\"256 B\"",
            "more than 256 B",
        ),
        (
            "message_bus.handshake_grace",
            |c| c.message_bus.handshake_grace = ConfigDuration::ZERO,
            "\"0s\"",
            "non-zero",
        ),
    ];
    check_refused(cases, defaults, None);
}

#[test]
fn given_disabled_features_when_validating_should_skip_their_rules() {
    let mut config = defaults();
    config.http.enabled = false;
    config.http.jwt.algorithm = "RS256".into();
    config.heartbeat.enabled = false;
    config.heartbeat.interval = ConfigDuration::ZERO;
    config.system.memory_pool.enabled = false;
    config.system.memory_pool.size = ByteSize::new(1);
    config.tcp.address = "0.0.0.0:8090".parse().expect("address");
    config.node.advertised_address = Some("localhost".into());
    assert_eq!(config.validate(None).expect("valid"), Vec::<String>::new());
}

#[test]
fn given_cluster_mode_when_selecting_replica_should_require_exactly_one_match() {
    assert!(cluster().validate(Some(1)).is_ok());
    let (key, value, allowed) = refusal(&cluster(), None);
    assert_eq!(
        (key.as_str(), value.as_str()),
        ("--replica-id", "(not set)")
    );
    assert!(allowed.contains("0, 1"), "{allowed}");
    let (_, value, _) = refusal(&cluster(), Some(2));
    assert_eq!(value, "2");
    let (key, value, _) = refusal(&defaults(), Some(3));
    assert_eq!((key.as_str(), value.as_str()), ("--replica-id", "3"));
    assert!(defaults().validate(Some(0)).is_ok());
}

#[test]
fn given_cluster_roster_violations_when_validating_should_name_the_node_key() {
    let cases: &[(&str, Mutation, &str, &str)] = &[
        (
            "cluster.nodes[1].ports.http",
            |c| c.cluster.nodes[1].ports.http = None,
            "(not set)",
            "http.enabled = true",
        ),
        (
            "cluster.nodes[0].ports.tcp_replica",
            |c| c.cluster.nodes[0].ports.tcp_replica = None,
            "(not set)",
            "replica traffic",
        ),
        (
            "cluster.nodes[1].replica_id",
            |c| c.cluster.nodes[1].replica_id = 0,
            "0",
            "unique",
        ),
        (
            "cluster.nodes[1].replica_id",
            |c| c.cluster.nodes[1].replica_id = 5,
            "5",
            "below the number of nodes (2)",
        ),
        (
            "cluster.nodes[0].name",
            |c| c.cluster.nodes[0].name.clear(),
            "\"\"",
            "non-empty",
        ),
        (
            "cluster.nodes[0].ip",
            |c| c.cluster.nodes[0].ip = "bad ip".into(),
            "\"bad ip\"",
            "host name",
        ),
        (
            "cluster.nodes",
            |c| c.cluster.nodes.clear(),
            "0 nodes",
            "1 ..= 255",
        ),
        (
            "cluster.tls.enabled",
            |c| c.cluster.tls.enabled = true,
            "true",
            "cluster.auth.enabled",
        ),
        (
            "cluster.nodes[0].advertised_addresses[1].client_cidr",
            |c| {
                c.cluster.nodes[0].advertised_addresses =
                    vec![selector("10.0.0.0/8", "a"), selector("10.1.2.3/8", "b")]
            },
            "\"10.1.2.3/8\"",
            "not already listed",
        ),
        (
            "cluster.nodes[0].advertised_addresses[0].client_cidr",
            |c| c.cluster.nodes[0].advertised_addresses = vec![selector("10.0.0.0", "a")],
            "\"10.0.0.0\"",
            "IP network",
        ),
        (
            "cluster.nodes[1].ip",
            |c| c.cluster.nodes[1].ports.tcp = Some(8090),
            "\"127.0.0.1\"",
            "already publishes 127.0.0.1:8090",
        ),
    ];
    check_refused(cases, cluster, Some(0));
}

fn selector(cidr: &str, address: &str) -> AdvertisedAddress {
    AdvertisedAddress {
        client_cidr: cidr.into(),
        address: address.into(),
    }
}

#[test]
fn given_disjoint_advertised_selectors_when_validating_should_accept_shared_ports() {
    let mut config = cluster();
    config.cluster.nodes[1].ports = config.cluster.nodes[0].ports.clone();
    config.cluster.nodes[0].advertised_address = Some("node-a.example".into());
    config.cluster.nodes[1].advertised_address = Some("node-b.example".into());
    config.cluster.nodes[0].advertised_addresses = vec![selector("10.0.0.0/8", "shared.example")];
    config.cluster.nodes[1].advertised_addresses =
        vec![selector("192.168.0.0/16", "shared.example")];
    assert!(config.validate(Some(0)).is_ok());
    config.cluster.nodes[1].advertised_addresses = vec![selector("10.9.0.0/16", "shared.example")];
    let (key, _, _) = refusal(&config, Some(0));
    assert_eq!(key, "cluster.nodes[1].advertised_addresses[0].address");
}

#[test]
fn given_soft_problems_when_validating_should_return_warnings() {
    let mut config = defaults();
    config.http.jwt.encoding_secret = "one".into();
    config.http.jwt.decoding_secret = "two".into();
    config.partition.transfer_served_cache_bytes_max = ByteSize::gib(2);
    let warnings = config.validate(None).expect("only warnings");
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    let mut clustered = cluster();
    clustered.node.advertised_address = Some("localhost".into());
    let warnings = clustered.validate(Some(0)).expect("only a warning");
    assert!(
        warnings[0].contains("node.advertised_address is ignored"),
        "{warnings:?}"
    );
}

#[test]
fn given_secret_values_when_refused_should_never_echo_them() {
    let mut config = cluster();
    config.cluster.auth.enabled = true;
    config.cluster.auth.shared_secret = "hunter2".into();
    let message = config
        .validate(Some(0))
        .expect_err("short secret")
        .to_string();
    assert!(!message.contains("hunter2"), "{message}");
    assert!(message.contains("cluster.auth.shared_secret"), "{message}");
}

#[test]
fn given_a_roster_of_one_when_validating_should_need_no_replica_port_or_replica_id() {
    let mut config = cluster();
    config.cluster.nodes.truncate(1);
    config.cluster.nodes[0].ports.tcp_replica = None;
    assert!(config.validate(None).is_ok(), "{:?}", config.validate(None));
    assert!(config.validate(Some(0)).is_ok());
    let (key, value, _) = refusal(&config, Some(1));
    assert_eq!((key.as_str(), value.as_str()), ("--replica-id", "1"));
}
