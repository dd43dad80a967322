//! Cluster mode at boot (`cluster.enabled = true`, `--replica-id N`): what
//! shard 0 needs to run this node's replica of the metadata group, and
//! what every shard needs for the partition groups it owns (the roster,
//! the timing, this boot's nonce).

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use consensus::View;
use consensus::vsr::Limits;
use engine::replicated::Placement;
use server::cluster::{LinkConfig, METADATA_GROUP, cluster_id, node_address};
use server::config::{ClusterNode, NodePorts, ServerConfig};
use storage::superblock::Identity;

use crate::node::cluster_commit::{ClusterStart, RootUser, timing};
use crate::node::cluster_state::RosterEntry;
use crate::transport::BoundAddresses;

use super::root_credentials::RootCredentials;

/// Where the metadata replica keeps its journal and superblock.
pub const METADATA_REPLICA_DIR: &str = "cluster/metadata";

/// The replica this process runs: `--replica-id`, or the only node of a
/// roster of one.
pub fn effective_replica_id(config: &ServerConfig, replica_id: Option<u8>) -> Option<u8> {
    let lone = (config.cluster.enabled && config.cluster.nodes.len() == 1)
        .then(|| config.cluster.nodes[0].replica_id);
    replica_id.or(lone)
}

/// The replica's start (a single node's is its implicit roster of one,
/// `implicit_roster`); an error naming what is missing (the replica id, a
/// roster entry).
pub fn prepare(
    config: &ServerConfig,
    replica_id: Option<u8>,
    data: &Path,
    root: &RootCredentials,
) -> anyhow::Result<ClusterStart> {
    assert!(config.cluster.enabled, "a cluster's configuration");
    let replica =
        effective_replica_id(config, replica_id).context("cluster mode needs --replica-id")?;
    // A roster of one has no peers: no replica listener, no links.
    let links = if config.cluster.nodes.len() > 1 {
        let links = LinkConfig::from_server_config(config, replica)
            .map_err(|e| anyhow::anyhow!("cluster: {e}"))?;
        let listen = node_address(config, replica).map_err(|e| anyhow::anyhow!("cluster: {e}"))?;
        Some((links, listen))
    } else {
        None
    };
    let dir = data.join(METADATA_REPLICA_DIR);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let cluster = &config.cluster;
    let replicas = u8::try_from(cluster.nodes.len()).context("too many cluster nodes")?;
    let placement = Placement {
        identity: Identity {
            cluster: cluster_id(&cluster.name),
            replica,
            group: METADATA_GROUP,
            incarnation: 0,
        },
        replicas,
        created_view: View(0),
        timing: timing(
            Duration::from(cluster.heartbeat_timeout),
            Duration::from(cluster.commit_broadcast_interval),
            Duration::from(cluster.view_change_status_timeout),
            Duration::from(cluster.prepare_retransmit_interval),
        ),
        // A checkpoint once no more than max(64, prepare depth) journal
        // slots remain (replication spec §6.6).
        limits: Limits {
            checkpoint_interval: u64::from(config.metadata.journal_slots)
                - u64::from(config.metadata.prepare_queue_depth.max(64)),
            ..Limits::default()
        },
        fsync: true,
    };
    let roster_http = (0..replicas)
        .map(|id| {
            cluster.node(id).map_or((String::new(), 0), |node| {
                (node.ip.clone(), node.ports.http.unwrap_or(0))
            })
        })
        .collect();
    let roster = (0..replicas)
        .map(|id| {
            let node = cluster
                .node(id)
                .context("the roster names every replica id")?;
            Ok(RosterEntry {
                name: node.name.clone(),
                host: node.default_advertised_host().to_owned(),
                tcp: node.ports.tcp.unwrap_or(0),
                quic: node.ports.quic.unwrap_or(0),
                http: node.ports.http.unwrap_or(0),
                websocket: node.ports.websocket.unwrap_or(0),
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let password_hash = engine::metadata::password::hash_password(&root.password)
        .map_err(|e| anyhow::anyhow!("cannot hash the root password: {e}"))?;
    Ok(ClusterStart {
        links,
        dir,
        placement,
        nonce: rand::random::<u64>() | 1,
        root: RootUser {
            username: root.username.clone(),
            password_hash,
            generated_password: root.generated.then(|| root.password.clone()),
        },
        roster_http,
        roster,
        cluster_name: cluster.name.clone(),
        implicit: false,
    })
}

/// The configuration a server without `[cluster]` runs on: the single
/// node as a roster of one (a group of one for the metadata and for each
/// partition, on the cluster's code), its ports the listeners' bound ones.
pub fn implicit_roster(config: &ServerConfig) -> ServerConfig {
    assert!(!config.cluster.enabled, "only a server without a cluster");
    let mut config = config.clone();
    config.cluster.enabled = true;
    config.cluster.name = IMPLICIT_CLUSTER_NAME.to_owned();
    config.cluster.nodes = vec![ClusterNode {
        name: IMPLICIT_NODE_NAME.to_owned(),
        ip: "127.0.0.1".to_owned(),
        replica_id: 0,
        ports: NodePorts {
            tcp: Some(0),
            quic: Some(0),
            http: Some(0),
            websocket: Some(0),
            tcp_replica: None,
        },
        advertised_address: None,
        advertised_addresses: Vec::new(),
    }];
    config
}

/// The names a single node's roster of one goes by.
const IMPLICIT_CLUSTER_NAME: &str = "single-node";
const IMPLICIT_NODE_NAME: &str = "iggy-node";

/// This node's roster entry takes the bound port of each listener whose
/// configured port is 0 (the OS picked it), so that cluster metadata and
/// redirects name ports that answer.
pub fn fill_bound_ports(start: &mut ClusterStart, bound: &BoundAddresses) {
    let own = usize::from(start.placement.identity.replica);
    let port = |configured: u16, bound: Option<std::net::SocketAddr>| match (configured, bound) {
        (0, Some(address)) => address.port(),
        _ => configured,
    };
    if let Some(entry) = start.roster.get_mut(own) {
        entry.tcp = port(entry.tcp, bound.tcp);
        entry.quic = port(entry.quic, bound.quic);
        entry.http = port(entry.http, bound.http);
        entry.websocket = port(entry.websocket, bound.websocket);
    }
    if let Some((_, http)) = start.roster_http.get_mut(own) {
        *http = port(*http, bound.http);
    }
}
