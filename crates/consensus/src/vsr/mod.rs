//! Viewstamped Replication of one group of `n` replicas (replication spec
//! §4-§6), sans-IO: messages, ticks and client requests in; `Action`s out,
//! which the caller performs in order (a crash may fall between any two).
//!
//! Normal operation: the primary of view `v` (replica `v mod n`) appends a
//! request to its log, journals and syncs it, and sends a Prepare to every
//! backup; a backup that journaled and synced it answers PrepareOk; an op
//! commits once a replication quorum holds it and every op below it
//! committed; everyone applies committed ops in order. Commits double as
//! heartbeats. View change: a backup that hears nothing from its primary
//! for `heartbeat_timeout` votes StartViewChange; on a view-change quorum
//! of votes each replica persists the view and sends DoViewChange with its
//! log suffix to the new primary, which takes the log of the highest
//! `log_view` (then the highest head), journals it, persists, and sends
//! StartView. A restarted replica recovers quorum-invisible: it probes with
//! a fresh nonce and adopts the current view from its primary, never
//! resuming as primary itself.
//!
//! Invariants (asserted): commit_min ≤ commit_max ≤ head; log_view ≤ view;
//! view and log_view never go back; entries chain by parent identity; an op
//! is acknowledged (PrepareOk) only after the Sync that covers it.

pub mod message;
#[cfg(feature = "planted-bugs")]
pub mod planted;
#[cfg(test)]
mod tests;

/// Whether a planted bug is active (always false without the feature).
#[cfg(feature = "planted-bugs")]
fn planted(bug: planted::Bug) -> bool {
    planted::is(bug)
}

#[cfg(not(feature = "planted-bugs"))]
#[inline(always)]
fn planted(_: PlantedBug) -> bool {
    false
}

#[cfg(feature = "planted-bugs")]
use planted::Bug as PlantedBug;

/// The planted bugs' names, when they are not compiled in.
#[cfg(not(feature = "planted-bugs"))]
#[derive(Clone, Copy)]
enum PlantedBug {
    CommitBeforeQuorum,
    AckBeforeFsync,
    DvcIgnoresLogView,
    NackCorruptEntry,
}

use std::collections::{BTreeMap, BTreeSet};

use crate::types::{ClientId, Op, Quorums, RequestNumber, View};
use message::{Entry, Envelope, Message, ReplicaId, Snapshot};

/// A DoViewChange carries at most this many entries (replication spec
/// §5.4), so no pipeline may be deeper than one less.
pub const DVC_ENTRIES_MAX: usize = 128;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Normal,
    ViewChange,
    /// Restarted: quorum-invisible until it adopts a view from its primary.
    Recovering,
}

/// Timer lengths, in ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    pub commit_interval: u32,
    pub heartbeat_timeout: u32,
    pub view_change_timeout: u32,
    pub retransmit_interval: u32,
}

impl Default for Timing {
    /// The spec's defaults at a 10 ms tick: commit 500 ms, heartbeat 5 s,
    /// view-change status 5 s, prepare retransmit 250 ms.
    fn default() -> Self {
        Timing {
            commit_interval: 50,
            heartbeat_timeout: 500,
            view_change_timeout: 500,
            retransmit_interval: 25,
        }
    }
}

/// How much a replica keeps and moves at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Committed ops between checkpoints: once this many ops above the last
    /// checkpoint are applied, the state is snapshotted at the commit point
    /// and the journal below it is dropped (replication spec §6.6).
    pub checkpoint_interval: u64,
    /// The journal's byte budget: a checkpoint is also due once the bodies
    /// of the ops applied since the last one reach this many bytes, so a
    /// group of large ops (megabyte batches) keeps a small journal
    /// (replication spec §6.6). `u64::MAX`: ops alone decide.
    pub checkpoint_bytes: u64,
    /// State bytes per StateChunk (replication spec §6.5).
    pub state_chunk_max: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            checkpoint_interval: 1024 - 64,
            checkpoint_bytes: u64::MAX,
            state_chunk_max: 1 << 20,
        }
    }
}

/// What a replica asks its caller to do, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Send(Envelope),
    /// Write `entry` at its op, replacing whatever the journal holds there.
    Journal(Entry),
    /// Cut every journaled entry above this op.
    TruncateAfter(Op),
    /// Make every journal write so far durable before the next action.
    Sync,
    /// Persist the view and log view durably before the next action.
    Superblock {
        view: View,
        log_view: View,
    },
    /// Persist whether this replica's head is uncertain, durably, before
    /// the next action: the journal it is about to rewrite may be the only
    /// evidence of the damage, and a restart must not find it certain.
    Uncertain(bool),
    /// Apply this committed entry to the state machine (in op order).
    Apply(Entry),
    /// Answer the client: its request committed at `op`.
    Reply {
        client: ClientId,
        request: RequestNumber,
        op: Op,
    },
    /// Checkpoint: fill in the state machine's bytes as of the snapshot's
    /// op (every Apply before this action ran, none after it), persist the
    /// snapshot durably, drop the journal through its op, then hand it back
    /// with [`VsrReplica::checkpointed`].
    Checkpoint(Snapshot),
    /// State transfer: replace the state machine with the snapshot's state
    /// and the whole journal with nothing above its op, durably, before the
    /// next action.
    InstallSnapshot(Snapshot),
}

/// What survived a restart: the superblock, the latest checkpoint and the
/// journal above it (the op after the checkpoint's first; op 1 first
/// without one).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Durable {
    pub view: View,
    pub log_view: View,
    pub snapshot: Option<Snapshot>,
    pub entries: Vec<Entry>,
    /// The head was marked uncertain and not yet repaired.
    pub uncertain: bool,
    /// The data is gone (a wiped replica restarting with nothing): it
    /// forgot its view and what it acknowledged.
    pub blank: bool,
}

/// Why a request was not admitted (nothing was prepared: safe to retry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotAdmitted {
    #[error("not the primary of a normal view; try the primary of view {view:?}")]
    NotPrimary { view: View },
    #[error("the pipeline is full")]
    Busy,
}

/// A DoViewChange received by the primary-elect.
#[derive(Debug, Clone)]
struct Dvc {
    log_view: View,
    head: Op,
    commit: Op,
    entries: Vec<Entry>,
    /// Sent with an uncertain head (replication spec §5.5).
    uncertain: bool,
}

/// Ops a primary keeps in its pipeline (prepared, not yet committed).
pub const PIPELINE_DEPTH_DEFAULT: usize = 32;

pub struct VsrReplica {
    id: ReplicaId,
    n: u8,
    quorums: Quorums,
    timing: Timing,
    pipeline_max: usize,
    status: Status,
    view: View,
    log_view: View,
    limits: Limits,
    /// `log[i]` holds op `log_start + i`; all of it is durable. Ops below
    /// `log_start` are in the checkpoint, whose op `log_start` is.
    log: Vec<Entry>,
    log_start: Op,
    /// The latest checkpoint (taken here or installed by state transfer).
    snapshot: Option<Snapshot>,
    /// A checkpoint asked of the caller and not yet handed back.
    checkpoint_pending: Option<Op>,
    /// Body bytes of the ops applied since the last checkpoint was asked
    /// for (or since boot).
    applied_bytes: u64,
    /// A state transfer under way (state_transfer.rs).
    transfer: Option<state_transfer::Transfer>,
    commit_min: Op,
    commit_max: Op,
    /// Primary: who acknowledged each uncommitted op.
    acks: BTreeMap<Op, u8>,
    /// Primary: the first op prepared by `prepare_request` whose journal
    /// sync (`sync_prepared`) has not been asked for yet. While set, no
    /// other input may reach the replica.
    unsynced: Option<Op>,
    svc_votes: BTreeMap<View, u8>,
    dvcs: BTreeMap<ReplicaId, Dvc>,
    dvc_sent: bool,
    /// Recovering: this boot's probe nonce.
    nonce: u64,
    /// The replicated client table: latest committed request and its op.
    clients: BTreeMap<ClientId, (RequestNumber, Op)>,
    /// Primary: requests in the pipeline.
    in_pipeline: BTreeSet<(ClientId, RequestNumber)>,
    ticks_since_heartbeat: u32,
    ticks_since_commit_sent: u32,
    ticks_in_view_change: u32,
    ticks_since_retransmit: u32,
    /// Primary: ticks the oldest uncommitted prepare has waited.
    ticks_oldest_uncommitted: u32,
    /// Recovering: probes sent without an answer.
    probes_unanswered: u32,
    /// The last op asked for by the outstanding repair request.
    repair_until: Op,
    /// The op the current repair works towards (a transfer resumes to it).
    repair_target: Op,
    /// The journal held a damaged entry at boot: until a view's log is
    /// adopted and repaired, this replica never votes.
    uncertain: bool,
    /// Whether the superblock records `uncertain` as true.
    uncertain_persisted: bool,
    /// Booted with no data (until it adopts a confirmed view).
    blank: bool,
    /// Blank: the views other replicas reported to this boot's probes.
    view_reports: BTreeMap<ReplicaId, (View, bool)>,
    /// Whom we asked for repair, in which of its views: only its answers
    /// are taken (a late answer from an older view's primary would graft
    /// another log onto ours).
    repair_source: Option<(ReplicaId, View)>,
    ticks_since_repair: u32,
}

/// Entries one repair request asks for at most (`cluster.repair_chunk_max`).
pub const REPAIR_CHUNK_MAX: u64 = 64;

/// Unanswered probes after which a recovering replica takes the whole
/// group to have restarted and starts a view change on its own log
/// (`cluster.view_probe_attempts_max`, replication spec §6.3).
pub const PROBE_ATTEMPTS_MAX: u32 = 5;

mod normal;
mod state_transfer;
mod view_change;

impl VsrReplica {
    /// Boots replica `id` of `n` from what survived. A group of one has
    /// committed its whole journal and serves at once; a member of a larger
    /// group recovers quorum-invisible with this boot's `nonce` (non-zero,
    /// fresh per boot) and waits for a StartView.
    pub fn boot(id: ReplicaId, n: u8, timing: Timing, mut durable: Durable, nonce: u64) -> Self {
        assert!(id < n, "replica in the roster");
        assert!(nonce != 0, "a boot nonce is never zero");
        assert!(durable.log_view <= durable.view, "log_view <= view");
        // A damaged entry (bad identity or a broken chain) may be one this
        // replica acknowledged: keep the sound prefix and mark the head
        // uncertain, so the replica never votes on the shortened log
        // (replication spec §6.1, §6.3).
        assert!(
            !durable.blank || (durable.entries.is_empty() && durable.snapshot.is_none()),
            "a blank replica has no journal"
        );
        // The log starts with the checkpoint's op (kept whole) or at op 1.
        let (mut log, log_start) = match &durable.snapshot {
            Some(snapshot) => {
                assert!(snapshot.entry.is_sound(), "a checkpoint is written whole");
                (vec![snapshot.entry.clone()], snapshot.op())
            }
            None => (Vec::new(), Op(1)),
        };
        log.append(&mut durable.entries);
        let sound = sound_prefix(log_start, &log);
        let damaged = sound < log.len() && !planted(PlantedBug::NackCorruptEntry);
        let single = n == 1;
        // A lone replica booting blank is a new group of one (genesis,
        // replication spec §6.2): nobody else could hold its history.
        if single && durable.blank {
            durable.blank = false;
        }
        let uncertain = damaged || durable.uncertain || durable.blank;
        let uncertain_persisted = durable.uncertain;
        log.truncate(sound);
        check_chain(log_start, &log);
        let head = Op(log_start.0 - 1 + log.len() as u64);
        // The checkpoint's state is the state machine's at boot.
        let applied = durable.snapshot.as_ref().map_or(Op::ZERO, Snapshot::op);
        let clients = durable
            .snapshot
            .as_ref()
            .map(|s| {
                s.clients
                    .iter()
                    .map(|&(client, request, op)| (client, (request, op)))
                    .collect()
            })
            .unwrap_or_default();
        let replica = VsrReplica {
            id,
            n,
            quorums: Quorums::of(n),
            timing,
            pipeline_max: PIPELINE_DEPTH_DEFAULT,
            status: if single {
                Status::Normal
            } else {
                Status::Recovering
            },
            view: durable.view,
            log_view: durable.log_view,
            limits: Limits::default(),
            log,
            log_start,
            snapshot: durable.snapshot,
            checkpoint_pending: None,
            applied_bytes: 0,
            transfer: None,
            commit_min: applied,
            commit_max: if single { head } else { applied },
            acks: BTreeMap::new(),
            unsynced: None,
            svc_votes: BTreeMap::new(),
            dvcs: BTreeMap::new(),
            dvc_sent: false,
            nonce,
            clients,
            in_pipeline: BTreeSet::new(),
            ticks_since_heartbeat: 0,
            ticks_since_commit_sent: 0,
            ticks_in_view_change: 0,
            ticks_since_retransmit: 0,
            ticks_oldest_uncommitted: 0,
            probes_unanswered: 0,
            repair_until: Op::ZERO,
            repair_target: Op::ZERO,
            repair_source: None,
            uncertain,
            uncertain_persisted,
            blank: durable.blank,
            view_reports: BTreeMap::new(),
            ticks_since_repair: 0,
        };
        replica.check_invariants();
        replica
    }

    /// The first boot of a new group: every replica is blank and starts
    /// normal in view 0 (replication spec §6.2, genesis).
    pub fn genesis(id: ReplicaId, n: u8, timing: Timing, nonce: u64) -> Self {
        Self::create_group(id, n, timing, View(0), nonce)
    }

    /// A partition incarnation materialized as its create op commits, by a
    /// replica that never held it: normal at `view = log_view =
    /// created_view` (the metadata view whose primary admitted the create,
    /// from the committed create), so the group's first primary is that
    /// metadata primary (replication spec §2). Only a replica that has no
    /// trace of the group and has not restarted since that view began may
    /// start so; any other boots it with [`VsrReplica::boot_group`].
    pub fn create_group(
        id: ReplicaId,
        n: u8,
        timing: Timing,
        created_view: View,
        nonce: u64,
    ) -> Self {
        let mut replica = Self::boot_group(id, n, timing, Durable::default(), nonce, created_view);
        replica.status = Status::Normal;
        assert_eq!(replica.view, created_view, "starts in its created view");
        assert_eq!(
            replica.log_view, created_view,
            "with that view's (empty) log"
        );
        replica
    }

    /// Boots a group whose first view is `created_view` from what survived
    /// (the `created_view` floor, replication spec §5.6): a superblock never
    /// written (log view 0) reads as `view = log_view = created_view`, the
    /// view the group started in; a written one never lies below it (the
    /// caller refuses such a directory before booting).
    pub fn boot_group(
        id: ReplicaId,
        n: u8,
        timing: Timing,
        mut durable: Durable,
        nonce: u64,
        created_view: View,
    ) -> Self {
        if durable.log_view == View(0) {
            durable.log_view = created_view;
            durable.view = durable.view.max(created_view);
        }
        assert!(
            durable.log_view >= created_view,
            "a group's log view is never below its created view"
        );
        Self::boot(id, n, timing, durable, nonce)
    }

    /// Booted with no data and not yet given a view's log (quorum-invisible).
    pub fn is_blank(&self) -> bool {
        self.blank
    }

    /// Sets how often to checkpoint and how much state one chunk moves.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        assert!(limits.checkpoint_interval > 0, "checkpoints are spaced");
        assert!(limits.state_chunk_max > 0, "chunks carry bytes");
        self.limits = limits;
        self
    }

    pub fn id(&self) -> ReplicaId {
        self.id
    }

    /// The op of the latest checkpoint (0 without one).
    pub fn checkpoint_op(&self) -> Op {
        self.snapshot.as_ref().map_or(Op::ZERO, Snapshot::op)
    }

    /// Whether a state transfer is under way.
    pub fn is_transferring(&self) -> bool {
        self.transfer.is_some()
    }

    /// Whether the head is uncertain (damage found at boot, not yet
    /// repaired from a view's log).
    pub fn is_uncertain(&self) -> bool {
        self.uncertain
    }

    pub fn status(&self) -> Status {
        self.status
    }

    pub fn view(&self) -> View {
        self.view
    }

    pub fn log_view(&self) -> View {
        self.log_view
    }

    pub fn head(&self) -> Op {
        Op(self.log_start.0 - 1 + self.log.len() as u64)
    }

    pub fn commit_max(&self) -> Op {
        self.commit_max
    }

    /// Highest op applied here.
    pub fn commit_min(&self) -> Op {
        self.commit_min
    }

    /// The latest request of `client` this replica applied (its client
    /// table), with the op it committed at.
    pub fn committed_request(&self, client: ClientId) -> Option<(RequestNumber, Op)> {
        self.clients.get(&client).copied()
    }

    /// The entry at `op`, if the log holds it.
    pub fn entry(&self, op: Op) -> Option<&Entry> {
        let index = usize::try_from(op.0.checked_sub(self.log_start.0)?).ok()?;
        self.log.get(index)
    }

    /// How many log entries lie at or below `op` (ops from `log_start`).
    fn entries_through(&self, op: Op) -> usize {
        assert!(
            op.0 + 1 >= self.log_start.0,
            "the checkpoint's op is never cut"
        );
        usize::try_from(op.0 + 1 - self.log_start.0)
            .expect("fits")
            .min(self.log.len())
    }

    /// Cuts the in-memory log above `op` (the caller journals the cut).
    fn cut_log_after(&mut self, op: Op) {
        assert!(op >= self.commit_min, "applied ops are never cut");
        let before = self.head();
        let keep = self.entries_through(op);
        self.log.truncate(keep);
        assert_eq!(self.head(), before.min(op), "nothing above op is left");
    }

    pub fn primary_of(&self, view: View) -> ReplicaId {
        (view.0 % u32::from(self.n)) as ReplicaId
    }

    pub fn is_primary(&self) -> bool {
        self.status == Status::Normal && self.primary_of(self.view) == self.id
    }

    /// The identity of the newest entry (0 for an empty log).
    fn head_identity(&self) -> u64 {
        self.log.last().map_or(0, |e| e.identity)
    }

    /// Persists the view and log view. An uncertain (or blank) replica
    /// persists its uncertainty first: its first durable write must not
    /// leave a state that a restart would read as certain.
    fn persist_superblock(&mut self, actions: &mut Vec<Action>) {
        self.persist_uncertainty(actions);
        actions.push(Action::Superblock {
            view: self.view,
            log_view: self.log_view,
        });
    }

    /// Before an uncertain replica rewrites its journal, the uncertainty is
    /// made durable (once).
    fn persist_uncertainty(&mut self, actions: &mut Vec<Action>) {
        if self.uncertain && !self.uncertain_persisted {
            actions.push(Action::Uncertain(true));
            self.uncertain_persisted = true;
        }
    }

    fn send(&self, actions: &mut Vec<Action>, to: ReplicaId, message: Message) {
        assert!(to != self.id, "a replica never sends to itself");
        actions.push(Action::Send(Envelope {
            from: self.id,
            to,
            message,
        }));
    }

    fn broadcast(&self, actions: &mut Vec<Action>, message: &Message) {
        for to in (0..self.n).filter(|&r| r != self.id) {
            self.send(actions, to, message.clone());
        }
    }

    fn others(&self) -> impl Iterator<Item = ReplicaId> + '_ {
        (0..self.n).filter(move |&r| r != self.id)
    }

    fn check_invariants(&self) {
        assert!(
            self.commit_min <= self.commit_max,
            "commit_min <= commit_max"
        );
        assert!(
            self.commit_max <= self.head() || !self.is_primary(),
            "a primary commits only what it holds"
        );
        assert!(self.log_view <= self.view, "log_view <= view");
        assert!(self.commit_min <= self.head(), "applied ops are in the log");
        assert!(
            self.log_start <= self.commit_min.max(Op(1)),
            "the journal starts at or below the commit point"
        );
        assert!(
            self.log_start == Op(1) || self.log.first().map(|e| e.op) == Some(self.log_start),
            "a checkpointed log keeps the checkpoint's op"
        );
        assert_eq!(
            self.checkpoint_op().max(Op(1)),
            self.log_start,
            "the log starts at the checkpoint"
        );
    }
}

/// How many leading entries are sound: at their op (the first at
/// `start`), chained, and with an identity that matches their content.
fn sound_prefix(start: Op, entries: &[Entry]) -> usize {
    let mut parent = entries.first().map_or(0, |e| e.parent);
    if start == Op(1) {
        parent = 0;
    }
    for (index, entry) in entries.iter().enumerate() {
        if entry.op != Op(start.0 + index as u64) || entry.parent != parent || !entry.is_sound() {
            return index;
        }
        parent = entry.identity;
    }
    entries.len()
}

/// Every entry sits at its op (the first at `start`) and names the one
/// below as its parent (op 1 names none).
fn check_chain(start: Op, entries: &[Entry]) {
    let mut parent = entries.first().map_or(0, |e| e.parent);
    if start == Op(1) {
        parent = 0;
    }
    for (index, entry) in entries.iter().enumerate() {
        assert_eq!(
            entry.op,
            Op(start.0 + index as u64),
            "entries sit at their op"
        );
        assert_eq!(entry.parent, parent, "entries chain by parent identity");
        parent = entry.identity;
    }
}
