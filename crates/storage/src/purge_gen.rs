//! `purge.gen` in a partition directory: the purge generation last applied
//! to that partition, so a purge that was committed but not yet carried out
//! on disk before a crash is carried out at the next boot, and a restart
//! never purges twice.
//!
//! ```text
//! purge.gen (16 bytes, little-endian)
//!   0  u64 generation   purges of the topic applied to this partition
//!   8  u64 checksum     XXH3-64 of bytes 0..8
//! ```
//! A missing file is generation 0. An unreadable one is reported and read
//! as 0, which at worst purges again data that was already purged.

use std::path::{Path, PathBuf};

use protocol::checksum::xxh3_64;

use crate::error::{Result, io_error};
use crate::seam::{Storage, read_whole, write_atomically};

pub const PURGE_GEN_FILE: &str = "purge.gen";
const SIZE: usize = 16;

pub fn path(partition_dir: &Path) -> PathBuf {
    partition_dir.join(PURGE_GEN_FILE)
}

pub fn encode(generation: u64) -> [u8; SIZE] {
    let mut out = [0u8; SIZE];
    out[..8].copy_from_slice(&generation.to_le_bytes());
    let checksum = xxh3_64(&out[..8]);
    out[8..].copy_from_slice(&checksum.to_le_bytes());
    out
}

pub fn decode(bytes: &[u8]) -> Option<u64> {
    let bytes: &[u8; SIZE] = bytes.try_into().ok()?;
    let generation = &bytes[..8];
    (xxh3_64(generation).to_le_bytes() == bytes[8..])
        .then(|| u64::from_le_bytes(generation.try_into().expect("8 bytes")))
}

/// The generation last recorded in `partition_dir` (0 when none is).
pub async fn load<S: Storage>(storage: &S, partition_dir: &Path) -> u64 {
    let path = path(partition_dir);
    match read_whole(storage, &path).await {
        Ok(None) => 0,
        Ok(Some(bytes)) => decode(&bytes).unwrap_or_else(|| {
            tracing::warn!(file = %path.display(), "unreadable purge.gen; treating it as generation 0");
            0
        }),
        Err(e) => {
            tracing::warn!(file = %path.display(), "cannot read purge.gen: {e}");
            0
        }
    }
}

/// Records `generation` atomically (temporary file, fsync, rename, dir
/// fsync): call it only once the purge it names is complete on disk.
pub async fn store<S: Storage>(storage: &S, partition_dir: &Path, generation: u64) -> Result<()> {
    let path = path(partition_dir);
    write_atomically(storage, &path, encode(generation).to_vec())
        .await
        .map_err(io_error("write purge generation", &path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_generation_when_encoding_should_round_trip_and_reject_damage() {
        let bytes = encode(7);
        assert_eq!(&bytes[..8], &7u64.to_le_bytes());
        assert_eq!(decode(&bytes), Some(7));
        let mut damaged = bytes;
        damaged[0] ^= 1;
        assert_eq!(decode(&damaged), None);
        assert_eq!(decode(&bytes[..8]), None);
    }
}
