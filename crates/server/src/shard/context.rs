//! What every shard can see: fixed after start-up, plus a few atomics and
//! the registries that are touched off the data path.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use crossfire::MAsyncTx;
use crossfire::mpsc::Array;
use crossfire::oneshot::TxOneshot;
use engine::metadata::MetadataOp;
use tracing::warn;

use super::ShardOptions;
use crate::node::CommitResult;
use crate::node::clients::ClientRegistry;
use crate::node::partition_stats::PartitionStatsRegistry;
use crate::node::partitions::PartitionCall;
use crate::transport::BoundAddresses;

/// Messages between shards (and from the main thread to shards).
pub enum ShardMessage {
    /// Stop accepting, finish or fail in-flight work, flush, exit.
    Shutdown,
    /// A plaintext TCP connection accepted on shard 0, duplicated to this shard
    /// before any byte was read.
    AdoptTcp {
        stream: std::net::TcpStream,
        peer: SocketAddr,
    },
    /// A plaintext WebSocket connection accepted on shard 0, before its
    /// upgrade.
    AdoptWebSocket {
        stream: std::net::TcpStream,
        peer: SocketAddr,
        limits: crate::transport::websocket::WsLimits,
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
    /// To a partition's owner: run this partition operation.
    Partition(PartitionCall),
}

/// What the cluster-metadata reply advertises for this node.
#[derive(Debug, Clone, Default)]
pub struct Advertised {
    pub host: String,
    pub tcp_port: u16,
    pub quic_port: u16,
    pub http_port: u16,
    pub websocket_port: u16,
}

/// Limits from configuration that handlers need.
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_tokens_per_user: u32,
    pub clients_table_max: usize,
    pub validate_checksum_on_read: bool,
    /// `system.partition.direct_io`.
    pub direct_io: server::config::DirectIo,
    /// Period of the segment cleaner; `None` when it is disabled.
    pub cleaner_interval: Option<Duration>,
    /// Period of the expired-token cleaner; `None` when it is disabled.
    pub token_cleaner_interval: Option<Duration>,
    /// Longest a partition stays pending revocation in a group rebalance.
    pub rebalancing_timeout: Duration,
    /// Open client connections accepted at once (`tcp.max_connections`).
    pub max_connections: usize,
    /// Close connections silent this long (`tcp.idle_timeout`); `None` = off.
    pub idle_timeout: Option<Duration>,
    /// Expected client heartbeat period; `None` when the verifier is off.
    pub heartbeat_interval: Option<Duration>,
    /// Failed logins a connection may make before it is closed.
    pub max_failed_logins: u32,
    /// Time a started frame has to arrive whole (`tcp.frame_timeout`).
    pub frame_timeout: Duration,
    /// Time a TLS, WebSocket or QUIC handshake may take
    /// (`message_bus.handshake_grace`).
    pub handshake_grace: Duration,
}

type Inbox = MAsyncTx<Array<ShardMessage>>;

pub struct ServerContext {
    pub shard_count: usize,
    /// Largest frame (header + body) a connection may send.
    pub frame_max_bytes: usize,
    /// Time allowed for in-flight work at shutdown.
    pub drain_timeout: Duration,
    pub data_path: PathBuf,
    pub limits: Limits,
    pub started_at_us: u64,
    pub advertised: Advertised,
    pub clients: ClientRegistry,
    pub partition_stats: PartitionStatsRegistry,
    /// Counters of every shard and transport (`/metrics`).
    pub metrics: crate::metrics::Metrics,
    inboxes: Vec<Inbox>,
    next_client_id: AtomicU64,
    next_handoff: AtomicUsize,
    stopping: AtomicBool,
    /// Open client connections across all shards.
    open_connections: AtomicUsize,
}

impl ServerContext {
    pub(super) fn new(options: &ShardOptions, inboxes: Vec<Inbox>, bound: &BoundAddresses) -> Self {
        let port = |addr: Option<SocketAddr>| addr.map_or(0, |a| a.port());
        let host = [bound.tcp, bound.websocket, bound.quic, bound.http]
            .into_iter()
            .flatten()
            .next()
            .map_or_else(|| "127.0.0.1".to_owned(), |a| a.ip().to_string());
        Self {
            shard_count: options.specs.len(),
            frame_max_bytes: options.frame_max_bytes,
            drain_timeout: options.drain_timeout,
            data_path: options.data_path.clone(),
            limits: options.limits.clone(),
            started_at_us: crate::node::process_stats::now_us(),
            advertised: Advertised {
                host,
                tcp_port: port(bound.tcp),
                quic_port: port(bound.quic),
                http_port: port(bound.http),
                websocket_port: port(bound.websocket),
            },
            clients: ClientRegistry::default(),
            partition_stats: PartitionStatsRegistry::default(),
            metrics: crate::metrics::Metrics::new(command_labels()),
            inboxes,
            next_client_id: AtomicU64::new(1),
            next_handoff: AtomicUsize::new(0),
            stopping: AtomicBool::new(false),
            open_connections: AtomicUsize::new(0),
        }
    }

    /// A new server-wide connection number (never 0).
    pub fn next_client_id(&self) -> u64 {
        self.next_client_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Whether another connection may be accepted (a soft limit: hand-offs
    /// in flight are not counted yet).
    pub fn has_connection_room(&self) -> bool {
        self.open_connections.load(Ordering::Relaxed) < self.limits.max_connections
    }

    /// Counts an open connection until the guard drops.
    pub fn open_connection(self: &Arc<Self>) -> OpenConnection {
        self.open_connections.fetch_add(1, Ordering::Relaxed);
        OpenConnection(self.clone())
    }

    /// The shard the next accepted connection goes to (round-robin).
    pub fn pick_shard(&self) -> usize {
        self.next_handoff.fetch_add(1, Ordering::Relaxed) % self.shard_count
    }

    pub fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    pub(super) fn begin_stopping(&self) {
        self.stopping.store(true, Ordering::Release);
    }

    /// Sends to a shard, waiting while its inbox is full.
    pub async fn send(&self, shard: usize, message: ShardMessage) {
        if self.inboxes[shard].send(message).await.is_err() {
            warn!(shard, "shard inbox closed; message dropped during shutdown");
        }
    }

    /// Sends without waiting; a full inbox hands the message back so the
    /// caller can retry it (hence the large error variant).
    #[allow(clippy::result_large_err)]
    pub fn try_send(&self, shard: usize, message: ShardMessage) -> Result<(), ShardMessage> {
        self.inboxes[shard]
            .try_send(message)
            .map_err(|e| e.into_inner())
    }
}

/// One open client connection, counted server-wide until dropped.
pub struct OpenConnection(Arc<ServerContext>);

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.open_connections.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Every command's registry name, in `CommandCode::ALL` order: the labels
/// of the per-command request counters.
fn command_labels() -> &'static [&'static str] {
    static LABELS: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    LABELS.get_or_init(|| {
        protocol::CommandCode::ALL
            .iter()
            .map(|code| code.name())
            .collect()
    })
}
