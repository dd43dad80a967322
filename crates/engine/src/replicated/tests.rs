//! Three replicas of one group over simulated disks, in one process: the
//! driver performs the real replica's actions on the real journal and
//! superblock code, and a queue stands in for the replica links.

use std::path::Path;

use consensus::vsr::message::Request;
use consensus::vsr::{Limits, Status};
use consensus::{ClientId, Op, RequestNumber, View};
use storage::{SimStorage, Storage};

use super::net::{Net, placement};
use super::*;

/// A state machine that keeps every body it applied, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Log(Vec<Vec<u8>>);

impl StateMachine for Log {
    async fn apply(&mut self, entry: &Entry) -> Vec<u8> {
        self.0.push(entry.body.to_vec());
        entry.op.0.to_le_bytes().to_vec()
    }
    fn persist_beside(&mut self) -> Option<Work> {
        Some(Box::pin(async { Ok(()) }))
    }
    fn snapshot(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for body in &self.0 {
            out.push(u8::try_from(body.len()).expect("short bodies"));
            out.extend_from_slice(body);
        }
        out
    }
    async fn restore(&mut self, mut bytes: &[u8], _: Restore) -> Result<(), String> {
        let mut bodies = Vec::new();
        while let Some((&len, rest)) = bytes.split_first() {
            let (body, rest) = rest.split_at_checked(usize::from(len)).ok_or("cut short")?;
            bodies.push(body.to_vec());
            bytes = rest;
        }
        self.0 = bodies;
        Ok(())
    }
}

const DIR: &str = "/data/metadata";

struct Cluster {
    net: Net<Group<SimStorage, Log>>,
    limits: Limits,
    nonce: u64,
    /// Each replica's boot nonce.
    nonces: [u64; 3],
}

impl Cluster {
    async fn start(limits: Limits) -> Cluster {
        let mut cluster = Cluster {
            net: Net::new(3),
            limits,
            nonce: 100,
            nonces: [0; 3],
        };
        for id in 0..3 {
            cluster.open(id).await;
        }
        cluster
    }

    async fn open(&mut self, id: u8) {
        self.nonce += 1;
        self.nonces[usize::from(id)] = self.nonce;
        let storage = self.net.storages[usize::from(id)].clone();
        storage.create_dir_all(Path::new(DIR)).await.expect("dir");
        let mut group = Group::open(
            storage,
            Path::new(DIR),
            placement(id, self.limits),
            self.nonce,
            Log(Vec::new()),
        )
        .await
        .expect("opens");
        // Both ways of checkpointing in every test: replica 1 writes its
        // checkpoints beside the group, the others in line.
        if id == 1 {
            group.checkpoint_beside();
        }
        self.net.nodes[usize::from(id)] = Some(group);
    }

    fn group(&self, id: u8) -> &Group<SimStorage, Log> {
        self.net.node(id)
    }

    async fn tick(&mut self, ticks: u32) {
        self.net.tick(ticks).await;
    }

    fn primary(&self) -> u8 {
        self.net.primary()
    }

    async fn request(&mut self, client: u128, number: u64, body: &[u8]) {
        let primary = self.primary();
        let request = Request {
            client: ClientId(client),
            number: RequestNumber(number),
            body: body.to_vec().into(),
        };
        let group = self.net.node_mut(primary);
        let effects = group
            .on_request(request, 1_000 * number)
            .await
            .expect("storage works")
            .expect("admitted");
        self.net.take(effects);
        self.net.deliver().await;
    }

    /// Kills replica `id` (power loss: only synced state survives) and
    /// starts it again on what survived.
    async fn restart(&mut self, id: u8) {
        self.net.power_loss(id);
        self.open(id).await;
    }
}

fn bodies(range: std::ops::RangeInclusive<u8>) -> Vec<Vec<u8>> {
    range.map(|b| vec![b]).collect()
}

#[compio::test]
async fn given_three_blank_replicas_when_started_should_elect_commit_and_apply_everywhere() {
    let mut cluster = Cluster::start(Limits::default()).await;
    cluster.tick(30).await;
    let primary = cluster.primary();
    assert!(
        cluster.group(primary).replica().view() >= View(1),
        "elected by genesis"
    );
    for number in 1..=3 {
        cluster.request(9, number, &[number as u8]).await;
    }
    cluster.tick(5).await;
    assert_eq!(
        cluster.net.replies.last().map(|r| (r.2, r.3.clone())),
        Some((Op(3), 3u64.to_le_bytes().to_vec())),
        "the reply carries the state machine's result"
    );
    for id in 0..3 {
        assert_eq!(
            cluster.group(id).machine().0,
            bodies(1..=3),
            "replica {id} applied all"
        );
    }
}

#[compio::test]
async fn given_a_primary_that_lost_its_view_when_the_next_view_commits_its_op_should_answer_it() {
    let mut cluster = Cluster::start(Limits::default()).await;
    cluster.tick(30).await;
    let old = cluster.primary();
    let mut own = Submitter::new(cluster.nonces[usize::from(old)], old);
    // The backups journal the prepare, but their acks never reach the
    // primary; then it is cut off altogether and the others move on.
    let Submitted::Prepared { request, effects } = own
        .submit(cluster.net.node_mut(old), b"kept".to_vec(), 1_000)
        .await
        .expect("storage works")
    else {
        panic!("the primary admits it");
    };
    cluster.net.deaf = Some(old);
    cluster.net.take(effects);
    cluster.net.deliver().await;
    cluster.net.cut = Some(old);
    cluster.net.deaf = None;
    cluster.tick(200).await;
    let new = (0..3)
        .find(|&id| id != old && cluster.group(id).replica().is_primary())
        .expect("the others elected a primary");
    assert_eq!(cluster.group(new).machine().0, vec![b"kept".to_vec()]);
    // The new primary answered the request for the old one's client (the
    // server drops such an answer: that client is not its own); only the
    // old primary's own answer counts from here.
    cluster.net.replies.clear();
    // Healed: the old primary joins the new view as a backup, applies the
    // op and answers its submission with the state machine's result.
    cluster.net.cut = None;
    cluster.tick(200).await;
    assert!(!cluster.group(old).replica().is_primary());
    assert_eq!(cluster.group(old).machine().0, vec![b"kept".to_vec()]);
    let answers: Vec<_> = cluster
        .net
        .replies
        .iter()
        .filter(|(client, number, _, _)| *client == own.client() && *number == request)
        .collect();
    assert_eq!(answers.len(), 1, "answered once, as it applied");
    assert_eq!(answers[0].3, answers[0].2.0.to_le_bytes().to_vec());
}

#[compio::test]
async fn given_a_backup_killed_by_power_loss_when_restarted_should_recover_from_its_journal() {
    let mut cluster = Cluster::start(Limits::default()).await;
    cluster.tick(30).await;
    for number in 1..=4 {
        cluster.request(9, number, &[number as u8]).await;
    }
    let backup = (cluster.primary() + 1) % 3;
    cluster.restart(backup).await;
    assert_eq!(cluster.group(backup).replica().status(), Status::Recovering);
    assert_eq!(
        cluster.group(backup).replica().head(),
        Op(4),
        "every acknowledged op survived in its journal"
    );
    cluster.request(9, 5, &[5]).await;
    cluster.tick(20).await;
    assert_eq!(cluster.group(backup).replica().status(), Status::Normal);
    assert_eq!(cluster.group(backup).machine().0, bodies(1..=5));
}

#[compio::test]
async fn given_checkpoints_when_a_replica_is_wiped_should_refill_by_state_transfer() {
    let limits = Limits {
        checkpoint_interval: 4,
        checkpoint_bytes: u64::MAX,
        state_chunk_max: 5,
    };
    let mut cluster = Cluster::start(limits).await;
    cluster.tick(30).await;
    for number in 1..=10 {
        cluster.request(9, number, &[number as u8]).await;
        // A checkpoint written beside the group finishes at a tick.
        cluster.tick(1).await;
    }
    cluster.tick(5).await;
    let primary = cluster.primary();
    assert!(cluster.group(primary).replica().checkpoint_op() >= Op(8));
    // Wipe a backup: a new, empty disk.
    let wiped = (primary + 1) % 3;
    cluster.net.nodes[usize::from(wiped)] = None;
    cluster.net.storages[usize::from(wiped)] = SimStorage::new();
    cluster.open(wiped).await;
    assert!(cluster.group(wiped).replica().is_blank());
    cluster.tick(60).await;
    let replica = cluster.group(wiped).replica();
    assert_eq!(replica.status(), Status::Normal);
    assert!(
        replica.checkpoint_op() >= Op(8),
        "refilled from a checkpoint"
    );
    assert_eq!(cluster.group(wiped).machine().0, bodies(1..=10));
    // A retry of the first request is answered from the transferred table
    // once the wiped replica leads: check its table through a restart of
    // its own disk instead (the checkpoint is durable).
    cluster.restart(wiped).await;
    assert_eq!(cluster.group(wiped).machine().0[..8], bodies(1..=8)[..]);
}

#[test]
fn given_a_snapshot_when_encoded_should_decode_to_it() {
    let entry = consensus::vsr::message::Entry::new(
        Op(4),
        View(1),
        0x44,
        Request {
            client: ClientId(3),
            number: RequestNumber(2),
            body: b"four".to_vec().into(),
        },
        77,
    );
    let snapshot = Snapshot {
        entry,
        clients: vec![(ClientId(3), RequestNumber(2), Op(4))],
        state: b"state".to_vec(),
    };
    let bytes = encode_snapshot(&snapshot);
    assert_eq!(
        bytes[..4],
        [(64 + 4) as u8, 0, 0, 0],
        "golden: entry length"
    );
    assert_eq!(decode_snapshot(&bytes), Ok(snapshot));
    assert!(decode_snapshot(&bytes[..bytes.len() - 1]).is_err());
}

/// The created-view floor (replication spec §5.6): a superblock whose
/// log view lies below the group's committed creation view is refused,
/// naming the directory and both views, before any file changes; log view
/// 0 (never set) boots as the created view.
#[compio::test]
async fn given_a_superblock_below_the_created_view_when_opening_should_refuse_it_unchanged() {
    let storage = SimStorage::new();
    let dir = Path::new(DIR);
    storage.create_dir_all(dir).await.expect("dir");
    let mut placement = placement(1, Limits::default());
    placement.created_view = View(4);
    let written = Superblock {
        identity: placement.identity,
        view: 5,
        log_view: 2,
        uncertain: false,
    };
    superblock::store(&storage, dir, None, &written)
        .await
        .expect("stored");
    let before = files(&storage, dir).await;
    assert!(!before.is_empty());
    let refused = Group::open(storage.clone(), dir, placement, 9, Log(Vec::new())).await;
    let Err(error) = refused else {
        panic!("a superblock below the floor must be refused");
    };
    let text = error.to_string();
    assert!(
        matches!(
            error,
            GroupError::BelowCreatedView {
                log_view: 2,
                created_view: 4,
                ..
            }
        ),
        "{text}"
    );
    assert!(text.contains(DIR) && text.contains("falls below committed creation view"));
    assert_eq!(files(&storage, dir).await, before, "nothing changed");

    // Log view 0 (never set) is read as the created view.
    let storage = SimStorage::new();
    storage.create_dir_all(dir).await.expect("dir");
    let unset = Superblock {
        log_view: 0,
        ..written
    };
    superblock::store(&storage, dir, None, &unset)
        .await
        .expect("stored");
    let group = Group::open(storage, dir, placement, 10, Log(Vec::new()))
        .await
        .expect("opens");
    assert!(group.replica().view() >= View(5));
}

/// Every file in `dir` with its bytes, by name.
async fn files(storage: &SimStorage, dir: &Path) -> Vec<(String, Option<Vec<u8>>)> {
    let mut names = storage.read_dir(dir).await.expect("listed");
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let bytes = storage.file_bytes(&dir.join(&name));
            (name, bytes)
        })
        .collect()
}
