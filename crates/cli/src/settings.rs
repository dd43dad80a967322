//! Merges the connection settings of one run (spec §4.1, §9.7): command
//! line, then the `IGGY_CLI_*` environment variables, then the chosen
//! context, then the SDK defaults. The result is the SDK's own `Args`, from
//! which the SDK builds the transport.

use crate::args::GlobalArgs;
use crate::context::ContextTable;
use crate::error::CliError;
use iggy::prelude::{
    Args, AutoLogin, Credentials, HttpClientConfig, QuicClientConfig, TcpClientConfig,
    TransportProtocol, WebSocketClientConfig,
};
use iggy_common::{
    ConnectionString, ConnectionStringUtils, HttpConnectionStringOptions,
    QuicConnectionStringOptions, TcpConnectionStringOptions, WebSocketConnectionStringOptions,
};
use secrecy::ExposeSecret;

/// Credentials as merged per field; `explicit` marks those typed on the command line.
#[derive(Debug, Default, Clone)]
pub struct CredentialFields {
    pub username: Option<String>,
    pub password: Option<String>,
    pub token: Option<String>,
    pub token_name: Option<String>,
    pub explicit: bool,
}

pub struct Settings {
    pub args: Args,
    pub credentials: CredentialFields,
    /// `--url` (§9.7): the transport configuration the SDK built from it.
    pub url: Option<UrlConfig>,
    /// `--tcp-tls-insecure` / `--websocket-tls-insecure` (§9.9).
    pub tcp_tls_insecure: bool,
    pub connect_timeout: Option<std::time::Duration>,
}

/// A transport configuration built by the SDK from a connection string,
/// with its auto-login turned off (the CLI logs in itself).
#[derive(Debug, Clone)]
pub enum UrlConfig {
    Tcp(TcpClientConfig),
    Quic(QuicClientConfig),
    Http(HttpClientConfig),
    WebSocket(WebSocketClientConfig),
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

struct Layers<'a> {
    ctx: &'a ContextTable,
}

impl Layers<'_> {
    fn text(&self, cli: &Option<String>, env_name: Option<&str>, key: &str) -> Option<String> {
        cli.clone().or_else(|| env_name.and_then(env)).or_else(|| {
            self.ctx
                .get(key)
                .and_then(|v| v.as_str())
                .map(str::to_owned)
        })
    }

    fn number<T: TryFrom<i64>>(&self, cli: Option<T>, key: &str) -> Option<T> {
        cli.or_else(|| {
            self.ctx
                .get(key)
                .and_then(|v| v.as_integer())
                .and_then(|n| T::try_from(n).ok())
        })
    }

    fn flag(&self, cli: bool, key: &str) -> bool {
        cli || self.ctx.get(key).and_then(|v| v.as_bool()).unwrap_or(false)
    }
}

pub fn merge(global: &GlobalArgs, ctx: &ContextTable) -> Result<Settings, CliError> {
    let l = Layers { ctx };
    let mut a = Args::default();
    let transport = l.text(&global.transport, Some("IGGY_CLI_TRANSPORT"), "transport");
    if let Some(t) = transport {
        // `websocket` is accepted as a synonym of `ws` (addition 9.7).
        a.transport = if t == "websocket" { "ws".to_owned() } else { t };
    }
    set(
        &mut a.encryption_key,
        l.text(
            &global.encryption_key,
            Some("IGGY_CLI_ENCRYPTION_KEY"),
            "encryption_key",
        ),
    );
    set(
        &mut a.http_api_url,
        l.text(
            &global.http_api_url,
            Some("IGGY_CLI_HTTP_API_URL"),
            "http_api_url",
        ),
    );
    set(
        &mut a.http_retries,
        l.number(global.http_retries, "http_retries"),
    );
    set(
        &mut a.tcp_server_address,
        l.text(
            &global.tcp_server_address,
            Some("IGGY_CLI_TCP_SERVER_ADDRESS"),
            "tcp_server_address",
        ),
    );
    if let Some(n) = l.number(
        global.tcp_reconnection_max_retries,
        "tcp_reconnection_max_retries",
    ) {
        a.tcp_reconnection_max_retries = Some(n);
    }
    set(
        &mut a.tcp_reconnection_interval,
        l.text(
            &global.tcp_reconnection_interval,
            None,
            "tcp_reconnection_interval",
        ),
    );
    a.tcp_tls_enabled = l.flag(global.tcp_tls_enabled, "tcp_tls_enabled");
    set(
        &mut a.tcp_tls_domain,
        l.text(&global.tcp_tls_domain, None, "tcp_tls_domain"),
    );
    merge_quic(&l, global, &mut a);
    set(
        &mut a.websocket_server_address,
        l.text(
            &global.websocket_server_address,
            Some("IGGY_CLI_WEBSOCKET_SERVER_ADDRESS"),
            "websocket_server_address",
        ),
    );
    if let Some(n) = l.number(
        global.websocket_reconnection_max_retries,
        "websocket_reconnection_max_retries",
    ) {
        a.websocket_reconnection_max_retries = Some(n);
    }
    set(
        &mut a.websocket_reconnection_interval,
        l.text(
            &global.websocket_reconnection_interval,
            None,
            "websocket_reconnection_interval",
        ),
    );
    a.tcp_tls_ca_file = l.text(&global.tcp_tls_ca_file, None, "tcp_tls_ca_file");
    a.websocket_tls_enabled = l.flag(global.websocket_tls_enabled, "websocket_tls_enabled");
    set(
        &mut a.websocket_tls_domain,
        l.text(&global.websocket_tls_domain, None, "websocket_tls_domain"),
    );
    a.websocket_tls_ca_file = l.text(&global.websocket_tls_ca_file, None, "websocket_tls_ca_file");
    a.websocket_tls_validate_certificate =
        !l.flag(global.websocket_tls_insecure, "websocket_tls_insecure");
    let mut credentials = merge_credentials(global, &l);
    let url = match global.url.clone().or_else(|| env("IGGY_CLI_URL")) {
        Some(text) => Some(apply_url(&text, &mut a, &mut credentials, global)?),
        None => None,
    };
    Ok(Settings {
        args: a,
        credentials,
        url,
        tcp_tls_insecure: l.flag(global.tcp_tls_insecure, "tcp_tls_insecure"),
        connect_timeout: global.connect_timeout,
    })
}

fn invalid_url() -> CliError {
    CliError::Client("InvalidConnectionString".to_owned())
}

/// Parses a connection string with the SDK: the transport and address it
/// names replace the merged ones, its credentials count as typed on the
/// command line unless `-u`/`-t`/`-n` were.
fn apply_url(
    text: &str,
    a: &mut Args,
    credentials: &mut CredentialFields,
    global: &GlobalArgs,
) -> Result<UrlConfig, CliError> {
    let protocol = ConnectionStringUtils::parse_protocol(text).map_err(|_| invalid_url())?;
    // The SDK parses `iggy+tcp://…` after the prefix; `iggy://` is TCP.
    let (config, login) = match protocol {
        TransportProtocol::Tcp => {
            let cs = ConnectionString::<TcpConnectionStringOptions>::new(text)
                .map_err(|_| invalid_url())?;
            let login = cs.auto_login().clone();
            let mut c = TcpClientConfig::from(cs);
            c.auto_login = AutoLogin::Disabled;
            a.transport = "tcp".into();
            a.tcp_server_address = c.server_address.clone();
            (UrlConfig::Tcp(c), login)
        }
        TransportProtocol::Quic => {
            let cs = ConnectionString::<QuicConnectionStringOptions>::new(text)
                .map_err(|_| invalid_url())?;
            let login = cs.auto_login().clone();
            let mut c = QuicClientConfig::from(cs);
            c.auto_login = AutoLogin::Disabled;
            a.transport = "quic".into();
            a.quic_server_address = c.server_address.clone();
            (UrlConfig::Quic(c), login)
        }
        TransportProtocol::Http => {
            let cs = ConnectionString::<HttpConnectionStringOptions>::new(text)
                .map_err(|_| invalid_url())?;
            let login = cs.auto_login().clone();
            let c = HttpClientConfig::from(cs);
            a.transport = "http".into();
            a.http_api_url = c.api_url.clone();
            (UrlConfig::Http(c), login)
        }
        TransportProtocol::WebSocket => {
            let cs = ConnectionString::<WebSocketConnectionStringOptions>::new(text)
                .map_err(|_| invalid_url())?;
            let login = cs.auto_login().clone();
            let mut c = WebSocketClientConfig::from(cs);
            c.auto_login = AutoLogin::Disabled;
            a.transport = "ws".into();
            a.websocket_server_address = c.server_address.clone();
            (UrlConfig::WebSocket(c), login)
        }
    };
    let typed = global.username.is_some() || global.token.is_some() || global.token_name.is_some();
    if !typed && let AutoLogin::Enabled(login) = login {
        *credentials = match login {
            Credentials::UsernamePassword(user, password) => CredentialFields {
                username: Some(user),
                password: Some(password.expose_secret().to_owned()),
                explicit: true,
                ..CredentialFields::default()
            },
            Credentials::PersonalAccessToken(token) => CredentialFields {
                token: Some(token.expose_secret().to_owned()),
                explicit: true,
                ..CredentialFields::default()
            },
        };
    }
    Ok(config)
}

fn merge_quic(l: &Layers, g: &GlobalArgs, a: &mut Args) {
    set(
        &mut a.quic_client_address,
        l.text(&g.quic_client_address, None, "quic_client_address"),
    );
    set(
        &mut a.quic_server_address,
        l.text(
            &g.quic_server_address,
            Some("IGGY_CLI_QUIC_SERVER_ADDRESS"),
            "quic_server_address",
        ),
    );
    set(
        &mut a.quic_server_name,
        l.text(&g.quic_server_name, None, "quic_server_name"),
    );
    if let Some(n) = l.number(
        g.quic_reconnection_max_retries,
        "quic_reconnection_max_retries",
    ) {
        a.quic_reconnection_max_retries = Some(n);
    }
    set(
        &mut a.quic_reconnection_interval,
        l.text(
            &g.quic_reconnection_interval,
            None,
            "quic_reconnection_interval",
        ),
    );
    set(
        &mut a.quic_max_concurrent_bidi_streams,
        l.number(
            g.quic_max_concurrent_bidi_streams,
            "quic_max_concurrent_bidi_streams",
        ),
    );
    set(
        &mut a.quic_datagram_send_buffer_size,
        l.number(
            g.quic_datagram_send_buffer_size,
            "quic_datagram_send_buffer_size",
        ),
    );
    set(
        &mut a.quic_initial_mtu,
        l.number(g.quic_initial_mtu, "quic_initial_mtu"),
    );
    set(
        &mut a.quic_send_window,
        l.number(g.quic_send_window, "quic_send_window"),
    );
    set(
        &mut a.quic_receive_window,
        l.number(g.quic_receive_window, "quic_receive_window"),
    );
    set(
        &mut a.quic_response_buffer_size,
        l.number(g.quic_response_buffer_size, "quic_response_buffer_size"),
    );
    set(
        &mut a.quic_keep_alive_interval,
        l.number(g.quic_keep_alive_interval, "quic_keep_alive_interval"),
    );
    set(
        &mut a.quic_max_idle_timeout,
        l.number(g.quic_max_idle_timeout, "quic_max_idle_timeout"),
    );
    a.quic_validate_certificate = l.flag(g.quic_validate_certificate, "quic_validate_certificate");
}

fn set<T>(slot: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *slot = v;
    }
}

fn merge_credentials(g: &GlobalArgs, l: &Layers) -> CredentialFields {
    CredentialFields {
        username: l.text(&g.username, None, "username"),
        password: l.text(&g.password, None, "password"),
        token: l.text(&g.token, Some("IGGY_CLI_TOKEN"), "token"),
        token_name: l.text(&g.token_name, Some("IGGY_CLI_TOKEN_NAME"), "token_name"),
        explicit: g.username.is_some() || g.token.is_some() || g.token_name.is_some(),
    }
}

/// The server address string of stored entries (spec §4.5; `ws` per §8 #2).
pub fn server_address(args: &Args) -> Result<String, CliError> {
    match args.transport.as_str() {
        "tcp" => Ok(args.tcp_server_address.clone()),
        "quic" => Ok(args.quic_server_address.clone()),
        "http" => Ok(args
            .http_api_url
            .strip_prefix("http://")
            .unwrap_or(&args.http_api_url)
            .to_owned()),
        "ws" => Ok(args.websocket_server_address.clone()),
        other => Err(CliError::Client(format!("InvalidTransport({other:?})"))),
    }
}
