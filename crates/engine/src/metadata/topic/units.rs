//! Parsing of the human string forms topic options accept: durations such as
//! `"7 days"`, `"1h 30m"`, `"500ms"` (to microseconds) and byte sizes such as
//! `"128 MiB"`, `"1 GB"`, `"1.5 KiB"` (to bytes). A bare number is already in
//! the base unit. `never`/`unlimited`-style words map to `u64::MAX`, the
//! wire's "never / unlimited" value; `default` maps to 0, the server default.

const MICROS_PER_MILLI: u64 = 1_000;
const MICROS_PER_SECOND: u64 = 1_000_000;
const MICROS_PER_MINUTE: u64 = 60 * MICROS_PER_SECOND;
const MICROS_PER_HOUR: u64 = 60 * MICROS_PER_MINUTE;
const MICROS_PER_DAY: u64 = 24 * MICROS_PER_HOUR;
const MICROS_PER_WEEK: u64 = 7 * MICROS_PER_DAY;

const UNBOUNDED_WORDS: [&str; 5] = ["none", "never", "unlimited", "never_expire", "infinite"];
const DEFAULT_WORDS: [&str; 2] = ["default", "server_default"];

/// A duration string to microseconds.
pub fn parse_duration_us(text: &str) -> Option<u64> {
    let text = text.trim();
    if let Some(special) = special_word(text) {
        return Some(special);
    }
    let mut rest = text;
    let mut total: u64 = 0;
    let mut parts = 0;
    while !rest.trim_start().is_empty() {
        let (number, after_number) = split_number(rest.trim_start())?;
        let (unit, after_unit) = split_unit(after_number.trim_start());
        let scale = duration_unit_us(unit, parts == 0 && after_unit.trim().is_empty())?;
        total = total.checked_add(number.checked_mul(scale)?)?;
        rest = after_unit;
        parts += 1;
    }
    (parts > 0).then_some(total)
}

/// A byte-size string to bytes.
pub fn parse_size_bytes(text: &str) -> Option<u64> {
    let text = text.trim();
    if let Some(special) = special_word(text) {
        return Some(special);
    }
    let (whole, after_whole) = split_number(text)?;
    let (fraction, fraction_digits, after_fraction) = match after_whole.strip_prefix('.') {
        Some(rest) => {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            let value: u64 = rest[..digits].parse().ok()?;
            (value, u32::try_from(digits).ok()?, &rest[digits..])
        }
        None => (0, 0, after_whole),
    };
    let (unit, after_unit) = split_unit(after_fraction.trim_start());
    if !after_unit.trim().is_empty() {
        return None;
    }
    let scale = u128::from(size_unit_bytes(unit)?);
    let fraction_scale = 10u128.checked_pow(fraction_digits)?;
    let bytes = u128::from(whole) * scale + u128::from(fraction) * scale / fraction_scale;
    u64::try_from(bytes).ok()
}

fn special_word(text: &str) -> Option<u64> {
    let lower = text.to_ascii_lowercase();
    if UNBOUNDED_WORDS.contains(&lower.as_str()) {
        Some(u64::MAX)
    } else if DEFAULT_WORDS.contains(&lower.as_str()) {
        Some(0)
    } else {
        None
    }
}

fn split_number(text: &str) -> Option<(u64, &str)> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    Some((text[..digits].parse().ok()?, &text[digits..]))
}

fn split_unit(text: &str) -> (&str, &str) {
    let end = text
        .find(|c: char| !(c.is_alphabetic() || c == 'µ'))
        .unwrap_or(text.len());
    (&text[..end], &text[end..])
}

/// A missing unit is allowed only for a lone number (plain microseconds).
fn duration_unit_us(unit: &str, lone_number: bool) -> Option<u64> {
    Some(match unit {
        "" if lone_number => 1,
        "us" | "µs" | "usec" | "micros" => 1,
        "ms" | "msec" | "millis" => MICROS_PER_MILLI,
        "s" | "sec" | "secs" | "second" | "seconds" => MICROS_PER_SECOND,
        "m" | "min" | "mins" | "minute" | "minutes" => MICROS_PER_MINUTE,
        "h" | "hr" | "hrs" | "hour" | "hours" => MICROS_PER_HOUR,
        "d" | "day" | "days" => MICROS_PER_DAY,
        "w" | "week" | "weeks" => MICROS_PER_WEEK,
        _ => return None,
    })
}

fn size_unit_bytes(unit: &str) -> Option<u64> {
    let lower = unit.to_ascii_lowercase();
    let (prefix, binary) = match lower.strip_suffix("ib") {
        Some(prefix) => (prefix, true),
        None => (lower.strip_suffix('b').unwrap_or(&lower), false),
    };
    let power = match prefix {
        "" if !binary => 0,
        "k" => 1,
        "m" => 2,
        "g" => 3,
        "t" => 4,
        "p" => 5,
        _ => return None,
    };
    let base: u64 = if binary { 1024 } else { 1000 };
    base.checked_pow(power)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_duration_strings_when_parsing_should_yield_microseconds() {
        assert_eq!(parse_duration_us("500"), Some(500));
        assert_eq!(parse_duration_us("500ms"), Some(500_000));
        assert_eq!(parse_duration_us("1 h"), Some(3_600_000_000));
        assert_eq!(parse_duration_us("1h 30m"), Some(5_400_000_000));
        assert_eq!(parse_duration_us("7 days"), Some(7 * MICROS_PER_DAY));
        assert_eq!(parse_duration_us("never"), Some(u64::MAX));
        assert_eq!(parse_duration_us("server_default"), Some(0));
        assert_eq!(parse_duration_us("1 fortnight"), None);
        assert_eq!(parse_duration_us("1h 30"), None);
        assert_eq!(parse_duration_us(""), None);
    }

    #[test]
    fn given_size_strings_when_parsing_should_yield_bytes() {
        assert_eq!(parse_size_bytes("1048576"), Some(1 << 20));
        assert_eq!(parse_size_bytes("128 MiB"), Some(128 << 20));
        assert_eq!(parse_size_bytes("1 GB"), Some(1_000_000_000));
        assert_eq!(parse_size_bytes("1.5 KiB"), Some(1536));
        assert_eq!(parse_size_bytes("4kb"), Some(4000));
        assert_eq!(parse_size_bytes("10 B"), Some(10));
        assert_eq!(parse_size_bytes("unlimited"), Some(u64::MAX));
        assert_eq!(parse_size_bytes("1 XB"), None);
        assert_eq!(parse_size_bytes("1 GiB extra"), None);
        assert_eq!(parse_size_bytes("99999 PiB"), None);
    }
}
