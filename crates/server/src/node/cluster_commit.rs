//! The metadata commit path of a cluster node, on shard 0: the replicated
//! metadata group (`engine::cluster_metadata`) instead of the single
//! node's journal, driven by one task that owns it and takes, in arrival
//! order, submissions from this node's sessions, frames from the replica
//! links and the 10 ms tick. Committed ops are applied as on a single node:
//! shard 0's public state, then every other shard, before the next one;
//! the submitter is answered once its op is applied everywhere here.
//!
//! On a node that does not lead the metadata group a session's Register
//! or Logout is forwarded to the primary (any node opens sessions); any
//! other submission is answered `NotPrimary` (code 58: nothing was
//! recorded). A forwarded op the primary does not answer in 5 s, or whose
//! primary leaves its view, is looked for in this replica's log (a
//! Register or Logout names its session): once committed and applied
//! here, its outcome is the answer; not seen within `DOUBT_MAX`, 57 (so a
//! login that did commit is not answered 57 and left as a session no
//! connection owns).
//!
//! A submission whose primary left its view before the op committed is
//! in doubt (replication spec §7.2): it waits until this replica is
//! normal in a later view and its log shows the op (it will commit, and
//! its result is the answer, wherever this replica now stands) or
//! provably not (58: nothing was recorded, a replay runs it once), at most
//! `DOUBT_MAX` (then 57: it may have committed; the session answers every
//! replay with that 57). A metadata checkpoint (at boot, or installed by
//! state transfer) replaces the state on every shard.
//!
//! Frames of partition groups are routed from here to the partition's owner
//! shard (`partition_replica`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use consensus::vsr::Timing;
use consensus::vsr::message::Message;
use consensus::wire::Frame;
use consensus::{Op, RequestNumber, View};
use crossfire::mpsc::{Array, bounded_async};
use crossfire::oneshot::{RxOneshot, TxOneshot, oneshot};
use crossfire::{AsyncRx, MAsyncTx};
use engine::cluster_metadata::{Applier, ClusterMetadata, CreatedViews, Submit};
use engine::metadata::permissions::Permissions;
use engine::metadata::user::UserStatus;
use engine::metadata::{ApplyOutcome, MetadataError, MetadataOp, MetadataState, OpKind, UserId};
use engine::replicated::{Effect, Fate, GroupError, Placement};
use storage::RealStorage;
use tracing::{info, warn};

use super::Node;
use super::cluster_state::{ClusterShared, RosterEntry};
use super::commit::{CommitResult, broadcast, fatal};
use super::shard_message::ShardMessage;
use server::cluster::{LinkConfig, Links, METADATA_GROUP, bind_listener};

mod orphans;
use orphans::Orphans;

/// The tick of every replica timer (replication spec §5.1).
pub const TICK: Duration = Duration::from_millis(10);
/// Submissions queued at most; a full queue answers 57 (retry).
const QUEUE_CAPACITY: usize = 4096;
/// How long a submission in doubt waits for its fate before it is
/// answered 57 (it may have committed): below the SDK's 30 s wait for a
/// reply, so the client hears an answer rather than drops its connection.
pub const DOUBT_MAX: Duration = Duration::from_secs(20);

/// What boot decided for this node's metadata replica.
pub struct ClusterStart {
    /// The replica links and where this node listens for them; `None` for
    /// a roster of one.
    pub links: Option<(LinkConfig, std::net::SocketAddr)>,
    /// `<data>/cluster/metadata`.
    pub dir: PathBuf,
    pub placement: Placement,
    pub nonce: u64,
    pub root: RootUser,
    /// Each roster node's `ip` and HTTP port, by replica id (for
    /// redirecting reads that must be served by the leader).
    pub roster_http: Vec<(String, u16)>,
    /// The roster as clients are told it (cluster metadata, routing).
    pub roster: Vec<RosterEntry>,
    /// `cluster.name`.
    pub cluster_name: String,
    /// No `[cluster]` was configured: a single node, run as a roster of
    /// one (`boot::cluster::implicit_roster`).
    pub implicit: bool,
}

/// Who leads the metadata group, as this node knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Leader {
    /// This node is the primary of a normal view.
    Here { view: u32 },
    /// Another node is, at its roster `ip` and HTTP port.
    There {
        view: u32,
        ip: String,
        http_port: u16,
    },
    /// A view change is under way.
    Unknown { view: u32 },
}

/// The root user the group's first primary creates, once for the cluster
/// (replication spec §6.2: hashed once, so every replica holds the same
/// bytes).
pub struct RootUser {
    pub username: String,
    pub password_hash: String,
    /// A roster of one may generate the password (as a single node does):
    /// it is shown once, when the user is created.
    pub generated_password: Option<String>,
}

/// Timer lengths in ticks from the configured durations.
pub fn timing(
    heartbeat: Duration,
    commit: Duration,
    view_change: Duration,
    retransmit: Duration,
) -> Timing {
    let ticks = |d: Duration| {
        u32::try_from(d.as_millis() / TICK.as_millis())
            .unwrap_or(u32::MAX)
            .max(1)
    };
    Timing {
        commit_interval: ticks(commit),
        heartbeat_timeout: ticks(heartbeat),
        view_change_timeout: ticks(view_change),
        retransmit_interval: ticks(retransmit),
    }
}

enum Input {
    Submit(MetadataOp, TxOneshot<CommitResult>),
    Frame(Frame),
    Tick,
}

pub struct ClusterCommitter {
    tx: MAsyncTx<Array<Input>>,
    start: std::cell::RefCell<Option<(ClusterStart, AsyncRx<Array<Input>>)>>,
    /// Where the replica task publishes the metadata view.
    shared: Arc<ClusterShared>,
    roster_http: Vec<(String, u16)>,
}

impl ClusterCommitter {
    pub fn new(mut start: ClusterStart, shared: Arc<ClusterShared>) -> Self {
        let (tx, rx) = bounded_async(QUEUE_CAPACITY);
        ClusterCommitter {
            tx,
            shared,
            roster_http: std::mem::take(&mut start.roster_http),
            start: std::cell::RefCell::new(Some((start, rx))),
        }
    }

    /// The metadata view this node is in.
    pub fn view(&self) -> u32 {
        self.shared.metadata_view().0.0
    }

    /// Who leads the metadata group: the primary of the current view while
    /// it is normal.
    pub fn leader(&self) -> Leader {
        let view = self.view();
        let Some(primary) = self.shared.metadata_leader() else {
            return Leader::Unknown { view };
        };
        if primary == self.shared.replica {
            return Leader::Here { view };
        }
        match self.roster_http.get(usize::from(primary)) {
            Some((ip, http_port)) if *http_port != 0 => Leader::There {
                view,
                ip: ip.clone(),
                http_port: *http_port,
            },
            _ => Leader::Unknown { view },
        }
    }

    pub fn enqueue(&self, op: MetadataOp) -> RxOneshot<CommitResult> {
        let (reply, rx) = oneshot();
        if let Err(error) = self.tx.try_send(Input::Submit(op, reply))
            && let Input::Submit(_, reply) = error.into_inner()
        {
            reply.send(CommitResult {
                outcome: Err(MetadataError::NotCommitted),
                commit: 0,
            });
        }
        rx
    }

    /// The replica task; runs for the life of shard 0.
    pub async fn run(&self, node: Rc<Node>) {
        let Some((start, rx)) = self.start.borrow_mut().take() else {
            return;
        };
        let ClusterStart {
            links,
            dir,
            placement,
            nonce,
            root,
            roster_http: _,
            roster: _,
            cluster_name: _,
            implicit: _,
        } = start;
        let cluster = placement.identity.cluster;
        let local = placement.identity.replica;
        let replicas = placement.replicas;
        let applier = NodeApplier { node: node.clone() };
        let group = match ClusterMetadata::open(RealStorage, &dir, placement, nonce, applier).await
        {
            Ok(group) => group,
            Err(e) => fatal(&format!(
                "cannot open the metadata replica in {}: {e}",
                dir.display()
            )),
        };
        let links = links.map(|(config, listen)| {
            let listener = bind_listener(listen)
                .unwrap_or_else(|e| fatal(&format!("cannot listen for replicas on {listen}: {e}")));
            let (links, inbound) = Links::start(config, listener)
                .unwrap_or_else(|e| fatal(&format!("replica links: {e}")));
            info!(replica = local, %listen, "metadata replica started");
            node.ctx.cluster.set_links(links.sender());
            let frames = self.tx.clone();
            let router = node.clone();
            compio::runtime::spawn(async move {
                while let Ok(frame) = inbound.recv().await {
                    if frame.group != METADATA_GROUP {
                        // A partition group's: to the partition's owner shard.
                        router.deliver_replica_frame(frame);
                    } else if frames.send(Input::Frame(frame)).await.is_err() {
                        return;
                    }
                }
            })
            .detach();
            links
        });
        if links.is_none() {
            info!(replica = local, "metadata replica started (a group of one)");
        }
        let ticks = self.tx.clone();
        compio::runtime::spawn(async move {
            loop {
                compio::time::sleep(TICK).await;
                if ticks.try_send(Input::Tick).is_err() && ticks.is_disconnected() {
                    return;
                }
            }
        })
        .detach();
        let orphans = Orphans::new(replicas, node.ctx.limits.heartbeat_interval);
        let mut task = Task {
            node,
            group,
            links,
            cluster,
            replicas,
            tx: self.tx.clone(),
            root: Some(root),
            waiters: BTreeMap::new(),
            forwards: BTreeMap::new(),
            next_nonce: 1,
            forwards_in_doubt: BTreeMap::new(),
            remote: BTreeMap::new(),
            awaiting_apply: BTreeMap::new(),
            in_doubt: BTreeMap::new(),
            orphans,
        };
        while let Ok(input) = rx.recv().await {
            let effects = match input {
                Input::Tick => {
                    task.expire_forwards();
                    task.end_orphaned_sessions();
                    task.group.on_tick().await
                }
                Input::Frame(frame) => task.on_frame(frame).await,
                Input::Submit(op, reply) => task.on_submit(op, reply).await,
            };
            let effects = effects
                .unwrap_or_else(|e| fatal(&format!("the metadata replica's storage failed: {e}")));
            task.perform(effects);
            task.settle();
            let replica = task.group.group().replica();
            let normal = replica.status() == consensus::vsr::Status::Normal;
            self.shared.set_metadata_view(replica.view(), normal);
            self.shared
                .set_settled(normal && task.group.state().users().next().is_some());
            for peer in 0..replicas {
                let up = task.connected(peer);
                self.shared.set_connected(peer, up);
            }
        }
    }
}

/// How long a forwarded op waits for the primary's answer before this
/// node looks for it in its own log (module docs).
const FORWARD_TIMEOUT: Duration = Duration::from_secs(5);

/// The state of the replica task.
struct Task {
    node: Rc<Node>,
    group: ClusterMetadata<RealStorage, NodeApplier>,
    /// `None` in a group of one.
    links: Option<Links>,
    cluster: u128,
    replicas: u8,
    tx: MAsyncTx<Array<Input>>,
    /// The root user to create, until the cluster has users.
    root: Option<RootUser>,
    /// Submissions prepared here, by request number, with their view.
    waiters: BTreeMap<RequestNumber, (View, TxOneshot<CommitResult>)>,
    /// Ops this node forwarded to the primary, by nonce: the view it was
    /// the primary of, and the deadline.
    forwards: BTreeMap<u64, Forward>,
    next_nonce: u64,
    /// Forwarded ops whose primary left its view or did not answer in
    /// time: they may have committed, so the log is searched for them
    /// (module docs), by nonce.
    forwards_in_doubt: BTreeMap<u64, (Instant, Forward)>,
    /// Primary: ops forwarded by other nodes, by request number.
    remote: BTreeMap<RequestNumber, (u8, u64)>,
    /// Forwarded ops the primary committed, answered once applied here.
    awaiting_apply: BTreeMap<Op, Vec<TxOneshot<CommitResult>>>,
    /// Submissions prepared here whose primary left its view, waiting for
    /// their fate (module docs): the view they were prepared in, since
    /// when.
    in_doubt: BTreeMap<RequestNumber, (View, Instant, TxOneshot<CommitResult>)>,
    /// Sessions no connection holds any more (see `end_orphaned_sessions`).
    orphans: Orphans,
}

/// A session op this node forwarded to the primary of `view`.
struct Forward {
    view: View,
    deadline: Instant,
    /// The op's kind: a Register or Logout names its session, so the log
    /// holds at most one op of this kind (its timestamp is the primary's).
    kind: OpKind,
    reply: TxOneshot<CommitResult>,
}

impl Task {
    /// Whether the replica link to `peer` is up (this node counts as up).
    fn connected(&self, peer: u8) -> bool {
        let local = self.group.group().replica().id();
        peer == local
            || self
                .links
                .as_ref()
                .is_some_and(|links| links.status(peer).is_some_and(|s| s.connected))
    }

    fn send(&self, to: u8, message: Message) {
        let frame = Frame {
            cluster: self.cluster,
            from: self.group.group().replica().id(),
            group: METADATA_GROUP,
            incarnation: 0,
            message,
        };
        let Some(links) = &self.links else {
            debug_assert!(false, "a group of one sends no frames (to replica {to})");
            warn!(
                peer = to,
                "replica frame dropped: a group of one has no links"
            );
            return;
        };
        if let Err(e) = links.send(to, &frame) {
            warn!(peer = to, "replica frame dropped: {e}");
        }
    }

    /// A submission of this node's sessions. The primary prepares it; a
    /// backup forwards a session's Register or Logout to the primary
    /// (any node opens and ends sessions) and answers 58 to the rest.
    async fn on_submit(
        &mut self,
        op: MetadataOp,
        reply: TxOneshot<CommitResult>,
    ) -> Result<Vec<Effect>, GroupError> {
        let forwardable = matches!(
            op.kind,
            OpKind::RegisterClient { .. } | OpKind::UnregisterClient { .. }
        );
        let mut body = Vec::new();
        let kind = op.kind.clone();
        if forwardable {
            op.encode(&mut body);
        }
        let view = self.group.group().replica().view();
        match self.group.submit(op, now_us()).await? {
            Submit::Prepared { request, effects } => {
                self.waiters.insert(request, (view, reply));
                return Ok(effects);
            }
            Submit::Rejected(e) => answer(reply, Err(e), self.node.metadata_commit()),
            Submit::NotPrimary { view } if forwardable => self.forward(view, body, kind, reply),
            Submit::NotPrimary { view } => {
                answer(reply, Err(MetadataError::NotPrimary { view: view.0 }), 0)
            }
            Submit::Busy => answer(reply, Err(MetadataError::NotCommitted), 0),
        }
        Ok(Vec::new())
    }

    fn forward(&mut self, view: View, body: Vec<u8>, kind: OpKind, reply: TxOneshot<CommitResult>) {
        let primary = (view.0 % u32::from(self.replicas)) as u8;
        let reachable = self.connected(primary);
        if primary == self.group.group().replica().id() || !reachable {
            // We are the primary-elect of a view not started yet, or the
            // primary is unreachable (it may be dead; a view change is
            // coming): the client retries at once instead of waiting.
            answer(reply, Err(MetadataError::NotCommitted), 0);
            return;
        }
        let nonce = self.next_nonce;
        self.next_nonce += 1;
        let forward = Forward {
            view,
            deadline: Instant::now() + FORWARD_TIMEOUT,
            kind,
            reply,
        };
        self.forwards.insert(nonce, forward);
        self.send(primary, Message::ForwardRequest { view, nonce, body });
    }

    async fn on_frame(&mut self, frame: Frame) -> Result<Vec<Effect>, GroupError> {
        assert_eq!(
            frame.group, METADATA_GROUP,
            "partition frames are routed apart"
        );
        match frame.message {
            Message::ForwardRequest { nonce, body, .. } => {
                self.on_forwarded(frame.from, nonce, &body).await
            }
            Message::ForwardReply {
                nonce, op, code, ..
            } => {
                if let Some(forward) = self.forwards.remove(&nonce) {
                    if code == 0 {
                        self.awaiting_apply
                            .entry(op)
                            .or_default()
                            .push(forward.reply);
                    } else {
                        let view = self.group.group().replica().view();
                        answer(forward.reply, Err(error_of(code, view)), 0);
                    }
                }
                Ok(Vec::new())
            }
            message => self.group.on_message(frame.from, message).await,
        }
    }

    /// Primary: another node's Register or Logout, prepared as ours; its
    /// answer goes back once it commits.
    async fn on_forwarded(
        &mut self,
        origin: u8,
        nonce: u64,
        body: &[u8],
    ) -> Result<Vec<Effect>, GroupError> {
        let view = self.group.group().replica().view();
        let refuse = |task: &Self, code: u32| {
            task.send(
                origin,
                Message::ForwardReply {
                    view,
                    nonce,
                    op: Op::ZERO,
                    code,
                },
            )
        };
        let op = match MetadataOp::decode(body) {
            Ok(op)
                if matches!(
                    op.kind,
                    OpKind::RegisterClient { .. } | OpKind::UnregisterClient { .. }
                ) =>
            {
                op
            }
            _ => {
                warn!(
                    peer = origin,
                    "a forwarded op that is not a session op was refused"
                );
                refuse(self, MetadataError::NotCommitted.code());
                return Ok(Vec::new());
            }
        };
        match self.group.submit(op, now_us()).await? {
            Submit::Prepared { request, effects } => {
                self.remote.insert(request, (origin, nonce));
                Ok(effects)
            }
            Submit::Rejected(e) => {
                refuse(self, e.code());
                Ok(Vec::new())
            }
            Submit::NotPrimary { .. } => {
                refuse(self, MetadataError::NotPrimary { view: view.0 }.code());
                Ok(Vec::new())
            }
            Submit::Busy => {
                refuse(self, MetadataError::NotCommitted.code());
                Ok(Vec::new())
            }
        }
    }

    fn perform(&mut self, effects: Vec<Effect>) {
        for effect in effects {
            match effect {
                Effect::Send(envelope) => self.send(envelope.to, envelope.message),
                Effect::Reply {
                    client,
                    request,
                    op,
                    ..
                } if client == self.group.client() => {
                    let outcome = self
                        .group
                        .outcome(op)
                        .cloned()
                        .unwrap_or(Err(MetadataError::NotCommitted));
                    let local = self.waiters.remove(&request).map(|(_, reply)| reply);
                    let doubted = self.in_doubt.remove(&request).map(|(_, _, reply)| reply);
                    if let Some(reply) = local.or(doubted) {
                        answer(reply, outcome, op.0);
                    } else if let Some((origin, nonce)) = self.remote.remove(&request) {
                        let code = outcome.as_ref().err().map_or(0, MetadataError::code);
                        let view = self.group.group().replica().view();
                        self.send(
                            origin,
                            Message::ForwardReply {
                                view,
                                nonce,
                                op,
                                code,
                            },
                        );
                    }
                }
                Effect::Reply { .. } => {}
            }
        }
    }

    /// After every input: answer forwarded ops applied here, create the
    /// root user once, and end what a primary that left its view had in
    /// flight.
    fn settle(&mut self) {
        let replica = self.group.group().replica();
        let applied = replica.commit_min();
        while let Some(entry) = self.awaiting_apply.first_entry() {
            if *entry.key() > applied {
                break;
            }
            let (op, replies) = entry.remove_entry();
            for reply in replies {
                let outcome = self
                    .group
                    .outcome(op)
                    .cloned()
                    .unwrap_or(Err(MetadataError::NotCommitted));
                answer(reply, outcome, op.0);
            }
        }
        let replica = self.group.group().replica();
        // The group's first primary creates the root user once it has
        // applied everything it holds (so it knows none exists).
        let settled = replica.is_primary() && replica.commit_min() == replica.head();
        if settled && self.root.is_some() && self.group.state().users().next().is_none() {
            let user = self.root.take().expect("checked");
            let op = MetadataOp {
                timestamp_us: 0,
                actor: UserId::ROOT,
                kind: OpKind::CreateUser {
                    username: user.username.clone(),
                    password_hash: user.password_hash,
                    status: UserStatus::Active,
                    permissions: Some(Permissions::root()),
                },
            };
            match &user.generated_password {
                Some(password) => warn!(
                    "creating the root user '{}' with the generated password '{}'; it is shown \
                     only this once",
                    user.username, password
                ),
                None => info!(username = %user.username, "creating the cluster's root user"),
            }
            let (reply, _) = oneshot();
            if self.tx.try_send(Input::Submit(op, reply)).is_err() {
                fatal("cannot queue the creation of the root user");
            }
        } else if settled && self.root.is_some() {
            self.root = None; // the cluster has its users already
        }
        // What a primary that left its view had in flight is in doubt: it
        // may still commit in the next view.
        let replica = self.group.group().replica();
        let current = replica.view();
        let primary = replica.is_primary();
        let now = Instant::now();
        let stale: Vec<RequestNumber> = self
            .waiters
            .iter()
            .filter(|(_, (view, _))| !primary || *view != current)
            .map(|(request, _)| *request)
            .collect();
        for request in stale {
            if let Some((view, reply)) = self.waiters.remove(&request) {
                self.in_doubt.insert(request, (view, now, reply));
            }
        }
        self.resolve_doubts(now, current);
        self.resolve_forward_doubts(now);
        if !primary {
            // Forwarded ops prepared here may still commit in the next
            // view: their origins, which follow the view change (or time
            // out), look for them in their own logs. A refusal (57) would
            // tell them the op was never prepared.
            self.remote.clear();
        }
    }

    /// Answers the submissions in doubt whose fate this replica can tell
    /// (`Group::own_fate`): dropped, 58 (a replay runs it once); committed
    /// but skipped by a state transfer, or past `DOUBT_MAX`, 57. One its
    /// log holds is answered as it applies (`perform`).
    fn resolve_doubts(&mut self, now: Instant, current: View) {
        let group = self.group.group();
        let mut answers = Vec::new();
        for (&request, (view, since, _)) in &self.in_doubt {
            let error = match group.own_fate(request, *view) {
                Fate::Dropped => MetadataError::NotPrimary { view: current.0 },
                Fate::Skipped => MetadataError::NotCommitted,
                Fate::Pending | Fate::Unknown if now.duration_since(*since) >= DOUBT_MAX => {
                    MetadataError::NotCommitted
                }
                Fate::Pending | Fate::Unknown => continue,
            };
            answers.push((request, error));
        }
        for (request, error) in answers {
            if let Some((_, _, reply)) = self.in_doubt.remove(&request) {
                answer(reply, Err(error), 0);
            }
        }
    }

    /// Forwarded ops the primary did not answer in time, or whose primary
    /// was replaced since, are in doubt: they may have committed.
    fn expire_forwards(&mut self) {
        let now = Instant::now();
        let current = self.group.group().replica().view();
        let expired: Vec<u64> = self
            .forwards
            .iter()
            .filter(|(_, forward)| forward.deadline <= now || forward.view < current)
            .map(|(nonce, _)| *nonce)
            .collect();
        for nonce in expired {
            if let Some(forward) = self.forwards.remove(&nonce) {
                self.forwards_in_doubt.insert(nonce, (now, forward));
            }
        }
    }

    /// Answers forwarded ops in doubt that this replica's log holds
    /// committed and applied: their outcome. Past `DOUBT_MAX` without one
    /// (dropped, below the checkpoint, or never prepared), 57: the client
    /// retries.
    fn resolve_forward_doubts(&mut self, now: Instant) {
        if self.forwards_in_doubt.is_empty() {
            return;
        }
        let replica = self.group.group().replica();
        let start = replica.checkpoint_op().0 + 1;
        let logged: Vec<(Op, OpKind)> = (start..=replica.head().0)
            .filter_map(|op| {
                let entry = replica.entry(Op(op))?;
                let decoded = MetadataOp::decode(&entry.body).ok()?;
                let session_op = matches!(
                    decoded.kind,
                    OpKind::RegisterClient { .. } | OpKind::UnregisterClient { .. }
                );
                session_op.then_some((Op(op), decoded.kind))
            })
            .collect();
        let applied = replica.commit_min();
        let nonces: Vec<u64> = self.forwards_in_doubt.keys().copied().collect();
        for nonce in nonces {
            let (since, forward) = &self.forwards_in_doubt[&nonce];
            let fate = forward_fate(&logged, &forward.kind, applied, now.duration_since(*since));
            if fate == ForwardFate::Waiting {
                continue;
            }
            let (_, forward) = self.forwards_in_doubt.remove(&nonce).expect("listed");
            match fate {
                ForwardFate::Waiting => unreachable!("kept above"),
                ForwardFate::Committed(op) => {
                    let outcome = self
                        .group
                        .outcome(op)
                        .cloned()
                        .unwrap_or(Err(MetadataError::NotCommitted));
                    answer(forward.reply, outcome, op.0);
                }
                ForwardFate::Unknown => answer(forward.reply, Err(MetadataError::NotCommitted), 0),
            }
        }
    }
}

/// What this node can tell of a session op it forwarded and got no answer
/// for (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ForwardFate {
    /// Committed at this op and applied here: its outcome is the answer.
    Committed(Op),
    /// Not seen committed yet; keep waiting.
    Waiting,
    /// Not seen committed within `DOUBT_MAX`: 57, the client retries.
    Unknown,
}

/// The fate of a forwarded session op of `kind`, from the session ops in
/// this replica's log (`logged`, by op) and its applied point, `waited`
/// after it fell in doubt. A Register or Logout names its session, so the
/// log holds at most one op of its kind; only a committed entry is its
/// fate (one above the commit point may still be replaced by a view
/// change).
fn forward_fate(
    logged: &[(Op, OpKind)],
    kind: &OpKind,
    applied: Op,
    waited: Duration,
) -> ForwardFate {
    let found = logged
        .iter()
        .find(|(_, logged)| logged == kind)
        .map(|(op, _)| *op);
    match found.filter(|op| *op <= applied) {
        Some(op) => ForwardFate::Committed(op),
        None if waited < DOUBT_MAX => ForwardFate::Waiting,
        None => ForwardFate::Unknown,
    }
}

/// The error a forwarded op's refusal code stands for.
fn error_of(code: u32, view: View) -> MetadataError {
    match code {
        57 => MetadataError::NotCommitted,
        58 => MetadataError::NotPrimary { view: view.0 },
        code => MetadataError::Forwarded { code },
    }
}

fn answer(
    reply: TxOneshot<CommitResult>,
    outcome: Result<ApplyOutcome, MetadataError>,
    commit: u64,
) {
    reply.send(CommitResult { outcome, commit });
}

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// Applies committed metadata ops to this node as a single node does: shard
/// 0's public state, then every other shard, waiting for all of them.
struct NodeApplier {
    node: Rc<Node>,
}

impl Applier for NodeApplier {
    async fn apply(
        &mut self,
        number: Op,
        op: &MetadataOp,
        outcome: &ApplyOutcome,
        created: &CreatedViews,
    ) {
        self.node.ctx.cluster.set_created(created);
        let applied = self
            .node
            .apply_local(op)
            .expect("a committed op applies on the public state as on the group's");
        assert_eq!(&applied, outcome, "apply is deterministic");
        let commit = number.0;
        let acks = broadcast(&self.node, Arc::new(op.clone()), commit).await;
        self.node.mark_applied(commit);
        self.node.on_applied(outcome).await;
        for ack in acks {
            let _ = ack.await;
        }
    }

    /// A checkpoint replaced the state (at boot, or by state transfer):
    /// every shard takes it, and opens the partitions it owns there.
    async fn restored(&mut self, state: &MetadataState, commit: Op, created: &CreatedViews) {
        self.node.ctx.cluster.set_created(created);
        if let Err(e) = self.node.replace_metadata(state.clone(), commit.0).await {
            fatal(&format!("cannot install the metadata checkpoint: {e:#}"));
        }
        let shared = Arc::new(state.clone());
        let mut replaced = Vec::new();
        for shard in 0..self.node.ctx.shard_count {
            if shard == usize::from(self.node.shard_id) {
                continue;
            }
            let (done, ack) = oneshot();
            self.node
                .ctx
                .send(
                    shard,
                    ShardMessage::MetadataReplaced {
                        state: shared.clone(),
                        commit: commit.0,
                        replaced: done,
                    },
                )
                .await;
            replaced.push(ack);
        }
        for ack in replaced {
            let _ = ack.await;
        }
        info!(op = commit.0, "metadata checkpoint installed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::metadata::user::Transport;

    fn register(client: u128) -> OpKind {
        OpKind::RegisterClient {
            client: engine::metadata::ClientId(client),
            user: UserId::ROOT,
            transport: Transport::Tcp,
            address: "127.0.0.1:1".to_owned(),
            node: Some(1),
        }
    }

    fn logout(client: u128) -> OpKind {
        OpKind::UnregisterClient {
            client: engine::metadata::ClientId(client),
        }
    }

    const NOW: Duration = Duration::from_millis(10);

    #[test]
    fn given_the_forwarded_op_committed_in_the_log_should_answer_its_outcome() {
        let logged = [
            (Op(4), register(7)),
            (Op(5), logout(7)),
            (Op(6), register(8)),
        ];
        assert_eq!(
            forward_fate(&logged, &logout(7), Op(6), NOW),
            ForwardFate::Committed(Op(5))
        );
        assert_eq!(
            forward_fate(&logged, &register(8), Op(6), NOW),
            ForwardFate::Committed(Op(6))
        );
    }

    #[test]
    fn given_the_forwarded_op_above_the_commit_point_should_wait_for_it() {
        // Prepared but not committed: a view change may still replace it.
        let logged = [(Op(4), register(7)), (Op(9), register(8))];
        assert_eq!(
            forward_fate(&logged, &register(8), Op(8), NOW),
            ForwardFate::Waiting
        );
        assert_eq!(
            forward_fate(&logged, &register(8), Op(8), DOUBT_MAX),
            ForwardFate::Unknown,
            "not committed within DOUBT_MAX: the client retries (57)"
        );
        assert_eq!(
            forward_fate(&logged, &register(8), Op(9), DOUBT_MAX),
            ForwardFate::Committed(Op(9))
        );
    }

    #[test]
    fn given_the_forwarded_op_missing_from_the_log_should_wait_then_give_up() {
        let logged = [(Op(4), register(7))];
        // Another session's op of the same kind is not this one.
        assert_eq!(
            forward_fate(&logged, &register(9), Op(4), NOW),
            ForwardFate::Waiting
        );
        assert_eq!(
            forward_fate(&logged, &register(9), Op(4), DOUBT_MAX + NOW),
            ForwardFate::Unknown
        );
        assert_eq!(
            forward_fate(&[], &logout(7), Op(0), DOUBT_MAX),
            ForwardFate::Unknown
        );
    }
}
