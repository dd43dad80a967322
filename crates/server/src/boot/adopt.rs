//! A roster of one adopting a single node's data directory: the same data
//! directory, started with `cluster.enabled = true` and one node, keeps
//! every stream, topic, message, stored offset, user and token.
//!
//! Runs before any shard starts, once: when `metadata/` (the single node's
//! journal) is there and `cluster/metadata/` holds nothing yet. The single
//! node's state is replayed and its sessions ended (as its own boot would);
//! each partition directory gets its incarnation (`created.revision`) and
//! a partition group whose first checkpoint covers its log
//! (`cluster_partition::adopt_log`); last, the metadata group's first
//! checkpoint (`cluster_metadata::adopt_state`) is written, which is the
//! point of no return, and `metadata/` is renamed aside
//! (`metadata.single-node-<unix seconds>`), never deleted. A crash before
//! that point leaves the single node's files as they were, and the next
//! boot adopts them again from the start.

use std::path::Path;

use anyhow::Context;
use consensus::Op;
use engine::metadata::{MetadataOp, OpKind, UserId};
use engine::metadata_group::replay;
use storage::RealStorage;
use storage::journal::Journal;
use tracing::info;

use super::cluster::METADATA_REPLICA_DIR;
use crate::node::partitions::{CREATED_REVISION_FILE, partition_path};

/// Where the single-node build kept its metadata journal and snapshot.
const METADATA_DIR: &str = "metadata";

/// Adopts the single node's data in `data` if there is any and the group
/// of one has nothing yet; returns whether it did.
pub fn single_node(data: &Path) -> anyhow::Result<bool> {
    let old = data.join(METADATA_DIR);
    let new = data.join(METADATA_REPLICA_DIR);
    if !old.is_dir() || holds_anything(&new)? {
        return Ok(false);
    }
    let runtime = compio::runtime::Runtime::new().context("cannot start the adoption runtime")?;
    let (streams, partitions) = runtime.block_on(adopt(data, &old, &new))?;
    let aside = data.join(format!(
        "{METADATA_DIR}.single-node-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    ));
    std::fs::rename(&old, &aside).with_context(|| {
        format!(
            "adopted the single node's metadata, but cannot rename {} to {}",
            old.display(),
            aside.display()
        )
    })?;
    info!(
        streams,
        partitions,
        kept = %aside.display(),
        "this group of one adopted the single node's data directory"
    );
    Ok(true)
}

/// Whether `dir` holds a file with any bytes in it.
fn holds_anything(dir: &Path) -> anyhow::Result<bool> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(false);
    };
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
        if entry.metadata().is_ok_and(|m| !m.is_file() || m.len() > 0) {
            return Ok(true);
        }
    }
    Ok(false)
}

async fn adopt(data: &Path, old: &Path, new: &Path) -> anyhow::Result<(usize, usize)> {
    let (_, recovery) = Journal::open(RealStorage, old)
        .await
        .with_context(|| format!("cannot read the single node's journal in {}", old.display()))?;
    let replayed = replay(&recovery).map_err(anyhow::Error::new)?;
    let mut state = replayed.state;
    let timestamp_us = replayed.last_timestamp_us;
    // Its sessions ended with its last run, as its own boot would end them.
    let clients: Vec<_> = state.clients().map(|c| c.id).collect();
    for client in clients {
        let op = MetadataOp {
            timestamp_us,
            actor: UserId(0),
            kind: OpKind::UnregisterClient { client },
        };
        state
            .apply(&op)
            .map_err(|e| anyhow::anyhow!("cannot end a session of the single node: {e}"))?;
    }
    let mut partitions = 0;
    for stream in state.streams() {
        for topic in stream.topics() {
            for partition in topic.partitions() {
                let dir = partition_path(data, stream.id.0, topic.id.0, partition.id.0);
                if !dir.is_dir() {
                    continue;
                }
                adopt_partition(&dir, partition.created_at_us).await?;
                partitions += 1;
            }
        }
    }
    let op = Op(replayed.head.0.max(1));
    std::fs::create_dir_all(new).with_context(|| format!("cannot create {}", new.display()))?;
    engine::cluster_metadata::adopt_state(RealStorage, new, &state, op, timestamp_us)
        .await
        .with_context(|| format!("cannot write the group's checkpoint in {}", new.display()))?;
    Ok((state.streams_count(), partitions))
}

async fn adopt_partition(dir: &Path, incarnation: u64) -> anyhow::Result<()> {
    let journal = dir.join(format!("prepares-{incarnation}"));
    // Left by an adoption a crash interrupted (a single node has none).
    if journal.exists() {
        std::fs::remove_dir_all(&journal)
            .with_context(|| format!("cannot remove {}", journal.display()))?;
    }
    storage::counter_file::store(&RealStorage, &dir.join(CREATED_REVISION_FILE), incarnation)
        .await
        .with_context(|| format!("cannot record the incarnation of {}", dir.display()))?;
    engine::cluster_partition::adopt_log(RealStorage, dir, &journal)
        .await
        .with_context(|| format!("cannot adopt the partition in {}", dir.display()))?;
    Ok(())
}
