//! TCP: the listener on shard 0, round-robin hand-off of accepted sockets to
//! shards (a TLS connection's handshake runs on the shard it is handed to,
//! `tls_conn`), and the binary protocol's framing on a byte stream. The
//! frame loop and moves are `connection`'s.
//!
//! Frames are read whole (256-byte header, then `size - 256` body bytes) into
//! one buffer that the session decodes in place. A frame whose declared size
//! is below 256 or above the frame cap closes the connection: there is no
//! way to resynchronise a byte stream after a bad length.

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::rc::Rc;
use std::sync::Arc;

use compio::buf::{BufResult, IntoInner, IoBuf};
use compio::io::{AsyncRead, AsyncReadExt};
use compio::net::{TcpListener, TcpStream};
use rustls::ServerConfig;
use tracing::{debug, warn};

use protocol::header::{HEADER_SIZE, frame_size};

use crate::node::Shard;
use crate::node::shard_message::ShardMessage;
use crate::session::Transport;

use super::connection::{Connection, Start, serve_connection};
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
    duplicate_fd(stream.as_raw_fd())
}

/// Duplicates a socket descriptor into a stream of its own.
pub(super) fn duplicate_fd(socket: RawFd) -> std::io::Result<std::net::TcpStream> {
    // SAFETY: dup returns a new descriptor that we own exclusively.
    let fd = unsafe { libc::dup(socket) };
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
        serve_connection(&shard, connection, Start::New(peer, Transport::Tcp)).await;
    })
    .detach();
}

/// Reads one frame; `None` on a clean end of stream before a header. The
/// wait for a frame's first bytes is unbounded (idle clients are fine); once
/// they arrive the rest must follow within `frame_timeout`.
pub(super) async fn read_frame<S: AsyncRead>(
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
