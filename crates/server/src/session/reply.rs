//! What a session hands back to its transport: the bytes of exactly one
//! reply frame (possibly in several parts, written in order), and whether
//! the connection must close after it.

use protocol::header::HEADER_SIZE;

#[derive(Debug, Default)]
pub struct Reply {
    /// Frame bytes, in order; empty only when closing without a reply.
    pub parts: Vec<Vec<u8>>,
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
            parts: vec![bytes],
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
