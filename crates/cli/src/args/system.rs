//! System, client, cluster, context and session commands (spec §6.10-6.14)
//! and the `completion` addition (§9.10).

use super::{ListModeArg, ProgressArgs};
use crate::parse;
use clap::{Args, Subcommand, ValueEnum};
use iggy::prelude::{IggyExpiry, SnapshotCompression, SystemSnapshotType};
use std::path::PathBuf;
use std::str::FromStr;

#[derive(Debug, Args)]
pub struct PingArgs {
    /// Stop after sending count Ping packets
    #[arg(short = 'c', long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub count: u32,
}

#[derive(Debug, Args)]
pub struct OptionsArgs {
    /// Resource whose options to list: topic, stream or user
    #[arg(value_parser = parse::options_scope)]
    pub scope: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StatsOutput {
    Table,
    List,
    Json,
    Toml,
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    /// List mode (table, list, JSON, TOML)
    #[arg(short = 'o', long, value_enum, default_value_t = StatsOutput::Table)]
    pub output: StatsOutput,
}

#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// Specify snapshot compression method (stored, deflated, bzip2, zstd, lzma, xz)
    #[arg(short = 'c', long, value_parser = SnapshotCompression::from_str, default_value = "deflated")]
    pub compression: SnapshotCompression,
    /// Specify types of snapshot to be included
    #[arg(short = 's', long, num_args = 1.., value_parser = snapshot_types, default_value = "filesystem_overview process_list resource_usage server_logs")]
    pub snapshot_types: Vec<Vec<SystemSnapshotType>>,
    /// Define the path where the snapshot archive will be stored
    #[arg(short = 'o', long, default_value = ".")]
    pub out_dir: PathBuf,
    #[command(flatten)]
    pub progress: ProgressArgs,
}

/// One `-s` value may hold several space-separated types.
fn snapshot_types(text: &str) -> Result<Vec<SystemSnapshotType>, String> {
    text.split_whitespace()
        .map(SystemSnapshotType::from_str)
        .collect()
}

#[derive(Debug, Subcommand)]
pub enum ClientAction {
    /// Get details of a single client with given ID
    #[command(visible_alias = "g")]
    Get {
        /// Client ID to get
        client_id: u32,
    },
    /// List all currently connected clients
    #[command(visible_alias = "l")]
    List(ListModeArg),
}

#[derive(Debug, Subcommand)]
pub enum ClusterAction {
    /// Get cluster metadata
    #[command(visible_alias = "m")]
    Metadata(ListModeArg),
}

#[derive(Debug, Args)]
pub struct ContextCreateArgs {
    /// Name of the context to create
    pub context_name: String,
    /// The transport to use: tcp, quic, http or ws
    #[arg(long)]
    pub transport: Option<String>,
    /// The server address for the TCP transport
    #[arg(long)]
    pub tcp_server_address: Option<String>,
    /// The API URL for the HTTP transport
    #[arg(long)]
    pub http_api_url: Option<String>,
    /// The server address for the QUIC transport
    #[arg(long)]
    pub quic_server_address: Option<String>,
    /// Enable TLS for the TCP transport
    #[arg(long)]
    pub tcp_tls_enabled: Option<bool>,
    /// Iggy server username
    #[arg(short = 'u', long)]
    pub username: Option<String>,
    /// Iggy server password
    #[arg(short = 'p', long)]
    pub password: Option<String>,
    /// Iggy server personal access token
    #[arg(short = 't', long)]
    pub token: Option<String>,
    /// Name of a personal access token stored in the secure storage
    #[arg(short = 'n', long)]
    pub token_name: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum ContextAction {
    /// List all contexts
    #[command(visible_alias = "l")]
    List(ListModeArg),
    /// Set the active context
    #[command(visible_alias = "u")]
    Use {
        /// Name of the context to use
        context_name: String,
    },
    /// Create a new context
    #[command(visible_alias = "c")]
    Create(ContextCreateArgs),
    /// Delete an existing context
    #[command(visible_alias = "d")]
    Delete {
        /// Name of the context to delete
        context_name: String,
    },
    /// Show details of a specific context
    #[command(visible_alias = "s")]
    Show {
        /// Name of the context to show
        context_name: String,
    },
}

#[derive(Debug, Args)]
pub struct LoginArgs {
    /// Login session expiry time in human-readable format like "15days 2min 2s" (default 15 minutes)
    #[arg(value_parser = parse::expiry)]
    pub expiry: Vec<IggyExpiry>,
}

#[derive(Debug, Subcommand)]
pub enum SessionAction {
    /// Check the status of the login session
    #[command(visible_alias = "s")]
    Status,
}

#[derive(Debug, Args)]
pub struct CompletionArgs {
    /// Shell for which to print the completion script
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}
