//! `ByteSize`: a number of bytes written as an integer or as a string with
//! an SI unit (`KB`, `MB`, ... = powers of 1000) or a binary unit (`KiB`,
//! `MiB`, ... = powers of 1024). Units are case-insensitive; the `i` alone
//! tells the families apart. `"none"`/`"unlimited"`/`"disabled"` mean zero.
//! The canonical form uses the largest unit that divides the value exactly
//! (`"64 MiB"`, `"2 MB"`, `"1200 B"`).

use std::fmt;

use super::{ConfigText, ParseValueError, split_number, text_serde};

const EXPECTED: &str = "a byte count or a size such as \"1200 B\", \"2 MB\" (SI, powers of 1000) \
     or \"64 MiB\" (binary, powers of 1024)";

/// Words that stand for zero bytes.
const ZERO_ALIASES: [&str; 3] = ["none", "unlimited", "disabled"];

const KB: u64 = 1_000;
const KIB: u64 = 1_024;

/// Units, largest first, so the canonical form picks the coarsest exact one.
const UNITS: [(&str, u64); 11] = [
    ("PiB", KIB * KIB * KIB * KIB * KIB),
    ("PB", KB * KB * KB * KB * KB),
    ("TiB", KIB * KIB * KIB * KIB),
    ("TB", KB * KB * KB * KB),
    ("GiB", KIB * KIB * KIB),
    ("GB", KB * KB * KB),
    ("MiB", KIB * KIB),
    ("MB", KB * KB),
    ("KiB", KIB),
    ("KB", KB),
    ("B", 1),
];

/// A size in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSize(u64);

impl ByteSize {
    pub const ZERO: Self = Self(0);

    pub const fn new(bytes: u64) -> Self {
        Self(bytes)
    }

    pub const fn kib(count: u64) -> Self {
        Self(count * KIB)
    }

    pub const fn mib(count: u64) -> Self {
        Self(count * KIB * KIB)
    }

    pub const fn gib(count: u64) -> Self {
        Self(count * KIB * KIB * KIB)
    }

    pub const fn as_bytes(self) -> u64 {
        self.0
    }

    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }
}

impl ConfigText for ByteSize {
    const EXPECTED: &'static str = EXPECTED;

    fn from_text(text: &str) -> Result<Self, ParseValueError> {
        let trimmed = text.trim();
        if ZERO_ALIASES
            .iter()
            .any(|alias| trimmed.eq_ignore_ascii_case(alias))
        {
            return Ok(Self::ZERO);
        }
        let (number, unit) = split_number(trimmed);
        if number.is_empty() {
            return Err(ParseValueError::new(text, "expected a number", EXPECTED));
        }
        let multiplier = if unit.is_empty() {
            1
        } else {
            unit_multiplier(unit).ok_or_else(|| {
                ParseValueError::new(text, format!("unknown size unit {unit:?}"), EXPECTED)
            })?
        };
        scale(number, multiplier)
            .map(Self)
            .map_err(|reason| ParseValueError::new(text, reason, EXPECTED))
    }

    fn from_integer(value: i64) -> Result<Self, ParseValueError> {
        u64::try_from(value)
            .map(Self)
            .map_err(|_| ParseValueError::new(&value.to_string(), "negative size", EXPECTED))
    }
}

text_serde!(ByteSize);

fn unit_multiplier(unit: &str) -> Option<u64> {
    UNITS
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(unit))
        .map(|(_, multiplier)| *multiplier)
}

/// Multiplies a decimal number such as `1.5` by a unit exactly; the result
/// must be a whole number of bytes.
fn scale(number: &str, multiplier: u64) -> Result<u64, &'static str> {
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() || fraction.contains('.') {
        return Err("malformed number");
    }
    let digits: u128 = format!("{whole}{fraction}")
        .parse()
        .map_err(|_| "number too large")?;
    let denominator = 10u128
        .checked_pow(u32::try_from(fraction.len()).map_err(|_| "malformed number")?)
        .ok_or("malformed number")?;
    let scaled = digits
        .checked_mul(u128::from(multiplier))
        .ok_or("size too large")?;
    if scaled % denominator != 0 {
        return Err("not a whole number of bytes");
    }
    u64::try_from(scaled / denominator).map_err(|_| "size too large")
}

impl fmt::Display for ByteSize {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (name, multiplier) = UNITS
            .iter()
            .find(|(_, multiplier)| self.0 != 0 && self.0.is_multiple_of(*multiplier))
            .copied()
            .unwrap_or(("B", 1));
        write!(formatter, "{} {name}", self.0 / multiplier)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<u64, ParseValueError> {
        text.parse::<ByteSize>().map(ByteSize::as_bytes)
    }

    #[test]
    fn given_sizes_when_parsing_should_apply_si_and_binary_units() {
        let cases = [
            ("2 MB", 2_000_000),
            ("64 MiB", 67_108_864),
            ("1200 B", 1_200),
            ("4 GiB", 4_294_967_296),
            ("4 GB", 4_000_000_000),
            ("500 MB", 500_000_000),
            ("16MiB", 16_777_216),
            ("2176 MiB", 2_281_701_376),
            ("1 KB", 1_000),
            ("1 kib", 1_024),
            ("1 TiB", 1_099_511_627_776),
            ("1.5 KiB", 1_536),
            ("4096", 4_096),
            (" 7 ", 7),
            ("0", 0),
            ("none", 0),
            ("unlimited", 0),
        ];
        for (text, bytes) in cases {
            assert_eq!(parse(text), Ok(bytes), "parsing {text:?}");
        }
    }

    #[test]
    fn given_malformed_sizes_when_parsing_should_explain_why() {
        let cases = [
            ("", "expected a number"),
            ("MB", "expected a number"),
            ("12 parsecs", "unknown size unit \"parsecs\""),
            ("1.0001 KB", "not a whole number of bytes"),
            ("1.2.3 KB", "malformed number"),
            ("99999999 PiB", "size too large"),
            ("-5 B", "expected a number"),
        ];
        for (text, reason) in cases {
            assert_eq!(
                parse(text).expect_err(text).reason,
                reason,
                "parsing {text:?}"
            );
        }
        assert!(ByteSize::from_integer(-1).is_err());
    }

    #[test]
    fn given_sizes_when_formatting_should_pick_largest_exact_unit() {
        let cases = [
            (0, "0 B"),
            (1_200, "1200 B"),
            (2_000_000, "2 MB"),
            (67_108_864, "64 MiB"),
            (2_281_701_376, "2176 MiB"),
            (4_294_967_296, "4 GiB"),
            (4_000_000_000, "4 GB"),
        ];
        for (bytes, text) in cases {
            assert_eq!(ByteSize::new(bytes).to_string(), text);
            assert_eq!(parse(text), Ok(bytes));
        }
    }
}
