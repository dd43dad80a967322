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
//! `record`; the key check file's layout in `key_check`.

pub mod key_check;
mod record;

use std::fmt;

use ring::aead::{AES_256_GCM, LessSafeKey, UnboundKey};

pub use record::{DecryptError, NONCE_LEN, OpenedRecord, SEALED_OVERHEAD, TAG_LEN, is_plaintext};

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
mod tests;
