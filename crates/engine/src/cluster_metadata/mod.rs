//! The metadata group of a cluster (replication spec §1-§2): metadata ops
//! committed through Viewstamped Replication (`crate::replicated`) instead
//! of the single node's journal. The primary stamps an op's timestamp,
//! validates it on its head state (everything applied plus the ops in its
//! pipeline, inherited ones included), and only then prepares it: a
//! rejection consumes no op and is answered at once. Every replica applies
//! committed ops to its own copy of the state and hands each to the
//! `Applier` (the server's public state on every shard) before the next.
//!
//! A replica that is not the primary of a normal view refuses submissions
//! (`Submit::NotPrimary`, with the view whose primary to try); the caller
//! answers the client so that it moves to the leader.

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::Path;

use consensus::vsr::message::{Entry, Message, ReplicaId};
use consensus::{ClientId, Op, RequestNumber, View};
use storage::Storage;

use crate::metadata::{ApplyOutcome, MetadataError, MetadataOp, MetadataState, OpKind};
use crate::replicated::{
    Effect, Group, GroupError, Placement, Restore, StateMachine, Submitted, Submitter,
};

/// Outcomes kept for the submitters to collect (older ones are dropped:
/// their submitters gave up or were answered).
const OUTCOMES_KEPT: usize = 4096;

/// What the rest of the node does with a committed metadata op.
#[allow(async_fn_in_trait)]
pub trait Applier {
    /// Applies the op committed at `number`, which applied cleanly here
    /// (`outcome`), to the node's public state; `created` is the partition
    /// incarnations' start views, this op's creations included.
    async fn apply(
        &mut self,
        number: Op,
        op: &MetadataOp,
        outcome: &ApplyOutcome,
        created: &CreatedViews,
    );
    /// The state was replaced wholesale (a checkpoint at boot, or one
    /// installed by state transfer), as of the op `commit`.
    async fn restored(&mut self, state: &MetadataState, commit: Op, created: &CreatedViews);
}

/// The view each partition incarnation's group starts in (replication spec
/// §2: the metadata view whose primary admitted the create, so partition
/// primaries start on the metadata primary), by the incarnation: the
/// partition's `created_at_us`, which is the creating op's timestamp,
/// unique in the cluster because the primary's timestamps only grow.
pub type CreatedViews = BTreeMap<u64, View>;

/// The group's state machine: our copy of the state, the applier, and the
/// outcome of each recent op.
pub struct Machine<A: Applier> {
    state: MetadataState,
    created: CreatedViews,
    /// The op `state` is as of.
    applied: Op,
    applier: A,
    outcomes: BTreeMap<Op, Result<ApplyOutcome, MetadataError>>,
}

impl<A: Applier> StateMachine for Machine<A> {
    async fn apply(&mut self, entry: &Entry) -> Vec<u8> {
        let op = entry.op;
        // A body this build cannot decode was committed by a newer one:
        // going on would fork the state (fail-stop, replication spec §6.7).
        let decoded = MetadataOp::decode(&entry.body)
            .unwrap_or_else(|e| panic!("committed metadata op {op} cannot be decoded: {e}"));
        assert_eq!(
            decoded.timestamp_us, entry.timestamp_us,
            "stamped as prepared"
        );
        let outcome = self.state.apply(&decoded);
        self.applied = op;
        if let Ok(applied) = &outcome {
            if matches!(
                decoded.kind,
                OpKind::CreateTopic { .. } | OpKind::CreatePartitions { .. }
            ) {
                self.created.insert(entry.timestamp_us, entry.view);
            }
            self.applier
                .apply(op, &decoded, applied, &self.created)
                .await;
        }
        self.outcomes.insert(op, outcome);
        while self.outcomes.len() > OUTCOMES_KEPT {
            self.outcomes.pop_first();
        }
        Vec::new()
    }

    /// ```text
    /// u64 op the state is as of | u32 n | n x (u64 incarnation, u32 view)
    /// | the state (MetadataState snapshot)
    /// ```
    /// (little-endian; only the start views of partitions that exist.)
    fn snapshot(&self) -> Vec<u8> {
        encode_machine_state(self.applied, &self.created, &self.state)
    }

    async fn restore(&mut self, bytes: &[u8], _: Restore) -> Result<(), String> {
        let cut = || "a metadata checkpoint cut short".to_owned();
        let (commit, rest) = bytes.split_first_chunk::<8>().ok_or_else(cut)?;
        let (count, mut rest) = rest.split_first_chunk::<4>().ok_or_else(cut)?;
        let mut created = CreatedViews::new();
        for _ in 0..u32::from_le_bytes(*count) {
            let (at, tail) = rest.split_first_chunk::<8>().ok_or_else(cut)?;
            let (view, tail) = tail.split_first_chunk::<4>().ok_or_else(cut)?;
            created.insert(u64::from_le_bytes(*at), View(u32::from_le_bytes(*view)));
            rest = tail;
        }
        self.state = MetadataState::decode_snapshot(rest).map_err(|e| e.to_string())?;
        self.created = created;
        self.applied = Op(u64::from_le_bytes(*commit));
        self.outcomes.clear();
        self.applier
            .restored(&self.state, self.applied, &self.created)
            .await;
        Ok(())
    }
}

/// A checkpoint's state (the layout above `Machine::snapshot`).
fn encode_machine_state(applied: Op, created: &CreatedViews, state: &MetadataState) -> Vec<u8> {
    let live: std::collections::BTreeSet<u64> = state
        .streams()
        .flat_map(|s| s.topics())
        .flat_map(|t| t.partitions().iter().map(|p| p.created_at_us))
        .collect();
    let created: Vec<(u64, View)> = created
        .iter()
        .filter(|(at, _)| live.contains(at))
        .map(|(at, view)| (*at, *view))
        .collect();
    let mut out = applied.0.to_le_bytes().to_vec();
    let count = u32::try_from(created.len()).expect("partitions fit u32");
    out.extend_from_slice(&count.to_le_bytes());
    for (at, view) in created {
        out.extend_from_slice(&at.to_le_bytes());
        out.extend_from_slice(&view.0.to_le_bytes());
    }
    state.encode_snapshot(&mut out);
    out
}

/// The metadata group's first checkpoint for a state kept outside any
/// group (a single node's metadata, adopted by a group of one): `state` as
/// of op `op`, stamped `timestamp_us`, every partition's group starting in
/// view 0; seeded into the empty journal in `dir`.
pub async fn adopt_state<S: Storage>(
    storage: S,
    dir: &Path,
    state: &MetadataState,
    op: Op,
    timestamp_us: u64,
) -> Result<(), storage::StorageError> {
    let created: CreatedViews = state
        .streams()
        .flat_map(|s| s.topics())
        .flat_map(|t| t.partitions().iter().map(|p| (p.created_at_us, View(0))))
        .collect();
    let bytes = encode_machine_state(op, &created, state);
    crate::replicated::seed_checkpoint(storage, dir, op, timestamp_us, &bytes).await
}

/// The answer to a submission.
#[derive(Debug)]
pub enum Submit {
    /// Prepared as this node's request `request`; its outcome comes with
    /// the `Effect::Reply` for it.
    Prepared {
        request: RequestNumber,
        effects: Vec<Effect>,
    },
    /// Invalid on the head state; nothing was prepared.
    Rejected(MetadataError),
    /// Not the primary of a normal view: try the primary of `view`.
    NotPrimary { view: View },
    /// The pipeline is full; nothing was prepared (safe to retry).
    Busy,
}

pub struct ClusterMetadata<S: Storage, A: Applier> {
    group: Group<S, Machine<A>>,
    /// This boot's client for the ops it submits.
    submitter: Submitter,
}

impl<S: Storage, A: Applier> ClusterMetadata<S, A> {
    /// Opens the metadata group in `dir`; `applier` receives the recovered
    /// state (`restored`) and every op applied from then on.
    pub async fn open(
        storage: S,
        dir: &Path,
        placement: Placement,
        nonce: u64,
        applier: A,
    ) -> Result<Self, GroupError> {
        assert!(nonce != 0, "a boot nonce is never zero");
        let machine = Machine {
            state: MetadataState::new(),
            created: CreatedViews::new(),
            applied: Op::ZERO,
            applier,
            outcomes: BTreeMap::new(),
        };
        let group = Group::open(storage, dir, placement, nonce, machine).await?;
        Ok(ClusterMetadata {
            group,
            submitter: Submitter::new(nonce, placement.identity.replica),
        })
    }

    pub fn group(&self) -> &Group<S, Machine<A>> {
        &self.group
    }

    /// The state applied here (committed ops only).
    pub fn state(&self) -> &MetadataState {
        &self.group.machine().state
    }

    pub fn applier(&self) -> &A {
        &self.group.machine().applier
    }

    /// The outcome of the op committed at `op`, if still kept.
    pub fn outcome(&self, op: Op) -> Option<&Result<ApplyOutcome, MetadataError>> {
        self.group.machine().outcomes.get(&op)
    }

    /// This node's client id for its submissions.
    pub fn client(&self) -> ClientId {
        self.submitter.client()
    }

    /// The state the primary validates a new op on: everything applied,
    /// plus the ops its log holds above that (its pipeline).
    fn head_state(&self) -> MetadataState {
        let replica = self.group.replica();
        let mut head = self.state().clone();
        let mut op = replica.commit_min().next();
        while op <= replica.head() {
            let entry = replica.entry(op).expect("the log holds its head");
            let decoded = MetadataOp::decode(&entry.body)
                .unwrap_or_else(|e| panic!("journaled metadata op {op} cannot be decoded: {e}"));
            // An inherited op that no longer applies fails here as it will
            // when committed: deterministic either way.
            let _ = head.apply(&decoded);
            op = op.next();
        }
        head
    }

    /// Submits a metadata op at `now_us`.
    pub async fn submit(&mut self, mut op: MetadataOp, now_us: u64) -> Result<Submit, GroupError> {
        let replica = self.group.replica();
        if !replica.is_primary() {
            return Ok(Submit::NotPrimary {
                view: replica.view(),
            });
        }
        op.timestamp_us = replica.next_timestamp(now_us);
        if let Err(rejected) = self.head_state().apply(&op) {
            return Ok(Submit::Rejected(rejected));
        }
        let mut body = Vec::with_capacity(128);
        op.encode(&mut body);
        Ok(
            match self.submitter.submit(&mut self.group, body, now_us).await? {
                Submitted::Prepared { request, effects } => Submit::Prepared { request, effects },
                Submitted::NotPrimary { view } => Submit::NotPrimary { view },
                Submitted::Busy => Submit::Busy,
            },
        )
    }

    /// A frame from a peer.
    pub async fn on_message(
        &mut self,
        from: ReplicaId,
        message: Message,
    ) -> Result<Vec<Effect>, GroupError> {
        self.group.on_message(from, message).await
    }

    /// One tick of the group's timers.
    pub async fn on_tick(&mut self) -> Result<Vec<Effect>, GroupError> {
        self.group.on_tick().await
    }
}
