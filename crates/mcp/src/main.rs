//! `iggy-mcp`: a Model Context Protocol server for an iggy server.
//!
//! Start-up, in order: logging to stderr (stdout belongs to the stdio
//! transport), the configuration (file, then environment, validated once),
//! one authenticated connection to the iggy server, the tools with their
//! permission switches, then the chosen MCP transport until the client goes
//! away (stdio) or a SIGINT/SIGTERM arrives. See docs/mcp.md.

mod config;
mod connection;
mod http;
mod permissions;
mod tools;

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use iggy::prelude::{Client, Consumer, Identifier};
use rmcp::ServiceExt as _;

use config::{Config, McpTransport};
use permissions::Permissions;
use tools::IggyTools;

#[tokio::main]
async fn main() -> ExitCode {
    init_logging();
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!("{error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> anyhow::Result<()> {
    let config = Config::load()?;
    for section in config.ignored_sections() {
        tracing::warn!("configuration section [{section}] is not supported and is ignored");
    }
    let client = Arc::new(connection::connect(&config.iggy).await?);
    let consumer_id = Identifier::from_str_value(&config.iggy.consumer)
        .with_context(|| format!("invalid iggy.consumer {:?}", config.iggy.consumer))?;
    let tools = IggyTools::new(
        client.clone(),
        Consumer::new(consumer_id),
        Permissions::new(config.permissions),
    );
    tracing::info!(
        iggy = %config.iggy.address,
        transport = ?config.transport,
        permissions = ?config.permissions,
        tools = tools.tool_names().len(),
        "iggy-mcp ready"
    );
    let served = tokio::select! {
        served = serve(&config, tools) => served,
        signal = shutdown_signal() => {
            tracing::info!("{signal} received, stopping");
            Ok(())
        }
    };
    if let Err(error) = client.shutdown().await {
        tracing::warn!(%error, "closing the iggy connection failed");
    }
    served
}

async fn serve(config: &Config, tools: IggyTools) -> anyhow::Result<()> {
    match config.transport {
        McpTransport::Stdio => {
            let running = tools.serve(rmcp::transport::stdio()).await?;
            running.waiting().await?;
            Ok(())
        }
        McpTransport::Http => http::serve(&config.http, tools).await,
    }
}

async fn shutdown_signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate()).expect("SIGTERM handler installs");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => "SIGINT",
        _ = terminate.recv() => "SIGTERM",
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,iggy_mcp=info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
}
