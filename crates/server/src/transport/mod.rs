//! Client transports. Listeners are bound on the main thread before the
//! shards start (so every bound address is known up front, and a bad
//! certificate stops start-up with a clear error), then served by shard 0;
//! connections carry frames to the session layer, which is the same for
//! every transport.
//!
//! | transport | served on |
//! |---|---|
//! | TCP | accepted on shard 0, handed to shards round-robin; then moved to their partitions' shard |
//! | TCP + TLS | accepted on shard 0, handed to shards round-robin before the handshake; then moved like plaintext (`tls_conn`) |
//! | WebSocket | accepted on shard 0, handed to shards round-robin; then moved like TCP (`websocket::conn`) |
//! | WebSocket + TLS | accepted on shard 0, handed to shards round-robin before the handshakes; then moved like TCP |
//! | QUIC | shard 0 |
//! | HTTP, HTTPS | shard 0 (bound here, served by `http`) |
//!
//! The HTTP API sits beside this module, not below it: its socket and TLS
//! acceptor are bound here with the others, and the shard layer hands them
//! to `http` through the callback `serve` takes.

pub mod connection;
pub mod quic;
pub mod tcp;
pub mod tls;
pub mod tls_conn;
pub mod websocket;

use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use compio::tls::TlsAcceptor;
use server::config::{ListenerTlsConfig, ServerConfig};
use tracing::info;

use crate::node::Shard;
use crate::node::shard_message::{ShardMessage, WsLimits};
use tls::CertSource;

/// The addresses actually bound (None = not served).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BoundAddresses {
    pub tcp: Option<SocketAddr>,
    pub http: Option<SocketAddr>,
    pub quic: Option<SocketAddr>,
    pub websocket: Option<SocketAddr>,
}

/// Bound sockets with what serving them needs, handed to shard 0.
pub struct Listeners {
    /// The TCP socket and, for TLS, its server configuration.
    tcp: Option<(std::net::TcpListener, Option<Arc<rustls::ServerConfig>>)>,
    /// The HTTP API's socket and, for HTTPS, its TLS acceptor.
    http: Option<(std::net::TcpListener, Option<TlsAcceptor>)>,
    websocket: Option<(
        std::net::TcpListener,
        WsLimits,
        Option<Arc<rustls::ServerConfig>>,
    )>,
    /// The socket, its configuration and the connection receive window.
    quic: Option<(std::net::UdpSocket, compio::quic::ServerConfig, u64)>,
}

fn bind_tcp(name: &str, key: &str, address: SocketAddr) -> anyhow::Result<std::net::TcpListener> {
    let listener = std::net::TcpListener::bind(address)
        .with_context(|| format!("{key}: cannot bind {address}"))?;
    listener.set_nonblocking(true)?;
    info!(addr = %listener.local_addr()?, "{name} listener bound");
    Ok(listener)
}

fn listener_tls(
    key: &str,
    tls: &ListenerTlsConfig,
    alpn: &[&[u8]],
) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    let source = CertSource::listener(tls.self_signed, &tls.cert_file, &tls.key_file);
    let identity = source.identity().context(key.to_owned())?;
    tls::server_config(identity, alpn)
}

/// Binds every enabled transport.
pub fn bind(config: &ServerConfig) -> anyhow::Result<(Listeners, BoundAddresses)> {
    let mut bound = BoundAddresses::default();
    let tcp = if config.tcp.enabled {
        let listener = bind_tcp("TCP", "tcp.address", config.tcp.address)?;
        bound.tcp = Some(listener.local_addr()?);
        let tls = config
            .tcp
            .tls
            .enabled
            .then(|| listener_tls("tcp.tls", &config.tcp.tls, &[]))
            .transpose()?;
        Some((listener, tls))
    } else {
        info!("TCP listener disabled by configuration (tcp.enabled = false)");
        None
    };
    let http = if config.http.enabled {
        let listener = bind_tcp("HTTP", "http.address", config.http.address)?;
        bound.http = Some(listener.local_addr()?);
        Some((listener, https_acceptor(config)?))
    } else {
        info!("HTTP listener disabled by configuration (http.enabled = false)");
        None
    };
    let websocket = if config.websocket.enabled {
        let ws = &config.websocket;
        let listener = bind_tcp("WebSocket", "websocket.address", ws.address)?;
        bound.websocket = Some(listener.local_addr()?);
        let tls = ws
            .tls
            .enabled
            .then(|| listener_tls("websocket.tls", &ws.tls, &[]))
            .transpose()?;
        Some((listener, ws_limits(config), tls))
    } else {
        info!("WebSocket listener disabled by configuration (websocket.enabled = false)");
        None
    };
    let quic = if config.quic.enabled {
        let q = &config.quic;
        let socket = std::net::UdpSocket::bind(q.address)
            .with_context(|| format!("quic.address: cannot bind {}", q.address))?;
        socket.set_nonblocking(true)?;
        enlarge_socket_buffers(&socket);
        let addr = socket.local_addr()?;
        info!(%addr, "QUIC listener bound");
        bound.quic = Some(addr);
        let source = if q.certificate.self_signed {
            CertSource::SelfSigned
        } else {
            CertSource::Files {
                cert: q.certificate.cert_file.clone(),
                key: q.certificate.key_file.clone(),
            }
        };
        let identity = source.identity().context("quic.certificate")?;
        let limits = quic_limits(config);
        let server_config = quic::server_config(identity, &limits)?;
        Some((socket, server_config, limits.receive_window))
    } else {
        info!("QUIC listener disabled by configuration (quic.enabled = false)");
        None
    };
    Ok((
        Listeners {
            tcp,
            http,
            websocket,
            quic,
        },
        bound,
    ))
}

/// The HTTPS acceptor (HTTP/2 through ALPN, or HTTP/1.1), when
/// `http.tls` is enabled.
fn https_acceptor(config: &ServerConfig) -> anyhow::Result<Option<TlsAcceptor>> {
    if !config.http.tls.enabled {
        return Ok(None);
    }
    let source = CertSource::Files {
        cert: config.http.tls.cert_file.clone(),
        key: config.http.tls.key_file.clone(),
    };
    let identity = source.identity().context("http.tls")?;
    let alpn: &[&[u8]] = &[b"h2", b"http/1.1"];
    Ok(Some(TlsAcceptor::from(tls::server_config(identity, alpn)?)))
}

/// UDP socket buffer size asked for (the kernel caps it at
/// `net.core.rmem_max` / `wmem_max`).
const UDP_BUFFER_BYTES: libc::c_int = 4 << 20;

/// The default UDP receive buffer (about 208 KiB) overflows when a client
/// bursts a large batch, and every dropped datagram costs a loss-recovery
/// timeout (~25 ms); ask for more, best effort.
fn enlarge_socket_buffers(socket: &std::net::UdpSocket) {
    use std::os::fd::AsRawFd;
    for option in [libc::SO_RCVBUF, libc::SO_SNDBUF] {
        let value = UDP_BUFFER_BYTES;
        // SAFETY: a valid socket and an int-sized option value.
        let rc = unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                option,
                (&value as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            tracing::warn!(
                "cannot enlarge the QUIC socket buffer: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}

fn usize_of(bytes: u64) -> usize {
    usize::try_from(bytes).unwrap_or(usize::MAX)
}

fn ws_limits(config: &ServerConfig) -> WsLimits {
    use server::config::{WEBSOCKET_MAX_FRAME_DEFAULT, WEBSOCKET_MAX_MESSAGE_DEFAULT};
    let ws = &config.websocket;
    let size = |value: Option<server::config::ByteSize>, default: server::config::ByteSize| {
        usize_of(value.unwrap_or(default).as_bytes())
    };
    WsLimits {
        max_message_size: size(ws.max_message_size, WEBSOCKET_MAX_MESSAGE_DEFAULT),
        max_frame_size: size(ws.max_frame_size, WEBSOCKET_MAX_FRAME_DEFAULT),
        accept_unmasked_frames: ws.accept_unmasked_frames,
    }
}

fn quic_limits(config: &ServerConfig) -> quic::QuicLimits {
    let q = &config.quic;
    let nonzero = |d: Duration| (!d.is_zero()).then_some(d);
    quic::QuicLimits {
        max_concurrent_bidi_streams: q.max_concurrent_bidi_streams,
        initial_mtu: u16::try_from(q.initial_mtu.as_bytes()).unwrap_or(u16::MAX),
        send_window: q.send_window.as_bytes(),
        receive_window: q.receive_window.as_bytes(),
        stream_receive_window: q.stream_receive_window.as_bytes(),
        keep_alive_interval: nonzero(Duration::from(q.keep_alive_interval)),
        max_idle_timeout: nonzero(Duration::from(q.max_idle_timeout)),
    }
}

/// Spreads connections over the shards (round-robin): returns the
/// stream when this shard should serve it, otherwise hands a duplicate of
/// its descriptor to the chosen shard as the message `adopt` builds.
pub fn hand_off(
    shard: &Shard,
    stream: compio::net::TcpStream,
    peer: SocketAddr,
    adopt: impl FnOnce(std::net::TcpStream) -> ShardMessage,
) -> Option<compio::net::TcpStream> {
    let target = shard.ctx.pick_shard();
    if target == usize::from(shard.id) {
        return Some(stream);
    }
    match tcp::duplicate(&stream) {
        Ok(std_stream) => {
            drop(stream);
            if shard.ctx.try_send(target, adopt(std_stream)).is_err() {
                tracing::warn!(%peer, target, "shard inbox full; connection refused");
            }
        }
        Err(e) => tracing::warn!(%peer, "cannot hand the connection to shard {target}: {e}"),
    }
    None
}

/// Starts the accept loops on shard 0; `serve_http` starts the HTTP API's
/// on its socket (with the HTTPS acceptor, if any).
pub fn serve(
    shard: &Rc<Shard>,
    listeners: Listeners,
    serve_http: impl FnOnce(std::net::TcpListener, Option<TlsAcceptor>),
) {
    if let Some((listener, tls)) = listeners.tcp {
        tcp::serve(shard, listener, tls);
    }
    if let Some((listener, tls)) = listeners.http {
        serve_http(listener, tls);
    }
    if let Some((listener, limits, tls)) = listeners.websocket {
        websocket::serve(shard, listener, limits, tls);
    }
    if let Some((socket, config, receive_window)) = listeners.quic {
        quic::serve(shard, socket, config, receive_window);
    }
}
