//! Cluster mode: this node's replica of each partition group it owns
//! (replication spec §2, §4), on the partition's owning shard. One task per
//! group owns its `ReplicatedPartition` and takes, in arrival order,
//! submissions from this node's sessions, frames from the peers (routed
//! here by shard 0, which reads the replica links) and a 10 ms tick.
//!
//! The group's primary prepares a submission and answers it once
//! committed and applied here. A replica that is not the primary forwards
//! the submission once to the primary of its view (`ForwardRequest` to
//! `view mod n`, spec §4.5) and answers its client when the primary's
//! `ForwardReply` says the op committed (this replica applies it with the
//! next commit it hears of: a read here right after may not see it yet, as
//! any read of a backup's applied state, spec §4.4).
//!
//! What the answer codes promise (replication spec §7.2; the SDK replays a
//! send on the same connection after either): 58 only for a submission
//! that provably never entered a pipeline or that the group's log provably
//! dropped, so a replay runs it once; 57 when it may still have committed,
//! and the session layer then answers every replay with that same 57
//! instead of running it again. A submission whose primary left its view
//! (or whose forward went unanswered) is in doubt: it waits until this
//! replica is normal in a later view and its log shows the op (it will
//! commit: the answer follows) or not (58), at most `DOUBT_MAX` (then 57).
//!
//! A replica given a checkpoint above its log (a wiped node, or one that
//! fell behind every peer's journal) refills the gap from its peers'
//! segments before it installs the checkpoint: `LogFetch` to one peer at a
//! time, `LogChunk` back with whole committed batches. Both are handled
//! beside the group's task, on the owning shard: the task waits in the
//! install while the chunks arrive, and a peer serves fetches whatever its
//! own group is doing (`log_fetch`).
//!
//! The journal of an incarnation lives in `prepares-<incarnation>/` in the
//! partition's directory; the incarnation is the partition's
//! `created_at_us`, carried by every frame so that frames of a deleted
//! partition never reach its successor.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use consensus::vsr::Limits;
use consensus::vsr::message::{Message, ReplicaId};
use consensus::{Op, RequestNumber, View};
use crossfire::mpsc::{Array, bounded_async};
use crossfire::oneshot::{TxOneshot, oneshot};
use crossfire::{AsyncRx, MAsyncTx};
use engine::cluster_partition::{
    APPEND_PREFIX, Applied, Command, Decoded, Fetched, ReplicatedPartition, decode, encode_command,
};
use engine::partition::{ConsumerKey, Partition};
use engine::replicated::{Effect, Fate as OwnFate, GroupError, Placement, Sync};
use protocol::ErrorCode;
use protocol::batch::BATCH_HEADER_SIZE;
use storage::superblock::Identity;
use storage::{Offset, RealStorage};
use tracing::{error, info, warn};

mod auto_commit;
mod log_fetch;
mod prepare_memo;
mod submissions;

use prepare_memo::PrepareMemo;

use log_fetch::Fetch;

use super::cluster_commit::{DOUBT_MAX, TICK};
use super::cluster_state::ClusterShared;

/// Inputs queued per group at most; a full queue answers 57.
const QUEUE_CAPACITY: usize = 1024;
/// Submissions found queued together that share one journal sync (group
/// commit), at most: a pipeline's depth, so a group of one (which commits
/// everything at each sync) never refuses one of them as busy.
const GATHER_MAX: usize = consensus::vsr::PIPELINE_DEPTH_DEFAULT;
/// How long a forwarded submission waits for the primary's answer before
/// it is in doubt.
const FORWARD_TIMEOUT: Duration = Duration::from_secs(5);
/// Provably never in a pipeline, or provably dropped by the group's log:
/// a replay runs it once.
const NOT_ACCEPTED: ErrorCode = ErrorCode::TransientNotAccepted;
/// It may have committed: never run again.
const UNKNOWN: ErrorCode = ErrorCode::TransientNotCommitted;
/// Committed ops between a partition group's checkpoints: the replica
/// keeps the ops above its checkpoint in memory, batches included.
const CHECKPOINT_INTERVAL: u64 = 256;
/// The partition journal's byte budget (replication spec §6.6): a group
/// also checkpoints once this many bytes of ops were applied since the
/// last checkpoint. The journal's pages are then reused while the kernel
/// still holds them, instead of new ones being allocated, copied into and
/// written back (`scripts/cluster_bench.sh --ab`, 1 MB batches: 256 ops
/// between checkpoints gave about half the throughput of 64; a 16 MiB
/// budget then did 10-20% better than 64 MiB on `replicated` topics).
const CHECKPOINT_BYTES: u64 = 16 << 20;
/// How often a primary proposes a purge the metadata committed and the
/// group has not carried out yet.
const PURGE_RETRY: Duration = Duration::from_secs(1);

/// What a submission came to.
#[derive(Debug)]
pub enum Outcome {
    /// Committed at `op` (the group's commit point was `commit` when it was
    /// answered) and applied here.
    Done {
        applied: Applied,
        op: Op,
        commit: Op,
    },
    /// Nothing was done, or nothing is known to be (57: retry).
    Refused(ErrorCode),
}

enum Input {
    Submit(Command, TxOneshot<Outcome>),
    Frame(ReplicaId, Message),
    Tick,
    /// Checkpoint at the applied op now (`request_checkpoint`).
    Checkpoint,
}

/// This shard's handle on one partition group's task; dropping it ends
/// the task.
pub struct PartitionReplica {
    tx: MAsyncTx<Array<Input>>,
    pub incarnation: u64,
    fetch: Rc<Fetch>,
    /// The highest purge generation the metadata committed for this
    /// partition; the group's primary proposes it until it is carried out.
    wanted_purge: Rc<Cell<u64>>,
    /// Raised when the handle drops (the partition was deleted or the
    /// shard stops): the tick ends, and so does the task once its queue
    /// is drained.
    stopped: Rc<Cell<bool>>,
    /// The view this node leads the group in, while normal (the task
    /// keeps it current).
    leading: Rc<Cell<Option<View>>>,
    /// The primary's auto-commits not yet applied, by consumer, with the
    /// view they were proposed in (see `auto_commit`).
    auto_commits: RefCell<HashMap<ConsumerKey, (View, Offset)>>,
}

impl Drop for PartitionReplica {
    fn drop(&mut self) {
        self.stopped.set(true);
    }
}

impl PartitionReplica {
    /// Opens the group of `partition` (namespace `ns`, incarnation
    /// `incarnation`) and starts its task on this shard.
    pub async fn start(
        shared: Arc<ClusterShared>,
        ns: u64,
        incarnation: u64,
        partition_dir: &Path,
        fsync: bool,
        partition: Rc<Partition<RealStorage>>,
        created: bool,
    ) -> Result<PartitionReplica, GroupError> {
        let dir = partition_dir.join(format!("prepares-{incarnation}"));
        let placement = Placement {
            identity: Identity {
                cluster: shared.cluster,
                replica: shared.replica,
                group: ns,
                incarnation,
            },
            replicas: shared.replicas,
            created_view: shared.created_view(incarnation),
            timing: shared.timing,
            limits: Limits {
                checkpoint_interval: CHECKPOINT_INTERVAL,
                checkpoint_bytes: CHECKPOINT_BYTES,
                ..Limits::default()
            },
            fsync,
        };
        // A nonce per group and boot, never zero.
        let nonce = (shared.nonce ^ ns.rotate_left(17) ^ incarnation) | 1;
        let fetch = Rc::new(Fetch::new(
            shared.clone(),
            ns,
            incarnation,
            partition.clone(),
        ));
        let mut group =
            ReplicatedPartition::open(RealStorage, &dir, placement, nonce, partition, created)
                .await?;
        group.set_log_source(fetch.clone().source());
        // Frames leave as the replica asks: a prepare before the primary's
        // own journal write.
        let outbox = shared.clone();
        let mut memo = PrepareMemo::default();
        group.set_outbox(Box::new(move |envelope| {
            memo.send(&outbox, ns, incarnation, envelope.to, envelope.message);
        }));
        let (tx, rx) = bounded_async(QUEUE_CAPACITY);
        let wanted_purge = Rc::new(Cell::new(0));
        let stopped = Rc::new(Cell::new(false));
        let ticks = tx.clone();
        let ticking = stopped.clone();
        // One tick queued at a time: a task busy in a long install does
        // not come back to a queue full of them.
        let tick_queued = Rc::new(Cell::new(false));
        let queued = tick_queued.clone();
        compio::runtime::spawn(async move {
            while !ticking.get() {
                compio::time::sleep(TICK).await;
                if !queued.get() && ticks.try_send(Input::Tick).is_ok() {
                    queued.set(true);
                }
            }
        })
        .detach();
        let leading = Rc::new(Cell::new(None));
        // A group of one that restarts with ops to commit again holds the
        // node's readiness until it has (`ClusterShared::booting`).
        let replica = group.group().replica();
        let boot_head =
            (shared.replicas == 1 && replica.commit_min() < replica.head()).then(|| replica.head());
        if boot_head.is_some() {
            shared.boot_started();
        }
        let task = Task {
            boot_head,
            leading: leading.clone(),
            shared,
            ns,
            incarnation,
            group,
            waiters: BTreeMap::new(),
            forwards: BTreeMap::new(),
            next_nonce: 1,
            remote: BTreeMap::new(),
            in_doubt: BTreeMap::new(),
            stopped: stopped.clone(),
            tick_queued,
            wanted_purge: wanted_purge.clone(),
            purge_proposed: None,
            last_prepare: PrepareMemo::default(),
            stashed: None,
        };
        compio::runtime::spawn(task.run(rx)).detach();
        Ok(PartitionReplica {
            tx,
            incarnation,
            fetch,
            wanted_purge,
            stopped,
            leading,
            auto_commits: RefCell::new(HashMap::new()),
        })
    }

    /// Submits a change; the answer comes once it is committed and applied
    /// here (or refused).
    pub async fn submit(&self, command: Command) -> Outcome {
        let (reply, rx) = oneshot();
        if let Err(e) = self.tx.try_send(Input::Submit(command, reply))
            && let Input::Submit(_, reply) = e.into_inner()
        {
            reply.send(Outcome::Refused(NOT_ACCEPTED));
        }
        rx.await.unwrap_or(Outcome::Refused(UNKNOWN))
    }

    /// The metadata committed purge number `generation`: the group's
    /// primary proposes it (again each second) until it is carried out.
    pub fn request_purge(&self, generation: u64) {
        self.wanted_purge
            .set(self.wanted_purge.get().max(generation));
    }

    /// Proposes a change without waiting for it (an offset write with
    /// `NoAck`).
    pub fn propose(&self, command: Command) {
        let (reply, _) = oneshot();
        let _ = self.tx.try_send(Input::Submit(command, reply));
    }

    /// Asks the group to checkpoint at its applied op now, so that
    /// retention may drop the log below it (the partition's
    /// `checkpointed_end` moves once the checkpoint is written).
    pub fn request_checkpoint(&self) {
        let _ = self.tx.try_send(Input::Checkpoint);
    }

    /// A frame of this group from a peer (frames of another incarnation
    /// were dropped by the caller).
    pub fn deliver(&self, from: ReplicaId, message: Message) {
        let message = match message {
            Message::LogFetch {
                nonce,
                from: at,
                until,
                generation,
                ..
            } => {
                return self
                    .fetch
                    .serve(from, nonce, Offset(at), Offset(until), generation);
            }
            Message::LogChunk {
                nonce,
                first,
                end,
                records,
                ..
            } => {
                let fetched = Fetched {
                    first: Offset(first),
                    end: Offset(end),
                    records,
                };
                return self.fetch.answered(from, nonce, fetched);
            }
            message => message,
        };
        match self.tx.try_send(Input::Frame(from, message)) {
            Ok(()) => self.fetch.dropping.set(false),
            // Once per run of drops: retransmission covers the loss.
            Err(_) if !self.fetch.dropping.replace(true) => {
                warn!(
                    ns = self.fetch.ns,
                    "a partition group's queue is full; frames dropped"
                );
            }
            Err(_) => {}
        }
    }
}

/// Where a forwarded submission's answer goes: the origin node and nonce,
/// with what was asked.
type Origin = (ReplicaId, u64);

/// When and where a submission was forwarded.
#[derive(Debug, Clone, Copy)]
struct Forwarded {
    view: View,
    sent: Instant,
    /// The op that carries it lies above this (every commit point only
    /// grows), so a log whose checkpoint is not above it would hold it.
    commit: Op,
}

/// Whom an in-doubt submission answers.
enum Doubted {
    Local(Command, TxOneshot<Outcome>),
    Remote(Origin),
}

struct Task {
    shared: Arc<ClusterShared>,
    ns: u64,
    incarnation: u64,
    group: ReplicatedPartition<RealStorage>,
    /// Submissions prepared here, by request number.
    waiters: BTreeMap<RequestNumber, (View, Command, TxOneshot<Outcome>)>,
    /// Submissions forwarded to the primary, by nonce: the view, when they
    /// were sent and this replica's commit point then.
    forwards: BTreeMap<u64, (Forwarded, Command, TxOneshot<Outcome>)>,
    next_nonce: u64,
    /// Primary: submissions forwarded by other nodes, by request number.
    remote: BTreeMap<RequestNumber, Origin>,
    /// Submissions prepared here whose primary left its view, waiting for
    /// their fate (see the module docs): the view they were prepared in
    /// and since when.
    in_doubt: BTreeMap<RequestNumber, (View, Instant, Doubted)>,
    stopped: Rc<Cell<bool>>,
    /// A tick waits in the queue (the ticker queues one at a time).
    tick_queued: Rc<Cell<bool>>,
    wanted_purge: Rc<Cell<u64>>,
    /// When this primary last proposed the wanted purge.
    purge_proposed: Option<Instant>,
    /// The last prepare encoded, to queue the same bytes to every backup.
    last_prepare: PrepareMemo,
    /// The view this node leads the group in, while normal.
    leading: Rc<Cell<Option<View>>>,
    /// A group of one's journal head at boot, until it is committed.
    boot_head: Option<Op>,
    /// An input taken from the queue while gathering submissions, to be
    /// handled next.
    stashed: Option<Input>,
}

impl Task {
    async fn run(mut self, rx: AsyncRx<Array<Input>>) {
        // The view and status last told to the other shards.
        let mut published = None;
        // A log that lost its unsynced tail below the checkpoint is
        // refilled from the peers before the group takes part (frames wait
        // in the queue meanwhile; the peers' log chunks bypass it).
        if self.group.has_boot_gap() {
            if let Err(e) = self.group.refill_boot_gap().await {
                error!(ns = self.ns, "this partition's replica stops serving: {e}");
                if self.boot_head.take().is_some() {
                    self.shared.boot_done();
                }
                self.shared.forget_partition(self.ns);
                self.refuse_all();
                return;
            }
            info!(
                ns = self.ns,
                "the partition log is refilled to its checkpoint"
            );
        }
        let replica = self.group.group().replica();
        let normal = replica.status() == consensus::vsr::Status::Normal;
        self.leading
            .set((normal && replica.is_primary()).then_some(replica.view()));
        loop {
            // The next input, or the checkpoint written beside the group
            // being done (its compaction then runs here, in line).
            let next = if let Some(input) = self.stashed.take() {
                Some(Ok(input))
            } else {
                let group = self.group.group_mut();
                let mut recv = std::pin::pin!(rx.recv());
                std::future::poll_fn(|cx| {
                    if group.poll_checkpoint(cx).is_ready() {
                        return Poll::Ready(None);
                    }
                    recv.as_mut().poll(cx).map(Some)
                })
                .await
            };
            if self.stopped.get() {
                break;
            }
            let effects = match next {
                None => self
                    .group
                    .group_mut()
                    .finish_checkpoint()
                    .await
                    .map(|()| Vec::new()),
                Some(Err(_)) => break,
                Some(Ok(Input::Tick)) => {
                    self.tick_queued.set(false);
                    self.expire_forwards();
                    match self.propose_wanted_purge().await {
                        Ok(mut effects) => self.group.on_tick().await.map(|more| {
                            effects.extend(more);
                            effects
                        }),
                        Err(e) => Err(e),
                    }
                }
                Some(Ok(Input::Checkpoint)) => self.group.group_mut().checkpoint_now().await,
                Some(Ok(Input::Frame(from, message))) => self.on_message(from, message).await,
                Some(Ok(Input::Submit(command, reply))) => {
                    self.on_submits(command, reply, &rx).await
                }
            };
            match effects {
                Ok(effects) => self.perform(effects),
                // The partition is being deleted: its files go with it.
                Err(_) if self.stopped.get() => break,
                Err(GroupError::Storage(e)) => {
                    // Fail-stop (replication spec §6.7).
                    error!(ns = self.ns, "a partition replica's storage failed: {e}");
                    std::process::exit(70);
                }
                Err(e) => {
                    error!(ns = self.ns, "this partition's replica stops serving: {e}");
                    break;
                }
            }
            self.settle();
            let replica = self.group.group().replica();
            if let Some(head) = self.boot_head
                && replica.commit_min() >= head
            {
                self.boot_head = None;
                self.shared.boot_done();
            }
            let seen = (
                replica.view(),
                replica.status() == consensus::vsr::Status::Normal,
            );
            if published != Some(seen) {
                self.shared.set_partition_view(self.ns, seen.0, seen.1);
                published = Some(seen);
            }
            self.leading
                .set((seen.1 && replica.is_primary()).then_some(seen.0));
        }
        self.leading.set(None);
        if self.boot_head.take().is_some() {
            self.shared.boot_done();
        }
        self.shared.forget_partition(self.ns);
        self.refuse_all();
        info!(ns = self.ns, "partition replica stopped");
    }

    /// Queues `message` to `to` (see `PrepareMemo::send`).
    fn send(&mut self, to: ReplicaId, message: Message) {
        self.last_prepare
            .send(&self.shared, self.ns, self.incarnation, to, message);
    }

    /// Primary: proposes the purge the metadata committed, if the group
    /// has not carried it out (at most once per `PURGE_RETRY`).
    async fn propose_wanted_purge(&mut self) -> Result<Vec<Effect>, GroupError> {
        let generation = self.wanted_purge.get();
        let replica = self.group.group().replica();
        let due = self
            .purge_proposed
            .is_none_or(|at| at.elapsed() >= PURGE_RETRY);
        if generation <= self.group.partition().purge_generation()
            || !replica.is_primary()
            || replica.status() != consensus::vsr::Status::Normal
            || !due
        {
            return Ok(Vec::new());
        }
        self.purge_proposed = Some(Instant::now());
        let (reply, _) = oneshot();
        self.on_submit(Command::Purge { generation }, reply, Sync::Now)
            .await
    }

    async fn on_message(
        &mut self,
        from: ReplicaId,
        message: Message,
    ) -> Result<Vec<Effect>, GroupError> {
        match message {
            Message::ForwardRequest { nonce, body, .. } => {
                self.on_forwarded(from, nonce, body).await
            }
            Message::ForwardReply {
                nonce, op, code, ..
            } => {
                if let Some((_, command, reply)) = self.forwards.remove(&nonce) {
                    if code == 0 {
                        let commit = self.group.group().replica().commit_max().max(op);
                        reply.send(self.forwarded_outcome(op, commit, &command));
                    } else {
                        let code = ErrorCode::from_u32(code).unwrap_or(ErrorCode::Error);
                        reply.send(Outcome::Refused(code));
                    }
                }
                Ok(Vec::new())
            }
            message => self.group.on_message(from, message).await,
        }
    }

    fn perform(&mut self, effects: Vec<Effect>) {
        let client = self.group.client();
        for effect in effects {
            match effect {
                Effect::Send(envelope) => self.send(envelope.to, envelope.message),
                Effect::Reply {
                    client: to,
                    request,
                    op,
                    result,
                } if to == client => {
                    let commit = self.group.group().replica().commit_max();
                    let local = self.waiters.remove(&request).map(|(_, c, r)| (c, r));
                    let remote = self.remote.remove(&request);
                    let doubted = self.in_doubt.remove(&request).map(|(_, _, d)| d);
                    let answer = match (local, remote, doubted) {
                        (Some((command, reply)), _, _)
                        | (_, _, Some(Doubted::Local(command, reply))) => {
                            Some(Doubted::Local(command, reply))
                        }
                        (_, Some(origin), _) | (_, _, Some(Doubted::Remote(origin))) => {
                            Some(Doubted::Remote(origin))
                        }
                        _ => None,
                    };
                    match answer {
                        Some(Doubted::Local(command, reply)) => {
                            let outcome = match Applied::decode(&command, &result) {
                                Some(applied) => Outcome::Done {
                                    applied,
                                    op,
                                    commit,
                                },
                                None => Outcome::Refused(UNKNOWN),
                            };
                            reply.send(outcome);
                        }
                        Some(Doubted::Remote((origin, nonce))) => {
                            let code = match result.first_chunk::<4>() {
                                Some(code) => u32::from_le_bytes(*code),
                                None => UNKNOWN as u32,
                            };
                            let view = self.group.group().replica().view();
                            self.send(origin, forward_reply(view, nonce, op, code));
                        }
                        None => {}
                    }
                }
                Effect::Reply { .. } => {}
            }
        }
    }

    /// After every input: what a primary that left its view had in flight
    /// is in doubt; in-doubt submissions whose fate is known are answered.
    fn settle(&mut self) {
        let replica = self.group.group().replica();
        let current = replica.view();
        let primary = replica.is_primary();
        let now = Instant::now();
        let stale: Vec<RequestNumber> = self
            .waiters
            .iter()
            .filter(|(_, (view, _, _))| !primary || *view != current)
            .map(|(request, _)| *request)
            .collect();
        for request in stale {
            if let Some((view, command, reply)) = self.waiters.remove(&request) {
                let doubted = Doubted::Local(command, reply);
                self.in_doubt.insert(request, (view, now, doubted));
            }
        }
        if !primary {
            for (request, origin) in std::mem::take(&mut self.remote) {
                // Prepared in a view before this one at the latest.
                let view = View(current.0.saturating_sub(1));
                self.in_doubt
                    .insert(request, (view, now, Doubted::Remote(origin)));
            }
        }
        self.resolve_doubts(now);
    }

    /// Answers in-doubt submissions whose fate this replica can tell: in a
    /// later view, normal, with every entry above its commit point at hand,
    /// a request of this node's client missing from them was dropped (58;
    /// one that committed was answered when applied). Past `DOUBT_MAX`, or
    /// after a state transfer skipped ops this replica never applied, 57.
    fn resolve_doubts(&mut self, now: Instant) {
        if self.in_doubt.is_empty() {
            return;
        }
        let group = self.group.group();
        let current = group.replica().view();
        let mut answers = Vec::new();
        for (&request, (view, since, _)) in &self.in_doubt {
            let code = match group.own_fate(request, *view) {
                OwnFate::Dropped => NOT_ACCEPTED,
                OwnFate::Skipped => UNKNOWN,
                OwnFate::Pending | OwnFate::Unknown if now.duration_since(*since) >= DOUBT_MAX => {
                    UNKNOWN
                }
                OwnFate::Pending | OwnFate::Unknown => continue,
            };
            answers.push((request, code));
        }
        for (request, code) in answers {
            let Some((_, _, doubted)) = self.in_doubt.remove(&request) else {
                continue;
            };
            match doubted {
                Doubted::Local(_, reply) => reply.send(Outcome::Refused(code)),
                Doubted::Remote((origin, nonce)) => {
                    self.send(origin, forward_reply(current, nonce, Op::ZERO, code as u32));
                }
            }
        }
    }

    /// The answer to a forwarded submission the primary committed at `op`
    /// (an append's base offset from the entry when this replica holds it;
    /// the SDK does not read it).
    fn forwarded_outcome(&self, op: Op, commit: Op, command: &Command) -> Outcome {
        let replica = self.group.group().replica();
        let applied = match command {
            Command::Append { .. } => {
                // The base offset is in the committed entry, when this
                // replica still holds it (not yet behind a checkpoint).
                match replica.entry(op).map(|entry| decode(&entry.body)) {
                    Some(Ok(Decoded::Append { base_offset, .. })) => {
                        Applied::Appended { base_offset }
                    }
                    _ => Applied::Appended {
                        base_offset: Offset::ZERO,
                    },
                }
            }
            Command::StoreOffset { consumer, offset } => {
                let partition = self.group.partition();
                Applied::Stored {
                    caught_up: partition.stored_offset(*consumer) == Some(*offset)
                        && !partition.in_flight(*consumer),
                }
            }
            Command::DeleteOffset { .. } => Applied::Deleted,
            Command::Purge { .. } => Applied::Purged,
        };
        Outcome::Done {
            applied,
            op,
            commit,
        }
    }

    /// Forwarded submissions the primary did not answer in
    /// `FORWARD_TIMEOUT`, or whose primary was replaced since, are in doubt
    /// until this replica, normal in a later view with every entry since
    /// its checkpoint at hand, finds the op in its log (committed: done;
    /// not yet: wait) or not (58); past `DOUBT_MAX`, 57.
    fn expire_forwards(&mut self) {
        let now = Instant::now();
        let replica = self.group.group().replica();
        let current = replica.view();
        let normal = replica.status() == consensus::vsr::Status::Normal;
        let mut answers = Vec::new();
        for (&nonce, (forwarded, command, _)) in &self.forwards {
            let sent = &forwarded.sent;
            let overdue = now.duration_since(*sent) >= FORWARD_TIMEOUT || forwarded.view < current;
            if !overdue {
                continue;
            }
            let fate = if normal && forwarded.view < current {
                find_in_log(replica, command, forwarded.commit)
            } else {
                Fate::Unknown
            };
            let outcome = match fate {
                Fate::Committed(op) => self.forwarded_outcome(op, replica.commit_max(), command),
                Fate::Dropped => Outcome::Refused(NOT_ACCEPTED),
                Fate::Pending => continue,
                Fate::Unknown if now.duration_since(*sent) >= DOUBT_MAX => {
                    Outcome::Refused(UNKNOWN)
                }
                Fate::Unknown => continue,
            };
            answers.push((nonce, outcome));
        }
        for (nonce, outcome) in answers {
            if let Some((_, _, reply)) = self.forwards.remove(&nonce) {
                reply.send(outcome);
            }
        }
    }

    /// The group stopped: everything in flight may have committed (57).
    fn refuse_all(&mut self) {
        let refused = || Outcome::Refused(UNKNOWN);
        for (_, (_, _, reply)) in std::mem::take(&mut self.waiters) {
            reply.send(refused());
        }
        for (_, (_, _, reply)) in std::mem::take(&mut self.forwards) {
            reply.send(refused());
        }
        for (_, (_, _, doubted)) in std::mem::take(&mut self.in_doubt) {
            if let Doubted::Local(_, reply) = doubted {
                reply.send(refused());
            }
        }
    }
}

/// What a replica's log says of a forwarded submission.
enum Fate {
    /// An entry with its content committed at this op.
    Committed(Op),
    /// An entry with its content waits above the commit point.
    Pending,
    /// The log since the checkpoint is whole and holds no such entry.
    Dropped,
    /// The log cannot tell (an entry missing here, or ops below the
    /// checkpoint that it no longer holds).
    Unknown,
}

/// Looks for the submission by content in the replica's log since its
/// checkpoint: a forwarded op was prepared under the primary's client, so
/// its request number is not known here. (An append's batch is unique in
/// practice: its message ids; an identical offset op means the same.)
fn find_in_log(replica: &consensus::vsr::VsrReplica, command: &Command, floor: Op) -> Fate {
    let wanted: Vec<u8> = match command {
        Command::Append { buffer, range } => match buffer.get(range.clone()) {
            Some(record) => record.to_vec(),
            None => return Fate::Unknown,
        },
        other => encode_command(other).expect("not an append"),
    };
    // An append's batch header is stamped by the primary (offset, time,
    // batch checksum), so its messages are what identifies it.
    let matches = |body: &[u8]| match command {
        Command::Append { .. } => {
            body.first() == Some(&1)
                && wanted.len() > BATCH_HEADER_SIZE
                && body.get(APPEND_PREFIX + BATCH_HEADER_SIZE..) == wanted.get(BATCH_HEADER_SIZE..)
        }
        _ => body == &wanted[..],
    };
    let start = replica.checkpoint_op().0.max(1);
    for op in start..=replica.head().0 {
        let Some(entry) = replica.entry(Op(op)) else {
            return Fate::Unknown;
        };
        if matches(&entry.body) {
            return if Op(op) <= replica.commit_min() {
                Fate::Committed(Op(op))
            } else {
                Fate::Pending
            };
        }
    }
    // The op could lie below the checkpoint, where the log no longer looks.
    if replica.checkpoint_op() > floor {
        return Fate::Unknown;
    }
    Fate::Dropped
}

fn forward_reply(view: View, nonce: u64, op: Op, code: u32) -> Message {
    Message::ForwardReply {
        view,
        nonce,
        op,
        code,
    }
}

#[cfg(test)]
mod tests {
    use consensus::vsr::message::Request;
    use consensus::vsr::{Timing, VsrReplica};
    use consensus::{ClientId, RequestNumber};
    use engine::cluster_partition::encode_append;
    use protocol::batch::{build_record, stamp_record};

    use super::*;

    fn append(record: &[u8]) -> Command {
        Command::Append {
            buffer: record.to_vec(),
            range: 0..record.len(),
        }
    }

    /// A forwarded append is found by its messages although the primary
    /// stamped its header (offset, time, checksum) before proposing it.
    #[test]
    fn given_a_stamped_append_in_the_log_when_judging_its_forward_should_find_it() {
        let record = build_record(9, &[(1, b"one", b""), (2, b"two", b"")]);
        let mut body = encode_append(Offset(40), &record);
        stamp_record(&mut body[APPEND_PREFIX..], 3, 40, 1_000);
        assert_ne!(&body[APPEND_PREFIX..], &record[..], "the header changed");
        let mut replica = VsrReplica::genesis(0, 1, Timing::default(), 1);
        let request = Request {
            client: ClientId(5),
            number: RequestNumber(1),
            body: body.into(),
        };
        replica.on_request(request, 1_000).expect("admitted");
        let found = find_in_log(&replica, &append(&record), Op(0));
        assert!(
            matches!(found, Fate::Committed(_) | Fate::Pending),
            "found in the log"
        );
        let other = build_record(9, &[(1, b"one", b""), (3, b"six", b"")]);
        assert!(
            matches!(find_in_log(&replica, &append(&other), Op(0)), Fate::Dropped),
            "another batch is not taken for it"
        );
    }
}
