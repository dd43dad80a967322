//! The metadata commit path on shard 0: a group of one driven through the
//! consensus core (`consensus::Replica`).
//!
//! Submissions queue in arrival order. One task drains at most a
//! pipeline's worth at a time. Each operation is stamped (op number and a
//! strictly increasing timestamp from the replica) and validated against
//! the committer's *head* state (the public state plus every prepared op);
//! a rejection changes nothing and is answered at once. Accepted ones are
//! appended to the journal as op `n` (the journal's sequence), the journal
//! is fsynced once for the batch (group commit), and only then does the
//! replica commit them: they are applied to shard 0's public replica,
//! broadcast to the other shards and answered, in op order. Readers never
//! see an operation that is not durable. On a full disk the journal keeps
//! its entries and the sync is retried every second (nothing is answered
//! meanwhile); any other journal failure stops the process.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

/// How often a journal sync is retried on a full disk.
const NO_SPACE_RETRY: Duration = Duration::from_secs(1);

use consensus::replica::PIPELINE_DEPTH_DEFAULT;
use consensus::{Durability, GroupConfig, Op, Recovered, Replica, View};
use crossfire::oneshot::{RxOneshot, TxOneshot, oneshot};
use engine::metadata::{ApplyOutcome, MetadataError, MetadataOp, MetadataState};
use tracing::error;

use super::Node;
use super::shard_message::ShardMessage;
use storage::RealStorage;
use storage::journal::Journal;

/// What the committer answers a submission with.
#[derive(Debug)]
pub struct CommitResult {
    pub outcome: Result<ApplyOutcome, MetadataError>,
    /// The commit number after this operation (the current one on rejection).
    pub commit: u64,
}

type Submission = (MetadataOp, TxOneshot<CommitResult>);

/// Durable operations between metadata snapshots; a snapshot lets the WAL
/// prefix it covers be compacted away, bounding recovery time.
pub const SNAPSHOT_EVERY_OPS: u64 = 1000;

pub struct Committer {
    queue: RefCell<VecDeque<Submission>>,
    /// Journal sequence covered by the last snapshot.
    snapshot_sequence: std::cell::Cell<u64>,
    wake: RefCell<Option<TxOneshot<()>>>,
    journal: Journal<RealStorage>,
    /// The metadata group's op numbering, timestamps and commit rule.
    replica: RefCell<Replica>,
    /// The public state with every prepared op applied: new operations are
    /// validated here, so the public state only ever holds durable ops.
    head: RefCell<MetadataState>,
}

/// What boot recovered, for the committer to resume from.
pub struct CommitterStart<'a> {
    pub metadata_dir: &'a std::path::Path,
    pub state: &'a MetadataState,
    /// The journal's last op (= the committed op on a group of one).
    pub head: Op,
    pub last_timestamp_us: u64,
}

impl Committer {
    /// Opens the journal for appending (boot replayed it) and resumes the
    /// metadata group at its journal head.
    pub async fn open(start: CommitterStart<'_>) -> anyhow::Result<Self> {
        let dir = start.metadata_dir;
        let (journal, _) = Journal::open(RealStorage, dir).await.map_err(|e| {
            anyhow::anyhow!("cannot open the metadata journal in {}: {e}", dir.display())
        })?;
        assert_eq!(
            journal.last_sequence(),
            start.head.0,
            "boot recovered the journal this committer reopened"
        );
        let replica = Replica::open(
            GroupConfig::single(Durability::Synced),
            Recovered {
                view: View(0),
                head: start.head,
                last_timestamp_us: start.last_timestamp_us,
            },
        );
        let snapshot_sequence = std::cell::Cell::new(journal.last_sequence());
        Ok(Self {
            queue: RefCell::new(VecDeque::new()),
            snapshot_sequence,
            wake: RefCell::new(None),
            journal,
            replica: RefCell::new(replica),
            head: RefCell::new(start.state.clone()),
        })
    }

    pub async fn close(&self) {
        if let Err(e) = self.journal.sync().await {
            error!("final sync of the metadata journal failed: {e}");
        }
    }

    pub fn enqueue(&self, op: MetadataOp) -> RxOneshot<CommitResult> {
        let (tx, rx) = oneshot();
        self.queue.borrow_mut().push_back((op, tx));
        if let Some(wake) = self.wake.borrow_mut().take() {
            wake.send(());
        }
        rx
    }

    /// The drain loop; runs for the life of shard 0.
    pub async fn run(node: Rc<Node>) {
        let committer = node
            .committer
            .as_ref()
            .expect("the committer runs on shard 0");
        loop {
            let batch: Vec<Submission> = {
                // At most a pipeline's worth: the batch commits as a whole
                // before the next one is prepared.
                let mut queue = committer.queue.borrow_mut();
                let take = queue.len().min(PIPELINE_DEPTH_DEFAULT);
                queue.drain(..take).collect()
            };
            if batch.is_empty() {
                let (tx, rx) = oneshot();
                *committer.wake.borrow_mut() = Some(tx);
                if !committer.queue.borrow().is_empty() {
                    continue;
                }
                if rx.await.is_err() {
                    return;
                }
                continue;
            }
            committer.commit_batch(&node, batch).await;
        }
    }

    async fn commit_batch(&self, node: &Rc<Node>, batch: Vec<Submission>) {
        let mut prepared = Vec::with_capacity(batch.len());
        for (op, reply) in batch {
            match self.prepare(op) {
                Err(e) => reply.send(CommitResult {
                    outcome: Err(e),
                    commit: self.replica.borrow().commit_max().0,
                }),
                Ok(entry) => prepared.push((entry, reply)),
            }
        }
        let Some(((_, last, _), _)) = prepared.last() else {
            return;
        };
        let last = *last;
        self.sync().await;
        let committed = self.replica.borrow_mut().on_synced(last);
        assert_eq!(
            committed.map(|ops| *ops.end()),
            Some(last),
            "a group of one commits what it fsynced"
        );
        for ((op, number, prepared_outcome), reply) in prepared {
            let outcome = node
                .apply_local(&op)
                .expect("a committed op applies on the public state as on the head state");
            assert_eq!(outcome, prepared_outcome, "apply is deterministic");
            self.replica.borrow_mut().on_applied(number);
            let commit = number.0;
            let acks = broadcast(node, Arc::new(op), commit).await;
            node.mark_applied(commit);
            node.on_applied(&outcome).await;
            // The answer waits for every shard, so an acknowledged operation
            // is visible everywhere: a purge has emptied the partitions, a
            // new topic's partitions exist on their owners, whichever shard
            // serves the client's next request.
            for ack in acks {
                // An error means the shard is gone (shutdown); nothing waits.
                let _ = ack.await;
            }
            reply.send(CommitResult {
                outcome: Ok(outcome),
                commit,
            });
        }
        self.maybe_snapshot(node).await;
    }

    /// Stamps an operation, validates it on the head state and journals it
    /// (not yet synced). A rejection consumes no op number.
    fn prepare(&self, mut op: MetadataOp) -> Result<(MetadataOp, Op, ApplyOutcome), MetadataError> {
        let now_us = op.timestamp_us;
        op.timestamp_us = self.replica.borrow().next_timestamp(now_us);
        let outcome = self.head.borrow_mut().apply(&op)?;
        let prepared = self
            .replica
            .borrow_mut()
            .prepare(now_us)
            .expect("the committer prepares at most a pipeline's worth per batch");
        assert_eq!(
            prepared.timestamp_us, op.timestamp_us,
            "stamped as validated"
        );
        self.append(&op, prepared.op);
        Ok((op, prepared.op, outcome))
    }

    /// Writes a snapshot when enough operations accumulated. It holds the
    /// public state, which has applied exactly the journal's ops: live
    /// sessions included, since their Register and Logout ops are journaled
    /// too (boot ends the sessions a restart left behind, as journaled ops).
    async fn maybe_snapshot(&self, node: &Rc<Node>) {
        let sequence = self.journal.last_sequence();
        if sequence < self.snapshot_sequence.get() + SNAPSHOT_EVERY_OPS {
            return;
        }
        assert_eq!(
            node.metadata_commit(),
            sequence,
            "the snapshot covers exactly the journal's ops"
        );
        let mut payload = Vec::new();
        node.metadata().encode_snapshot(&mut payload);
        match self.journal.write_snapshot(sequence, payload).await {
            Ok(()) => {
                self.snapshot_sequence.set(sequence);
                tracing::info!(sequence, "metadata snapshot written; journal compacted");
            }
            Err(storage::StorageError::NoSpace { .. }) => {
                tracing::warn!("no space for a metadata snapshot; the journal keeps growing");
            }
            Err(e) => fatal(&format!("cannot write the metadata snapshot: {e}")),
        }
    }

    fn append(&self, op: &MetadataOp, number: Op) {
        let mut bytes = Vec::with_capacity(128);
        op.encode(&mut bytes);
        match self.journal.append(&bytes) {
            Ok(sequence) => assert_eq!(sequence, number.0, "journal sequence = op number"),
            Err(e) => fatal(&format!("cannot append to the metadata journal: {e}")),
        }
    }

    async fn sync(&self) {
        let mut warned = false;
        loop {
            match self.journal.sync().await {
                Ok(()) => {
                    if warned {
                        tracing::info!("space is available again; metadata writes resume");
                    }
                    return;
                }
                Err(storage::StorageError::NoSpace { .. }) => {
                    if !warned {
                        tracing::error!(
                            "the disk is full: metadata writes wait until space is freed"
                        );
                        warned = true;
                    }
                    compio::time::sleep(NO_SPACE_RETRY).await;
                }
                Err(e) => fatal(&format!("cannot sync the metadata journal: {e}")),
            }
        }
    }
}

/// Sends a committed operation to every other shard; each answer arrives
/// once that shard has applied it and its partition effects.
async fn broadcast(node: &Rc<Node>, op: Arc<MetadataOp>, commit: u64) -> Vec<RxOneshot<()>> {
    let mut acks = Vec::with_capacity(node.ctx.shard_count);
    for shard in 0..node.ctx.shard_count {
        if shard == usize::from(node.shard_id) {
            continue;
        }
        let (applied, ack) = oneshot();
        node.ctx
            .send(
                shard,
                ShardMessage::MetadataApplied {
                    op: op.clone(),
                    commit,
                    applied,
                },
            )
            .await;
        acks.push(ack);
    }
    acks
}

fn fatal(message: &str) -> ! {
    error!("{message}; stopping the server");
    eprintln!("iggy-server: fatal: {message}");
    std::process::exit(70)
}
