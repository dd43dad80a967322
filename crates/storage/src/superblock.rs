//! A replica group's superblock: the durable facts a Viewstamped
//! Replication replica must find again after any crash (replication spec
//! §5.6, §6.1-§6.3): which cluster, replica and group it belongs to, the
//! view it entered, the view its journal's log belongs to, and whether its
//! head is uncertain.
//!
//! ```text
//! superblock (64 bytes, little-endian)
//!   0  u32  magic        SUPERBLOCK_MAGIC ("ISBK")
//!   4  u16  version      SUPERBLOCK_VERSION
//!   6  u8   replica      roster index of this replica
//!   7  u8   flags        bit 0: the head is uncertain
//!   8  u128 cluster      first 16 bytes of BLAKE3(cluster.name)
//!  24  u64  group        the group (metadata: 1 << 63)
//!  32  u64  incarnation  the partition incarnation (0 for metadata)
//!  40  u32  view         the view entered
//!  44  u32  log_view     the view of the journal's log (<= view)
//!  48  u64  reserved     0
//!  56  u64  checksum     XXH3-64 of bytes 0..56
//! ```
//!
//! Written atomically (temporary file, fsync, rename, directory fsync): a
//! crash leaves the old superblock or the new one, never a mix. A file
//! that is not a sound superblock, or that names another cluster, replica
//! or group, refuses boot (the caller reports it): guessing would let a
//! replica vote with a view it never entered.

use std::path::Path;

use protocol::checksum::xxh3_64;

use crate::error::{Result, StorageError, io_error};
use crate::seam::{Storage, read_whole, write_atomically};

pub const SUPERBLOCK_FILE_NAME: &str = "superblock";
pub const SUPERBLOCK_SIZE: usize = 64;
pub const SUPERBLOCK_MAGIC: u32 = u32::from_le_bytes(*b"ISBK");
pub const SUPERBLOCK_VERSION: u16 = 1;
const FLAG_UNCERTAIN: u8 = 1;

/// Whose superblock it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    pub cluster: u128,
    pub replica: u8,
    pub group: u64,
    pub incarnation: u64,
}

/// What the superblock records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Superblock {
    pub identity: Identity,
    pub view: u32,
    pub log_view: u32,
    pub uncertain: bool,
}

impl Superblock {
    pub fn encode(&self) -> [u8; SUPERBLOCK_SIZE] {
        assert!(self.log_view <= self.view, "log_view <= view");
        let mut out = [0u8; SUPERBLOCK_SIZE];
        out[0..4].copy_from_slice(&SUPERBLOCK_MAGIC.to_le_bytes());
        out[4..6].copy_from_slice(&SUPERBLOCK_VERSION.to_le_bytes());
        out[6] = self.identity.replica;
        out[7] = if self.uncertain { FLAG_UNCERTAIN } else { 0 };
        out[8..24].copy_from_slice(&self.identity.cluster.to_le_bytes());
        out[24..32].copy_from_slice(&self.identity.group.to_le_bytes());
        out[32..40].copy_from_slice(&self.identity.incarnation.to_le_bytes());
        out[40..44].copy_from_slice(&self.view.to_le_bytes());
        out[44..48].copy_from_slice(&self.log_view.to_le_bytes());
        let checksum = xxh3_64(&out[..56]);
        out[56..64].copy_from_slice(&checksum.to_le_bytes());
        out
    }

    /// The superblock in `bytes`, or why they are not one.
    pub fn decode(bytes: &[u8]) -> std::result::Result<Superblock, String> {
        let bytes: &[u8; SUPERBLOCK_SIZE] = bytes
            .try_into()
            .map_err(|_| format!("{} bytes, not {SUPERBLOCK_SIZE}", bytes.len()))?;
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4"));
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8"));
        if xxh3_64(&bytes[..56]) != u64_at(56) {
            return Err("checksum mismatch".to_owned());
        }
        if u32_at(0) != SUPERBLOCK_MAGIC {
            return Err("not a superblock (bad magic)".to_owned());
        }
        let version = u16::from_le_bytes([bytes[4], bytes[5]]);
        if version != SUPERBLOCK_VERSION {
            return Err(format!(
                "format version {version}, this build reads {SUPERBLOCK_VERSION}"
            ));
        }
        if bytes[7] & !FLAG_UNCERTAIN != 0 || u64_at(48) != 0 {
            return Err("reserved bits set".to_owned());
        }
        let (view, log_view) = (u32_at(40), u32_at(44));
        if log_view > view {
            return Err(format!("log view {log_view} above view {view}"));
        }
        Ok(Superblock {
            identity: Identity {
                cluster: u128::from_le_bytes(bytes[8..24].try_into().expect("16")),
                replica: bytes[6],
                group: u64_at(24),
                incarnation: u64_at(32),
            },
            view,
            log_view,
            uncertain: bytes[7] & FLAG_UNCERTAIN != 0,
        })
    }
}

/// Reads the superblock in `dir`: `None` when none was ever written.
/// Refuses (an error naming the file and why) one that is damaged or
/// belongs to another cluster, replica or group.
pub async fn load<S: Storage>(
    storage: &S,
    dir: &Path,
    identity: Identity,
) -> Result<Option<Superblock>> {
    let path = dir.join(SUPERBLOCK_FILE_NAME);
    let Some(bytes) = read_whole(storage, &path)
        .await
        .map_err(io_error("read superblock", &path))?
    else {
        return Ok(None);
    };
    let corrupt = |reason: String| StorageError::Corrupt {
        file: path.clone(),
        position: 0,
        reason,
    };
    let superblock = Superblock::decode(&bytes).map_err(corrupt)?;
    if superblock.identity != identity {
        return Err(corrupt(format!(
            "it belongs to {:?}, this replica is {identity:?}",
            superblock.identity
        )));
    }
    Ok(Some(superblock))
}

/// Writes `superblock` into `dir` atomically and durably. The view and the
/// log view never go back (asserted against `previous`).
pub async fn store<S: Storage>(
    storage: &S,
    dir: &Path,
    previous: Option<&Superblock>,
    superblock: &Superblock,
) -> Result<()> {
    if let Some(previous) = previous {
        assert_eq!(
            previous.identity, superblock.identity,
            "one group's superblock"
        );
        assert!(superblock.view >= previous.view, "the view never goes back");
        assert!(
            superblock.log_view >= previous.log_view,
            "the log view never goes back"
        );
    }
    let path = dir.join(SUPERBLOCK_FILE_NAME);
    write_atomically(storage, &path, superblock.encode().to_vec())
        .await
        .map_err(io_error("write superblock", &path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seam::{CrashMode, SimStorage, Storage};

    fn sample() -> Superblock {
        Superblock {
            identity: Identity {
                cluster: 0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10,
                replica: 2,
                group: 1 << 63,
                incarnation: 0,
            },
            view: 7,
            log_view: 5,
            uncertain: true,
        }
    }

    #[test]
    fn given_a_superblock_when_encoded_should_match_the_golden_bytes() {
        let bytes = sample().encode();
        let expected_prefix: [u8; 48] = [
            b'I', b'S', b'B', b'K', 1, 0, 2, 1, // magic, version, replica, flags
            0x10, 0x0f, 0x0e, 0x0d, 0x0c, 0x0b, 0x0a, 0x09, // cluster (low half)
            0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, // cluster (high half)
            0, 0, 0, 0, 0, 0, 0, 0x80, // group 1 << 63
            0, 0, 0, 0, 0, 0, 0, 0, // incarnation
            7, 0, 0, 0, 5, 0, 0, 0, // view, log view
        ];
        assert_eq!(bytes[..48], expected_prefix);
        assert_eq!(bytes[48..56], [0; 8], "reserved");
        assert_eq!(Superblock::decode(&bytes), Ok(sample()));
    }

    #[test]
    fn given_any_flipped_bit_when_decoding_should_refuse() {
        let bytes = sample().encode();
        for bit in 0..SUPERBLOCK_SIZE * 8 {
            let mut damaged = bytes;
            damaged[bit / 8] ^= 1 << (bit % 8);
            assert!(Superblock::decode(&damaged).is_err(), "bit {bit}");
        }
        assert!(Superblock::decode(&bytes[..63]).is_err(), "short");
    }

    #[compio::test]
    async fn given_stored_superblocks_when_crashing_should_find_the_last_durable_one() {
        let storage = SimStorage::new();
        let dir = Path::new("/data/metadata");
        storage.create_dir_all(dir).await.expect("dir");
        let identity = sample().identity;
        assert_eq!(load(&storage, dir, identity).await.expect("load"), None);
        let first = sample();
        store(&storage, dir, None, &first).await.expect("store");
        let second = Superblock {
            view: 8,
            log_view: 8,
            uncertain: false,
            ..first
        };
        store(&storage, dir, Some(&first), &second)
            .await
            .expect("store");
        let after = storage.crash(CrashMode::Clean);
        assert_eq!(
            load(&after, dir, identity).await.expect("load"),
            Some(second)
        );
    }

    #[compio::test]
    async fn given_another_replicas_superblock_when_loading_should_refuse_naming_it() {
        let storage = SimStorage::new();
        let dir = Path::new("/data/metadata");
        storage.create_dir_all(dir).await.expect("dir");
        store(&storage, dir, None, &sample()).await.expect("store");
        let other = Identity {
            replica: 1,
            ..sample().identity
        };
        let error = load(&storage, dir, other).await.expect_err("refused");
        assert!(error.to_string().contains("belongs to"), "{error}");
    }
}
