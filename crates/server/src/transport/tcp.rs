//! TCP: the listener on shard 0, round-robin hand-off of accepted sockets to
//! shards (a TLS connection's handshake runs on the shard it is handed to),
//! and the per-connection frame loop (shared with every byte-stream
//! transport).
//!
//! Frames are read whole (256-byte header, then `size - 256` body bytes) into
//! one buffer that the session decodes in place. A frame whose declared size
//! is below 256 or above the frame cap closes the connection: there is no
//! way to resynchronise a byte stream after a bad length.

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd};
use std::rc::Rc;

use compio::buf::{BufResult, IntoInner, IoBuf};
use compio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use compio::net::{TcpListener, TcpStream};
use compio::tls::TlsAcceptor;
use tracing::{debug, info, warn};

use protocol::header::{HEADER_SIZE, frame_size};

use crate::node::Shard;
use crate::node::heartbeat::Liveness;
use crate::node::shard_message::ShardMessage;
use crate::session::moving::MovedSession;
use crate::session::{self, Transport};

/// Spawns the accept loop for a bound listener on this shard (shard 0);
/// with `tls`, every connection is terminated on the shard that serves it.
pub fn serve(shard: &Rc<Shard>, listener: std::net::TcpListener, tls: Option<TlsAcceptor>) {
    match TcpListener::from_std(listener) {
        Ok(listener) => compio::runtime::spawn(accept_loop(listener, shard.clone(), tls)).detach(),
        Err(e) => tracing::error!("cannot serve the TCP listener: {e}"),
    }
}

async fn accept_loop(listener: TcpListener, shard: Rc<Shard>, tls: Option<TlsAcceptor>) {
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

/// Serves a new connection on this shard: plaintext at once, TLS once its
/// handshake completes.
fn start(shard: &Rc<Shard>, stream: TcpStream, peer: SocketAddr, tls: Option<TlsAcceptor>) {
    match tls {
        Some(tls) => spawn_tls(shard, stream, peer, tls),
        None => spawn_connection(shard, stream, Start::New(peer)),
    }
}

fn spawn_tls(shard: &Rc<Shard>, stream: TcpStream, peer: SocketAddr, tls: TlsAcceptor) {
    let shard = shard.clone();
    compio::runtime::spawn(async move {
        let _open = shard.connection_guard();
        let _counted = shard.ctx.open_connection();
        // A reply leaves as TLS records written one after another; with
        // Nagle's algorithm the last, short one would wait for the client's
        // delayed ACK (40 ms on Linux). Plaintext replies are one write.
        let _ = stream.set_nodelay(true);
        let fd = stream.as_raw_fd();
        let handshake =
            compio::time::timeout(shard.ctx.limits.handshake_grace, tls.accept(stream)).await;
        let mut stream = match handshake {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => return debug!(%peer, "TLS handshake failed: {e}"),
            Err(_) => return debug!(%peer, "TLS handshake timed out"),
        };
        let liveness = Liveness::encrypted(fd);
        match serve_stream(&shard, &mut stream, peer, Transport::Tcp, liveness).await {
            Ok(()) => debug!(%peer, "TLS connection closed"),
            Err(e) => info!(%peer, "TLS connection closed: {e}"),
        }
    })
    .detach();
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
    tls: Option<TlsAcceptor>,
) {
    match TcpStream::from_std(stream) {
        Ok(stream) => start(shard, stream, peer, tls),
        Err(e) => warn!(%peer, "cannot adopt connection: {e}"),
    }
}

/// Takes over a connection another shard moved here (`session::moving`).
pub fn resume(shard: &Rc<Shard>, stream: std::net::TcpStream, moved: MovedSession) {
    match TcpStream::from_std(stream) {
        Ok(stream) => spawn_connection(shard, stream, Start::Moved(moved)),
        Err(e) => {
            warn!(peer = %moved.peer, "cannot take over a moved connection: {e}");
            // Ends the session here as a closed connection would.
            drop(session::Session::resume(shard.clone(), moved));
        }
    }
}

/// How a plaintext connection's session begins on this shard.
enum Start {
    New(SocketAddr),
    Moved(MovedSession),
}

fn spawn_connection(shard: &Rc<Shard>, stream: TcpStream, start: Start) {
    let shard = shard.clone();
    compio::runtime::spawn(async move {
        let _open = shard.connection_guard();
        let _counted = shard.ctx.open_connection();
        let mut arrived = matches!(start, Start::Moved(_));
        let mut session = match start {
            Start::New(peer) => {
                debug!(%peer, shard = shard.id, "TCP connection opened");
                session::Session::new(shard.clone(), Transport::Tcp, peer)
            }
            Start::Moved(moved) => session::Session::resume(shard.clone(), moved),
        };
        let mut stream = stream;
        loop {
            let (connection_id, peer) = (session.connection_id, session.peer);
            let liveness = Liveness::plain(stream.as_raw_fd());
            shard
                .node
                .liveness
                .track(connection_id, liveness(session.last_request.clone()));
            if std::mem::take(&mut arrived) && !shard.node.session_alive(session.bound) {
                shard.node.liveness.untrack(connection_id);
                return info!(%peer, "closing a moved connection whose session ended meanwhile");
            }
            let ended = serve_frames(&shard, &mut stream, session, true, usize::MAX).await;
            shard.node.liveness.untrack(connection_id);
            match ended {
                Ok(Ended::Closed) => return debug!(%peer, "TCP connection closed"),
                Err(e) => return info!(%peer, "TCP connection closed: {e}"),
                Ok(Ended::Moving {
                    target,
                    session: moving,
                }) => match move_connection(&shard, &stream, target, moving) {
                    None => return debug!(%peer, target, "TCP connection moved"),
                    // The other shard cannot take it now: serve on.
                    Some(staying) => session = staying,
                },
            }
        }
    })
    .detach();
}

/// Hands a connection, between two requests, to shard `target` with its
/// session's state; gives the session back when that shard cannot take it.
fn move_connection(
    shard: &Rc<Shard>,
    stream: &TcpStream,
    target: usize,
    session: session::Session,
) -> Option<session::Session> {
    let copy = match duplicate(stream) {
        Ok(copy) => copy,
        Err(e) => {
            debug!(peer = %session.peer, "cannot duplicate a connection to move it: {e}");
            return Some(session);
        }
    };
    let moved = session.into_moved();
    match shard.ctx.try_send(
        target,
        ShardMessage::ResumeTcp {
            stream: copy,
            moved,
        },
    ) {
        Ok(()) => {
            shard.ctx.metrics.connection_moved();
            None
        }
        Err(ShardMessage::ResumeTcp { moved, .. }) => {
            Some(session::Session::resume(shard.clone(), moved))
        }
        Err(_) => unreachable!("try_send returns the message it was given"),
    }
}

/// Serves one connection's session over a byte stream of frames.
pub async fn serve_stream<S: AsyncRead + AsyncWrite>(
    shard: &Rc<Shard>,
    stream: &mut S,
    peer: SocketAddr,
    transport: Transport,
    liveness: impl FnOnce(Rc<std::cell::Cell<std::time::Instant>>) -> Liveness,
) -> std::io::Result<()> {
    let session = session::Session::new(shard.clone(), transport, peer);
    let connection_id = session.connection_id;
    shard
        .node
        .liveness
        .track(connection_id, liveness(session.last_request.clone()));
    let result = serve_frames(shard, stream, session, false, WRAPPED_READ_CHUNK).await;
    shard.node.liveness.untrack(connection_id);
    result.map(|_| ())
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

/// The most a read from a wrapped (TLS) stream asks for. Such a stream
/// zero-fills the uninitialised part of the buffer it is given before every
/// read and then returns one record (at most 16 KiB), so asking for a whole
/// 1 MB body at once zero-filled about 32 MB per frame. Plaintext reads go
/// to the kernel as one read of the whole body.
const WRAPPED_READ_CHUNK: usize = 16 * 1024;

/// Serves frames until the connection closes or, with `may_move`, until
/// its session should move to another shard (`session::moving`). Body
/// reads ask for at most `read_chunk` bytes at a time.
async fn serve_frames<S: AsyncRead + AsyncWrite>(
    shard: &Rc<Shard>,
    stream: &mut S,
    mut session: session::Session,
    may_move: bool,
    read_chunk: usize,
) -> std::io::Result<Ended> {
    let frame_max = shard.ctx.frame_max_bytes;
    let frame_timeout = shard.ctx.limits.frame_timeout;
    loop {
        let Some(frame) = read_frame(stream, frame_max, frame_timeout, read_chunk).await? else {
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
        if may_move && let Some(target) = session.move_target() {
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
    read_chunk: usize,
) -> std::io::Result<Option<Vec<u8>>> {
    let header = Vec::with_capacity(HEADER_SIZE);
    let BufResult(result, header) = stream.read(header.slice(..HEADER_SIZE)).await;
    let frame = header.into_inner();
    if result? == 0 {
        return Ok(None);
    }
    let rest = read_rest(stream, frame, frame_max, read_chunk);
    match compio::time::timeout(frame_timeout, rest).await {
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
    read_chunk: usize,
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
    frame.reserve_exact(size - frame.len());
    while frame.len() < size {
        let end = size.min(frame.len().saturating_add(read_chunk));
        let start = frame.len();
        let BufResult(result, body) = stream.read(frame.slice(start..end)).await;
        frame = body.into_inner();
        if result? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
    }
    debug_assert_eq!(frame.len(), size);
    Ok(frame)
}
