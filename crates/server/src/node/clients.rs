//! The registry of connected clients, across all shards: what GET_ME,
//! GET_CLIENT(S) and the stats report. Touched only when a connection opens,
//! logs in, logs out or closes: never on the data path, so a mutex is fine.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Mutex;

use crate::metrics::Transport;

/// The identity a session binds by a successful login: the user, the
/// client's 128-bit id and the session number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    pub user_id: u32,
    pub client: u128,
    pub session: u64,
}

#[derive(Debug, Clone)]
pub struct ClientRecord {
    pub connection_id: u64,
    pub transport: Transport,
    pub peer: SocketAddr,
    pub bound: Option<Bound>,
}

#[derive(Debug, Default)]
pub struct ClientRegistry {
    clients: Mutex<BTreeMap<u64, ClientRecord>>,
}

impl ClientRegistry {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, ClientRecord>> {
        // A panic while holding this lock cannot leave the map half-updated
        // (every update is a single insert/remove), so poisoning is ignored.
        self.clients
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn opened(&self, record: ClientRecord) {
        self.lock().insert(record.connection_id, record);
    }

    pub fn bind(&self, connection_id: u64, bound: Option<Bound>) {
        if let Some(record) = self.lock().get_mut(&connection_id) {
            record.bound = bound;
        }
    }

    pub fn closed(&self, connection_id: u64) {
        self.lock().remove(&connection_id);
    }

    pub fn get(&self, connection_id: u64) -> Option<ClientRecord> {
        self.lock().get(&connection_id).cloned()
    }

    /// Looks a client up by the low 32 bits of its connection id (what the
    /// wire shows).
    pub fn get_by_wire_id(&self, wire_id: u32) -> Option<ClientRecord> {
        self.lock()
            .values()
            .find(|r| r.connection_id as u32 == wire_id)
            .cloned()
    }

    pub fn all(&self) -> Vec<ClientRecord> {
        self.lock().values().cloned().collect()
    }

    /// The client ids the connections are bound to.
    pub fn bound_clients(&self) -> std::collections::BTreeSet<u128> {
        self.lock()
            .values()
            .filter_map(|record| record.bound.map(|bound| bound.client))
            .collect()
    }

    /// The connections bound to `client`.
    pub fn bound_to(&self, client: u128) -> Vec<u64> {
        self.lock()
            .values()
            .filter(|record| record.bound.is_some_and(|bound| bound.client == client))
            .map(|record| record.connection_id)
            .collect()
    }

    pub fn count(&self) -> usize {
        self.lock().len()
    }
}
