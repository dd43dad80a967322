//! The metadata group's commit path over the storage seam: the consensus
//! core (`consensus::Replica`, a group of one here) numbers and stamps each
//! operation, the journal makes it durable, and only then is it handed back
//! to be applied. The server queues submissions and broadcasts what this
//! returns; the order lives here, so the simulated disk can check it.
//!
//! Order of events for a batch: `prepare` stamps an operation (op number =
//! journal sequence, timestamp from the replica), validates it on the
//! *head* state (the applied state plus everything prepared; a rejection
//! consumes no op) and appends it to the journal unsynced; `commit` fsyncs
//! the journal once and returns the ops that became committed, which the
//! caller applies to the public state in order, reporting each with
//! `applied`. `snapshot` compacts the journal behind the public state.
//!
//! Invariants: journal sequence = op number; nothing is returned for
//! applying before the fsync that covers it; the head state is the public
//! state plus the pipeline, so a committed op applies as it was validated.

#[cfg(test)]
mod tests;

use std::cell::{Cell, RefCell};
use std::ops::RangeInclusive;

use consensus::{Durability, GroupConfig, Op, Recovered, Replica, View};
use storage::journal::{Journal, JournalRecovery};
use storage::{Storage, StorageError};

use crate::metadata::{ApplyOutcome, MetadataError, MetadataOp, MetadataState};

/// An operation prepared at op `number`, with the outcome its apply will
/// have.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub op: MetadataOp,
    pub number: Op,
    pub outcome: ApplyOutcome,
}

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

/// The metadata group of one replica.
pub struct MetadataGroup<S: Storage> {
    journal: Journal<S>,
    replica: RefCell<Replica>,
    head: RefCell<MetadataState>,
    /// The op the last snapshot covers.
    snapshot_op: Cell<Op>,
}

impl<S: Storage> MetadataGroup<S> {
    /// Resumes the group on `journal`, whose ops through `head` produced
    /// `state` (a group of one has committed its whole journal).
    pub fn new(
        journal: Journal<S>,
        state: &MetadataState,
        head: Op,
        last_timestamp_us: u64,
    ) -> Self {
        assert_eq!(
            journal.last_sequence(),
            head.0,
            "the state was replayed from this journal"
        );
        let replica = Replica::open(
            GroupConfig::single(Durability::Synced),
            Recovered {
                view: View(0),
                head,
                last_timestamp_us,
            },
        );
        MetadataGroup {
            snapshot_op: Cell::new(head),
            journal,
            replica: RefCell::new(replica),
            head: RefCell::new(state.clone()),
        }
    }

    /// The highest committed op.
    pub fn commit_max(&self) -> Op {
        self.replica.borrow().commit_max()
    }

    /// The newest timestamp an op of this group carries.
    pub fn last_timestamp_us(&self) -> u64 {
        self.replica.borrow().last_timestamp_us()
    }

    /// Ops prepared but not yet committed.
    pub fn pipeline_len(&self) -> u64 {
        let replica = self.replica.borrow();
        replica.head().0 - replica.commit_max().0
    }

    /// Stamps `op`, validates it on the head state and appends it to the
    /// journal (not yet synced). `Ok(Err(_))`: rejected, nothing changed.
    pub fn prepare(
        &self,
        mut op: MetadataOp,
    ) -> Result<Result<Prepared, MetadataError>, StorageError> {
        let now_us = op.timestamp_us;
        op.timestamp_us = self.replica.borrow().next_timestamp(now_us);
        let outcome = match self.head.borrow_mut().apply(&op) {
            Ok(outcome) => outcome,
            Err(rejected) => return Ok(Err(rejected)),
        };
        let prepared = self
            .replica
            .borrow_mut()
            .prepare(now_us)
            .expect("the caller prepares at most a pipeline's worth before committing");
        assert_eq!(
            prepared.timestamp_us, op.timestamp_us,
            "stamped as validated"
        );
        let mut bytes = Vec::with_capacity(128);
        op.encode(&mut bytes);
        let sequence = self.journal.append(&bytes)?;
        assert_eq!(sequence, prepared.op.0, "journal sequence = op number");
        Ok(Ok(Prepared {
            op,
            number: prepared.op,
            outcome,
        }))
    }

    /// Fsyncs the journal and returns the ops that became committed (every
    /// prepared one), to apply in order. On an error nothing is committed;
    /// a full disk (`NoSpace`) may be retried, anything else is fatal.
    pub async fn commit(&self) -> Result<Option<RangeInclusive<Op>>, StorageError> {
        let head = self.replica.borrow().head();
        if head == self.commit_max() {
            return Ok(None);
        }
        self.journal.sync().await?;
        let committed = self.replica.borrow_mut().on_synced(head);
        assert_eq!(
            committed.as_ref().map(|ops| *ops.end()),
            Some(head),
            "a group of one commits what it fsynced"
        );
        Ok(committed)
    }

    /// The caller applied op `number` (the next committed op) to the
    /// public state.
    pub fn applied(&self, number: Op) {
        self.replica.borrow_mut().on_applied(number);
    }

    /// Once `every_ops` ops accumulated since the last snapshot, writes the
    /// one `encode_public` returns (the public state, which has applied
    /// every journaled op) and compacts the journal behind it. Returns
    /// whether it wrote one.
    pub async fn snapshot(
        &self,
        every_ops: u64,
        encode_public: impl FnOnce() -> Vec<u8>,
    ) -> Result<bool, StorageError> {
        let op = self.replica.borrow().commit_min();
        if op.0 < self.snapshot_op.get().0 + every_ops {
            return Ok(false);
        }
        assert_eq!(
            self.journal.last_sequence(),
            op.0,
            "a snapshot is taken with nothing prepared beyond the applied state"
        );
        self.journal.write_snapshot(op.0, encode_public()).await?;
        self.snapshot_op.set(op);
        Ok(true)
    }

    pub async fn close(&self) -> Result<(), StorageError> {
        self.journal.sync().await
    }
}
