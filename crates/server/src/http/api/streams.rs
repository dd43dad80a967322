//! Streams, topics, partitions, segments and consumer groups (HTTP API
//! spec §10–§13).

use std::collections::BTreeMap;

use engine::metadata::groups::ConsumerGroup;
use engine::metadata::permissions::Action;
use engine::metadata::stream::Stream;
use engine::metadata::topic::Topic;
use engine::metadata::topic::option_value::{OptionEntry, OptionValue};
use engine::metadata::{ApplyOutcome, MetadataState, OpKind, PartitionId, StreamId};
use protocol::ErrorCode;
use serde::Deserialize;
use serde_json::{Value, json};

use super::users::refuse_option_keys;
use super::{HttpCall, Reply, ident, number};
use crate::handlers::convert::{TopicView, stream_record, stream_totals};
use crate::handlers::topics::MAX_PARTITIONS_PER_REQUEST;
use crate::http::error::ApiError;
use crate::http::json;
use crate::node::partition_stats::PartitionStatsRegistry;
use crate::node::partitions::{PartitionAddr, PartitionOp, PartitionReply};

fn topic_json(
    stream: StreamId,
    topic: &Topic,
    stats: &PartitionStatsRegistry,
    details: bool,
) -> Value {
    let view = TopicView::new(stream, topic, stats);
    let options = json::options(&topic.client_options, &topic.derived_options());
    json::topic(
        &view.info(topic),
        options,
        details.then(|| view.partitions()),
    )
}

fn stream_json(stream: &Stream, stats: &PartitionStatsRegistry, details: bool) -> Value {
    let totals = stream_totals(stream, stats);
    let topics = details.then(|| {
        stream
            .topics()
            .map(|t| topic_json(stream.id, t, stats, false))
            .collect()
    });
    json::stream(&stream_record(stream, totals), topics)
}

fn allowed(call: &HttpCall<'_>, metadata: &MetadataState, action: Action) -> Result<(), ApiError> {
    if metadata.is_allowed(call.user(), action) {
        Ok(())
    } else {
        Err(ErrorCode::Unauthorized.into())
    }
}

pub fn list(call: &HttpCall<'_>) -> Result<Reply, ApiError> {
    let metadata = call.node().metadata();
    allowed(call, &metadata, Action::ListStreams)?;
    let stats = &call.node().ctx.partition_stats;
    let list: Vec<Value> = metadata
        .streams()
        .map(|s| stream_json(s, stats, false))
        .collect();
    Ok(Reply::json(&list))
}

pub fn get(call: &HttpCall<'_>, stream: &str) -> Result<Reply, ApiError> {
    let metadata = call.node().metadata();
    let stream = metadata
        .find_stream(&ident(stream))
        .ok_or_else(ApiError::not_found)?;
    allowed(call, &metadata, Action::GetStream { stream: stream.id })?;
    Ok(Reply::json(&stream_json(
        stream,
        &call.node().ctx.partition_stats,
        true,
    )))
}

#[derive(Deserialize)]
struct CreateStream {
    name: String,
}

pub async fn create(call: &HttpCall<'_>) -> Result<Reply, ApiError> {
    let request: CreateStream = call.json()?;
    let outcome = call
        .commit(OpKind::CreateStream { name: request.name })
        .await?;
    let ApplyOutcome::StreamCreated { stream } = outcome else {
        return Err(ErrorCode::Error.into());
    };
    let metadata = call.node().metadata();
    let stream = metadata
        .stream(stream)
        .ok_or(ApiError::iggy(ErrorCode::Error))?;
    Ok(Reply::json(&stream_json(
        stream,
        &call.node().ctx.partition_stats,
        true,
    )))
}

#[derive(Deserialize)]
struct UpdateStream {
    name: String,
    #[serde(default)]
    options: Option<BTreeMap<String, Value>>,
}

pub async fn update(call: &HttpCall<'_>, stream: &str) -> Result<Reply, ApiError> {
    let request: UpdateStream = call.json()?;
    refuse_option_keys(request.options.as_ref())?;
    call.apply(OpKind::UpdateStream {
        stream: ident(stream),
        name: request.name,
    })
    .await
}

pub async fn delete(call: &HttpCall<'_>, stream: &str) -> Result<Reply, ApiError> {
    call.apply(OpKind::DeleteStream {
        stream: ident(stream),
    })
    .await
}

pub async fn purge(call: &HttpCall<'_>, stream: &str) -> Result<Reply, ApiError> {
    call.apply(OpKind::PurgeStream {
        stream: ident(stream),
    })
    .await
}

pub fn topics(call: &HttpCall<'_>, stream: &str) -> Result<Reply, ApiError> {
    let metadata = call.node().metadata();
    let stream = metadata
        .find_stream(&ident(stream))
        .ok_or_else(ApiError::not_found)?;
    allowed(call, &metadata, Action::ListTopics { stream: stream.id })?;
    let stats = &call.node().ctx.partition_stats;
    let list: Vec<Value> = stream
        .topics()
        .map(|t| topic_json(stream.id, t, stats, false))
        .collect();
    Ok(Reply::json(&list))
}

/// A readable topic: 404 when absent (before any permission check).
fn readable_topic<'m>(
    call: &HttpCall<'_>,
    metadata: &'m MetadataState,
    stream: &str,
    topic: &str,
) -> Result<(StreamId, &'m Topic), ApiError> {
    let stream_id = metadata
        .resolve_stream(&ident(stream))
        .map_err(|_| ApiError::not_found())?;
    let topic = metadata
        .find_topic(&ident(stream), &ident(topic))
        .map_err(|_| ApiError::not_found())?;
    allowed(
        call,
        metadata,
        Action::ReadTopic {
            stream: stream_id,
            topic: topic.id,
        },
    )?;
    Ok((stream_id, topic))
}

pub fn topic(call: &HttpCall<'_>, stream: &str, topic: &str) -> Result<Reply, ApiError> {
    let metadata = call.node().metadata();
    let (stream_id, topic) = readable_topic(call, &metadata, stream, topic)?;
    Ok(Reply::json(&topic_json(
        stream_id,
        topic,
        &call.node().ctx.partition_stats,
        true,
    )))
}

/// A JSON value that may be a number or a string (sizes, expiries).
fn typed_option(key: &str, value: &Value) -> Result<OptionEntry, ApiError> {
    let value = match value {
        Value::Number(n) => n
            .as_u64()
            .map(OptionValue::U64)
            .ok_or_else(|| ApiError::iggy(ErrorCode::InvalidOptionValue))?,
        Value::String(s) => OptionValue::String(s.clone()),
        Value::Bool(b) => OptionValue::Bool(*b),
        _ => return Err(ErrorCode::InvalidOptionValue.into()),
    };
    Ok(OptionEntry::new(key, value))
}

/// The option-bearing fields of topic create and update bodies.
#[derive(Deserialize)]
struct TopicOptionsJson {
    #[serde(default)]
    compression_algorithm: Option<Value>,
    #[serde(default)]
    message_expiry: Option<Value>,
    #[serde(default)]
    max_topic_size: Option<Value>,
    #[serde(default)]
    options: Option<BTreeMap<String, Value>>,
}

impl TopicOptionsJson {
    /// The typed fields first (they win), then the string options.
    fn entries(&self) -> Result<Vec<OptionEntry>, ApiError> {
        let typed = [
            ("compression_algorithm", &self.compression_algorithm),
            ("message_expiry", &self.message_expiry),
            ("max_topic_size", &self.max_topic_size),
        ];
        let mut entries = Vec::new();
        for (key, value) in typed {
            if let Some(value) = value.as_ref().filter(|v| !v.is_null()) {
                entries.push(typed_option(key, value)?);
            }
        }
        for (key, value) in self.options.iter().flatten() {
            if entries.iter().any(|e| e.key == *key) {
                continue;
            }
            entries.push(typed_option(key, value)?);
        }
        Ok(entries)
    }
}

#[derive(Deserialize)]
struct CreateTopic {
    name: String,
    #[serde(default = "one")]
    partitions_count: u32,
    #[serde(flatten)]
    options: TopicOptionsJson,
}

fn one() -> u32 {
    1
}

pub async fn create_topic(call: &HttpCall<'_>, stream: &str) -> Result<Reply, ApiError> {
    let request: CreateTopic = call.json()?;
    if request.partitions_count > MAX_PARTITIONS_PER_REQUEST {
        return Err(ErrorCode::TooManyPartitions.into());
    }
    let options = request.options.entries()?;
    let outcome = call
        .commit(OpKind::CreateTopic {
            stream: ident(stream),
            name: request.name,
            partitions_count: request.partitions_count,
            options,
        })
        .await?;
    let ApplyOutcome::TopicCreated { stream, topic, .. } = outcome else {
        return Err(ErrorCode::Error.into());
    };
    let metadata = call.node().metadata();
    let topic = metadata
        .stream(stream)
        .and_then(|s| s.topic(topic))
        .ok_or(ApiError::iggy(ErrorCode::Error))?;
    Ok(Reply::json(&topic_json(
        stream,
        topic,
        &call.node().ctx.partition_stats,
        true,
    )))
}

#[derive(Deserialize)]
struct UpdateTopic {
    name: String,
    #[serde(flatten)]
    options: TopicOptionsJson,
}

pub async fn update_topic(
    call: &HttpCall<'_>,
    stream: &str,
    topic: &str,
) -> Result<Reply, ApiError> {
    let request: UpdateTopic = call.json()?;
    let options = request.options.entries()?;
    call.apply(OpKind::UpdateTopic {
        stream: ident(stream),
        topic: ident(topic),
        name: request.name,
        options,
    })
    .await
}

pub async fn delete_topic(
    call: &HttpCall<'_>,
    stream: &str,
    topic: &str,
) -> Result<Reply, ApiError> {
    call.apply(OpKind::DeleteTopic {
        stream: ident(stream),
        topic: ident(topic),
    })
    .await
}

pub async fn purge_topic(
    call: &HttpCall<'_>,
    stream: &str,
    topic: &str,
) -> Result<Reply, ApiError> {
    call.apply(OpKind::PurgeTopic {
        stream: ident(stream),
        topic: ident(topic),
    })
    .await
}

fn check_partitions_count(count: u32) -> Result<u32, ApiError> {
    if (1..=MAX_PARTITIONS_PER_REQUEST).contains(&count) {
        Ok(count)
    } else {
        Err(ErrorCode::TooManyPartitions.into())
    }
}

#[derive(Deserialize)]
struct CreatePartitions {
    partitions_count: u32,
}

pub async fn create_partitions(
    call: &HttpCall<'_>,
    stream: &str,
    topic: &str,
) -> Result<Reply, ApiError> {
    let request: CreatePartitions = call.json()?;
    call.commit(OpKind::CreatePartitions {
        stream: ident(stream),
        topic: ident(topic),
        count: check_partitions_count(request.partitions_count)?,
    })
    .await?;
    Ok(Reply::Empty(hyper::StatusCode::OK))
}

pub async fn delete_partitions(
    call: &HttpCall<'_>,
    stream: &str,
    topic: &str,
) -> Result<Reply, ApiError> {
    let count = call
        .param::<u32>("partitions_count")?
        .ok_or_else(|| ApiError::bad_request("partitions_count is required"))?;
    call.apply(OpKind::DeletePartitions {
        stream: ident(stream),
        topic: ident(topic),
        count: check_partitions_count(count)?,
    })
    .await
}

pub async fn delete_segments(
    call: &HttpCall<'_>,
    stream: &str,
    topic: &str,
    partition: &str,
) -> Result<Reply, ApiError> {
    let partition = number(partition, "partition_id")?;
    let count = call
        .param::<u32>("segments_count")?
        .ok_or_else(|| ApiError::bad_request("segments_count is required"))?;
    call.apply(OpKind::DeleteSegments {
        stream: ident(stream),
        topic: ident(topic),
        partition: PartitionId(partition),
        count,
    })
    .await
}

fn group_json(topic: &Topic, group: &ConsumerGroup, details: bool) -> Value {
    let mut value = json!({
        "id": group.id.0,
        "name": group.name(),
        "partitions_count": topic.partitions_count(),
        "members_count": group.members_count(),
    });
    if details {
        value["members"] = group
            .members()
            .map(|m| {
                let partitions: Vec<u32> = m.partitions.iter().map(|p| p.0).collect();
                json!({
                    "id": m.client_id.0 as u32,
                    "partitions_count": partitions.len(),
                    "partitions": partitions,
                })
            })
            .collect();
    }
    value
}

pub fn groups(call: &HttpCall<'_>, stream: &str, topic: &str) -> Result<Reply, ApiError> {
    let metadata = call.node().metadata();
    let (_, topic) = readable_topic(call, &metadata, stream, topic)?;
    let list: Vec<Value> = topic
        .groups()
        .map(|g| group_json(topic, g, false))
        .collect();
    Ok(Reply::json(&list))
}

pub fn group(
    call: &HttpCall<'_>,
    stream: &str,
    topic: &str,
    group: &str,
) -> Result<Reply, ApiError> {
    let metadata = call.node().metadata();
    let (_, found) = readable_topic(call, &metadata, stream, topic)?;
    let group = metadata
        .find_group(&ident(stream), &ident(topic), &ident(group))
        .map_err(|_| ApiError::not_found())?;
    Ok(Reply::json(&group_json(found, group, true)))
}

#[derive(Deserialize)]
struct CreateGroup {
    name: String,
}

pub async fn create_group(
    call: &HttpCall<'_>,
    stream: &str,
    topic: &str,
) -> Result<Reply, ApiError> {
    let request: CreateGroup = call.json()?;
    let outcome = call
        .commit(OpKind::CreateConsumerGroup {
            stream: ident(stream),
            topic: ident(topic),
            name: request.name,
        })
        .await?;
    let ApplyOutcome::GroupCreated {
        stream,
        topic,
        group,
    } = outcome
    else {
        return Err(ErrorCode::Error.into());
    };
    let metadata = call.node().metadata();
    let topic = metadata
        .stream(stream)
        .and_then(|s| s.topic(topic))
        .ok_or(ApiError::iggy(ErrorCode::Error))?;
    let group = topic.group(group).ok_or(ApiError::iggy(ErrorCode::Error))?;
    Ok(Reply::json(&group_json(topic, group, true)))
}

pub async fn delete_group(
    call: &HttpCall<'_>,
    stream: &str,
    topic: &str,
    group: &str,
) -> Result<Reply, ApiError> {
    call.apply(OpKind::DeleteConsumerGroup {
        stream: ident(stream),
        topic: ident(topic),
        group: ident(group),
    })
    .await
}

/// `GET .../partitions/{p}/segments` (console addition, see
/// docs/web-console.md): the partition's segments, oldest first. Reads
/// need read access to the topic, like the topic itself.
pub async fn segments(
    call: &HttpCall<'_>,
    stream: &str,
    topic: &str,
    partition: &str,
) -> Result<Reply, ApiError> {
    let partition = number(partition, "partition_id")?;
    let addr = {
        let metadata = call.node().metadata();
        let (stream_id, found) = readable_topic(call, &metadata, stream, topic)?;
        if partition >= found.partitions_count() {
            return Err(ErrorCode::PartitionNotFound.into());
        }
        PartitionAddr {
            stream: stream_id.0,
            topic: found.id.0,
            partition,
        }
    };
    let segments = match call
        .node()
        .partition(addr.ns(), PartitionOp::Segments)
        .await
    {
        PartitionReply::Segments(segments) => segments,
        PartitionReply::Failed(code) => return Err(code.into()),
        _ => return Err(ErrorCode::Error.into()),
    };
    let list: Vec<Value> = segments
        .iter()
        .map(|s| {
            json!({
                "start_offset": s.start_offset.0,
                "end_offset": s.last_offset.map(|o| o.0),
                "messages_count": s.messages,
                "size_bytes": s.size_bytes,
                "size": json::byte_size(s.size_bytes),
                "max_timestamp": s.max_timestamp,
                "sealed": s.sealed,
            })
        })
        .collect();
    Ok(Reply::json(&list))
}
