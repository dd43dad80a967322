//! The handshake MAC (replication spec §8): keys derived from the PSK,
//! the message one MAC covers, signing with the current key and
//! verifying with the current or the previous one.
//!
//! The MAC is `BLAKE3::keyed_hash(key, message)` with
//! `key = BLAKE3::derive_key(KEY_CONTEXT, psk)` and the 132-byte message:
//!
//! ```text
//!   0 [16] domain tag "iggy-replica-mac"   16 u128 cluster
//!  32 u8 dialer id   33 u8 acceptor id     34 [32] nonce_d   66 [32] nonce_a
//!  98 u8 mode (0 plaintext, 1 TLS)         99 [32] TLS exporter (zeros in plaintext)
//! 131 u8 direction (1 dialer, 2 acceptor)
//! ```

use super::{HandshakeConfig, MAC_SIZE, NONCE_SIZE, Nonce, ReplicaId, SHARED_SECRET_LEN_MIN};

/// `derive_key` context: the PSK is never used as a key directly.
pub const KEY_CONTEXT: &str = "iggy-server 2026-12 replica link handshake PSK";
/// First 16 bytes of every MAC message.
pub const MAC_DOMAIN_TAG: &[u8; 16] = b"iggy-replica-mac";
pub(super) const MAC_MESSAGE_SIZE: usize = 16 + 16 + 1 + 1 + NONCE_SIZE * 2 + 1 + 32 + 1;
const _: () = assert!(MAC_MESSAGE_SIZE == 132);

pub(super) const DIRECTION_DIALER: u8 = 1;
pub(super) const DIRECTION_ACCEPTOR: u8 = 2;

/// A MAC key derived from one PSK.
#[derive(Clone, PartialEq, Eq)]
pub struct MacKey([u8; 32]);

impl MacKey {
    /// Derives the key; `None` if the secret is shorter than 32 bytes.
    pub fn derive(secret: &[u8]) -> Option<MacKey> {
        (secret.len() >= SHARED_SECRET_LEN_MIN)
            .then(|| MacKey(blake3::derive_key(KEY_CONTEXT, secret)))
    }
}

impl std::fmt::Debug for MacKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MacKey(******)")
    }
}

/// `cluster.auth`: the current key signs and verifies; the previous one (a
/// rotation in progress) only verifies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PskKeys {
    pub current: MacKey,
    pub previous: Option<MacKey>,
}

impl PskKeys {
    pub(super) fn verifies(&self, message: &[u8; MAC_MESSAGE_SIZE], mac: &[u8; MAC_SIZE]) -> bool {
        let received = blake3::Hash::from_bytes(*mac);
        // `blake3::Hash` equality is constant-time. Both keys are always
        // tried, so timing does not tell which one matched.
        let current = keyed_mac(&self.current, message) == received;
        let previous = self
            .previous
            .as_ref()
            .is_some_and(|key| keyed_mac(key, message) == received);
        current | previous
    }
}

fn keyed_mac(key: &MacKey, message: &[u8; MAC_MESSAGE_SIZE]) -> blake3::Hash {
    blake3::keyed_hash(&key.0, message)
}

/// The transport the handshake runs over; TLS binds the MAC to the
/// session through its exporter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelBinding {
    Plaintext,
    Tls { exporter: [u8; 32] },
}

/// The parties and nonces one MAC covers.
pub(super) struct Transcript<'a> {
    pub config: &'a HandshakeConfig,
    pub dialer: ReplicaId,
    pub acceptor: ReplicaId,
    pub nonce_d: &'a Nonce,
    pub nonce_a: &'a Nonce,
}

impl Transcript<'_> {
    /// The MAC message laid out in the module docs.
    pub(super) fn message(&self, direction: u8) -> [u8; MAC_MESSAGE_SIZE] {
        let (mode, exporter) = match self.config.channel {
            ChannelBinding::Plaintext => (0u8, [0u8; 32]),
            ChannelBinding::Tls { exporter } => (1u8, exporter),
        };
        let mut m = [0u8; MAC_MESSAGE_SIZE];
        m[0..16].copy_from_slice(MAC_DOMAIN_TAG);
        m[16..32].copy_from_slice(&self.config.cluster.to_le_bytes());
        m[32] = self.dialer;
        m[33] = self.acceptor;
        m[34..66].copy_from_slice(self.nonce_d);
        m[66..98].copy_from_slice(self.nonce_a);
        m[98] = mode;
        m[99..131].copy_from_slice(&exporter);
        m[131] = direction;
        m
    }

    pub(super) fn sign(&self, keys: &PskKeys, direction: u8) -> [u8; MAC_SIZE] {
        *keyed_mac(&keys.current, &self.message(direction)).as_bytes()
    }
}
