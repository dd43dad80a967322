//! WireName: a `u8` length (1..=255) then that many UTF-8 bytes (spec 8.1).

use crate::wire::{DecodeError, Reader, WireWrite};

/// The longest name the `u8` length prefix allows.
pub const MAX_NAME_LEN: usize = 255;

/// A borrowed, validated name: 1..=255 bytes of UTF-8.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WireName<'a>(&'a str);

impl<'a> WireName<'a> {
    /// `Some` when `value` is 1..=255 bytes long.
    pub fn new(value: &'a str) -> Option<Self> {
        (1..=MAX_NAME_LEN)
            .contains(&value.len())
            .then_some(Self(value))
    }

    pub fn decode(r: &mut Reader<'a>, field: &'static str) -> Result<Self, DecodeError> {
        let at = r.position();
        let len = usize::from(r.u8(field)?);
        if len == 0 {
            return Err(DecodeError::InvalidLength { field, at, len });
        }
        r.str(field, len).map(Self)
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        put_name(out, self.0);
    }

    pub fn as_str(&self) -> &'a str {
        self.0
    }
}

/// Appends `name` as a WireName. Names reaching an encoder were validated
/// when they entered the system, so a bad length is a programming error.
pub fn put_name(out: &mut Vec<u8>, name: &str) {
    assert!(
        (1..=MAX_NAME_LEN).contains(&name.len()),
        "a wire name must be 1..=255 bytes, got {}",
        name.len()
    );
    out.put_u8(name.len() as u8);
    out.put_bytes(name.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_names_of_every_valid_length_when_round_tripping_should_match() {
        for len in [1, 2, 254, 255] {
            let text = "x".repeat(len);
            let mut out = Vec::new();
            WireName::new(&text).unwrap().encode(&mut out);
            assert_eq!(out.len(), len + 1);
            let mut r = Reader::new(&out);
            assert_eq!(WireName::decode(&mut r, "n").unwrap().as_str(), text);
            assert!(r.finish().is_ok());
        }
    }

    #[test]
    fn given_invalid_names_when_constructing_or_decoding_should_reject() {
        assert!(WireName::new("").is_none());
        assert!(WireName::new(&"x".repeat(256)).is_none());
        assert!(WireName::decode(&mut Reader::new(&[0]), "n").is_err());
        assert!(WireName::decode(&mut Reader::new(&[3, b'a', b'b']), "n").is_err());
        assert!(WireName::decode(&mut Reader::new(&[1, 0xff]), "n").is_err());
    }
}
