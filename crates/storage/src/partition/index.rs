//! The sparse segment index (`<start offset>.index`) and segment file names.
//!
//! ```text
//! index file = entry*            (no header; a partial trailing entry is ignored)
//! entry (24 bytes, little-endian)
//!   0  u64 offset      base offset of the batch
//!   8  u64 timestamp   base timestamp of the batch (µs)
//!  16  u64 position    byte position of the batch record in the .log file
//! ```
//!
//! One entry is appended per flushed chunk, describing the chunk's first
//! batch. The index is a hint: recovery checks every entry against the log
//! and rebuilds what is missing, and lookups fall back to a forward scan.

use std::path::{Path, PathBuf};

use crate::offset::Offset;

pub const INDEX_ENTRY_SIZE: usize = 24;
/// Digits of the zero-padded start offset in segment file names.
pub const SEGMENT_NAME_DIGITS: usize = 20;
pub const LOG_EXTENSION: &str = "log";
pub const INDEX_EXTENSION: &str = "index";
/// In memory, entries closer than this to the previous one are not kept:
/// a lookup then scans at most this many extra bytes, and a log synced after
/// every small batch does not grow an entry per batch in memory.
pub const MEMORY_INDEX_GAP_BYTES: u64 = 4096;

/// One sparse index entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexEntry {
    pub offset: Offset,
    pub timestamp: u64,
    pub position: u64,
}

impl IndexEntry {
    pub fn encode(&self) -> [u8; INDEX_ENTRY_SIZE] {
        let mut out = [0u8; INDEX_ENTRY_SIZE];
        out[0..8].copy_from_slice(&self.offset.0.to_le_bytes());
        out[8..16].copy_from_slice(&self.timestamp.to_le_bytes());
        out[16..24].copy_from_slice(&self.position.to_le_bytes());
        out
    }

    pub fn decode(bytes: &[u8; INDEX_ENTRY_SIZE]) -> Self {
        let u64_at =
            |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8-byte slice"));
        Self {
            offset: Offset(u64_at(0)),
            timestamp: u64_at(8),
            position: u64_at(16),
        }
    }

    /// Decodes every whole entry of an index file.
    pub fn decode_all(bytes: &[u8]) -> Vec<Self> {
        bytes
            .chunks_exact(INDEX_ENTRY_SIZE)
            .map(|chunk| Self::decode(chunk.try_into().expect("exact chunk")))
            .collect()
    }
}

/// Appends `entry` to an in-memory index unless it is too close to the last
/// kept entry. Entries arrive in increasing position order.
pub fn push_sparse(index: &mut Vec<IndexEntry>, entry: IndexEntry) {
    if let Some(last) = index.last() {
        assert!(
            entry.position > last.position && entry.offset > last.offset,
            "index entries must increase"
        );
        if entry.position - last.position < MEMORY_INDEX_GAP_BYTES {
            return;
        }
    }
    index.push(entry);
}

/// The last entry whose key is at or below `key`, for a forward scan.
pub fn floor_entry<K: Ord>(
    index: &[IndexEntry],
    key: K,
    key_of: impl Fn(&IndexEntry) -> K,
) -> Option<IndexEntry> {
    let after = index.partition_point(|entry| key_of(entry) <= key);
    after.checked_sub(1).map(|at| index[at])
}

pub fn segment_file_name(start_offset: Offset, extension: &str) -> String {
    format!(
        "{start_offset:0width$}.{extension}",
        width = SEGMENT_NAME_DIGITS
    )
}

pub fn segment_path(dir: &Path, start_offset: Offset, extension: &str) -> PathBuf {
    dir.join(segment_file_name(start_offset, extension))
}

/// The start offset named by a `.log` file name, if it is one.
pub fn parse_log_file_name(name: &str) -> Option<Offset> {
    let digits = name.strip_suffix(LOG_EXTENSION)?.strip_suffix('.')?;
    if digits.len() != SEGMENT_NAME_DIGITS || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().map(Offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_entry_when_encoding_should_match_golden_bytes() {
        let entry = IndexEntry {
            offset: Offset(0x0102),
            timestamp: 0x0A0B_0C0D,
            position: 256,
        };
        let golden: [u8; 24] = [
            0x02, 0x01, 0, 0, 0, 0, 0, 0, 0x0D, 0x0C, 0x0B, 0x0A, 0, 0, 0, 0, 0x00, 0x01, 0, 0, 0,
            0, 0, 0,
        ];
        assert_eq!(entry.encode(), golden);
        assert_eq!(IndexEntry::decode(&golden), entry);
    }

    #[test]
    fn given_partial_trailing_entry_when_decoding_should_ignore_it() {
        let mut bytes = IndexEntry {
            offset: Offset(1),
            timestamp: 2,
            position: 3,
        }
        .encode()
        .to_vec();
        bytes.extend_from_slice(&[9; 10]);
        assert_eq!(IndexEntry::decode_all(&bytes).len(), 1);
    }

    #[test]
    fn given_segment_names_should_round_trip_twenty_digits() {
        assert_eq!(
            segment_file_name(Offset(42), LOG_EXTENSION),
            "00000000000000000042.log"
        );
        assert_eq!(
            parse_log_file_name("00000000000000000042.log"),
            Some(Offset(42))
        );
        assert_eq!(parse_log_file_name("00000000000000000042.index"), None);
        assert_eq!(parse_log_file_name("42.log"), None);
    }

    #[test]
    fn given_sparse_index_when_looking_up_should_take_floor_entry() {
        let mut index = Vec::new();
        for i in 0..4u64 {
            push_sparse(
                &mut index,
                IndexEntry {
                    offset: Offset(i * 10),
                    timestamp: i * 100,
                    position: i * MEMORY_INDEX_GAP_BYTES,
                },
            );
        }
        push_sparse(
            &mut index,
            IndexEntry {
                offset: Offset(31),
                timestamp: 301,
                position: 3 * MEMORY_INDEX_GAP_BYTES + 1,
            },
        );
        assert_eq!(
            index.len(),
            4,
            "an entry too close to the previous one is not kept"
        );
        assert_eq!(
            floor_entry(&index, Offset(25), |e| e.offset).map(|e| e.offset),
            Some(Offset(20))
        );
        assert_eq!(
            floor_entry(&index, 250, |e| e.timestamp).map(|e| e.offset),
            Some(Offset(20))
        );
        assert!(floor_entry(&index[1..], Offset(5), |e| e.offset).is_none());
    }
}
