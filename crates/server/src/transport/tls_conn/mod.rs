//! TLS on a client's TCP connection, run on rustls directly over the shard's
//! socket. Unlike a wrapped stream it can be taken apart between two
//! requests, its socket and its TLS session, and put together on another
//! shard: a TLS connection moves to its partitions' shard as a plaintext one
//! does (`session::moving`).
//!
//! Reads copy decrypted plaintext straight into the caller's buffer (no
//! zero-filling of it first); writes seal every buffer of a reply and send
//! the records with one write. The handshake is the caller's to bound in
//! time (`message_bus.handshake_grace`).

use std::io::{self, BufRead};
use std::sync::Arc;

use compio::buf::{BufResult, IoBuf, IoBufMut, IoVectoredBuf};
use compio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use compio::net::TcpStream;
use rustls::{ServerConfig, ServerConnection};

/// Ciphertext asked of the socket per read: four full records.
const RECEIVE_BYTES: usize = 64 * 1024;

/// Sealed bytes the session holds before they are sent: a reply larger
/// than this goes out in writes of about this size.
const SEND_BYTES: usize = 1024 * 1024;

/// A TLS session on a TCP connection.
pub struct TlsConn {
    tcp: TcpStream,
    session: ServerConnection,
    /// Ciphertext read from the socket; `incoming[start..]` is not yet the
    /// session's.
    incoming: Vec<u8>,
    start: usize,
    /// Sealed records on their way to the socket (kept for its allocation).
    outgoing: Vec<u8>,
}

impl TlsConn {
    /// Runs the server side of the handshake on `tcp`.
    pub async fn accept(tcp: TcpStream, config: Arc<ServerConfig>) -> io::Result<TlsConn> {
        let session = ServerConnection::new(config).map_err(io::Error::other)?;
        let mut conn = TlsConn::resume(tcp, session);
        while conn.session.is_handshaking() {
            conn.send_pending().await?;
            if !conn.session.is_handshaking() {
                break;
            }
            if !conn.receive().await? {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
        }
        conn.send_pending().await?;
        debug_assert!(!conn.session.is_handshaking());
        Ok(conn)
    }

    /// Goes on with a session established elsewhere (`into_parts`).
    pub fn resume(tcp: TcpStream, mut session: ServerConnection) -> TlsConn {
        session.set_buffer_limit(Some(SEND_BYTES));
        TlsConn {
            tcp,
            session,
            incoming: Vec::new(),
            start: 0,
            outgoing: Vec::new(),
        }
    }

    pub fn tcp(&self) -> &TcpStream {
        &self.tcp
    }

    /// Whether the connection holds nothing the client sent that was not
    /// yet read, so that its socket and session are all there is to it.
    pub fn is_idle(&mut self) -> bool {
        self.start == self.incoming.len()
            && matches!(self.session.reader().fill_buf(), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
    }

    /// The socket and the TLS session, to be resumed elsewhere. Only between
    /// requests: the caller checks `is_idle` first.
    pub fn into_parts(self) -> (TcpStream, ServerConnection) {
        debug_assert_eq!(self.start, self.incoming.len(), "unread ciphertext");
        (self.tcp, self.session)
    }

    /// Gives the session ciphertext: what is left of the last read, or a
    /// new read from the socket. `false` at the socket's end of stream.
    async fn receive(&mut self) -> io::Result<bool> {
        if self.start == self.incoming.len() {
            let mut buffer = std::mem::take(&mut self.incoming);
            buffer.clear();
            buffer.reserve(RECEIVE_BYTES);
            let BufResult(read, buffer) = self.tcp.read(buffer).await;
            self.incoming = buffer;
            self.start = 0;
            if read? == 0 {
                // Lets the session tell a clean close_notify from a cut.
                self.session.read_tls(&mut io::empty())?;
                return Ok(false);
            }
        }
        let mut rest = &self.incoming[self.start..];
        let fed = self.session.read_tls(&mut rest)?;
        self.start += fed;
        if let Err(e) = self.session.process_new_packets() {
            // The session may have an alert for the peer; the connection
            // ends either way.
            let _ = self.send_pending().await;
            return Err(io::Error::new(io::ErrorKind::InvalidData, e));
        }
        if self.session.wants_write() {
            self.send_pending().await?;
        }
        Ok(true)
    }

    /// Sends every sealed record the session holds.
    async fn send_pending(&mut self) -> io::Result<()> {
        while self.session.wants_write() {
            let mut sealed = std::mem::take(&mut self.outgoing);
            sealed.clear();
            while self.session.wants_write() {
                self.session.write_tls(&mut sealed)?;
            }
            let BufResult(result, sealed) = self.tcp.write_all(sealed).await;
            self.outgoing = sealed;
            result?;
        }
        Ok(())
    }

    /// Seals `plaintext`, sending records whenever the session holds
    /// `SEND_BYTES` of them.
    async fn seal(&mut self, plaintext: &[u8]) -> io::Result<()> {
        let mut rest = plaintext;
        while !rest.is_empty() {
            let taken = io::Write::write(&mut self.session.writer(), rest)?;
            if taken == 0 {
                if !self.session.wants_write() {
                    return Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        "the TLS session takes no more plaintext",
                    ));
                }
                self.send_pending().await?;
            }
            rest = &rest[taken..];
        }
        Ok(())
    }
}

impl AsyncRead for TlsConn {
    async fn read<B: IoBufMut>(&mut self, mut buf: B) -> BufResult<usize, B> {
        loop {
            let room = buf.as_uninit();
            if room.is_empty() {
                return BufResult(Ok(0), buf);
            }
            match self.session.reader().fill_buf() {
                Ok(chunk) => {
                    // Empty: the peer closed the session cleanly.
                    let n = chunk.len().min(room.len());
                    // SAFETY: `room` has at least `n` bytes and does not
                    // overlap the session's buffer.
                    unsafe {
                        std::ptr::copy_nonoverlapping(chunk.as_ptr(), room.as_mut_ptr().cast(), n);
                    }
                    self.session.reader().consume(n);
                    // SAFETY: the first `n` bytes were just written.
                    unsafe { buf.set_len(n) };
                    return BufResult(Ok(n), buf);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // The socket ended without close_notify (as the SDK closes):
                // an end of stream like any other; the frame reader tells a
                // cut frame apart.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    return BufResult(Ok(0), buf);
                }
                Err(e) => return BufResult(Err(e), buf),
            }
            match self.receive().await {
                Ok(_) => {}
                Err(e) => return BufResult(Err(e), buf),
            }
        }
    }
}

impl AsyncWrite for TlsConn {
    async fn write<T: IoBuf>(&mut self, buf: T) -> BufResult<usize, T> {
        let len = buf.as_init().len();
        if let Err(e) = self.seal(buf.as_init()).await {
            return BufResult(Err(e), buf);
        }
        let result = self.send_pending().await.map(|()| len);
        BufResult(result, buf)
    }

    async fn write_vectored<T: IoVectoredBuf>(&mut self, buf: T) -> BufResult<usize, T> {
        let mut len = 0;
        let mut sealed = Ok(());
        for part in buf.iter_slice() {
            sealed = self.seal(part).await;
            if sealed.is_err() {
                break;
            }
            len += part.len();
        }
        if let Err(e) = sealed {
            return BufResult(Err(e), buf);
        }
        let result = self.send_pending().await.map(|()| len);
        BufResult(result, buf)
    }

    async fn flush(&mut self) -> io::Result<()> {
        self.send_pending().await
    }

    async fn shutdown(&mut self) -> io::Result<()> {
        self.session.send_close_notify();
        self.send_pending().await?;
        self.tcp.shutdown().await
    }
}

#[cfg(test)]
mod tests;
