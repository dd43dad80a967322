//! What shards send each other through their bounded inboxes (and what the
//! main thread sends them at shutdown). The messages live here, below the
//! layers that build them, because the node itself sends metadata and
//! partition calls; the shard layer only receives and dispatches them.

use std::net::SocketAddr;
use std::sync::Arc;

use crossfire::oneshot::TxOneshot;
use engine::metadata::MetadataOp;

use super::CommitResult;
use super::partitions::PartitionCall;

/// Messages between shards (and from the main thread to shards).
pub enum ShardMessage {
    /// Stop accepting, finish or fail in-flight work, flush, exit.
    Shutdown,
    /// A TCP connection accepted on shard 0, duplicated to this shard before
    /// any byte was read; with `tls`, its handshake runs here.
    AdoptTcp {
        stream: std::net::TcpStream,
        peer: SocketAddr,
        tls: Option<std::sync::Arc<rustls::ServerConfig>>,
    },
    /// A TCP connection another shard moved here between two requests, with
    /// its session (`session::moving`) and, for TLS, its TLS session.
    ResumeConnection {
        stream: std::net::TcpStream,
        moved: super::moved::MovedSession,
        tls: Option<Box<rustls::ServerConnection>>,
        /// A WebSocket connection's limits (its framing is ours and holds
        /// nothing between messages).
        websocket: Option<WsLimits>,
    },
    /// A WebSocket connection accepted on shard 0, before its upgrade (and,
    /// with `tls`, before its TLS handshake).
    AdoptWebSocket {
        stream: std::net::TcpStream,
        peer: SocketAddr,
        limits: WsLimits,
        tls: Option<std::sync::Arc<rustls::ServerConfig>>,
    },
    /// To shard 0: commit this metadata operation and answer on `reply`.
    MetadataSubmit {
        op: MetadataOp,
        reply: TxOneshot<CommitResult>,
    },
    /// From shard 0: apply this committed operation (in commit order), with
    /// its effects on this shard's partitions, then signal `applied`.
    MetadataApplied {
        op: Arc<MetadataOp>,
        commit: u64,
        applied: TxOneshot<()>,
    },
    /// From shard 0 of a cluster node: replace the metadata replica with
    /// this checkpoint's state, as of `commit`, then signal `replaced`.
    MetadataReplaced {
        state: Arc<engine::metadata::MetadataState>,
        commit: u64,
        replaced: TxOneshot<()>,
    },
    /// To a partition's owner: run this partition operation.
    Partition(PartitionCall),
    /// From shard 0 of a cluster node, to a partition's owner: a frame of
    /// that partition's group from a peer.
    ReplicaFrame(consensus::wire::Frame),
}

/// The WebSocket limits from `[websocket]`. Defined here rather than in
/// `transport::websocket` because a hand-off message carries them to the
/// shard that adopts the connection.
#[derive(Debug, Clone, Copy)]
pub struct WsLimits {
    pub max_message_size: usize,
    pub max_frame_size: usize,
    pub accept_unmasked_frames: bool,
}
