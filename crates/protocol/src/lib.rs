//! Iggy binary protocol 0.11.0: the pure codec.
//!
//! Everything here works on byte slices and owned buffers; nothing performs
//! I/O or awaits. The same batch record layout (`batch`) is used on the wire,
//! in the journal and in segment files, so storage depends on this crate too.

pub mod batch;
pub mod checksum;
