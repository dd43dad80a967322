//! QUIC (binary protocol §3.3): one bidirectional stream per request. The
//! client writes a frame and finishes its side; the server reads the whole
//! frame, writes one reply frame on the same stream and finishes. Served on
//! shard 0; requests of one connection run one at a time, in order.
//!
//! A stream carrying more than the frame cap, or a frame whose declared
//! size differs from what arrived, closes the connection with an
//! application error saying why.

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use compio::io::AsyncWriteExt;
use compio::quic::{
    Connection, Endpoint, EndpointConfig, IdleTimeout, RecvStream, ServerConfig, TransportConfig,
    VarInt,
};
use protocol::header::{HEADER_SIZE, frame_size};
use tracing::{debug, info, warn};

use super::tls::Identity;
use crate::node::Shard;
use crate::node::heartbeat::{ConnectionHandle, Liveness};
use crate::session::{self, Transport};

/// Application error codes on close.
const CLOSE_NORMAL: u32 = 0;
const CLOSE_BAD_FRAME: u32 = 1;

/// `[quic]` settings, resolved.
#[derive(Debug, Clone)]
pub struct QuicLimits {
    pub max_concurrent_bidi_streams: u32,
    pub initial_mtu: u16,
    pub send_window: u64,
    pub receive_window: u64,
    pub stream_receive_window: u64,
    pub keep_alive_interval: Option<Duration>,
    pub max_idle_timeout: Option<Duration>,
}

/// The QUIC server configuration: TLS 1.3 with the identity, no ALPN, no
/// early data, and the configured windows and timers.
pub fn server_config(identity: Identity, limits: &QuicLimits) -> anyhow::Result<ServerConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .context("QUIC TLS 1.3")?
        .with_no_client_auth()
        .with_single_cert(identity.chain, identity.key)
        .context("the QUIC certificate and key do not match or are unsupported")?;
    let crypto = compio::quic::crypto::rustls::QuicServerConfig::try_from(tls)
        .map_err(|e| anyhow::anyhow!("QUIC TLS configuration: {e}"))?;
    let mut config = ServerConfig::with_crypto(Arc::new(crypto));
    let mut transport = TransportConfig::default();
    let varint = |n: u64| VarInt::from_u64(n).unwrap_or(VarInt::MAX);
    transport
        .max_concurrent_bidi_streams(VarInt::from_u32(limits.max_concurrent_bidi_streams))
        .max_concurrent_uni_streams(VarInt::from_u32(0))
        .initial_mtu(limits.initial_mtu)
        .send_window(limits.send_window)
        .receive_window(varint(limits.receive_window))
        .stream_receive_window(varint(limits.stream_receive_window))
        .keep_alive_interval(limits.keep_alive_interval);
    let idle = match limits.max_idle_timeout {
        Some(timeout) => {
            Some(IdleTimeout::try_from(timeout).context("quic.max_idle_timeout is too large")?)
        }
        None => None,
    };
    transport.max_idle_timeout(idle);
    config.transport_config(Arc::new(transport));
    Ok(config)
}

/// Spawns the endpoint and its accept loop on shard 0.
pub fn serve(
    shard: &Rc<Shard>,
    socket: std::net::UdpSocket,
    config: ServerConfig,
    receive_window: u64,
) {
    let socket = match compio::net::UdpSocket::from_std(socket) {
        Ok(socket) => socket,
        Err(e) => return tracing::error!("cannot serve the QUIC socket: {e}"),
    };
    let endpoint = match Endpoint::new(socket, EndpointConfig::default(), Some(config), None) {
        Ok(endpoint) => endpoint,
        Err(e) => return tracing::error!("cannot start the QUIC endpoint: {e}"),
    };
    compio::runtime::spawn(accept_loop(endpoint, shard.clone(), receive_window)).detach();
}

async fn accept_loop(endpoint: Endpoint, shard: Rc<Shard>, receive_window: u64) {
    while let Some(incoming) = endpoint.wait_incoming().await {
        if shard.ctx.is_stopping() {
            incoming.refuse();
            break;
        }
        if !shard.ctx.has_connection_room() {
            debug!("refusing a QUIC connection: connection limit reached");
            incoming.refuse();
            continue;
        }
        let peer = incoming.remote_address();
        let connecting = match incoming.accept() {
            Ok(connecting) => connecting,
            Err(e) => {
                debug!(%peer, "QUIC connection refused: {e}");
                continue;
            }
        };
        let shard = shard.clone();
        compio::runtime::spawn(async move {
            let _open = shard.connection_guard();
            let _counted = shard.ctx.open_connection();
            let timeout = shard.ctx.limits.handshake_grace;
            match compio::time::timeout(timeout, connecting).await {
                Ok(Ok(connection)) => serve_connection(&shard, connection, receive_window).await,
                Ok(Err(e)) => debug!(%peer, "QUIC handshake failed: {e}"),
                Err(_) => debug!(%peer, "QUIC handshake timed out"),
            }
        })
        .detach();
    }
    endpoint.close(VarInt::from_u32(CLOSE_NORMAL), b"server stopping");
}

async fn serve_connection(shard: &Rc<Shard>, connection: Connection, receive_window: u64) {
    let peer = connection.remote_address();
    let mut session = session::Session::new(shard.clone(), Transport::Quic, peer);
    let connection_id = session.connection_id;
    shard.node.liveness.track(
        connection_id,
        Liveness {
            last_request: session.last_request.clone(),
            handle: ConnectionHandle::Quic(connection.clone()),
        },
    );
    let frame_max = shard.ctx.frame_max_bytes;
    let ack_nudge = AckNudge::new(&connection, receive_window);
    loop {
        let (mut send, mut recv) = match connection.accept_bi().await {
            Ok(streams) => streams,
            Err(e) => {
                debug!(%peer, "QUIC connection ended: {e}");
                break;
            }
        };
        let frame = match read_frame(&mut recv, frame_max, &ack_nudge).await {
            Ok(frame) => frame,
            Err(reason) => {
                info!(%peer, "closing a QUIC connection: {reason}");
                connection.close(VarInt::from_u32(CLOSE_BAD_FRAME), reason.as_bytes());
                break;
            }
        };
        let reply = session.handle(frame).await;
        let mut failed = false;
        for part in reply.parts {
            if let compio::buf::BufResult(Err(e), _) = send.write_all(part).await {
                debug!(%peer, "QUIC reply not delivered: {e}");
                failed = true;
                break;
            }
        }
        let _ = send.finish();
        if failed || reply.close_after || shard.ctx.is_stopping() {
            connection.close(VarInt::from_u32(CLOSE_NORMAL), b"closed by the server");
            break;
        }
    }
    shard.node.liveness.untrack(connection_id);
}

/// Makes the connection send a packet now, so that the ACK for data the
/// peer is waiting on leaves at once instead of after the delayed-ACK timer.
///
/// quinn-proto acknowledges every second ack-eliciting packet at once but
/// holds a lone one for `max_ack_delay` (25 ms, fixed on our side unless the
/// peer sends ACK_FREQUENCY), bundling it into any packet sent meanwhile.
/// quinn-proto >= 0.11.18 clients (the Iggy SDK among them) count a whole
/// `write` against `send_window` until its last byte is acknowledged, and
/// the SDK writes a request in one call, so it sends `send_window` bytes
/// (100 KB by default) and then waits for the ACK of the window's final
/// packet. When that packet reaches us alone the upload stalls 25 ms per
/// window. compio-quic has no `ping`, so grow the connection window by one
/// byte and give it back: that queues one MAX_DATA frame, which carries the
/// pending ACK, and leaves the advertised window where it was.
struct AckNudge {
    connection: Connection,
    window: VarInt,
    grown: VarInt,
}

impl AckNudge {
    fn new(connection: &Connection, receive_window: u64) -> Option<Self> {
        let window = VarInt::from_u64(receive_window).ok()?;
        let grown = VarInt::from_u64(receive_window.checked_add(1)?).ok()?;
        Some(Self {
            connection: connection.clone(),
            window,
            grown,
        })
    }

    fn nudge(this: &Option<Self>) {
        if let Some(this) = this {
            this.connection.set_receive_window(this.grown);
            this.connection.set_receive_window(this.window);
        }
    }
}

/// Reads one stream to its end, refusing more than `frame_max` bytes or a
/// frame whose declared size is not what arrived.
async fn read_frame(
    recv: &mut RecvStream,
    frame_max: usize,
    ack_nudge: &Option<AckNudge>,
) -> Result<Vec<u8>, String> {
    let mut frame = Vec::new();
    loop {
        let room = frame_max + 1 - frame.len();
        match recv.read_chunk(room, true).await {
            Ok(Some(chunk)) => {
                frame.extend_from_slice(&chunk.bytes);
                if frame.len() > frame_max {
                    return Err(format!("a stream carried more than {frame_max} bytes"));
                }
                // More of the frame is due: have what arrived acknowledged
                // now (see `AckNudge`). A complete frame needs no nudge, the
                // reply carries the ACK.
                let declared = frame_size(&frame).map_or(usize::MAX, |s| s as usize);
                if frame.len() < declared {
                    AckNudge::nudge(ack_nudge);
                }
            }
            Ok(None) => break,
            Err(e) => return Err(format!("cannot read a request stream: {e}")),
        }
    }
    let size = frame_size(&frame).map_or(0, |s| s as usize);
    if frame.len() < HEADER_SIZE || size != frame.len() {
        warn!(
            received = frame.len(),
            declared = size,
            "QUIC stream does not hold one frame"
        );
        return Err(format!(
            "a stream must hold exactly one frame (declared {size} bytes, received {})",
            frame.len()
        ));
    }
    Ok(frame)
}
