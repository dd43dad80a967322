//! `message send`, `message poll` and `message flush` (spec §6.5) with the
//! producing and polling additions of §9.4 and §9.5 and `poll --follow`.

use super::ProgressArgs;
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
    /// [addition] Consume messages continuously, as a regular consumer or a
    /// consumer-group member
    #[command(visible_alias = "c")]
    Consume(ConsumeArgs),
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
    #[command(flatten)]
    pub progress: ProgressArgs,
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
    /// [addition] Poll once as a member of this consumer group (joins it,
    /// polls, leaves); the partition must be one the group assigns to us
    #[arg(long, value_parser = parse::identifier, conflicts_with = "consumer")]
    pub consumer_group: Option<Identifier>,
    #[command(flatten)]
    pub format: MessageOutputArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PayloadEncoding {
    Utf8,
    Hex,
    Base64,
}

/// [addition] §9.3: how each polled or consumed message is printed.
#[derive(Debug, Clone, Args)]
pub struct MessageOutputArgs {
    /// [addition] Print each message with a template: %o offset, %p partition,
    /// %t timestamp (µs), %T timestamp (RFC 3339 UTC), %i id, %l payload
    /// length, %v payload, %h headers (key=value,…), %% and \n \t \\
    #[arg(long, conflicts_with_all = ["raw", "raw0"])]
    pub message_format: Option<String>,
    /// [addition] Print each payload's bytes followed by a newline
    #[arg(long, conflicts_with = "raw0")]
    pub raw: bool,
    /// [addition] Print each payload's bytes followed by a NUL byte
    #[arg(long)]
    pub raw0: bool,
    /// [addition] How %v and the payload column render payloads: utf8, hex or base64
    #[arg(long, value_enum)]
    pub payload_encoding: Option<PayloadEncoding>,
}

impl MessageOutputArgs {
    /// Whether stdout carries only formatted messages (§9.3).
    pub fn is_formatted(&self) -> bool {
        self.message_format.is_some() || self.raw || self.raw0
    }
}

/// Where `message consume` starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartAt {
    First,
    Last,
    Next,
    Offset(u64),
    Time(String),
}

fn start_at(text: &str) -> Result<StartAt, String> {
    match text {
        "first" => Ok(StartAt::First),
        "last" => Ok(StartAt::Last),
        "next" => Ok(StartAt::Next),
        _ => {
            if let Some(n) = text.strip_prefix("offset:") {
                return n
                    .parse()
                    .map(StartAt::Offset)
                    .map_err(|e| format!("invalid offset {n:?}: {e}"));
            }
            if let Some(t) = text.strip_prefix("time:") {
                return Ok(StartAt::Time(t.to_owned()));
            }
            Err("expected first, last, next, offset:N or time:T".to_owned())
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CommitMode {
    /// Store the offset after each printed batch
    Auto,
    /// Never store offsets
    None,
}

#[derive(Debug, Args)]
pub struct ConsumeArgs {
    /// Stream ID from which messages will be consumed
    #[arg(value_parser = parse::identifier)]
    pub stream_id: Identifier,
    /// Topic ID from which messages will be consumed
    #[arg(value_parser = parse::identifier)]
    pub topic_id: Identifier,
    /// One partition (default: all partitions, or the group's assignment)
    #[arg(long)]
    pub partition: Option<u32>,
    /// Regular consumer (default 0)
    #[arg(long, value_parser = parse::identifier)]
    pub consumer: Option<Identifier>,
    /// Consume as a member of this consumer group (joins it, polls the
    /// assigned partitions, leaves on exit)
    #[arg(long, value_parser = parse::identifier, conflicts_with_all = ["consumer", "partition"])]
    pub consumer_group: Option<Identifier>,
    /// Where to start: first, last, next, offset:N or time:T (µs, RFC 3339 or -5m)
    #[arg(long, default_value = "next", value_parser = start_at, allow_hyphen_values = true)]
    pub from: StartAt,
    /// Keep polling after reaching the end (like tail -f)
    #[arg(short = 'F', long, conflicts_with = "exit_at_end")]
    pub follow: bool,
    /// Stop once every selected partition was read up to where it ended at start
    #[arg(short = 'e', long)]
    pub exit_at_end: bool,
    /// Stop after this many messages
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_messages: Option<u64>,
    /// Stop after this long (e.g. 30s)
    #[arg(long, value_parser = humantime::parse_duration)]
    pub timeout: Option<std::time::Duration>,
    /// Wait between empty polls
    #[arg(long, default_value = "500ms", value_parser = humantime::parse_duration)]
    pub poll_interval: std::time::Duration,
    /// Messages per poll
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub batch: u32,
    /// Store offsets after each printed batch: auto (default with --consumer or
    /// --consumer-group) or none (default otherwise)
    #[arg(long, value_enum)]
    pub commit: Option<CommitMode>,
    #[command(flatten)]
    pub format: MessageOutputArgs,
    #[command(flatten)]
    pub progress: ProgressArgs,
}

/// The usage error the reference prints when no polling strategy is given.
pub const MISSING_STRATEGY: &str = "the following required arguments were not provided:\n  <--offset <OFFSET>|--first|--last|--next>";

impl PollArgs {
    pub fn missing_strategy(&self) -> bool {
        self.offset.is_none() && !self.first && !self.last && !self.next && self.timestamp.is_none()
    }
}
