//! A bounds-checked cursor over a borrowed byte slice.

use crate::error::ErrorCode;

/// Why a body (or part of one) could not be decoded.
///
/// Offsets are relative to the buffer the failing `Reader` was made over.
/// Every variant means the request is malformed, so the server answers it
/// with `InvalidCommand` (see [`DecodeError::error_code`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("{field}: needs {need} bytes at offset {at}, only {have} left")]
    Truncated {
        field: &'static str,
        at: usize,
        need: usize,
        have: usize,
    },
    #[error("{extra} unexpected trailing bytes at offset {at}")]
    TrailingBytes { at: usize, extra: usize },
    #[error("{field} at offset {at} is not valid UTF-8")]
    InvalidUtf8 { field: &'static str, at: usize },
    #[error("{field} at offset {at} has invalid length {len}")]
    InvalidLength {
        field: &'static str,
        at: usize,
        len: usize,
    },
    #[error("{field} at offset {at} has invalid value {value}")]
    InvalidValue {
        field: &'static str,
        at: usize,
        value: u64,
    },
    #[error("{field} declares {declared} bytes but {actual} were decoded")]
    LengthMismatch {
        field: &'static str,
        declared: usize,
        actual: usize,
    },
    #[error("{field} is not a valid key/value block: {source}")]
    KeyValue {
        field: &'static str,
        source: KvError,
    },
}

impl DecodeError {
    /// The status a server answers an undecodable request with.
    pub fn error_code(&self) -> ErrorCode {
        ErrorCode::InvalidCommand
    }
}

/// A little-endian cursor. Reads advance it only when they succeed.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes not yet consumed.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The next `len` bytes.
    pub fn bytes(&mut self, field: &'static str, len: usize) -> Result<&'a [u8], DecodeError> {
        let have = self.remaining();
        if len > have {
            return Err(DecodeError::Truncated {
                field,
                at: self.pos,
                need: len,
                have,
            });
        }
        let out = &self.buf[self.pos..self.pos + len];
        self.pos += len;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], DecodeError> {
        let bytes = self.bytes(field, N)?;
        Ok(bytes.try_into().expect("bytes() returned exactly N bytes"))
    }

    pub fn u8(&mut self, field: &'static str) -> Result<u8, DecodeError> {
        Ok(self.array::<1>(field)?[0])
    }

    pub fn u16(&mut self, field: &'static str) -> Result<u16, DecodeError> {
        self.array(field).map(u16::from_le_bytes)
    }

    pub fn u32(&mut self, field: &'static str) -> Result<u32, DecodeError> {
        self.array(field).map(u32::from_le_bytes)
    }

    pub fn u64(&mut self, field: &'static str) -> Result<u64, DecodeError> {
        self.array(field).map(u64::from_le_bytes)
    }

    pub fn u128(&mut self, field: &'static str) -> Result<u128, DecodeError> {
        self.array(field).map(u128::from_le_bytes)
    }

    pub fn f32(&mut self, field: &'static str) -> Result<f32, DecodeError> {
        self.array(field).map(f32::from_le_bytes)
    }

    /// A strict boolean byte: 0 or 1, anything else is an error.
    pub fn flag(&mut self, field: &'static str) -> Result<bool, DecodeError> {
        let at = self.pos;
        match self.u8(field)? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(DecodeError::InvalidValue {
                field,
                at,
                value: u64::from(other),
            }),
        }
    }

    /// `len` bytes of UTF-8.
    pub fn str(&mut self, field: &'static str, len: usize) -> Result<&'a str, DecodeError> {
        let at = self.pos;
        let bytes = self.bytes(field, len)?;
        std::str::from_utf8(bytes).map_err(|_| {
            self.pos = at;
            DecodeError::InvalidUtf8 { field, at }
        })
    }

    /// A `u8`-length-prefixed UTF-8 string; the length may be zero.
    pub fn u8_str(&mut self, field: &'static str) -> Result<&'a str, DecodeError> {
        let len = self.u8(field)?;
        self.str(field, usize::from(len))
    }

    /// A `u32`-length-prefixed UTF-8 string; the length may be zero.
    pub fn u32_str(&mut self, field: &'static str) -> Result<&'a str, DecodeError> {
        let len = self.u32(field)?;
        self.str(field, len as usize)
    }

    /// Everything not yet consumed.
    pub fn rest(&mut self) -> &'a [u8] {
        let out = &self.buf[self.pos..];
        self.pos = self.buf.len();
        out
    }

    /// Succeeds only when every byte was consumed.
    pub fn finish(&self) -> Result<(), DecodeError> {
        match self.remaining() {
            0 => Ok(()),
            extra => Err(DecodeError::TrailingBytes {
                at: self.pos,
                extra,
            }),
        }
    }
}

/// Why a key/value block is malformed. Offsets are within the block.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KvError {
    #[error("block of {len} bytes exceeds {max}")]
    TooLarge { len: usize, max: usize },
    #[error("field kind at offset {at} is zero")]
    ZeroKind { at: usize },
    #[error("field length {len} at offset {at} is outside 1..=255")]
    FieldLength { at: usize, len: u64 },
    #[error("field at offset {at} overruns the block")]
    Overrun { at: usize },
    #[error("{fields} fields do not form key/value pairs")]
    OddFieldCount { fields: usize },
    #[error("{pairs} pairs exceed {max}")]
    TooManyPairs { pairs: usize, max: usize },
    #[error("option key at offset {at} is not a UTF-8 string")]
    KeyNotString { at: usize },
    #[error("option key at offset {at} appears twice")]
    DuplicateKey { at: usize },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_short_buffer_when_reading_u32_should_report_truncation_and_not_advance() {
        let mut r = Reader::new(&[1, 2, 3]);
        assert_eq!(
            r.u32("x"),
            Err(DecodeError::Truncated {
                field: "x",
                at: 0,
                need: 4,
                have: 3
            })
        );
        assert_eq!(r.position(), 0);
        assert_eq!(r.u16("y"), Ok(0x0201));
    }

    #[test]
    fn given_mixed_fields_when_reading_should_decode_little_endian() {
        let mut bytes = vec![7u8];
        bytes.extend_from_slice(&0x0102_0304u32.to_le_bytes());
        bytes.extend_from_slice(&u64::MAX.to_le_bytes());
        bytes.extend_from_slice(&(1u128 << 100).to_le_bytes());
        let mut r = Reader::new(&bytes);
        assert_eq!(r.u8("a"), Ok(7));
        assert_eq!(r.u32("b"), Ok(0x0102_0304));
        assert_eq!(r.u64("c"), Ok(u64::MAX));
        assert_eq!(r.u128("d"), Ok(1u128 << 100));
        assert!(r.finish().is_ok());
    }

    #[test]
    fn given_flag_byte_two_when_reading_flag_should_reject() {
        let mut r = Reader::new(&[2]);
        assert_eq!(
            r.flag("f"),
            Err(DecodeError::InvalidValue {
                field: "f",
                at: 0,
                value: 2
            })
        );
    }

    #[test]
    fn given_invalid_utf8_when_reading_str_should_reject() {
        let mut r = Reader::new(&[2, 0xff, 0xfe]);
        assert_eq!(
            r.u8_str("s"),
            Err(DecodeError::InvalidUtf8 { field: "s", at: 1 })
        );
    }

    #[test]
    fn given_unread_bytes_when_finishing_should_report_trailing() {
        let mut r = Reader::new(&[1, 2]);
        r.u8("a").unwrap();
        assert_eq!(
            r.finish(),
            Err(DecodeError::TrailingBytes { at: 1, extra: 1 })
        );
    }
}
