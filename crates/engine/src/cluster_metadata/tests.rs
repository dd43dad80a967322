//! Three metadata replicas over simulated disks in one process: ops
//! submitted on the primary are validated, committed through VSR and
//! applied on every replica, in order, through its applier.

use std::collections::VecDeque;
use std::path::Path;

use consensus::vsr::message::Envelope;
use consensus::vsr::{Limits, Timing};
use storage::seam::CrashMode;
use storage::superblock::Identity;
use storage::{SimStorage, Storage};

use super::*;
use crate::metadata::{OpKind, UserId};

/// Records what it was given, as the server's shards would apply it.
#[derive(Default)]
struct Recorder {
    applied: Vec<String>,
    restored: usize,
}

impl Applier for Recorder {
    async fn apply(&mut self, _number: Op, op: &MetadataOp, _outcome: &ApplyOutcome) {
        if let OpKind::CreateStream { name } = &op.kind {
            self.applied.push(name.clone());
        }
    }
    fn restored(&mut self, _state: &MetadataState) {
        self.restored += 1;
    }
}

const TIMING: Timing = Timing {
    commit_interval: 2,
    heartbeat_timeout: 10,
    view_change_timeout: 10,
    retransmit_interval: 3,
};
const DIR: &str = "/data/cluster/metadata";

fn placement(replica: u8) -> Placement {
    Placement {
        identity: Identity {
            cluster: 11,
            replica,
            group: 1 << 63,
            incarnation: 0,
        },
        replicas: 3,
        created_view: View(0),
        timing: TIMING,
        limits: Limits::default(),
    }
}

fn create_stream(name: &str) -> MetadataOp {
    MetadataOp {
        timestamp_us: 0,
        actor: UserId::ROOT,
        kind: OpKind::CreateStream {
            name: name.to_owned(),
        },
    }
}

struct Cluster {
    storages: Vec<SimStorage>,
    nodes: Vec<Option<ClusterMetadata<SimStorage, Recorder>>>,
    queue: VecDeque<Envelope>,
    replies: Vec<(ClientId, RequestNumber, Op)>,
    nonce: u64,
}

impl Cluster {
    async fn start() -> Cluster {
        let mut cluster = Cluster {
            storages: (0..3).map(|_| SimStorage::new()).collect(),
            nodes: (0..3).map(|_| None).collect(),
            queue: VecDeque::new(),
            replies: Vec::new(),
            nonce: 500,
        };
        for id in 0..3 {
            cluster.open(id).await;
        }
        cluster.tick(30).await;
        cluster
    }

    async fn open(&mut self, id: u8) {
        self.nonce += 1;
        let storage = self.storages[usize::from(id)].clone();
        storage.create_dir_all(Path::new(DIR)).await.expect("dir");
        let node = ClusterMetadata::open(
            storage,
            Path::new(DIR),
            placement(id),
            self.nonce,
            Recorder::default(),
        )
        .await
        .expect("opens");
        self.nodes[usize::from(id)] = Some(node);
    }

    fn node(&self, id: u8) -> &ClusterMetadata<SimStorage, Recorder> {
        self.nodes[usize::from(id)].as_ref().expect("up")
    }

    fn take(&mut self, effects: Vec<Effect>) {
        for effect in effects {
            match effect {
                Effect::Send(envelope) => self.queue.push_back(envelope),
                Effect::Reply {
                    client,
                    request,
                    op,
                    ..
                } => self.replies.push((client, request, op)),
            }
        }
    }

    async fn deliver(&mut self) {
        while let Some(envelope) = self.queue.pop_front() {
            let Some(node) = self.nodes[usize::from(envelope.to)].as_mut() else {
                continue;
            };
            let effects = node
                .on_message(envelope.from, envelope.message)
                .await
                .expect("storage works");
            self.take(effects);
        }
    }

    async fn tick(&mut self, ticks: u32) {
        for _ in 0..ticks {
            for id in 0..3 {
                if let Some(node) = self.nodes[id].as_mut() {
                    let effects = node.on_tick().await.expect("storage works");
                    self.take(effects);
                }
            }
            self.deliver().await;
        }
    }

    fn primary(&self) -> u8 {
        (0..3u8)
            .find(|&id| {
                self.nodes[usize::from(id)]
                    .as_ref()
                    .is_some_and(|n| n.group().replica().is_primary())
            })
            .expect("a primary")
    }

    async fn submit(&mut self, id: u8, op: MetadataOp) -> Submit {
        let node = self.nodes[usize::from(id)].as_mut().expect("up");
        let submit = node.submit(op, 5_000_000).await.expect("storage works");
        if let Submit::Prepared { effects, .. } = &submit {
            self.take(effects.clone());
            self.deliver().await;
        }
        submit
    }
}

#[compio::test]
async fn given_an_op_on_the_primary_when_committed_should_apply_everywhere_and_answer_it() {
    let mut cluster = Cluster::start().await;
    let primary = cluster.primary();
    let Submit::Prepared { request, .. } = cluster.submit(primary, create_stream("orders")).await
    else {
        panic!("the primary prepares a valid op");
    };
    let client = cluster.node(primary).client();
    let op = cluster
        .replies
        .iter()
        .find(|r| r.0 == client && r.1 == request)
        .map(|r| r.2)
        .expect("answered once committed");
    assert!(matches!(
        cluster.node(primary).outcome(op),
        Some(Ok(ApplyOutcome::StreamCreated { .. }))
    ));
    cluster.tick(5).await;
    for id in 0..3 {
        let node = cluster.node(id);
        assert_eq!(
            node.applier().applied,
            ["orders"],
            "replica {id} applied it"
        );
        assert!(node.state().streams().any(|s| s.name() == "orders"));
    }
}

#[compio::test]
async fn given_an_invalid_op_when_submitted_should_reject_it_without_an_op() {
    let mut cluster = Cluster::start().await;
    let primary = cluster.primary();
    assert!(matches!(
        cluster.submit(primary, create_stream("orders")).await,
        Submit::Prepared { .. }
    ));
    let head = cluster.node(primary).group().replica().head();
    // The same name again: rejected on the head state (the first one may
    // still be in the pipeline), and no op is consumed.
    assert!(matches!(
        cluster.submit(primary, create_stream("orders")).await,
        Submit::Rejected(_)
    ));
    assert_eq!(cluster.node(primary).group().replica().head(), head);
}

#[compio::test]
async fn given_a_backup_when_submitting_should_name_the_primary_to_try() {
    let mut cluster = Cluster::start().await;
    let primary = cluster.primary();
    let backup = (primary + 1) % 3;
    match cluster.submit(backup, create_stream("orders")).await {
        Submit::NotPrimary { view } => assert_eq!((view.0 % 3) as u8, primary),
        other => panic!("a backup refuses: {other:?}"),
    }
}

#[compio::test]
async fn given_a_restarted_replica_when_recovering_should_apply_the_history_again() {
    let mut cluster = Cluster::start().await;
    let primary = cluster.primary();
    for name in ["a", "b", "c"] {
        cluster.submit(primary, create_stream(name)).await;
    }
    cluster.tick(5).await;
    let backup = (primary + 1) % 3;
    cluster.nodes[usize::from(backup)] = None;
    let survived = cluster.storages[usize::from(backup)].crash(CrashMode::Clean);
    cluster.storages[usize::from(backup)] = survived;
    cluster.open(backup).await;
    cluster.tick(30).await;
    assert_eq!(cluster.node(backup).applier().applied, ["a", "b", "c"]);
}
