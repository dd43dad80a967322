//! Soak of a three-node cluster under random faults (issue #17 item 6; off
//! in the suite, `IGGY_CLUSTER_FAULT_SOAK=<rounds>` runs it). A producer
//! keeps sending to three partitions, storing a consumer's offsets and
//! creating streams (`load`) while each round faults one node (SIGKILL,
//! SIGTERM, a wipe with `--fresh`, or all its replica links cut) and brings
//! it back; the round ends once every node names the same leader, the
//! faulted node serves what was acknowledged until it returned, and every
//! partition takes sends again (`probes`, which read each node alone). At
//! the end every node must serve what the producer was told (`checks`).
//! `IGGY_CLUSTER_FAULT_SEED` replays the faults (not the producer's
//! timing), `IGGY_CLUSTER_FAULT_KINDS` (kill,term,wipe,partition) picks
//! them, `IGGY_CLUSTER_FAULT_LOGS=<dir>` keeps a failed run's node logs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

#[path = "cluster_soak/checks.rs"]
mod checks;
#[path = "cluster_soak/load.rs"]
mod load;
#[path = "cluster_soak/probes.rs"]
mod probes;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use harness::TestServer;
use harness::cluster::*;
use load::{Ledger, PARTITIONS, Producer, Snapshot};
use probes::{Sessions, Target};

const ROUND_TIMEOUT: Duration = Duration::from_secs(60);
const PROBE_INTERVAL: Duration = Duration::from_millis(250);

#[test]
fn given_random_faults_under_load_when_the_cluster_heals_should_keep_every_acknowledged_write() {
    let Some(settings) = Settings::from_env() else {
        println!("skipped: IGGY_CLUSTER_FAULT_SOAK=<rounds> runs the cluster fault soak");
        return;
    };
    println!(
        "fault soak: {} rounds of {:?}, seed {seed} (IGGY_CLUSTER_FAULT_SEED={seed} replays it)",
        settings.rounds,
        settings.kinds,
        seed = settings.seed
    );
    let started = Instant::now();
    let mut soak = Soak::start();
    let producer = Producer {
        addresses: (0..soak.nodes.len())
            .map(|i| tcp_of(&soak.nodes, i))
            .collect(),
        ledger: soak.ledger.clone(),
        stop: soak.stop.clone(),
    }
    .spawn();
    soak.converge("the producer's first sends", ROUND_TIMEOUT, |soak| {
        soak.ledger().progressed(&Snapshot::default())
    });
    let mut rng = Rng(settings.seed);
    let mut by_kind: BTreeMap<Fault, u32> = BTreeMap::new();
    for round in 0..settings.rounds {
        let fault = settings.kinds[rng.below(settings.kinds.len() as u64) as usize];
        let victim = rng.below(u64::from(NODES)) as usize;
        let down = fault.downtime(&mut rng);
        soak.round(round, fault, victim, down);
        *by_kind.entry(fault).or_default() += 1;
        std::thread::sleep(rng.between_ms(1_000, 3_000));
    }
    soak.stop.store(true, Ordering::SeqCst);
    producer.join().expect("the producer thread does not panic");
    let figures = soak.verify();
    soak.shut_down();
    let elapsed = started.elapsed();
    println!(
        "fault soak: {} rounds {by_kind:?}; {figures}; elapsed {elapsed:.1?}; seed {}",
        settings.rounds, settings.seed
    );
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Fault {
    Kill,
    Term,
    Wipe,
    Partition,
}

impl Fault {
    fn parse(word: &str) -> Option<Fault> {
        match word.trim() {
            "kill" => Some(Fault::Kill),
            "term" => Some(Fault::Term),
            "wipe" => Some(Fault::Wipe),
            "partition" => Some(Fault::Partition),
            _ => None,
        }
    }

    /// How long the node stays down (or cut off).
    fn downtime(self, rng: &mut Rng) -> Duration {
        match self {
            Fault::Kill | Fault::Term | Fault::Wipe => rng.between_ms(500, 4_000),
            Fault::Partition => rng.between_ms(3_000, 6_000),
        }
    }
}

struct Settings {
    rounds: u32,
    seed: u64,
    kinds: Vec<Fault>,
}

impl Settings {
    /// None when the soak is not asked for; a malformed variable fails.
    fn from_env() -> Option<Settings> {
        let rounds = std::env::var("IGGY_CLUSTER_FAULT_SOAK").ok()?;
        let rounds = rounds
            .parse()
            .unwrap_or_else(|_| panic!("IGGY_CLUSTER_FAULT_SOAK={rounds}: not a round count"));
        let seed = std::env::var("IGGY_CLUSTER_FAULT_SEED").map_or_else(
            |_| {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .expect("the clock is after 1970");
                now.as_nanos() as u64 ^ u64::from(std::process::id())
            },
            |seed| seed.parse().expect("IGGY_CLUSTER_FAULT_SEED is a u64"),
        );
        let kinds = std::env::var("IGGY_CLUSTER_FAULT_KINDS")
            .unwrap_or_else(|_| "kill,term,wipe,partition".to_owned());
        let kinds: BTreeSet<Fault> = kinds
            .split(',')
            .map(|word| {
                Fault::parse(word).unwrap_or_else(|| {
                    panic!("IGGY_CLUSTER_FAULT_KINDS: {word:?} is none of kill,term,wipe,partition")
                })
            })
            .collect();
        Some(Settings {
            rounds,
            seed,
            kinds: kinds.into_iter().collect(),
        })
    }
}

/// SplitMix64: the fault sequence replays from the seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, bound: u64) -> u64 {
        assert!(bound > 0, "a range to pick from");
        self.next() % bound
    }

    fn between_ms(&mut self, low_ms: u64, high_ms: u64) -> Duration {
        Duration::from_millis(low_ms + self.below(high_ms - low_ms))
    }
}

/// The cluster under test, its link relays, the probes' sessions and what
/// the producer was told.
struct Soak {
    nodes: Vec<Node>,
    proxies: BTreeMap<(u8, u8), LinkProxy>,
    runtime: tokio::runtime::Runtime,
    sessions: Sessions,
    ledger: Arc<Mutex<Ledger>>,
    stop: Arc<AtomicBool>,
}

impl Soak {
    /// Three nodes with a relay on every replica link, stream `orders` and
    /// its topic `t` with `PARTITIONS` partitions.
    fn start() -> Soak {
        let (nodes, proxies) = start_cluster_with_proxies();
        let (nodes, leader, runtime) = with_orders(nodes);
        runtime.block_on(create_topic_t(tcp_of(&nodes, leader), PARTITIONS));
        Soak {
            nodes,
            proxies,
            runtime,
            sessions: Sessions::default(),
            ledger: Arc::new(Mutex::new(Ledger::new())),
            stop: Arc::new(AtomicBool::new(false)),
        }
    }

    fn targets(&self) -> Vec<Target> {
        (0..self.nodes.len()).map(|i| self.target(i)).collect()
    }

    fn target(&self, index: usize) -> Target {
        let server = self.nodes[index].server.as_ref().expect("the node runs");
        Target {
            index,
            tcp: server.tcp(),
            pid: u32::try_from(server.pid()).expect("a pid is positive"),
        }
    }

    fn ledger(&self) -> MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap()
    }

    /// One round: the fault, then the wait until the cluster is whole.
    fn round(&mut self, round: u32, fault: Fault, victim: usize, down: Duration) {
        let at = self.ledger().epoch.elapsed();
        self.inject(fault, victim, down);
        let back = Instant::now();
        let snapshot = self.ledger().snapshot();
        let what = format!("round {round} ({fault:?} node {victim} at {at:.1?})");
        self.converge(&format!("{what}: one leader"), ROUND_TIMEOUT, |soak| {
            let targets = soak.targets();
            soak.runtime
                .block_on(soak.sessions.agree_on_leader(&targets))
        });
        self.converge(
            &format!("{what}: node {victim} serving"),
            ROUND_TIMEOUT,
            |soak| {
                let target = soak.target(victim);
                soak.runtime
                    .block_on(soak.sessions.serves(target, &snapshot))
            },
        );
        self.converge(&format!("{what}: sends taken"), ROUND_TIMEOUT, |soak| {
            soak.ledger().progressed(&snapshot)
        });
        let acked: usize = (0..PARTITIONS as usize)
            .map(|p| self.ledger().acked_count(p))
            .sum();
        println!(
            "round {round} at {at:.1?}: {fault:?} node {victim} for {down:.1?}, whole again \
             {:.1?} after; {acked} messages acknowledged so far",
            back.elapsed()
        );
    }

    fn inject(&mut self, fault: Fault, victim: usize, down: Duration) {
        match fault {
            Fault::Kill | Fault::Wipe => self.nodes[victim].server.take().unwrap().kill(),
            Fault::Term => {
                let (status, took) = self.nodes[victim].server.take().unwrap().stop();
                if !status.success() {
                    self.fail(&format!(
                        "node {victim} exited with {status} {took:?} after SIGTERM"
                    ));
                }
            }
            Fault::Partition => self.cut(victim, true),
        }
        std::thread::sleep(down);
        if fault == Fault::Partition {
            return self.cut(victim, false);
        }
        let node = &mut self.nodes[victim];
        // `--fresh` erases the data directory before the node starts.
        let options = match fault {
            Fault::Wipe => node.options.clone().arg("--fresh"),
            _ => node.options.clone(),
        };
        node.server = Some(TestServer::start(&node.workdir, &options));
    }

    /// Cuts (or heals) every replica link of node `victim`.
    fn cut(&self, victim: usize, cut: bool) {
        for ((j, i), proxy) in &self.proxies {
            if usize::from(*j) == victim || usize::from(*i) == victim {
                if cut { proxy.cut() } else { proxy.heal() }
            }
        }
    }

    /// Polls `check` until it holds; past `timeout`, fails with its last
    /// reason.
    fn converge(
        &mut self,
        what: &str,
        timeout: Duration,
        mut check: impl FnMut(&mut Soak) -> Result<(), String>,
    ) {
        let started = Instant::now();
        loop {
            let Err(reason) = check(self) else { return };
            if started.elapsed() > timeout {
                self.fail(&format!(
                    "{what}: not converged within {timeout:?}: {reason}"
                ));
            }
            std::thread::sleep(PROBE_INTERVAL);
        }
    }

    /// Stops the producer, keeps the nodes' logs if asked, prints their
    /// tails and fails the test.
    fn fail(&self, message: &str) -> ! {
        self.stop.store(true, Ordering::SeqCst);
        let keep = std::env::var("IGGY_CLUSTER_FAULT_LOGS").ok();
        for (i, node) in self.nodes.iter().enumerate() {
            let log = harness::output(node.workdir.path());
            if let Some(dir) = &keep {
                std::fs::create_dir_all(dir).unwrap();
                std::fs::write(format!("{dir}/node-{i}.log"), &log).unwrap();
            }
            let lines: Vec<&str> = log.lines().collect();
            eprintln!("--- node {i}, the end of its log:");
            for line in &lines[lines.len().saturating_sub(15)..] {
                eprintln!("{line}");
            }
        }
        panic!("{message}");
    }

    fn shut_down(&mut self) {
        for (i, node) in self.nodes.iter_mut().enumerate() {
            let (status, _) = node.server.take().unwrap().stop();
            assert!(status.success(), "node {i} exited with {status} on SIGTERM");
        }
    }
}
