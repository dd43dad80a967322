//! A group's first checkpoint written for state kept outside any group
//! (`seed_checkpoint`).

use std::path::Path;

use bytes::Bytes;
use consensus::vsr::message::{Entry, Snapshot};
use consensus::{ClientId, Op, RequestNumber, View};
use storage::journal::Journal;
use storage::{Storage, StorageError};

use super::{encode_snapshot, put_u32};

/// Writes a group's first checkpoint into the empty journal in `dir`: the
/// machine's state `state` (its `snapshot` bytes) as of op `op`, with no
/// clients and no replies (a group adopting state kept outside it, such
/// as a single node's data brought up as a group of one). The group then
/// opens from it as from any checkpoint of its own.
pub async fn seed_checkpoint<S: Storage>(
    storage: S,
    dir: &Path,
    op: Op,
    timestamp_us: u64,
    state: &[u8],
) -> Result<(), StorageError> {
    let (journal, recovery) = Journal::open(storage, dir).await?;
    // Precondition: nothing of the group is there yet.
    assert!(
        recovery.snapshot.is_none() && recovery.records.is_empty(),
        "a checkpoint is seeded only into an empty journal"
    );
    let request = consensus::vsr::message::Request {
        client: ClientId(0),
        number: RequestNumber(0),
        body: Bytes::new(),
    };
    let entry = Entry::new(op, View(0), 0, request, timestamp_us);
    let mut with_replies = Vec::with_capacity(4 + state.len());
    put_u32(&mut with_replies, 0);
    with_replies.extend_from_slice(state);
    let snapshot = Snapshot {
        entry,
        clients: Vec::new(),
        state: with_replies,
    };
    journal
        .install_snapshot(op.0, encode_snapshot(&snapshot))
        .await?;
    // Postcondition: the next op the journal takes follows the checkpoint.
    assert_eq!(journal.last_sequence(), op.0, "seeded at its op");
    Ok(())
}
