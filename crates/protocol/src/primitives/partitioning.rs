//! Partitioning of a send (spec 8.6).
//!
//! ```text
//! kind u8 | length u8 | value
//!   1 balanced      length 0
//!   2 partition id  length 4, u32 LE
//!   3 messages key  length 1..=255, key bytes (XXH32 seed 0 mod partitions)
//! ```

use crate::wire::{DecodeError, Reader, WireWrite};

/// How the server picks the partition of a send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Partitioning<'a> {
    Balanced,
    PartitionId(u32),
    MessagesKey(&'a [u8]),
}

impl<'a> Partitioning<'a> {
    pub fn decode(r: &mut Reader<'a>) -> Result<Self, DecodeError> {
        let at = r.position();
        let kind = r.u8("partitioning kind")?;
        let len_at = r.position();
        let len = usize::from(r.u8("partitioning length")?);
        match (kind, len) {
            (1, 0) => Ok(Self::Balanced),
            (2, 4) => Ok(Self::PartitionId(r.u32("partition id")?)),
            (3, 1..) => Ok(Self::MessagesKey(r.bytes("messages key", len)?)),
            (1..=3, _) => Err(DecodeError::InvalidLength {
                field: "partitioning",
                at: len_at,
                len,
            }),
            _ => Err(DecodeError::InvalidValue {
                field: "partitioning kind",
                at,
                value: u64::from(kind),
            }),
        }
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Self::Balanced => out.put_bytes(&[1, 0]),
            Self::PartitionId(id) => {
                out.put_bytes(&[2, 4]);
                out.put_u32_le(*id);
            }
            Self::MessagesKey(key) => {
                assert!(
                    (1..=255).contains(&key.len()),
                    "a messages key must be 1..=255 bytes"
                );
                out.put_u8(3);
                out.put_u8(key.len() as u8);
                out.put_bytes(key);
            }
        }
    }

    /// The partition index for `partitions_count` partitions, for the two
    /// kinds that name one directly (Balanced needs the server's counter).
    pub fn resolve(&self, partitions_count: u32) -> Option<u32> {
        match self {
            Self::Balanced => None,
            Self::PartitionId(id) => Some(*id),
            Self::MessagesKey(key) => {
                (partitions_count > 0).then(|| crate::checksum::xxh32(key) % partitions_count)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_every_kind_when_round_tripping_should_match() {
        for partitioning in [
            Partitioning::Balanced,
            Partitioning::PartitionId(9),
            Partitioning::MessagesKey(b"key"),
        ] {
            let mut out = Vec::new();
            partitioning.encode(&mut out);
            let mut r = Reader::new(&out);
            assert_eq!(Partitioning::decode(&mut r), Ok(partitioning));
            assert!(r.finish().is_ok());
        }
    }

    #[test]
    fn given_bad_lengths_when_decoding_should_reject() {
        for bytes in [
            &[1u8, 1, 0][..],
            &[2, 3, 0, 0, 0],
            &[3, 0],
            &[4, 0],
            &[3, 2, 1],
        ] {
            assert!(
                Partitioning::decode(&mut Reader::new(bytes)).is_err(),
                "{bytes:?}"
            );
        }
    }

    #[test]
    fn given_messages_key_when_resolving_should_use_xxh32_modulo() {
        assert_eq!(
            Partitioning::MessagesKey(b"key").resolve(1000),
            Some(0xB3D9_3AE0 % 1000)
        );
        assert_eq!(Partitioning::MessagesKey(b"key").resolve(0), None);
        assert_eq!(Partitioning::PartitionId(3).resolve(1), Some(3));
    }
}
