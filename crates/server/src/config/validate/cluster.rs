//! Rules of `[cluster]` (VSR timing, replica auth and TLS), the choice of
//! this node by `--replica-id`, and `[node]`. Roster rules are in
//! `roster.rs`.

use std::time::Duration;

use super::{in_range, non_zero, quoted, require, roster, secret_shown};
use crate::config::error::ConfigError;
use crate::config::schema::{ClusterConfig, ServerConfig};
use crate::config::values::{ConfigDuration, is_valid_host};

const HEARTBEAT_TIMEOUT_MIN: ConfigDuration = ConfigDuration::from_secs(2);
/// The heartbeat timeout must cover this many commit broadcasts, and a
/// view change this many view-change retransmissions.
const TIMEOUT_TO_INTERVAL_RATIO: u32 = 4;
const VIEW_PROBE_ATTEMPTS_MIN: u32 = 1;
const VIEW_PROBE_ATTEMPTS_MAX: u32 = 100;
const REPAIR_CHUNK_MIN: u32 = 1;
const REPAIR_CHUNK_MAX: u32 = 1_024;
const SUPERBLOCK_WEDGED_TIMEOUT_MIN: ConfigDuration = ConfigDuration::from_secs(30);
/// Minimum length of a replica pre-shared key.
const SHARED_SECRET_LEN_MIN: usize = 32;

pub(super) fn validate(
    config: &ServerConfig,
    replica_id: Option<u8>,
    warnings: &mut Vec<String>,
) -> Result<(), ConfigError> {
    validate_timing(&config.cluster, config.message_bus.peer_queue_capacity)?;
    validate_auth(&config.cluster)?;
    if config.cluster.enabled {
        validate_tls(&config.cluster)?;
        roster::validate(config)?;
    }
    validate_replica_selection(&config.cluster, replica_id)?;
    validate_node_section(config, warnings)
}

fn times(interval: ConfigDuration, ratio: u32) -> ConfigDuration {
    ConfigDuration::new(interval.get().checked_mul(ratio).unwrap_or(Duration::MAX))
}

fn validate_timing(cluster: &ClusterConfig, peer_queue_capacity: u32) -> Result<(), ConfigError> {
    for (key, interval) in [
        (
            "cluster.commit_broadcast_interval",
            cluster.commit_broadcast_interval,
        ),
        (
            "cluster.prepare_retransmit_interval",
            cluster.prepare_retransmit_interval,
        ),
        (
            "cluster.view_change_retransmit_interval",
            cluster.view_change_retransmit_interval,
        ),
        (
            "cluster.request_start_view_retransmit_interval",
            cluster.request_start_view_retransmit_interval,
        ),
        (
            "cluster.repair_retry_interval",
            cluster.repair_retry_interval,
        ),
    ] {
        non_zero(key, interval)?;
    }
    let heartbeat_floor = times(cluster.commit_broadcast_interval, TIMEOUT_TO_INTERVAL_RATIO)
        .max(HEARTBEAT_TIMEOUT_MIN);
    let allowed = format!(
        "at least {HEARTBEAT_TIMEOUT_MIN} and at least {TIMEOUT_TO_INTERVAL_RATIO} x cluster.commit_broadcast_interval ({heartbeat_floor} in total)"
    );
    let heartbeat = cluster.heartbeat_timeout;
    require(
        heartbeat >= heartbeat_floor,
        "cluster.heartbeat_timeout",
        quoted(heartbeat),
        &allowed,
    )?;
    let status_floor = times(
        cluster.view_change_retransmit_interval,
        TIMEOUT_TO_INTERVAL_RATIO,
    );
    let allowed = format!(
        "at least {TIMEOUT_TO_INTERVAL_RATIO} x cluster.view_change_retransmit_interval ({status_floor})"
    );
    let status = cluster.view_change_status_timeout;
    require(
        status >= status_floor,
        "cluster.view_change_status_timeout",
        quoted(status),
        &allowed,
    )?;
    in_range(
        "cluster.view_probe_attempts_max",
        cluster.view_probe_attempts_max,
        VIEW_PROBE_ATTEMPTS_MIN,
        VIEW_PROBE_ATTEMPTS_MAX,
    )?;
    let chunk = cluster.repair_chunk_max;
    in_range(
        "cluster.repair_chunk_max",
        chunk,
        REPAIR_CHUNK_MIN,
        REPAIR_CHUNK_MAX,
    )?;
    let allowed = format!("below message_bus.peer_queue_capacity ({peer_queue_capacity})");
    require(
        chunk < peer_queue_capacity,
        "cluster.repair_chunk_max",
        chunk,
        &allowed,
    )?;
    let wedged = cluster.superblock_wedged_fatal_timeout;
    require(
        wedged.is_zero() || wedged >= SUPERBLOCK_WEDGED_TIMEOUT_MIN,
        "cluster.superblock_wedged_fatal_timeout",
        quoted(wedged),
        "\"0\" (disabled) or at least 30s",
    )
}

fn validate_auth(cluster: &ClusterConfig) -> Result<(), ConfigError> {
    let auth = &cluster.auth;
    if !auth.enabled {
        return Ok(());
    }
    let allowed = "at least 32 bytes when cluster.auth.enabled = true";
    require(
        auth.shared_secret.len() >= SHARED_SECRET_LEN_MIN,
        "cluster.auth.shared_secret",
        secret_shown(&auth.shared_secret),
        allowed,
    )?;
    let previous = &auth.previous_shared_secret;
    require(
        previous.is_empty() || previous.len() >= SHARED_SECRET_LEN_MIN,
        "cluster.auth.previous_shared_secret",
        secret_shown(previous),
        "empty, or at least 32 bytes",
    )
}

fn validate_tls(cluster: &ClusterConfig) -> Result<(), ConfigError> {
    let tls = &cluster.tls;
    if !tls.enabled {
        return Ok(());
    }
    require(
        cluster.auth.enabled,
        "cluster.tls.enabled",
        true,
        "false unless cluster.auth.enabled = true",
    )?;
    if !tls.self_signed {
        let allowed =
            "a non-empty path when cluster.tls.enabled = true and cluster.tls.self_signed = false";
        for (key, path) in [
            ("cluster.tls.cert_file", &tls.cert_file),
            ("cluster.tls.key_file", &tls.key_file),
            ("cluster.tls.ca_file", &tls.ca_file),
        ] {
            require(!path.is_empty(), key, quoted(path), allowed)?;
        }
    }
    Ok(())
}

fn validate_replica_selection(
    cluster: &ClusterConfig,
    replica_id: Option<u8>,
) -> Result<(), ConfigError> {
    if !cluster.enabled {
        let id = replica_id.unwrap_or(0);
        return require(
            id == 0,
            "--replica-id",
            id,
            "0 or unset while cluster.enabled = false",
        );
    }
    let ids: Vec<String> = cluster
        .nodes
        .iter()
        .map(|node| node.replica_id.to_string())
        .collect();
    let allowed = format!(
        "the replica_id of exactly one cluster.nodes entry ({}); required when cluster.enabled = true with more than one node",
        ids.join(", ")
    );
    // A roster of one names its only node (whose id is 0) by default.
    let lone = (cluster.nodes.len() == 1).then_some(0);
    let Some(id) = replica_id.or(lone) else {
        return Err(ConfigError::invalid("--replica-id", "(not set)", allowed));
    };
    let matches = cluster
        .nodes
        .iter()
        .filter(|node| node.replica_id == id)
        .count();
    require(matches == 1, "--replica-id", id, &allowed)
}

/// `[node]`: checked for shape; with clustering off a wildcard bind on the
/// first enabled listener needs it, because a wildcard is not reachable.
fn validate_node_section(
    config: &ServerConfig,
    warnings: &mut Vec<String>,
) -> Result<(), ConfigError> {
    let advertised = config.node.advertised_address.as_deref();
    if let Some(host) = advertised {
        require(
            is_valid_host(host),
            "node.advertised_address",
            quoted(host),
            "an IP literal or RFC 1123 host name, without a port",
        )?;
    }
    if config.cluster.enabled {
        if advertised.is_some() {
            warnings.push(
                "node.advertised_address is ignored while cluster.enabled = true; each node's \
                 cluster.nodes entry is published instead"
                    .to_owned(),
            );
        }
        return Ok(());
    }
    let listeners = [
        ("tcp.address", config.tcp.enabled, config.tcp.address),
        (
            "websocket.address",
            config.websocket.enabled,
            config.websocket.address,
        ),
        ("quic.address", config.quic.enabled, config.quic.address),
        ("http.address", config.http.enabled, config.http.address),
    ];
    let first_enabled = listeners.iter().find(|(_, enabled, _)| *enabled);
    if let Some((key, _, address)) = first_enabled
        && address.ip().is_unspecified()
        && advertised.is_none()
    {
        let allowed = format!(
            "a host clients can reach (IGGY_NODE_ADVERTISED_ADDRESS), required because `{key}` = \"{address}\" \
             binds a wildcard address"
        );
        return Err(ConfigError::invalid(
            "node.advertised_address",
            "(not set)",
            allowed,
        ));
    }
    Ok(())
}
