//! Iggy binary protocol 0.11.0: the pure codec.
//!
//! Everything here works on byte slices and owned buffers; nothing performs
//! I/O or awaits. A server reads a frame, decodes its `header`, routes it
//! with `codes`, decodes the body with `requests` (borrowing from the frame
//! buffer), and answers with a frame built by `reply` around a body encoded
//! by `responses`. Errors travel as `error::ErrorCode`. The same batch record
//! layout (`batch`) is used on the wire, in the journal and in segment
//! files, so storage depends on this crate too.
#![forbid(unsafe_code)]

pub mod batch;
pub mod checksum;
pub mod codes;
pub mod error;
pub mod header;
pub mod http_json;
pub mod kinds;
pub mod primitives;
pub mod reply;
pub mod requests;
pub mod responses;
pub mod wire;

pub use codes::CommandCode;
pub use error::ErrorCode;
pub use header::{
    Command, EvictionHeader, EvictionReason, HEADER_SIZE, Operation, ReplyHeader, RequestHeader,
    Route, route,
};
pub use wire::{DecodeError, Reader, WireWrite};

#[cfg(test)]
mod tests;
