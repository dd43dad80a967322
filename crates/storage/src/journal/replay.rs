//! Replay of `journal.wal` at open: every entry is verified and sequences
//! must be consecutive. A torn tail (an incomplete entry, or an invalid
//! entry with only zeros after it) is cut off; damage with data after it is
//! corruption and fails the open, naming the file and byte position, so no
//! later entry is ever silently dropped.

use std::path::Path;

use super::JournalRecord;
use super::format::{ParsedEntry, parse_entry};
use crate::error::{Result, StorageError};

/// The verified content of a journal file.
#[derive(Debug, Default)]
pub struct Replayed {
    pub records: Vec<JournalRecord>,
    /// Bytes of whole valid entries; the rest is a torn tail.
    pub valid_end: u64,
    pub torn_reason: Option<String>,
}

pub fn replay(bytes: &[u8], path: &Path) -> Result<Replayed> {
    let mut replayed = Replayed::default();
    let mut at = 0usize;
    while at < bytes.len() {
        let rest = &bytes[at..];
        let corrupt = |reason: String| StorageError::Corrupt {
            file: path.to_path_buf(),
            position: at as u64,
            reason,
        };
        match parse_entry(rest) {
            ParsedEntry::Valid { sequence, len } => {
                let expected = replayed.records.last().map(|r| r.sequence + 1);
                if expected.is_some_and(|expected| expected != sequence) {
                    let reason = format!(
                        "sequence {sequence} where {} was expected",
                        expected.unwrap_or_default()
                    );
                    if is_zero(&rest[len..]) {
                        replayed.torn_reason = Some(reason);
                        break;
                    }
                    return Err(corrupt(reason));
                }
                let payload = rest[super::format::ENTRY_HEADER_SIZE..len].to_vec();
                replayed.records.push(JournalRecord { sequence, payload });
                at += len;
                replayed.valid_end = at as u64;
            }
            ParsedEntry::Incomplete => {
                replayed.torn_reason = Some("incomplete entry".to_owned());
                break;
            }
            ParsedEntry::Invalid { len, reason } => {
                let after = len.map_or(rest, |len| &rest[len..]);
                if !is_zero(after) {
                    return Err(corrupt(format!("{reason}; valid data follows")));
                }
                replayed.torn_reason = Some(reason);
                break;
            }
        }
    }
    Ok(replayed)
}

fn is_zero(bytes: &[u8]) -> bool {
    bytes.iter().all(|&b| b == 0)
}

#[cfg(test)]
mod tests {
    use super::super::format::encode_entry;
    use super::*;

    fn wal(count: u64) -> Vec<u8> {
        let mut out = Vec::new();
        for sequence in 1..=count {
            encode_entry(sequence, format!("op-{sequence}").as_bytes(), &mut out);
        }
        out
    }

    #[test]
    fn given_torn_last_entry_when_replaying_should_keep_the_whole_ones() {
        let bytes = wal(3);
        let replayed = replay(&bytes[..bytes.len() - 2], Path::new("j")).unwrap();
        assert_eq!(replayed.records.len(), 2);
        assert!(replayed.torn_reason.is_some());
        let mut flipped = bytes.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert_eq!(replay(&flipped, Path::new("j")).unwrap().records.len(), 2);
    }

    #[test]
    fn given_damage_before_valid_entries_when_replaying_should_fail_with_position() {
        let mut bytes = wal(3);
        bytes[21] ^= 1;
        let error = replay(&bytes, Path::new("j")).unwrap_err();
        assert!(
            matches!(error, StorageError::Corrupt { position: 0, .. }),
            "{error}"
        );
    }

    #[test]
    fn given_sequence_gap_followed_by_data_when_replaying_should_fail() {
        let mut bytes = wal(1);
        encode_entry(3, b"x", &mut bytes);
        encode_entry(4, b"y", &mut bytes);
        assert!(replay(&bytes, Path::new("j")).is_err());
    }
}
