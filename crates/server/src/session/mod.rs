//! One client connection's protocol state machine, the same on every
//! transport: a frame in, exactly one reply out, in order (binary protocol
//! §2, §7).
//!
//! States: Unbound (only PING and login are served) and Bound (a user, the
//! client's 128-bit id and its session number). Each frame is checked against
//! the header rules first; a frame that breaks them closes the connection,
//! since the SDK would otherwise wait 30 s for a reply that never comes.

mod login;
pub mod moving;

use std::net::SocketAddr;
use std::rc::Rc;

use protocol::header::{EvictionReason, HEADER_SIZE, Operation, RequestHeader};
use protocol::reply::{ReplyBuilder, eviction};
use protocol::{CommandCode, ErrorCode, Route, route};
use tracing::{Instrument, debug};

use crate::handlers::{self, SessionRef};
use crate::node::Shard;

/// What a session hands back to its transport (built by the handlers).
pub use crate::handlers::Reply;
/// How a client reached us (one enum for client records and metrics).
pub use crate::metrics::Transport;
/// The identity bound by a successful login.
pub use crate::node::clients::Bound;

pub struct Session {
    pub shard: Rc<Shard>,
    pub transport: Transport,
    pub peer: SocketAddr,
    /// Server-side connection number (client records show its low 32 bits).
    pub connection_id: u64,
    pub bound: Option<Bound>,
    /// Failed logins on this connection (see `login`).
    pub failed_logins: u32,
    /// When the last request arrived (read by the heartbeat verifier).
    pub last_request: Rc<std::cell::Cell<std::time::Instant>>,
    /// Where its partition requests went lately (`moving`).
    pub affinity: moving::Affinity,
    /// Moved to another shard: this one no longer ends it on drop.
    moved: bool,
}

impl Session {
    pub fn new(shard: Rc<Shard>, transport: Transport, peer: SocketAddr) -> Self {
        let connection_id = shard.ctx.next_client_id();
        shard.node.connection_opened(connection_id, transport, peer);
        shard.ctx.metrics.connection_opened(transport);
        Self::serving(shard, transport, peer, connection_id)
    }

    /// A session moved here from another shard (`moving`).
    pub fn resume(shard: Rc<Shard>, mut moved: moving::MovedSession) -> Self {
        shard.node.connection_arriving(&mut moved);
        let (transport, peer) = (moved.transport, moved.peer);
        let mut session = Self::serving(shard, transport, peer, moved.connection_id);
        session.bound = moved.bound;
        session.failed_logins = moved.failed_logins;
        session
    }

    /// A session about to serve its next request on this shard.
    fn serving(
        shard: Rc<Shard>,
        transport: Transport,
        peer: SocketAddr,
        connection_id: u64,
    ) -> Self {
        Self {
            shard,
            transport,
            peer,
            connection_id,
            bound: None,
            failed_logins: 0,
            last_request: Rc::new(std::cell::Cell::new(std::time::Instant::now())),
            affinity: moving::Affinity::default(),
            moved: false,
        }
    }

    /// The shard this session should move to after the request just
    /// handled, if any.
    pub fn move_target(&mut self) -> Option<usize> {
        let here = usize::from(self.shard.id);
        self.affinity
            .after_request(here, self.shard.ctx.shard_count)
    }

    /// Hands the session's state over for another shard; this shard forgets
    /// it (no end of session, no closed connection).
    pub fn into_moved(mut self) -> moving::MovedSession {
        let (attached, client_entry) = self
            .shard
            .node
            .connection_leaving(self.connection_id, self.bound);
        self.moved = true;
        moving::MovedSession {
            connection_id: self.connection_id,
            transport: self.transport,
            peer: self.peer,
            bound: self.bound,
            failed_logins: self.failed_logins,
            attached,
            client_entry,
        }
    }

    /// Handles one whole frame (header and body).
    pub async fn handle(&mut self, frame: Vec<u8>) -> Reply {
        let _busy = self.shard.request_guard();
        self.last_request.set(std::time::Instant::now());
        let header =
            match RequestHeader::decode(&frame).and_then(|h| h.validate(frame.len()).map(|()| h)) {
                Ok(header) => header,
                Err(e) => {
                    debug!(peer = %self.peer, "closing: invalid request header: {e}");
                    return Reply::close();
                }
            };
        let body = &frame[HEADER_SIZE..];
        match route(&header) {
            Route::Register => self.login(&header, body).await,
            Route::Command(CommandCode::LogoutUser) => self.logout(&header).await,
            Route::Command(code) => {
                self.count(code);
                let span = crate::telemetry::request_span(self.transport.label(), code.name());
                let reply = self
                    .command(&header, code, frame)
                    .instrument(span.clone())
                    .await;
                record_outcome(&span, &reply);
                reply
            }
            Route::UnknownCode { .. } => {
                Reply::frame(ReplyBuilder::for_request(&header).denial(ErrorCode::InvalidCommand))
            }
            Route::NotClientOperation { .. } => {
                Reply::frame(eviction(&header, EvictionReason::InvalidRequestOperation)).and_close()
            }
        }
    }

    fn count(&self, code: CommandCode) {
        if let Some(index) = CommandCode::ALL.iter().position(|c| *c == code) {
            self.shard.ctx.metrics.request(self.transport, index);
        }
    }

    async fn command(
        &mut self,
        header: &RequestHeader,
        code: CommandCode,
        frame: Vec<u8>,
    ) -> Reply {
        let body = &frame[HEADER_SIZE..];
        if code.is_legacy_login() {
            return Reply::frame(eviction(header, EvictionReason::MalformedLogin));
        }
        let Some(bound) = self.bound else {
            return self.unbound_command(header, code);
        };
        if header.request_checksum != 0 && !header.checksum_matches(body) {
            return Reply::frame(
                ReplyBuilder::for_request(header).denial(ErrorCode::InvalidFormat),
            );
        }
        let caller = SessionRef {
            shard: &self.shard,
            connection_id: self.connection_id,
            partition: &self.affinity.noted,
        };
        handlers::dispatch(caller, bound, header, code, frame).await
    }

    /// Binary protocol §7.5: what an unbound connection may do.
    fn unbound_command(&self, header: &RequestHeader, code: CommandCode) -> Reply {
        let builder = ReplyBuilder::for_request(header);
        if code == CommandCode::Ping {
            return Reply::frame(builder.success(&[]));
        }
        if code.operation() != Operation::NonReplicated {
            return Reply::frame(eviction(header, EvictionReason::NoSession));
        }
        Reply::frame(builder.denial(ErrorCode::Unauthenticated))
    }

    async fn logout(&mut self, header: &RequestHeader) -> Reply {
        let builder = ReplyBuilder::for_request(header);
        if let Some(bound) = self.bound.take() {
            self.shard.node.session_ended(self.connection_id, bound);
            return Reply::frame(builder.op(bound.session).success(&[]));
        }
        Reply::frame(builder.success(&[]))
    }
}

/// The reply's status on the request span: `ok`, the error code, or
/// `closed` when the connection is closed without a reply.
fn record_outcome(span: &tracing::Span, reply: &Reply) {
    if span.is_none() {
        return;
    }
    let status = reply
        .parts
        .first()
        .and_then(|first| protocol::header::ReplyHeader::decode(first).ok())
        .map(|header| header.status);
    match status {
        Some(0) => crate::telemetry::record_outcome(span, true, &"ok"),
        Some(code) => crate::telemetry::record_outcome(span, false, &format!("error {code}")),
        None => crate::telemetry::record_outcome(span, false, &"closed"),
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.moved {
            return;
        }
        let bound = self.bound.take();
        self.shard.node.connection_closed(self.connection_id, bound);
        self.shard.ctx.metrics.connection_closed(self.transport);
    }
}
