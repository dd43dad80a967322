//! What the metadata commit path on shard 0 (`cluster_commit`: this
//! node's replica of the metadata group, a group of one on a single node)
//! shares with the rest of the node: the answer a submission gets, the
//! broadcast of a committed op to the other shards, and the fail-stop exit.

use std::rc::Rc;
use std::sync::Arc;

use crossfire::oneshot::{RxOneshot, oneshot};
use engine::metadata::{ApplyOutcome, MetadataError, MetadataOp};
use tracing::error;

use super::Node;
use super::shard_message::ShardMessage;

/// What the committer answers a submission with.
#[derive(Debug)]
pub struct CommitResult {
    pub outcome: Result<ApplyOutcome, MetadataError>,
    /// The op of this operation (the current commit on rejection).
    pub commit: u64,
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
