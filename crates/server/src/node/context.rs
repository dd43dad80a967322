//! What every shard can see: fixed after start-up, plus a few atomics and
//! the registries that are touched off the data path. Built once by the
//! shard layer before any shard thread starts, then shared behind an `Arc`.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use crossfire::MAsyncTx;
use crossfire::mpsc::Array;
use engine::encryption::Keyring;
use tracing::warn;

use super::clients::ClientRegistry;
use super::cluster_state::ClusterShared;
use super::partition_stats::PartitionStatsRegistry;
use super::process_stats;
use super::shard_message::ShardMessage;
use crate::metrics::Metrics;

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
    /// `system.partition.cache_size`, in bytes, for the whole node.
    pub partition_cache_bytes: u64,
    /// `system.partition.cache_prefault`.
    pub partition_cache_prefault: bool,
    /// `system.partition.write_behind`, in bytes.
    pub write_behind_bytes: u64,
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

/// The sending half of one shard's inbox.
pub type Inbox = MAsyncTx<Array<ShardMessage>>;

/// What the context is built from; the shard layer fills it in at start-up.
pub struct ContextOptions {
    pub shard_count: usize,
    pub frame_max_bytes: usize,
    pub drain_timeout: Duration,
    pub data_path: PathBuf,
    pub limits: Limits,
    pub advertised: Advertised,
    pub encryption: Option<Arc<Keyring>>,
    pub cluster: Arc<ClusterShared>,
}

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
    /// Encryption at rest: seals produced batches and opens polled ones;
    /// `None` when it is disabled.
    pub encryption: Option<Arc<Keyring>>,
    /// What the groups on every shard share: the roster (one node on a
    /// single node), the timing, the views, the links.
    pub cluster: Arc<ClusterShared>,
    pub clients: ClientRegistry,
    pub partition_stats: PartitionStatsRegistry,
    /// Counters of every shard and transport (`/metrics`).
    pub metrics: Metrics,
    inboxes: Vec<Inbox>,
    next_client_id: AtomicU64,
    next_handoff: AtomicUsize,
    stopping: AtomicBool,
    /// Open client connections across all shards.
    open_connections: AtomicUsize,
}

impl ServerContext {
    /// Builds the context; `started_at_us` is the moment of this call.
    pub fn new(options: ContextOptions, inboxes: Vec<Inbox>) -> Self {
        Self {
            shard_count: options.shard_count,
            frame_max_bytes: options.frame_max_bytes,
            drain_timeout: options.drain_timeout,
            data_path: options.data_path,
            limits: options.limits,
            started_at_us: process_stats::now_us(),
            advertised: options.advertised,
            encryption: options.encryption,
            cluster: options.cluster,
            clients: ClientRegistry::default(),
            partition_stats: PartitionStatsRegistry::default(),
            metrics: Metrics::with_shards(command_labels(), options.shard_count),
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

    /// Raised once at shutdown; accept loops and sessions poll it.
    pub(crate) fn begin_stopping(&self) {
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
