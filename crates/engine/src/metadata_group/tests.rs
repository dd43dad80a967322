//! The commit order on the simulated disk: whatever was handed out for
//! applying (and so could have been seen by a reader or acknowledged) is in
//! the journal that survives a power loss at any sync.

use std::path::PathBuf;

use storage::SimStorage;
use storage::journal::Journal;
use storage::seam::{CrashMode, SimFaults};

use super::*;
use crate::metadata::permissions::Permissions;
use crate::metadata::user::UserStatus;
use crate::metadata::{OpKind, UserId};

fn dir() -> PathBuf {
    PathBuf::from("/data/metadata")
}

async fn open(storage: &SimStorage) -> (MetadataGroup<SimStorage>, MetadataState) {
    let (journal, recovery) = Journal::open(storage.clone(), &dir()).await.expect("open");
    let replayed = replay(&recovery).expect("replay");
    let group = MetadataGroup::new(
        journal,
        &replayed.state,
        replayed.head,
        replayed.last_timestamp_us,
    );
    (group, replayed.state)
}

fn op(kind: OpKind) -> MetadataOp {
    MetadataOp {
        timestamp_us: 1_000,
        actor: UserId::ROOT,
        kind,
    }
}

fn create_stream(name: String) -> MetadataOp {
    op(OpKind::CreateStream { name })
}

fn stream_names(state: &MetadataState) -> Vec<String> {
    let mut names: Vec<String> = state.streams().map(|s| s.name().to_owned()).collect();
    names.sort();
    names
}

/// Prepares `ops`, commits, and applies what was committed to `public`.
async fn commit_batch(
    group: &MetadataGroup<SimStorage>,
    public: &mut MetadataState,
    ops: Vec<MetadataOp>,
) -> Result<(), StorageError> {
    let mut prepared = Vec::new();
    for op in ops {
        if let Ok(p) = group.prepare(op)? {
            prepared.push(p);
        }
    }
    let Some(committed) = group.commit().await? else {
        return Ok(());
    };
    let count = committed.end().0 - committed.start().0 + 1;
    assert_eq!(count as usize, prepared.len());
    for p in prepared {
        let outcome = public.apply(&p.op).expect("a committed op applies");
        assert_eq!(outcome, p.outcome);
        group.applied(p.number);
    }
    Ok(())
}

async fn bootstrap(storage: &SimStorage) {
    let (group, mut public) = open(storage).await;
    let root = op(OpKind::CreateUser {
        username: "root".into(),
        password_hash: "hash".into(),
        status: UserStatus::Active,
        permissions: Some(Permissions::root()),
    });
    commit_batch(&group, &mut public, vec![root]).await.unwrap();
}

#[compio::test]
async fn given_power_loss_at_every_sync_when_replaying_should_hold_every_applied_op() {
    for crash_at in 0..12u64 {
        let storage = SimStorage::new();
        bootstrap(&storage).await;
        let (group, mut public) = open(&storage).await;
        storage.set_faults(SimFaults {
            crash_after_syncs: Some(storage.syncs_done() + crash_at),
            ..SimFaults::default()
        });
        let mut batch = 0;
        while batch < 8 {
            let ops = (0..3)
                .map(|i| create_stream(format!("s{batch}-{i}")))
                .collect();
            if commit_batch(&group, &mut public, ops).await.is_err() {
                break;
            }
            batch += 1;
        }
        let applied = stream_names(&public);
        let (_, recovered) = open(&storage.crash(CrashMode::Clean)).await;
        let durable = stream_names(&recovered);
        for name in &applied {
            assert!(
                durable.contains(name),
                "crash after sync {crash_at}: {name} was applied but is not durable"
            );
        }
        assert_eq!(applied.len(), batch * 3, "crash after sync {crash_at}");
    }
}

#[compio::test]
async fn given_rejected_op_when_preparing_should_consume_no_op_number() {
    let storage = SimStorage::new();
    bootstrap(&storage).await;
    let (group, mut public) = open(&storage).await;
    let head = group.commit_max();
    commit_batch(&group, &mut public, vec![create_stream("a".into())])
        .await
        .unwrap();
    let again = group.prepare(create_stream("a".into())).unwrap();
    assert!(again.is_err(), "a duplicate name is rejected");
    assert_eq!(group.pipeline_len(), 0);
    let next = group.prepare(create_stream("b".into())).unwrap().unwrap();
    assert_eq!(next.number, Op(head.0 + 2), "op numbers have no gaps");
    assert!(next.op.timestamp_us > 1_000, "timestamps strictly increase");
}

#[compio::test]
async fn given_restart_when_reopening_should_continue_the_op_numbering() {
    let storage = SimStorage::new();
    bootstrap(&storage).await;
    let (group, mut public) = open(&storage).await;
    let ops = (0..5).map(|i| create_stream(format!("s{i}"))).collect();
    commit_batch(&group, &mut public, ops).await.unwrap();
    let before = group.commit_max();
    let written = group.snapshot(3, || {
        let mut payload = Vec::new();
        public.encode_snapshot(&mut payload);
        payload
    });
    assert!(written.await.unwrap(), "enough ops for a snapshot");
    let (reopened, state) = open(&storage.crash(CrashMode::Clean)).await;
    assert_eq!(
        reopened.commit_max(),
        before,
        "numbering survives a snapshot"
    );
    assert_eq!(stream_names(&state).len(), 5);
    let next = reopened
        .prepare(create_stream("z".into()))
        .unwrap()
        .unwrap();
    assert_eq!(next.number, Op(before.0 + 1));
}
