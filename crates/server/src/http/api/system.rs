//! System routes: stats, metrics, cluster metadata, clients, options,
//! snapshot (HTTP API spec §7).

use engine::metadata::permissions::Action;
use protocol::ErrorCode;
use protocol::requests::OptionsScope;
use protocol::responses::{ClientInfo, NodeRole, NodeStatus, Transport};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{HttpCall, Reply, number};
use crate::handlers::system::{
    EntityCounts, with_client_info, with_cluster_node, with_option_descriptors, with_stats,
};
use crate::http::error::ApiError;
use crate::http::json::byte_size;
use crate::metrics::Gauges;

fn require_read_servers(call: &HttpCall<'_>) -> Result<(), ApiError> {
    if call
        .node()
        .metadata()
        .is_allowed(call.user(), Action::ReadServers)
    {
        Ok(())
    } else {
        Err(ErrorCode::Unauthorized.into())
    }
}

pub fn stats(call: &HttpCall<'_>) -> Result<Reply, ApiError> {
    require_read_servers(call)?;
    let value = with_stats(call.node(), |s| {
        json!({
            "process_id": s.process_id,
            "cpu_usage": s.cpu_usage,
            "total_cpu_usage": s.total_cpu_usage,
            "memory_usage": byte_size(s.memory_usage),
            "total_memory": byte_size(s.total_memory),
            "available_memory": byte_size(s.available_memory),
            "run_time": s.run_time_us,
            "start_time": s.start_time_us,
            "read_bytes": byte_size(s.read_bytes),
            "written_bytes": byte_size(s.written_bytes),
            "messages_size_bytes": byte_size(s.messages_size_bytes),
            "streams_count": s.streams_count,
            "topics_count": s.topics_count,
            "partitions_count": s.partitions_count,
            "segments_count": s.segments_count,
            "messages_count": s.messages_count,
            "clients_count": s.clients_count,
            "consumer_groups_count": s.consumer_groups_count,
            "hostname": s.hostname,
            "os_name": s.os_name,
            "os_version": s.os_version,
            "kernel_version": s.kernel_version,
            "iggy_server_version": s.server_version,
            "iggy_server_semver": s.server_semver,
            "cache_metrics": {},
            "threads_count": s.threads_count,
            "free_disk_space": byte_size(s.free_disk_space),
            "total_disk_space": byte_size(s.total_disk_space),
        })
    });
    Ok(Reply::json(&value))
}

/// Prometheus text: the shared counters plus entity gauges read now.
pub fn metrics(call: &HttpCall<'_>) -> Result<Reply, ApiError> {
    let node = call.node();
    let metadata = node.metadata();
    let (totals, segments) = node.ctx.partition_stats.totals();
    let counts = EntityCounts::of(&metadata);
    let gauges = Gauges {
        streams: metadata.streams_count() as u64,
        topics: u64::from(counts.topics),
        partitions: u64::from(counts.partitions),
        users: metadata.users().count() as u64,
        clients: node.ctx.clients.count() as u64,
        segments,
        messages: totals.messages_count,
    };
    Ok(Reply::Metrics(node.ctx.metrics.render(&gauges)))
}

pub fn cluster_metadata(call: &HttpCall<'_>) -> Result<Reply, ApiError> {
    let value = with_cluster_node(call.node(), |n| {
        json!({
            "name": "single-node",
            "nodes": [{
                "name": n.name,
                "ip": n.ip,
                "endpoints": {
                    "tcp": n.tcp_port,
                    "quic": n.quic_port,
                    "http": n.http_port,
                    "websocket": n.websocket_port,
                },
                "role": match n.role { NodeRole::Leader => "leader", NodeRole::Follower => "follower" },
                "status": match n.status {
                    NodeStatus::Healthy => "healthy",
                    NodeStatus::Starting => "starting",
                    NodeStatus::Stopping => "stopping",
                    NodeStatus::Unreachable => "unreachable",
                    NodeStatus::Maintenance => "maintenance",
                },
            }],
        })
    });
    Ok(Reply::json(&value))
}

fn client_json(info: &ClientInfo<'_>, details: bool) -> Value {
    let transport = match info.transport {
        Transport::Tcp => "TCP",
        Transport::Quic => "QUIC",
        Transport::Http => "HTTP",
        Transport::WebSocket => "WebSocket",
    };
    let mut value = json!({
        "client_id": info.client_id,
        "user_id": info.user_id,
        "address": info.address,
        "transport": transport,
        "consumer_groups_count": info.consumer_groups.len(),
    });
    if details {
        value["consumer_groups"] = info
            .consumer_groups
            .iter()
            .map(|g| json!({"stream_id": g.stream_id, "topic_id": g.topic_id, "group_id": g.group_id}))
            .collect();
    }
    value
}

pub fn clients(call: &HttpCall<'_>) -> Result<Reply, ApiError> {
    require_read_servers(call)?;
    let node = call.node();
    let mut records = node.ctx.clients.all();
    records.sort_by_key(|r| r.connection_id as u32);
    let list: Vec<Value> = records
        .iter()
        .map(|r| with_client_info(node, r, |info| client_json(info, false)))
        .collect();
    Ok(Reply::json(&list))
}

pub fn client(call: &HttpCall<'_>, id: &str) -> Result<Reply, ApiError> {
    let id = number(id, "client_id")?;
    require_read_servers(call)?;
    let node = call.node();
    let record = node
        .ctx
        .clients
        .get_by_wire_id(id)
        .ok_or_else(ApiError::not_found)?;
    let value = with_client_info(node, &record, |info| client_json(info, true));
    Ok(Reply::json(&value))
}

pub fn options(_call: &HttpCall<'_>, scope: &str) -> Result<Reply, ApiError> {
    let scope = match scope {
        "topic" => OptionsScope::Topic,
        "stream" => OptionsScope::Stream,
        "user" => OptionsScope::User,
        _ => return Err(ErrorCode::InvalidCommand.into()),
    };
    let list: Vec<Value> = with_option_descriptors(scope, |descriptors| {
        descriptors
            .iter()
            .map(|d| {
                json!({
                    "key": d.key,
                    "kind": protocol::http_json::header_kind_name(d.kind),
                    "default_value": d.default_value,
                    "description": d.description,
                })
            })
            .collect()
    });
    Ok(Reply::json(&list))
}

#[derive(Deserialize)]
struct SnapshotRequest {
    compression: String,
    snapshot_types: Vec<String>,
}

pub fn snapshot(call: &HttpCall<'_>) -> Result<Reply, ApiError> {
    require_read_servers(call)?;
    let request: SnapshotRequest = call.json()?;
    let compression = match request.compression.as_str() {
        "Stored" => 1,
        "Deflated" => 2,
        "Bzip2" => 3,
        "Zstd" => 4,
        "Lzma" => 5,
        "Xz" => 6,
        _ => return Err(ErrorCode::InvalidCommand.into()),
    };
    let types = request
        .snapshot_types
        .iter()
        .map(|t| match t.as_str() {
            "FilesystemOverview" => Ok(1),
            "ProcessList" => Ok(2),
            "ResourceUsage" => Ok(3),
            "Test" => Ok(4),
            "ServerLogs" => Ok(5),
            "ServerConfig" => Ok(6),
            "All" => Ok(100),
            _ => Err(ApiError::iggy(ErrorCode::InvalidCommand)),
        })
        .collect::<Result<Vec<u8>, _>>()?;
    let bytes = crate::diagnostics::snapshot(&call.node().ctx, compression, &types)?;
    let name = format!(
        "iggy_snapshot_{}.zip",
        crate::http::json::utc_stamp(crate::node::process_stats::now_us() / 1_000_000)
    );
    Ok(Reply::Zip { name, bytes })
}
