//! Identifier (spec 8.2) and Consumer (spec 8.3).
//!
//! ```text
//! identifier = kind u8 (1 numeric, 2 string) | length u8 | value
//!              numeric: length 4, u32 LE id; string: length 1..=255, UTF-8
//! consumer   = kind u8 (1 consumer, 2 consumer group) | identifier
//! ```

use crate::wire::{DecodeError, Reader, WireWrite};

const KIND_NUMERIC: u8 = 1;
const KIND_STRING: u8 = 2;

/// A stream, topic, group, user or consumer id: by number or by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Identifier<'a> {
    Numeric(u32),
    Name(&'a str),
}

impl<'a> Identifier<'a> {
    pub fn decode(r: &mut Reader<'a>, field: &'static str) -> Result<Self, DecodeError> {
        let at = r.position();
        let kind = r.u8(field)?;
        let len_at = r.position();
        let len = usize::from(r.u8(field)?);
        match kind {
            KIND_NUMERIC if len == 4 => Ok(Self::Numeric(r.u32(field)?)),
            KIND_STRING if len > 0 => Ok(Self::Name(r.str(field, len)?)),
            KIND_NUMERIC | KIND_STRING => Err(DecodeError::InvalidLength {
                field,
                at: len_at,
                len,
            }),
            _ => Err(DecodeError::InvalidValue {
                field,
                at,
                value: u64::from(kind),
            }),
        }
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Self::Numeric(id) => {
                out.put_u8(KIND_NUMERIC);
                out.put_u8(4);
                out.put_u32_le(*id);
            }
            Self::Name(name) => {
                out.put_u8(KIND_STRING);
                crate::primitives::put_name(out, name);
            }
        }
    }

    /// Bytes `encode` writes.
    pub fn encoded_len(&self) -> usize {
        match self {
            Self::Numeric(_) => 6,
            Self::Name(name) => 2 + name.len(),
        }
    }
}

/// Whose offsets a poll or offset request is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ConsumerKind {
    Consumer = 1,
    ConsumerGroup = 2,
}

/// A consumer: an individual consumer or a consumer group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Consumer<'a> {
    pub kind: ConsumerKind,
    pub id: Identifier<'a>,
}

impl<'a> Consumer<'a> {
    pub fn decode(r: &mut Reader<'a>) -> Result<Self, DecodeError> {
        let at = r.position();
        let kind = match r.u8("consumer kind")? {
            1 => ConsumerKind::Consumer,
            2 => ConsumerKind::ConsumerGroup,
            other => {
                return Err(DecodeError::InvalidValue {
                    field: "consumer kind",
                    at,
                    value: u64::from(other),
                });
            }
        };
        Ok(Self {
            kind,
            id: Identifier::decode(r, "consumer id")?,
        })
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.put_u8(self.kind as u8);
        self.id.encode(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(id: Identifier<'_>) {
        let mut out = Vec::new();
        id.encode(&mut out);
        assert_eq!(out.len(), id.encoded_len());
        let mut r = Reader::new(&out);
        assert_eq!(Identifier::decode(&mut r, "id"), Ok(id));
        assert!(r.finish().is_ok());
    }

    #[test]
    fn given_identifiers_when_round_tripping_should_match() {
        round_trip(Identifier::Numeric(0));
        round_trip(Identifier::Numeric(u32::MAX));
        round_trip(Identifier::Name("s"));
        round_trip(Identifier::Name(&"n".repeat(255)));
    }

    #[test]
    fn given_spec_examples_when_encoding_should_match_bytes() {
        let mut out = Vec::new();
        Identifier::Numeric(0).encode(&mut out);
        Identifier::Name("s").encode(&mut out);
        assert_eq!(out, [1, 4, 0, 0, 0, 0, 2, 1, 0x73]);
    }

    #[test]
    fn given_bad_identifiers_when_decoding_should_reject() {
        for bytes in [
            &[1u8, 3, 0, 0, 0][..],
            &[2, 0],
            &[3, 1, b'a'],
            &[2, 1, 0xff],
            &[1, 4, 0],
        ] {
            assert!(
                Identifier::decode(&mut Reader::new(bytes), "id").is_err(),
                "{bytes:?}"
            );
        }
    }

    #[test]
    fn given_consumers_when_round_tripping_should_match() {
        for consumer in [
            Consumer {
                kind: ConsumerKind::Consumer,
                id: Identifier::Numeric(1),
            },
            Consumer {
                kind: ConsumerKind::ConsumerGroup,
                id: Identifier::Name("g"),
            },
        ] {
            let mut out = Vec::new();
            consumer.encode(&mut out);
            assert_eq!(Consumer::decode(&mut Reader::new(&out)), Ok(consumer));
        }
        assert!(Consumer::decode(&mut Reader::new(&[3, 1, 4, 0, 0, 0, 0])).is_err());
    }
}
