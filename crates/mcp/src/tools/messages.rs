//! Message tools. `poll_messages` reads with the configured consumer; a
//! poll that commits the consumer offset changes server state, so it needs
//! the update permission (an explicit `auto_commit: true`), and the `next`
//! strategy commits only when updates are enabled. `send_messages` creates
//! data. Payloads travel as text both ways: polled payloads that are not
//! UTF-8 come back base64-encoded under `payload_base64`.

use base64::Engine as _;
use bytes::Bytes;
use iggy::prelude::{
    IggyMessage, IggyTimestamp, MessageClient, Partitioning, PolledMessages, PollingStrategy,
};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{schemars, tool, tool_router};
use serde::{Deserialize, Serialize};

use super::IggyTools;
use super::reply::{ToolError, identifier, json};
use crate::permissions::ToolClass::{Create, Read, Update};

/// Messages returned by a poll when the agent does not say.
pub const POLL_COUNT_DEFAULT: u32 = 10;
/// The most messages one poll may return: a reply is read by a model, and
/// its context is finite.
pub const POLL_COUNT_MAX: u32 = 1_000;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct PollMessages {
    #[schemars(description = "stream id (number) or name")]
    pub stream_id: String,
    #[schemars(description = "topic id (number) or name")]
    pub topic_id: String,
    #[schemars(description = "partition id (optional, number)")]
    pub partition_id: Option<u32>,
    #[schemars(
        description = "where to start (optional): offset (default), first, last, next or timestamp"
    )]
    pub strategy: Option<String>,
    #[schemars(description = "offset to start from, for the offset strategy (default 0)")]
    pub offset: Option<u64>,
    #[schemars(
        description = "microseconds since the Unix epoch to start from, for the timestamp strategy (default now)"
    )]
    pub timestamp: Option<u64>,
    #[schemars(description = "how many messages at most (optional, 1 to 1000, default 10)")]
    pub count: Option<u32>,
    #[schemars(
        description = "store the consumer offset after the poll (optional; needs the update permission; the next strategy commits by default when updates are enabled)"
    )]
    pub auto_commit: Option<bool>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct SendMessages {
    #[schemars(description = "stream id (number) or name")]
    pub stream_id: String,
    #[schemars(description = "topic id (number) or name")]
    pub topic_id: String,
    #[schemars(description = "partition id, for the partition partitioning (number)")]
    pub partition_id: Option<u32>,
    #[schemars(
        description = "how to choose the partition (optional): balanced, key or partition; by default partition when partition_id is given, key when messages_key is given, else balanced"
    )]
    pub partitioning: Option<String>,
    #[schemars(description = "key whose hash picks the partition, for the key partitioning")]
    pub messages_key: Option<String>,
    #[schemars(description = "the messages to send (at least one)")]
    pub messages: Vec<OutgoingMessage>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct OutgoingMessage {
    #[schemars(description = "message id (optional, number; the server assigns one when absent)")]
    pub id: Option<u128>,
    #[schemars(description = "message payload as text (non-empty)")]
    pub payload: String,
}

/// A polled message as an agent reads it. The 128-bit id is a decimal
/// string: JSON numbers past 2^64 (and past 2^53 in many clients) lose
/// digits.
#[derive(Debug, Serialize)]
struct PolledMessage {
    offset: u64,
    id: String,
    timestamp: u64,
    origin_timestamp: u64,
    checksum: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    payload: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    payload_base64: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    user_headers_base64: Option<String>,
}

#[derive(Debug, Serialize)]
struct PollReply {
    partition_id: u32,
    current_offset: u64,
    count: usize,
    messages: Vec<PolledMessage>,
}

#[tool_router(router = messages_router, vis = "pub(super)")]
impl IggyTools {
    #[tool(
        description = "Read messages from a topic partition (strategies: offset, first, last, next, timestamp)",
        annotations(read_only_hint = true)
    )]
    async fn poll_messages(&self, Parameters(args): Parameters<PollMessages>) -> CallToolResult {
        let commit_allowed = self.permissions.allows(Update);
        let auto_commit = args
            .auto_commit
            .unwrap_or(commit_allowed && args.strategy.as_deref() == Some("next"));
        let class = if auto_commit { Update } else { Read };
        self.run("poll_messages", class, async {
            let stream = identifier(&args.stream_id)?;
            let topic = identifier(&args.topic_id)?;
            let strategy = polling_strategy(&args)?;
            let count = poll_count(args.count)?;
            let polled = self
                .client
                .poll_messages(
                    &stream,
                    &topic,
                    args.partition_id,
                    &self.consumer,
                    &strategy,
                    count,
                    auto_commit,
                )
                .await?;
            json(poll_reply(polled))
        })
        .await
    }

    #[tool(
        description = "Send text messages to a topic (requires the create permission)",
        annotations(read_only_hint = false, destructive_hint = false)
    )]
    async fn send_messages(&self, Parameters(args): Parameters<SendMessages>) -> CallToolResult {
        self.run("send_messages", Create, async {
            let stream = identifier(&args.stream_id)?;
            let topic = identifier(&args.topic_id)?;
            let partitioning = partitioning(&args)?;
            let mut messages = outgoing(args.messages)?;
            self.client
                .send_messages(&stream, &topic, &partitioning, &mut messages)
                .await?;
            json(serde_json::json!({ "ok": true, "sent": messages.len() }))
        })
        .await
    }
}

fn polling_strategy(args: &PollMessages) -> Result<PollingStrategy, ToolError> {
    let strategy = match args.strategy.as_deref().unwrap_or("offset") {
        "offset" => PollingStrategy::offset(args.offset.unwrap_or(0)),
        "first" => PollingStrategy::first(),
        "last" => PollingStrategy::last(),
        "next" => PollingStrategy::next(),
        "timestamp" => {
            let micros = args
                .timestamp
                .unwrap_or_else(|| IggyTimestamp::now().as_micros());
            PollingStrategy::timestamp(IggyTimestamp::from(micros))
        }
        other => {
            return Err(ToolError(format!(
                "unknown strategy {other:?}: use offset, first, last, next or timestamp"
            )));
        }
    };
    Ok(strategy)
}

fn poll_count(count: Option<u32>) -> Result<u32, ToolError> {
    let count = count.unwrap_or(POLL_COUNT_DEFAULT);
    if count == 0 || count > POLL_COUNT_MAX {
        return Err(ToolError(format!(
            "count must be between 1 and {POLL_COUNT_MAX}, not {count}"
        )));
    }
    Ok(count)
}

fn partitioning(args: &SendMessages) -> Result<Partitioning, ToolError> {
    let default = match (args.partition_id, &args.messages_key) {
        (Some(_), _) => "partition",
        (None, Some(_)) => "key",
        (None, None) => "balanced",
    };
    match args.partitioning.as_deref().unwrap_or(default) {
        "balanced" => Ok(Partitioning::balanced()),
        "partition" => match args.partition_id {
            Some(partition_id) => Ok(Partitioning::partition_id(partition_id)),
            None => Err(ToolError(
                "partitioning \"partition\" needs partition_id".to_owned(),
            )),
        },
        "key" => match args.messages_key.as_deref() {
            Some(key) if !key.is_empty() => Partitioning::messages_key_str(key)
                .map_err(|error| ToolError(format!("invalid messages_key: {error}"))),
            _ => Err(ToolError(
                "partitioning \"key\" needs a non-empty messages_key".to_owned(),
            )),
        },
        other => Err(ToolError(format!(
            "unknown partitioning {other:?}: use balanced, key or partition"
        ))),
    }
}

fn outgoing(messages: Vec<OutgoingMessage>) -> Result<Vec<IggyMessage>, ToolError> {
    if messages.is_empty() {
        return Err(ToolError("messages must not be empty".to_owned()));
    }
    messages
        .into_iter()
        .map(|message| {
            IggyMessage::builder()
                .maybe_id(message.id)
                .payload(Bytes::from(message.payload))
                .build()
                .map_err(ToolError::from)
        })
        .collect()
}

fn poll_reply(polled: PolledMessages) -> PollReply {
    let base64 = base64::engine::general_purpose::STANDARD;
    let messages: Vec<PolledMessage> = polled
        .messages
        .into_iter()
        .map(|message| {
            let text = std::str::from_utf8(&message.payload)
                .ok()
                .map(str::to_owned);
            let payload_base64 = text.is_none().then(|| base64.encode(&message.payload));
            PolledMessage {
                offset: message.header.offset,
                id: message.header.id.to_string(),
                timestamp: message.header.timestamp,
                origin_timestamp: message.header.origin_timestamp,
                checksum: message.header.checksum,
                payload: text,
                payload_base64,
                user_headers_base64: message.user_headers.map(|headers| base64.encode(headers)),
            }
        })
        .collect();
    PollReply {
        partition_id: polled.partition_id,
        current_offset: polled.current_offset,
        count: messages.len(),
        messages,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send_args(partition_id: Option<u32>, key: Option<&str>, mode: Option<&str>) -> SendMessages {
        SendMessages {
            stream_id: "s".to_owned(),
            topic_id: "t".to_owned(),
            partition_id,
            partitioning: mode.map(str::to_owned),
            messages_key: key.map(str::to_owned),
            messages: Vec::new(),
        }
    }

    #[test]
    fn given_no_partitioning_when_choosing_should_follow_the_arguments_given() {
        let by_partition = partitioning(&send_args(Some(2), None, None)).expect("valid");
        assert_eq!(by_partition, Partitioning::partition_id(2));
        let by_key = partitioning(&send_args(None, Some("k"), None)).expect("valid");
        assert_eq!(
            by_key,
            Partitioning::messages_key_str("k").expect("valid key")
        );
        let balanced = partitioning(&send_args(None, None, None)).expect("valid");
        assert_eq!(balanced, Partitioning::balanced());
    }

    #[test]
    fn given_partition_mode_without_an_id_when_choosing_should_refuse() {
        assert!(partitioning(&send_args(None, None, Some("partition"))).is_err());
        assert!(partitioning(&send_args(None, None, Some("key"))).is_err());
        assert!(partitioning(&send_args(None, None, Some("round_robin"))).is_err());
    }

    #[test]
    fn given_counts_when_polling_should_default_to_ten_and_bound_the_range() {
        assert_eq!(poll_count(None), Ok(POLL_COUNT_DEFAULT));
        assert!(poll_count(Some(0)).is_err());
        assert!(poll_count(Some(POLL_COUNT_MAX + 1)).is_err());
        assert_eq!(poll_count(Some(POLL_COUNT_MAX)), Ok(POLL_COUNT_MAX));
    }
}
