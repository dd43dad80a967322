//! TCP: the listener on shard 0, round-robin hand-off of accepted sockets to
//! shards (a TLS connection's handshake runs on the shard it is handed to,
//! `tls_conn`), the per-connection frame loop, and the move of a connection,
//! TLS or not, to the shard its requests go to (`session::moving`).
//!
//! Frames are read whole (256-byte header, then `size - 256` body bytes) into
//! one buffer that the session decodes in place. A frame whose declared size
//! is below 256 or above the frame cap closes the connection: there is no
//! way to resynchronise a byte stream after a bad length.

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd};
use std::rc::Rc;
use std::sync::Arc;

use compio::buf::{BufResult, IntoInner, IoBuf};
use compio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use compio::net::{TcpListener, TcpStream};
use rustls::{ServerConfig, ServerConnection};
use tracing::{debug, info, warn};

use protocol::header::{HEADER_SIZE, frame_size};

use crate::node::Shard;
use crate::node::heartbeat::Liveness;
use crate::node::shard_message::ShardMessage;
use crate::session::moving::MovedSession;
use crate::session::{self, Transport};

use super::tls_conn::TlsConn;

/// Spawns the accept loop for a bound listener on this shard (shard 0);
/// with `tls`, every connection is terminated on the shard that serves it.
pub fn serve(shard: &Rc<Shard>, listener: std::net::TcpListener, tls: Option<Arc<ServerConfig>>) {
    match TcpListener::from_std(listener) {
        Ok(listener) => compio::runtime::spawn(accept_loop(listener, shard.clone(), tls)).detach(),
        Err(e) => tracing::error!("cannot serve the TCP listener: {e}"),
    }
}

async fn accept_loop(listener: TcpListener, shard: Rc<Shard>, tls: Option<Arc<ServerConfig>>) {
    while let Some((stream, peer)) = shard.next_connection(&listener, "TCP").await {
        let handed = tls.clone();
        let adopt = |stream| ShardMessage::AdoptTcp {
            stream,
            peer,
            tls: handed,
        };
        if let Some(stream) = super::hand_off(&shard, stream, peer, adopt) {
            start(&shard, stream, peer, tls.clone());
        }
    }
}

/// Duplicates the socket's descriptor so another shard's runtime can own it.
pub(super) fn duplicate(stream: &TcpStream) -> std::io::Result<std::net::TcpStream> {
    // SAFETY: dup returns a new descriptor that we own exclusively.
    let fd = unsafe { libc::dup(stream.as_raw_fd()) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(unsafe { std::net::TcpStream::from_raw_fd(fd) })
}

/// Takes over a connection accepted on shard 0.
pub fn adopt(
    shard: &Rc<Shard>,
    stream: std::net::TcpStream,
    peer: SocketAddr,
    tls: Option<Arc<ServerConfig>>,
) {
    match TcpStream::from_std(stream) {
        Ok(stream) => start(shard, stream, peer, tls),
        Err(e) => warn!(%peer, "cannot adopt connection: {e}"),
    }
}

/// Takes over a connection another shard moved here (`session::moving`).
pub fn resume(
    shard: &Rc<Shard>,
    stream: std::net::TcpStream,
    moved: MovedSession,
    tls: Option<Box<ServerConnection>>,
) {
    match TcpStream::from_std(stream) {
        Ok(stream) => {
            let connection = Connection::assemble(stream, tls);
            let shard = shard.clone();
            compio::runtime::spawn(async move {
                let _open = shard.connection_guard();
                let _counted = shard.ctx.open_connection();
                serve_connection(&shard, connection, Start::Moved(moved)).await;
            })
            .detach();
        }
        Err(e) => {
            warn!(peer = %moved.peer, "cannot take over a moved connection: {e}");
            // Ends the session here as a closed connection would.
            drop(session::Session::resume(shard.clone(), moved));
        }
    }
}

/// A client's TCP connection, plaintext or TLS.
enum Connection {
    Plain(TcpStream),
    Tls(Box<TlsConn>),
}

impl Connection {
    fn assemble(stream: TcpStream, tls: Option<Box<ServerConnection>>) -> Connection {
        match tls {
            None => Connection::Plain(stream),
            Some(session) => Connection::Tls(Box::new(TlsConn::resume(stream, *session))),
        }
    }

    /// What the heartbeat verifier watches: a TLS connection's frames are
    /// wrapped, so it is only shut down.
    fn liveness(&self, last_request: Rc<std::cell::Cell<std::time::Instant>>) -> Liveness {
        match self {
            Connection::Plain(stream) => Liveness::plain(stream.as_raw_fd())(last_request),
            Connection::Tls(tls) => Liveness::encrypted(tls.tcp().as_raw_fd())(last_request),
        }
    }
}

/// How a connection's session begins on this shard.
enum Start {
    New(SocketAddr),
    Moved(MovedSession),
}

/// Serves a new connection on this shard: plaintext at once, TLS once its
/// handshake completes (within `message_bus.handshake_grace`).
fn start(shard: &Rc<Shard>, stream: TcpStream, peer: SocketAddr, tls: Option<Arc<ServerConfig>>) {
    let shard = shard.clone();
    compio::runtime::spawn(async move {
        let _open = shard.connection_guard();
        let _counted = shard.ctx.open_connection();
        let connection = match tls {
            None => Connection::Plain(stream),
            Some(config) => {
                // A reply leaves as TLS records; with Nagle's algorithm the
                // last, short one would wait for the client's delayed ACK
                // (40 ms on Linux). Plaintext replies are one write.
                let _ = stream.set_nodelay(true);
                let grace = shard.ctx.limits.handshake_grace;
                match compio::time::timeout(grace, TlsConn::accept(stream, config)).await {
                    Ok(Ok(tls)) => Connection::Tls(Box::new(tls)),
                    Ok(Err(e)) => return debug!(%peer, "TLS handshake failed: {e}"),
                    Err(_) => return debug!(%peer, "TLS handshake timed out"),
                }
            }
        };
        serve_connection(&shard, connection, Start::New(peer)).await;
    })
    .detach();
}

/// Serves a connection's frames on this shard, moving it to another when
/// its requests go there (`session::moving`).
async fn serve_connection(shard: &Rc<Shard>, connection: Connection, start: Start) {
    let mut arrived = matches!(start, Start::Moved(_));
    let mut session = match start {
        Start::New(peer) => {
            debug!(%peer, shard = shard.id, "TCP connection opened");
            session::Session::new(shard.clone(), Transport::Tcp, peer)
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
            Connection::Tls(stream) => serve_frames(shard, stream, session).await,
        };
        shard.node.liveness.untrack(connection_id);
        match ended {
            Ok(Ended::Closed) => return debug!(%peer, "TCP connection closed"),
            Err(e) => return info!(%peer, "TCP connection closed: {e}"),
            Ok(Ended::Moving {
                target,
                session: moving,
            }) => match move_connection(shard, connection, target, moving) {
                None => return debug!(%peer, target, "TCP connection moved"),
                // The other shard cannot take it now: serve on.
                Some((staying, kept)) => (connection, session) = (staying, kept),
            },
        }
    }
}

/// Hands a connection, between two requests, to shard `target` with its
/// session's state (and TLS session); gives both back when that shard
/// cannot take them, or when a TLS connection holds bytes not yet read.
fn move_connection(
    shard: &Rc<Shard>,
    connection: Connection,
    target: usize,
    session: session::Session,
) -> Option<(Connection, session::Session)> {
    let (stream, tls) = match connection {
        Connection::Plain(stream) => (stream, None),
        Connection::Tls(mut tls) => {
            if !tls.is_idle() {
                return Some((Connection::Tls(tls), session));
            }
            let (stream, tls) = (*tls).into_parts();
            (stream, Some(Box::new(tls)))
        }
    };
    let copy = match duplicate(&stream) {
        Ok(copy) => copy,
        Err(e) => {
            debug!(peer = %session.peer, "cannot duplicate a connection to move it: {e}");
            return Some((Connection::assemble(stream, tls), session));
        }
    };
    let moved = session.into_moved();
    match shard.ctx.try_send(
        target,
        ShardMessage::ResumeTcp {
            stream: copy,
            moved,
            tls,
        },
    ) {
        Ok(()) => {
            shard.ctx.metrics.connection_moved();
            None
        }
        Err(ShardMessage::ResumeTcp { moved, tls, .. }) => Some((
            Connection::assemble(stream, tls),
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
async fn serve_frames<S: AsyncRead + AsyncWrite>(
    shard: &Rc<Shard>,
    stream: &mut S,
    mut session: session::Session,
) -> std::io::Result<Ended> {
    let frame_max = shard.ctx.frame_max_bytes;
    let frame_timeout = shard.ctx.limits.frame_timeout;
    loop {
        let Some(frame) = read_frame(stream, frame_max, frame_timeout).await? else {
            return Ok(Ended::Closed);
        };
        let reply = session.handle(frame).await;
        let stop = reply.close_after;
        if !reply.parts.is_empty() {
            let BufResult(result, _) = stream.write_vectored_all(reply.parts).await;
            result?;
            stream.flush().await?;
        }
        if stop || shard.ctx.is_stopping() {
            return Ok(Ended::Closed);
        }
        if let Some(target) = session.move_target() {
            return Ok(Ended::Moving { target, session });
        }
    }
}

/// Reads one frame; `None` on a clean end of stream before a header. The
/// wait for a frame's first bytes is unbounded (idle clients are fine); once
/// they arrive the rest must follow within `frame_timeout`.
async fn read_frame<S: AsyncRead>(
    stream: &mut S,
    frame_max: usize,
    frame_timeout: std::time::Duration,
) -> std::io::Result<Option<Vec<u8>>> {
    let header = Vec::with_capacity(HEADER_SIZE);
    let BufResult(result, header) = stream.read(header.slice(..HEADER_SIZE)).await;
    let frame = header.into_inner();
    if result? == 0 {
        return Ok(None);
    }
    match compio::time::timeout(frame_timeout, read_rest(stream, frame, frame_max)).await {
        Ok(result) => result.map(Some),
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("a frame did not complete within {frame_timeout:?}"),
        )),
    }
}

/// Completes a frame whose first bytes are in `frame`.
async fn read_rest<S: AsyncRead>(
    stream: &mut S,
    mut frame: Vec<u8>,
    frame_max: usize,
) -> std::io::Result<Vec<u8>> {
    if frame.len() < HEADER_SIZE {
        let have = frame.len();
        let BufResult(result, rest) = stream.read_exact(frame.slice(have..HEADER_SIZE)).await;
        frame = rest.into_inner();
        result?;
    }
    let size = frame_size(&frame).map_or(0, |s| s as usize);
    if size < HEADER_SIZE || size > frame_max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("frame size {size} outside {HEADER_SIZE}..={frame_max}"),
        ));
    }
    if size > frame.len() {
        frame.reserve_exact(size - frame.len());
        let BufResult(result, body) = stream.read_exact(frame.slice(HEADER_SIZE..size)).await;
        frame = body.into_inner();
        result?;
    }
    Ok(frame)
}
