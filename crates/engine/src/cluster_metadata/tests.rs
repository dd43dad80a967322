//! Three metadata replicas over simulated disks in one process: ops
//! submitted on the primary are validated, committed through VSR and
//! applied on every replica, in order, through its applier.

use std::path::Path;

use consensus::vsr::Limits;
use storage::{SimStorage, Storage};

use super::*;
use crate::metadata::{OpKind, UserId};
use consensus::vsr::VsrReplica;
use consensus::vsr::message::{Message, ReplicaId};

use crate::replicated::net::{Member, Net, placement};

impl<S: Storage, A: Applier> Member for ClusterMetadata<S, A> {
    async fn message(&mut self, from: ReplicaId, message: Message) -> Vec<Effect> {
        self.on_message(from, message).await.expect("storage works")
    }
    async fn tick(&mut self) -> Vec<Effect> {
        self.on_tick().await.expect("storage works")
    }
    fn replica(&self) -> &VsrReplica {
        self.group().replica()
    }
}

/// Records what it was given, as the server's shards would apply it.
#[derive(Default)]
struct Recorder {
    applied: Vec<String>,
    restored: usize,
}

impl Applier for Recorder {
    async fn apply(
        &mut self,
        _number: Op,
        op: &MetadataOp,
        _outcome: &ApplyOutcome,
        _created: &CreatedViews,
    ) {
        if let OpKind::CreateStream { name } = &op.kind {
            self.applied.push(name.clone());
        }
    }
    async fn restored(&mut self, _state: &MetadataState, _commit: Op, _created: &CreatedViews) {
        self.restored += 1;
    }
}

const DIR: &str = "/data/cluster/metadata";

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
    net: Net<ClusterMetadata<SimStorage, Recorder>>,
    nonce: u64,
    limits: Limits,
}

impl Cluster {
    async fn start() -> Cluster {
        Cluster::start_with(Limits::default()).await
    }

    async fn start_with(limits: Limits) -> Cluster {
        let mut cluster = Cluster {
            net: Net::new(3),
            nonce: 500,
            limits,
        };
        for id in 0..3 {
            cluster.open(id).await;
        }
        cluster.net.tick(30).await;
        cluster
    }

    async fn open(&mut self, id: u8) {
        self.nonce += 1;
        let storage = self.net.storages[usize::from(id)].clone();
        storage.create_dir_all(Path::new(DIR)).await.expect("dir");
        let node = ClusterMetadata::open(
            storage,
            Path::new(DIR),
            placement(id, self.limits),
            self.nonce,
            Recorder::default(),
        )
        .await
        .expect("opens");
        self.net.nodes[usize::from(id)] = Some(node);
    }

    fn node(&self, id: u8) -> &ClusterMetadata<SimStorage, Recorder> {
        self.net.node(id)
    }

    async fn tick(&mut self, ticks: u32) {
        self.net.tick(ticks).await;
    }

    fn primary(&self) -> u8 {
        self.net.primary()
    }

    async fn submit(&mut self, id: u8, op: MetadataOp) -> Submit {
        let node = self.net.node_mut(id);
        let submit = node.submit(op, 5_000_000).await.expect("storage works");
        if let Submit::Prepared { effects, .. } = &submit {
            self.net.take(effects.clone());
            self.net.deliver().await;
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
        .net
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
    cluster.net.power_loss(backup);
    cluster.open(backup).await;
    cluster.tick(30).await;
    assert_eq!(cluster.node(backup).applier().applied, ["a", "b", "c"]);
}

#[compio::test]
async fn given_a_checkpoint_when_a_replica_restarts_should_restore_it_then_apply_the_rest() {
    let limits = Limits {
        checkpoint_interval: 4,
        ..Limits::default()
    };
    let mut cluster = Cluster::start_with(limits).await;
    let primary = cluster.primary();
    let names: Vec<String> = (0..7).map(|i| format!("s{i}")).collect();
    for name in &names {
        cluster.submit(primary, create_stream(name)).await;
    }
    cluster.tick(5).await;
    let backup = (primary + 1) % 3;
    assert!(cluster.node(backup).group().replica().checkpoint_op() >= Op(4));
    cluster.net.power_loss(backup);
    cluster.open(backup).await;
    let node = cluster.node(backup);
    assert_eq!(
        node.applier().restored,
        1,
        "the checkpoint was handed over once"
    );
    cluster.tick(30).await;
    let node = cluster.node(backup);
    let mut listed: Vec<String> = node
        .state()
        .streams()
        .map(|s| s.name().to_owned())
        .collect();
    listed.sort();
    assert_eq!(
        listed, names,
        "the checkpoint's streams and those applied after it"
    );
}
