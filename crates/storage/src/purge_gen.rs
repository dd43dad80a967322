//! `purge.gen` in a partition directory: the purge generation last applied
//! to that partition, so a purge that was committed but not yet carried out
//! on disk before a crash is carried out at the next boot, and a restart
//! never purges twice.
//!
//! `purge.gen` is a counter file (`counter_file`) whose value is the
//! number of purges of the topic applied to this partition.
//! A missing file is generation 0. An unreadable one is reported and read
//! as 0, which at worst purges again data that was already purged.

use std::path::{Path, PathBuf};

use crate::counter_file;
use crate::error::Result;
use crate::seam::Storage;

pub const PURGE_GEN_FILE: &str = "purge.gen";

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
