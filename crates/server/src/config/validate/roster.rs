//! Rules of the `[[cluster.nodes]]` roster, checked in cluster mode: node
//! identity, a port for every enabled transport, advertised hosts and CIDR
//! selectors, and no two nodes published as the same endpoint to
//! overlapping sets of clients.

use std::collections::BTreeSet;

use super::{non_empty, quoted, require};
use crate::config::error::ConfigError;
use crate::config::schema::{ClusterNode, ServerConfig};
use crate::config::values::{Cidr, is_valid_host};

/// Replica ids are u8 and below the node count, so at most 255 nodes.
const CLUSTER_NODES_MAX: usize = 255;
const ADVERTISED_ADDRESSES_MAX: usize = 16;
const HOST_ALLOWED: &str = "an IP literal or RFC 1123 host name, without a port";

pub(super) fn validate(config: &ServerConfig) -> Result<(), ConfigError> {
    let nodes = &config.cluster.nodes;
    let allowed = format!("1 ..= {CLUSTER_NODES_MAX} nodes when cluster.enabled = true");
    let count = nodes.len();
    require(
        (1..=CLUSTER_NODES_MAX).contains(&count),
        "cluster.nodes",
        format!("{count} nodes"),
        &allowed,
    )?;
    let mut replica_ids = BTreeSet::new();
    for (index, node) in nodes.iter().enumerate() {
        let key = |field: &str| format!("cluster.nodes[{index}].{field}");
        non_empty(&key("name"), &node.name)?;
        require(
            is_valid_host(&node.ip),
            &key("ip"),
            quoted(&node.ip),
            HOST_ALLOWED,
        )?;
        let allowed = format!("unique and below the number of nodes ({count})");
        require(
            usize::from(node.replica_id) < count && replica_ids.insert(node.replica_id),
            &key("replica_id"),
            node.replica_id,
            &allowed,
        )?;
        validate_ports(config, node, index)?;
        validate_advertised(node, index)?;
    }
    validate_distinct_endpoints(nodes)
}

fn validate_ports(
    config: &ServerConfig,
    node: &ClusterNode,
    index: usize,
) -> Result<(), ConfigError> {
    let ports = &node.ports;
    let required = [
        // A roster of one has no peers to link with.
        (
            "tcp_replica",
            ports.tcp_replica,
            config.cluster.nodes.len() > 1,
        ),
        ("tcp", ports.tcp, config.tcp.enabled),
        ("quic", ports.quic, config.quic.enabled),
        ("http", ports.http, config.http.enabled),
        ("websocket", ports.websocket, config.websocket.enabled),
    ];
    for (transport, port, needed) in required {
        let allowed = if transport == "tcp_replica" {
            "a port; every node needs one for replica traffic".to_owned()
        } else {
            format!("a port; {transport}.enabled = true needs one on every node in cluster mode")
        };
        require(
            !needed || port.is_some(),
            &format!("cluster.nodes[{index}].ports.{transport}"),
            "(not set)",
            &allowed,
        )?;
    }
    Ok(())
}

fn validate_advertised(node: &ClusterNode, index: usize) -> Result<(), ConfigError> {
    if let Some(host) = &node.advertised_address {
        let key = format!("cluster.nodes[{index}].advertised_address");
        require(is_valid_host(host), &key, quoted(host), HOST_ALLOWED)?;
    }
    let selectors = &node.advertised_addresses;
    let allowed = format!("at most {ADVERTISED_ADDRESSES_MAX} entries");
    require(
        selectors.len() <= ADVERTISED_ADDRESSES_MAX,
        &format!("cluster.nodes[{index}].advertised_addresses"),
        format!("{} entries", selectors.len()),
        &allowed,
    )?;
    let mut networks: Vec<Cidr> = Vec::new();
    for (position, selector) in selectors.iter().enumerate() {
        let key = |field: &str| {
            format!("cluster.nodes[{index}].advertised_addresses[{position}].{field}")
        };
        let cidr = Cidr::parse(&selector.client_cidr).map_err(|error| {
            ConfigError::invalid(
                &key("client_cidr"),
                quoted(&selector.client_cidr),
                error.expected,
            )
        })?;
        let duplicate = networks
            .iter()
            .any(|seen| seen.prefix_len == cidr.prefix_len && seen.overlaps(cidr));
        require(
            !duplicate,
            &key("client_cidr"),
            quoted(&selector.client_cidr),
            "a network not already listed for this node",
        )?;
        networks.push(cidr);
        require(
            is_valid_host(&selector.address),
            &key("address"),
            quoted(&selector.address),
            HOST_ALLOWED,
        )?;
    }
    Ok(())
}

/// A host a node publishes to a set of clients (`None`: every client).
struct Published<'a> {
    key: String,
    clients: Option<Cidr>,
    host: &'a str,
}

fn published(node: &ClusterNode, index: usize) -> Vec<Published<'_>> {
    let default_key = match node.advertised_address {
        Some(_) => format!("cluster.nodes[{index}].advertised_address"),
        None => format!("cluster.nodes[{index}].ip"),
    };
    let mut hosts = vec![Published {
        key: default_key,
        clients: None,
        host: node.default_advertised_host(),
    }];
    hosts.extend(
        node.advertised_addresses
            .iter()
            .enumerate()
            .map(|(position, selector)| Published {
                key: format!("cluster.nodes[{index}].advertised_addresses[{position}].address"),
                clients: Cidr::parse(&selector.client_cidr).ok(),
                host: &selector.address,
            }),
    );
    hosts
}

fn shared_client_port(left: &ClusterNode, right: &ClusterNode) -> Option<u16> {
    let (l, r) = (&left.ports, &right.ports);
    [
        (l.tcp, r.tcp),
        (l.quic, r.quic),
        (l.http, r.http),
        (l.websocket, r.websocket),
    ]
    .into_iter()
    .find_map(|(left_port, right_port)| left_port.filter(|port| Some(*port) == right_port))
}

fn validate_distinct_endpoints(nodes: &[ClusterNode]) -> Result<(), ConfigError> {
    for (first_index, first) in nodes.iter().enumerate() {
        for (second_index, second) in nodes.iter().enumerate().skip(first_index + 1) {
            let Some(port) = shared_client_port(first, second) else {
                continue;
            };
            for mine in published(first, first_index) {
                for theirs in published(second, second_index) {
                    let overlapping = match (mine.clients, theirs.clients) {
                        (Some(left), Some(right)) => left.overlaps(right),
                        _ => true,
                    };
                    if overlapping && mine.host.eq_ignore_ascii_case(theirs.host) {
                        let allowed = format!(
                            "a host:port that no other node publishes to the same clients; `{}` already \
                             publishes {}:{port}",
                            mine.key, mine.host
                        );
                        return Err(ConfigError::invalid(
                            &theirs.key,
                            quoted(theirs.host),
                            allowed,
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}
