//! [`ConfigError`]: every way loading or validation refuses to boot. Each
//! message names the key (full dotted path), the offending value and what
//! is allowed, so the operator can fix the input without reading code.

use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("configuration file {path} (named by IGGY_CONFIG_PATH) does not exist")]
    FileNotFound { path: PathBuf },

    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("{path} is not valid TOML: {message}")]
    Syntax { path: PathBuf, message: String },

    #[error("configuration key `{key}` (from {origin}) was removed: {replacement}")]
    RemovedKey {
        key: String,
        origin: String,
        replacement: &'static str,
    },

    #[error("unknown configuration key `{key}` in {path}; this table allows only known keys{}", suggestion_note(.suggestions))]
    UnknownKey {
        key: String,
        path: PathBuf,
        suggestions: Vec<String>,
    },

    #[error("invalid value for `{key}`{}: {value}; allowed: {allowed}", origin_note(.origin))]
    InvalidValue {
        key: String,
        value: String,
        allowed: String,
        /// The environment variable that set the value, when one did.
        origin: Option<String>,
    },

    #[error("{path}, line {line}: {reason}")]
    Dotenv {
        path: PathBuf,
        line: usize,
        reason: String,
    },
}

impl ConfigError {
    /// A failed rule on a key; `value` is shown as given.
    pub(crate) fn invalid(key: &str, value: impl ToString, allowed: impl Into<String>) -> Self {
        Self::InvalidValue {
            key: key.to_owned(),
            value: value.to_string(),
            allowed: allowed.into(),
            origin: None,
        }
    }
}

fn origin_note(origin: &Option<String>) -> String {
    origin
        .as_ref()
        .map(|name| format!(" (set by environment variable {name})"))
        .unwrap_or_default()
}

pub(crate) fn suggestion_note(suggestions: &[String]) -> String {
    if suggestions.is_empty() {
        return String::new();
    }
    let quoted: Vec<String> = suggestions.iter().map(|name| format!("`{name}`")).collect();
    format!("; did you mean {}?", quoted.join(", "))
}
