//! Messages and consumer offsets (HTTP API spec §14, §15). The JSON batch
//! is turned into the same batch record the binary protocol carries, and a
//! poll's binary reply is rendered as JSON, so both transports share the
//! partition path.

use std::time::Instant;

use engine::metadata::ClientId;
use engine::metadata::topic::options::Durability;
use hyper::StatusCode;
use protocol::ErrorCode;
use protocol::http_json::decode_send_body;
use protocol::primitives::{Consumer, ConsumerKind, Identifier, PollingStrategy};
use protocol::requests::{OffsetTarget, PollMessages, TopicRef};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{HttpCall, Reply, ident};
use crate::handlers::messages::{
    Caller, append, poll_partition, read_offset, remove_offset, write_offset,
};
use crate::http::error::ApiError;

fn identifier(text: &str) -> Identifier<'_> {
    match text.parse::<u32>() {
        Ok(id) => Identifier::Numeric(id),
        Err(_) => Identifier::Name(text),
    }
}

fn topic_ref<'a>(stream: &'a str, topic: &'a str) -> TopicRef<'a> {
    TopicRef {
        stream_id: identifier(stream),
        topic_id: identifier(topic),
    }
}

/// HTTP callers are never group members: client id 0 (spec §15.3).
fn caller(call: &HttpCall<'_>) -> Caller {
    Caller {
        user: call.user(),
        client: ClientId(0),
    }
}

pub async fn send(call: &HttpCall<'_>, stream: &str, topic: &str) -> Result<Reply, ApiError> {
    let started = Instant::now();
    let ack_none = match call.param::<String>("ack")?.as_deref() {
        None | Some("replicated") => false,
        Some("none") => true,
        Some(other) => return Err(ApiError::bad_request(format!("unknown ack '{other}'"))),
    };
    let batch = decode_send_body(
        call.body,
        crate::node::process_stats::now_us(),
        rand::random::<u128>,
    )?;
    let (target, record) = (batch.target, batch.record);
    let bytes = record.len() as u64;
    let count = u64::from(batch.messages);
    let node = call.node();
    if ack_none {
        let shard = call.app.shard.clone();
        let (stream, topic, user) = (stream.to_owned(), topic.to_owned(), call.user());
        compio::runtime::spawn(async move {
            let topic = topic_ref(&stream, &topic);
            match append(&shard.node, user, &topic, &target.wire(), record).await {
                Ok(_) => shard.node.ctx.metrics.messages_in(count, bytes),
                Err(code) => tracing::debug!(?code, "an unacknowledged HTTP batch was refused"),
            }
        })
        .detach();
        return Ok(Reply::Produced {
            status: StatusCode::ACCEPTED,
            durability: "none",
            body: Vec::new(),
        });
    }
    let confirmation = append(
        node,
        call.user(),
        &topic_ref(stream, topic),
        &target.wire(),
        record,
    )
    .await?;
    node.ctx.metrics.messages_in(count, bytes);
    node.ctx.metrics.observe_send(started.elapsed());
    let durability = {
        let metadata = node.metadata();
        let persisted = metadata
            .find_topic(&ident(stream), &ident(topic))
            .is_ok_and(|t| t.options.durability == Durability::Persisted);
        if persisted { "persisted" } else { "replicated" }
    };
    let body = json!({"confirmations": [{
        "stream_id": confirmation.stream_id,
        "topic_id": confirmation.topic_id,
        "partition_id": confirmation.partition_id,
        "base_offset": confirmation.base_offset,
    }]});
    Ok(Reply::Produced {
        status: StatusCode::CREATED,
        durability,
        body: serde_json::to_vec(&body).unwrap_or_default(),
    })
}

fn strategy(kind: &str, value: u64) -> Result<PollingStrategy, ApiError> {
    Ok(match kind {
        "offset" => PollingStrategy::Offset(value),
        "timestamp" => PollingStrategy::Timestamp(value),
        "first" => PollingStrategy::First,
        "last" => PollingStrategy::Last,
        "next" => PollingStrategy::Next,
        _ => {
            return Err(ApiError::bad_request(format!(
                "unknown polling kind '{kind}'"
            )));
        }
    })
}

/// Missing entities read as the generic not-found body; a missing
/// partition keeps its typed body.
fn read_error(code: ErrorCode) -> ApiError {
    match code {
        ErrorCode::StreamIdNotFound
        | ErrorCode::TopicIdNotFound
        | ErrorCode::ConsumerGroupIdNotFound
        | ErrorCode::ResourceNotFound => ApiError::not_found(),
        other => ApiError::iggy(other),
    }
}

pub async fn poll(call: &HttpCall<'_>, stream: &str, topic: &str) -> Result<Reply, ApiError> {
    let started = Instant::now();
    let consumer_id = call
        .param::<String>("consumer_id")?
        .unwrap_or_else(|| "1".into());
    let kind = call
        .param::<String>("kind")?
        .unwrap_or_else(|| "offset".into());
    let request = PollMessages {
        consumer: Consumer {
            kind: ConsumerKind::Consumer,
            id: identifier(&consumer_id),
        },
        topic: topic_ref(stream, topic),
        partition_id: Some(call.param("partition_id")?.unwrap_or(0)),
        strategy: strategy(&kind, call.param("value")?.unwrap_or(0))?,
        count: call.param("count")?.unwrap_or(10),
        auto_commit: call.param("auto_commit")?.unwrap_or(false),
    };
    let node = call.node();
    let body = poll_partition(node, caller(call), &request)
        .await
        .map_err(read_error)?;
    let json = super::poll_json::render(&body).ok_or(ApiError::iggy(ErrorCode::Error))?;
    node.ctx.metrics.messages_out(
        u64::from(body.header.messages_count),
        body.byte_len() as u64,
    );
    node.ctx.metrics.observe_poll(started.elapsed());
    Ok(Reply::Json(StatusCode::OK, json))
}

pub async fn get_offset(call: &HttpCall<'_>, stream: &str, topic: &str) -> Result<Reply, ApiError> {
    let consumer_id = call
        .param::<String>("consumer_id")?
        .ok_or_else(|| ApiError::bad_request("consumer_id is required"))?;
    let target = OffsetTarget {
        consumer: Consumer {
            kind: ConsumerKind::Consumer,
            id: identifier(&consumer_id),
        },
        topic: topic_ref(stream, topic),
        partition_id: Some(call.param("partition_id")?.unwrap_or(0)),
    };
    let info = read_offset(call.node(), caller(call), &target)
        .await
        .map_err(|code| match code {
            ErrorCode::PartitionNotFound => ApiError::not_found(),
            other => read_error(other),
        })?
        .ok_or_else(ApiError::not_found)?;
    Ok(Reply::json(&json!({
        "partition_id": info.partition_id,
        "current_offset": info.current_offset,
        "stored_offset": info.stored_offset,
    })))
}

/// A consumer id sent as a string or a number.
#[derive(Deserialize)]
#[serde(untagged)]
enum ConsumerIdJson {
    Number(u32),
    Text(String),
}

impl ConsumerIdJson {
    fn text(&self) -> String {
        match self {
            ConsumerIdJson::Number(n) => n.to_string(),
            ConsumerIdJson::Text(t) => t.clone(),
        }
    }
}

#[derive(Deserialize)]
struct StoreOffset {
    consumer_id: ConsumerIdJson,
    #[serde(default)]
    partition_id: Option<u32>,
    offset: u64,
}

pub async fn store_offset(
    call: &HttpCall<'_>,
    stream: &str,
    topic: &str,
) -> Result<Reply, ApiError> {
    let request: StoreOffset = call.json()?;
    let consumer_id = request.consumer_id.text();
    let target = OffsetTarget {
        consumer: Consumer {
            kind: ConsumerKind::Consumer,
            id: identifier(&consumer_id),
        },
        topic: topic_ref(stream, topic),
        partition_id: Some(request.partition_id.unwrap_or(0)),
    };
    write_offset(call.node(), caller(call), &target, request.offset).await?;
    Ok(Reply::no_content())
}

pub async fn delete_offset(
    call: &HttpCall<'_>,
    stream: &str,
    topic: &str,
    consumer_id: &str,
) -> Result<Reply, ApiError> {
    let target = OffsetTarget {
        consumer: Consumer {
            kind: ConsumerKind::Consumer,
            id: identifier(consumer_id),
        },
        topic: topic_ref(stream, topic),
        partition_id: Some(call.param("partition_id")?.unwrap_or(0)),
    };
    remove_offset(call.node(), caller(call), &target).await?;
    Ok(Reply::no_content())
}

/// One partition's line of a group's offsets (console addition, see
/// docs/web-console.md).
#[derive(Serialize)]
struct GroupPartitionOffset {
    partition_id: u32,
    current_offset: u64,
    messages_count: u64,
    /// `None` when the group never stored an offset on this partition.
    stored_offset: Option<u64>,
    lag: u64,
}

/// `GET .../consumer-groups/{g}/offsets`: the group's stored offset on
/// every partition of the topic, with the partition's current offset and
/// the lag between them. Reads need the poll rule, like offset reads.
pub async fn group_offsets(
    call: &HttpCall<'_>,
    stream: &str,
    topic: &str,
    group: &str,
) -> Result<Reply, ApiError> {
    let (group_id, partitions) = {
        let node = call.node();
        let metadata = node.metadata();
        let found = metadata
            .find_topic(&ident(stream), &ident(topic))
            .map_err(|_| ApiError::not_found())?;
        let group = metadata
            .find_group(&ident(stream), &ident(topic), &ident(group))
            .map_err(|_| ApiError::not_found())?;
        let stream_id = metadata
            .resolve_stream(&ident(stream))
            .map_err(|_| ApiError::not_found())?;
        let stats = &node.ctx.partition_stats;
        let partitions: Vec<_> = found
            .partitions()
            .iter()
            .map(|p| stats.partition_info(stream_id, found.id, p.id, p.created_at_us))
            .collect();
        (group.id.0.to_string(), partitions)
    };
    let mut lines = Vec::with_capacity(partitions.len());
    for partition in partitions {
        let target = OffsetTarget {
            consumer: Consumer {
                kind: ConsumerKind::ConsumerGroup,
                id: identifier(&group_id),
            },
            topic: topic_ref(stream, topic),
            partition_id: Some(partition.id),
        };
        let stored = read_offset(call.node(), caller(call), &target)
            .await
            .map_err(read_error)?
            .map(|info| info.stored_offset);
        // Without a committed offset everything still retained is unread
        // (segments deleted by retention are not lag).
        let lag = match stored {
            Some(stored) => partition
                .current_offset
                .saturating_sub(stored)
                .min(partition.messages_count),
            None => partition.messages_count,
        };
        lines.push(GroupPartitionOffset {
            partition_id: partition.id,
            current_offset: partition.current_offset,
            messages_count: partition.messages_count,
            stored_offset: stored,
            lag,
        });
    }
    Ok(Reply::json(&lines))
}
