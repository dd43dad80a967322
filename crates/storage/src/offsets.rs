//! Consumer offsets of one partition: `offsets/consumers/<id>` and
//! `offsets/groups/<id>` inside the partition directory.
//!
//! ```text
//! offset file (16 bytes, little-endian)
//!   0  u64 offset     the stored consumer offset
//!   8  u64 checksum   XXH3-64 of bytes 0..8
//! ```
//!
//! Written in place with one 16-byte write at position 0 (never truncated,
//! so a kill mid-store leaves the old or the new offset), fsynced only when
//! the caller asks (the topic's `consumer_offset_durability`). Loading: exactly 8 bytes is the
//! legacy bare offset (accepted, upgraded on the next write); any other
//! short file is a torn write and is ignored with a warning; a checksum
//! mismatch is corruption, reported and not trusted.

use std::path::{Path, PathBuf};

use compio::BufResult;
use protocol::checksum::xxh3_64;

use crate::error::{Result, io_error};
use crate::offset::Offset;
use crate::seam::{Storage, StorageFile, read_whole};

pub const OFFSETS_DIR_NAME: &str = "offsets";
pub const OFFSET_FILE_SIZE: usize = 16;
pub const LEGACY_OFFSET_FILE_SIZE: usize = 8;

/// Whose offset it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ConsumerKind {
    /// A plain consumer: numeric id, or XXH32 of its name.
    Consumer,
    ConsumerGroup,
}

impl ConsumerKind {
    pub const ALL: [ConsumerKind; 2] = [ConsumerKind::Consumer, ConsumerKind::ConsumerGroup];

    fn dir_name(self) -> &'static str {
        match self {
            ConsumerKind::Consumer => "consumers",
            ConsumerKind::ConsumerGroup => "groups",
        }
    }
}

/// One loaded offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoredOffset {
    pub kind: ConsumerKind,
    pub id: u32,
    pub offset: Offset,
}

/// A file that could not be trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OffsetProblem {
    Torn { path: PathBuf, len: usize },
    Corrupt { path: PathBuf },
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadedOffsets {
    pub offsets: Vec<StoredOffset>,
    pub problems: Vec<OffsetProblem>,
}

/// How the bytes of one offset file read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodedOffset {
    Current(Offset),
    Legacy(Offset),
    Torn,
    Corrupt,
}

pub fn encode(offset: Offset) -> [u8; OFFSET_FILE_SIZE] {
    let mut out = [0u8; OFFSET_FILE_SIZE];
    out[..8].copy_from_slice(&offset.0.to_le_bytes());
    let checksum = xxh3_64(&out[..8]);
    out[8..].copy_from_slice(&checksum.to_le_bytes());
    out
}

pub fn decode(bytes: &[u8]) -> DecodedOffset {
    let offset = || Offset(u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")));
    match bytes.len() {
        LEGACY_OFFSET_FILE_SIZE => DecodedOffset::Legacy(offset()),
        OFFSET_FILE_SIZE => {
            let checksum = u64::from_le_bytes(bytes[8..].try_into().expect("8 bytes"));
            if checksum == xxh3_64(&bytes[..8]) {
                DecodedOffset::Current(offset())
            } else {
                DecodedOffset::Corrupt
            }
        }
        len if len < OFFSET_FILE_SIZE => DecodedOffset::Torn,
        _ => DecodedOffset::Corrupt,
    }
}

/// The offset files of one partition.
#[derive(Debug, Clone)]
pub struct OffsetStore<S: Storage> {
    storage: S,
    root: PathBuf,
}

impl<S: Storage> OffsetStore<S> {
    pub fn new(storage: S, partition_dir: &Path) -> Self {
        Self {
            storage,
            root: partition_dir.join(OFFSETS_DIR_NAME),
        }
    }

    fn kind_dir(&self, kind: ConsumerKind) -> PathBuf {
        self.root.join(kind.dir_name())
    }

    pub fn path(&self, kind: ConsumerKind, id: u32) -> PathBuf {
        self.kind_dir(kind).join(id.to_string())
    }

    /// Creates `offsets/consumers` and `offsets/groups`.
    pub async fn create_dirs(&self) -> Result<()> {
        for kind in ConsumerKind::ALL {
            let dir = self.kind_dir(kind);
            self.storage
                .create_dir_all(&dir)
                .await
                .map_err(io_error("create offsets directory", &dir))?;
        }
        Ok(())
    }

    /// Stores `offset` by truncate-and-write; with `fsync` the file (and, for
    /// a new file, its directory entry) is durable on return.
    pub async fn store(
        &self,
        kind: ConsumerKind,
        id: u32,
        offset: Offset,
        fsync: bool,
    ) -> Result<()> {
        let path = self.path(kind, id);
        let existed = self
            .storage
            .exists(&path)
            .await
            .map_err(io_error("stat offset", &path))?;
        if !existed {
            self.create_dirs().await?;
        }
        // Overwritten in place, never truncated: a kill between a truncate
        // and the write would leave no offset at all, while one 16-byte
        // write at position 0 lands whole or not at all.
        let file = if existed {
            self.storage.open(&path).await
        } else {
            self.storage.create(&path).await
        }
        .map_err(io_error("open offset", &path))?;
        let BufResult(written, _) = file.write_all_at(encode(offset), 0).await;
        written.map_err(io_error("write offset", &path))?;
        if fsync {
            file.sync_data()
                .await
                .map_err(io_error("fsync offset", &path))?;
            if !existed {
                let dir = self.kind_dir(kind);
                self.storage
                    .sync_dir(&dir)
                    .await
                    .map_err(io_error("fsync offsets directory", &dir))?;
            }
        }
        Ok(())
    }

    /// Loads every offset file; untrustworthy ones are reported, not loaded.
    pub async fn load_all(&self) -> Result<LoadedOffsets> {
        let mut loaded = LoadedOffsets::default();
        for kind in ConsumerKind::ALL {
            let dir = self.kind_dir(kind);
            if !self
                .storage
                .exists(&dir)
                .await
                .map_err(io_error("stat offsets directory", &dir))?
            {
                continue;
            }
            for name in self
                .storage
                .read_dir(&dir)
                .await
                .map_err(io_error("list offsets", &dir))?
            {
                let Ok(id) = name.parse::<u32>() else {
                    continue;
                };
                let path = dir.join(&name);
                let bytes = read_whole(&self.storage, &path)
                    .await
                    .map_err(io_error("read offset", &path))?
                    .unwrap_or_default();
                match decode(&bytes) {
                    DecodedOffset::Current(offset) | DecodedOffset::Legacy(offset) => {
                        loaded.offsets.push(StoredOffset { kind, id, offset });
                    }
                    DecodedOffset::Torn => {
                        tracing::warn!(path = %path.display(), len = bytes.len(), "ignoring torn consumer offset file");
                        loaded.problems.push(OffsetProblem::Torn {
                            path,
                            len: bytes.len(),
                        });
                    }
                    DecodedOffset::Corrupt => {
                        tracing::error!(path = %path.display(), "consumer offset file fails its checksum; not trusted");
                        loaded.problems.push(OffsetProblem::Corrupt { path });
                    }
                }
            }
        }
        Ok(loaded)
    }

    /// Removes one offset; returns false when none was stored.
    pub async fn delete(&self, kind: ConsumerKind, id: u32) -> Result<bool> {
        let path = self.path(kind, id);
        if !self
            .storage
            .exists(&path)
            .await
            .map_err(io_error("stat offset", &path))?
        {
            return Ok(false);
        }
        self.storage
            .remove_file(&path)
            .await
            .map_err(io_error("remove offset", &path))?;
        Ok(true)
    }

    /// Removes every stored offset (purge).
    pub async fn delete_all(&self) -> Result<()> {
        if self
            .storage
            .exists(&self.root)
            .await
            .map_err(io_error("stat offsets directory", &self.root))?
        {
            self.storage
                .remove_dir_all(&self.root)
                .await
                .map_err(io_error("remove offsets", &self.root))?;
        }
        self.create_dirs().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seam::{CrashMode, SimStorage};

    fn store() -> (SimStorage, OffsetStore<SimStorage>) {
        let storage = SimStorage::new();
        (
            storage.clone(),
            OffsetStore::new(storage, Path::new("/p/0")),
        )
    }

    #[test]
    fn given_offset_when_encoding_should_match_golden_bytes() {
        let bytes = encode(Offset(0x0102));
        assert_eq!(&bytes[..8], &[0x02, 0x01, 0, 0, 0, 0, 0, 0]);
        assert_eq!(bytes[8..], xxh3_64(&bytes[..8]).to_le_bytes());
        assert_eq!(decode(&bytes), DecodedOffset::Current(Offset(0x0102)));
    }

    #[test]
    fn given_file_lengths_when_decoding_should_classify_legacy_torn_and_corrupt() {
        assert_eq!(
            decode(&7u64.to_le_bytes()),
            DecodedOffset::Legacy(Offset(7))
        );
        assert_eq!(decode(&[1, 2, 3]), DecodedOffset::Torn);
        assert_eq!(decode(&encode(Offset(5))[..12]), DecodedOffset::Torn);
        let mut flipped = encode(Offset(5));
        flipped[0] ^= 1;
        assert_eq!(decode(&flipped), DecodedOffset::Corrupt);
        assert_eq!(decode(&[0; 17]), DecodedOffset::Corrupt);
    }

    #[compio::test]
    async fn given_stored_offsets_when_loading_should_return_them_and_report_bad_files() {
        let (storage, offsets) = store();
        offsets
            .store(ConsumerKind::Consumer, 1, Offset(10), false)
            .await
            .unwrap();
        offsets
            .store(ConsumerKind::Consumer, 1, Offset(4), false)
            .await
            .unwrap();
        offsets
            .store(ConsumerKind::ConsumerGroup, 2, Offset(20), true)
            .await
            .unwrap();
        offsets
            .store(ConsumerKind::Consumer, 3, Offset(0), false)
            .await
            .unwrap();
        offsets
            .store(ConsumerKind::Consumer, 4, Offset(0), false)
            .await
            .unwrap();
        storage
            .overwrite_durably(&offsets.path(ConsumerKind::Consumer, 3), vec![1, 2])
            .unwrap();
        storage
            .overwrite_durably(&offsets.path(ConsumerKind::Consumer, 4), vec![9; 16])
            .unwrap();
        let loaded = offsets.load_all().await.unwrap();
        assert_eq!(
            loaded.offsets,
            [
                StoredOffset {
                    kind: ConsumerKind::Consumer,
                    id: 1,
                    offset: Offset(4)
                },
                StoredOffset {
                    kind: ConsumerKind::ConsumerGroup,
                    id: 2,
                    offset: Offset(20)
                }
            ]
        );
        assert_eq!(loaded.problems.len(), 2);
        assert!(matches!(
            loaded.problems[0],
            OffsetProblem::Torn { len: 2, .. }
        ));
        assert!(matches!(loaded.problems[1], OffsetProblem::Corrupt { .. }));
    }

    #[compio::test]
    async fn given_fsynced_store_when_crashing_should_keep_the_offset() {
        let (storage, offsets) = store();
        offsets
            .store(ConsumerKind::ConsumerGroup, 7, Offset(99), true)
            .await
            .unwrap();
        let rebooted = OffsetStore::new(storage.crash(CrashMode::Clean), Path::new("/p/0"));
        assert_eq!(
            rebooted.load_all().await.unwrap().offsets[0].offset,
            Offset(99)
        );
    }

    #[compio::test]
    async fn given_a_store_interrupted_before_its_write_when_loading_should_keep_the_old_offset() {
        let (storage, offsets) = store();
        offsets
            .store(ConsumerKind::Consumer, 7, Offset(99), true)
            .await
            .unwrap();
        // The next write stores nothing, as when the process is killed
        // between opening the file and writing it.
        storage.set_faults(crate::seam::SimFaults {
            short_next_write: Some(0),
            ..Default::default()
        });
        assert!(
            offsets
                .store(ConsumerKind::Consumer, 7, Offset(150), true)
                .await
                .is_err()
        );
        let loaded = offsets.load_all().await.unwrap();
        assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
        assert_eq!(loaded.offsets[0].offset, Offset(99));
    }

    #[compio::test]
    async fn given_offsets_when_deleting_should_remove_one_or_all() {
        let (_, offsets) = store();
        offsets
            .store(ConsumerKind::Consumer, 1, Offset(1), false)
            .await
            .unwrap();
        offsets
            .store(ConsumerKind::ConsumerGroup, 1, Offset(1), false)
            .await
            .unwrap();
        assert!(offsets.delete(ConsumerKind::Consumer, 1).await.unwrap());
        assert!(!offsets.delete(ConsumerKind::Consumer, 1).await.unwrap());
        offsets.delete_all().await.unwrap();
        assert!(offsets.load_all().await.unwrap().offsets.is_empty());
    }
}
