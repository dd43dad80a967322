//! Contexts (spec §4.1): named defaults for the global options, kept in
//! `$IGGY_HOME/contexts.toml` (or `~/.iggy`) with the active name in
//! `.active_context`. Files are read once at start-up; writes rewrite the
//! whole file in the reference's order (tables by name, known keys in
//! `KNOWN_KEYS` order, then extra keys) with mode 0600.

use crate::error::{CliError, Failure};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const DEFAULT_CONTEXT: &str = "default";
const CONTEXTS_FILE: &str = "contexts.toml";
const ACTIVE_FILE: &str = ".active_context";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    Text,
    Number,
    Flag,
}

/// Known keys in file order, with their `context show` labels and whether
/// `context show` masks them.
pub const KNOWN_KEYS: &[(&str, &str, KeyKind, bool)] = &[
    ("username", "Username", KeyKind::Text, false),
    ("password", "Password", KeyKind::Text, true),
    ("token", "Token", KeyKind::Text, true),
    ("token_name", "Token Name", KeyKind::Text, false),
    ("transport", "Transport", KeyKind::Text, false),
    ("encryption_key", "Encryption Key", KeyKind::Text, true),
    (
        "credentials_username",
        "Credentials Username",
        KeyKind::Text,
        false,
    ),
    (
        "credentials_password",
        "Credentials Password",
        KeyKind::Text,
        true,
    ),
    ("http_api_url", "HTTP API URL", KeyKind::Text, false),
    ("http_retries", "HTTP Retries", KeyKind::Number, false),
    (
        "tcp_server_address",
        "TCP Server Address",
        KeyKind::Text,
        false,
    ),
    (
        "tcp_reconnection_max_retries",
        "TCP Reconnection Max Retries",
        KeyKind::Number,
        false,
    ),
    (
        "tcp_reconnection_interval",
        "TCP Reconnection Interval",
        KeyKind::Text,
        false,
    ),
    ("tcp_tls_enabled", "TCP TLS Enabled", KeyKind::Flag, false),
    ("tcp_tls_domain", "TCP TLS Domain", KeyKind::Text, false),
    (
        "quic_client_address",
        "QUIC Client Address",
        KeyKind::Text,
        false,
    ),
    (
        "quic_server_address",
        "QUIC Server Address",
        KeyKind::Text,
        false,
    ),
    ("quic_server_name", "QUIC Server Name", KeyKind::Text, false),
    (
        "quic_reconnection_max_retries",
        "QUIC Reconnection Max Retries",
        KeyKind::Number,
        false,
    ),
    (
        "quic_reconnection_interval",
        "QUIC Reconnection Interval",
        KeyKind::Text,
        false,
    ),
    (
        "quic_max_concurrent_bidi_streams",
        "QUIC Max Concurrent Bidi Streams",
        KeyKind::Number,
        false,
    ),
    (
        "quic_datagram_send_buffer_size",
        "QUIC Datagram Send Buffer Size",
        KeyKind::Number,
        false,
    ),
    (
        "quic_initial_mtu",
        "QUIC Initial MTU",
        KeyKind::Number,
        false,
    ),
    (
        "quic_send_window",
        "QUIC Send Window",
        KeyKind::Number,
        false,
    ),
    (
        "quic_receive_window",
        "QUIC Receive Window",
        KeyKind::Number,
        false,
    ),
    (
        "quic_response_buffer_size",
        "QUIC Response Buffer Size",
        KeyKind::Number,
        false,
    ),
    (
        "quic_keep_alive_interval",
        "QUIC Keep Alive Interval",
        KeyKind::Number,
        false,
    ),
    (
        "quic_max_idle_timeout",
        "QUIC Max Idle Timeout",
        KeyKind::Number,
        false,
    ),
    (
        "quic_validate_certificate",
        "QUIC Validate Certificate",
        KeyKind::Flag,
        false,
    ),
    (
        "websocket_server_address",
        "WebSocket Server Address",
        KeyKind::Text,
        false,
    ),
    (
        "websocket_reconnection_max_retries",
        "WebSocket Reconnection Max Retries",
        KeyKind::Number,
        false,
    ),
    (
        "websocket_reconnection_interval",
        "WebSocket Reconnection Interval",
        KeyKind::Text,
        false,
    ),
];

pub type ContextTable = toml::Table;

/// The contexts on disk and which one is active.
#[derive(Debug)]
pub struct ContextState {
    pub dir: PathBuf,
    pub contexts: BTreeMap<String, ContextTable>,
    pub active: String,
}

/// `$IGGY_HOME`, else `~/.iggy`.
pub fn home_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("IGGY_HOME") {
        return PathBuf::from(home);
    }
    let user_home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    user_home.join(".iggy")
}

impl ContextState {
    pub fn load(dir: PathBuf) -> Result<Self, CliError> {
        let contexts = read_contexts(&dir.join(CONTEXTS_FILE))?;
        let active = match std::fs::read_to_string(dir.join(ACTIVE_FILE)) {
            Ok(text) => text.trim().to_owned(),
            Err(_) => DEFAULT_CONTEXT.to_owned(),
        };
        Ok(Self {
            dir,
            contexts,
            active,
        })
    }

    /// The table of a context that must exist.
    pub fn get(&self, name: &str) -> Result<&ContextTable, CliError> {
        self.contexts.get(name).ok_or_else(|| missing_key(name))
    }

    pub fn write_contexts(&self) -> Result<(), CliError> {
        let path = self.dir.join(CONTEXTS_FILE);
        std::fs::create_dir_all(&self.dir).map_err(|e| write_error(&path, e))?;
        std::fs::write(&path, render_contexts(&self.contexts))
            .map_err(|e| write_error(&path, e))?;
        restrict_mode(&path);
        Ok(())
    }

    pub fn write_active(&self, name: &str) -> Result<(), CliError> {
        let path = self.dir.join(ACTIVE_FILE);
        std::fs::create_dir_all(&self.dir).map_err(|e| write_error(&path, e))?;
        std::fs::write(&path, name).map_err(|e| write_error(&path, e))
    }
}

pub fn missing_key(name: &str) -> CliError {
    CliError::message(format!(
        "context key '{name}' is missing from contexts.toml"
    ))
}

fn write_error(path: &Path, error: std::io::Error) -> CliError {
    CliError::caused(format!("failed writing {}", path.display()), error)
}

#[cfg(unix)]
pub fn restrict_mode(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    // Secrets are stored in plain text; keep them readable by the owner only.
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
}

#[cfg(not(unix))]
pub fn restrict_mode(_path: &Path) {}

fn read_contexts(path: &Path) -> Result<BTreeMap<String, ContextTable>, CliError> {
    let mut contexts = BTreeMap::new();
    if let Ok(text) = std::fs::read_to_string(path) {
        let parsed = parse_contexts(&text).map_err(|cause| {
            CliError::Command(Failure {
                context: "could not read context state".into(),
                causes: vec![
                    format!("failed deserializing contexts file {}", path.display()),
                    cause,
                ],
                ..Failure::default()
            })
        })?;
        contexts = parsed;
    }
    contexts.entry(DEFAULT_CONTEXT.to_owned()).or_default();
    Ok(contexts)
}

fn parse_contexts(text: &str) -> Result<BTreeMap<String, ContextTable>, String> {
    let root: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| e.message().to_owned())?;
    let mut contexts = BTreeMap::new();
    for (name, value) in root {
        let toml::Value::Table(table) = value else {
            return Err(format!("invalid type: context `{name}` is not a table"));
        };
        for (key, _, kind, _) in KNOWN_KEYS {
            if let Some(v) = table.get(*key)
                && !kind_matches(*kind, v)
            {
                return Err(format!("invalid type for key `{key}` in context `{name}`"));
            }
        }
        contexts.insert(name, table);
    }
    Ok(contexts)
}

fn kind_matches(kind: KeyKind, value: &toml::Value) -> bool {
    match kind {
        KeyKind::Text => value.is_str(),
        KeyKind::Number => value.as_integer().is_some_and(|n| n >= 0),
        KeyKind::Flag => value.is_bool(),
    }
}

/// The file text: `[name]` tables in name order, each with known keys first.
pub fn render_contexts(contexts: &BTreeMap<String, ContextTable>) -> String {
    let mut tables = Vec::new();
    for (name, table) in contexts {
        let mut text = format!("[{}]\n", toml_key(name));
        for (key, _, _, _) in KNOWN_KEYS {
            if let Some(value) = table.get(*key) {
                text.push_str(&format!("{key} = {value}\n"));
            }
        }
        let known = |k: &str| KNOWN_KEYS.iter().any(|(key, ..)| *key == k);
        for (key, value) in table.iter().filter(|(k, _)| !known(k)) {
            text.push_str(&format!("{} = {value}\n", toml_key(key)));
        }
        tables.push(text);
    }
    tables.join("\n")
}

fn toml_key(name: &str) -> String {
    let bare = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if bare {
        name.to_owned()
    } else {
        toml::Value::String(name.to_owned()).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_contexts_when_rendered_should_order_tables_and_keys_like_reference() {
        let mut contexts = BTreeMap::new();
        contexts.insert("default".to_owned(), ContextTable::new());
        let mut prod = ContextTable::new();
        prod.insert("tcp_server_address".into(), "10.0.0.1:8090".into());
        prod.insert("transport".into(), "tcp".into());
        prod.insert("zzz".into(), 5.into());
        prod.insert("password".into(), "secret".into());
        prod.insert("username".into(), "admin".into());
        contexts.insert("prod".to_owned(), prod);
        contexts.insert("żółw".to_owned(), ContextTable::new());
        assert_eq!(
            render_contexts(&contexts),
            "[default]\n\n[prod]\nusername = \"admin\"\npassword = \"secret\"\ntransport = \"tcp\"\ntcp_server_address = \"10.0.0.1:8090\"\nzzz = 5\n\n[\"żółw\"]\n"
        );
    }

    #[test]
    fn given_wrongly_typed_known_key_when_parsing_should_fail() {
        assert!(parse_contexts("[a]\ntcp_tls_enabled = \"yes\"\n").is_err());
        assert!(parse_contexts("[a]\nfoo = \"bar\"\n").is_ok());
    }
}
