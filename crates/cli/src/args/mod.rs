//! The command line as clap parses it: global options (which must precede the
//! command), the command tree of spec §6 and the additions of §9. Value
//! grammars live in `parse`; nothing here touches the network.

pub mod global;
pub mod message;
pub mod resources;
pub mod system;

use clap::{Parser, Subcommand};

pub use global::{GlobalArgs, OutputFormat};
pub use message::MessageAction;
pub use resources::{
    ConsumerGroupAction, ConsumerOffsetAction, PartitionAction, PatAction, SegmentAction,
    StreamAction, TopicAction, UserAction,
};
pub use system::{
    ClientAction, ClusterAction, ContextAction, PingArgs, SessionAction, SnapshotArgs, StatsArgs,
};

/// The whole command line.
#[derive(Debug, Parser)]
#[command(
    name = "iggy-cli",
    bin_name = "iggy",
    version,
    about = "CLI for Iggy message streaming platform",
    max_term_width = 100
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The commands, in the order the top-level help lists them.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// stream operations
    #[command(subcommand, visible_alias = "s")]
    Stream(StreamAction),
    /// topic operations
    #[command(subcommand, visible_alias = "t")]
    Topic(TopicAction),
    /// partition operations
    #[command(subcommand, visible_alias = "p")]
    Partition(PartitionAction),
    /// segments operations
    #[command(subcommand, visible_alias = "seg")]
    Segment(SegmentAction),
    /// ping iggy server
    Ping(PingArgs),
    /// get current client info
    Me,
    /// list the options a resource's create command accepts
    Options(system::OptionsArgs),
    /// get iggy server statistics
    Stats(StatsArgs),
    /// collect iggy server troubleshooting data
    Snapshot(SnapshotArgs),
    /// personal access token operations
    #[command(subcommand)]
    Pat(PatAction),
    /// user operations
    #[command(subcommand, visible_alias = "u")]
    User(UserAction),
    /// client operations
    #[command(subcommand, visible_alias = "c")]
    Client(ClientAction),
    /// cluster operations
    #[command(subcommand, visible_alias = "cl")]
    Cluster(ClusterAction),
    /// consumer group operations
    #[command(subcommand, visible_alias = "g")]
    ConsumerGroup(ConsumerGroupAction),
    /// consumer offset operations
    #[command(subcommand, visible_alias = "o")]
    ConsumerOffset(ConsumerOffsetAction),
    /// message operations
    #[command(subcommand, visible_alias = "m")]
    Message(MessageAction),
    /// context operations
    #[command(subcommand, visible_alias = "ctx")]
    Context(ContextAction),
    /// login to Iggy server
    #[command(visible_alias = "li")]
    Login(system::LoginArgs),
    /// logout from Iggy server
    #[command(visible_alias = "lo")]
    Logout,
    /// login session operations
    #[command(subcommand, visible_alias = "sess")]
    Session(SessionAction),
    /// print a shell completion script (same as --generate)
    #[command(hide = true)]
    Completion(system::CompletionArgs),
}

/// `-l, --list-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ListMode {
    Table,
    List,
}

impl std::fmt::Display for ListMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ListMode::Table => "table",
            ListMode::List => "list",
        })
    }
}

#[derive(Debug, Clone, clap::Args)]
pub struct ListModeArg {
    /// List mode (table or list)
    #[arg(short = 'l', long = "list-mode", value_enum, default_value_t = ListMode::Table)]
    pub list_mode: ListMode,
}

/// `--progress` / `--no-progress` (addition §9.6) of the long operations.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct ProgressArgs {
    /// [addition] Show the progress line on stderr even when stderr is not a
    /// terminal or -q is set
    #[arg(long, conflicts_with = "no_progress")]
    pub progress: bool,
    /// [addition] Never show the progress line
    #[arg(long)]
    pub no_progress: bool,
}
