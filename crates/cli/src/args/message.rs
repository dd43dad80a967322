//! `message send`, `message poll` and `message flush` (spec §6.5) with the
//! producing and polling additions of §9.4 and §9.5 and `poll --follow`.

use crate::parse;
use clap::{Args, Subcommand, ValueEnum};
use iggy::prelude::Identifier;
use std::path::PathBuf;

#[derive(Debug, Subcommand)]
pub enum MessageAction {
    /// Send messages to given topic ID and given stream ID
    #[command(visible_alias = "s")]
    Send(SendArgs),
    /// Poll messages from given topic ID and given stream ID
    #[command(visible_alias = "p")]
    Poll(PollArgs),
    /// Flush messages from given topic ID and given stream ID (unsupported by some servers)
    #[command(visible_alias = "f")]
    Flush {
        #[arg(value_parser = parse::identifier)]
        stream_id: Identifier,
        #[arg(value_parser = parse::identifier)]
        topic_id: Identifier,
        /// Partition ID
        partition_id: u32,
        /// fsync flushed data to disk
        #[arg(short = 'f', long)]
        fsync: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InputFormat {
    /// One message per line (the reference behaviour)
    Lines,
    /// One message per NUL-terminated record
    Null,
    /// All of the input as one message
    Raw,
}

#[derive(Debug, Args)]
pub struct SendArgs {
    /// ID of the stream to which the message will be sent
    #[arg(value_parser = parse::identifier)]
    pub stream_id: Identifier,
    /// ID of the topic to which the message will be sent
    #[arg(value_parser = parse::identifier)]
    pub topic_id: Identifier,
    /// ID of the partition to which the message will be sent
    #[arg(short = 'p', long, group = "partitioning")]
    pub partition_id: Option<u32>,
    /// Messages key which will be used to partition the messages
    #[arg(short = 'm', long, value_parser = parse::message_key, group = "partitioning")]
    pub message_key: Option<String>,
    /// Messages to be sent; without them (and without --input-file) stdin is read line by line
    #[arg(group = "input")]
    pub messages: Vec<String>,
    /// Comma separated list of key:kind:value headers sent with every message
    #[arg(short = 'H', long, value_parser = parse::headers)]
    pub headers: Vec<parse::HeaderList>,
    /// Input file with messages in the binary message file format ("-" reads stdin)
    #[arg(long, group = "input", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub input_file: Option<String>,
    /// [addition] How stdin is split into messages: lines (default), null or raw
    #[arg(long, value_enum)]
    pub input_format: Option<InputFormat>,
    /// [addition] Each input line is KEY<DELIMITER>PAYLOAD; the key partitions that message
    #[arg(long, conflicts_with_all = ["partition_id", "message_key"])]
    pub key_delimiter: Option<String>,
    /// [addition] Send in batches of this many messages (default: one batch)
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub batch_size: Option<u32>,
    /// [addition] Message ID (u128) for a single-message send
    #[arg(long)]
    pub message_id: Option<u128>,
    /// [addition] Show a progress bar on stderr even when it is not a terminal
    #[arg(long, conflicts_with = "no_progress")]
    pub progress: bool,
    /// [addition] Never show a progress bar
    #[arg(long)]
    pub no_progress: bool,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("polling_strategy").args(["offset", "first", "last", "next"])))]
pub struct PollArgs {
    // One strategy is required; the check lives in `PollArgs::missing_strategy`
    // so that the usage error keeps the reference's group text.
    /// Stream ID from which messages will be polled
    #[arg(value_parser = parse::identifier)]
    pub stream_id: Identifier,
    /// Topic ID from which messages will be polled
    #[arg(value_parser = parse::identifier)]
    pub topic_id: Identifier,
    /// Partition ID from which messages will be polled
    pub partition_id: u32,
    /// Number of messages to poll
    #[arg(short = 'm', long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub message_count: u32,
    /// Auto commit offset
    #[arg(short = 'a', long)]
    pub auto_commit: bool,
    /// Polling strategy - offset to start polling messages from
    #[arg(short = 'o', long)]
    pub offset: Option<u64>,
    /// Polling strategy - start polling from the first message in the partition
    #[arg(short = 'f', long)]
    pub first: bool,
    /// Polling strategy - start polling from the last message in the partition
    #[arg(short = 'l', long)]
    pub last: bool,
    /// Polling strategy - start polling from the next message
    #[arg(short = 'n', long)]
    pub next: bool,
    /// [addition] Polling strategy - messages at or after a time: microseconds,
    /// RFC 3339 or relative to now (-5m)
    #[arg(long, allow_hyphen_values = true, conflicts_with = "polling_strategy")]
    pub timestamp: Option<String>,
    /// Regular consumer which will poll messages
    #[arg(short = 'c', long, default_value = "0", value_parser = parse::identifier)]
    pub consumer: Identifier,
    /// Include the message headers in the output
    #[arg(short = 's', long)]
    pub show_headers: bool,
    /// Store polled messages into file in binary format
    #[arg(long)]
    pub output_file: Option<PathBuf>,
    /// [addition] Keep polling for new messages until interrupted (Ctrl-C)
    #[arg(short = 'F', long, conflicts_with = "output_file")]
    pub follow: bool,
    /// [addition] Wait between empty polls with --follow
    #[arg(long, default_value = "500ms", value_parser = humantime::parse_duration)]
    pub poll_interval: std::time::Duration,
}

/// The usage error the reference prints when no polling strategy is given.
pub const MISSING_STRATEGY: &str = "the following required arguments were not provided:\n  <--offset <OFFSET>|--first|--last|--next>";

impl PollArgs {
    pub fn missing_strategy(&self) -> bool {
        self.offset.is_none() && !self.first && !self.last && !self.next && self.timestamp.is_none()
    }
}
