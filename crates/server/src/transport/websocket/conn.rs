//! A WebSocket connection framed by this server (`frame`, `handshake`)
//! over a plaintext or TLS stream.
//!
//! Each binary message is read straight into one buffer (the bytes read
//! ahead with its head are copied, the rest is read in place) and unmasked
//! there; a reply goes out as a frame head followed by the reply's own
//! buffers in one vectored write. Pings are answered at once, pongs are
//! dropped, a close is answered with a close. A connection holds no state
//! between messages but the bytes it read ahead, so when it holds none
//! its stream is all there is to it and it can move to another shard.
//!
//! Refusals close with a close frame saying why: 1002 for a broken frame,
//! 1003 for a text message, 1009 for a frame or message over the limits.

use std::io;
use std::time::Duration;

use bytes::Bytes;
use compio::buf::{BufResult, IntoInner, IoBuf};
use compio::io::{AsyncRead, AsyncReadExt, AsyncWrite};

use protocol::header::{HEADER_SIZE, frame_size};

use super::super::connection::{Frames, write_reply};
use super::frame::{self, Head};
use super::handshake::{self, Answer};
use crate::node::shard_message::WsLimits;

/// Bytes asked of the stream per read of a frame head: the head, the
/// binary protocol's header and a small message fit.
const READ_AHEAD: usize = 4096;

/// A WebSocket connection after its opening handshake.
pub struct WsConn<S> {
    stream: S,
    /// Bytes read and not yet parsed: `buffered[start..]`.
    buffered: Vec<u8>,
    start: usize,
    limits: WsLimits,
}

/// What one pass over the incoming frames ended with.
enum Step {
    Message(Vec<u8>),
    /// A control frame between two messages.
    Control,
    /// The client sent a close (answered).
    Closed,
}

impl<S: AsyncRead + AsyncWrite> WsConn<S> {
    /// Runs the opening handshake on `stream` (the caller bounds it in
    /// time).
    pub async fn accept(stream: S, limits: WsLimits) -> io::Result<WsConn<S>> {
        let mut conn = WsConn::resume(stream, limits);
        loop {
            match handshake::answer(conn.pending()) {
                Some(Answer::Upgrade { response, consumed }) => {
                    conn.consume(consumed);
                    conn.write_all(response).await?;
                    return Ok(conn);
                }
                Some(Answer::Refuse { response, reason }) => {
                    let _ = conn.write_all(response).await;
                    return Err(io::Error::new(io::ErrorKind::InvalidData, reason));
                }
                None => {
                    if !conn.read_more(handshake::MAX_REQUEST).await? {
                        return Err(io::ErrorKind::UnexpectedEof.into());
                    }
                }
            }
        }
    }

    /// Goes on with a connection whose handshake was done elsewhere and
    /// which held no bytes read ahead (`is_idle`).
    pub fn resume(stream: S, limits: WsLimits) -> WsConn<S> {
        WsConn {
            stream,
            buffered: Vec::new(),
            start: 0,
            limits,
        }
    }

    /// The limits it was opened with (they travel with a move).
    pub fn limits(&self) -> WsLimits {
        self.limits
    }

    pub fn get_ref(&self) -> &S {
        &self.stream
    }

    pub fn get_mut(&mut self) -> &mut S {
        &mut self.stream
    }

    /// Whether no byte the client sent waits here unparsed.
    pub fn is_idle(&self) -> bool {
        self.pending().is_empty()
    }

    pub fn into_inner(self) -> S {
        assert!(self.is_idle(), "only an idle connection is taken apart");
        self.stream
    }

    /// The next binary message; `None` when the client closes or ends the
    /// stream between messages. The wait for a message is unbounded; once
    /// its first byte arrives, it must complete within `timeout`.
    pub async fn next_message(&mut self, timeout: Duration) -> io::Result<Option<Vec<u8>>> {
        loop {
            if self.pending().is_empty() && !self.read_more(READ_AHEAD).await? {
                return Ok(None);
            }
            match compio::time::timeout(timeout, self.complete_message()).await {
                Ok(Ok(Step::Message(message))) => return Ok(Some(message)),
                Ok(Ok(Step::Control)) => continue,
                Ok(Ok(Step::Closed)) => return Ok(None),
                Ok(Err(error)) => return Err(error),
                Err(_) => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("a WebSocket message did not complete within {timeout:?}"),
                    ));
                }
            }
        }
    }

    /// One binary message made of `parts`, in one write.
    pub async fn send(&mut self, mut parts: Vec<Bytes>) -> io::Result<()> {
        let len = parts.iter().map(Bytes::len).sum();
        parts.insert(0, Bytes::from(frame::server_head(frame::BINARY, len)));
        write_reply(&mut self.stream, parts).await
    }

    /// Closes with a close frame carrying `code` and `reason` (none for a
    /// normal close), and refuses with an error saying why.
    pub async fn refuse(&mut self, code: u16, reason: &str) -> io::Error {
        let _ = self
            .send_control(frame::CLOSE, &frame::close_payload(code, reason))
            .await;
        io::Error::new(io::ErrorKind::InvalidData, format!("{reason} ({code})"))
    }

    /// A normal close.
    pub async fn close(&mut self) {
        let payload = frame::close_payload(frame::CLOSE_NORMAL, "");
        let _ = self.send_control(frame::CLOSE, &payload).await;
    }

    /// Reads frames until a message is complete, or a control frame
    /// arrives between two messages.
    async fn complete_message(&mut self) -> io::Result<Step> {
        let mut message: Option<Vec<u8>> = None;
        loop {
            let head = self.next_head().await?;
            if head.is_control() {
                let payload = self.control_payload(&head).await?;
                match head.opcode {
                    frame::PING => self.send_control(frame::PONG, &payload).await?,
                    frame::CLOSE => {
                        let code = payload.get(..2).unwrap_or_default();
                        let _ = self.send_control(frame::CLOSE, code).await;
                        return Ok(Step::Closed);
                    }
                    _ => {}
                }
                if message.is_none() {
                    return Ok(Step::Control);
                }
                continue;
            }
            match (head.opcode, message.is_some()) {
                (frame::BINARY, false) => message = Some(Vec::new()),
                (frame::CONTINUATION, true) => {}
                (frame::TEXT, false) => {
                    let reason = "text messages carry no frames";
                    return Err(self.refuse(frame::CLOSE_UNSUPPORTED, reason).await);
                }
                _ => {
                    let reason = "a message fragment out of order";
                    return Err(self.refuse(frame::CLOSE_PROTOCOL, reason).await);
                }
            }
            let so_far = message.as_ref().map_or(0, Vec::len) as u64;
            if head.len > self.limits.max_frame_size as u64
                || so_far + head.len > self.limits.max_message_size as u64
            {
                let reason = "a frame or message over the size limit";
                return Err(self.refuse(frame::CLOSE_TOO_BIG, reason).await);
            }
            let body = message.as_mut().expect("set above");
            self.read_payload(&head, body).await?;
            if head.fin {
                return Ok(Step::Message(message.take().expect("set above")));
            }
        }
    }

    /// The next frame's head, consumed; a broken one is refused.
    async fn next_head(&mut self) -> io::Result<Head> {
        loop {
            match frame::parse_head(self.pending(), self.limits.accept_unmasked_frames) {
                Ok(Some(head)) => {
                    self.consume(head.head_len);
                    return Ok(head);
                }
                Ok(None) => {
                    if !self.read_more(READ_AHEAD).await? {
                        return Err(io::ErrorKind::UnexpectedEof.into());
                    }
                }
                Err(error) => {
                    return Err(self.refuse(frame::CLOSE_PROTOCOL, &error.to_string()).await);
                }
            }
        }
    }

    /// A control frame's payload (at most 125 bytes), unmasked.
    async fn control_payload(&mut self, head: &Head) -> io::Result<Vec<u8>> {
        let len = head.len as usize;
        while self.pending().len() < len {
            if !self.read_more(READ_AHEAD).await? {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
        }
        let mut payload = self.pending()[..len].to_vec();
        self.consume(len);
        if let Some(key) = head.mask {
            frame::unmask(&mut payload, key);
        }
        Ok(payload)
    }

    /// Appends a data frame's payload to `message`: what was read ahead,
    /// then the rest read in place; unmasked there.
    async fn read_payload(&mut self, head: &Head, message: &mut Vec<u8>) -> io::Result<()> {
        let len = usize::try_from(head.len).expect("within max_frame_size");
        let at = message.len();
        if at == 0 {
            message.reserve_exact(len);
        } else {
            // A continuation: amortised growth, so that a message sent as
            // many small fragments is not copied once per fragment.
            message.reserve(len);
        }
        let ahead = len.min(self.pending().len());
        message.extend_from_slice(&self.pending()[..ahead]);
        self.consume(ahead);
        if ahead < len {
            let buffer = std::mem::take(message);
            let BufResult(result, buffer) = self
                .stream
                .read_exact(buffer.slice(at + ahead..at + len))
                .await;
            *message = buffer.into_inner();
            result?;
        }
        if let Some(key) = head.mask {
            frame::unmask(&mut message[at..], key);
        }
        // Postcondition: the frame's payload, whole.
        assert_eq!(message.len(), at + len);
        Ok(())
    }

    async fn send_control(&mut self, opcode: u8, payload: &[u8]) -> io::Result<()> {
        self.write_all(frame::server_frame(opcode, payload)).await
    }

    async fn write_all(&mut self, bytes: Vec<u8>) -> io::Result<()> {
        write_reply(&mut self.stream, vec![Bytes::from(bytes)]).await
    }

    fn pending(&self) -> &[u8] {
        &self.buffered[self.start..]
    }

    fn consume(&mut self, n: usize) {
        assert!(n <= self.pending().len(), "consumes only what was read");
        self.start += n;
        if self.start == self.buffered.len() {
            self.buffered.clear();
            self.start = 0;
        }
    }

    /// Reads up to `want` more bytes after those pending; `false` at the
    /// end of the stream.
    async fn read_more(&mut self, want: usize) -> io::Result<bool> {
        if self.start > 0 {
            self.buffered.drain(..self.start);
            self.start = 0;
        }
        let have = self.buffered.len();
        self.buffered.reserve(want);
        let buffer = std::mem::take(&mut self.buffered);
        let BufResult(result, buffer) = self.stream.read(buffer.slice(have..have + want)).await;
        self.buffered = buffer.into_inner();
        Ok(result? > 0)
    }
}

impl<S: AsyncRead + AsyncWrite> Frames for WsConn<S> {
    async fn next_frame(
        &mut self,
        frame_max: usize,
        frame_timeout: Duration,
    ) -> io::Result<Option<Vec<u8>>> {
        let Some(message) = self.next_message(frame_timeout).await? else {
            return Ok(None);
        };
        let size = frame_size(&message).map_or(0, |s| s as usize);
        if message.len() < HEADER_SIZE || size != message.len() || size > frame_max {
            let reason = "a message must hold exactly one frame of its declared size";
            return Err(self.refuse(frame::CLOSE_POLICY, reason).await);
        }
        Ok(Some(message))
    }

    async fn send_reply(&mut self, parts: Vec<Bytes>) -> io::Result<()> {
        self.send(parts).await
    }

    async fn end(&mut self) {
        self.close().await;
    }
}
