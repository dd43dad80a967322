//! Parsing and printing of the human units the command line speaks: byte
//! sizes (`1000`, `64KB`, `1.5GiB`), rates (`100MB/s`), durations (`500ms`,
//! `5s`, `2m`) and message-size ranges (`1000..2000`).
//!
//! Decimal prefixes are powers of 1000 and binary ones (`KiB`, `MiB`, ...)
//! powers of 1024, so `1GB` is exactly 10^9 bytes. Every parser returns a
//! `String` error, which clap prints beside the offending flag.

use std::time::Duration;

const DECIMAL_UNITS: [(&str, u64); 5] = [
    ("kb", 1_000),
    ("mb", 1_000_000),
    ("gb", 1_000_000_000),
    ("tb", 1_000_000_000_000),
    ("b", 1),
];
const BINARY_UNITS: [(&str, u64); 4] = [
    ("kib", 1 << 10),
    ("mib", 1 << 20),
    ("gib", 1 << 30),
    ("tib", 1 << 40),
];

/// Parses a byte size such as `1000`, `512KB`, `1.5GB` or `4MiB`.
pub fn parse_byte_size(text: &str) -> Result<u64, String> {
    let lowered = text.trim().to_ascii_lowercase();
    let (number, multiplier) = split_unit(&lowered);
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a byte size (try 1000, 64KB, 1GB, 4MiB)"))?;
    if !value.is_finite() || value < 0.0 {
        return Err(format!("`{text}` must be a non-negative size"));
    }
    let bytes = value * multiplier as f64;
    if bytes > u64::MAX as f64 {
        return Err(format!("`{text}` is too large"));
    }
    Ok(bytes.round() as u64)
}

fn split_unit(lowered: &str) -> (&str, u64) {
    // Binary units first: "kib" also ends with "b", which would match "b".
    for (suffix, multiplier) in BINARY_UNITS.iter().chain(DECIMAL_UNITS.iter()) {
        if let Some(number) = lowered.strip_suffix(suffix) {
            return (number, *multiplier);
        }
    }
    (lowered, 1)
}

/// Parses a rate in bytes per second such as `100MB/s`; the `/s` is optional.
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let size = trimmed
        .strip_suffix("/s")
        .or_else(|| trimmed.strip_suffix("ps"))
        .unwrap_or(trimmed);
    let rate = parse_byte_size(size)?;
    if rate == 0 {
        return Err("a rate limit must be above zero".to_string());
    }
    Ok(rate)
}

/// Parses a duration such as `0`, `250ms`, `5s`, `1.5m` or `1h`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let lowered = text.trim().to_ascii_lowercase();
    let (number, seconds_per_unit) = if let Some(n) = lowered.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = lowered.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = lowered.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = lowered.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (lowered.as_str(), 1.0)
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (try 500ms, 5s, 2m)"))?;
    if !value.is_finite() || value < 0.0 {
        return Err(format!("`{text}` must be a non-negative duration"));
    }
    Ok(Duration::from_secs_f64(value * seconds_per_unit))
}

/// The payload size of every message, fixed or drawn from an inclusive range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageSize {
    pub min_bytes: u32,
    pub max_bytes: u32,
}

impl MessageSize {
    pub fn fixed(bytes: u32) -> Self {
        Self {
            min_bytes: bytes,
            max_bytes: bytes,
        }
    }

    pub fn is_fixed(&self) -> bool {
        self.min_bytes == self.max_bytes
    }

    /// Mean payload size, used to turn `--total-data` into a batch count.
    pub fn average_bytes(&self) -> f64 {
        (f64::from(self.min_bytes) + f64::from(self.max_bytes)) / 2.0
    }
}

impl std::fmt::Display for MessageSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_fixed() {
            write!(f, "{} B", self.min_bytes)
        } else {
            write!(f, "{}..{} B", self.min_bytes, self.max_bytes)
        }
    }
}

/// Parses `1000`, `1KB` or a range `1000..2000`. Bounds are checked later,
/// by the plan, so that every size rule lives in one place.
pub fn parse_message_size(text: &str) -> Result<MessageSize, String> {
    let to_u32 = |part: &str| -> Result<u32, String> {
        let bytes = parse_byte_size(part)?;
        u32::try_from(bytes).map_err(|_| format!("`{part}` does not fit a message"))
    };
    match text.split_once("..") {
        Some((low, high)) => {
            let high = high.strip_prefix('=').unwrap_or(high);
            Ok(MessageSize {
                min_bytes: to_u32(low)?,
                max_bytes: to_u32(high)?,
            })
        }
        None => Ok(MessageSize::fixed(to_u32(text)?)),
    }
}

/// Formats a byte count with a decimal unit, e.g. `1.50 GB`.
pub fn format_bytes(bytes: f64) -> String {
    const STEPS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut value = bytes;
    let mut step = 0;
    while value >= 1000.0 && step + 1 < STEPS.len() {
        value /= 1000.0;
        step += 1;
    }
    if step == 0 {
        format!("{value:.0} {}", STEPS[step])
    } else {
        format!("{value:.2} {}", STEPS[step])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_decimal_and_binary_units_when_parsing_sizes_should_scale_by_1000_and_1024() {
        assert_eq!(parse_byte_size("1000"), Ok(1000));
        assert_eq!(parse_byte_size("64KB"), Ok(64_000));
        assert_eq!(parse_byte_size("1GB"), Ok(1_000_000_000));
        assert_eq!(parse_byte_size("1.5gb"), Ok(1_500_000_000));
        assert_eq!(parse_byte_size("4MiB"), Ok(4 * 1024 * 1024));
        assert_eq!(parse_byte_size("10b"), Ok(10));
    }

    #[test]
    fn given_garbage_when_parsing_size_should_fail() {
        assert!(parse_byte_size("lots").is_err());
        assert!(parse_byte_size("-1MB").is_err());
        assert!(parse_byte_size("").is_err());
    }

    #[test]
    fn given_rate_with_or_without_per_second_suffix_when_parsing_should_agree() {
        assert_eq!(parse_rate("100MB/s"), Ok(100_000_000));
        assert_eq!(parse_rate("100MB"), Ok(100_000_000));
        assert!(parse_rate("0MB/s").is_err());
    }

    #[test]
    fn given_duration_units_when_parsing_should_convert() {
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn given_range_when_parsing_message_size_should_keep_both_bounds() {
        assert_eq!(parse_message_size("1000"), Ok(MessageSize::fixed(1000)));
        let range = parse_message_size("1000..2000").expect("valid range");
        assert_eq!((range.min_bytes, range.max_bytes), (1000, 2000));
        assert_eq!(range.average_bytes(), 1500.0);
        assert_eq!(
            parse_message_size("1KB..=2KB"),
            Ok(MessageSize {
                min_bytes: 1000,
                max_bytes: 2000
            })
        );
        assert!(parse_message_size("10GB").is_err());
    }

    #[test]
    fn given_byte_counts_when_formatting_should_pick_decimal_unit() {
        assert_eq!(format_bytes(999.0), "999 B");
        assert_eq!(format_bytes(1_500_000_000.0), "1.50 GB");
    }
}
