//! Global options (spec §3): connection, transport, credentials, quiet and
//! debug, plus the long-only additions of §9 (output format, strictness,
//! per-invocation context, secret store, non-interactive mode).

use clap::{ArgAction, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Clone, Default, clap::Args)]
pub struct GlobalArgs {
    /// The transport to use. Valid values are `quic`, `http`, `tcp` and `ws`
    ///
    /// [default: tcp]
    #[arg(long)]
    pub transport: Option<String>,

    /// Optional encryption key for the message payload used by the client
    ///
    /// (default: none)
    #[arg(long)]
    pub encryption_key: Option<String>,

    /// Optional username for initial login (accepted and ignored)
    ///
    /// [default: DEFAULT_ROOT_USERNAME]
    #[arg(long)]
    pub credentials_username: Option<String>,

    /// Optional password for initial login (accepted and ignored)
    ///
    /// [default: DEFAULT_ROOT_PASSWORD]
    #[arg(long)]
    pub credentials_password: Option<String>,

    /// The optional API URL for the HTTP transport
    ///
    /// [default: http://localhost:3000]
    #[arg(long)]
    pub http_api_url: Option<String>,

    /// The optional number of retries for the HTTP transport
    ///
    /// [default: 3]
    #[arg(long)]
    pub http_retries: Option<u32>,

    /// The optional client address for the TCP transport
    ///
    /// [default: 127.0.0.1:8090]
    #[arg(long)]
    pub tcp_server_address: Option<String>,

    /// The optional number of max reconnect retries for the TCP transport
    ///
    /// [default: 10]
    #[arg(long)]
    pub tcp_reconnection_max_retries: Option<u32>,

    /// The optional reconnect interval for the TCP transport
    ///
    /// [default: "1s"]
    #[arg(long)]
    pub tcp_reconnection_interval: Option<String>,

    /// Flag to enable TLS for the TCP transport
    #[arg(long, action = ArgAction::SetTrue)]
    pub tcp_tls_enabled: bool,

    /// The optional TLS domain for the TCP transport
    ///
    /// [default: localhost]
    #[arg(long)]
    pub tcp_tls_domain: Option<String>,

    /// The optional client address for the QUIC transport
    ///
    /// [default: 127.0.0.1:0]
    #[arg(long)]
    pub quic_client_address: Option<String>,

    /// The optional server address for the QUIC transport
    ///
    /// [default: 127.0.0.1:8080]
    #[arg(long)]
    pub quic_server_address: Option<String>,

    /// The optional server name for the QUIC transport
    ///
    /// [default: localhost]
    #[arg(long)]
    pub quic_server_name: Option<String>,

    /// The optional number of max reconnect retries for the QUIC transport
    ///
    /// [default: 10]
    #[arg(long)]
    pub quic_reconnection_max_retries: Option<u32>,

    /// The optional reconnect interval for the QUIC transport
    ///
    /// [default: "1s"]
    #[arg(long)]
    pub quic_reconnection_interval: Option<String>,

    /// The optional maximum number of concurrent bidirectional streams for QUIC
    ///
    /// [default: 10000]
    #[arg(long)]
    pub quic_max_concurrent_bidi_streams: Option<u64>,

    /// The optional datagram send buffer size for QUIC
    ///
    /// [default: 100000]
    #[arg(long)]
    pub quic_datagram_send_buffer_size: Option<u64>,

    /// The optional initial MTU for QUIC
    ///
    /// [default: 1200]
    #[arg(long)]
    pub quic_initial_mtu: Option<u16>,

    /// The optional send window for QUIC
    ///
    /// [default: 1000000]
    #[arg(long)]
    pub quic_send_window: Option<u64>,

    /// The optional receive window for QUIC
    ///
    /// [default: 1000000]
    #[arg(long)]
    pub quic_receive_window: Option<u64>,

    /// The optional response buffer size for QUIC
    ///
    /// [default: 1048576]
    #[arg(long)]
    pub quic_response_buffer_size: Option<u64>,

    /// The optional keep alive interval for QUIC
    ///
    /// [default: 5000]
    #[arg(long)]
    pub quic_keep_alive_interval: Option<u64>,

    /// The optional maximum idle timeout for QUIC
    ///
    /// [default: 100000]
    #[arg(long)]
    pub quic_max_idle_timeout: Option<u64>,

    /// Flag to enable certificate validation for QUIC
    #[arg(long, action = ArgAction::SetTrue)]
    pub quic_validate_certificate: bool,

    /// The optional server address for the WebSocket transport
    ///
    /// [default: 127.0.0.1:8092]
    #[arg(long)]
    pub websocket_server_address: Option<String>,

    /// The optional number of max reconnect retries for the WebSocket transport
    ///
    /// [default: 10]
    #[arg(long)]
    pub websocket_reconnection_max_retries: Option<u32>,

    /// The optional reconnect interval for the WebSocket transport
    ///
    /// [default: "1s"]
    #[arg(long)]
    pub websocket_reconnection_interval: Option<String>,

    /// Suppress logging output (command-specific output may remain)
    #[arg(short, long, action = ArgAction::SetTrue)]
    pub quiet: bool,

    /// Write a TRACE-level log of the run (CLI and SDK events) to this file;
    /// an existing file is replaced
    #[arg(short, long)]
    pub debug: Option<PathBuf>,

    /// Iggy server username
    #[arg(short, long, conflicts_with_all = ["token", "token_name"])]
    pub username: Option<String>,

    /// Iggy server password
    ///
    /// Without it the password is prompted for, or read from stdin when stdin
    /// is not a terminal.
    #[arg(short, long)]
    pub password: Option<String>,

    /// Iggy server personal access token
    #[arg(short, long, conflicts_with = "token_name")]
    pub token: Option<String>,

    /// Name of a personal access token stored in the secure storage
    #[arg(short = 'n', long)]
    pub token_name: Option<String>,

    /// Shell for which to generate a completion script
    #[arg(long, value_enum)]
    pub generate: Option<clap_complete::Shell>,

    /// [addition] Output format: text (default), json or ndjson
    #[arg(long, value_enum)]
    pub output_format: Option<OutputFormat>,

    /// [addition] Same as --output-format json
    #[arg(long, action = ArgAction::SetTrue, conflicts_with = "output_format")]
    pub json: bool,

    /// [addition] A `get` of a missing resource exits 3 instead of 0
    #[arg(long, action = ArgAction::SetTrue)]
    pub strict: bool,

    /// [addition] Use this context for this run only (env IGGY_CLI_CONTEXT)
    #[arg(long)]
    pub context: Option<String>,

    /// [addition] Where login sessions and stored tokens live: keyring or file
    /// ($IGGY_HOME/secrets.toml); env IGGY_CLI_SESSION_STORE
    #[arg(long, value_enum)]
    pub session_store: Option<SessionStoreKind>,

    /// [addition] Never prompt and never read a password from stdin
    #[arg(long, action = ArgAction::SetTrue)]
    pub no_input: bool,

    /// [addition] Read the password from the first line of stdin
    #[arg(long, action = ArgAction::SetTrue, conflicts_with = "password")]
    pub password_stdin: bool,

    /// [addition] Connection string of the SDK (iggy://user:pass@host:port?tls=true,
    /// iggy+quic://…, iggy+http://…, iggy+ws://…): transport, address,
    /// credentials and TLS options in one; env IGGY_CLI_URL
    #[arg(long)]
    pub url: Option<String>,

    /// [addition] Deadline for connecting and logging in (e.g. 5s), instead of
    /// the reconnection retry loop
    #[arg(long, value_parser = humantime::parse_duration)]
    pub connect_timeout: Option<std::time::Duration>,

    /// [addition] PEM file with the CA certificate(s) that sign the server's
    /// TCP TLS certificate
    #[arg(long)]
    pub tcp_tls_ca_file: Option<String>,

    /// [addition] Do not validate the server's TCP TLS certificate (insecure)
    #[arg(long, action = ArgAction::SetTrue)]
    pub tcp_tls_insecure: bool,

    /// [addition] Flag to enable TLS (wss) for the WebSocket transport
    #[arg(long, action = ArgAction::SetTrue)]
    pub websocket_tls_enabled: bool,

    /// [addition] The TLS domain for the WebSocket transport
    #[arg(long)]
    pub websocket_tls_domain: Option<String>,

    /// [addition] PEM file with the CA certificate(s) that sign the server's
    /// WebSocket TLS certificate
    #[arg(long)]
    pub websocket_tls_ca_file: Option<String>,

    /// [addition] Do not validate the server's WebSocket TLS certificate (insecure)
    #[arg(long, action = ArgAction::SetTrue)]
    pub websocket_tls_insecure: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
    Ndjson,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SessionStoreKind {
    Keyring,
    File,
}
