//! Contexts (spec §4.1): named defaults for the global options, kept in
//! `$IGGY_HOME/contexts.toml` (or `~/.iggy`) with the active name in
//! `.active_context`. Files are read once at start-up; writes rewrite the
//! whole file in the reference's order (tables by name, known keys in
//! `KNOWN_KEYS` order, then extra keys) with mode 0600.

use crate::error::{CliError, Failure};
use crate::secrets::restrict_mode;
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
    /// Sections of a broken `contexts.toml` that could not be read (§8 #15,
    /// lenient loading for the `context` commands only): name and cause.
    pub broken: BTreeMap<String, String>,
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
            broken: BTreeMap::new(),
        })
    }

    /// §8 #15: like `load`, but a broken `contexts.toml` is read section by
    /// section; the readable contexts are kept and the others listed in
    /// `broken`, so `context` commands can repair the file.
    pub fn load_lenient(dir: PathBuf) -> Self {
        if let Ok(state) = Self::load(dir.clone()) {
            return state;
        }
        let text = std::fs::read_to_string(dir.join(CONTEXTS_FILE)).unwrap_or_default();
        let (mut contexts, broken) = salvage(&text);
        contexts.entry(DEFAULT_CONTEXT.to_owned()).or_default();
        let active = match std::fs::read_to_string(dir.join(ACTIVE_FILE)) {
            Ok(text) => text.trim().to_owned(),
            Err(_) => DEFAULT_CONTEXT.to_owned(),
        };
        Self {
            dir,
            contexts,
            active,
            broken,
        }
    }

    /// A copy with other contexts (for writing).
    pub fn with_contexts(&self, contexts: BTreeMap<String, ContextTable>) -> Self {
        Self {
            dir: self.dir.clone(),
            contexts,
            active: self.active.clone(),
            broken: self.broken.clone(),
        }
    }

    /// The table of a context that must exist.
    pub fn get(&self, name: &str) -> Result<&ContextTable, CliError> {
        self.contexts.get(name).ok_or_else(|| missing_key(name))
    }

    pub fn write_contexts(&self) -> Result<(), CliError> {
        let path = self.dir.join(CONTEXTS_FILE);
        std::fs::create_dir_all(&self.dir).map_err(|e| write_error(&path, e))?;
        if !self.broken.is_empty() || self.had_unreadable_file() {
            // Rewriting drops what could not be read; keep the old file.
            let backup = self.dir.join(format!("{CONTEXTS_FILE}.bak"));
            std::fs::copy(&path, &backup).map_err(|e| write_error(&backup, e))?;
            restrict_mode(&backup);
            crate::output::warn(&format!(
                "contexts.toml was broken; the previous file is kept as {}",
                backup.display()
            ));
        }
        std::fs::write(&path, render_contexts(&self.contexts))
            .map_err(|e| write_error(&path, e))?;
        restrict_mode(&path);
        Ok(())
    }

    fn had_unreadable_file(&self) -> bool {
        let path = self.dir.join(CONTEXTS_FILE);
        path.exists() && read_contexts(&path).is_err()
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

/// Splits a broken file at its `[table]` headers and reads each section on
/// its own: (readable contexts, unreadable section name -> cause). Text
/// before the first header is named `(top of file)`.
fn salvage(text: &str) -> (BTreeMap<String, ContextTable>, BTreeMap<String, String>) {
    let mut sections: Vec<(Option<String>, String)> = vec![(None, String::new())];
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with('[') && !trimmed.starts_with("[[") {
            sections.push((Some(header_name(trimmed)), String::new()));
        }
        if let Some((_, body)) = sections.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    let mut good = BTreeMap::new();
    let mut broken = BTreeMap::new();
    for (name, body) in sections {
        if name.is_none() && body.trim().is_empty() {
            continue;
        }
        let name = name.unwrap_or_else(|| "(top of file)".to_owned());
        match parse_contexts(&body) {
            Ok(contexts) if !contexts.is_empty() => good.extend(contexts),
            Ok(_) => {
                broken.insert(name, "not a context table".to_owned());
            }
            Err(cause) => {
                broken.insert(name, cause);
            }
        }
    }
    (good, broken)
}

/// The name in a `[name]` header line, unquoted when it parses as TOML.
fn header_name(line: &str) -> String {
    let header = line.split(']').next().unwrap_or(line);
    let inner = header.trim_start_matches('[').trim();
    match format!("[{inner}]\n").parse::<toml::Table>() {
        Ok(t) if t.len() == 1 => t.keys().next().cloned().unwrap_or_default(),
        _ => inner.to_owned(),
    }
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
    fn given_broken_file_when_salvaged_should_keep_readable_contexts() {
        let text = "[prod]\nusername = \"a\"\n\n[bad]\ntcp_tls_enabled = \"yes\"\n\n[\"x y\"]\nport = = 1\n";
        let (good, broken) = salvage(text);
        assert_eq!(good.keys().collect::<Vec<_>>(), ["prod"]);
        assert_eq!(broken.keys().collect::<Vec<_>>(), ["bad", "x y"]);
    }

    #[test]
    fn given_wrongly_typed_known_key_when_parsing_should_fail() {
        assert!(parse_contexts("[a]\ntcp_tls_enabled = \"yes\"\n").is_err());
        assert!(parse_contexts("[a]\nfoo = \"bar\"\n").is_ok());
    }
}
