//! Client transport sections: `[http]` (with CORS, JWT, metrics and TLS),
//! `[tcp]`, `[quic]` and `[websocket]`. Every transport has plain public
//! `enabled` and `address` fields so boot code can put the bound address
//! back before writing the runtime dump.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

use crate::config::values::{ByteSize, ConfigDuration, TokenExpiry, socket_address};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpConfig {
    pub enabled: bool,
    #[serde(with = "socket_address")]
    pub address: SocketAddr,
    pub max_request_size: ByteSize,
    pub web_ui: bool,
    pub cors: CorsConfig,
    pub jwt: JwtConfig,
    pub metrics: MetricsConfig,
    pub tls: HttpTlsConfig,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CorsConfig {
    pub enabled: bool,
    pub allowed_methods: Vec<String>,
    pub allowed_origins: Vec<String>,
    pub allowed_headers: Vec<String>,
    pub exposed_headers: Vec<String>,
    pub allow_credentials: bool,
    pub allow_private_network: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JwtConfig {
    pub algorithm: String,
    pub issuer: String,
    pub audience: String,
    pub valid_issuers: Vec<String>,
    pub valid_audiences: Vec<String>,
    pub access_token_expiry: TokenExpiry,
    pub clock_skew: ConfigDuration,
    pub not_before: ConfigDuration,
    /// Secret; never written to the runtime dump.
    pub encoding_secret: String,
    /// Secret; never written to the runtime dump.
    pub decoding_secret: String,
    pub use_base64_secret: bool,
    #[serde(default)]
    pub trusted_issuers: Vec<TrustedIssuer>,
}

/// An external token issuer whose tokens act as one fixed Iggy user (HTTP
/// spec §5.3). Its public keys come from `jwks_url` or, as this server's
/// extension, from a PEM file (`key_file`); exactly one of the two is set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustedIssuer {
    pub issuer: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
    #[serde(default)]
    pub jwks_url: String,
    /// A PEM public key (RSA or EC P-256) instead of a JWKS URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_file: Option<String>,
    /// Accepted header `alg` values; RS256 and ES256 when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithms: Option<Vec<String>>,
    /// How often the JWKS is fetched again; 5 minutes when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks_refresh_interval: Option<ConfigDuration>,
    pub user_id: u32,
}

/// Signature algorithms a trusted issuer may use.
pub const TRUSTED_ISSUER_ALGORITHMS: &[&str] = &["RS256", "RS384", "RS512", "ES256", "ES384"];

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetricsConfig {
    pub enabled: bool,
    pub endpoint: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpTlsConfig {
    pub enabled: bool,
    pub cert_file: String,
    pub key_file: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpConfig {
    pub enabled: bool,
    #[serde(with = "socket_address")]
    pub address: SocketAddr,
    /// Open connections accepted at once; more are closed at accept.
    /// (Not in the reference's file: this server's own limit.)
    pub max_connections: u32,
    /// Close a connection that sends nothing for this long; "0 s" disables.
    /// (Not in the reference's file.)
    pub idle_timeout: ConfigDuration,
    /// Failed logins per connection before it is closed. (Not in the
    /// reference's file.)
    pub max_failed_logins: u32,
    /// A started frame must complete within this. (Not in the reference's
    /// file.)
    pub frame_timeout: ConfigDuration,
    pub tls: ListenerTlsConfig,
}

/// TLS of the TCP and WebSocket listeners.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListenerTlsConfig {
    pub enabled: bool,
    /// Generate an ephemeral certificate unless `cert_file` exists.
    pub self_signed: bool,
    pub cert_file: String,
    pub key_file: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuicConfig {
    pub enabled: bool,
    #[serde(with = "socket_address")]
    pub address: SocketAddr,
    pub max_concurrent_bidi_streams: u32,
    pub initial_mtu: ByteSize,
    pub send_window: ByteSize,
    pub receive_window: ByteSize,
    pub stream_receive_window: ByteSize,
    /// Zero disables keep-alive.
    pub keep_alive_interval: ConfigDuration,
    /// Zero disables the idle timeout.
    pub max_idle_timeout: ConfigDuration,
    pub certificate: QuicCertificateConfig,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuicCertificateConfig {
    pub self_signed: bool,
    pub cert_file: String,
    pub key_file: String,
}

/// Built-in WebSocket sizes used while the optional keys are unset.
pub const WEBSOCKET_READ_BUFFER_DEFAULT: ByteSize = ByteSize::kib(128);
pub const WEBSOCKET_WRITE_BUFFER_DEFAULT: ByteSize = ByteSize::kib(128);
pub const WEBSOCKET_MAX_MESSAGE_DEFAULT: ByteSize = ByteSize::mib(64);
pub const WEBSOCKET_MAX_FRAME_DEFAULT: ByteSize = ByteSize::mib(16);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebSocketConfig {
    pub enabled: bool,
    #[serde(with = "socket_address")]
    pub address: SocketAddr,
    /// This and the two write buffer sizes are validated and otherwise
    /// unused: the server frames WebSocket itself, reading each message
    /// straight into its frame (`transport::websocket`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_buffer_size: Option<ByteSize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_buffer_size: Option<ByteSize>,
    /// Unset means unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_write_buffer_size: Option<ByteSize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_message_size: Option<ByteSize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_frame_size: Option<ByteSize>,
    pub accept_unmasked_frames: bool,
    pub tls: ListenerTlsConfig,
}

impl WebSocketConfig {
    pub fn read_buffer_size_or_default(&self) -> ByteSize {
        self.read_buffer_size
            .unwrap_or(WEBSOCKET_READ_BUFFER_DEFAULT)
    }

    pub fn write_buffer_size_or_default(&self) -> ByteSize {
        self.write_buffer_size
            .unwrap_or(WEBSOCKET_WRITE_BUFFER_DEFAULT)
    }

    pub fn max_message_size_or_default(&self) -> ByteSize {
        self.max_message_size
            .unwrap_or(WEBSOCKET_MAX_MESSAGE_DEFAULT)
    }

    pub fn max_frame_size_or_default(&self) -> ByteSize {
        self.max_frame_size.unwrap_or(WEBSOCKET_MAX_FRAME_DEFAULT)
    }
}
