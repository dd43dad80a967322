//! `TokenExpiry`: the lifetime of an issued JWT. A duration string, or
//! `"none"`/`"unlimited"`/`"never_expire"` for tokens that never expire, or
//! `"default"`/`"server_default"` for the server's own default (refused for
//! `http.jwt.access_token_expiry` by validation).

use std::fmt;
use std::time::Duration;

use super::duration::{format_duration, parse_duration};
use super::{ConfigText, ParseValueError, text_serde};

const EXPECTED: &str = "a duration such as \"1 h\", \"none\"/\"unlimited\"/\"never_expire\" (never expires) \
     or \"default\"/\"server_default\"";

const NEVER_ALIASES: [&str; 3] = ["none", "unlimited", "never_expire"];
const SERVER_DEFAULT_ALIASES: [&str; 2] = ["default", "server_default"];

/// How long an issued token stays valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenExpiry {
    /// Tokens never expire.
    Never,
    /// Use the server's built-in default; a sentinel, not a lifetime.
    ServerDefault,
    /// Tokens expire this long after issue.
    After(Duration),
}

impl ConfigText for TokenExpiry {
    const EXPECTED: &'static str = EXPECTED;

    fn from_text(text: &str) -> Result<Self, ParseValueError> {
        let trimmed = text.trim();
        let is_any = |aliases: &[&str]| {
            aliases
                .iter()
                .any(|alias| trimmed.eq_ignore_ascii_case(alias))
        };
        if is_any(&NEVER_ALIASES) {
            return Ok(Self::Never);
        }
        if is_any(&SERVER_DEFAULT_ALIASES) {
            return Ok(Self::ServerDefault);
        }
        parse_duration(text, EXPECTED).map(Self::After)
    }

    fn from_integer(value: i64) -> Result<Self, ParseValueError> {
        Err(ParseValueError::new(
            &value.to_string(),
            "a token lifetime needs a unit",
            EXPECTED,
        ))
    }
}

text_serde!(TokenExpiry);

impl fmt::Display for TokenExpiry {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Never => formatter.write_str("none"),
            Self::ServerDefault => formatter.write_str("server_default"),
            Self::After(duration) => format_duration(*duration, formatter),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_expiry_forms_when_parsing_should_distinguish_never_default_and_lifetime() {
        let cases = [
            ("1 h", TokenExpiry::After(Duration::from_secs(3_600))),
            ("15m", TokenExpiry::After(Duration::from_secs(900))),
            ("none", TokenExpiry::Never),
            ("unlimited", TokenExpiry::Never),
            ("never_expire", TokenExpiry::Never),
            ("default", TokenExpiry::ServerDefault),
            ("SERVER_DEFAULT", TokenExpiry::ServerDefault),
        ];
        for (text, expected) in cases {
            let parsed: TokenExpiry = text.parse().expect(text);
            assert_eq!(parsed, expected, "parsing {text:?}");
            assert_eq!(parsed.to_string().parse::<TokenExpiry>(), Ok(expected));
        }
        assert!("soon".parse::<TokenExpiry>().is_err());
        assert!(TokenExpiry::from_integer(3_600).is_err());
    }
}
