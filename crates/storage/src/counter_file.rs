//! A durable counter in a 16-byte file, the shape of every small
//! bookkeeping file of a partition (`offset.frontier`, `purge.gen`,
//! `op.frontier`):
//!
//! ```text
//! counter file (16 bytes, little-endian)
//!   0  u64 value      the counter
//!   8  u64 checksum   XXH3-64 of bytes 0..8
//! ```
//!
//! Written atomically (temporary file, fsync, rename, directory fsync), so
//! a crash leaves the old value or the new one. What a missing or damaged
//! file means is the caller's decision.

use std::path::Path;

use protocol::checksum::xxh3_64;

use crate::error::{Result, StorageError, io_error};
use crate::seam::{Storage, read_whole, write_atomically};

pub const COUNTER_FILE_SIZE: usize = 16;

pub fn encode(value: u64) -> [u8; COUNTER_FILE_SIZE] {
    let mut out = [0u8; COUNTER_FILE_SIZE];
    out[..8].copy_from_slice(&value.to_le_bytes());
    let checksum = xxh3_64(&out[..8]);
    out[8..].copy_from_slice(&checksum.to_le_bytes());
    out
}

/// The value, or `None` when the bytes are not a sound counter file.
pub fn decode(bytes: &[u8]) -> Option<u64> {
    let bytes: &[u8; COUNTER_FILE_SIZE] = bytes.try_into().ok()?;
    let value = &bytes[..8];
    (xxh3_64(value).to_le_bytes() == bytes[8..])
        .then(|| u64::from_le_bytes(value.try_into().expect("8 bytes")))
}

/// Reads the counter at `path`: `None` when the file is absent, an error
/// (`Corrupt`) when it is damaged.
pub async fn load<S: Storage>(storage: &S, path: &Path) -> Result<Option<u64>> {
    let Some(bytes) = read_whole(storage, path)
        .await
        .map_err(io_error("read counter file", path))?
    else {
        return Ok(None);
    };
    decode(&bytes)
        .map(Some)
        .ok_or_else(|| StorageError::Corrupt {
            file: path.to_path_buf(),
            position: 0,
            reason: "counter file damaged (size or checksum)".to_owned(),
        })
}

pub async fn store<S: Storage>(storage: &S, path: &Path, value: u64) -> Result<()> {
    write_atomically(storage, path, encode(value).to_vec())
        .await
        .map_err(io_error("write counter file", path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seam::SimStorage;

    #[test]
    fn given_value_when_encoding_should_match_golden_bytes_and_reject_damage() {
        let bytes = encode(0x0100);
        assert_eq!(&bytes[..8], &[0, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(
            &bytes[8..],
            &xxh3_64(&[0, 1, 0, 0, 0, 0, 0, 0]).to_le_bytes()
        );
        assert_eq!(decode(&bytes), Some(0x0100));
        let mut damaged = bytes;
        damaged[0] ^= 1;
        assert_eq!(decode(&damaged), None);
        assert_eq!(decode(&bytes[..8]), None);
    }

    #[compio::test]
    async fn given_stored_counter_when_loading_should_round_trip_and_report_damage() {
        let storage = SimStorage::new();
        let dir = Path::new("/p");
        storage.create_dir_all(dir).await.unwrap();
        let path = dir.join("c");
        assert_eq!(load(&storage, &path).await.unwrap(), None);
        store(&storage, &path, 77).await.unwrap();
        assert_eq!(load(&storage, &path).await.unwrap(), Some(77));
        storage.overwrite_durably(&path, vec![1; 16]).unwrap();
        assert!(matches!(
            load(&storage, &path).await,
            Err(StorageError::Corrupt { .. })
        ));
    }
}
