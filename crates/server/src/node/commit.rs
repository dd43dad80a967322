//! The metadata commit pipeline on shard 0.
//!
//! Submissions queue in arrival order. One task drains the queue: it applies
//! each operation to shard 0's replica (a rejection changes nothing and is
//! answered at once), appends the durable ones to the journal, syncs the
//! journal once for the whole drained batch (group commit), then numbers,
//! broadcasts and answers them in order. On a full disk the journal keeps
//! its entries and the committer retries every second, so metadata writes
//! wait (and nothing is acknowledged) until space is freed; any other
//! journal failure stops the process: metadata acknowledged without being
//! durable would be a lie, and there is no safe way to continue.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

/// How often a journal sync is retried on a full disk.
const NO_SPACE_RETRY: Duration = Duration::from_secs(1);

use crossfire::oneshot::{RxOneshot, TxOneshot, oneshot};
use engine::metadata::{ApplyOutcome, MetadataError, MetadataOp, OpKind};
use tracing::error;

use super::Node;
use crate::shard::ShardMessage;
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
}

/// Ephemeral operations belong to live connections and are not journaled.
pub fn is_durable(kind: &OpKind) -> bool {
    !matches!(
        kind,
        OpKind::RegisterClient { .. }
            | OpKind::UnregisterClient { .. }
            | OpKind::JoinConsumerGroup { .. }
            | OpKind::LeaveConsumerGroup { .. }
            | OpKind::CompleteRevocation { .. }
    )
}

impl Committer {
    /// Opens the journal in `metadata_dir` for appending (boot replayed it).
    pub async fn open(metadata_dir: &std::path::Path) -> anyhow::Result<Self> {
        let (journal, _) = Journal::open(RealStorage, metadata_dir)
            .await
            .map_err(|e| {
                anyhow::anyhow!(
                    "cannot open the metadata journal in {}: {e}",
                    metadata_dir.display()
                )
            })?;
        let snapshot_sequence = std::cell::Cell::new(journal.last_sequence());
        Ok(Self {
            queue: RefCell::new(VecDeque::new()),
            snapshot_sequence,
            wake: RefCell::new(None),
            journal,
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
            let batch: Vec<Submission> = committer.queue.borrow_mut().drain(..).collect();
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
        let mut applied = Vec::with_capacity(batch.len());
        let mut journaled = false;
        for (op, reply) in batch {
            match node.apply_local(&op) {
                Err(e) => reply.send(CommitResult {
                    outcome: Err(e),
                    commit: node.metadata_commit(),
                }),
                Ok(outcome) => {
                    if is_durable(&op.kind) {
                        self.append(&op).await;
                        journaled = true;
                    }
                    applied.push((op, outcome, reply));
                }
            }
        }
        if journaled {
            self.sync().await;
            self.maybe_snapshot(node).await;
        }
        for (op, outcome, reply) in applied {
            let commit = node.ctx.next_commit();
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
    }

    /// Writes a snapshot when enough durable operations accumulated. Live
    /// client sessions (and so group memberships) are left out: after a
    /// restart they are gone, exactly as when replaying the journal.
    async fn maybe_snapshot(&self, node: &Rc<Node>) {
        let sequence = self.journal.last_sequence();
        if sequence < self.snapshot_sequence.get() + SNAPSHOT_EVERY_OPS {
            return;
        }
        let mut state = node.metadata().clone();
        let clients: Vec<_> = state.clients().map(|c| c.id).collect();
        for client in clients {
            let op = MetadataOp {
                timestamp_us: 0,
                actor: engine::metadata::UserId(0),
                kind: OpKind::UnregisterClient { client },
            };
            state
                .apply(&op)
                .expect("unregistering a registered client always applies");
        }
        let mut payload = Vec::new();
        state.encode_snapshot(&mut payload);
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

    async fn append(&self, op: &MetadataOp) {
        let mut bytes = Vec::with_capacity(128);
        op.encode(&mut bytes);
        if let Err(e) = self.journal.append(&bytes) {
            fatal(&format!("cannot append to the metadata journal: {e}"));
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
