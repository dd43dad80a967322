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
pub mod prng;

use std::collections::BTreeMap;

use consensus::vsr::message::{Envelope, Request, Snapshot};
use consensus::vsr::{Action, Durable, Limits, NotAdmitted, Timing, VsrReplica};
use consensus::{ClientId, Op, RequestNumber, View};

use app::App;
use checker::{Checker, Violation};
use disk::Disk;
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
    pub fn for_seed(seed: u64) -> Options {
        Options {
            seed,
            replicas: 3,
            clients: 4,
            fault_ticks: 3_000,
            liveness_ticks: 3_000,
        }
    }
}

/// Fault rates, drawn from the seed (swarm testing): some runs are calm,
/// some stormy, some lose most messages.
#[derive(Debug, Clone, Copy)]
pub struct Faults {
    /// How far each replica's clock may be from true time, in ticks.
    pub clock_skew_ticks_max: u64,
    pub loss_per_million: u32,
    pub duplicate_per_million: u32,
    pub delay_ticks_max: u64,
    pub crash_per_million: u32,
    pub crash_mid_actions_per_million: u32,
    pub partition_per_million: u32,
    /// Chance that a crash also damages one journal entry on that disk.
    pub corrupt_on_crash_per_million: u32,
    /// Chance that a crashed replica is wiped and restarted blank.
    pub wipe_on_crash_per_million: u32,
    /// Checkpoint spacing and state chunk size (small, so that journals
    /// are cut often and transfers take several chunks).
    pub limits: Limits,
}

impl Faults {
    fn draw(rng: &mut Prng) -> Faults {
        Faults {
            clock_skew_ticks_max: rng.below(500),
            loss_per_million: rng.below(150_000) as u32,
            duplicate_per_million: rng.below(50_000) as u32,
            delay_ticks_max: 1 + rng.below(20),
            crash_per_million: rng.below(2_000) as u32,
            crash_mid_actions_per_million: rng.below(20_000) as u32,
            partition_per_million: rng.below(5_000) as u32,
            corrupt_on_crash_per_million: rng.below(400_000) as u32,
            wipe_on_crash_per_million: rng.below(300_000) as u32,
            limits: Limits {
                // One run in four never checkpoints.
                checkpoint_interval: match rng.below(4) {
                    0 => 1 << 40,
                    _ => 4 + rng.below(45),
                },
                state_chunk_max: 8 + rng.below(57) as usize,
            },
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

struct Node {
    replica: Option<VsrReplica>,
    disk: Disk,
    restart_at: Option<u64>,
    /// This replica's clock error, in ticks (may be negative).
    skew_ticks: i64,
    /// Identities of the ops this replica applied since it last booted or
    /// installed a checkpoint (a restart applies again from its checkpoint),
    /// the first at op `applied_base + 1`.
    applied: Vec<u64>,
    applied_base: u64,
    /// The service state those ops built, and each client's latest result
    /// (what a retry is answered with), both kept by checkpoints.
    app: App,
    replies: BTreeMap<ClientId, (Op, Vec<u8>)>,
}

impl Node {
    /// The state a checkpoint keeps: the service state, then the replies.
    ///
    /// ```text
    /// app (App::encode); count u16 LE; per client: id u128 LE, op u64 LE,
    /// result length u8, result bytes
    /// ```
    fn encode_state(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.app.encode(&mut out);
        let count = u16::try_from(self.replies.len()).expect("few clients");
        out.extend_from_slice(&count.to_le_bytes());
        for (client, (op, result)) in &self.replies {
            out.extend_from_slice(&client.0.to_le_bytes());
            out.extend_from_slice(&op.0.to_le_bytes());
            out.push(u8::try_from(result.len()).expect("short results"));
            out.extend_from_slice(result);
        }
        out
    }

    /// Restores what `encode_state` wrote (a checkpoint at boot or one a
    /// state transfer installed).
    fn restore(&mut self, snapshot: &Snapshot) {
        let (app, mut rest) = App::decode(&snapshot.state).expect("a checkpoint decodes");
        let mut replies = BTreeMap::new();
        let (count, tail) = rest.split_at(2);
        rest = tail;
        for _ in 0..u16::from_le_bytes([count[0], count[1]]) {
            let (id, tail) = rest.split_at(16);
            let (op, tail) = tail.split_at(8);
            let (&len, tail) = tail.split_first().expect("a length");
            let (result, tail) = tail.split_at(usize::from(len));
            let client = ClientId(u128::from_le_bytes(id.try_into().expect("16 bytes")));
            let op = Op(u64::from_le_bytes(op.try_into().expect("8 bytes")));
            replies.insert(client, (op, result.to_vec()));
            rest = tail;
        }
        assert!(rest.is_empty(), "a checkpoint holds nothing else");
        self.app = app;
        self.replies = replies;
        self.applied.clear();
        self.applied_base = snapshot.op().0;
    }
}

struct Packet {
    at: u64,
    seq: u64,
    envelope: Envelope,
}

struct Client {
    id: ClientId,
    number: RequestNumber,
    /// The pending request's body (a retry resends the same one).
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
    clients: Vec<Client>,
    checker: Checker,
    crashes: u32,
    trace: u64,
}

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
        let faults = Faults::draw(&mut fault_rng);
        let mut nonces = Prng::new(options.seed, salt::NONCES);
        let skews: Vec<i64> = (0..n)
            .map(|_| {
                let span = faults.clock_skew_ticks_max * 2 + 1;
                fault_rng.below(span) as i64 - faults.clock_skew_ticks_max as i64
            })
            .collect();
        let nodes = (0..n)
            .map(|id| Node {
                skew_ticks: skews[usize::from(id)],
                replica: Some(
                    VsrReplica::genesis(id, n, TIMING, nonces.next_u64() | 1)
                        .with_limits(faults.limits),
                ),
                disk: Disk::default(),
                restart_at: None,
                applied: Vec::new(),
                applied_base: 0,
                app: App::default(),
                replies: BTreeMap::new(),
            })
            .collect();
        let clients = (0..options.clients)
            .map(|i| Client {
                id: ClientId(u128::from(i) + 1),
                number: RequestNumber(0),
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
            clients,
            checker: Checker::default(),
            crashes: 0,
            trace: 0xcbf2_9ce4_8422_2325,
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
                    "liveness: not converged {} ticks after faults stopped ({})",
                    self.options.liveness_ticks,
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
            if let Some(replica) = self.nodes[usize::from(id)].replica.as_mut() {
                let actions = replica.on_tick();
                self.execute(id, actions, faulty)?;
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
                let durable = node.disk.crash();
                node.applied.clear();
                node.applied_base = 0;
                node.app = App::default();
                node.replies.clear();
                if let Some(snapshot) = &durable.snapshot {
                    node.restore(snapshot);
                }
                let replica = boot(id, self.options.replicas, durable, &mut self.nonces);
                node.replica = Some(replica.with_limits(self.faults.limits));
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
            let Some(replica) = self.nodes[usize::from(to)].replica.as_mut() else {
                continue;
            };
            let actions = replica.on_message(from, message);
            self.execute(to, actions, faulty)?;
        }
        Ok(())
    }

    /// Performs a replica's actions in order; under faults the replica may
    /// crash before any of them.
    fn execute(&mut self, id: u8, actions: Vec<Action>, faulty: bool) -> Result<(), Violation> {
        for action in actions {
            if faulty
                && self
                    .fault_rng
                    .chance(self.faults.crash_mid_actions_per_million)
            {
                self.crash(id);
                return Ok(());
            }
            self.note(&format!("{id} {action:?}"));
            let node = &mut self.nodes[usize::from(id)];
            match action {
                Action::Send(envelope) => self.transmit(envelope, faulty),
                Action::Journal(entry) => node.disk.journal(entry),
                Action::TruncateAfter(op) => node.disk.truncate_after(op),
                Action::Sync => node.disk.sync(),
                Action::Superblock { view, log_view } => node.disk.superblock(view, log_view),
                Action::Uncertain(uncertain) => node.disk.uncertain(uncertain),
                Action::Apply(entry) => {
                    assert_eq!(
                        entry.op.0,
                        node.applied_base + node.applied.len() as u64 + 1,
                        "ops are applied in order"
                    );
                    node.applied.push(entry.identity);
                    let result = node.app.apply(&entry.body);
                    if entry.client.0 != 0 {
                        node.replies
                            .insert(entry.client, (entry.op, result.clone()));
                    }
                    self.checker.applied(id, &entry, &result)?;
                }
                Action::Reply {
                    client,
                    request,
                    op,
                } => {
                    let result = match node.replies.get(&client) {
                        Some((at, result)) if *at == op => result.clone(),
                        _ => Vec::new(),
                    };
                    self.replied(client, request, op, &result)?;
                }
                Action::Checkpoint(mut snapshot) => {
                    snapshot.state = node.encode_state();
                    let mut app = Vec::new();
                    node.app.encode(&mut app);
                    self.checker
                        .checkpoint(id, snapshot.op(), &app, "checkpoint")?;
                    node.disk.checkpoint(snapshot.clone());
                    node.replica
                        .as_mut()
                        .expect("a replica performing actions is up")
                        .checkpointed(snapshot);
                }
                Action::InstallSnapshot(snapshot) => {
                    node.disk.install(snapshot.clone());
                    node.restore(&snapshot);
                    let mut app = Vec::new();
                    node.app.encode(&mut app);
                    self.checker
                        .checkpoint(id, snapshot.op(), &app, "state transfer")?;
                    self.note(&format!("{id} installed {:?}", snapshot.op()));
                }
            }
        }
        Ok(())
    }

    fn transmit(&mut self, envelope: Envelope, faulty: bool) {
        let n = usize::from(self.options.replicas);
        if faulty {
            if self.cut[usize::from(envelope.from) * n + usize::from(envelope.to)]
                || self.network.chance(self.faults.loss_per_million)
            {
                return;
            }
            if self.network.chance(self.faults.duplicate_per_million) {
                self.enqueue(envelope.clone(), true);
            }
        }
        self.enqueue(envelope, faulty);
    }

    fn enqueue(&mut self, envelope: Envelope, faulty: bool) {
        let delay = if faulty {
            1 + self.network.below(self.faults.delay_ticks_max)
        } else {
            1
        };
        self.seq += 1;
        self.packets.push(Packet {
            at: self.tick + delay,
            seq: self.seq,
            envelope,
        });
    }

    fn replied(
        &mut self,
        client: ClientId,
        request: RequestNumber,
        op: Op,
        result: &[u8],
    ) -> Result<(), Violation> {
        self.checker.replied(client, request, op, result)?;
        if let Some(c) = self.clients.iter_mut().find(|c| c.id == client)
            && c.pending
            && c.number == request
        {
            c.pending = false;
        }
        Ok(())
    }

    /// Clients send new requests, retry on silence, and follow the primary
    /// named by a refusal.
    fn drive_clients(&mut self, faulty: bool) -> Result<(), Violation> {
        for index in 0..self.clients.len() {
            let client = &mut self.clients[index];
            let start = !client.pending && client.remaining > 0 && faulty;
            if start && self.workload.chance(200_000) {
                client.number = RequestNumber(client.number.0 + 1);
                client.body = app::random_body(&mut self.workload);
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
        Ok(())
    }

    fn send_request(&mut self, index: usize, faulty: bool) -> Result<(), Violation> {
        let n = self.options.replicas;
        let (id, number, target, rotate, body) = {
            let c = &self.clients[index];
            let rotate = c.sent_at != 0 && !c.redirected;
            (c.id, c.number, c.target, rotate, c.body.clone())
        };
        let target = if rotate { (target + 1) % n } else { target };
        self.clients[index].target = target;
        self.clients[index].redirected = false;
        self.clients[index].sent_at = self.tick;
        if faulty && self.network.chance(self.faults.loss_per_million) {
            return Ok(());
        }
        let request = Request {
            client: id,
            number,
            body,
        };
        // The primary stamps with its own (skewed) clock.
        let skew = self.nodes[usize::from(target)].skew_ticks;
        let now_us = self.tick.saturating_add_signed(skew).max(1) * TICK_US;
        let Some(replica) = self.nodes[usize::from(target)].replica.as_mut() else {
            return Ok(());
        };
        match replica.on_request(request, now_us) {
            Ok(actions) => self.execute(target, actions, faulty),
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
        if self.fault_rng.chance(self.faults.crash_per_million) {
            let id = self.fault_rng.below(u64::from(n)) as u8;
            self.crash(id);
        }
        if self.fault_rng.chance(self.faults.partition_per_million) {
            self.repartition();
        }
    }

    fn crash(&mut self, id: u8) {
        let node = &mut self.nodes[usize::from(id)];
        if node.replica.take().is_none() {
            return;
        }
        self.crashes += 1;
        let down = 10 + self.fault_rng.below(200);
        node.restart_at = Some(self.tick + down);
        self.note(&format!("crash {id}"));
        // The fault atlas: damage a disk only while every other replica is
        // up and certain, so no op is ever damaged on a quorum's copies.
        let others_sound = self
            .nodes
            .iter()
            .enumerate()
            .filter(|(other, _)| *other != usize::from(id))
            .all(|(_, n)| {
                n.replica.as_ref().is_some_and(|r| {
                    !r.is_uncertain() && r.status() == consensus::vsr::Status::Normal
                })
            });
        if others_sound && self.fault_rng.chance(self.faults.wipe_on_crash_per_million) {
            self.nodes[usize::from(id)].disk.wipe();
            self.note(&format!("wipe {id}"));
        } else if others_sound
            && self
                .fault_rng
                .chance(self.faults.corrupt_on_crash_per_million)
        {
            let pick = self.fault_rng.next_u64();
            if self.nodes[usize::from(id)].disk.corrupt(pick) {
                self.note(&format!("corrupt {id}"));
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

    /// Faults stop: the network heals and every replica comes back.
    fn heal(&mut self) {
        self.cut.iter_mut().for_each(|c| *c = false);
        for node in &mut self.nodes {
            if node.replica.is_none() {
                node.restart_at = Some(self.tick);
            }
        }
    }

    /// Every client is answered and every replica has applied everything
    /// ever committed (after a full-cluster restart, replicas re-apply from
    /// op 1 as the new view commits again).
    fn quiescent(&self) -> bool {
        if self.clients.iter().any(|c| c.pending) {
            return false;
        }
        let everything = Op(self.checker.committed_ops() as u64);
        if self.nodes.iter().any(|n| {
            n.replica
                .as_ref()
                .is_none_or(|r| r.commit_min() != everything)
        }) {
            return false;
        }
        let applied: Vec<(Op, View)> = self
            .nodes
            .iter()
            .map(|n| {
                n.replica
                    .as_ref()
                    .map_or((Op(u64::MAX), View(0)), |r| (r.commit_min(), r.view()))
            })
            .collect();
        applied.windows(2).all(|w| w[0].0 == w[1].0)
            && self.nodes.iter().all(|n| {
                n.replica
                    .as_ref()
                    .is_some_and(|r| r.status() == consensus::vsr::Status::Normal)
            })
    }

    /// At quiescence every replica applied exactly the committed history
    /// and holds the state one sequential run of it builds.
    fn states_equal(&self) -> Result<(), Violation> {
        let history = self.checker.history();
        for (id, node) in self.nodes.iter().enumerate() {
            if node.app != *self.checker.model() {
                return Err(Violation(format!(
                    "final state: replica {id}'s service state differs from the sequential model"
                )));
            }
            let base = usize::try_from(node.applied_base).expect("fits");
            if history.get(base..) != Some(node.applied.as_slice()) {
                return Err(Violation(format!(
                    "final state: replica {id} applied {} ops above its checkpoint at op {base}, the committed history has {}, or they differ",
                    node.applied.len(),
                    history.len()
                )));
            }
        }
        Ok(())
    }

    fn max_view(&self) -> View {
        self.nodes
            .iter()
            .filter_map(|n| n.replica.as_ref().map(|r| r.view()))
            .max()
            .unwrap_or_default()
    }

    fn describe(&self) -> String {
        let replicas: Vec<String> = self
            .nodes
            .iter()
            .map(|n| match &n.replica {
                Some(r) => format!(
                    "{:?} view {} log_view {} head {} commit {}/{}",
                    r.status(),
                    r.view().0,
                    r.log_view().0,
                    r.head().0,
                    r.commit_min().0,
                    r.commit_max().0
                ),
                None => "down".to_owned(),
            })
            .collect();
        let pending = self.clients.iter().filter(|c| c.pending).count();
        format!(
            "replicas [{}], {pending} clients waiting",
            replicas.join("; ")
        )
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

fn boot(id: u8, n: u8, durable: Durable, nonces: &mut Prng) -> VsrReplica {
    let nonce = nonces.next_u64() | 1;
    VsrReplica::boot(id, n, TIMING, durable, nonce)
}
