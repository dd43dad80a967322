//! `ConfigDuration`: humantime-style durations such as `"30 s"`, `"1h 30m"`,
//! `"500ms"` or `"7 days"`. `"0"`, `"none"`, `"unlimited"` and `"disabled"`
//! mean zero; the keys that must be non-zero refuse zero in validation.
//! The canonical form chains units from days down to nanoseconds (`"1h 30m"`).

use std::fmt;
use std::time::Duration;

use super::{ConfigText, ParseValueError, text_serde};

const EXPECTED: &str = "a duration such as \"30 s\", \"1h 30m\", \"500 ms\" or \"7 days\" \
     (units ns, us, ms, s, m, h, d, w, months, y; \"0\", \"none\", \"unlimited\" or \"disabled\" mean zero)";

/// Words that stand for a zero duration.
const ZERO_ALIASES: [&str; 4] = ["0", "none", "unlimited", "disabled"];

const NANOS_PER_SECOND: u128 = 1_000_000_000;
const SECONDS_PER_MINUTE: u128 = 60;
const SECONDS_PER_HOUR: u128 = 3_600;
const SECONDS_PER_DAY: u128 = 86_400;
const SECONDS_PER_WEEK: u128 = 604_800;
/// A month and a year are 30.44 and 365.25 days, as in humantime.
const SECONDS_PER_MONTH: u128 = 2_630_016;
const SECONDS_PER_YEAR: u128 = 31_557_600;

/// Unit spellings (case-sensitive: `m` is minutes, `M` is months) and their
/// length in nanoseconds.
const UNITS: [(&[&str], u128); 10] = [
    (&["nsec", "ns"], 1),
    (&["usec", "us", "µs"], 1_000),
    (&["msec", "ms"], 1_000_000),
    (&["seconds", "second", "secs", "sec", "s"], NANOS_PER_SECOND),
    (
        &["minutes", "minute", "mins", "min", "m"],
        SECONDS_PER_MINUTE * NANOS_PER_SECOND,
    ),
    (
        &["hours", "hour", "hrs", "hr", "h"],
        SECONDS_PER_HOUR * NANOS_PER_SECOND,
    ),
    (&["days", "day", "d"], SECONDS_PER_DAY * NANOS_PER_SECOND),
    (&["weeks", "week", "w"], SECONDS_PER_WEEK * NANOS_PER_SECOND),
    (
        &["months", "month", "M"],
        SECONDS_PER_MONTH * NANOS_PER_SECOND,
    ),
    (&["years", "year", "y"], SECONDS_PER_YEAR * NANOS_PER_SECOND),
];

/// Units used by the canonical form, largest first.
const CANONICAL_UNITS: [(&str, u128); 7] = [
    ("d", SECONDS_PER_DAY * NANOS_PER_SECOND),
    ("h", SECONDS_PER_HOUR * NANOS_PER_SECOND),
    ("m", SECONDS_PER_MINUTE * NANOS_PER_SECOND),
    ("s", NANOS_PER_SECOND),
    ("ms", 1_000_000),
    ("us", 1_000),
    ("ns", 1),
];

/// A configured span of time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConfigDuration(Duration);

impl ConfigDuration {
    pub const ZERO: Self = Self(Duration::ZERO);

    pub const fn new(duration: Duration) -> Self {
        Self(duration)
    }

    pub const fn from_secs(seconds: u64) -> Self {
        Self(Duration::from_secs(seconds))
    }

    pub const fn from_millis(millis: u64) -> Self {
        Self(Duration::from_millis(millis))
    }

    pub const fn get(self) -> Duration {
        self.0
    }

    pub const fn is_zero(self) -> bool {
        self.0.is_zero()
    }
}

impl From<Duration> for ConfigDuration {
    fn from(duration: Duration) -> Self {
        Self(duration)
    }
}

impl From<ConfigDuration> for Duration {
    fn from(duration: ConfigDuration) -> Self {
        duration.0
    }
}

impl ConfigText for ConfigDuration {
    const EXPECTED: &'static str = EXPECTED;

    fn from_text(text: &str) -> Result<Self, ParseValueError> {
        parse_duration(text, EXPECTED).map(Self)
    }

    fn from_integer(value: i64) -> Result<Self, ParseValueError> {
        if value == 0 {
            return Ok(Self::ZERO);
        }
        Err(ParseValueError::new(
            &value.to_string(),
            "a non-zero duration needs a unit",
            EXPECTED,
        ))
    }
}

text_serde!(ConfigDuration);

/// Parses a humantime-style duration; shared with [`super::TokenExpiry`].
pub(crate) fn parse_duration(
    text: &str,
    expected: &'static str,
) -> Result<Duration, ParseValueError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(ParseValueError::new(text, "empty duration", expected));
    }
    if ZERO_ALIASES
        .iter()
        .any(|alias| trimmed.eq_ignore_ascii_case(alias))
    {
        return Ok(Duration::ZERO);
    }
    let mut total_nanos: u128 = 0;
    let mut rest = trimmed;
    while !rest.is_empty() {
        let digits_end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits_end == 0 {
            return Err(ParseValueError::new(text, "expected a number", expected));
        }
        let amount: u128 = rest[..digits_end]
            .parse()
            .map_err(|_| ParseValueError::new(text, "number too large", expected))?;
        rest = rest[digits_end..].trim_start();
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c.is_whitespace())
            .unwrap_or(rest.len());
        let unit = &rest[..unit_end];
        if unit.is_empty() {
            return Err(ParseValueError::new(text, "missing time unit", expected));
        }
        let unit_nanos = unit_nanos(unit).ok_or_else(|| {
            ParseValueError::new(text, format!("unknown time unit {unit:?}"), expected)
        })?;
        total_nanos = amount
            .checked_mul(unit_nanos)
            .and_then(|nanos| total_nanos.checked_add(nanos))
            .ok_or_else(|| ParseValueError::new(text, "duration too large", expected))?;
        rest = rest[unit_end..].trim_start();
    }
    nanos_to_duration(total_nanos)
        .ok_or_else(|| ParseValueError::new(text, "duration too large", expected))
}

fn unit_nanos(unit: &str) -> Option<u128> {
    UNITS
        .iter()
        .find(|(names, _)| names.contains(&unit))
        .map(|(_, nanos)| *nanos)
}

fn nanos_to_duration(nanos: u128) -> Option<Duration> {
    let seconds = u64::try_from(nanos / NANOS_PER_SECOND).ok()?;
    let subsec = u32::try_from(nanos % NANOS_PER_SECOND).ok()?;
    Some(Duration::new(seconds, subsec))
}

/// Writes the canonical form, e.g. `1h 30m`, `500ms`, `0s`.
pub(crate) fn format_duration(
    duration: Duration,
    formatter: &mut fmt::Formatter<'_>,
) -> fmt::Result {
    let mut remaining = duration.as_nanos();
    if remaining == 0 {
        return formatter.write_str("0s");
    }
    let mut separator = "";
    for (name, unit) in CANONICAL_UNITS {
        let count = remaining / unit;
        if count > 0 {
            write!(formatter, "{separator}{count}{name}")?;
            separator = " ";
            remaining %= unit;
        }
    }
    Ok(())
}

impl fmt::Display for ConfigDuration {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        format_duration(self.0, formatter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Duration, ParseValueError> {
        text.parse::<ConfigDuration>().map(ConfigDuration::get)
    }

    #[test]
    fn given_spec_examples_when_parsing_should_give_expected_durations() {
        let cases = [
            ("30s", Duration::from_secs(30)),
            ("1 m", Duration::from_secs(60)),
            ("500ms", Duration::from_millis(500)),
            ("7 days", Duration::from_secs(7 * 86_400)),
            ("1 h", Duration::from_secs(3_600)),
            ("0 s", Duration::ZERO),
            ("1h 30m", Duration::from_secs(5_400)),
            ("1h30m", Duration::from_secs(5_400)),
            ("2m", Duration::from_secs(120)),
            ("10 s", Duration::from_secs(10)),
            ("250 us", Duration::from_micros(250)),
            ("3 ns", Duration::from_nanos(3)),
            ("1 week", Duration::from_secs(604_800)),
            ("1M", Duration::from_secs(2_630_016)),
            ("1y", Duration::from_secs(31_557_600)),
            ("  5  seconds ", Duration::from_secs(5)),
            ("0", Duration::ZERO),
            ("none", Duration::ZERO),
            ("Unlimited", Duration::ZERO),
            ("disabled", Duration::ZERO),
        ];
        for (text, expected) in cases {
            assert_eq!(parse(text), Ok(expected), "parsing {text:?}");
        }
    }

    #[test]
    fn given_malformed_text_when_parsing_should_explain_why() {
        let cases = [
            ("", "empty duration"),
            ("30", "missing time unit"),
            ("s", "expected a number"),
            ("3 fortnights", "unknown time unit \"fortnights\""),
            ("1.5h", "unknown time unit \".\""),
            ("-1s", "expected a number"),
            ("99999999999999999999999999 y", "duration too large"),
        ];
        for (text, reason) in cases {
            let error = parse(text).expect_err(text);
            assert_eq!(error.reason, reason, "parsing {text:?}");
            assert_eq!(error.value, text);
        }
    }

    #[test]
    fn given_durations_when_formatting_should_round_trip_through_canonical_form() {
        let cases = [
            (Duration::ZERO, "0s"),
            (Duration::from_secs(5_400), "1h 30m"),
            (Duration::from_millis(500), "500ms"),
            (Duration::from_secs(7 * 86_400), "7d"),
            (Duration::from_millis(1_250), "1s 250ms"),
            (Duration::from_nanos(1_001), "1us 1ns"),
        ];
        for (duration, text) in cases {
            let value = ConfigDuration::new(duration);
            assert_eq!(value.to_string(), text);
            assert_eq!(parse(text), Ok(duration));
        }
    }

    #[test]
    fn given_integer_zero_when_deserializing_should_accept_only_zero() {
        assert_eq!(ConfigDuration::from_integer(0), Ok(ConfigDuration::ZERO));
        assert!(ConfigDuration::from_integer(5).is_err());
    }
}
