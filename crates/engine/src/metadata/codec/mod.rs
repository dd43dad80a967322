//! Binary encodings of metadata operations (the journal) and of the whole
//! state (the snapshot). Compact, versioned, little-endian; checksums and
//! framing are the storage layer's job.
//!
//! Primitives shared by both (all integers little-endian):
//!
//! | name           | layout |
//! |----------------|--------|
//! | `u8`..`u128`   | fixed width |
//! | `bool`         | `u8` 0 or 1 (anything else is rejected) |
//! | `str`          | `u16` byte length, UTF-8 bytes |
//! | `opt<T>`       | `u8` 0 = absent, or `u8` 1 then `T` |
//! | `vec<T>`       | `u32` count, then `T` × count |
//! | `ident`        | `u8` 1 + `u32` id, or `u8` 2 + `str` name |
//! | `option_entry` | `str` key, `u8` kind (1..=15), `u32` length, value bytes |
//! | `permissions`  | `u16` global flag bits (bit i = i-th flag in wire order), `vec<stream>`; stream = `u32` id, `u8` flag bits, `vec<topic>`; topic = `u32` id, `u8` flag bits |
//! | `user_status`  | `u8` 1 active, 2 inactive |
//! | `transport`    | `u8` 1 tcp, 2 quic, 3 http, 4 websocket |
//!
//! Operations: see [`op`]; snapshots: see [`snapshot`].

pub mod op;
mod primitives;
pub mod snapshot;

pub use primitives::CodecError;
