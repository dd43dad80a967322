//! `purge.gen` in a partition directory: the purge generation last applied
//! to that partition, so a purge that was committed but not yet carried out
//! on disk before a crash is carried out at the next boot, and a restart
//! never purges twice.
//!
//! `purge.gen` is a counter file (`counter_file`) whose value is the
//! number of purges of the topic applied to this partition.
//! A missing file is generation 0. An unreadable one is reported and read
//! as 0, which at worst purges again data that was already purged.
//!
//! `purge.op` (cluster mode, a counter file too) is the op of the
//! partition group's purge that last emptied the log, written once the log
//! restarted and before `purge.gen`: a journal replayed after a restart
//! skips the ops below it, whose batches that purge already took.

use std::path::{Path, PathBuf};

use crate::counter_file;
use crate::error::Result;
use crate::seam::Storage;

pub const PURGE_GEN_FILE: &str = "purge.gen";
pub const PURGE_OP_FILE: &str = "purge.op";

pub fn path(partition_dir: &Path) -> PathBuf {
    partition_dir.join(PURGE_GEN_FILE)
}

/// The generation last recorded in `partition_dir` (0 when none is).
pub async fn load<S: Storage>(storage: &S, partition_dir: &Path) -> u64 {
    let path = path(partition_dir);
    match counter_file::load(storage, &path).await {
        Ok(generation) => generation.unwrap_or(0),
        Err(e) => {
            tracing::warn!(file = %path.display(), "unreadable purge.gen ({e}); treating it as generation 0");
            0
        }
    }
}

/// Records `generation` atomically: call it only once the purge it names
/// is complete on disk.
pub async fn store<S: Storage>(storage: &S, partition_dir: &Path, generation: u64) -> Result<()> {
    counter_file::store(storage, &path(partition_dir), generation).await
}

/// The op of the group's purge that last emptied the log in
/// `partition_dir` (0 when none did). An unreadable file is an error: read
/// as 0 it would let a replay write purged batches back.
pub async fn load_op<S: Storage>(storage: &S, partition_dir: &Path) -> Result<u64> {
    let path = partition_dir.join(PURGE_OP_FILE);
    Ok(counter_file::load(storage, &path).await?.unwrap_or(0))
}

/// Records that the purge at group op `op` emptied the log (atomically).
pub async fn store_op<S: Storage>(storage: &S, partition_dir: &Path, op: u64) -> Result<()> {
    counter_file::store(storage, &partition_dir.join(PURGE_OP_FILE), op).await
}
