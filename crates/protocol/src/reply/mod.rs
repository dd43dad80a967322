//! Whole reply frames for a request (spec 4.4, 4.5, 6).
//!
//! A server answers every request with exactly one frame, built here from
//! the request's header so the echoed fields (`request_checksum`, `client`,
//! `request`, `operation`) are always right:
//!
//! * success: `ReplyBuilder::success(payload)` adds the result section
//!   (`[0]`) exactly when the reply's operation is result-framed (6.2, 6.4);
//! * status denial: `denial(code)`, empty body, any operation (6.1);
//! * result-framed rejection: `rejection(code)`, `[1][0][code]`, only under
//!   a result-framed operation (6.2);
//! * eviction: [`eviction`], header only; reason 14 carries the window.

use crate::error::ErrorCode;
use crate::header::{
    EvictionHeader, EvictionReason, HEADER_SIZE, Operation, ReplyHeader, RequestHeader,
    frame_size_for, reply_is_result_framed,
};
use crate::requests::{PROTOCOL_VERSION, PROTOCOL_VERSION_MIN};
use crate::responses::{RESULT_SUCCESS, result_rejection};

/// Builds the reply frames for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyBuilder {
    header: ReplyHeader,
}

impl ReplyBuilder {
    /// Echoes the request's identity; `op`, `commit`, `timestamp` start at 0.
    pub fn for_request(request: &RequestHeader) -> Self {
        Self {
            header: ReplyHeader::for_request(request),
        }
    }

    /// The log op (or the session, for reads and login replies).
    pub fn op(mut self, op: u64) -> Self {
        self.header.op = op;
        self
    }

    /// The latest committed metadata op.
    pub fn commit(mut self, commit: u64) -> Self {
        self.header.commit = commit;
        self
    }

    /// The prepare time in µs (0 is always acceptable).
    pub fn timestamp(mut self, timestamp_us: u64) -> Self {
        self.header.timestamp = timestamp_us;
        self
    }

    /// Overrides the echoed operation, e.g. TruncatePartition (68) for a
    /// DeleteSegments answered with a result section (spec 10.9).
    pub fn operation(mut self, operation: Operation) -> Self {
        self.header.operation = operation;
        self
    }

    pub fn header(&self) -> &ReplyHeader {
        &self.header
    }

    /// What a success body starts with: the result section when the reply
    /// is result-framed, nothing otherwise.
    pub fn success_prefix(&self) -> &'static [u8] {
        let framed = self.header.operation.is_result_framed()
            || self.header.operation == Operation::Register;
        if framed { &RESULT_SUCCESS } else { &[] }
    }

    /// A success reply around `payload` (the result section is added here).
    pub fn success(&self, payload: &[u8]) -> Vec<u8> {
        let prefix = self.success_prefix();
        let mut frame = Vec::with_capacity(HEADER_SIZE + prefix.len() + payload.len());
        frame.extend_from_slice(&self.success_header(payload.len()));
        frame.extend_from_slice(prefix);
        frame.extend_from_slice(payload);
        frame
    }

    /// The header of a success reply whose body (`success_prefix` then
    /// `payload_len` payload bytes) the caller writes itself, e.g. a poll
    /// reply sent with vectored I/O straight from stored records.
    pub fn success_header(&self, payload_len: usize) -> [u8; HEADER_SIZE] {
        let mut header = self.header;
        header.size = frame_size_for(self.success_prefix().len() + payload_len);
        header.status = 0;
        header.encode()
    }

    /// A request rejected before it took effect: `status = code`, no body.
    pub fn denial(&self, code: ErrorCode) -> [u8; HEADER_SIZE] {
        let mut header = self.header;
        header.size = frame_size_for(0);
        header.status = code.as_u32();
        header.encode()
    }

    /// A result-framed rejection `[1][0][code]` with `status = 0`. Only
    /// valid under a result-framed operation (or Register): elsewhere the
    /// SDK would read the section as a successful payload.
    pub fn rejection(&self, code: ErrorCode) -> Vec<u8> {
        let body = result_rejection(code);
        assert!(
            reply_is_result_framed(self.header.operation, body.len()),
            "a result-section rejection under {:?} would read as success; use a status denial",
            self.header.operation
        );
        let mut header = self.header;
        header.size = frame_size_for(body.len());
        header.status = 0;
        let mut frame = Vec::with_capacity(HEADER_SIZE + body.len());
        frame.extend_from_slice(&header.encode());
        frame.extend_from_slice(&body);
        frame
    }
}

/// An eviction answering `request`. Reason 14 carries this server's
/// accepted protocol window. The request's client id must be non-zero,
/// which header rule V2 guarantees.
pub fn eviction(request: &RequestHeader, reason: EvictionReason) -> [u8; HEADER_SIZE] {
    let header = match reason {
        EvictionReason::IncompatibleProtocol => EvictionHeader::incompatible_protocol(
            request.client,
            PROTOCOL_VERSION,
            PROTOCOL_VERSION_MIN,
        ),
        _ => EvictionHeader::new(request.client, reason),
    };
    header.encode()
}

#[cfg(test)]
mod tests;
