//! The key check file `<system.path>/encryption.check` and the boot rule that
//! keeps keys from being confused (sans-IO: the server reads and writes the
//! file, this module decides).
//!
//! The file records, for every key that ever sealed data in the directory,
//! its id and a check value: BLAKE3 in key-derivation mode with the context
//! [`CHECK_CONTEXT`] over the key. The check identifies a key without
//! revealing it (a 256-bit random key cannot be recovered from it). Layout,
//! all little-endian:
//!
//! ```text
//!   0   8  magic            "IGGYKEYS"
//!   8   2  version          1
//!  10   2  count n          1..=255 entries
//!  12   4  reserved         0
//!  16  40n entries, ids strictly ascending:
//!            0  4  key_id   1..=0xFF_FFFF (a batch header holds 24 bits)
//!            4  4  reserved 0
//!            8 32  check
//! 16+40n 8 XXH3-64 of every preceding byte
//! ```
//!
//! It is written whole (temporary file, fsync, rename) before the first
//! batch is sealed under a new key, and never otherwise changed.

use std::collections::BTreeSet;

use protocol::checksum::xxh3_64;

use super::{EncryptionKey, KEY_LEN, KeyId, Keyring};

/// File name inside the data directory.
pub const KEY_CHECK_FILE: &str = "encryption.check";
/// Context string of the BLAKE3 key derivation that makes a check value.
pub const CHECK_CONTEXT: &str = "iggy-server 2026-12 encryption at rest key check v1";
/// Bytes of a check value.
pub const CHECK_LEN: usize = 32;
/// Most keys one data directory records.
pub const KEYS_MAX: usize = 255;

const MAGIC: &[u8; 8] = b"IGGYKEYS";
const VERSION: u16 = 1;
const PREFIX_LEN: usize = 16;
const ENTRY_LEN: usize = 8 + CHECK_LEN;
const TRAILER_LEN: usize = 8;
const _: () = assert!(ENTRY_LEN == 40);
const _: () = assert!(KEYS_MAX <= u16::MAX as usize);

/// The check value of a key.
pub(super) fn check_of(key: &[u8; KEY_LEN]) -> [u8; CHECK_LEN] {
    blake3::derive_key(CHECK_CONTEXT, key)
}

/// One recorded key: its id and its check value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyCheckEntry {
    pub id: KeyId,
    pub check: [u8; CHECK_LEN],
}

/// The decoded file: entries in ascending id order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyCheckFile {
    entries: Vec<KeyCheckEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyCheckFileError {
    #[error("it is {len} bytes, not a key check file")]
    Length { len: usize },
    #[error("its magic bytes are not IGGYKEYS")]
    Magic,
    #[error("its version {version} is not one this server reads")]
    Version { version: u16 },
    #[error("its checksum does not match (corrupt)")]
    Checksum,
    #[error(
        "its entries are malformed (ids must be 1 to 16777215, ascending, reserved bytes zero)"
    )]
    Entries,
}

impl KeyCheckFile {
    pub fn entries(&self) -> &[KeyCheckEntry] {
        &self.entries
    }

    pub fn ids(&self) -> Vec<KeyId> {
        self.entries.iter().map(|e| e.id).collect()
    }

    fn find(&self, check: &[u8; CHECK_LEN]) -> Option<KeyId> {
        self.entries
            .iter()
            .find(|e| &e.check == check)
            .map(|e| e.id)
    }

    /// The id a new key gets; `None` once ids run out.
    fn next_id(&self) -> Option<KeyId> {
        match self.entries.last() {
            None => Some(KeyId::FIRST),
            Some(e) => e.id.0.checked_add(1).map(KeyId),
        }
        .filter(|id| *id <= KeyId::MAX)
    }

    pub fn encode(&self) -> Vec<u8> {
        assert!(
            !self.entries.is_empty() && self.entries.len() <= KEYS_MAX,
            "1..=255 entries"
        );
        let mut out = Vec::with_capacity(PREFIX_LEN + ENTRY_LEN * self.entries.len() + TRAILER_LEN);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(self.entries.len() as u16).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        for entry in &self.entries {
            out.extend_from_slice(&entry.id.0.to_le_bytes());
            out.extend_from_slice(&0u32.to_le_bytes());
            out.extend_from_slice(&entry.check);
        }
        let checksum = xxh3_64(&out);
        out.extend_from_slice(&checksum.to_le_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, KeyCheckFileError> {
        let length = KeyCheckFileError::Length { len: bytes.len() };
        if bytes.len() < PREFIX_LEN + TRAILER_LEN {
            return Err(length);
        }
        if &bytes[..8] != MAGIC {
            return Err(KeyCheckFileError::Magic);
        }
        let version = u16::from_le_bytes([bytes[8], bytes[9]]);
        if version != VERSION {
            return Err(KeyCheckFileError::Version { version });
        }
        let count = usize::from(u16::from_le_bytes([bytes[10], bytes[11]]));
        if bytes.len() != PREFIX_LEN + ENTRY_LEN * count + TRAILER_LEN {
            return Err(length);
        }
        let (body, trailer) = bytes.split_at(bytes.len() - TRAILER_LEN);
        if xxh3_64(body).to_le_bytes() != trailer {
            return Err(KeyCheckFileError::Checksum);
        }
        let entries: Vec<KeyCheckEntry> = body[PREFIX_LEN..]
            .chunks_exact(ENTRY_LEN)
            .map(|chunk| KeyCheckEntry {
                id: KeyId(u32::from_le_bytes(chunk[..4].try_into().expect("4 bytes"))),
                check: chunk[8..].try_into().expect("32 bytes"),
            })
            .collect();
        let reserved_zero = body[12..16] == [0; 4]
            && body[PREFIX_LEN..]
                .chunks_exact(ENTRY_LEN)
                .all(|chunk| chunk[4..8] == [0; 4]);
        let ascending = entries.windows(2).all(|pair| pair[0].id < pair[1].id);
        let valid_ids = entries.first().is_some_and(|e| e.id >= KeyId::FIRST)
            && entries.last().is_some_and(|e| e.id <= KeyId::MAX);
        if !(reserved_zero && ascending && valid_ids) {
            return Err(KeyCheckFileError::Entries);
        }
        Ok(Self { entries })
    }
}

/// The keys configuration offers: `system.encryption.key` and
/// `system.encryption.previous_keys`, decoded.
#[derive(Debug, Clone)]
pub struct ConfiguredKeys {
    pub current: EncryptionKey,
    pub previous: Vec<EncryptionKey>,
}

/// What boot may go on with.
#[derive(Debug)]
pub enum Admitted {
    /// Encryption is off and the directory holds no encrypted data.
    Plaintext,
    /// Encryption is on. `record`: the file to write before serving (the
    /// first key, or a rotation); `None` when the file already says it all.
    Encrypted {
        keyring: Keyring,
        record: Option<KeyCheckFile>,
    },
}

/// Why boot must stop; nothing has been changed when one is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error(
        "system.encryption.enabled = false, but this data directory holds messages encrypted at \
         rest (key ids {ids:?} in {KEY_CHECK_FILE}); serving them needs their keys. Set \
         system.encryption.enabled = true with the key they were written with"
    )]
    DisabledOverEncryptedData { ids: Vec<KeyId> },
    #[error(
        "system.encryption.key does not match the key recorded in this data directory: no \
         configured key matches key id(s) {unmatched:?} of {KEY_CHECK_FILE}, so their messages \
         would be unreadable. Start with the key the data was written with; to rotate, set the \
         new key in system.encryption.key and keep every old one in \
         system.encryption.previous_keys"
    )]
    KeyMismatch { unmatched: Vec<KeyId> },
    #[error(
        "system.encryption.previous_keys entry {index} matches no key recorded in this data \
         directory's {KEY_CHECK_FILE}; list only keys this directory was encrypted with"
    )]
    UnknownPreviousKey { index: usize },
    #[error("system.encryption keys: the same key is configured twice")]
    DuplicateKey,
    #[error(
        "this data directory's {KEY_CHECK_FILE} has no room for another key (at most \
         {KEYS_MAX} keys, ids up to 16777215)"
    )]
    TooManyKeys,
}

/// Decides whether the configured keys fit the recorded ones.
///
/// Rules: encryption off is fine only over a directory that records no key.
/// Encryption on needs every recorded key configured (current or previous,
/// so nothing stored becomes unreadable) and every previous key recorded. A
/// current key the file does not know is a new key: it is recorded under
/// the next id and seals from now on (the first key gets id 1).
pub fn admit(
    recorded: Option<&KeyCheckFile>,
    configured: Option<&ConfiguredKeys>,
) -> Result<Admitted, Refusal> {
    let Some(configured) = configured else {
        return match recorded {
            None => Ok(Admitted::Plaintext),
            Some(file) => Err(Refusal::DisabledOverEncryptedData { ids: file.ids() }),
        };
    };
    let all: Vec<&EncryptionKey> = std::iter::once(&configured.current)
        .chain(&configured.previous)
        .collect();
    let checks: Vec<[u8; CHECK_LEN]> = all.iter().map(|k| k.check()).collect();
    if checks.iter().collect::<BTreeSet<_>>().len() != checks.len() {
        return Err(Refusal::DuplicateKey);
    }
    let empty = KeyCheckFile {
        entries: Vec::new(),
    };
    let file = recorded.unwrap_or(&empty);
    if let Some(index) = checks[1..].iter().position(|c| file.find(c).is_none()) {
        return Err(Refusal::UnknownPreviousKey { index });
    }
    let unmatched: Vec<KeyId> = file
        .entries
        .iter()
        .filter(|e| !checks.contains(&e.check))
        .map(|e| e.id)
        .collect();
    if !unmatched.is_empty() {
        return Err(Refusal::KeyMismatch { unmatched });
    }
    let (active, record) = match file.find(&checks[0]) {
        Some(id) => (id, None),
        None => {
            let id = file
                .next_id()
                .filter(|_| file.entries.len() < KEYS_MAX)
                .ok_or(Refusal::TooManyKeys)?;
            let mut entries = file.entries.clone();
            entries.push(KeyCheckEntry {
                id,
                check: checks[0],
            });
            (id, Some(KeyCheckFile { entries }))
        }
    };
    let keys: Vec<(KeyId, EncryptionKey)> = all
        .iter()
        .zip(&checks)
        .map(|(key, check)| {
            let id = file.find(check).unwrap_or(active);
            (id, (*key).clone())
        })
        .collect();
    let keyring = Keyring::new(active, &keys);
    Ok(Admitted::Encrypted { keyring, record })
}
