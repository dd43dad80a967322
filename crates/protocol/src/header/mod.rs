//! The three 256-byte consensus headers clients see (spec 4): the request a
//! client sends, and the reply or eviction a server answers with.
//!
//! Every frame is one header followed by `size - 256` body bytes, where
//! `size` is the `u32` at byte 48. A receiver reads 256 bytes, checks the
//! size with [`check_frame_size`], reads the body, then decodes and
//! validates the header (`RequestHeader::validate`, rules V1..V6). The
//! headers are plain structs decoded by offset, so receive buffers need no
//! alignment. Each layout is documented once, beside its struct.

mod common;
mod eviction;
mod reply;
mod request;
mod route;

pub use crate::kinds::{Command, Operation, reply_is_result_framed};
pub use eviction::{EvictionHeader, EvictionReason};
pub use reply::ReplyHeader;
pub use request::RequestHeader;
pub use route::{Route, route};

/// Every consensus header is exactly this long.
pub const HEADER_SIZE: usize = 256;
/// Byte offset of the `u32` frame size shared by every header.
pub const SIZE_OFFSET: usize = 48;
/// Byte offset of the command byte shared by every header.
pub const COMMAND_OFFSET: usize = 60;
/// The reference server's default frame ceiling (64 MiB), header included.
pub const MAX_FRAME_SIZE_DEFAULT: u32 = 64 * 1024 * 1024;

const _: () = assert!(SIZE_OFFSET + 4 <= COMMAND_OFFSET);
const _: () = assert!(MAX_FRAME_SIZE_DEFAULT as usize > HEADER_SIZE);

/// Why a header (or the frame it announces) is not acceptable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error("header needs {HEADER_SIZE} bytes, got {len}")]
    TooShort { len: usize },
    #[error("unknown command byte {value}")]
    UnknownCommand { value: u8 },
    #[error("unknown operation byte {value}")]
    UnknownOperation { value: u8 },
    #[error("unknown eviction reason {value}")]
    UnknownEvictionReason { value: u8 },
    #[error("frame size {size} outside {HEADER_SIZE}..={max}")]
    FrameSize { size: u32, max: u32 },
    #[error("expected a {expected:?} header, found {found:?}")]
    UnexpectedCommand { expected: Command, found: Command },
    #[error("V2: client id is zero")]
    ZeroClient,
    #[error("V3: operation {operation:?} may not be sent by a client")]
    OperationNotAllowed { operation: Operation },
    #[error("V4: register must carry session 0 and request 0, got {session} / {request}")]
    RegisterWithIdentity { session: u64, request: u64 },
    #[error("V5: {operation:?} needs session > 0 and request > 0, got {session} / {request}")]
    MissingSession {
        operation: Operation,
        session: u64,
        request: u64,
    },
    #[error("V6: header announces {size} bytes but the frame holds {actual}")]
    FrameLength { size: u32, actual: usize },
    #[error("eviction: {rule}")]
    InvalidEviction { rule: &'static str },
}

/// The frame size announced at byte 48, if `header` reaches that far.
pub fn frame_size(header: &[u8]) -> Option<u32> {
    let bytes = header.get(SIZE_OFFSET..SIZE_OFFSET + 4)?;
    Some(u32::from_le_bytes(bytes.try_into().ok()?))
}

/// Checks an announced frame size against `256..=max_frame` (spec 3.1) and
/// returns the body length still to read.
pub fn check_frame_size(size: u32, max_frame: u32) -> Result<usize, HeaderError> {
    if (size as usize) < HEADER_SIZE || size > max_frame {
        return Err(HeaderError::FrameSize {
            size,
            max: max_frame,
        });
    }
    Ok(size as usize - HEADER_SIZE)
}

/// The total frame size for a body of `body_len` bytes.
pub fn frame_size_for(body_len: usize) -> u32 {
    u32::try_from(HEADER_SIZE + body_len).expect("frame bodies are bounded far below 4 GiB")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_sizes_when_checking_frame_should_enforce_bounds() {
        assert_eq!(check_frame_size(256, MAX_FRAME_SIZE_DEFAULT), Ok(0));
        assert_eq!(check_frame_size(290, MAX_FRAME_SIZE_DEFAULT), Ok(34));
        assert!(check_frame_size(255, MAX_FRAME_SIZE_DEFAULT).is_err());
        assert!(check_frame_size(MAX_FRAME_SIZE_DEFAULT + 1, MAX_FRAME_SIZE_DEFAULT).is_err());
        assert_eq!(
            check_frame_size(MAX_FRAME_SIZE_DEFAULT, MAX_FRAME_SIZE_DEFAULT),
            Ok(67_108_864 - 256)
        );
    }

    #[test]
    fn given_header_bytes_when_reading_size_should_use_offset_48() {
        let mut header = [0u8; HEADER_SIZE];
        header[48..52].copy_from_slice(&0x122u32.to_le_bytes());
        assert_eq!(frame_size(&header), Some(290));
        assert_eq!(frame_size(&header[..51]), None);
        assert_eq!(
            iggy_binary_protocol::read_size_field(&header),
            frame_size(&header)
        );
    }
}
