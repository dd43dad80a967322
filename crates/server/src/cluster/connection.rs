//! One replica connection's I/O: the handshake over a fresh TCP stream
//! (driving the sans-IO `handshake` machine), then two halves until either
//! ends: the writer drains the peer's lanes into vectored writes, the reader
//! cuts length-delimited replica frames and delivers them. A `Channel` is
//! the stream itself, or a TLS session over it (`tls`).
//!
//! Reader rules (replication spec §3): a header whose seal, command or size
//! fails closes the connection, since a byte stream cannot be resynchronised
//! after an untrusted length; the one exception is a sealed header with an
//! unknown command, whose sealed size is trusted to skip it. A frame whose
//! body fails `decode` is dropped and logged. A frame of another cluster, or
//! whose sender is not the peer this connection authenticated, is dropped
//! (the wire module leaves both checks to the receiver).

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;

use compio::buf::{BufResult, IntoInner, IoBuf};
use compio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use compio::net::TcpStream;
use consensus::wire::{self, Frame, WireError};
use crossfire::MAsyncTx;
use crossfire::mpsc::Array;
use protocol::header::{HEADER_SIZE, SIZE_OFFSET};
use thiserror::Error;
use tracing::warn;

use super::handshake::{
    Accepted, Acceptor, ChannelBinding, Dialer, HandshakeConfig, HandshakeError, HandshakeFrame,
    ReplicaId,
};
use super::lanes::LanesRx;
use super::tls::TlsSession;

/// Why a connection (or its handshake) ended.
#[derive(Debug, Error)]
pub enum Closed {
    #[error("the peer closed the connection")]
    PeerClosed,
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    #[error("handshake: {0}")]
    Handshake(#[from] HandshakeError),
    #[error("unreadable frame header, closing: {0}")]
    BadHeader(WireError),
    #[error("the local receiver of replica frames is gone")]
    InboundGone,
    #[error("the outgoing queue is gone")]
    QueueGone,
    #[error("TLS: {0}")]
    Tls(String),
}

/// A connection's byte channel: the TCP stream, or a TLS session on it.
#[derive(Clone, Copy)]
pub struct Channel<'a> {
    pub stream: &'a TcpStream,
    pub tls: Option<&'a TlsSession>,
}

impl Channel<'_> {
    /// What the PSK handshake's MAC is bound to.
    pub fn binding(&self) -> Result<ChannelBinding, Closed> {
        Ok(match self.tls {
            None => ChannelBinding::Plaintext,
            Some(tls) => ChannelBinding::Tls {
                exporter: tls.exporter()?,
            },
        })
    }

    async fn read_exact(&self, buf: Vec<u8>, len: usize) -> Result<Vec<u8>, Closed> {
        match self.tls {
            None => read_exact(self.stream, buf, len).await,
            Some(tls) => tls.read_exact(self.stream, buf, len).await,
        }
    }

    async fn write_all(&self, bytes: Vec<u8>) -> Result<(), Closed> {
        match self.tls {
            None => write_all(self.stream, bytes).await,
            Some(tls) => tls.write_all(self.stream, &[bytes]).await,
        }
    }

    async fn write_batch(&self, batch: Vec<bytes::Bytes>) -> Result<(), Closed> {
        match self.tls {
            None => {
                let mut writer = self.stream;
                let BufResult(result, _) = writer.write_vectored_all(batch).await;
                Ok(result?)
            }
            Some(tls) => tls.write_all(self.stream, &batch).await,
        }
    }
}

/// Frames counted on one peer's links, across connections.
#[derive(Debug, Default)]
pub struct FrameCounters {
    pub sent: AtomicU64,
    pub received: AtomicU64,
    /// Dropped on receipt: undecodable, another cluster, or a forged sender.
    pub rejected: AtomicU64,
}

/// What a connection needs besides its stream.
pub struct ConnectionContext<'a> {
    pub cluster: u128,
    pub peer: ReplicaId,
    pub max_message_size: usize,
    pub max_batch: usize,
    pub lanes: &'a LanesRx,
    pub inbound: &'a MAsyncTx<Array<Frame>>,
    pub counters: &'a Arc<FrameCounters>,
}

/// Runs the dialer's side of the handshake; the peer is `peer` on success.
pub async fn dial_handshake(
    channel: Channel<'_>,
    mut config: HandshakeConfig,
    peer: ReplicaId,
) -> Result<(), Closed> {
    config.channel = channel.binding()?;
    let (dialer, hello) = Dialer::start(config, peer, rand::random());
    channel.write_all(hello.to_vec()).await?;
    let challenge = read_handshake_frame(channel).await?;
    let dialed = dialer.on_challenge(&challenge)?;
    if let Some(finish) = dialed.finish {
        channel.write_all(finish.to_vec()).await?;
    }
    assert_eq!(dialed.peer, peer);
    Ok(())
}

/// Runs the acceptor's side; returns the admitted dialer. On a refusal the
/// Challenge naming it is sent before the error returns.
pub async fn accept_handshake(
    channel: Channel<'_>,
    mut config: HandshakeConfig,
) -> Result<ReplicaId, Closed> {
    config.channel = channel.binding()?;
    let hello = read_handshake_frame(channel).await?;
    let step = Acceptor::new(config, rand::random()).on_hello(&hello);
    channel.write_all(step.challenge.to_vec()).await?;
    match step.next? {
        Accepted::Established(peer) => Ok(peer),
        Accepted::AwaitFinish(awaiting) => {
            let finish = read_handshake_frame(channel).await?;
            Ok(awaiting.on_finish(&finish)?)
        }
    }
}

async fn read_handshake_frame(channel: Channel<'_>) -> Result<HandshakeFrame, Closed> {
    let bytes = channel
        .read_exact(Vec::with_capacity(HEADER_SIZE), HEADER_SIZE)
        .await?;
    Ok(bytes.try_into().expect("read_exact filled the header"))
}

/// Serves an admitted connection until either half ends.
pub async fn run(channel: Channel<'_>, cx: ConnectionContext<'_>) -> Closed {
    let mut reader = pin!(read_frames(channel, &cx));
    let mut writer = pin!(write_frames(channel, &cx));
    std::future::poll_fn(|task| {
        if let Poll::Ready(closed) = reader.as_mut().poll(task) {
            return Poll::Ready(closed);
        }
        writer.as_mut().poll(task)
    })
    .await
}

async fn write_frames(channel: Channel<'_>, cx: &ConnectionContext<'_>) -> Closed {
    loop {
        let Some(batch) = cx.lanes.next_batch(cx.max_batch).await else {
            return Closed::QueueGone;
        };
        let count = batch.len() as u64;
        if let Err(closed) = channel.write_batch(batch).await {
            return closed;
        }
        cx.counters.sent.fetch_add(count, Ordering::Relaxed);
    }
}

async fn read_frames(channel: Channel<'_>, cx: &ConnectionContext<'_>) -> Closed {
    loop {
        match read_frame(channel, cx.max_message_size).await {
            Ok(Some(bytes)) => {
                if let Some(frame) = accept_frame(bytes, cx) {
                    cx.counters.received.fetch_add(1, Ordering::Relaxed);
                    if cx.inbound.send(frame).await.is_err() {
                        return Closed::InboundGone;
                    }
                }
            }
            Ok(None) => {
                cx.counters.rejected.fetch_add(1, Ordering::Relaxed);
            }
            Err(closed) => return closed,
        }
    }
}

/// Decodes and checks a whole frame; `None` (logged, counted) drops it.
fn accept_frame(bytes: Vec<u8>, cx: &ConnectionContext<'_>) -> Option<Frame> {
    let peer = cx.peer;
    let reject = |why: String| {
        warn!(peer, "dropping a replica frame: {why}");
        cx.counters.rejected.fetch_add(1, Ordering::Relaxed);
        None
    };
    // The frame's buffer is shared by the entries it carries (no copy).
    let frame = match wire::decode_shared(bytes.into(), cx.max_message_size) {
        Ok(frame) => frame,
        Err(e) => return reject(e.to_string()),
    };
    if frame.cluster != cx.cluster {
        return reject(format!("cluster {:#034x} is not ours", frame.cluster));
    }
    if frame.from != peer {
        return reject(format!(
            "it claims sender {} on replica {peer}'s link",
            frame.from
        ));
    }
    Some(frame)
}

/// Reads one frame's bytes. `Ok(None)`: a sealed frame of an unknown
/// command was skipped. `Err`: the connection must close.
async fn read_frame(channel: Channel<'_>, max_size: usize) -> Result<Option<Vec<u8>>, Closed> {
    let mut frame = match channel.tls {
        None => {
            let stream = channel.stream;
            let header = Vec::with_capacity(HEADER_SIZE);
            let BufResult(result, slice) = (&mut &*stream).read(header.slice(..HEADER_SIZE)).await;
            if result? == 0 {
                return Err(Closed::PeerClosed);
            }
            read_exact(stream, slice.into_inner(), HEADER_SIZE).await?
        }
        Some(_) => {
            channel
                .read_exact(Vec::with_capacity(HEADER_SIZE), HEADER_SIZE)
                .await?
        }
    };
    let size = match wire::frame_size(&frame, max_size) {
        Ok(size) => size,
        Err(WireError::UnknownCommand { command }) => {
            let size = sealed_size(&frame);
            if !(HEADER_SIZE..=max_size).contains(&size) {
                return Err(Closed::BadHeader(WireError::UnknownCommand { command }));
            }
            warn!(
                command,
                size, "skipping a replica frame of an unknown command"
            );
            channel.read_exact(frame, size).await?;
            return Ok(None);
        }
        Err(e) => return Err(Closed::BadHeader(e)),
    };
    frame.reserve_exact(size - frame.len());
    frame = channel.read_exact(frame, size).await?;
    Ok(Some(frame))
}

/// The size field of a header whose seal held (so it is what was sent).
fn sealed_size(header: &[u8]) -> usize {
    let bytes: [u8; 4] = header[SIZE_OFFSET..SIZE_OFFSET + 4]
        .try_into()
        .expect("4 bytes");
    u32::from_le_bytes(bytes) as usize
}

/// Fills `buf` up to `len` bytes.
async fn read_exact(stream: &TcpStream, mut buf: Vec<u8>, len: usize) -> Result<Vec<u8>, Closed> {
    assert!(buf.len() <= len);
    if buf.len() == len {
        return Ok(buf);
    }
    buf.reserve_exact(len - buf.len());
    let have = buf.len();
    let BufResult(result, slice) = (&mut &*stream).read_exact(buf.slice(have..len)).await;
    match result {
        Ok(()) => Ok(slice.into_inner()),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(Closed::PeerClosed),
        Err(e) => Err(Closed::Io(e)),
    }
}

async fn write_all(stream: &TcpStream, bytes: Vec<u8>) -> Result<(), Closed> {
    let mut writer = stream;
    let BufResult(result, _) = writer.write_all(bytes).await;
    Ok(result?)
}
