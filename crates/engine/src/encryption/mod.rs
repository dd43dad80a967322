//! Encryption at rest (storage spec §14): each message's payload, and its
//! user headers when present, sealed with AES-256-GCM before the batch is
//! stored, and opened just before a poll reply leaves the server.
//!
//! Order of events: at boot the server checks the configured keys against
//! the data directory's key check file (`key_check`) and gets a [`Keyring`];
//! a produced batch is encrypted under the keyring's active key on the shard
//! that received it (`Keyring::encrypt_record`), then stamped and stored like
//! any batch; a poll's records are decrypted under the key their header names
//! (`Keyring::decrypt_record`). Batches with `key_id` 0 are plaintext (written
//! before encryption was enabled) and pass through untouched.
//!
//! The sealed layout and the reasons for it live beside the code in
//! `record` (the original layout, still opened, in `record_original`); how a
//! header's `key_id` names key and layout in [`SealMark`]; the key check
//! file's layout in `key_check`.

pub mod key_check;
mod record;
mod record_original;

use std::fmt;

use ring::aead::{AES_256_GCM, LessSafeKey, UnboundKey};

pub use record::{
    CHECKSUM_INSIDE_LEN, DecryptError, NONCE_LEN, OpenedRecord, SEALED_OVERHEAD, TAG_LEN,
    is_plaintext, opening_authenticates,
};

/// Bytes of an AES-256 key.
pub const KEY_LEN: usize = 32;

/// The id a batch header carries for the key that sealed its frames; 0 is
/// reserved for plaintext batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KeyId(pub u32);

impl KeyId {
    /// What a plaintext batch carries.
    pub const PLAINTEXT: KeyId = KeyId(0);
    /// The id of the first key a data directory records.
    pub const FIRST: KeyId = KeyId(1);
    /// The largest id: a batch header holds it in 24 bits ([`SealMark`]).
    pub const MAX: KeyId = KeyId(0x00FF_FFFF);
}

/// How the frames of a sealed batch are laid out (`record`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SealedLayout {
    /// Issue 21's first layout (`record_original`): additional data is the
    /// message id and the field; opening rehashes the plaintext frame.
    /// Opened, never written.
    Original = 0,
    /// The producer's frame checksum sealed at the end of the payload and
    /// the message header's id and deltas in the additional data (`record`).
    /// Every new batch is sealed so.
    ChecksumInside = 1,
}

/// What a batch header's `key_id` field (protocol `batch`, byte 52) says
/// about its frames when it is not 0 (plaintext):
///
/// ```text
///   bits  0..24  key id      1..=KeyId::MAX, in the key check file
///   bits 24..32  layout      SealedLayout: 0 Original, 1 ChecksumInside
/// ```
///
/// The whole field is covered by the batch checksum. A build that knows only
/// the original layout reads a `ChecksumInside` batch as sealed under an
/// unknown key and refuses to serve it (it never reads it as plaintext).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SealMark {
    pub key_id: KeyId,
    pub layout: SealedLayout,
}

impl SealMark {
    const KEY_BITS: u32 = 24;

    /// The mark a header field holds; `Ok(None)` for plaintext (0).
    pub fn from_field(field: u32) -> Result<Option<Self>, DecryptError> {
        if field == 0 {
            return Ok(None);
        }
        let key_id = KeyId(field & KeyId::MAX.0);
        let layout = match field >> Self::KEY_BITS {
            0 => SealedLayout::Original,
            1 => SealedLayout::ChecksumInside,
            layout => return Err(DecryptError::UnknownLayout { layout }),
        };
        if key_id == KeyId::PLAINTEXT {
            return Err(DecryptError::UnknownKey { key_id });
        }
        Ok(Some(Self { key_id, layout }))
    }

    /// The header field that names this mark.
    pub fn to_field(self) -> u32 {
        assert!(
            self.key_id != KeyId::PLAINTEXT && self.key_id <= KeyId::MAX,
            "a sealing key id is 1..=KeyId::MAX"
        );
        (self.layout as u32) << Self::KEY_BITS | self.key_id.0
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A 32-byte AES-256-GCM key. Its `Debug` shows nothing of the key, so it
/// cannot reach a log by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct EncryptionKey([u8; KEY_LEN]);

impl EncryptionKey {
    pub fn new(bytes: [u8; KEY_LEN]) -> Self {
        Self(bytes)
    }

    /// The key from a decoded byte string; `None` unless it is 32 bytes.
    pub fn from_slice(bytes: &[u8]) -> Option<Self> {
        Some(Self(bytes.try_into().ok()?))
    }

    /// The check value recorded in the data directory for this key.
    pub fn check(&self) -> [u8; key_check::CHECK_LEN] {
        key_check::check_of(&self.0)
    }

    fn cipher(&self) -> LessSafeKey {
        let unbound = UnboundKey::new(&AES_256_GCM, &self.0)
            .expect("AES-256-GCM takes exactly the 32 bytes EncryptionKey holds");
        LessSafeKey::new(unbound)
    }
}

impl fmt::Debug for EncryptionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EncryptionKey(******)")
    }
}

/// The keys this server may use, by id: the active one seals new batches,
/// every one opens the batches it sealed. Shared by every shard.
pub struct Keyring {
    active: KeyId,
    /// Sorted by id, ids unique and never [`KeyId::PLAINTEXT`].
    keys: Vec<(KeyId, LessSafeKey)>,
}

impl Keyring {
    /// A keyring sealing with `active`, which must be one of `keys`.
    pub fn new(active: KeyId, keys: &[(KeyId, EncryptionKey)]) -> Self {
        let mut keys: Vec<(KeyId, LessSafeKey)> =
            keys.iter().map(|(id, key)| (*id, key.cipher())).collect();
        keys.sort_by_key(|(id, _)| *id);
        assert!(
            keys.windows(2).all(|pair| pair[0].0 != pair[1].0),
            "key ids are unique"
        );
        assert!(
            keys.iter().all(|(id, _)| *id != KeyId::PLAINTEXT),
            "key id 0 means plaintext"
        );
        assert!(
            keys.iter().all(|(id, _)| *id <= KeyId::MAX),
            "a batch header holds a key id in 24 bits"
        );
        assert!(
            keys.iter().any(|(id, _)| *id == active),
            "the active key is in the keyring"
        );
        Self { active, keys }
    }

    /// The key new batches are sealed with.
    pub fn active(&self) -> KeyId {
        self.active
    }

    /// Every key id this keyring can open, ascending.
    pub fn ids(&self) -> impl Iterator<Item = KeyId> + '_ {
        self.keys.iter().map(|(id, _)| *id)
    }

    fn key(&self, id: KeyId) -> Option<&LessSafeKey> {
        self.keys
            .binary_search_by_key(&id, |(k, _)| *k)
            .ok()
            .map(|at| &self.keys[at].1)
    }
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyring")
            .field("active", &self.active)
            .field("ids", &self.ids().collect::<Vec<_>>())
            .finish()
    }
}

#[cfg(test)]
mod layout_tests;
#[cfg(test)]
mod tests;
