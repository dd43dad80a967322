//! Cluster mode's replica links (replication spec §3, §8): the transport
//! between replica processes. Not yet wired to the consensus core.
//!
//! `handshake` is the sans-IO admission of a connection (plaintext or PSK);
//! `tls` the optional TLS 1.3 session under it (`cluster.tls`);
//! `lanes` the bounded two-lane outgoing queue of one peer; `connection`
//! moves replica frames over one admitted TCP stream; `link` owns the
//! listener, the dialers and the per-peer state, and is what the consensus
//! wiring calls. Dependencies point down: `link` → `connection`, `lanes`,
//! `handshake`; nothing here depends on the shard layer.

pub mod connection;
pub mod handshake;
pub mod lanes;
pub mod link;
pub mod tls;

pub use handshake::ReplicaId;
pub use link::{
    Inbound, LinkConfig, LinkError, LinkSender, Links, PeerStatus, SendError, bind_listener,
    node_address,
};

/// The replica-frame `group` of the metadata group (replication spec §2).
pub const METADATA_GROUP: u64 = 1 << 63;

/// The cluster id every replica frame and superblock carries: the first 16
/// bytes of BLAKE3(`cluster.name`), read little-endian (replication spec §3).
pub fn cluster_id(name: &str) -> u128 {
    let hash = blake3::hash(name.as_bytes());
    let first: [u8; 16] = hash.as_bytes()[..16]
        .try_into()
        .expect("a BLAKE3 hash has 32 bytes");
    u128::from_le_bytes(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_a_cluster_name_when_hashed_should_take_the_first_16_bytes_little_endian() {
        let hash = blake3::hash(b"iggy-cluster");
        let id = cluster_id("iggy-cluster");
        assert_eq!(id.to_le_bytes(), hash.as_bytes()[..16]);
        assert_ne!(cluster_id("iggy-cluster"), cluster_id("other"));
    }
}
