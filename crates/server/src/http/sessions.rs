//! Server-side HTTP sessions (HTTP API spec §5.7). HTTP requests carry no
//! connection, so the first write made with a credential (a JWT by its
//! `jti`, a personal access token by its hash) registers a client, as a
//! binary-protocol login does: it appears in `/clients` with transport
//! HTTP and counts in the stats. Later writes with the same credential
//! reuse it; it ends at logout or once the token expires. At most
//! `metadata.clients_table_max / 2` are live; a new one beyond that is
//! refused with 503. Reads never register anything.
//!
//! Lives on shard 0 with the HTTP server; not shared across threads.

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::rc::Rc;

use hyper::StatusCode;

use super::error::ApiError;
use crate::node::Node;
use crate::session::{Bound, Transport};

/// What identifies a session: the credential a request authenticated with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credential {
    /// `jwt:<jti>` or `pat:<hash>`.
    pub key: String,
    /// Unix seconds; `None` for credentials that do not expire.
    pub expires_at: Option<u64>,
}

#[derive(Debug)]
struct Entry {
    connection_id: u64,
    bound: Bound,
    expires_at: Option<u64>,
}

impl Entry {
    fn expired(&self, now_secs: u64) -> bool {
        self.expires_at.is_some_and(|at| at <= now_secs)
    }
}

#[derive(Debug)]
pub struct HttpSessions {
    entries: RefCell<HashMap<String, Entry>>,
    max: usize,
}

impl HttpSessions {
    pub fn new(clients_table_max: usize) -> Self {
        Self {
            entries: RefCell::new(HashMap::new()),
            max: (clients_table_max / 2).max(1),
        }
    }

    /// Makes sure `credential` has a live session for `user`, registering
    /// one (from `peer`) on its first write.
    pub async fn ensure(
        &self,
        node: &Rc<Node>,
        credential: &Credential,
        user_id: u32,
        peer: SocketAddr,
        now_secs: u64,
    ) -> Result<(), ApiError> {
        if self
            .entries
            .borrow()
            .get(&credential.key)
            .is_some_and(|e| !e.expired(now_secs))
        {
            return Ok(());
        }
        self.sweep(node, now_secs);
        if self.entries.borrow().len() >= self.max {
            return Err(ApiError::http(
                StatusCode::SERVICE_UNAVAILABLE,
                "too_many_sessions",
                format!(
                    "{} HTTP sessions are live, the most metadata.clients_table_max allows",
                    self.max
                ),
            ));
        }
        let connection_id = node.ctx.next_client_id();
        node.connection_opened(connection_id, Transport::Http, peer);
        let owner = crate::node::SessionOwner {
            client: rand::random::<u128>(),
            user_id,
            transport: Transport::Http,
            peer,
        };
        let bound = match node.register_session(connection_id, owner).await {
            Ok(bound) => bound,
            Err(e) => {
                node.connection_closed(connection_id, None);
                return Err(ApiError::http(
                    StatusCode::UNAUTHORIZED,
                    "unauthenticated",
                    format!("the session could not be opened: {e}"),
                ));
            }
        };
        // Another request with this credential may have opened a session
        // while this one waited for its commit: keep that one.
        if self
            .entries
            .borrow()
            .get(&credential.key)
            .is_some_and(|e| !e.expired(now_secs))
        {
            node.connection_closed(connection_id, Some(bound));
            return Ok(());
        }
        self.entries.borrow_mut().insert(
            credential.key.clone(),
            Entry {
                connection_id,
                bound,
                expires_at: credential.expires_at,
            },
        );
        Ok(())
    }

    /// Logout: the credential's session ends (the token stays valid; a
    /// later write registers a new one).
    pub fn end(&self, node: &Rc<Node>, credential: &Credential) {
        let ended = self.entries.borrow_mut().remove(&credential.key);
        if let Some(entry) = ended {
            node.connection_closed(entry.connection_id, Some(entry.bound));
        }
    }

    /// Ends every session whose credential has expired.
    pub fn sweep(&self, node: &Rc<Node>, now_secs: u64) {
        let expired: Vec<Entry> = self
            .entries
            .borrow_mut()
            .extract_if(|_, entry| entry.expired(now_secs))
            .map(|(_, entry)| entry)
            .collect();
        for entry in expired {
            node.connection_closed(entry.connection_id, Some(entry.bound));
        }
    }
}
