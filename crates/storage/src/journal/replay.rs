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

/// The records of a file that may have been written over an older one
/// (`journal.<first>.rwal`), or of a journal that is never fsynced: whole
/// entries continuing from `first` (from the first entry's sequence when
/// `None`), up to the first entry that does not (the older file's bytes,
/// or a torn write). Never an error: what follows them is not trusted.
pub fn replay_recycled(bytes: &[u8], first: Option<u64>) -> Replayed {
    let mut replayed = Replayed::default();
    let mut at = 0usize;
    let mut expected = first;
    while at < bytes.len() {
        match parse_entry(&bytes[at..]) {
            ParsedEntry::Valid { sequence, len } if expected.is_none_or(|e| e == sequence) => {
                let payload = bytes[at + super::format::ENTRY_HEADER_SIZE..at + len].to_vec();
                replayed.records.push(JournalRecord { sequence, payload });
                at += len;
                replayed.valid_end = at as u64;
                expected = Some(sequence + 1);
            }
            _ => {
                replayed.torn_reason = Some("the end of the records written over".to_owned());
                break;
            }
        }
    }
    replayed
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
    fn given_a_file_written_over_an_older_one_when_replaying_should_end_at_the_older_bytes() {
        // An older file (records 1..=6), then records 10 and 11 written
        // over its start: the rest is the older file's.
        let older = wal(6);
        let mut bytes = Vec::new();
        encode_entry(10, b"ten", &mut bytes);
        encode_entry(11, b"eleven", &mut bytes);
        let written = bytes.len();
        bytes.extend_from_slice(&older[written..]);
        let replayed = replay_recycled(&bytes, Some(10));
        let sequences: Vec<u64> = replayed.records.iter().map(|r| r.sequence).collect();
        assert_eq!(sequences, [10, 11]);
        assert_eq!(replayed.valid_end, written as u64);
        // Renamed but not yet written: the older records do not count.
        assert!(replay_recycled(&older, Some(10)).records.is_empty());
    }

    #[test]
    fn given_sequence_gap_followed_by_data_when_replaying_should_fail() {
        let mut bytes = wal(1);
        encode_entry(3, b"x", &mut bytes);
        encode_entry(4, b"y", &mut bytes);
        assert!(replay(&bytes, Path::new("j")).is_err());
    }
}
