//! The durable offset frontier (`offset.frontier` in the partition
//! directory): offsets below it may have been handed out, so a restarted
//! log never mints an offset below it again.
//!
//! ```text
//! frontier file: a counter file (`counter_file`), whose value is the
//!   frontier: every offset minted so far is below it
//! ```
//!
//! Offsets are reserved ahead in chunks: the log persists "next offset may
//! be up to X" (atomic write-rename-fsync) and renews it in the background
//! before the reservation runs out. Appends beyond the durable frontier are
//! refused, so an offset seen by a consumer, even one that was only ever in
//! memory, is never reused after a crash: recovery starts at
//! `max(log end, frontier)`.

use std::path::{Path, PathBuf};

use crate::counter_file;
use crate::error::Result;
use crate::offset::Offset;
use crate::seam::Storage;

pub const FRONTIER_FILE_NAME: &str = "offset.frontier";
/// Offsets reserved per renewal unless the options say otherwise.
pub const DEFAULT_OFFSET_RESERVATION: u64 = 1 << 20;

pub fn frontier_path(dir: &Path) -> PathBuf {
    dir.join(FRONTIER_FILE_NAME)
}

/// Reads the frontier; absent means 0. A damaged file is an error: guessing
/// low could reuse offsets.
pub async fn load<S: Storage>(storage: &S, dir: &Path) -> Result<Offset> {
    let stored = counter_file::load(storage, &frontier_path(dir)).await?;
    Ok(Offset(stored.unwrap_or(0)))
}

pub async fn store<S: Storage>(storage: &S, dir: &Path, frontier: Offset) -> Result<()> {
    counter_file::store(storage, &frontier_path(dir), frontier.0).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StorageError;
    use crate::seam::SimStorage;

    #[compio::test]
    async fn given_stored_frontier_when_loading_should_round_trip_and_reject_damage() {
        let storage = SimStorage::new();
        let dir = Path::new("/p");
        storage.create_dir_all(dir).await.unwrap();
        assert_eq!(load(&storage, dir).await.unwrap(), Offset::ZERO);
        store(&storage, dir, Offset(77)).await.unwrap();
        assert_eq!(load(&storage, dir).await.unwrap(), Offset(77));
        let mut damaged = counter_file::encode(77);
        damaged[0] ^= 1;
        storage
            .overwrite_durably(&frontier_path(dir), damaged.to_vec())
            .unwrap();
        assert!(matches!(
            load(&storage, dir).await,
            Err(StorageError::Corrupt { .. })
        ));
    }
}
