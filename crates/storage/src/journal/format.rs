//! Byte formats of the metadata journal and its snapshot.
//!
//! ```text
//! journal files = journal.wal? journal.<first>.wal*   (by first, ascending)
//!   journal.wal holds entries from sequence 1 (or after a snapshot);
//!   journal.<first>.wal (decimal, no padding: `journal.1025.wal`) was
//!   started by `Journal::rotate` and holds entries from `first` on. A
//!   file's entries that matter end below the next file's `first`; entries
//!   a snapshot covers are skipped. A file that starts past the end of the
//!   ones before it (their unsynced tail lost) is dropped at open, with
//!   every later one, as a torn tail is.
//!   journal.<first>.rwal: the same, in a journal that is never fsynced
//!   (`Journal::use_recycled_files`), possibly written over an older file:
//!   its records are the entries from `first` on, in sequence, up to the
//!   first that is not; the older bytes after them are cut at open.
//!   journal.spare.rwal: a covered file kept for the next rotation to
//!   write over (never journal.wal, whose name carries no first sequence);
//!   never read.
//!   A journal that is never fsynced is opened with `open_unsynced`: every
//!   file's records end at the first entry that does not continue them
//!   (torn after a power loss), never an error.
//! each file = entry* padding?
//!   padding: fewer than 4,096 zero bytes after the last entry, left by a
//!   direct-I/O write (`Journal::use_direct_io`); cut off at open
//! entry (little-endian)
//!   0  u32 payload_length   at most MAX_ENTRY_PAYLOAD_BYTES
//!   4  u64 sequence         1, 2, 3, ... with no gaps
//!  12  u64 checksum         XXH3-64 of bytes 0..12 followed by the payload
//!  20  payload
//!
//! snapshot.bin
//!   0  u32 magic            SNAPSHOT_MAGIC ("ISNP")
//!   4  u16 version          SNAPSHOT_VERSION
//!   6  u16 reserved         0
//!   8  u64 sequence         last journal sequence the snapshot covers
//!  16  u64 payload_length
//!  24  payload
//!  24+n u64 checksum        XXH3-64 of every preceding byte
//! ```

use protocol::checksum::Xxh3Stream;

pub const ENTRY_HEADER_SIZE: usize = 20;
/// Entries larger than the message-bus frame cap are treated as corrupt.
pub const MAX_ENTRY_PAYLOAD_BYTES: usize = 64 << 20;
pub const SNAPSHOT_MAGIC: u32 = u32::from_le_bytes(*b"ISNP");
pub const SNAPSHOT_VERSION: u16 = 1;
pub const SNAPSHOT_HEADER_SIZE: usize = 24;
pub(super) const CHECKSUM_SIZE: usize = 8;

const _: () = assert!(ENTRY_HEADER_SIZE == 4 + 8 + 8);
const _: () = assert!(MAX_ENTRY_PAYLOAD_BYTES <= u32::MAX as usize);

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8-byte slice"))
}

fn entry_checksum(header_prefix: &[u8], payload: &[u8]) -> u64 {
    let mut hash = Xxh3Stream::new();
    hash.update(header_prefix);
    hash.update(payload);
    hash.finish()
}

/// Appends the encoded entry to `out`.
#[cfg(test)]
pub fn encode_entry(sequence: u64, payload: &[u8], out: &mut Vec<u8>) {
    encode_entry_parts(sequence, &[payload], out);
}

/// Appends the entry whose payload is `parts` joined (written straight
/// into `out`, never joined first).
pub fn encode_entry_parts(sequence: u64, parts: &[&[u8]], out: &mut Vec<u8>) {
    let len: usize = parts.iter().map(|part| part.len()).sum();
    assert!(
        len <= MAX_ENTRY_PAYLOAD_BYTES,
        "journal payload over the limit"
    );
    let start = out.len();
    out.reserve(ENTRY_HEADER_SIZE + len);
    out.extend_from_slice(&(len as u32).to_le_bytes());
    out.extend_from_slice(&sequence.to_le_bytes());
    let mut hash = Xxh3Stream::new();
    hash.update(&out[start..start + 12]);
    for part in parts {
        hash.update(part);
    }
    out.extend_from_slice(&hash.finish().to_le_bytes());
    for part in parts {
        out.extend_from_slice(part);
    }
    debug_assert_eq!(
        entry_checksum(&out[start..start + 12], &out[start + ENTRY_HEADER_SIZE..]),
        u64::from_le_bytes(out[start + 12..start + 20].try_into().expect("8 bytes"))
    );
}

/// The outcome of reading one entry at the start of a byte slice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParsedEntry {
    Valid {
        sequence: u64,
        len: usize,
    },
    /// The bytes end before the entry does.
    Incomplete,
    /// The entry is whole but wrong; `len` is its size when the length
    /// field is plausible.
    Invalid {
        len: Option<usize>,
        reason: String,
    },
}

pub fn parse_entry(bytes: &[u8]) -> ParsedEntry {
    if bytes.len() < ENTRY_HEADER_SIZE {
        return ParsedEntry::Incomplete;
    }
    let payload_len = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")) as usize;
    if payload_len > MAX_ENTRY_PAYLOAD_BYTES {
        return ParsedEntry::Invalid {
            len: None,
            reason: format!("payload length {payload_len} over the limit"),
        };
    }
    let len = ENTRY_HEADER_SIZE + payload_len;
    if bytes.len() < len {
        return ParsedEntry::Incomplete;
    }
    if u64_at(bytes, 12) != entry_checksum(&bytes[..12], &bytes[ENTRY_HEADER_SIZE..len]) {
        return ParsedEntry::Invalid {
            len: Some(len),
            reason: "entry checksum mismatch".to_owned(),
        };
    }
    ParsedEntry::Valid {
        sequence: u64_at(bytes, 4),
        len,
    }
}

pub fn encode_snapshot(sequence: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(SNAPSHOT_HEADER_SIZE + payload.len() + CHECKSUM_SIZE);
    out.extend_from_slice(&SNAPSHOT_MAGIC.to_le_bytes());
    out.extend_from_slice(&SNAPSHOT_VERSION.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&sequence.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(payload);
    let checksum = entry_checksum(&out, &[]);
    out.extend_from_slice(&checksum.to_le_bytes());
    out
}

/// Decodes a snapshot file into `(sequence, payload)`.
pub fn decode_snapshot(bytes: &[u8]) -> Result<(u64, Vec<u8>), String> {
    if bytes.len() < SNAPSHOT_HEADER_SIZE + CHECKSUM_SIZE {
        return Err(format!("snapshot of {} bytes is too short", bytes.len()));
    }
    if u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")) != SNAPSHOT_MAGIC {
        return Err("not a snapshot file (bad magic)".to_owned());
    }
    let version = u16::from_le_bytes(bytes[4..6].try_into().expect("2 bytes"));
    if version != SNAPSHOT_VERSION {
        return Err(format!("unsupported snapshot format version {version}"));
    }
    let payload_len = usize::try_from(u64_at(bytes, 16)).map_err(|e| e.to_string())?;
    if bytes.len() != SNAPSHOT_HEADER_SIZE + payload_len + CHECKSUM_SIZE {
        return Err("snapshot length does not match its header".to_owned());
    }
    let body_end = bytes.len() - CHECKSUM_SIZE;
    if u64_at(bytes, body_end) != entry_checksum(&bytes[..body_end], &[]) {
        return Err("snapshot checksum mismatch".to_owned());
    }
    Ok((
        u64_at(bytes, 8),
        bytes[SNAPSHOT_HEADER_SIZE..body_end].to_vec(),
    ))
}

#[cfg(test)]
mod tests {
    use protocol::checksum::xxh3_64;

    use super::*;

    #[test]
    fn given_entry_when_encoding_should_match_golden_bytes() {
        let mut out = Vec::new();
        encode_entry(3, b"ab", &mut out);
        let header: [u8; 12] = [2, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(out[..12], header);
        let mut covered = header.to_vec();
        covered.extend_from_slice(b"ab");
        assert_eq!(out[12..20], xxh3_64(&covered).to_le_bytes());
        assert_eq!(&out[20..], b"ab");
        assert_eq!(
            parse_entry(&out),
            ParsedEntry::Valid {
                sequence: 3,
                len: 22
            }
        );
    }

    #[test]
    fn given_damaged_entries_when_parsing_should_classify_them() {
        let mut out = Vec::new();
        encode_entry(1, b"payload", &mut out);
        assert_eq!(parse_entry(&out[..out.len() - 1]), ParsedEntry::Incomplete);
        assert_eq!(parse_entry(&out[..5]), ParsedEntry::Incomplete);
        let mut flipped = out.clone();
        flipped[21] ^= 1;
        assert!(matches!(
            parse_entry(&flipped),
            ParsedEntry::Invalid { len: Some(27), .. }
        ));
        let mut huge = out;
        huge[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            parse_entry(&huge),
            ParsedEntry::Invalid { len: None, .. }
        ));
    }

    #[test]
    fn given_snapshot_when_encoding_should_match_golden_header_and_round_trip() {
        let bytes = encode_snapshot(9, b"state");
        assert_eq!(bytes[..8], [b'I', b'S', b'N', b'P', 1, 0, 0, 0]);
        assert_eq!(
            bytes[8..24],
            [9, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!(decode_snapshot(&bytes), Ok((9, b"state".to_vec())));
        let mut flipped = bytes;
        flipped[25] ^= 1;
        assert!(decode_snapshot(&flipped).is_err());
    }
}
