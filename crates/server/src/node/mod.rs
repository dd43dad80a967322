//! The shard-local view of the system that sessions talk to.
//!
//! Every shard holds a replica of the metadata state machine and applies
//! committed operations in log order. Shard 0 alone commits: it applies an
//! operation, journals it (fsync, group-committed), then broadcasts it to the
//! other shards through their inboxes and answers the submitter with the
//! commit number. A submitter on another shard waits until its own replica
//! has applied that commit before it builds its reply, so a client always
//! reads its own writes.
//!
//! Client sessions, logins and consumer-group memberships are applied on
//! every shard but not journaled: they belong to live connections, and after
//! a restart every connection is gone.

mod cleaner;
pub mod clients;
pub mod cluster_commit;
pub mod cluster_state;
mod commit;
pub mod context;
pub mod disk_space;
mod effects;
pub mod heartbeat;
pub mod moved;
pub mod ownership;
pub mod partition_replica;
pub mod partition_stats;
pub mod partitions;
mod poll_opening;
pub mod process_stats;
mod revocation;
pub mod shard_message;
pub mod shard_state;

use std::cell::{Cell, Ref, RefCell, RefMut};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;

use consensus::client_table::ClientTable;
use crossfire::oneshot::{TxOneshot, oneshot};
use engine::metadata::{ClientId, MetadataOp, MetadataState, OpKind, UserId, password, token};
use tracing::{info, warn};

use crate::metrics::Transport;
use clients::Bound;
use context::ServerContext;
use partitions::{OwnedPartition, PartitionAddr};
use shard_message::ShardMessage;

pub use cluster_commit::ClusterCommitter as Committer;
pub use commit::CommitResult;
pub use shard_state::Shard;

/// Who opens a session (see `Node::register_session`).
#[derive(Debug, Clone, Copy)]
pub struct SessionOwner {
    pub client: u128,
    pub user_id: u32,
    pub transport: Transport,
    pub peer: SocketAddr,
}

/// Why a login was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LoginFailure {
    #[error("invalid username or password")]
    InvalidCredentials,
    #[error("invalid or expired personal access token")]
    InvalidToken,
    #[error("user is inactive")]
    UserInactive,
}

/// A refused partition's files (kept; none when its directory is lost) and
/// why it is refused.
type Fenced = (
    Option<Rc<engine::partition::Partition<storage::RealStorage>>>,
    String,
);

pub struct Node {
    pub shard_id: u16,
    pub ctx: Arc<ServerContext>,
    metadata: RefCell<MetadataState>,
    applied: Cell<u64>,
    waiters: RefCell<Vec<(u64, TxOneshot<()>)>>,
    /// Shard 0 only: the journal and the commit pipeline.
    pub committer: Option<Committer>,
    /// Dedupe state of the clients connected to this shard.
    client_table: RefCell<ClientTable>,
    partitions: RefCell<HashMap<u64, Rc<OwnedPartition>>>,
    /// Cluster mode: partitions this node refuses to serve (their group's
    /// durable state broke a recovery rule), with the files kept and the
    /// reason; a delete of the partition removes them.
    fenced: RefCell<HashMap<u64, Fenced>>,
    /// Connections of this shard, for the heartbeat verifier.
    pub liveness: heartbeat::LivenessTable,
    /// Round-robin counters for Balanced partitioning, per topic namespace.
    balanced: RefCell<HashMap<u64, u32>>,
    /// Cluster mode: connections of this shard attached to a coordinator
    /// session (binary protocol §7.11), by connection id.
    attachments: RefCell<HashMap<u64, u128>>,
    /// This shard's share of `system.partition.cache_size`, for the
    /// partitions it writes with direct I/O (`None`: not set).
    partition_cache: Option<storage::partition::SharedCache>,
}

impl Node {
    pub fn new(
        shard_id: u16,
        ctx: Arc<ServerContext>,
        state: MetadataState,
        commit: u64,
        committer: Option<Committer>,
    ) -> Self {
        Self {
            shard_id,
            metadata: RefCell::new(state),
            applied: Cell::new(commit),
            waiters: RefCell::new(Vec::new()),
            client_table: RefCell::new(ClientTable::new(ctx.limits.clients_table_max)),
            partitions: RefCell::new(HashMap::new()),
            fenced: RefCell::new(HashMap::new()),
            balanced: RefCell::new(HashMap::new()),
            attachments: RefCell::new(HashMap::new()),
            liveness: heartbeat::LivenessTable::default(),
            committer,
            partition_cache: {
                // Only partitions written with direct I/O use it.
                let share = ctx.limits.partition_cache_bytes / ctx.shard_count.max(1) as u64;
                let used = ctx.limits.direct_io != server::config::DirectIo::Never;
                (share > 0 && used).then(|| {
                    storage::partition::SharedCache::new(share, ctx.limits.partition_cache_prefault)
                })
            },
            ctx,
        }
    }

    /// Opens every partition this shard owns; shard 0 starts the committer.
    pub async fn start(self: &Rc<Self>) -> anyhow::Result<()> {
        let opened = self.open_owned_partitions().await?;
        if opened > 0 {
            info!(
                shard = self.shard_id,
                partitions = opened,
                "partitions opened"
            );
        }
        if self.committer.is_some() {
            let node = self.clone();
            compio::runtime::spawn(async move {
                if let Some(committer) = node.committer.as_ref() {
                    committer.run(node.clone()).await;
                }
            })
            .detach();
        }
        if let (Some(_), Some(interval)) = (&self.committer, self.ctx.limits.token_cleaner_interval)
        {
            compio::runtime::spawn(self.clone().run_token_cleaner(interval)).detach();
        }
        if self.committer.is_some() {
            let timeout = self.ctx.limits.rebalancing_timeout;
            compio::runtime::spawn(self.clone().run_revocation_timeouts(timeout)).detach();
        }
        if let Some(idle) = self.ctx.limits.idle_timeout {
            compio::runtime::spawn(self.clone().run_idle_reaper(idle)).detach();
        }
        if let Some(interval) = self.ctx.limits.heartbeat_interval {
            compio::runtime::spawn(self.clone().run_heartbeat_verifier(interval)).detach();
        }
        if let Some(interval) = self.ctx.limits.cleaner_interval {
            compio::runtime::spawn(self.clone().run_cleaner(interval)).detach();
        }
        Ok(())
    }

    /// Replaces this shard's metadata replica wholesale with `state`, as of
    /// the op `commit` (a cluster node's metadata checkpoint), and opens
    /// the partitions it lists that this shard owns.
    pub(crate) async fn replace_metadata(
        &self,
        state: MetadataState,
        commit: u64,
    ) -> anyhow::Result<()> {
        *self.metadata.borrow_mut() = state;
        self.mark_applied(commit);
        self.open_owned_partitions().await?;
        Ok(())
    }

    /// Opens the partitions the metadata lists that this shard owns and
    /// has not opened yet; returns how many it opened.
    async fn open_owned_partitions(&self) -> anyhow::Result<usize> {
        let owned: Vec<(
            PartitionAddr,
            engine::metadata::topic::options::TopicOptions,
            u64,
        )> = {
            let metadata = self.metadata();
            metadata
                .streams()
                .flat_map(|s| s.topics().map(move |t| (s.id.0, t)))
                .flat_map(|(stream, t)| {
                    t.partitions().iter().map(move |p| {
                        (
                            PartitionAddr {
                                stream,
                                topic: t.id.0,
                                partition: p.id.0,
                            },
                            t.options,
                            t.purge_generation,
                        )
                    })
                })
                .filter(|(addr, _, _)| self.owns(addr.ns()))
                .collect()
        };
        let mut opened = 0;
        for (addr, options, purge_generation) in &owned {
            let ns = addr.ns();
            if self.partitions.borrow().contains_key(&ns) || self.fenced.borrow().contains_key(&ns)
            {
                continue;
            }
            self.open_partition(*addr, options, *purge_generation)
                .await
                .map_err(|e| {
                    anyhow::anyhow!(
                        "partition {}/{}/{}: {e}",
                        addr.stream,
                        addr.topic,
                        addr.partition
                    )
                })?;
            opened += 1;
        }
        Ok(opened)
    }

    /// Flushes and closes every owned partition, and syncs the journal.
    pub async fn stop(&self) {
        let owned: Vec<Rc<OwnedPartition>> = self.partitions.borrow().values().cloned().collect();
        for partition in owned {
            if let Err(e) = partition.log().close().await {
                warn!("closing a partition log failed: {e}");
            }
        }
    }

    pub fn clients_table(&self) -> Ref<'_, ClientTable> {
        self.client_table.borrow()
    }

    pub fn clients_table_mut(&self) -> RefMut<'_, ClientTable> {
        self.client_table.borrow_mut()
    }

    /// The next partition for Balanced partitioning of a topic.
    pub fn next_balanced(&self, topic_ns: u64, partitions_count: u32) -> u32 {
        let mut counters = self.balanced.borrow_mut();
        let counter = counters.entry(topic_ns).or_insert(0);
        let chosen = *counter % partitions_count.max(1);
        *counter = counter.wrapping_add(1);
        chosen
    }

    /// Shard 0: queue an operation for commit, answering on `reply`.
    pub fn enqueue_commit(&self, op: MetadataOp, reply: TxOneshot<CommitResult>) {
        let committer = self
            .committer
            .as_ref()
            .expect("metadata submissions go to shard 0");
        let rx = committer.enqueue(op);
        compio::runtime::spawn(async move {
            if let Ok(result) = rx.await {
                reply.send(result);
            }
        })
        .detach();
    }

    /// Commits an operation (through shard 0) and waits until this shard's
    /// replica has applied it.
    pub async fn submit(&self, op: MetadataOp) -> CommitResult {
        let result = match &self.committer {
            Some(committer) => committer.enqueue(op).await,
            None => {
                let (tx, rx) = oneshot();
                self.ctx
                    .send(0, ShardMessage::MetadataSubmit { op, reply: tx })
                    .await;
                rx.await
            }
        };
        let result = result.unwrap_or_else(|_| CommitResult {
            outcome: Err(engine::metadata::MetadataError::Unauthorized {
                user: UserId(u32::MAX),
                action: "commit during shutdown",
            }),
            commit: self.metadata_commit(),
        });
        self.wait_applied(result.commit).await;
        result
    }

    /// Submits without waiting for the answer (connection teardown).
    pub fn submit_detached(self: &Rc<Self>, op: MetadataOp) {
        let node = self.clone();
        compio::runtime::spawn(async move {
            let _ = node.submit(op).await;
        })
        .detach();
    }

    /// Read access to this shard's metadata replica. Never hold it across an
    /// `.await`.
    pub fn metadata(&self) -> Ref<'_, MetadataState> {
        self.metadata.borrow()
    }

    /// The highest commit applied on this shard.
    pub fn metadata_commit(&self) -> u64 {
        self.applied.get()
    }

    /// Applies a committed operation broadcast by shard 0, with its effects
    /// on this shard's partitions, before the next inbox message.
    pub async fn apply_committed(&self, op: &MetadataOp, commit: u64) {
        let outcome = self.metadata.borrow_mut().apply(op);
        match outcome {
            Ok(outcome) => self.on_applied(&outcome).await,
            // Shard 0 only broadcasts operations that applied cleanly on the
            // same state, so a rejection here means the replicas diverged.
            Err(e) => panic!(
                "metadata replica on shard {} rejected committed op {commit}: {e}",
                self.shard_id
            ),
        }
        self.mark_applied(commit);
    }

    /// Applies locally on shard 0 (the committer calls this).
    pub(crate) fn apply_local(
        &self,
        op: &MetadataOp,
    ) -> Result<engine::metadata::ApplyOutcome, engine::metadata::MetadataError> {
        self.metadata.borrow_mut().apply(op)
    }

    pub(crate) fn mark_applied(&self, commit: u64) {
        if commit > self.applied.get() {
            self.applied.set(commit);
        }
        let mut waiters = self.waiters.borrow_mut();
        let (ready, pending): (Vec<_>, Vec<_>) = waiters.drain(..).partition(|(c, _)| *c <= commit);
        *waiters = pending;
        drop(waiters);
        for (_, tx) in ready {
            tx.send(());
        }
    }

    /// Resolves once this shard's replica has applied `commit`.
    pub async fn wait_applied(&self, commit: u64) {
        if self.applied.get() >= commit {
            return;
        }
        let (tx, rx) = crossfire::oneshot::oneshot();
        self.waiters.borrow_mut().push((commit, tx));
        let _ = rx.await;
    }

    pub async fn verify_password(
        &self,
        username: &str,
        plaintext: &str,
    ) -> Result<u32, LoginFailure> {
        let user = self
            .metadata()
            .user_by_username(username)
            .map(|u| (u.id.0, u.password_hash.clone(), u.is_active()));
        let plaintext = plaintext.to_owned();
        let Some((id, hash, active)) = user else {
            let _ =
                compio::runtime::spawn_blocking(move || password::verify_dummy(&plaintext)).await;
            return Err(LoginFailure::InvalidCredentials);
        };
        let ok =
            compio::runtime::spawn_blocking(move || password::verify_password(&plaintext, &hash))
                .await
                .unwrap_or(false);
        match (ok, active) {
            (true, true) => Ok(id),
            (true, false) => Err(LoginFailure::UserInactive),
            (false, _) => Err(LoginFailure::InvalidCredentials),
        }
    }

    /// The active owner of an unexpired personal access token.
    pub fn token_user(&self, raw: &str) -> Option<u32> {
        self.token_user_by_hash(&token::hash_token(raw))
    }

    /// `token_user` for a token already hashed (`token::hash_token`).
    pub fn token_user_by_hash(&self, hash: &str) -> Option<u32> {
        let metadata = self.metadata();
        let found = metadata.find_token_by_hash(hash)?;
        if found.is_expired(process_stats::now_us()) {
            return None;
        }
        Some(found.user_id.0)
    }

    pub async fn verify_token(&self, raw: &str) -> Result<u32, LoginFailure> {
        let owner = self.token_user(raw).ok_or(LoginFailure::InvalidToken)?;
        match self.metadata().user(UserId(owner)) {
            Some(user) if user.is_active() => Ok(user.id.0),
            Some(_) => Err(LoginFailure::UserInactive),
            None => Err(LoginFailure::InvalidToken),
        }
    }

    pub fn connection_opened(&self, connection_id: u64, transport: Transport, peer: SocketAddr) {
        self.ctx.clients.opened(clients::ClientRecord {
            connection_id,
            transport,
            peer,
            bound: None,
        });
    }

    /// Login: commits the client's Register (its op is the session, binary
    /// protocol §7.3.7), then binds the client's dedupe entry and the
    /// connection's record. Fails when the commit was refused (the user was
    /// deleted meanwhile).
    pub async fn register_session(
        &self,
        connection_id: u64,
        who: SessionOwner,
    ) -> Result<Bound, engine::metadata::MetadataError> {
        let kind = OpKind::RegisterClient {
            client: ClientId(who.client),
            user: UserId(who.user_id),
            transport: match who.transport {
                Transport::Tcp => engine::metadata::user::Transport::Tcp,
                Transport::Quic => engine::metadata::user::Transport::Quic,
                Transport::Http => engine::metadata::user::Transport::Http,
                Transport::WebSocket => engine::metadata::user::Transport::WebSocket,
            },
            address: who.peer.to_string(),
            node: Some(self.ctx.cluster.replica),
        };
        let result = self.submit(self.op(who.user_id, kind)).await;
        result.outcome?;
        let session = consensus::Session::of_register(consensus::Op(result.commit));
        let bound = Bound {
            user_id: who.user_id,
            client: who.client,
            session: session.0,
        };
        self.ctx.clients.bind(connection_id, Some(bound));
        self.client_table.borrow_mut().register(
            consensus::ClientId(who.client),
            who.user_id,
            session,
        );
        Ok(bound)
    }

    /// Logout or disconnect: the session ends and its group memberships go.
    pub fn session_ended(self: &Rc<Self>, connection_id: u64, bound: Bound) {
        self.attachments.borrow_mut().remove(&connection_id);
        self.ctx.clients.bind(connection_id, None);
        self.client_table
            .borrow_mut()
            .unregister(consensus::ClientId(bound.client));
        if self.ctx.is_stopping() {
            return;
        }
        let kind = OpKind::UnregisterClient {
            client: ClientId(bound.client),
        };
        self.submit_detached(self.op(bound.user_id, kind));
    }

    /// The connection closed (with or without a session).
    pub fn connection_closed(self: &Rc<Self>, connection_id: u64, bound: Option<Bound>) {
        self.attachments.borrow_mut().remove(&connection_id);
        if let Some(bound) = bound {
            self.session_ended(connection_id, bound);
        }
        self.ctx.clients.closed(connection_id);
    }

    /// This connection acts on the group memberships of `client`'s
    /// session from now on (until it closes or attaches again).
    pub fn attach_session(&self, connection_id: u64, client: u128) {
        self.attachments.borrow_mut().insert(connection_id, client);
    }

    /// Ends a connection's attachment here, returning the session it was
    /// attached to (the connection moves to another shard).
    pub fn detach_session(&self, connection_id: u64) -> Option<u128> {
        self.attachments.borrow_mut().remove(&connection_id)
    }

    /// The coordinator session a connection attached to, if any.
    pub fn attached_session(&self, connection_id: u64) -> Option<u128> {
        self.attachments.borrow().get(&connection_id).copied()
    }

    fn op(&self, actor: u32, kind: OpKind) -> MetadataOp {
        MetadataOp {
            timestamp_us: process_stats::now_us(),
            actor: UserId(actor),
            kind,
        }
    }
}
