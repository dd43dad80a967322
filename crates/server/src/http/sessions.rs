//! Server-side HTTP sessions (HTTP API spec §5.7). HTTP requests carry no
//! connection, so the first write made with a credential (a JWT by its
//! `jti`, a personal access token by its hash) registers a client, as a
//! binary-protocol login does: it appears in `/clients` with transport
//! HTTP and counts in the stats. Later writes with the same credential
//! reuse it; it ends at logout or once the token expires. At most
//! `metadata.clients_table_max / 2` are live; a new one beyond that is
//! refused with 503. Reads never register anything.
//!
//! Every write takes its credential's turn (`turns`) before anything else,
//! so one credential's writes run one at a time and its session is opened
//! or renewed only under the turn. Each write gets the next request number
//! of its session, from 1, for the client-sessions table (see `write`).
//!
//! Lives on shard 0 with the HTTP server; not shared across threads.

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::rc::Rc;

use consensus::RequestNumber;
use hyper::StatusCode;

use super::error::ApiError;
use super::turns::{Turn, TurnQueue};
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

/// Who is writing: the credential, its user and where the request came from.
#[derive(Debug, Clone, Copy)]
pub struct Writer<'a> {
    pub credential: &'a Credential,
    pub user_id: u32,
    pub peer: SocketAddr,
    pub now_secs: u64,
}

/// One write under its session: the identity it is admitted with and its
/// request number. It holds the credential's turn until dropped.
#[derive(Debug)]
pub struct SessionWrite {
    pub bound: Bound,
    pub request: RequestNumber,
    turn: Turn,
}

#[derive(Debug)]
struct Entry {
    connection_id: u64,
    bound: Bound,
    expires_at: Option<u64>,
    /// The request number of the session's latest write (0: none yet).
    last_request: RequestNumber,
}

impl Entry {
    fn expired(&self, now_secs: u64) -> bool {
        self.expires_at.is_some_and(|at| at <= now_secs)
    }
}

#[derive(Debug)]
pub struct HttpSessions {
    entries: RefCell<HashMap<String, Entry>>,
    /// Per credential key; an idle queue is forgotten at the next sweep.
    turns: RefCell<HashMap<String, TurnQueue>>,
    max: usize,
}

impl HttpSessions {
    pub fn new(clients_table_max: usize) -> Self {
        Self {
            entries: RefCell::new(HashMap::new()),
            turns: RefCell::new(HashMap::new()),
            max: (clients_table_max / 2).max(1),
        }
    }

    /// Waits for the credential's turn, makes sure it has a live session
    /// (registering one on its first write) and gives the write the
    /// session's next request number.
    pub async fn ensure(
        &self,
        node: &Rc<Node>,
        writer: &Writer<'_>,
    ) -> Result<SessionWrite, ApiError> {
        let queue = self
            .turns
            .borrow_mut()
            .entry(writer.credential.key.clone())
            .or_default()
            .clone();
        let turn = queue.take().await;
        if !self.is_live(writer) {
            self.open(node, writer).await?;
        }
        Ok(self.next_write(writer, turn))
    }

    /// The table no longer knows `stale`'s session (evicted by newer
    /// registrations): ends it and opens a new one under the same turn.
    pub async fn renew(
        &self,
        node: &Rc<Node>,
        writer: &Writer<'_>,
        stale: SessionWrite,
    ) -> Result<SessionWrite, ApiError> {
        // Sessions are opened only under their credential's turn, which
        // `stale` holds: the entry is `stale`'s, or gone (logged out).
        let ended = self.entries.borrow_mut().remove(&writer.credential.key);
        if let Some(entry) = ended {
            assert_eq!(entry.bound, stale.bound, "no other write opened a session");
            node.connection_closed(entry.connection_id, Some(entry.bound));
        }
        self.open(node, writer).await?;
        Ok(self.next_write(writer, stale.turn))
    }

    fn is_live(&self, writer: &Writer<'_>) -> bool {
        self.entries
            .borrow()
            .get(&writer.credential.key)
            .is_some_and(|e| !e.expired(writer.now_secs))
    }

    /// Registers a client for the credential. Only under its turn.
    async fn open(&self, node: &Rc<Node>, writer: &Writer<'_>) -> Result<(), ApiError> {
        self.sweep(node, writer.now_secs);
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
        node.connection_opened(connection_id, Transport::Http, writer.peer);
        let owner = crate::node::SessionOwner {
            client: rand::random::<u128>(),
            user_id: writer.user_id,
            transport: Transport::Http,
            peer: writer.peer,
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
        let entry = Entry {
            connection_id,
            bound,
            expires_at: writer.credential.expires_at,
            last_request: RequestNumber(0),
        };
        let replaced = self
            .entries
            .borrow_mut()
            .insert(writer.credential.key.clone(), entry);
        // The sweep above ended an expired session of the credential, and
        // nothing else opens one while this write holds the turn.
        assert!(
            replaced.is_none(),
            "sessions are opened only under their credential's turn"
        );
        Ok(())
    }

    /// The next request number of the credential's session, which was just
    /// found live or opened (nothing awaited since).
    fn next_write(&self, writer: &Writer<'_>, turn: Turn) -> SessionWrite {
        let mut entries = self.entries.borrow_mut();
        let entry = entries
            .get_mut(&writer.credential.key)
            .expect("the session was found or opened under this turn");
        let request = RequestNumber(entry.last_request.0 + 1);
        assert!(request > entry.last_request, "request numbers only grow");
        entry.last_request = request;
        SessionWrite {
            bound: entry.bound,
            request,
            turn,
        }
    }

    /// Logout: the credential's session ends (the token stays valid; a
    /// later write registers a new one).
    pub fn end(&self, node: &Rc<Node>, credential: &Credential) {
        let ended = self.entries.borrow_mut().remove(&credential.key);
        if let Some(entry) = ended {
            node.connection_closed(entry.connection_id, Some(entry.bound));
        }
    }

    /// Ends every session whose credential has expired and forgets idle
    /// turn queues.
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
        self.turns.borrow_mut().retain(|_, queue| !queue.is_idle());
    }
}
