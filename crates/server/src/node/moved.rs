//! The per-shard state of a client's stream connection that moves to
//! another shard between two requests (`session::moving` decides when):
//! what leaves this shard with it and what the next shard takes in.

use std::net::SocketAddr;

use consensus::client_table::MovedEntry;

use super::Node;
use super::clients::Bound;

/// What a session carries to its new shard.
#[derive(Debug)]
pub struct MovedSession {
    pub connection_id: u64,
    pub transport: crate::metrics::Transport,
    pub peer: SocketAddr,
    pub bound: Option<Bound>,
    pub failed_logins: u32,
    /// The coordinator session it attached to (ATTACH_CONSUMER_SESSION).
    pub attached: Option<u128>,
    /// Its client's request-deduplication entry.
    pub client_entry: Option<MovedEntry>,
}

impl Node {
    /// A connection leaves this shard: its per-shard state goes with it.
    pub fn connection_leaving(
        &self,
        connection_id: u64,
        bound: Option<Bound>,
    ) -> (Option<u128>, Option<MovedEntry>) {
        let attached = self.detach_session(connection_id);
        let entry = bound.and_then(|bound| {
            self.clients_table_mut()
                .take(consensus::ClientId(bound.client))
        });
        (attached, entry)
    }

    /// Whether a moved connection's session still exists. The cluster may
    /// end it (`close_connections_of`) while the connection is between
    /// shards, tracked by neither: checked once it is tracked here, so an
    /// end applied later finds it.
    pub fn session_alive(&self, bound: Option<Bound>) -> bool {
        bound.is_none_or(|bound| {
            let client = engine::metadata::ClientId(bound.client);
            self.metadata().client(client).is_some()
        })
    }

    /// A connection arrives from another shard with its state.
    pub fn connection_arriving(&self, moved: &mut MovedSession) {
        if let Some(client) = moved.attached {
            self.attach_session(moved.connection_id, client);
        }
        if let (Some(bound), Some(entry)) = (moved.bound, moved.client_entry.take()) {
            self.clients_table_mut()
                .put(consensus::ClientId(bound.client), entry);
        }
    }
}
