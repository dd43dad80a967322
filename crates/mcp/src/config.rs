//! Configuration: a TOML file (path in `IGGY_MCP_CONFIG_PATH`, optional)
//! read first, then environment overrides (`IGGY_MCP_*`, listed in
//! [`ENV_OVERRIDES`]), then one validation pass. After `load` returns, every
//! value has been checked: the rest of the program never re-validates.
//!
//! The keys follow the reference MCP server's file, so its configuration
//! files and environment variables start this binary unchanged; where the
//! reference is silent (the Iggy transport, the HTTP bearer token, TLS
//! certificate validation) the new keys sit beside the old ones.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The environment variable that names the configuration file.
pub const CONFIG_PATH_ENV: &str = "IGGY_MCP_CONFIG_PATH";
/// A secret written as `file:PATH` is read from that file (trimmed).
pub const SECRET_FILE_PREFIX: &str = "file:";

const DEFAULT_IGGY_ADDRESS: &str = "127.0.0.1:8090";
const DEFAULT_HTTP_ADDRESS: &str = "127.0.0.1:8082";
const DEFAULT_HTTP_PATH: &str = "/mcp";
const DEFAULT_USERNAME: &str = "iggy";
const DEFAULT_PASSWORD: &str = "iggy";
const DEFAULT_CONSUMER: &str = "iggy-mcp";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the configuration file {path}: {source}")]
    ReadFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid configuration file {path}: {source}")]
    Parse {
        path: PathBuf,
        source: Box<toml::de::Error>,
    },
    #[error("environment variable {name}={value:?} is not valid: {reason}")]
    Env {
        name: &'static str,
        value: String,
        reason: String,
    },
    #[error("cannot read the secret file {path}: {source}")]
    SecretFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the secret file {path} is empty")]
    EmptySecretFile { path: PathBuf },
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

/// How MCP clients reach this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpTransport {
    Stdio,
    Http,
}

/// How this process reaches the Iggy server (one of the SDK's transports).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IggyTransport {
    Tcp,
    Quic,
    Http,
    #[serde(alias = "websocket")]
    Ws,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub transport: McpTransport,
    pub http: HttpConfig,
    pub iggy: IggyConfig,
    pub permissions: PermissionsConfig,
    /// Accepted so the reference's files load; not supported here (ignored
    /// with a warning at start-up).
    pub telemetry: Option<toml::Value>,
}

/// The Streamable HTTP listener. Loopback only, and guarded by its own
/// bearer token (`token`), which the reference does not have.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpConfig {
    pub address: String,
    pub path: String,
    pub token: String,
    /// Accepted so the reference's files load; CORS is not offered (the
    /// listener serves agents on loopback, not browsers).
    pub cors: Option<toml::Value>,
    /// Accepted so the reference's files load; `enabled = true` is refused.
    pub tls: Option<toml::Value>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IggyConfig {
    pub transport: IggyTransport,
    /// `host:port`, or for the HTTP transport also a full `http(s)://` URL.
    pub address: String,
    pub username: String,
    pub password: String,
    /// A personal access token; when set it is used instead of the password.
    pub token: String,
    pub consumer: String,
    pub tls: IggyTlsConfig,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IggyTlsConfig {
    pub enabled: bool,
    pub ca_file: String,
    pub domain: String,
    pub validate_certificate: bool,
}

/// Which classes of tools may run. Reads are on by default; every class
/// that changes the server is off until the operator turns it on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PermissionsConfig {
    pub read: bool,
    pub create: bool,
    pub update: bool,
    pub delete: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            transport: McpTransport::Stdio,
            http: HttpConfig::default(),
            iggy: IggyConfig::default(),
            permissions: PermissionsConfig::default(),
            telemetry: None,
        }
    }
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            address: DEFAULT_HTTP_ADDRESS.to_owned(),
            path: DEFAULT_HTTP_PATH.to_owned(),
            token: String::new(),
            cors: None,
            tls: None,
        }
    }
}

impl Default for IggyConfig {
    fn default() -> Self {
        Self {
            transport: IggyTransport::Tcp,
            address: DEFAULT_IGGY_ADDRESS.to_owned(),
            username: DEFAULT_USERNAME.to_owned(),
            password: DEFAULT_PASSWORD.to_owned(),
            token: String::new(),
            consumer: DEFAULT_CONSUMER.to_owned(),
            tls: IggyTlsConfig::default(),
        }
    }
}

impl Default for IggyTlsConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            ca_file: String::new(),
            domain: String::new(),
            validate_certificate: true,
        }
    }
}

impl Default for PermissionsConfig {
    fn default() -> Self {
        Self {
            read: true,
            create: false,
            update: false,
            delete: false,
        }
    }
}

/// One environment override: the variable and the field it sets.
type Setter = fn(&mut Config, &str) -> Result<(), String>;

/// Every environment variable the binary reads besides
/// [`CONFIG_PATH_ENV`], in the order they are applied.
pub const ENV_OVERRIDES: &[(&str, Setter)] = &[
    ("IGGY_MCP_TRANSPORT", |c, v| set_enum(&mut c.transport, v)),
    ("IGGY_MCP_HTTP_ADDRESS", |c, v| {
        set_string(&mut c.http.address, v)
    }),
    ("IGGY_MCP_HTTP_PATH", |c, v| set_string(&mut c.http.path, v)),
    ("IGGY_MCP_HTTP_TOKEN", |c, v| {
        set_string(&mut c.http.token, v)
    }),
    ("IGGY_MCP_IGGY_TRANSPORT", |c, v| {
        set_enum(&mut c.iggy.transport, v)
    }),
    ("IGGY_MCP_IGGY_ADDRESS", |c, v| {
        set_string(&mut c.iggy.address, v)
    }),
    ("IGGY_MCP_IGGY_USERNAME", |c, v| {
        set_string(&mut c.iggy.username, v)
    }),
    ("IGGY_MCP_IGGY_PASSWORD", |c, v| {
        set_string(&mut c.iggy.password, v)
    }),
    ("IGGY_MCP_IGGY_TOKEN", |c, v| {
        set_string(&mut c.iggy.token, v)
    }),
    ("IGGY_MCP_IGGY_CONSUMER", |c, v| {
        set_string(&mut c.iggy.consumer, v)
    }),
    ("IGGY_MCP_IGGY_TLS_ENABLED", |c, v| {
        set_bool(&mut c.iggy.tls.enabled, v)
    }),
    ("IGGY_MCP_IGGY_TLS_CA_FILE", |c, v| {
        set_string(&mut c.iggy.tls.ca_file, v)
    }),
    ("IGGY_MCP_IGGY_TLS_DOMAIN", |c, v| {
        set_string(&mut c.iggy.tls.domain, v)
    }),
    ("IGGY_MCP_IGGY_TLS_VALIDATE_CERTIFICATE", |c, v| {
        set_bool(&mut c.iggy.tls.validate_certificate, v)
    }),
    ("IGGY_MCP_PERMISSIONS_READ", |c, v| {
        set_bool(&mut c.permissions.read, v)
    }),
    ("IGGY_MCP_PERMISSIONS_CREATE", |c, v| {
        set_bool(&mut c.permissions.create, v)
    }),
    ("IGGY_MCP_PERMISSIONS_UPDATE", |c, v| {
        set_bool(&mut c.permissions.update, v)
    }),
    ("IGGY_MCP_PERMISSIONS_DELETE", |c, v| {
        set_bool(&mut c.permissions.delete, v)
    }),
];

fn set_string(field: &mut String, value: &str) -> Result<(), String> {
    value.clone_into(field);
    Ok(())
}

fn set_bool(field: &mut bool, value: &str) -> Result<(), String> {
    *field = match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => true,
        "false" | "0" | "no" | "off" => false,
        _ => return Err("expected true or false".to_owned()),
    };
    Ok(())
}

fn set_enum<T: serde::de::DeserializeOwned>(field: &mut T, value: &str) -> Result<(), String> {
    let quoted = serde_json::Value::String(value.trim().to_ascii_lowercase());
    *field = serde_json::from_value(quoted).map_err(|error| error.to_string())?;
    Ok(())
}

impl Config {
    /// The sections of the reference's file that this binary accepts but
    /// ignores, for a start-up warning.
    pub fn ignored_sections(&self) -> Vec<&'static str> {
        let present = [
            ("telemetry", self.telemetry.is_some()),
            ("http.cors", self.http.cors.is_some()),
            ("http.tls", self.http.tls.is_some()),
        ];
        present
            .into_iter()
            .filter_map(|(name, is_present)| is_present.then_some(name))
            .collect()
    }

    /// Reads the file named by `IGGY_MCP_CONFIG_PATH` (if set), applies the
    /// environment, resolves `file:` secrets and validates the result.
    pub fn load() -> Result<Config, ConfigError> {
        let lookup = |name: &str| std::env::var(name).ok();
        Self::load_from(lookup)
    }

    /// [`Config::load`] with the environment given as a lookup function,
    /// so tests need not touch the process environment.
    pub fn load_from(env: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let mut config = match env(CONFIG_PATH_ENV) {
            Some(path) if !path.is_empty() => Self::read_file(Path::new(&path))?,
            _ => Config::default(),
        };
        for (name, setter) in ENV_OVERRIDES {
            if let Some(value) = env(name) {
                setter(&mut config, &value).map_err(|reason| ConfigError::Env {
                    name,
                    value: value.clone(),
                    reason,
                })?;
            }
        }
        config.http.token = resolve_secret(&config.http.token)?;
        config.iggy.token = resolve_secret(&config.iggy.token)?;
        config.iggy.password = resolve_secret(&config.iggy.password)?;
        config.validate()?;
        Ok(config)
    }

    fn read_file(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::ReadFile {
            path: path.to_owned(),
            source,
        })?;
        toml::from_str(&text).map_err(|source| ConfigError::Parse {
            path: path.to_owned(),
            source: Box::new(source),
        })
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |reason: &str| Err(ConfigError::Invalid(reason.to_owned()));
        if self.iggy.token.is_empty()
            && (self.iggy.username.is_empty() || self.iggy.password.is_empty())
        {
            return invalid("iggy.username and iggy.password, or iggy.token, must be set");
        }
        if self.iggy.address.is_empty() {
            return invalid("iggy.address must be set");
        }
        if self.iggy.consumer.is_empty() {
            return invalid("iggy.consumer must not be empty");
        }
        if self.transport == McpTransport::Http {
            self.http.validate()?;
        }
        Ok(())
    }
}

impl HttpConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        if self.token.is_empty() {
            return Err(ConfigError::Invalid(
                "the http transport needs a bearer token (http.token or IGGY_MCP_HTTP_TOKEN)"
                    .to_owned(),
            ));
        }
        if !self.path.starts_with('/') {
            return Err(ConfigError::Invalid(format!(
                "http.path {:?} must start with '/'",
                self.path
            )));
        }
        let tls_enabled = self
            .tls
            .as_ref()
            .and_then(|tls| tls.get("enabled"))
            .and_then(toml::Value::as_bool)
            .unwrap_or(false);
        if tls_enabled {
            return Err(ConfigError::Invalid(
                "http.tls is not supported: the listener is loopback-only plain HTTP".to_owned(),
            ));
        }
        self.socket_address().map(|_| ())
    }

    /// The loopback address to bind. Anything that resolves off the
    /// loopback interface is refused: the tools reach the whole server.
    pub fn socket_address(&self) -> Result<SocketAddr, ConfigError> {
        let invalid = |reason: String| ConfigError::Invalid(reason);
        let mut resolved = self
            .address
            .to_socket_addrs()
            .map_err(|error| invalid(format!("http.address {:?}: {error}", self.address)))?;
        let address = resolved.next().ok_or_else(|| {
            invalid(format!(
                "http.address {:?} resolves to nothing",
                self.address
            ))
        })?;
        if !is_loopback(address.ip()) {
            return Err(invalid(format!(
                "http.address {:?} is not a loopback address; iggy-mcp serves HTTP on loopback only",
                self.address
            )));
        }
        Ok(address)
    }
}

fn is_loopback(ip: IpAddr) -> bool {
    ip.is_loopback()
}

/// A value written as `file:PATH` is replaced by the file's trimmed content
/// (`~/` expands to `$HOME`); any other value is returned as it is.
pub fn resolve_secret(value: &str) -> Result<String, ConfigError> {
    let Some(path) = value.strip_prefix(SECRET_FILE_PREFIX) else {
        return Ok(value.to_owned());
    };
    let path = expand_home(path.trim());
    let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::SecretFile {
        path: path.clone(),
        source,
    })?;
    let secret = text.trim();
    if secret.is_empty() {
        return Err(ConfigError::EmptySecretFile { path });
    }
    Ok(secret.to_owned())
}

fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(path),
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
