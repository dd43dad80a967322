//! The durable offset frontier (`offset.frontier` in the partition
//! directory): offsets below it may have been handed out, so a restarted
//! log never mints an offset below it again.
//!
//! ```text
//! frontier file (16 bytes, little-endian)
//!   0  u64 frontier    every offset minted so far is below this value
//!   8  u64 checksum    XXH3-64 of bytes 0..8
//! ```
//!
//! Offsets are reserved ahead in chunks: the log persists "next offset may
//! be up to X" (atomic write-rename-fsync) and renews it in the background
//! before the reservation runs out. Appends beyond the durable frontier are
//! refused, so an offset seen by a consumer, even one that was only ever in
//! memory, is never reused after a crash: recovery starts at
//! `max(log end, frontier)`.

use std::path::{Path, PathBuf};

use protocol::checksum::xxh3_64;

use crate::error::{Result, StorageError, io_error};
use crate::seam::{Storage, read_whole, write_atomically};

pub const FRONTIER_FILE_NAME: &str = "offset.frontier";
pub const FRONTIER_FILE_SIZE: usize = 16;
/// Offsets reserved per renewal unless the options say otherwise.
pub const DEFAULT_OFFSET_RESERVATION: u64 = 1 << 20;

pub fn frontier_path(dir: &Path) -> PathBuf {
    dir.join(FRONTIER_FILE_NAME)
}

pub fn encode(frontier: u64) -> [u8; FRONTIER_FILE_SIZE] {
    let mut out = [0u8; FRONTIER_FILE_SIZE];
    out[..8].copy_from_slice(&frontier.to_le_bytes());
    let checksum = xxh3_64(&out[..8]);
    out[8..].copy_from_slice(&checksum.to_le_bytes());
    out
}

/// Reads the frontier; absent means 0. A damaged file is an error: guessing
/// low could reuse offsets.
pub async fn load<S: Storage>(storage: &S, dir: &Path) -> Result<u64> {
    let path = frontier_path(dir);
    let Some(bytes) = read_whole(storage, &path)
        .await
        .map_err(io_error("read frontier", &path))?
    else {
        return Ok(0);
    };
    let corrupt = |reason: &str| StorageError::Corrupt {
        file: path.clone(),
        position: 0,
        reason: reason.to_owned(),
    };
    if bytes.len() != FRONTIER_FILE_SIZE {
        return Err(corrupt("offset frontier file has the wrong size"));
    }
    let value = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
    let checksum = u64::from_le_bytes(bytes[8..].try_into().expect("8 bytes"));
    if checksum != xxh3_64(&bytes[..8]) {
        return Err(corrupt("offset frontier checksum mismatch"));
    }
    Ok(value)
}

pub async fn store<S: Storage>(storage: &S, dir: &Path, frontier: u64) -> Result<()> {
    let path = frontier_path(dir);
    write_atomically(storage, &path, encode(frontier).to_vec())
        .await
        .map_err(io_error("write frontier", &path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seam::SimStorage;

    #[test]
    fn given_frontier_when_encoding_should_match_golden_bytes() {
        let bytes = encode(0x0100);
        assert_eq!(&bytes[..8], &[0, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(
            &bytes[8..],
            &xxh3_64(&[0, 1, 0, 0, 0, 0, 0, 0]).to_le_bytes()
        );
    }

    #[compio::test]
    async fn given_stored_frontier_when_loading_should_round_trip_and_reject_damage() {
        let storage = SimStorage::new();
        let dir = Path::new("/p");
        storage.create_dir_all(dir).await.unwrap();
        assert_eq!(load(&storage, dir).await.unwrap(), 0);
        store(&storage, dir, 77).await.unwrap();
        assert_eq!(load(&storage, dir).await.unwrap(), 77);
        let mut damaged = encode(77);
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
