//! The metadata commit path on shard 0: a queue in front of the metadata
//! group (`engine::metadata_group`, which drives the consensus core and the
//! journal).
//!
//! Submissions queue in arrival order. One task drains at most a
//! pipeline's worth at a time: the group prepares each (op number,
//! timestamp, validation on its head state, journal append; a rejection is
//! answered at once), commits the batch with one fsync, and only then are
//! the ops applied to shard 0's public replica, broadcast to the other
//! shards and answered, in op order. Readers never see an operation that
//! is not durable. On a full disk the commit is retried every second
//! (nothing is answered meanwhile); any other journal failure stops the
//! process.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use consensus::Op;
use consensus::replica::PIPELINE_DEPTH_DEFAULT;
use crossfire::oneshot::{RxOneshot, TxOneshot, oneshot};
use engine::metadata::{ApplyOutcome, MetadataError, MetadataOp, MetadataState};
use engine::metadata_group::{MetadataGroup, Prepared};
use storage::journal::Journal;
use storage::{RealStorage, StorageError};
use tracing::error;

use super::Node;
use super::shard_message::ShardMessage;

/// How often a journal sync is retried on a full disk.
const NO_SPACE_RETRY: Duration = Duration::from_secs(1);

/// What the committer answers a submission with.
#[derive(Debug)]
pub struct CommitResult {
    pub outcome: Result<ApplyOutcome, MetadataError>,
    /// The op of this operation (the current commit on rejection).
    pub commit: u64,
}

type Submission = (MetadataOp, TxOneshot<CommitResult>);

/// Operations between metadata snapshots; a snapshot lets the WAL prefix
/// it covers be compacted away, bounding recovery time.
pub const SNAPSHOT_EVERY_OPS: u64 = 1000;

/// Shard 0's metadata commit path: a single node's journal, or a cluster
/// node's replicated metadata group (`cluster_commit`).
// One per node, on shard 0: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
pub enum Committer {
    Single(SingleCommitter),
    Cluster(super::cluster_commit::ClusterCommitter),
}

impl Committer {
    /// A single node's committer on the journal boot replayed.
    pub async fn open(start: CommitterStart<'_>) -> anyhow::Result<Self> {
        Ok(Committer::Single(SingleCommitter::open(start).await?))
    }

    pub async fn close(&self) {
        if let Committer::Single(single) = self {
            single.close().await;
        }
    }

    pub fn enqueue(&self, op: MetadataOp) -> RxOneshot<CommitResult> {
        match self {
            Committer::Single(single) => single.enqueue(op),
            Committer::Cluster(cluster) => cluster.enqueue(op),
        }
    }

    /// The commit loop; runs for the life of shard 0.
    pub async fn run(node: Rc<Node>) {
        match node.committer.as_ref() {
            Some(Committer::Single(_)) => SingleCommitter::run(node).await,
            Some(Committer::Cluster(cluster)) => cluster.run(node.clone()).await,
            None => {}
        }
    }
}

pub struct SingleCommitter {
    queue: RefCell<VecDeque<Submission>>,
    wake: RefCell<Option<TxOneshot<()>>>,
    /// The metadata group: op numbering, journal, commit order.
    group: MetadataGroup<RealStorage>,
}

/// What boot recovered, for the committer to resume from.
pub struct CommitterStart<'a> {
    pub metadata_dir: &'a std::path::Path,
    pub state: &'a MetadataState,
    /// The journal's last op (= the committed op on a group of one).
    pub head: Op,
    pub last_timestamp_us: u64,
}

impl SingleCommitter {
    /// Opens the journal for appending (boot replayed it) and resumes the
    /// metadata group at its journal head.
    pub async fn open(start: CommitterStart<'_>) -> anyhow::Result<Self> {
        let dir = start.metadata_dir;
        let (journal, _) = Journal::open(RealStorage, dir).await.map_err(|e| {
            anyhow::anyhow!("cannot open the metadata journal in {}: {e}", dir.display())
        })?;
        let group = MetadataGroup::new(journal, start.state, start.head, start.last_timestamp_us);
        Ok(Self {
            queue: RefCell::new(VecDeque::new()),
            wake: RefCell::new(None),
            group,
        })
    }

    pub async fn close(&self) {
        if let Err(e) = self.group.close().await {
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
        let Some(Committer::Single(committer)) = node.committer.as_ref() else {
            unreachable!("the single node's committer runs on shard 0");
        };
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
            match self.group.prepare(op) {
                Err(e) => fatal(&format!("cannot append to the metadata journal: {e}")),
                Ok(Err(e)) => reply.send(CommitResult {
                    outcome: Err(e),
                    commit: self.group.commit_max().0,
                }),
                Ok(Ok(entry)) => prepared.push((entry, reply)),
            }
        }
        if prepared.is_empty() {
            return;
        }
        self.commit_durably().await;
        for (entry, reply) in prepared {
            self.apply(node, entry, reply).await;
        }
        self.snapshot(node).await;
    }

    /// Applies a committed op on shard 0, then on every other shard, and
    /// answers once all of them have.
    async fn apply(&self, node: &Rc<Node>, entry: Prepared, reply: TxOneshot<CommitResult>) {
        let Prepared {
            op,
            number,
            outcome,
        } = entry;
        let applied = node
            .apply_local(&op)
            .expect("a committed op applies on the public state as on the head state");
        assert_eq!(applied, outcome, "apply is deterministic");
        self.group.applied(number);
        let commit = number.0;
        let acks = broadcast(node, Arc::new(op), commit).await;
        node.mark_applied(commit);
        node.on_applied(&outcome).await;
        // The answer waits for every shard, so an acknowledged operation is
        // visible everywhere: a purge has emptied the partitions, a new
        // topic's partitions exist on their owners, whichever shard serves
        // the client's next request.
        for ack in acks {
            // An error means the shard is gone (shutdown); nothing waits.
            let _ = ack.await;
        }
        reply.send(CommitResult {
            outcome: Ok(outcome),
            commit,
        });
    }

    /// Commits what was prepared; on a full disk retries every second
    /// (nothing is answered meanwhile); any other failure stops the server.
    async fn commit_durably(&self) {
        let mut warned = false;
        loop {
            match self.group.commit().await {
                Ok(_) => {
                    if warned {
                        tracing::info!("space is available again; metadata writes resume");
                    }
                    return;
                }
                Err(StorageError::NoSpace { .. }) => {
                    if !warned {
                        error!("the disk is full: metadata writes wait until space is freed");
                        warned = true;
                    }
                    compio::time::sleep(NO_SPACE_RETRY).await;
                }
                Err(e) => fatal(&format!("cannot sync the metadata journal: {e}")),
            }
        }
    }

    /// A snapshot of the public state every `SNAPSHOT_EVERY_OPS` ops: live
    /// sessions included, since their Register and Logout ops are journaled
    /// too (boot ends the sessions a restart left behind, as journaled ops).
    async fn snapshot(&self, node: &Rc<Node>) {
        let encode = || {
            let mut payload = Vec::new();
            node.metadata().encode_snapshot(&mut payload);
            payload
        };
        match self.group.snapshot(SNAPSHOT_EVERY_OPS, encode).await {
            Ok(true) => tracing::info!(
                op = self.group.commit_max().0,
                "metadata snapshot written; journal compacted"
            ),
            Ok(false) => {}
            Err(StorageError::NoSpace { .. }) => {
                tracing::warn!("no space for a metadata snapshot; the journal keeps growing");
            }
            Err(e) => fatal(&format!("cannot write the metadata snapshot: {e}")),
        }
    }
}

/// Sends a committed operation to every other shard; each answer arrives
/// once that shard has applied it and its partition effects.
pub(super) async fn broadcast(
    node: &Rc<Node>,
    op: Arc<MetadataOp>,
    commit: u64,
) -> Vec<RxOneshot<()>> {
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

pub(super) fn fatal(message: &str) -> ! {
    error!("{message}; stopping the server");
    eprintln!("iggy-server: fatal: {message}");
    std::process::exit(70)
}
