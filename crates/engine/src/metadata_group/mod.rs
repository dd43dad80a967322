//! The metadata journal of the earlier single-node build
//! (`metadata/journal.wal`, `metadata/snapshot.bin`: one record per op,
//! the op's encoding; the snapshot the state's), read once, when a group
//! of one adopts that build's data directory (the server's `boot/adopt`).
//! Every journaled op was committed on that single node, so the whole
//! journal replays.

#[cfg(test)]
mod tests;

use consensus::Op;
use storage::journal::JournalRecovery;

use crate::metadata::{MetadataError, MetadataOp, MetadataState};

/// Why a journal could not be replayed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("metadata snapshot {sequence} is unreadable: {reason}")]
    Snapshot { sequence: u64, reason: String },
    #[error("metadata journal entry {sequence} cannot be decoded: {reason}")]
    Decode { sequence: u64, reason: String },
    #[error("metadata journal entry {sequence} does not apply: {source}")]
    Apply {
        sequence: u64,
        source: MetadataError,
    },
}

/// The state a journal replays to, and where its numbering stands.
#[derive(Debug)]
pub struct Replayed {
    pub state: MetadataState,
    /// The journal's last op (every op in it is committed on a group of
    /// one).
    pub head: Op,
    pub last_timestamp_us: u64,
}

/// Replays a journal's snapshot and records into a state machine. Every
/// journaled op applied cleanly when it was committed, so a rejection here
/// means the journal and this build disagree.
pub fn replay(recovery: &JournalRecovery) -> Result<Replayed, ReplayError> {
    let mut state = match &recovery.snapshot {
        Some(snapshot) => MetadataState::decode_snapshot(&snapshot.payload).map_err(|e| {
            ReplayError::Snapshot {
                sequence: snapshot.sequence,
                reason: e.to_string(),
            }
        })?,
        None => MetadataState::new(),
    };
    let mut head = recovery.snapshot.as_ref().map_or(0, |s| s.sequence);
    let mut last_timestamp_us = 0;
    for record in &recovery.records {
        assert_eq!(record.sequence, head + 1, "journal records are consecutive");
        let op = MetadataOp::decode(&record.payload).map_err(|e| ReplayError::Decode {
            sequence: record.sequence,
            reason: e.to_string(),
        })?;
        state.apply(&op).map_err(|source| ReplayError::Apply {
            sequence: record.sequence,
            source,
        })?;
        head = record.sequence;
        last_timestamp_us = op.timestamp_us.max(last_timestamp_us);
    }
    Ok(Replayed {
        state,
        head: Op(head),
        last_timestamp_us,
    })
}
