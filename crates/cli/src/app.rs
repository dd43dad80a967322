//! One run of the CLI after parsing (spec §5.1): read contexts, merge the
//! settings, resolve credentials, build and connect the SDK client, log in,
//! run the command, log out. Commands that never touch the network
//! (`context …`, `session status`) stop before the connection.

use crate::args::global::SessionStoreKind;
use crate::args::{Cli, Command, GlobalArgs, OutputFormat, SessionAction};
use crate::cmd::{self, Run};
use crate::context::{self, ContextState};
use crate::credentials::{self, Credentials, PromptPolicy, Resolver};
use crate::error::CliError;
use crate::output::Out;
use crate::secrets::SecretStore;
use crate::settings::{self, Settings, UrlConfig};
use iggy::prelude::{
    Aes256GcmEncryptor, Args, ClientProviderConfig, EncryptorKind, IggyClient, TransportProtocol,
    UserClient, client_provider,
};
use std::str::FromStr;
use std::sync::Arc;

pub fn output_format(global: &GlobalArgs) -> OutputFormat {
    if global.json {
        return OutputFormat::Json;
    }
    global.output_format.unwrap_or_else(|| {
        match std::env::var("IGGY_CLI_OUTPUT_FORMAT").as_deref() {
            Ok("json") => OutputFormat::Json,
            Ok("ndjson") => OutputFormat::Ndjson,
            _ => OutputFormat::Text,
        }
    })
}

fn secret_store(global: &GlobalArgs, home: &std::path::Path) -> SecretStore {
    let from_env = std::env::var("IGGY_CLI_SESSION_STORE").ok();
    let kind = global.session_store.or(match from_env.as_deref() {
        Some("file") => Some(SessionStoreKind::File),
        _ => None,
    });
    match kind {
        Some(SessionStoreKind::File) => SecretStore::File(home.join("secrets.toml")),
        _ => SecretStore::Keyring,
    }
}

pub async fn run(cli: Cli, out: &Out) -> Result<(), CliError> {
    let command = cli.command.expect("main handles the banner before run");
    let global = cli.global;
    let home = context::home_dir();
    let store = secret_store(&global, &home);
    if let Err(e) = store.status() {
        crate::output::warn(&format!("keyring backend unavailable: {e}"));
    }
    // §8 #15: the `context` commands read a broken contexts.toml section by
    // section and ignore an `.active_context` naming a missing context, so
    // they can repair both; every other command keeps failing.
    let repairing = matches!(command, Command::Context(_));
    let state = if repairing {
        let state = ContextState::load_lenient(home);
        for (name, cause) in &state.broken {
            crate::output::warn(&format!(
                "contexts.toml: context '{name}' cannot be read ({cause}); \
                 `iggy context delete {name}` removes it"
            ));
        }
        state
    } else {
        ContextState::load(home)?
    };
    let name = global
        .context
        .clone()
        .or_else(|| {
            std::env::var("IGGY_CLI_CONTEXT")
                .ok()
                .filter(|v| !v.is_empty())
        })
        .unwrap_or_else(|| state.active.clone());
    let empty = context::ContextTable::new();
    let table = match state.get(&name) {
        Err(_) if repairing => &empty,
        other => other?,
    };
    let settings = settings::merge(&global, table)?;
    let policy = PromptPolicy {
        no_input: global.no_input || std::env::var("IGGY_CLI_NO_INPUT").is_ok_and(|v| v == "1"),
        password_stdin: global.password_stdin,
    };
    match command {
        Command::Context(action) => {
            check_transport(&settings.args)?;
            cmd::context::run(action, &state, out)
        }
        Command::Session(SessionAction::Status) => {
            let server = settings::server_address(&settings.args)?;
            check_transport(&settings.args)?;
            cmd::session::status(&server, &store, out);
            Ok(())
        }
        command => connected(command, &settings, &store, policy, out).await,
    }
}

fn check_transport(args: &Args) -> Result<(), CliError> {
    TransportProtocol::from_str(&args.transport)
        .map(|_| ())
        .map_err(|_| CliError::Client(format!("InvalidTransport({:?})", args.transport)))
}

async fn connected(
    command: Command,
    settings: &Settings,
    store: &SecretStore,
    policy: PromptPolicy,
    out: &Out,
) -> Result<(), CliError> {
    let server = settings::server_address(&settings.args).ok();
    let needs_login = !matches!(command, Command::Ping(_));
    let credentials = if needs_login {
        let resolver = Resolver {
            fields: &settings.credentials,
            store,
            server: server.as_deref(),
            policy,
            is_login: matches!(command, Command::Login(_)),
        };
        Some(resolver.resolve()?)
    } else {
        None
    };
    let client = match settings.connect_timeout {
        None => connect_and_login(settings, credentials.as_ref(), store, server.as_deref()).await?,
        Some(deadline) => tokio::time::timeout(
            deadline,
            connect_and_login(settings, credentials.as_ref(), store, server.as_deref()),
        )
        .await
        .map_err(|_| {
            CliError::tool(format!(
                "could not connect and log in within {}",
                humantime::format_duration(deadline)
            ))
        })??,
    };
    let run = Run {
        client: &client,
        out,
        store,
        server,
        policy,
    };
    let result = cmd::dispatch(command, &run, credentials.as_ref()).await;
    if credentials.is_some() {
        let _ = client.logout_user().await;
    }
    result
}

async fn connect_and_login(
    settings: &Settings,
    credentials: Option<&Credentials>,
    store: &SecretStore,
    server: Option<&str>,
) -> Result<IggyClient, CliError> {
    let client = connect(settings).await?;
    if let Some(credentials) = credentials {
        credentials::login(&client, credentials, store, server).await?;
    }
    Ok(client)
}

/// Validates the encryption key, builds the transport from the SDK's own
/// configuration and connects (TCP, QUIC and WebSocket connect up front).
pub async fn connect(settings: &Settings) -> Result<IggyClient, CliError> {
    let args = &settings.args;
    let encryptor = if args.encryption_key.is_empty() {
        None
    } else {
        let key = Aes256GcmEncryptor::from_base64_key(&args.encryption_key)
            .map_err(|_| CliError::tool("Invalid encryption key provided"))?;
        Some(Arc::new(EncryptorKind::Aes256Gcm(key)))
    };
    let mut config = ClientProviderConfig::from_args_set_autologin(args.clone(), false)
        .map_err(|e| CliError::Client(format!("{e:?}")))?;
    apply_overrides(settings, &mut config);
    let raw = client_provider::get_raw_client(Arc::new(config), true)
        .await
        .map_err(|e| CliError::Client(format!("{e:?}")))?;
    Ok(IggyClient::create(raw, None, encryptor))
}

/// What the SDK's `from_args` cannot express: the `--url` configuration,
/// an unvalidated TCP certificate and a connect deadline without retries.
fn apply_overrides(settings: &Settings, config: &mut ClientProviderConfig) {
    match settings.url.clone() {
        Some(UrlConfig::Tcp(c)) => config.tcp = Some(Arc::new(c)),
        Some(UrlConfig::Quic(c)) => config.quic = Some(Arc::new(c)),
        Some(UrlConfig::Http(c)) => config.http = Some(Arc::new(c)),
        Some(UrlConfig::WebSocket(c)) => config.websocket = Some(Arc::new(c)),
        None => {}
    }
    if settings.tcp_tls_insecure
        && let Some(tcp) = &config.tcp
    {
        crate::output::warn(
            "--tcp-tls-insecure: the server's TLS certificate is NOT validated; \
             anyone on the path can read and change this connection",
        );
        let mut tcp = (**tcp).clone();
        tcp.tls_validate_certificate = false;
        config.tcp = Some(Arc::new(tcp));
    }
    if !settings.args.websocket_tls_validate_certificate && settings.args.transport == "ws" {
        crate::output::warn(
            "--websocket-tls-insecure: the server's TLS certificate is NOT validated; \
             anyone on the path can read and change this connection",
        );
    }
}
