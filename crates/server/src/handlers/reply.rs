//! What a session hands back to its transport: the bytes of exactly one
//! reply frame (possibly in several parts, written in order), and whether
//! the connection must close after it.

use bytes::Bytes;
use protocol::header::HEADER_SIZE;

#[derive(Debug, Default)]
pub struct Reply {
    /// Frame bytes, in order; empty only when closing without a reply.
    /// Parts may share stored records (a poll reply is written with
    /// vectored I/O straight from the cache).
    pub parts: Vec<Bytes>,
    pub close_after: bool,
}

impl Reply {
    /// A complete frame in one buffer.
    pub fn frame(bytes: impl Into<Vec<u8>>) -> Self {
        let bytes = bytes.into();
        assert!(
            bytes.len() >= HEADER_SIZE,
            "a reply frame holds at least a header"
        );
        Self {
            parts: vec![Bytes::from(bytes)],
            close_after: false,
        }
    }

    /// A frame in parts: the header first, then the body's pieces.
    pub fn parts(parts: Vec<Bytes>) -> Self {
        assert!(
            parts.first().is_some_and(|h| h.len() == HEADER_SIZE),
            "a reply frame starts with its header"
        );
        Self {
            parts,
            close_after: false,
        }
    }

    /// Close the connection without replying (undecodable header, bad size).
    pub fn close() -> Self {
        Self {
            parts: Vec::new(),
            close_after: true,
        }
    }

    pub fn and_close(mut self) -> Self {
        self.close_after = true;
        self
    }
}
