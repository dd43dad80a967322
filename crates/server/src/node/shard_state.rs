//! The state one shard thread owns: its id, the shared context, its node,
//! and the counters shutdown waits on. Sessions, transports and the HTTP
//! API hold it behind an `Rc`; the shard layer creates it when the thread
//! starts and drains it when the thread stops.
//!
//! The thread's request counter lives here too: serving a request records
//! activity, and the shard's event loop (`shard::event_loop`) reads it to
//! decide whether to keep polling before it parks.

use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::{info, warn};

use super::Node;
use super::context::ServerContext;

thread_local! {
    /// Requests served by this thread so far.
    static ACTIVITY: Cell<u64> = const { Cell::new(0) };
}

/// Records that this shard served a request.
pub fn note_activity() {
    ACTIVITY.with(|count| count.set(count.get().wrapping_add(1)));
}

/// Requests this thread has served so far (wrapping).
pub fn activity() -> u64 {
    ACTIVITY.with(Cell::get)
}

/// State owned by one shard thread.
pub struct Shard {
    pub id: u16,
    pub ctx: Arc<ServerContext>,
    pub node: Rc<Node>,
    connections: Rc<Cell<usize>>,
    requests_in_flight: Rc<Cell<usize>>,
}

impl Shard {
    pub fn new(id: u16, ctx: Arc<ServerContext>, node: Node) -> Self {
        Self {
            id,
            ctx,
            node: Rc::new(node),
            connections: Default::default(),
            requests_in_flight: Default::default(),
        }
    }

    /// Counts a live connection until the guard drops.
    pub fn connection_guard(&self) -> CountGuard {
        CountGuard::new(&self.connections)
    }

    /// Counts a request being executed until the guard drops; shutdown waits
    /// for these (bounded by the drain timeout), not for idle connections.
    pub fn request_guard(&self) -> CountGuard {
        note_activity();
        CountGuard::new(&self.requests_in_flight)
    }

    /// Waits for the next connection this shard may take: retries failed
    /// accepts, drops connections beyond `tcp.max_connections`, and returns
    /// `None` once the server is stopping.
    pub async fn next_connection(
        &self,
        listener: &compio::net::TcpListener,
        name: &str,
    ) -> Option<(compio::net::TcpStream, SocketAddr)> {
        loop {
            let (stream, peer) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!("{name} accept failed: {e}");
                    compio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            if self.ctx.is_stopping() {
                return None;
            }
            if !self.ctx.has_connection_room() {
                tracing::debug!(%peer, "refusing a {name} connection: tcp.max_connections reached");
                continue;
            }
            return Some((stream, peer));
        }
    }

    /// Waits (at most the drain timeout) for requests in flight to finish;
    /// returns how many were still running then (they are abandoned).
    pub async fn drain(&self) -> usize {
        let deadline = Instant::now() + self.ctx.drain_timeout;
        while self.requests_in_flight.get() > 0 && Instant::now() < deadline {
            compio::time::sleep(Duration::from_millis(5)).await;
        }
        if self.requests_in_flight.get() > 0 {
            let in_flight = self.requests_in_flight.get();
            warn!(
                shard = self.id,
                in_flight, "requests still running at the drain deadline are abandoned"
            );
        }
        if self.connections.get() > 0 {
            info!(
                shard = self.id,
                open = self.connections.get(),
                "closing connections at shutdown"
            );
        }
        self.requests_in_flight.get()
    }
}

/// Decrements its counter when dropped.
pub struct CountGuard(Rc<Cell<usize>>);

impl CountGuard {
    fn new(counter: &Rc<Cell<usize>>) -> Self {
        counter.set(counter.get() + 1);
        Self(counter.clone())
    }
}

impl Drop for CountGuard {
    fn drop(&mut self) {
        self.0.set(self.0.get() - 1);
    }
}
