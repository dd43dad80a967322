//! The metadata commit path of a cluster node, on shard 0: the replicated
//! metadata group (`engine::cluster_metadata`) instead of the single
//! node's journal, driven by one task that owns it and takes, in arrival
//! order, submissions from this node's sessions, frames from the replica
//! links and the 10 ms tick. Committed ops are applied as on a single node:
//! shard 0's public state, then every other shard, before the next one;
//! the submitter is answered once its op is applied everywhere here.
//!
//! On a node that does not lead the metadata group a submission is
//! answered `NotPrimary` (code 58: nothing was recorded). A submission
//! whose primary left its view before the op committed is answered
//! `NotCommitted` (57: the op may still commit in the next view).
//!
//! Not built yet: partition groups (partition data stays local to each
//! node), forwarding Register/Logout from followers, cached replies across
//! failover, metadata checkpoints (the journal grows; a wiped node refills
//! by repair from op 1).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use consensus::vsr::Timing;
use consensus::wire::Frame;
use consensus::{Op, RequestNumber, View};
use crossfire::mpsc::{Array, bounded_async};
use crossfire::oneshot::{RxOneshot, TxOneshot, oneshot};
use crossfire::{AsyncRx, MAsyncTx};
use engine::cluster_metadata::{Applier, ClusterMetadata, Submit};
use engine::metadata::permissions::Permissions;
use engine::metadata::user::UserStatus;
use engine::metadata::{ApplyOutcome, MetadataError, MetadataOp, MetadataState, OpKind, UserId};
use engine::replicated::{Effect, Placement};
use storage::RealStorage;
use tracing::{info, warn};

use super::Node;
use super::commit::{CommitResult, broadcast, fatal};
use server::cluster::{LinkConfig, Links, METADATA_GROUP, bind_listener};

/// The tick of every replica timer (replication spec §5.1).
pub const TICK: Duration = Duration::from_millis(10);
/// Submissions queued at most; a full queue answers 57 (retry).
const QUEUE_CAPACITY: usize = 4096;

/// What boot decided for this node's metadata replica.
pub struct ClusterStart {
    pub links: LinkConfig,
    pub listen: std::net::SocketAddr,
    /// `<data>/cluster/metadata`.
    pub dir: PathBuf,
    pub placement: Placement,
    pub nonce: u64,
    pub root: RootUser,
}

/// The root user the group's first primary creates, once for the cluster
/// (replication spec §6.2: hashed once, so every replica holds the same
/// bytes).
pub struct RootUser {
    pub username: String,
    pub password_hash: String,
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
}

impl ClusterCommitter {
    pub fn new(start: ClusterStart) -> Self {
        let (tx, rx) = bounded_async(QUEUE_CAPACITY);
        ClusterCommitter {
            tx,
            start: std::cell::RefCell::new(Some((start, rx))),
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
            listen,
            dir,
            placement,
            nonce,
            root,
        } = start;
        let mut root = Some(root);
        let cluster = links.cluster;
        let local = placement.identity.replica;
        let applier = NodeApplier { node: node.clone() };
        let mut group =
            match ClusterMetadata::open(RealStorage, &dir, placement, nonce, applier).await {
                Ok(group) => group,
                Err(e) => fatal(&format!(
                    "cannot open the metadata replica in {}: {e}",
                    dir.display()
                )),
            };
        let listener = bind_listener(listen)
            .unwrap_or_else(|e| fatal(&format!("cannot listen for replicas on {listen}: {e}")));
        let (links, inbound) =
            Links::start(links, listener).unwrap_or_else(|e| fatal(&format!("replica links: {e}")));
        info!(replica = local, %listen, "metadata replica started");
        let frames = self.tx.clone();
        compio::runtime::spawn(async move {
            while let Ok(frame) = inbound.recv().await {
                if frames.send(Input::Frame(frame)).await.is_err() {
                    return;
                }
            }
        })
        .detach();
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
        let mut waiters: BTreeMap<RequestNumber, (View, TxOneshot<CommitResult>)> = BTreeMap::new();
        while let Ok(input) = rx.recv().await {
            let effects = match input {
                Input::Tick => group.on_tick().await,
                Input::Frame(frame) => {
                    if frame.group != METADATA_GROUP {
                        continue; // partition groups are not built yet
                    }
                    group.on_message(frame.from, frame.message).await
                }
                Input::Submit(op, reply) => {
                    let view = group.group().replica().view();
                    match group.submit(op, now_us()).await {
                        Ok(Submit::Prepared { request, effects }) => {
                            waiters.insert(request, (view, reply));
                            Ok(effects)
                        }
                        Ok(Submit::Rejected(e)) => {
                            answer(reply, Err(e), node.metadata_commit());
                            continue;
                        }
                        Ok(Submit::NotPrimary { view }) => {
                            answer(reply, Err(MetadataError::NotPrimary { view: view.0 }), 0);
                            continue;
                        }
                        Ok(Submit::Busy) => {
                            answer(reply, Err(MetadataError::NotCommitted), 0);
                            continue;
                        }
                        Err(e) => Err(e),
                    }
                }
            };
            let effects = effects
                .unwrap_or_else(|e| fatal(&format!("the metadata replica's storage failed: {e}")));
            for effect in effects {
                match effect {
                    Effect::Send(envelope) => {
                        let frame = Frame {
                            cluster,
                            from: envelope.from,
                            group: METADATA_GROUP,
                            incarnation: 0,
                            message: envelope.message,
                        };
                        if let Err(e) = links.send(envelope.to, &frame) {
                            warn!(peer = envelope.to, "replica frame dropped: {e}");
                        }
                    }
                    Effect::Reply {
                        client,
                        request,
                        op,
                        ..
                    } if client == group.client() => {
                        if let Some((_, reply)) = waiters.remove(&request) {
                            let outcome = group
                                .outcome(op)
                                .cloned()
                                .unwrap_or(Err(MetadataError::NotCommitted));
                            answer(reply, outcome, op.0);
                        }
                    }
                    Effect::Reply { .. } => {}
                }
            }
            // The group's first primary creates the root user once it has
            // applied everything it holds (so it knows none exists).
            let replica = group.group().replica();
            let settled = replica.is_primary() && replica.commit_min() == replica.head();
            if settled && root.is_some() && group.state().users().next().is_none() {
                let user = root.take().expect("checked");
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
                info!(username = %user.username, "creating the cluster's root user");
                let (reply, _) = oneshot();
                if self.tx.try_send(Input::Submit(op, reply)).is_err() {
                    fatal("cannot queue the creation of the root user");
                }
            } else if settled && root.is_some() {
                root = None; // the cluster has its users already
            }
            // A primary that left its view answers what it had in flight:
            // those ops may still commit in the next view (57).
            let replica = group.group().replica();
            if !waiters.is_empty() && !replica.is_primary() {
                for (_, (_, reply)) in std::mem::take(&mut waiters) {
                    answer(reply, Err(MetadataError::NotCommitted), 0);
                }
            } else {
                let current = replica.view();
                let stale: Vec<RequestNumber> = waiters
                    .iter()
                    .filter(|(_, (view, _))| *view != current)
                    .map(|(request, _)| *request)
                    .collect();
                for request in stale {
                    if let Some((_, reply)) = waiters.remove(&request) {
                        answer(reply, Err(MetadataError::NotCommitted), 0);
                    }
                }
            }
        }
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
    async fn apply(&mut self, number: Op, op: &MetadataOp, outcome: &ApplyOutcome) {
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

    fn restored(&mut self, _state: &MetadataState) {
        // Checkpoints are off in cluster mode for now (`Limits` at boot),
        // so no replica takes one and none is ever installed.
        fatal("installing a metadata checkpoint into a running node is not built yet");
    }
}
