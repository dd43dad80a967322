//! `Offset`: the position of a message in its partition's log. Offsets
//! start at 0, strictly increase and are never reused (see
//! `partition::frontier`), so one never stands in for a message count, a
//! byte size or a timestamp. Wire and disk formats carry the bare `u64`;
//! code converts with `Offset(n)` and `.0` at that boundary only.

use std::fmt;

/// A message offset within one partition.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Offset(pub u64);

impl Offset {
    pub const ZERO: Offset = Offset(0);

    /// The offset after this one.
    pub fn next(self) -> Offset {
        self.plus(1)
    }

    /// The offset `messages` messages after this one.
    pub fn plus(self, messages: u64) -> Offset {
        Offset(
            self.0
                .checked_add(messages)
                .expect("offsets never overflow"),
        )
    }

    /// The offset `messages` messages before this one, `None` below 0.
    pub fn checked_minus(self, messages: u64) -> Option<Offset> {
        self.0.checked_sub(messages).map(Offset)
    }

    /// The offset `messages` messages before this one, or 0.
    pub fn saturating_minus(self, messages: u64) -> Offset {
        Offset(self.0.saturating_sub(messages))
    }

    /// How many offsets lie in `start..self`; `start` must not be after it.
    pub fn messages_since(self, start: Offset) -> u64 {
        assert!(start <= self, "{start} is after {self}");
        self.0 - start.0
    }
}

/// The bare number, honouring width and fill (segment file names pad it).
impl fmt::Display for Offset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_offsets_when_stepping_should_count_messages_between_them() {
        let base = Offset(10);
        assert_eq!(base.next(), Offset(11));
        assert_eq!(base.plus(5).messages_since(base), 5);
        assert_eq!(base.checked_minus(10), Some(Offset::ZERO));
        assert_eq!(base.checked_minus(11), None);
        assert_eq!(base.saturating_minus(11), Offset::ZERO);
        assert_eq!(format!("{:05}", base), "00010");
    }

    #[test]
    #[should_panic(expected = "offsets never overflow")]
    fn given_the_largest_offset_when_stepping_should_panic() {
        Offset(u64::MAX).next();
    }

    #[test]
    #[should_panic(expected = "is after")]
    fn given_a_later_start_when_counting_should_panic() {
        Offset(1).messages_since(Offset(2));
    }
}
