use storage::SimStorage;
use storage::journal::Journal;

use super::*;
use crate::metadata::{OpKind, UserId};

fn create_stream(name: &str, timestamp_us: u64) -> Vec<u8> {
    let op = MetadataOp {
        timestamp_us,
        actor: UserId(0),
        kind: OpKind::CreateStream {
            name: name.to_owned(),
        },
    };
    let mut out = Vec::new();
    op.encode(&mut out);
    out
}

#[compio::test]
async fn given_a_single_node_journal_when_replaying_should_reach_its_state_and_head() {
    let storage = SimStorage::new();
    let dir = std::path::Path::new("/data/metadata");
    let (journal, _) = Journal::open(storage.clone(), dir).await.expect("opens");
    for (i, name) in ["a", "b", "c"].iter().enumerate() {
        journal
            .append(&create_stream(name, 10 + i as u64))
            .expect("appended");
    }
    journal.sync().await.expect("synced");
    let (_, recovery) = Journal::open(storage, dir).await.expect("reopens");
    let replayed = replay(&recovery).expect("replays");
    assert_eq!(replayed.head, Op(3));
    assert_eq!(replayed.last_timestamp_us, 12);
    assert_eq!(replayed.state.streams_count(), 3);
}

#[compio::test]
async fn given_an_op_this_build_refuses_when_replaying_should_name_it() {
    let storage = SimStorage::new();
    let dir = std::path::Path::new("/data/metadata");
    let (journal, _) = Journal::open(storage.clone(), dir).await.expect("opens");
    journal.append(&create_stream("a", 1)).expect("appended");
    journal.append(&create_stream("a", 2)).expect("appended");
    journal.sync().await.expect("synced");
    let (_, recovery) = Journal::open(storage, dir).await.expect("reopens");
    let err = replay(&recovery).expect_err("a duplicate name does not apply");
    assert!(
        matches!(err, ReplayError::Apply { sequence: 2, .. }),
        "{err}"
    );
}
