//! System commands: stats, cluster metadata, clients, the option catalogue
//! (binary protocol §10.1).

use engine::metadata::permissions::Action;
use engine::metadata::topic::option_value::OptionEntry;
use engine::metadata::topic::options::{TOPIC_OPTION_KEYS, TopicOptions};
use protocol::ErrorCode;
use protocol::requests::OptionsScope;
use protocol::responses::{
    self, ClientGroup, ClientInfo, ClusterMetadata, ClusterNode, NodeRole, NodeStatus,
    OptionDescriptor, Stats,
};

use super::Call;
use super::Reply;
use crate::metrics::Transport;
use crate::node::Node;
use crate::node::clients::ClientRecord;
use crate::node::cluster_state::ClusterShared;
use crate::node::process_stats::{self, now_us};

/// Single-node answers name the cluster and the node like the reference.
const CLUSTER_NAME: &str = "single-node";
const NODE_NAME: &str = "iggy-node";

fn semver() -> u32 {
    let mut parts = env!("CARGO_PKG_VERSION")
        .split('.')
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor, patch) = (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    );
    major * 1_000_000 + minor * 1_000 + patch
}

pub fn stats(call: &Call<'_>) -> Reply {
    if !call
        .node()
        .metadata()
        .is_allowed(call.user(), Action::ReadServers)
    {
        return call.deny(ErrorCode::Unauthorized);
    }
    let mut out = Vec::new();
    with_stats(call.node(), |stats| stats.encode(&mut out));
    call.ok(&out)
}

/// Topics, partitions and consumer groups across every stream.
#[derive(Debug, Default, Clone, Copy)]
pub struct EntityCounts {
    pub topics: u32,
    pub partitions: u32,
    pub groups: u32,
}

impl EntityCounts {
    pub fn of(metadata: &engine::metadata::MetadataState) -> Self {
        let mut counts = Self::default();
        for topic in metadata.streams().flat_map(|s| s.topics()) {
            counts.topics += 1;
            counts.partitions += topic.partitions_count();
            counts.groups += topic.groups_count() as u32;
        }
        counts
    }
}

/// Gathers the server's figures and hands them to `f` (the record borrows
/// the host strings, so it cannot be returned).
pub fn with_stats<R>(node: &Node, f: impl FnOnce(&Stats<'_>) -> R) -> R {
    let metadata = node.metadata();
    let ctx = &node.ctx;
    let run_time_us = now_us().saturating_sub(ctx.started_at_us);
    let host = process_stats::collect(&ctx.data_path, run_time_us);
    let (totals, segments) = ctx.partition_stats.totals();
    let counts = EntityCounts::of(&metadata);
    let version = env!("CARGO_PKG_VERSION");
    f(&Stats {
        process_id: host.process_id,
        cpu_usage: host.cpu_usage_percent,
        total_cpu_usage: host.total_cpu_usage_percent,
        memory_usage: host.memory_usage_bytes,
        total_memory: host.total_memory_bytes,
        available_memory: host.available_memory_bytes,
        run_time_us,
        start_time_us: ctx.started_at_us,
        read_bytes: host.read_bytes,
        written_bytes: host.written_bytes,
        messages_size_bytes: totals.size_bytes,
        streams_count: metadata.streams_count() as u32,
        topics_count: counts.topics,
        partitions_count: counts.partitions,
        segments_count: segments as u32,
        messages_count: totals.messages_count,
        clients_count: ctx.clients.count() as u32,
        consumer_groups_count: counts.groups,
        hostname: &host.hostname,
        os_name: &host.os_name,
        os_version: &host.os_version,
        kernel_version: &host.kernel_version,
        server_version: version,
        server_semver: semver(),
        cache_metrics: &[],
        threads_count: host.threads_count,
        free_disk_space: host.free_disk_bytes,
        total_disk_space: host.total_disk_bytes,
    })
}

/// A single node: exactly one healthy leader, so the SDK stays on this
/// connection. A cluster: every roster node, the metadata leader as the
/// only `Leader` (none during a view change), and each peer `Healthy`
/// while its replica link is up, else `Unreachable` (binary protocol §7.9).
pub fn cluster_metadata(call: &Call<'_>) -> Reply {
    let mut out = Vec::new();
    let shared = &call.node().ctx.cluster;
    if shared.implicit {
        with_cluster_node(call.node(), |node| {
            ClusterMetadata {
                name: CLUSTER_NAME,
                nodes: &[*node],
            }
            .encode(&mut out)
        });
    } else {
        let ids: Vec<u8> = (0..shared.replicas).collect();
        let mut nodes = Vec::with_capacity(ids.len());
        collect_roster(shared, &ids, &mut nodes, &mut out);
    }
    call.ok(&out)
}

/// Encodes the cluster metadata of the roster nodes `ids` (borrowing each
/// entry while the whole list is encoded).
fn collect_roster<'a>(
    shared: &'a ClusterShared,
    ids: &[u8],
    nodes: &mut Vec<ClusterNode<'a>>,
    out: &mut Vec<u8>,
) {
    for &id in ids {
        nodes.push(roster_node(shared, id, |node| *node));
    }
    ClusterMetadata {
        name: &shared.name,
        nodes,
    }
    .encode(out);
}

/// Roster node `id` as cluster metadata lists it, with its role and status
/// as this node sees them.
pub fn roster_node<'a, R>(
    shared: &'a ClusterShared,
    id: u8,
    f: impl FnOnce(&ClusterNode<'a>) -> R,
) -> R {
    let entry = &shared.roster[usize::from(id)];
    f(&ClusterNode {
        name: &entry.name,
        ip: &entry.host,
        tcp_port: entry.tcp,
        quic_port: entry.quic,
        http_port: entry.http,
        websocket_port: entry.websocket,
        role: if shared.metadata_leader() == Some(id) {
            NodeRole::Leader
        } else {
            NodeRole::Follower
        },
        status: if shared.is_connected(id) {
            NodeStatus::Healthy
        } else {
            NodeStatus::Unreachable
        },
    })
}

/// This node as cluster metadata lists it.
pub fn with_cluster_node<R>(node: &Node, f: impl FnOnce(&ClusterNode<'_>) -> R) -> R {
    let advertised = &node.ctx.advertised;
    f(&ClusterNode {
        name: NODE_NAME,
        ip: &advertised.host,
        tcp_port: advertised.tcp_port,
        quic_port: advertised.quic_port,
        http_port: advertised.http_port,
        websocket_port: advertised.websocket_port,
        role: NodeRole::Leader,
        status: NodeStatus::Healthy,
    })
}

fn wire_transport(transport: Transport) -> responses::Transport {
    match transport {
        Transport::Tcp => responses::Transport::Tcp,
        Transport::Quic => responses::Transport::Quic,
        Transport::Http => responses::Transport::Http,
        Transport::WebSocket => responses::Transport::WebSocket,
    }
}

fn encode_client(call: &Call<'_>, record: &ClientRecord, details: bool, out: &mut Vec<u8>) {
    with_client_info(call.node(), record, |info| {
        if details {
            responses::encode_client_details(out, info)
        } else {
            info.encode(out)
        }
    })
}

/// A connected client as the client commands describe it.
pub fn with_client_info<R>(
    node: &Node,
    record: &ClientRecord,
    f: impl FnOnce(&ClientInfo<'_>) -> R,
) -> R {
    let metadata = node.metadata();
    let groups: Vec<ClientGroup> = record
        .bound
        .map(|b| metadata.client_memberships(engine::metadata::ClientId(b.client)))
        .unwrap_or_default()
        .into_iter()
        .map(|m| ClientGroup {
            stream_id: m.stream.0,
            topic_id: m.topic.0,
            group_id: m.group.0,
        })
        .collect();
    let address = record.peer.to_string();
    f(&ClientInfo {
        client_id: record.connection_id as u32,
        user_id: record.bound.map(|b| b.user_id),
        transport: wire_transport(record.transport),
        address: &address,
        consumer_groups: &groups,
    })
}

pub fn me(call: &Call<'_>) -> Reply {
    let Some(record) = call.node().ctx.clients.get(call.session.connection_id) else {
        return call.deny(ErrorCode::ClientNotFound);
    };
    let mut out = Vec::new();
    encode_client(call, &record, true, &mut out);
    call.ok(&out)
}

pub fn client(call: &Call<'_>, client_id: u32) -> Reply {
    if !call
        .node()
        .metadata()
        .is_allowed(call.user(), Action::ReadServers)
    {
        return call.deny(ErrorCode::Unauthorized);
    }
    let mut out = Vec::new();
    if let Some(record) = call.node().ctx.clients.get_by_wire_id(client_id) {
        encode_client(call, &record, true, &mut out);
    }
    call.ok(&out)
}

pub fn clients(call: &Call<'_>) -> Reply {
    if !call
        .node()
        .metadata()
        .is_allowed(call.user(), Action::ReadServers)
    {
        return call.deny(ErrorCode::Unauthorized);
    }
    let mut out = Vec::new();
    for record in call.node().ctx.clients.all() {
        encode_client(call, &record, false, &mut out);
    }
    call.ok(&out)
}

/// The diagnostics archive; too large for one frame → 9000.
pub fn snapshot(call: &Call<'_>, compression: u8, types: &[u8]) -> Reply {
    if !call
        .node()
        .metadata()
        .is_allowed(call.user(), Action::ReadServers)
    {
        return call.deny(ErrorCode::Unauthorized);
    }
    match crate::diagnostics::snapshot(&call.node().ctx, compression, types) {
        Ok(archive)
            if archive.len() + protocol::header::HEADER_SIZE <= call.node().ctx.frame_max_bytes =>
        {
            call.ok(&archive)
        }
        Ok(_) => call.deny(ErrorCode::SnapshotFileCompletionFailed),
        Err(code) => call.deny(code),
    }
}

pub fn describe_options(call: &Call<'_>, scope: OptionsScope) -> Reply {
    let mut out = Vec::new();
    with_option_descriptors(scope, |descriptors| {
        responses::encode_describe_options(&mut out, descriptors)
    });
    call.ok(&out)
}

/// The option catalogue of a resource kind.
pub fn with_option_descriptors<R>(
    scope: OptionsScope,
    f: impl FnOnce(&[OptionDescriptor<'_>]) -> R,
) -> R {
    let defaults = TopicOptions::default();
    let entries: Vec<(OptionEntry, Vec<u8>)> = match scope {
        OptionsScope::Topic => TOPIC_OPTION_KEYS
            .iter()
            .filter_map(|key| defaults.value_of(key).map(|v| OptionEntry::new(key, v)))
            .map(|e| {
                let bytes = e.value.to_bytes();
                (e, bytes)
            })
            .collect(),
        OptionsScope::Stream | OptionsScope::User => Vec::new(),
    };
    let descriptors: Vec<OptionDescriptor<'_>> = entries
        .iter()
        .map(|(e, bytes)| OptionDescriptor {
            key: &e.key,
            kind: e.value.kind_code(),
            default_value: bytes,
            description: describe(&e.key),
        })
        .collect();
    f(&descriptors)
}

fn describe(key: &str) -> &'static str {
    match key {
        "compression_algorithm" => "compression recorded for the topic: none or gzip",
        "message_expiry" => "age after which sealed segments are deleted (µs; u64::MAX never)",
        "max_topic_size" => "cap on retained bytes (u64::MAX unlimited)",
        "segment_size" => "soft segment size in bytes (multiple of 512, 1 MiB..=1 GiB)",
        "durability" => "produce completion policy: replicated or persisted (fsync before ack)",
        "consumer_offset_durability" => "offset write completion policy: replicated or persisted",
        "messages_required_to_save" => "flush threshold in messages",
        "size_of_messages_required_to_save" => "flush threshold in bytes",
        "preallocate_segments" => "reserve segment space up front",
        _ => "",
    }
}
