//! The optional partition id (spec 8.4) and the polling strategy (8.5).
//!
//! ```text
//! optional partition = flag u8 (1 present, 0 absent) | partition_id u32 (0 when absent)
//! polling strategy   = kind u8 (1 offset, 2 timestamp, 3 first, 4 last, 5 next) | value u64
//! ```

use crate::wire::{DecodeError, Reader, WireWrite};

/// Reads the 5-byte optional partition id. The id is ignored when absent.
pub fn read_optional_partition(r: &mut Reader<'_>) -> Result<Option<u32>, DecodeError> {
    let present = r.flag("partition flag")?;
    let id = r.u32("partition id")?;
    Ok(present.then_some(id))
}

pub fn put_optional_partition(out: &mut Vec<u8>, partition: Option<u32>) {
    out.put_bool(partition.is_some());
    out.put_u32_le(partition.unwrap_or(0));
}

/// Where a poll starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PollingStrategy {
    Offset(u64),
    /// Microseconds: the first batch appended at or after this time.
    Timestamp(u64),
    First,
    Last,
    Next,
}

impl PollingStrategy {
    pub fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let at = r.position();
        let kind = r.u8("polling kind")?;
        let value = r.u64("polling value")?;
        match kind {
            1 => Ok(Self::Offset(value)),
            2 => Ok(Self::Timestamp(value)),
            3 => Ok(Self::First),
            4 => Ok(Self::Last),
            5 => Ok(Self::Next),
            other => Err(DecodeError::InvalidValue {
                field: "polling kind",
                at,
                value: u64::from(other),
            }),
        }
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        let (kind, value) = match *self {
            Self::Offset(value) => (1, value),
            Self::Timestamp(value) => (2, value),
            Self::First => (3, 0),
            Self::Last => (4, 0),
            Self::Next => (5, 0),
        };
        out.put_u8(kind);
        out.put_u64_le(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_optional_partitions_when_round_tripping_should_match() {
        for partition in [None, Some(0), Some(7), Some(u32::MAX)] {
            let mut out = Vec::new();
            put_optional_partition(&mut out, partition);
            assert_eq!(out.len(), 5);
            assert_eq!(
                read_optional_partition(&mut Reader::new(&out)),
                Ok(partition)
            );
        }
        assert!(read_optional_partition(&mut Reader::new(&[2, 0, 0, 0, 0])).is_err());
    }

    #[test]
    fn given_every_strategy_when_round_tripping_should_match() {
        let all = [
            PollingStrategy::Offset(5),
            PollingStrategy::Timestamp(u64::MAX),
            PollingStrategy::First,
            PollingStrategy::Last,
            PollingStrategy::Next,
        ];
        for strategy in all {
            let mut out = Vec::new();
            strategy.encode(&mut out);
            assert_eq!(out.len(), 9);
            assert_eq!(
                PollingStrategy::decode(&mut Reader::new(&out)),
                Ok(strategy)
            );
        }
        assert!(PollingStrategy::decode(&mut Reader::new(&[6, 0, 0, 0, 0, 0, 0, 0, 0])).is_err());
    }
}
