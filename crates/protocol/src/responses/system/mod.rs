//! System replies (spec 10.1, 7.11): stats, cluster metadata, option
//! descriptors, clients, poll routing.
//!
//! ```text
//! stats      = 108 fixed bytes (see `Stats`) | hostname, os_name, os_version,
//!              kernel_version, server_version (u32-strings) | semver u32
//!              | metrics count u32 | count × (stream u32 | topic u32 | partition u32
//!              | hits u64 | misses u64 | hit_ratio f32) | threads u32
//!              | free_disk u64 | total_disk u64
//! cluster    = name u32-string | nodes_count u32 | nodes
//! node       = name u32-string | ip u32-string | tcp, quic, http, websocket ports u16
//!              | role u8 | status u8
//! options    = count u32 | count × (key Name | kind u8 | default_len u32 | default
//!              | description u32-string)
//! client     = client_id u32 | user_id u32 | transport u8 | address u32-string
//!              | consumer_groups_count u32
//! details    = client | count × (stream_id u32 | topic_id u32 | group_id u32)
//! routing    = client_id u128 | session u64 | metadata_watermark u64 | node
//! ```

use crate::primitives::put_name;
use crate::wire::WireWrite;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CacheMetric {
    pub stream_id: u32,
    pub topic_id: u32,
    pub partition_id: u32,
    pub hits: u64,
    pub misses: u64,
    pub hit_ratio: f32,
}

/// Server statistics (10). Field order is the wire order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats<'a> {
    pub process_id: u32,
    pub cpu_usage: f32,
    pub total_cpu_usage: f32,
    pub memory_usage: u64,
    pub total_memory: u64,
    pub available_memory: u64,
    pub run_time_us: u64,
    pub start_time_us: u64,
    pub read_bytes: u64,
    pub written_bytes: u64,
    pub messages_size_bytes: u64,
    pub streams_count: u32,
    pub topics_count: u32,
    pub partitions_count: u32,
    pub segments_count: u32,
    pub messages_count: u64,
    pub clients_count: u32,
    pub consumer_groups_count: u32,
    pub hostname: &'a str,
    pub os_name: &'a str,
    pub os_version: &'a str,
    pub kernel_version: &'a str,
    pub server_version: &'a str,
    /// `major·1 000 000 + minor·1 000 + patch`; 0 = unknown.
    pub server_semver: u32,
    pub cache_metrics: &'a [CacheMetric],
    pub threads_count: u32,
    pub free_disk_space: u64,
    pub total_disk_space: u64,
}

impl Stats<'_> {
    /// Bytes before the first string.
    pub const FIXED_SIZE: usize = 108;

    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.put_u32_le(self.process_id);
        out.put_f32_le(self.cpu_usage);
        out.put_f32_le(self.total_cpu_usage);
        for value in [
            self.memory_usage,
            self.total_memory,
            self.available_memory,
            self.run_time_us,
            self.start_time_us,
            self.read_bytes,
            self.written_bytes,
            self.messages_size_bytes,
        ] {
            out.put_u64_le(value);
        }
        for value in [
            self.streams_count,
            self.topics_count,
            self.partitions_count,
            self.segments_count,
        ] {
            out.put_u32_le(value);
        }
        out.put_u64_le(self.messages_count);
        out.put_u32_le(self.clients_count);
        out.put_u32_le(self.consumer_groups_count);
        assert_eq!(
            out.len() - start,
            Self::FIXED_SIZE,
            "the fixed part of stats is 108 bytes"
        );
        self.encode_tail(out);
    }

    fn encode_tail(&self, out: &mut Vec<u8>) {
        for text in [
            self.hostname,
            self.os_name,
            self.os_version,
            self.kernel_version,
            self.server_version,
        ] {
            out.put_u32_str(text);
        }
        out.put_u32_le(self.server_semver);
        out.put_len_u32(self.cache_metrics.len());
        for m in self.cache_metrics {
            out.put_u32_le(m.stream_id);
            out.put_u32_le(m.topic_id);
            out.put_u32_le(m.partition_id);
            out.put_u64_le(m.hits);
            out.put_u64_le(m.misses);
            out.put_f32_le(m.hit_ratio);
        }
        out.put_u32_le(self.threads_count);
        out.put_u64_le(self.free_disk_space);
        out.put_u64_le(self.total_disk_space);
    }
}

/// Cluster node role; a single node is the leader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum NodeRole {
    Leader = 0,
    Follower = 1,
}

/// Cluster node health; the SDK refuses values above 4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum NodeStatus {
    Healthy = 0,
    Starting = 1,
    Stopping = 2,
    Unreachable = 3,
    Maintenance = 4,
}

/// One node; a port of 0 means the node does not serve that transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClusterNode<'a> {
    pub name: &'a str,
    pub ip: &'a str,
    pub tcp_port: u16,
    pub quic_port: u16,
    pub http_port: u16,
    pub websocket_port: u16,
    pub role: NodeRole,
    pub status: NodeStatus,
}

impl ClusterNode<'_> {
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32_str(self.name);
        out.put_u32_str(self.ip);
        for port in [
            self.tcp_port,
            self.quic_port,
            self.http_port,
            self.websocket_port,
        ] {
            out.put_u16_le(port);
        }
        out.put_u8(self.role as u8);
        out.put_u8(self.status as u8);
    }
}

/// Cluster metadata (12). A single-node server lists exactly one healthy
/// leader (spec 7.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClusterMetadata<'a> {
    pub name: &'a str,
    pub nodes: &'a [ClusterNode<'a>],
}

impl ClusterMetadata<'_> {
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32_str(self.name);
        out.put_len_u32(self.nodes.len());
        for node in self.nodes {
            node.encode(out);
        }
    }
}

/// One entry of a DescribeOptions reply (13).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionDescriptor<'a> {
    pub key: &'a str,
    /// A value kind code (spec 8.7).
    pub kind: u8,
    /// Encoded in `kind`; empty when there is no default.
    pub default_value: &'a [u8],
    pub description: &'a str,
}

pub fn encode_describe_options(out: &mut Vec<u8>, entries: &[OptionDescriptor<'_>]) {
    out.put_len_u32(entries.len());
    for entry in entries {
        put_name(out, entry.key);
        out.put_u8(entry.kind);
        out.put_u32_bytes(entry.default_value);
        out.put_u32_str(entry.description);
    }
}

/// The transport a client is connected over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Transport {
    Tcp = 1,
    Quic = 2,
    Http = 3,
    WebSocket = 4,
}

/// A consumer group a client belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientGroup {
    pub stream_id: u32,
    pub topic_id: u32,
    pub group_id: u32,
}

/// One connected client. The record carries the group count; details
/// (20, 21) also list the groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientInfo<'a> {
    /// The server's connection number, not the u128 VSR client id.
    pub client_id: u32,
    /// `None` before login (sent as `0xFFFFFFFF`).
    pub user_id: Option<u32>,
    pub transport: Transport,
    pub address: &'a str,
    pub consumer_groups: &'a [ClientGroup],
}

impl ClientInfo<'_> {
    /// `user_id` of a client that has not logged in.
    pub const NO_USER: u32 = u32::MAX;

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32_le(self.client_id);
        out.put_u32_le(self.user_id.unwrap_or(Self::NO_USER));
        out.put_u8(self.transport as u8);
        out.put_u32_str(self.address);
        out.put_len_u32(self.consumer_groups.len());
    }
}

/// Client details (20, 21): the record and its groups.
pub fn encode_client_details(out: &mut Vec<u8>, client: &ClientInfo<'_>) {
    client.encode(out);
    for group in client.consumer_groups {
        out.put_u32_le(group.stream_id);
        out.put_u32_le(group.topic_id);
        out.put_u32_le(group.group_id);
    }
}

/// Client records back to back, without their groups (22).
pub fn encode_clients(out: &mut Vec<u8>, clients: &[ClientInfo<'_>]) {
    for client in clients {
        client.encode(out);
    }
}

/// The reply to 103 and 123 (cluster routing only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollRouting<'a> {
    pub client_id: u128,
    pub session: u64,
    pub metadata_watermark: u64,
    pub primary: ClusterNode<'a>,
}

impl PollRouting<'_> {
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.put_u128_le(self.client_id);
        out.put_u64_le(self.session);
        out.put_u64_le(self.metadata_watermark);
        self.primary.encode(out);
    }
}

#[cfg(test)]
mod tests;
