//! A deterministic cluster simulator (replication spec §9): the real
//! replica code (`consensus::vsr`) over a simulated network, disk and
//! clock, all driven by one seed. A run has a fault phase (message loss,
//! duplication, delay and reordering, one-way and symmetric partitions,
//! crashes at any point of a replica's action list, including between a
//! journal write and its sync) and a liveness phase (faults stop, every
//! replica is up): every pending request must then finish and every
//! replica converge. The checker (`checker`) watches every apply and reply.

pub mod app;
pub mod checker;
pub mod disk;
pub mod faults;
pub mod node;
pub mod prng;

use std::collections::{BTreeMap, BTreeSet};

use consensus::vsr::message::{Envelope, Message, Request};
use consensus::vsr::{Action, NotAdmitted, Status, Timing};
use consensus::{ClientId, Op, RequestNumber, View};

use app::{Effect, GroupId};
use checker::{Checker, Violation};
pub use faults::Faults;
use node::Node;
use prng::{Prng, salt};

/// The shape of a run.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub seed: u64,
    pub replicas: u8,
    pub clients: u32,
    pub fault_ticks: u64,
    pub liveness_ticks: u64,
}

impl Options {
    /// Three replicas in most seeds; every group size the protocol supports
    /// (1-6) in the rest, drawn from the seed.
    pub fn for_seed(seed: u64) -> Options {
        let mut sizes = Prng::new(seed, salt::SHAPE);
        let replicas = match sizes.below(10) {
            0..=5 => 3,
            _ => 1 + sizes.below(u64::from(consensus::types::REPLICAS_MAX)) as u8,
        };
        Options {
            seed,
            replicas,
            clients: 4,
            fault_ticks: 3_000,
            liveness_ticks: 3_000,
        }
    }
}

/// What a passing run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub seed: u64,
    pub committed: usize,
    pub acknowledged: usize,
    pub crashes: u32,
    pub final_view: u32,
    /// A hash of every event, for replay comparisons.
    pub trace: u64,
}

/// Why a run failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub seed: u64,
    pub tick: u64,
    pub reason: String,
}

struct Packet {
    at: u64,
    seq: u64,
    group: GroupId,
    envelope: Envelope,
}

struct Client {
    id: ClientId,
    number: RequestNumber,
    /// The pending request's group and body (a retry resends the same).
    group: GroupId,
    body: Vec<u8>,
    pending: bool,
    target: u8,
    /// The last refusal named the primary: retry there, not at the next.
    redirected: bool,
    sent_at: u64,
    remaining: u32,
}

const TIMING: Timing = Timing {
    commit_interval: 5,
    heartbeat_timeout: 60,
    view_change_timeout: 60,
    retransmit_interval: 10,
};
const CLIENT_RETRY_TICKS: u64 = 40;
const TICK_US: u64 = 10_000;

pub struct Cluster {
    options: Options,
    faults: Faults,
    tick: u64,
    nodes: Vec<Node>,
    packets: Vec<Packet>,
    seq: u64,
    /// `cut[from * n + to]`: messages from `from` to `to` are dropped.
    cut: Vec<bool>,
    network: Prng,
    fault_rng: Prng,
    workload: Prng,
    nonces: Prng,
    /// When deferred checkpoints complete.
    checkpoints: Prng,
    clients: Vec<Client>,
    checker: Checker,
    crashes: u32,
    /// A second crash scheduled after disk damage: (tick, node).
    second_crash: Option<(u64, u8)>,
    trace: u64,
    /// Members that prepared requests without syncing this client phase
    /// (group commit); synced at its end.
    unsynced: BTreeSet<(u8, GroupId)>,
}

/// Chance per member and tick that a checkpoint is asked ahead of the
/// limits (`VsrReplica::checkpoint_now`).
const CHECKPOINT_ASKED_PER_MILLION: u32 = 5_000;

/// Runs one seed to the end.
pub fn run(options: Options) -> Result<Report, Failure> {
    let mut cluster = Cluster::new(options);
    cluster.run().map_err(|Violation(reason)| Failure {
        seed: options.seed,
        tick: cluster.tick,
        reason,
    })
}

impl Cluster {
    pub fn new(options: Options) -> Cluster {
        let n = options.replicas;
        let mut fault_rng = Prng::new(options.seed, salt::FAULTS);
        let mut faults = Faults::draw(&mut fault_rng);
        let mut checkpoints = Prng::new(options.seed, salt::CHECKPOINTS);
        // Half the runs complete checkpoints later than asked.
        faults.checkpoint_delay_ticks_max = match checkpoints.below(2) {
            0 => 0,
            _ => 1 + checkpoints.below(40),
        };
        let mut nonces = Prng::new(options.seed, salt::NONCES);
        let nodes = (0..n)
            .map(|id| {
                let span = faults.clock_skew_ticks_max * 2 + 1;
                let skew_ticks = fault_rng.below(span) as i64 - faults.clock_skew_ticks_max as i64;
                let mut node = Node {
                    id,
                    n,
                    members: BTreeMap::new(),
                    disks: BTreeMap::new(),
                    fences: Default::default(),
                    blank_until: None,
                    restart_at: None,
                    skew_ticks,
                    limits: faults.limits,
                    timing: TIMING,
                };
                if faults.cold_start {
                    node.cold_start(&mut || nonces.next_u64() | 1);
                } else {
                    node.genesis(nonces.next_u64() | 1);
                }
                node
            })
            .collect();
        let clients = (0..options.clients)
            .map(|i| Client {
                id: ClientId(u128::from(i) + 1),
                number: RequestNumber(0),
                group: GroupId::Metadata,
                body: Vec::new(),
                pending: false,
                target: 0,
                redirected: false,
                sent_at: 0,
                remaining: 40,
            })
            .collect();
        Cluster {
            options,
            faults,
            tick: 0,
            nodes,
            packets: Vec::new(),
            seq: 0,
            cut: vec![false; usize::from(n) * usize::from(n)],
            network: Prng::new(options.seed, salt::NETWORK),
            fault_rng,
            workload: Prng::new(options.seed, salt::WORKLOAD),
            nonces,
            checkpoints,
            clients,
            checker: Checker::default(),
            crashes: 0,
            second_crash: None,
            trace: 0xcbf2_9ce4_8422_2325,
            unsynced: BTreeSet::new(),
        }
    }

    fn run(&mut self) -> Result<Report, Violation> {
        let fault_end = self.options.fault_ticks;
        while self.tick < fault_end {
            self.step(true)?;
        }
        self.heal();
        let deadline = fault_end + self.options.liveness_ticks;
        while !self.quiescent() {
            if self.tick >= deadline {
                return Err(Violation(format!(
                    "liveness: not converged {} ticks after faults stopped{} ({})",
                    self.options.liveness_ticks,
                    self.stall_reason(),
                    self.describe()
                )));
            }
            self.step(false)?;
        }
        self.checker.acknowledged_kept()?;
        self.states_equal()?;
        Ok(Report {
            seed: self.options.seed,
            committed: self.checker.committed_ops(),
            acknowledged: self.checker.acknowledged_count(),
            crashes: self.crashes,
            final_view: self.max_view().0,
            trace: self.trace,
        })
    }

    fn step(&mut self, faulty: bool) -> Result<(), Violation> {
        self.tick += 1;
        CURRENT_TICK.set(self.tick);
        self.restart_due();
        self.deliver_due(faulty)?;
        for id in 0..self.options.replicas {
            let groups: Vec<GroupId> = self.nodes[usize::from(id)]
                .members
                .keys()
                .copied()
                .collect();
            for group in groups {
                self.finish_deferred_checkpoint(id, group, false)?;
                let Some(member) = self.nodes[usize::from(id)].members.get_mut(&group) else {
                    continue; // retired, or the node crashed meanwhile
                };
                let actions = member.replica.on_tick();
                self.execute(id, group, actions, faulty)?;
                // Now and then a checkpoint is asked ahead of the limits
                // (as retention asks one before it deletes segments).
                if self.checkpoints.chance(CHECKPOINT_ASKED_PER_MILLION)
                    && let Some(member) = self.nodes[usize::from(id)].members.get_mut(&group)
                {
                    let actions = member.replica.checkpoint_now();
                    self.execute(id, group, actions, faulty)?;
                }
            }
        }
        self.drive_clients(faulty)?;
        if faulty {
            self.inject_faults();
        }
        Ok(())
    }

    fn restart_due(&mut self) {
        for id in 0..self.options.replicas {
            let node = &mut self.nodes[usize::from(id)];
            if node.restart_at.is_some_and(|at| at <= self.tick) {
                node.restart_at = None;
                let nonces = &mut self.nonces;
                node.start(&mut || nonces.next_u64() | 1);
                self.note(&format!("restart {id}"));
            }
        }
    }

    fn deliver_due(&mut self, faulty: bool) -> Result<(), Violation> {
        let tick = self.tick;
        let mut due: Vec<Packet> = Vec::new();
        let mut index = 0;
        while index < self.packets.len() {
            if self.packets[index].at <= tick {
                due.push(self.packets.swap_remove(index));
            } else {
                index += 1;
            }
        }
        due.sort_by_key(|p| (p.at, p.seq));
        for packet in due {
            let Envelope { from, to, message } = packet.envelope;
            // Frames of an incarnation this node does not run (not yet
            // materialized, or retired) are dropped unread.
            let Some(member) = self.nodes[usize::from(to)].members.get_mut(&packet.group) else {
                continue;
            };
            let actions = member.replica.on_message(from, message);
            self.execute(to, packet.group, actions, faulty)?;
        }
        Ok(())
    }

    /// Performs a replica's actions in order; under faults the node may
    /// crash before any of them.
    fn execute(
        &mut self,
        id: u8,
        group: GroupId,
        actions: Vec<Action>,
        faulty: bool,
    ) -> Result<(), Violation> {
        for action in actions {
            if faulty
                && self
                    .fault_rng
                    .chance(self.faults.crash_mid_actions_per_million)
            {
                self.crash(id);
                return Ok(());
            }
            // An earlier action of this list (a delete's apply) may have
            // retired the group itself.
            if !self.nodes[usize::from(id)].members.contains_key(&group) {
                return Ok(());
            }
            self.note(&format!("{id} {group:?} {action:?}"));
            self.perform(id, group, action)?;
        }
        if group == GroupId::Metadata {
            self.note_caught_up(id);
        }
        Ok(())
    }

    fn perform(&mut self, id: u8, group: GroupId, action: Action) -> Result<(), Violation> {
        let node = &mut self.nodes[usize::from(id)];
        let disk = node.disks.entry(group).or_default();
        match action {
            Action::Send(envelope) => {
                self.checker.sent(id, group, &envelope.message)?;
                match &envelope.message {
                    Message::PrepareOk { op, identity, .. } => {
                        self.checker.prepare_ok(id, group, *op, *identity)
                    }
                    Message::DoViewChange {
                        head,
                        entries,
                        uncertain: false,
                        ..
                    } => self.checker.dvc_sent(id, group, *head, entries)?,
                    _ => {}
                }
                self.transmit(group, envelope)
            }
            Action::Journal(entry) => disk.journal(entry),
            Action::TruncateAfter(op) => {
                disk.truncate_after(op);
                self.checker.gave_up(id, group, Some(op), None);
            }
            Action::Sync => disk.sync(),
            Action::Superblock { view, log_view } => disk.superblock(view, log_view),
            Action::Uncertain(uncertain) => disk.uncertain(uncertain),
            Action::Apply(entry) => {
                let member = node.members.get_mut(&group).expect("up");
                assert_eq!(
                    entry.op.0,
                    member.applied_base + member.applied.len() as u64 + 1,
                    "ops are applied in order"
                );
                member.applied.push(entry.identity);
                let (result, effect) = member.state.apply(entry.op.0, &entry.body);
                if entry.client.0 != 0 {
                    member
                        .replies
                        .insert(entry.client, (entry.op, result.clone()));
                }
                self.checker.applied(group, id, &entry, &result)?;
                self.materialize(id, effect);
            }
            Action::Reply {
                client,
                request,
                op,
            } => {
                let member = &node.members[&group];
                let result = match member.replies.get(&client) {
                    Some((at, result)) if *at == op => result.clone(),
                    _ => Vec::new(),
                };
                self.replied(group, client, request, op, &result)?;
            }
            Action::Checkpoint(mut snapshot) => {
                let member = node.members.get_mut(&group).expect("up");
                snapshot.state = member.encode_state();
                let mut state = Vec::new();
                member.state.encode(&mut state);
                let delay_max = self.faults.checkpoint_delay_ticks_max;
                if delay_max > 0 {
                    assert!(member.deferred.is_none(), "one checkpoint at a time");
                    let due = self.tick + self.checkpoints.below(delay_max + 1);
                    member.deferred = Some((snapshot, state, due));
                    return Ok(());
                }
                disk.checkpoint(snapshot.clone());
                member.replica.checkpointed(snapshot.clone());
                self.checker
                    .checkpoint(group, id, snapshot.op(), &state, "checkpoint")?;
            }
            Action::InstallSnapshot(snapshot) => {
                // A deferred checkpoint completes first (the server's
                // group waits for it before installing).
                self.finish_deferred_checkpoint(id, group, true)?;
                let node = &mut self.nodes[usize::from(id)];
                let disk = node.disks.entry(group).or_default();
                disk.install(snapshot.clone());
                self.checker.gave_up(id, group, None, Some(snapshot.op()));
                let member = node.members.get_mut(&group).expect("up");
                member.restore(group, &snapshot);
                let mut state = Vec::new();
                member.state.encode(&mut state);
                self.checker
                    .checkpoint(group, id, snapshot.op(), &state, "state transfer")?;
                self.note(&format!("{id} {group:?} installed {:?}", snapshot.op()));
                // A metadata checkpoint may list partitions this node has
                // not materialized yet.
                if group == GroupId::Metadata {
                    self.materialize_listed(id);
                }
            }
        }
        Ok(())
    }

    /// Completes replica `id`'s deferred checkpoint of `group` once it is
    /// due (`now`: whatever its tick): the snapshot reaches the disk, then
    /// the replica drops its log below it.
    fn finish_deferred_checkpoint(
        &mut self,
        id: u8,
        group: GroupId,
        now: bool,
    ) -> Result<(), Violation> {
        let tick = self.tick;
        let node = &mut self.nodes[usize::from(id)];
        let Some(member) = node.members.get_mut(&group) else {
            return Ok(());
        };
        if !member
            .deferred
            .as_ref()
            .is_some_and(|(_, _, due)| now || *due <= tick)
        {
            return Ok(());
        }
        let (snapshot, state, _) = member.deferred.take().expect("deferred");
        // Written unless a state transfer installed a newer one meanwhile.
        if snapshot.op() > member.replica.checkpoint_op() {
            node.disks
                .entry(group)
                .or_default()
                .checkpoint(snapshot.clone());
        }
        member.replica.checkpointed(snapshot.clone());
        self.note(&format!("{id} {group:?} checkpointed {:?}", snapshot.op()));
        self.checker
            .checkpoint(group, id, snapshot.op(), &state, "deferred checkpoint")
    }

    /// A metadata op's effect on this node's partition groups.
    fn materialize(&mut self, id: u8, effect: Effect) {
        let node = &mut self.nodes[usize::from(id)];
        match effect {
            Effect::None => {}
            Effect::Created(slot, incarnation) => {
                let nonce = self.nonces.next_u64() | 1;
                if node.materialize(slot, incarnation, nonce) {
                    self.note(&format!("{id} materialized slot {slot} {incarnation:?}"));
                }
            }
            Effect::Deleted(slot, incarnation) => {
                node.retire(GroupId::Partition {
                    slot,
                    revision: incarnation.revision,
                });
                self.note(&format!("{id} retired slot {slot} {incarnation:?}"));
            }
        }
    }

    /// After a metadata checkpoint was installed: materializes every
    /// partition it lists, and retires those this node runs that it does
    /// not (deleted by ops the checkpoint covers).
    fn materialize_listed(&mut self, id: u8) {
        let node = &self.nodes[usize::from(id)];
        let metadata = node.members[&GroupId::Metadata]
            .state
            .metadata()
            .expect("metadata state")
            .clone();
        let gone: Vec<GroupId> = node
            .members
            .keys()
            .filter(|group| !metadata.live(**group))
            .copied()
            .collect();
        for group in gone {
            self.nodes[usize::from(id)].retire(group);
            self.note(&format!(
                "{id} retired {group:?} (not in the installed checkpoint)"
            ));
        }
        for (slot, incarnation) in metadata.partitions() {
            self.materialize(id, Effect::Created(slot, incarnation));
        }
    }

    /// A wiped node's metadata replica adopted a view (it is normal: a
    /// restart in between leaves it recovering, not blank, so blankness
    /// alone would not tell): partitions created up to that view's head
    /// (its log holds every op committed before the wipe; its commit point
    /// may not know them all yet) may hold
    /// acknowledgements the wipe erased, so they materialize blank; later
    /// ones are new to everyone.
    fn note_caught_up(&mut self, id: u8) {
        let node = &mut self.nodes[usize::from(id)];
        let Some(member) = node.members.get(&GroupId::Metadata) else {
            return;
        };
        if node.blank_until == Some(Op(u64::MAX)) && member.replica.status() == Status::Normal {
            node.blank_until = Some(member.replica.head());
        }
    }

    fn transmit(&mut self, group: GroupId, envelope: Envelope) {
        let n = usize::from(self.options.replicas);
        let faulty = self.tick <= self.options.fault_ticks;
        if faulty {
            if self.cut[usize::from(envelope.from) * n + usize::from(envelope.to)]
                || self.network.chance(self.faults.loss_per_million)
            {
                return;
            }
            if self.network.chance(self.faults.duplicate_per_million) {
                self.enqueue(group, envelope.clone(), true);
            }
        }
        self.enqueue(group, envelope, faulty);
    }

    fn enqueue(&mut self, group: GroupId, envelope: Envelope, faulty: bool) {
        let delay = if faulty {
            1 + self.network.below(self.faults.delay_ticks_max)
        } else {
            1
        };
        self.seq += 1;
        self.packets.push(Packet {
            at: self.tick + delay,
            seq: self.seq,
            group,
            envelope,
        });
    }

    fn replied(
        &mut self,
        group: GroupId,
        client: ClientId,
        request: RequestNumber,
        op: Op,
        result: &[u8],
    ) -> Result<(), Violation> {
        self.checker.replied(group, client, request, op, result)?;
        if let Some(c) = self.clients.iter_mut().find(|c| c.id == client)
            && c.pending
            && c.number == request
        {
            c.pending = false;
        }
        Ok(())
    }

    /// Clients send new requests, retry on silence, follow the primary
    /// named by a refusal, and give up on a partition that was deleted.
    fn drive_clients(&mut self, faulty: bool) -> Result<(), Violation> {
        let metadata = self.checker.metadata();
        for index in 0..self.clients.len() {
            let client = &mut self.clients[index];
            if client.pending && !metadata.live(client.group) {
                client.pending = false; // the partition is gone
            }
            let start = !client.pending && client.remaining > 0 && faulty;
            if start && self.workload.chance(200_000) {
                let (group, body) = app::random_request(&mut self.workload, &metadata);
                client.number = RequestNumber(client.number.0 + 1);
                client.group = group;
                client.body = body;
                client.remaining -= 1;
                client.pending = true;
                client.sent_at = 0;
            }
            let client = &self.clients[index];
            let due = client.pending
                && (client.sent_at == 0 || self.tick >= client.sent_at + CLIENT_RETRY_TICKS);
            if due {
                self.send_request(index, faulty)?;
            }
        }
        // Requests a primary prepared with their sync deferred share one
        // sync now, before any other input reaches it (group commit).
        for (id, group) in std::mem::take(&mut self.unsynced) {
            let Some(member) = self.nodes[usize::from(id)].members.get_mut(&group) else {
                continue; // crashed, or the group retired, since
            };
            let actions = member.replica.sync_prepared();
            self.execute(id, group, actions, faulty)?;
        }
        Ok(())
    }

    fn send_request(&mut self, index: usize, faulty: bool) -> Result<(), Violation> {
        let n = self.options.replicas;
        let (id, number, group, target, rotate, mut body) = {
            let c = &self.clients[index];
            let rotate = c.sent_at != 0 && !c.redirected;
            (c.id, c.number, c.group, c.target, rotate, c.body.clone())
        };
        let target = if rotate { (target + 1) % n } else { target };
        self.clients[index].target = target;
        self.clients[index].redirected = false;
        self.clients[index].sent_at = self.tick;
        if faulty && self.network.chance(self.faults.loss_per_million) {
            return Ok(());
        }
        // The primary stamps with its own (skewed) clock.
        let node = &mut self.nodes[usize::from(target)];
        let now_us = self.tick.saturating_add_signed(node.skew_ticks).max(1) * TICK_US;
        let Some(member) = node.members.get_mut(&group) else {
            return Ok(()); // down, or the group is not here: try the next
        };
        app::stamp_created_view(&mut body, member.replica.view().0);
        let request = Request {
            client: id,
            number,
            body: body.into(),
        };
        // Half the requests leave their journal sync to the end of the
        // client phase, so several to one primary share it.
        let deferred = self.workload.chance(500_000);
        let admitted = if deferred {
            member.replica.prepare_request(request, now_us)
        } else {
            member.replica.on_request(request, now_us)
        };
        match admitted {
            Ok(actions) => {
                if deferred {
                    self.unsynced.insert((target, group));
                }
                self.execute(target, group, actions, faulty)
            }
            Err(NotAdmitted::NotPrimary { view }) => {
                let primary = (view.0 % u32::from(n)) as u8;
                self.clients[index].target = primary;
                self.clients[index].redirected = true;
                self.clients[index].sent_at =
                    self.tick.saturating_sub(CLIENT_RETRY_TICKS / 2).max(1);
                Ok(())
            }
            Err(NotAdmitted::Busy) => Ok(()),
        }
    }

    fn inject_faults(&mut self) {
        let n = self.options.replicas;
        if let Some((at, id)) = self.second_crash
            && at <= self.tick
        {
            self.second_crash = None;
            self.crash(id);
        }
        if self.fault_rng.chance(self.faults.crash_per_million) {
            let id = self.fault_rng.below(u64::from(n)) as u8;
            self.crash(id);
        }
        if self.fault_rng.chance(self.faults.partition_per_million) {
            self.repartition();
        }
    }

    fn crash(&mut self, id: u8) {
        if !self.nodes[usize::from(id)].up() {
            return;
        }
        self.nodes[usize::from(id)].crash();
        self.crashes += 1;
        if self.fault_rng.chance(self.faults.power_loss_per_million) {
            let node = &mut self.nodes[usize::from(id)];
            let mut kept = 0;
            for disk in node.disks.values_mut() {
                kept += disk.power_loss(self.fault_rng.next_u64());
            }
            self.note(&format!("power loss {id}: {kept} unsynced entries kept"));
        }
        let down = 10 + self.fault_rng.below(200);
        self.nodes[usize::from(id)].restart_at = Some(self.tick + down);
        self.note(&format!("crash {id}"));
        // The fault atlas: damage a disk only while every other node is up
        // and every one of its replicas normal and certain, so no op is
        // ever damaged on a quorum's copies.
        let live = self.live_groups();
        let committed = Op(self.checker.history_of(GroupId::Metadata).len() as u64);
        let others_sound = self
            .nodes
            .iter()
            .filter(|other| other.id != id)
            .all(|other| other.sound(&live, committed));
        // A lone replica has nobody to refill it: its disk is never damaged.
        if !others_sound || self.options.replicas == 1 {
            return;
        }
        // Of two, the other alone is short of a view-change quorum (two)
        // once it restarts, and a wiped replica never votes: a named stall
        // (replication spec §9 (9)), so two are never wiped. (A damaged
        // one votes with its log flagged uncertain, §5.5.)
        let may_wipe = self.options.replicas > 2;
        if may_wipe && self.fault_rng.chance(self.faults.wipe_on_crash_per_million) {
            self.nodes[usize::from(id)].wipe();
            self.checker.wiped(id);
            self.note(&format!("wipe {id}"));
        } else if self
            .fault_rng
            .chance(self.faults.corrupt_on_crash_per_million)
        {
            let node = &mut self.nodes[usize::from(id)];
            let groups: Vec<GroupId> = node.disks.keys().copied().collect();
            let group = groups[self.fault_rng.below(groups.len() as u64) as usize];
            let pick = self.fault_rng.next_u64();
            let disk = node.disks.get_mut(&group).expect("listed");
            if disk.corrupt(pick) {
                self.note(&format!("corrupt {id} {group:?}"));
                if self.fault_rng.chance(self.faults.second_crash_per_million) {
                    let n = u64::from(self.options.replicas);
                    let other = ((u64::from(id) + 1 + self.fault_rng.below(n - 1)) % n) as u8;
                    let at = self.tick + 1 + self.fault_rng.below(150);
                    self.second_crash = Some((at, other));
                }
            }
        }
    }

    /// A new cut: heal, isolate one replica (both ways or one way), or
    /// split at random.
    fn repartition(&mut self) {
        let n = usize::from(self.options.replicas);
        self.cut.iter_mut().for_each(|c| *c = false);
        match self.fault_rng.below(4) {
            0 => {}
            1 | 2 => {
                let isolated = self.fault_rng.below(n as u64) as usize;
                let one_way = self.fault_rng.below(2) == 0;
                for other in (0..n).filter(|&o| o != isolated) {
                    self.cut[isolated * n + other] = true;
                    if !one_way {
                        self.cut[other * n + isolated] = true;
                    }
                }
            }
            _ => {
                for from in 0..n {
                    for to in 0..n {
                        if from != to && self.fault_rng.chance(300_000) {
                            self.cut[from * n + to] = true;
                        }
                    }
                }
            }
        }
        self.note("repartition");
    }

    /// Faults stop: the network heals and every node comes back.
    fn heal(&mut self) {
        self.cut.iter_mut().for_each(|c| *c = false);
        for node in &mut self.nodes {
            if !node.up() {
                node.restart_at = Some(self.tick);
            }
        }
    }

    /// The groups that should exist: metadata and every live partition.
    fn live_groups(&self) -> Vec<GroupId> {
        let metadata = self.checker.metadata();
        std::iter::once(GroupId::Metadata)
            .chain(metadata.partitions().map(|(slot, inc)| GroupId::Partition {
                slot,
                revision: inc.revision,
            }))
            .collect()
    }

    /// Every client is answered, and every node runs exactly the live
    /// groups, each normal and having applied everything ever committed
    /// in it.
    fn quiescent(&self) -> bool {
        if self.clients.iter().any(|c| c.pending) {
            return false;
        }
        let live = self.live_groups();
        self.nodes.iter().all(|node| {
            node.members.len() == live.len()
                && live.iter().all(|group| {
                    let everything = Op(self.checker.history_of(*group).len() as u64);
                    node.members.get(group).is_some_and(|m| {
                        m.replica.status() == Status::Normal && m.replica.commit_min() == everything
                    })
                })
        })
    }

    /// At quiescence every replica of every live group applied exactly the
    /// committed history (above its checkpoint) and holds the state one
    /// sequential run of it builds.
    fn states_equal(&self) -> Result<(), Violation> {
        for group in self.live_groups() {
            let history = self.checker.history_of(group);
            let model = self.checker.model(group);
            for node in &self.nodes {
                let member = &node.members[&group];
                if member.state != model {
                    return Err(Violation(format!(
                        "final state: replica {}'s state of {group:?} differs from the sequential model",
                        node.id
                    )));
                }
                let base = usize::try_from(member.applied_base).expect("fits");
                if history.get(base..) != Some(member.applied.as_slice()) {
                    return Err(Violation(format!(
                        "final state: replica {} applied {} ops of {group:?} above its checkpoint at op {base}, the committed history has {}, or they differ",
                        node.id,
                        member.applied.len(),
                        history.len()
                    )));
                }
            }
        }
        Ok(())
    }

    /// Why a core did not converge, where the protocol says it must stall
    /// (replication spec §9 (9)): a live group whose certain, non-blank
    /// members fall short of a view-change quorum. Empty otherwise (a bug).
    fn stall_reason(&self) -> String {
        let quorum = consensus::Quorums::of(self.options.replicas).view_change;
        let mut stalls = Vec::new();
        for group in self.live_groups() {
            let able = self
                .nodes
                .iter()
                .filter_map(|n| n.members.get(&group))
                .filter(|m| !m.replica.is_blank() && !m.replica.is_uncertain())
                .count();
            let normal = self
                .nodes
                .iter()
                .filter_map(|n| n.members.get(&group))
                .any(|m| m.replica.is_primary());
            if !normal && able < usize::from(quorum) {
                stalls.push(format!(
                    "{group:?} has {able} certain members, short of the view-change quorum {quorum}"
                ));
            }
        }
        if stalls.is_empty() {
            String::new()
        } else {
            format!(": a named stall, {}", stalls.join("; "))
        }
    }

    fn max_view(&self) -> View {
        self.nodes
            .iter()
            .filter_map(|n| n.members.get(&GroupId::Metadata).map(|m| m.replica.view()))
            .max()
            .unwrap_or_default()
    }

    fn describe(&self) -> String {
        let mut parts = Vec::new();
        for group in self.live_groups() {
            let replicas: Vec<String> = self
                .nodes
                .iter()
                .map(|n| match n.members.get(&group) {
                    Some(m) => {
                        let r = &m.replica;
                        format!(
                            "{:?}{}{} view {} log_view {} head {} commit {}/{}",
                            r.status(),
                            if r.is_blank() { " blank" } else { "" },
                            if r.is_uncertain() { " uncertain" } else { "" },
                            r.view().0,
                            r.log_view().0,
                            r.head().0,
                            r.commit_min().0,
                            r.commit_max().0
                        )
                    }
                    None if n.up() => "absent".to_owned(),
                    None => "down".to_owned(),
                })
                .collect();
            let committed = self.checker.history_of(group).len();
            parts.push(format!(
                "{group:?} ({committed} committed): [{}]",
                replicas.join("; ")
            ));
        }
        let pending = self.clients.iter().filter(|c| c.pending).count();
        format!("{}; {pending} clients waiting", parts.join("; "))
    }

    /// Folds an event into the trace hash (FNV-1a); with `SIM_TRACE` set,
    /// also prints it.
    fn note(&mut self, event: &str) {
        if std::env::var_os("SIM_TRACE").is_some() {
            eprintln!("{:>6} {event}", self.tick);
        }
        for byte in self.tick.to_le_bytes().iter().chain(event.as_bytes()) {
            self.trace ^= u64::from(*byte);
            self.trace = self.trace.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

thread_local! {
    /// The tick being simulated, for reporting where a replica's assertion
    /// fired (the cluster is gone by the time the panic is caught).
    static CURRENT_TICK: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The tick the last run on this thread reached.
pub fn current_tick() -> u64 {
    CURRENT_TICK.get()
}
