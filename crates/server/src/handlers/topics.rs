//! Topics, partitions and segments (binary protocol §10.5, §10.6, §10.9).

use engine::metadata::permissions::Action;
use engine::metadata::{ApplyOutcome, MetadataState, OpKind, PartitionId};
use protocol::ErrorCode;
use protocol::header::Operation;
use protocol::primitives::Identifier;
use protocol::requests::{CreateTopic, DeleteSegments, PartitionsChange, TopicRef, UpdateTopic};

use super::Call;
use super::Reply;
use super::convert::{TopicView, ident, option_entries, topic_details};
use super::write::{self, CacheReply, no_payload};

/// Most partitions one request may create or delete.
pub const MAX_PARTITIONS_PER_REQUEST: u32 = 1000;

/// A missing stream or topic is an empty body.
pub fn get(call: &Call<'_>, request: &TopicRef<'_>) -> Reply {
    let metadata = call.node().metadata();
    let Ok(topic) = metadata.find_topic(&ident(&request.stream_id), &ident(&request.topic_id))
    else {
        return call.ok(&[]);
    };
    let stream = metadata
        .resolve_stream(&ident(&request.stream_id))
        .expect("the topic's stream exists");
    if !metadata.is_allowed(
        call.user(),
        Action::ReadTopic {
            stream,
            topic: topic.id,
        },
    ) {
        return call.deny(ErrorCode::Unauthorized);
    }
    call.ok(&topic_details(
        stream,
        topic,
        &call.node().ctx.partition_stats,
    ))
}

/// `count u32` then the records; a missing stream gives `count = 0`.
pub fn list(call: &Call<'_>, stream_id: Identifier<'_>) -> Reply {
    let metadata = call.node().metadata();
    let Some(stream) = metadata.find_stream(&ident(&stream_id)) else {
        return call.ok(&0u32.to_le_bytes());
    };
    if !metadata.is_allowed(call.user(), Action::ListTopics { stream: stream.id }) {
        return call.deny(ErrorCode::Unauthorized);
    }
    let stats = &call.node().ctx.partition_stats;
    let views: Vec<_> = stream
        .topics()
        .map(|t| (t, TopicView::new(stream.id, t, stats)))
        .collect();
    let infos: Vec<_> = views.iter().map(|(t, v)| v.info(t)).collect();
    let mut out = Vec::new();
    protocol::responses::encode_topics(&mut out, &infos);
    call.ok(&out)
}

fn created_topic(
    state: &MetadataState,
    outcome: &ApplyOutcome,
    stats: &crate::node::partition_stats::PartitionStatsRegistry,
) -> Vec<u8> {
    let ApplyOutcome::TopicCreated { stream, topic, .. } = outcome else {
        return Vec::new();
    };
    let topic = state
        .stream(*stream)
        .and_then(|s| s.topic(*topic))
        .expect("a created topic exists on the replica that applied it");
    topic_details(*stream, topic, stats)
}

pub async fn create(call: Call<'_>, request: CreateTopic<'_>) -> Reply {
    if request.partitions_count > MAX_PARTITIONS_PER_REQUEST {
        return call.deny(ErrorCode::TooManyPartitions);
    }
    let options = option_entries(&request.options);
    let kind = options.map(|options| OpKind::CreateTopic {
        stream: ident(&request.stream_id),
        name: request.name.as_str().to_owned(),
        partitions_count: request.partitions_count,
        options,
    });
    let ctx = call.node().ctx.clone();
    let respond = move |state: &MetadataState, outcome: &ApplyOutcome| {
        created_topic(state, outcome, &ctx.partition_stats)
    };
    write::execute_with(call, move |_| kind, respond, CacheReply::Yes).await
}

pub async fn update(call: Call<'_>, request: UpdateTopic<'_>) -> Reply {
    let kind = option_entries(&request.options).map(|options| OpKind::UpdateTopic {
        stream: ident(&request.topic.stream_id),
        topic: ident(&request.topic.topic_id),
        name: request.name.as_str().to_owned(),
        options,
    });
    write::execute_checked(call, kind).await
}

pub async fn delete(call: Call<'_>, request: TopicRef<'_>) -> Reply {
    let kind = OpKind::DeleteTopic {
        stream: ident(&request.stream_id),
        topic: ident(&request.topic_id),
    };
    write::execute(call, kind, no_payload).await
}

pub async fn purge(call: Call<'_>, request: TopicRef<'_>) -> Reply {
    let kind = OpKind::PurgeTopic {
        stream: ident(&request.stream_id),
        topic: ident(&request.topic_id),
    };
    write::execute(call, kind, no_payload).await
}

fn check_partitions_count(count: u32) -> Result<(), ErrorCode> {
    if (1..=MAX_PARTITIONS_PER_REQUEST).contains(&count) {
        Ok(())
    } else {
        Err(ErrorCode::TooManyPartitions)
    }
}

pub async fn create_partitions(call: Call<'_>, request: PartitionsChange<'_>) -> Reply {
    if let Err(code) = check_partitions_count(request.partitions_count) {
        return call.deny(code);
    }
    let kind = OpKind::CreatePartitions {
        stream: ident(&request.topic.stream_id),
        topic: ident(&request.topic.topic_id),
        count: request.partitions_count,
    };
    write::execute(call, kind, no_payload).await
}

pub async fn delete_partitions(call: Call<'_>, request: PartitionsChange<'_>) -> Reply {
    if let Err(code) = check_partitions_count(request.partitions_count) {
        return call.deny(code);
    }
    let kind = OpKind::DeletePartitions {
        stream: ident(&request.topic.stream_id),
        topic: ident(&request.topic.topic_id),
        count: request.partitions_count,
    };
    write::execute(call, kind, no_payload).await
}

/// Answered under TruncatePartition (68), which is result-framed, so
/// rejections travel in the result section (spec §10.9).
pub async fn delete_segments(mut call: Call<'_>, request: DeleteSegments<'_>) -> Reply {
    call.reply_operation = Some(Operation::TruncatePartition);
    let kind = OpKind::DeleteSegments {
        stream: ident(&request.topic.stream_id),
        topic: ident(&request.topic.topic_id),
        partition: PartitionId(request.partition_id),
        count: request.segments_count,
    };
    write::execute(call, kind, no_payload).await
}
