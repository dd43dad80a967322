//! WebSocket (binary protocol §3.4): one Binary message carries exactly one
//! frame each way. Connections are accepted on shard 0 and handed to shards
//! round-robin like TCP; a `wss` connection's TLS handshake runs on the
//! shard it is handed to (`tls_conn`). The server frames WebSocket itself
//! (`handshake`, `frame`, `conn`), so a connection is served by the same
//! loop as TCP (`connection`) and moves to its partitions' shard the same
//! way.
//!
//! A Binary message whose length differs from its frame's `size` closes
//! the connection with 1008, a Text message with 1003, a broken frame with
//! 1002, a frame or message over `[websocket]`'s limits with 1009.
//! `tcp.frame_timeout` applies here too: once a message's first byte
//! arrives, the rest must follow within it; a connection that sends
//! nothing, or only pings, stays open.

pub mod conn;
pub mod frame;
pub mod handshake;

use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;

use compio::net::{TcpListener, TcpStream};
use rustls::ServerConfig;
use tracing::{debug, warn};

use crate::node::Shard;
use crate::node::shard_message::{ShardMessage, WsLimits};
use crate::session::Transport;

use super::connection::{Connection, Start, serve_connection};
use super::tls_conn::TlsConn;
use conn::WsConn;

/// Spawns the accept loop on shard 0.
pub fn serve(
    shard: &Rc<Shard>,
    listener: std::net::TcpListener,
    limits: WsLimits,
    tls: Option<Arc<ServerConfig>>,
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
    tls: Option<Arc<ServerConfig>>,
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
    tls: Option<Arc<ServerConfig>>,
) {
    match TcpStream::from_std(stream) {
        Ok(stream) => start(shard, stream, peer, limits, tls),
        Err(e) => warn!(%peer, "cannot adopt a WebSocket connection: {e}"),
    }
}

/// Serves a new connection once its TLS handshake (for `wss`) and its
/// WebSocket upgrade complete, both within `message_bus.handshake_grace`.
fn start(
    shard: &Rc<Shard>,
    stream: TcpStream,
    peer: SocketAddr,
    limits: WsLimits,
    tls: Option<Arc<ServerConfig>>,
) {
    let shard = shard.clone();
    compio::runtime::spawn(async move {
        let _open = shard.connection_guard();
        let _counted = shard.ctx.open_connection();
        let handshakes = async {
            Ok::<_, std::io::Error>(match tls {
                None => Connection::Ws(Box::new(WsConn::accept(stream, limits).await?)),
                Some(config) => {
                    // As on TCP + TLS: a message leaves as TLS records
                    // written one after another, and Nagle's algorithm
                    // would hold the last, short one for the client's
                    // delayed ACK.
                    let _ = stream.set_nodelay(true);
                    let tls = TlsConn::accept(stream, config).await?;
                    Connection::Wss(Box::new(WsConn::accept(tls, limits).await?))
                }
            })
        };
        let grace = shard.ctx.limits.handshake_grace;
        let connection = match compio::time::timeout(grace, handshakes).await {
            Ok(Ok(connection)) => connection,
            Ok(Err(e)) => return debug!(%peer, "WebSocket handshake refused: {e}"),
            Err(_) => return debug!(%peer, "WebSocket handshake timed out"),
        };
        serve_connection(&shard, connection, Start::New(peer, Transport::WebSocket)).await;
    })
    .detach();
}
