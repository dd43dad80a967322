//! A client's stream connection, whatever carries its frames: TCP, TCP +
//! TLS, WebSocket or WebSocket + TLS. One loop serves its frames on a
//! shard and moves it, between two requests, to the shard its requests go
//! to (`session::moving`), with its session, its TLS session and its
//! framing.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use compio::buf::BufResult;
use compio::io::AsyncWriteExt;
use compio::net::TcpStream;
use rustls::ServerConnection;
use tracing::{debug, info};

use crate::node::Shard;
use crate::node::heartbeat::Liveness;
use crate::node::shard_message::{ShardMessage, WsLimits};
use crate::session::moving::MovedSession;
use crate::session::{self, Transport};

use super::tls_conn::TlsConn;
use super::websocket::conn::WsConn;

/// A client's connection and what frames its requests.
pub enum Connection {
    Plain(TcpStream),
    Tls(Box<TlsConn>),
    Ws(Box<WsConn<TcpStream>>),
    Wss(Box<WsConn<TlsConn>>),
}

/// The parts a connection is taken apart into to move.
pub struct Parts {
    pub stream: TcpStream,
    pub tls: Option<Box<ServerConnection>>,
    pub websocket: Option<WsLimits>,
}

impl Connection {
    /// Puts a connection together from its parts (after a move).
    pub fn assemble(parts: Parts) -> Connection {
        let Parts {
            stream,
            tls,
            websocket,
        } = parts;
        match (tls, websocket) {
            (None, None) => Connection::Plain(stream),
            (None, Some(limits)) => Connection::Ws(Box::new(WsConn::resume(stream, limits))),
            (Some(session), None) => Connection::Tls(Box::new(TlsConn::resume(stream, *session))),
            (Some(session), Some(limits)) => {
                let tls = TlsConn::resume(stream, *session);
                Connection::Wss(Box::new(WsConn::resume(tls, limits)))
            }
        }
    }

    fn fd(&self) -> RawFd {
        match self {
            Connection::Plain(stream) => stream.as_raw_fd(),
            Connection::Tls(tls) => tls.tcp().as_raw_fd(),
            Connection::Ws(ws) => ws.get_ref().as_raw_fd(),
            Connection::Wss(ws) => ws.get_ref().tcp().as_raw_fd(),
        }
    }

    /// What the heartbeat verifier watches: only plaintext TCP carries
    /// bare frames; the others are only shut down.
    fn liveness(&self, last_request: Rc<std::cell::Cell<std::time::Instant>>) -> Liveness {
        match self {
            Connection::Plain(_) => Liveness::plain(self.fd())(last_request),
            _ => Liveness::encrypted(self.fd())(last_request),
        }
    }

    /// Whether it holds nothing the client sent that was not yet read, so
    /// that its parts are all there is to it.
    fn is_idle(&mut self) -> bool {
        match self {
            Connection::Plain(_) => true,
            Connection::Tls(tls) => tls.is_idle(),
            Connection::Ws(ws) => ws.is_idle(),
            Connection::Wss(ws) => ws.is_idle() && ws.get_mut().is_idle(),
        }
    }

    /// Takes an idle connection apart.
    fn into_parts(self) -> Parts {
        let (stream, tls, websocket) = match self {
            Connection::Plain(stream) => (stream, None, None),
            Connection::Tls(tls) => {
                let (stream, session) = tls.into_parts();
                (stream, Some(session), None)
            }
            Connection::Ws(ws) => {
                let limits = ws.limits();
                (ws.into_inner(), None, Some(limits))
            }
            Connection::Wss(ws) => {
                let limits = ws.limits();
                let (stream, session) = ws.into_inner().into_parts();
                (stream, Some(session), Some(limits))
            }
        };
        Parts {
            stream,
            tls: tls.map(Box::new),
            websocket,
        }
    }
}

/// How a connection's frames are read and its replies written.
pub(super) trait Frames {
    /// The next whole frame; `None` when the client ends the connection
    /// between frames.
    async fn next_frame(
        &mut self,
        frame_max: usize,
        frame_timeout: Duration,
    ) -> io::Result<Option<Vec<u8>>>;

    /// One reply, in order.
    async fn send_reply(&mut self, parts: Vec<Bytes>) -> io::Result<()>;

    /// Ends the connection from this side (a WebSocket says goodbye).
    async fn end(&mut self) {}
}

/// The binary protocol's frames on a byte stream (plaintext or TLS).
macro_rules! byte_stream_frames {
    ($($stream:ty),*) => {$(
        impl Frames for $stream {
            async fn next_frame(
                &mut self,
                frame_max: usize,
                frame_timeout: Duration,
            ) -> io::Result<Option<Vec<u8>>> {
                super::tcp::read_frame(self, frame_max, frame_timeout).await
            }

            async fn send_reply(&mut self, parts: Vec<Bytes>) -> io::Result<()> {
                write_reply(self, parts).await
            }
        }
    )*};
}

byte_stream_frames!(TcpStream, TlsConn);

/// Writes `parts` with one vectored write and flushes.
pub(super) async fn write_reply<S: compio::io::AsyncWrite>(
    stream: &mut S,
    parts: Vec<Bytes>,
) -> io::Result<()> {
    let BufResult(result, _) = stream.write_vectored_all(parts).await;
    result?;
    stream.flush().await
}

/// How a connection's session begins on this shard.
pub enum Start {
    New(SocketAddr, Transport),
    Moved(MovedSession),
}

/// Serves a connection's frames on this shard, moving it to another when
/// its requests go there (`session::moving`).
pub async fn serve_connection(shard: &Rc<Shard>, connection: Connection, start: Start) {
    let mut arrived = matches!(start, Start::Moved(_));
    let mut session = match start {
        Start::New(peer, transport) => {
            debug!(%peer, shard = shard.id, ?transport, "connection opened");
            session::Session::new(shard.clone(), transport, peer)
        }
        Start::Moved(moved) => session::Session::resume(shard.clone(), moved),
    };
    let mut connection = connection;
    loop {
        let (connection_id, peer) = (session.connection_id, session.peer);
        shard.node.liveness.track(
            connection_id,
            connection.liveness(session.last_request.clone()),
        );
        if std::mem::take(&mut arrived) && !shard.node.session_alive(session.bound) {
            shard.node.liveness.untrack(connection_id);
            return info!(%peer, "closing a moved connection whose session ended meanwhile");
        }
        let ended = match &mut connection {
            Connection::Plain(stream) => serve_frames(shard, stream, session).await,
            Connection::Tls(stream) => serve_frames(shard, &mut **stream, session).await,
            Connection::Ws(ws) => serve_frames(shard, &mut **ws, session).await,
            Connection::Wss(ws) => serve_frames(shard, &mut **ws, session).await,
        };
        shard.node.liveness.untrack(connection_id);
        match ended {
            Ok(Ended::Closed) => return debug!(%peer, "connection closed"),
            Err(e) => return info!(%peer, "connection closed: {e}"),
            Ok(Ended::Moving {
                target,
                session: moving,
            }) => match move_connection(shard, connection, target, moving) {
                None => return debug!(%peer, target, "connection moved"),
                // The other shard cannot take it now: serve on.
                Some((staying, kept)) => (connection, session) = (staying, kept),
            },
        }
    }
}

/// Hands a connection, between two requests, to shard `target` with its
/// session's state; gives both back when that shard cannot take them, or
/// when the connection holds bytes not yet read.
fn move_connection(
    shard: &Rc<Shard>,
    mut connection: Connection,
    target: usize,
    session: session::Session,
) -> Option<(Connection, session::Session)> {
    if !connection.is_idle() {
        return Some((connection, session));
    }
    let copy = match super::tcp::duplicate_fd(connection.fd()) {
        Ok(copy) => copy,
        Err(e) => {
            debug!(peer = %session.peer, "cannot duplicate a connection to move it: {e}");
            return Some((connection, session));
        }
    };
    let Parts {
        stream,
        tls,
        websocket,
    } = connection.into_parts();
    let moved = session.into_moved();
    let message = ShardMessage::ResumeConnection {
        stream: copy,
        moved,
        tls,
        websocket,
    };
    match shard.ctx.try_send(target, message) {
        Ok(()) => {
            shard.ctx.metrics.connection_moved();
            None
        }
        Err(ShardMessage::ResumeConnection {
            moved,
            tls,
            websocket,
            ..
        }) => Some((
            Connection::assemble(Parts {
                stream,
                tls,
                websocket,
            }),
            session::Session::resume(shard.clone(), moved),
        )),
        Err(_) => unreachable!("try_send returns the message it was given"),
    }
}

/// How a connection's frame loop ended.
enum Ended {
    Closed,
    /// Its requests go to shard `target`: move the connection there.
    Moving {
        target: usize,
        session: session::Session,
    },
}

/// Serves frames until the connection closes or until its session should
/// move to another shard (`session::moving`).
async fn serve_frames<F: Frames>(
    shard: &Rc<Shard>,
    link: &mut F,
    mut session: session::Session,
) -> io::Result<Ended> {
    let frame_max = shard.ctx.frame_max_bytes;
    let frame_timeout = shard.ctx.limits.frame_timeout;
    loop {
        let Some(frame) = link.next_frame(frame_max, frame_timeout).await? else {
            return Ok(Ended::Closed);
        };
        let reply = session.handle(frame).await;
        let stop = reply.close_after;
        if !reply.parts.is_empty() {
            link.send_reply(reply.parts).await?;
        }
        if stop || shard.ctx.is_stopping() {
            link.end().await;
            return Ok(Ended::Closed);
        }
        if let Some(target) = session.move_target() {
            return Ok(Ended::Moving { target, session });
        }
    }
}

/// Takes over a connection another shard moved here (`session::moving`).
pub fn resume(
    shard: &Rc<Shard>,
    stream: std::net::TcpStream,
    moved: MovedSession,
    tls: Option<Box<ServerConnection>>,
    websocket: Option<WsLimits>,
) {
    match TcpStream::from_std(stream) {
        Ok(stream) => {
            let connection = Connection::assemble(Parts {
                stream,
                tls,
                websocket,
            });
            let shard = shard.clone();
            compio::runtime::spawn(async move {
                let _open = shard.connection_guard();
                let _counted = shard.ctx.open_connection();
                serve_connection(&shard, connection, Start::Moved(moved)).await;
            })
            .detach();
        }
        Err(e) => {
            tracing::warn!(peer = %moved.peer, "cannot take over a moved connection: {e}");
            // Ends the session here as a closed connection would.
            drop(session::Session::resume(shard.clone(), moved));
        }
    }
}
