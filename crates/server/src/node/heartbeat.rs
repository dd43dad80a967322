//! The heartbeat verifier (`heartbeat.interval`): a connection that holds a
//! consumer-group membership and has sent nothing for 1.2 × interval is
//! closed, so its memberships are released and its groups rebalance.
//! Connections without memberships are left alone (configuration §7.8).
//!
//! Each shard tracks its own connections: the last time a request arrived
//! and the socket. A stale connection is sent an unsolicited Eviction frame
//! with reason 13 (StaleClient), which the SDK reads as the answer to its
//! next request, and is then shut down; the connection's task sees the end
//! of the stream and ends the session like any disconnect.

use std::cell::Cell;
use std::collections::HashMap;
use std::os::fd::RawFd;
use std::rc::Rc;
use std::time::{Duration, Instant};

use engine::metadata::ClientId;
use protocol::header::{EvictionHeader, EvictionReason};
use tracing::info;

use super::Node;

/// A stale connection is one silent for this many intervals.
const STALE_AFTER_INTERVALS: f64 = 1.2;

/// What the verifier knows about one connection.
pub struct Liveness {
    pub last_request: Rc<Cell<Instant>>,
    pub handle: ConnectionHandle,
}

/// How the verifier and the reaper reach a connection's transport.
#[derive(Clone)]
pub enum ConnectionHandle {
    /// Frames travel unencrypted on the socket: an eviction frame can be
    /// written to it directly before it is shut down.
    Plain(RawFd),
    /// Frames are wrapped (TLS, WebSocket): the socket is only shut down.
    Wrapped(RawFd),
    /// A QUIC connection: closed with an application error.
    Quic(compio::quic::Connection),
}

impl ConnectionHandle {
    fn close(&self) {
        match self {
            // SAFETY: the descriptor is still open: it is untracked before
            // its connection's socket is closed.
            ConnectionHandle::Plain(fd) | ConnectionHandle::Wrapped(fd) => unsafe {
                libc::shutdown(*fd, libc::SHUT_RDWR);
            },
            ConnectionHandle::Quic(connection) => {
                connection.close(compio::quic::VarInt::from_u32(0), b"closed by the server")
            }
        }
    }
}

impl Liveness {
    /// A plaintext TCP connection.
    pub fn plain(fd: RawFd) -> impl FnOnce(Rc<Cell<Instant>>) -> Liveness {
        move |last_request| Liveness {
            last_request,
            handle: ConnectionHandle::Plain(fd),
        }
    }

    /// A connection whose frames are wrapped (TLS, WebSocket).
    pub fn encrypted(fd: RawFd) -> impl FnOnce(Rc<Cell<Instant>>) -> Liveness {
        move |last_request| Liveness {
            last_request,
            handle: ConnectionHandle::Wrapped(fd),
        }
    }
}

#[derive(Default)]
pub struct LivenessTable {
    connections: std::cell::RefCell<HashMap<u64, Liveness>>,
}

impl LivenessTable {
    pub fn track(&self, connection_id: u64, liveness: Liveness) {
        self.connections
            .borrow_mut()
            .insert(connection_id, liveness);
    }

    /// Must run before the socket closes, so a reused descriptor is never
    /// shut down by mistake.
    pub fn untrack(&self, connection_id: u64) {
        self.connections.borrow_mut().remove(&connection_id);
    }

    /// The handle of a tracked connection, untracked (to close it).
    pub fn take(&self, connection_id: u64) -> Option<ConnectionHandle> {
        self.connections
            .borrow_mut()
            .remove(&connection_id)
            .map(|liveness| liveness.handle)
    }

    fn silent_since(&self, cutoff: Instant) -> Vec<(u64, ConnectionHandle)> {
        let connections = self.connections.borrow();
        connections
            .iter()
            .filter(|(_, l)| l.last_request.get() < cutoff)
            .map(|(id, l)| (*id, l.handle.clone()))
            .collect()
    }
}

impl Node {
    pub(super) async fn run_heartbeat_verifier(self: Rc<Self>, interval: Duration) {
        let window = interval.mul_f64(STALE_AFTER_INTERVALS);
        loop {
            compio::time::sleep(interval).await;
            if self.ctx.is_stopping() {
                return;
            }
            let Some(cutoff) = Instant::now().checked_sub(window) else {
                continue;
            };
            for (connection_id, handle) in self.liveness.silent_since(cutoff) {
                let Some(client) = self.member_client(connection_id) else {
                    continue;
                };
                info!(
                    connection_id,
                    "evicting a stale client that holds consumer-group memberships"
                );
                self.liveness.untrack(connection_id);
                evict(&handle, client);
            }
        }
    }

    /// Cluster mode: a session ended by the group (the leader ended the
    /// sessions of a node it lost, and this is that node, back) no longer
    /// exists, so the connections of this shard still bound to it are
    /// closed: their clients reconnect and log in again. An HTTP session
    /// has no socket: it leaves this shard's client table, so its next
    /// write opens a new session.
    pub(super) fn close_connections_of(&self, client: u128) {
        for connection_id in self.ctx.clients.bound_to(client) {
            if let Some(handle) = self.liveness.take(connection_id) {
                info!(
                    connection_id,
                    "closing a connection whose session the cluster ended"
                );
                handle.close();
            } else if self
                .client_table
                .borrow_mut()
                .unregister(consensus::ClientId(client))
            {
                info!(connection_id, "dropped an HTTP session the cluster ended");
            }
        }
    }

    /// Closes connections that sent nothing for `idle` (`tcp.idle_timeout`).
    pub(super) async fn run_idle_reaper(self: Rc<Self>, idle: Duration) {
        let period = (idle / 4).max(Duration::from_millis(100));
        loop {
            compio::time::sleep(period).await;
            if self.ctx.is_stopping() {
                return;
            }
            let Some(cutoff) = Instant::now().checked_sub(idle) else {
                continue;
            };
            for (connection_id, handle) in self.liveness.silent_since(cutoff) {
                info!(
                    connection_id,
                    "closing an idle connection (tcp.idle_timeout)"
                );
                self.liveness.untrack(connection_id);
                handle.close();
            }
        }
    }

    /// The client id of a connection whose session holds group memberships.
    fn member_client(&self, connection_id: u64) -> Option<u128> {
        let bound = self.ctx.clients.get(connection_id)?.bound?;
        let is_member = !self
            .metadata()
            .client_memberships(ClientId(bound.client))
            .is_empty();
        is_member.then_some(bound.client)
    }
}

/// Sends the StaleClient eviction without waiting (a silent client's socket
/// buffer has room for 256 bytes; if not, the close alone tells it), then
/// shuts the socket down.
/// Sends the unsolicited StaleClient eviction where the frame can travel
/// unwrapped, then closes the connection.
fn evict(handle: &ConnectionHandle, client: u128) {
    if let ConnectionHandle::Plain(fd) = handle {
        let frame = EvictionHeader::new(client, EvictionReason::StaleClient).encode();
        // SAFETY: the descriptor is still open (it is untracked before its
        // connection's socket closes) and `frame` outlives the call.
        unsafe {
            libc::send(
                *fd,
                frame.as_ptr().cast(),
                frame.len(),
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            );
        }
    }
    handle.close();
}
