//! WebSocket (binary protocol §3.4): one Binary message carries exactly one
//! frame each way. Connections are accepted on shard 0 and handed to shards
//! round-robin like TCP; a `wss` connection's TLS handshake runs on the
//! shard it is handed to.
//!
//! A Binary message whose length differs from its frame's `size`, or any
//! Text message, closes the connection with a close frame saying why.
//!
//! `tcp.frame_timeout` applies here too: the WebSocket layer hides message
//! boundaries, so a watchdog reads the socket's received-byte count
//! (`TCP_INFO`) while a read is pending. Once bytes arrive and no message
//! completes within the timeout, the connection is dropped; a connection
//! that sends nothing stays open, as on TCP.

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::pin::pin;
use std::rc::Rc;
use std::task::Poll;
use std::time::{Duration, Instant};

use compio::io::util::Splittable;
use compio::io::{AsyncRead, AsyncWrite};
use compio::net::{TcpListener, TcpStream};
use compio::tls::TlsAcceptor;
use compio::ws::tungstenite::Message;
use compio::ws::tungstenite::protocol::WebSocketConfig;
use compio::ws::tungstenite::protocol::frame::CloseFrame;
use compio::ws::tungstenite::protocol::frame::coding::CloseCode;
use compio::ws::{IntoMaybeTlsStream, WebSocketStream};
use protocol::header::{HEADER_SIZE, frame_size};
use tracing::{debug, info, warn};

use crate::node::Shard;
use crate::node::heartbeat::Liveness;
use crate::node::shard_message::{ShardMessage, WsLimits};
use crate::session::{self, Transport};

/// The tungstenite configuration for the `[websocket]` limits.
fn websocket_config(limits: &WsLimits) -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(limits.read_buffer_size)
        .write_buffer_size(limits.write_buffer_size)
        .max_write_buffer_size(limits.max_write_buffer_size)
        .max_message_size(Some(limits.max_message_size))
        .max_frame_size(Some(limits.max_frame_size))
        .accept_unmasked_frames(limits.accept_unmasked_frames)
}

/// Spawns the accept loop on shard 0.
pub fn serve(
    shard: &Rc<Shard>,
    listener: std::net::TcpListener,
    limits: WsLimits,
    tls: Option<TlsAcceptor>,
) {
    let listener = match TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(e) => return tracing::error!("cannot serve the WebSocket listener: {e}"),
    };
    compio::runtime::spawn(accept_loop(listener, shard.clone(), limits, tls)).detach();
}

async fn accept_loop(
    listener: TcpListener,
    shard: Rc<Shard>,
    limits: WsLimits,
    tls: Option<TlsAcceptor>,
) {
    while let Some((stream, peer)) = shard.next_connection(&listener, "WebSocket").await {
        let handed = tls.clone();
        let adopt = |stream| ShardMessage::AdoptWebSocket {
            stream,
            peer,
            limits,
            tls: handed,
        };
        if let Some(stream) = super::hand_off(&shard, stream, peer, adopt) {
            start(&shard, stream, peer, limits, tls.clone());
        }
    }
}

/// Takes over a WebSocket connection accepted on shard 0.
pub fn adopt(
    shard: &Rc<Shard>,
    stream: std::net::TcpStream,
    peer: SocketAddr,
    limits: WsLimits,
    tls: Option<TlsAcceptor>,
) {
    match TcpStream::from_std(stream) {
        Ok(stream) => start(shard, stream, peer, limits, tls),
        Err(e) => warn!(%peer, "cannot adopt a WebSocket connection: {e}"),
    }
}

fn start(
    shard: &Rc<Shard>,
    stream: TcpStream,
    peer: SocketAddr,
    limits: WsLimits,
    tls: Option<TlsAcceptor>,
) {
    match tls {
        Some(tls) => spawn_wss(shard, stream, peer, limits, tls),
        None => spawn_ws(shard, stream, peer, limits),
    }
}

fn spawn_ws(shard: &Rc<Shard>, stream: TcpStream, peer: SocketAddr, limits: WsLimits) {
    let shard = shard.clone();
    compio::runtime::spawn(async move {
        let _open = shard.connection_guard();
        let _counted = shard.ctx.open_connection();
        let fd = stream.as_raw_fd();
        upgrade_and_serve(&shard, stream, fd, peer, limits).await;
    })
    .detach();
}

fn spawn_wss(
    shard: &Rc<Shard>,
    stream: TcpStream,
    peer: SocketAddr,
    limits: WsLimits,
    tls: TlsAcceptor,
) {
    let shard = shard.clone();
    compio::runtime::spawn(async move {
        let _open = shard.connection_guard();
        let _counted = shard.ctx.open_connection();
        // As on TCP + TLS: a message leaves as TLS records written one after
        // another, and Nagle's algorithm would hold the last, short one for
        // the client's delayed ACK.
        let _ = stream.set_nodelay(true);
        let fd = stream.as_raw_fd();
        match compio::time::timeout(shard.ctx.limits.handshake_grace, tls.accept(stream)).await {
            Ok(Ok(stream)) => upgrade_and_serve(&shard, stream, fd, peer, limits).await,
            Ok(Err(e)) => debug!(%peer, "WSS TLS handshake failed: {e}"),
            Err(_) => debug!(%peer, "WSS TLS handshake timed out"),
        }
    })
    .detach();
}

async fn upgrade_and_serve<T>(
    shard: &Rc<Shard>,
    stream: T,
    fd: RawFd,
    peer: SocketAddr,
    limits: WsLimits,
) where
    T: IntoMaybeTlsStream<TcpStream>,
{
    let config = compio::ws::Config::from(websocket_config(&limits));
    let upgrade = compio::ws::accept_async_with_config(stream, config);
    let mut ws = match compio::time::timeout(shard.ctx.limits.handshake_grace, upgrade).await {
        Ok(Ok(ws)) => ws,
        Ok(Err(e)) => return debug!(%peer, "WebSocket upgrade refused: {e}"),
        Err(_) => return debug!(%peer, "WebSocket upgrade timed out"),
    };
    let session = session::Session::new(shard.clone(), Transport::WebSocket, peer);
    let connection_id = session.connection_id;
    shard.node.liveness.track(
        connection_id,
        Liveness::encrypted(fd)(session.last_request.clone()),
    );
    match serve_messages(shard, &mut ws, session, limits, fd).await {
        Ok(()) => debug!(%peer, "WebSocket connection closed"),
        Err(e) => info!(%peer, "WebSocket connection closed: {e}"),
    }
    shard.node.liveness.untrack(connection_id);
}

async fn serve_messages<S>(
    shard: &Rc<Shard>,
    ws: &mut WebSocketStream<S>,
    mut session: session::Session,
    limits: WsLimits,
    fd: RawFd,
) -> Result<(), compio::ws::tungstenite::Error>
where
    S: Splittable + 'static,
    S::ReadHalf: AsyncRead + Unpin,
    S::WriteHalf: AsyncWrite + Unpin,
{
    let frame_max = shard.ctx.frame_max_bytes.min(limits.max_message_size);
    let frame_timeout = shard.ctx.limits.frame_timeout;
    loop {
        let Some(read) = read_within(ws, fd, frame_timeout).await else {
            info!(
                "WebSocket connection closed: a message did not complete within {frame_timeout:?}"
            );
            return Ok(());
        };
        let message = match read {
            Ok(message) => message,
            Err(
                compio::ws::tungstenite::Error::ConnectionClosed
                | compio::ws::tungstenite::Error::AlreadyClosed,
            ) => return Ok(()),
            Err(e) => return Err(e),
        };
        let frame = match message {
            Message::Binary(bytes) => bytes,
            Message::Text(_) => {
                return refuse(ws, CloseCode::Unsupported, "text messages carry no frames").await;
            }
            Message::Close(_) => return Ok(()),
            Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => continue,
        };
        let size = frame_size(&frame).map_or(0, |s| s as usize);
        if frame.len() < HEADER_SIZE || size != frame.len() || size > frame_max {
            return refuse(
                ws,
                CloseCode::Policy,
                "a message must hold exactly one frame of its declared size",
            )
            .await;
        }
        let reply = session.handle(frame.to_vec()).await;
        let stop = reply.close_after;
        let out: Vec<u8> = reply.to_vec();
        if !out.is_empty() {
            ws.send(Message::Binary(out.into())).await?;
        }
        if stop || shard.ctx.is_stopping() {
            let _ = ws.close(None).await;
            return Ok(());
        }
    }
}

/// The next message, or `None` once bytes of it have been arriving for
/// `timeout` without completing it.
async fn read_within<S>(
    ws: &mut WebSocketStream<S>,
    fd: RawFd,
    timeout: Duration,
) -> Option<Result<Message, compio::ws::tungstenite::Error>>
where
    S: Splittable + 'static,
    S::ReadHalf: AsyncRead + Unpin,
    S::WriteHalf: AsyncWrite + Unpin,
{
    let mut read = pin!(ws.read());
    let mut watchdog = pin!(stalled(fd, timeout));
    std::future::poll_fn(|cx| {
        if let Poll::Ready(result) = read.as_mut().poll(cx) {
            return Poll::Ready(Some(result));
        }
        watchdog.as_mut().poll(cx).map(|()| None)
    })
    .await
}

/// Completes once bytes have been received for `timeout` (checked every
/// quarter of it) since the first new byte seen after this call.
async fn stalled(fd: RawFd, timeout: Duration) {
    let Some(at_start) = bytes_received(fd) else {
        return std::future::pending().await;
    };
    let mut arriving_since: Option<Instant> = None;
    loop {
        compio::time::sleep(timeout / 4).await;
        if arriving_since.is_none() && bytes_received(fd).is_some_and(|now| now != at_start) {
            arriving_since = Some(Instant::now());
        }
        if arriving_since.is_some_and(|since| since.elapsed() >= timeout) {
            return;
        }
    }
}

/// Bytes the kernel has received on this TCP socket (`tcpi_bytes_received`).
fn bytes_received(fd: RawFd) -> Option<u64> {
    // SAFETY: tcp_info is plain data, so all-zero bytes are a valid value.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: `info` and `len` are valid for writes of `len` bytes; a bad
    // descriptor only makes the call fail.
    let status = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&raw mut info).cast(),
            &raw mut len,
        )
    };
    (status == 0).then_some(info.tcpi_bytes_received)
}

async fn refuse<S>(
    ws: &mut WebSocketStream<S>,
    code: CloseCode,
    reason: &'static str,
) -> Result<(), compio::ws::tungstenite::Error>
where
    S: Splittable + 'static,
    S::ReadHalf: AsyncRead + Unpin,
    S::WriteHalf: AsyncWrite + Unpin,
{
    debug!(reason, "closing a WebSocket connection");
    let frame = CloseFrame {
        code,
        reason: reason.into(),
    };
    let _ = ws.close(Some(frame)).await;
    Ok(())
}
