//! Library half of the iggy-server crate; the binary in `main.rs` builds on it.

pub mod cluster;
pub mod config;
pub mod notify;
