//! Byte-level helpers every decoder and encoder builds on.
//!
//! `Reader` is a bounds-checked little-endian cursor over a borrowed buffer:
//! every read names the field it reads, so a failure says what was wrong and
//! where, and nothing it hands out outlives the buffer it borrows from.
//! `WireWrite` appends little-endian values to a `Vec<u8>`.

mod reader;
mod writer;

pub use reader::{DecodeError, KvError, Reader};
pub use writer::WireWrite;
