//! Messages and consumer offsets (binary protocol §10.8, §10.10, §11): the
//! handler resolves the target and checks permissions on this shard, then
//! runs the partition operation on the partition's owner.

use engine::metadata::permissions::Action;
use engine::metadata::topic::Topic;
use engine::metadata::{ClientId, MetadataState, StreamId};
use protocol::ErrorCode;
use protocol::batch::{BatchError, Verify};
use protocol::checksum::xxh32;
use protocol::primitives::{ConsumerKind as WireConsumerKind, PollingStrategy};
use protocol::requests::{
    DeleteConsumerOffset, FlushUnsavedBuffer, OffsetTarget, PollMessages, SendMessages,
    StoreConsumerOffset, TopicRef,
};
use protocol::responses::{self, ConsumerOffsetInfo, PollReplyHeader, SendConfirmation};
use storage::offsets::ConsumerKind;

use super::Call;
use super::convert::ident;
use crate::node::partitions::{
    ConsumerKey, POLL_MAX_BYTES, PartitionAddr, PartitionOp, PartitionReply, PollStart,
};
use crate::session::Reply;

/// A resolved topic: ids, partition count, and the caller's permission.
struct Target {
    stream: u32,
    topic: u32,
    partitions_count: u32,
}

fn resolve(
    call: &Call<'_>,
    metadata: &MetadataState,
    r: &TopicRef<'_>,
    action: fn(StreamId, engine::metadata::TopicId) -> Action,
) -> Result<Target, ErrorCode> {
    let stream = metadata
        .resolve_stream(&ident(&r.stream_id))
        .map_err(|_| ErrorCode::StreamIdNotFound)?;
    let topic: &Topic = metadata
        .find_topic(&ident(&r.stream_id), &ident(&r.topic_id))
        .map_err(|_| ErrorCode::TopicIdNotFound)?;
    if !metadata.is_allowed(call.user(), action(stream, topic.id)) {
        return Err(ErrorCode::Unauthorized);
    }
    Ok(Target {
        stream: stream.0,
        topic: topic.id.0,
        partitions_count: topic.partitions_count(),
    })
}

fn poll_action(stream: StreamId, topic: engine::metadata::TopicId) -> Action {
    Action::PollMessages { stream, topic }
}

fn send_action(stream: StreamId, topic: engine::metadata::TopicId) -> Action {
    Action::SendMessages { stream, topic }
}

fn batch_error_code(e: &BatchError) -> ErrorCode {
    match e {
        BatchError::MessageChecksum { .. } => ErrorCode::InvalidMessageChecksum,
        BatchError::BatchChecksum => ErrorCode::InvalidBatchChecksum,
        BatchError::EmptyPayload { .. } => ErrorCode::EmptyMessagePayload,
        _ => ErrorCode::InvalidCommand,
    }
}

pub async fn send(call: Call<'_>, request: SendMessages<'_>, body: &[u8]) -> Reply {
    let target = {
        let metadata = call.node().metadata();
        match resolve(
            &call,
            &metadata,
            &TopicRef {
                stream_id: request.stream_id,
                topic_id: request.topic_id,
            },
            send_action,
        ) {
            Ok(target) => target,
            Err(ErrorCode::StreamIdNotFound | ErrorCode::TopicIdNotFound) => {
                return call.deny(ErrorCode::ResourceNotFound);
            }
            Err(code) => return call.deny(code),
        }
    };
    if let Err(e) = request.validate(body, Verify::Checksums) {
        tracing::debug!("refused a batch: {e}");
        return call.deny(batch_error_code(&e));
    }
    let partition = match request.partitioning.resolve(target.partitions_count) {
        Some(p) => p,
        None => {
            let topic_ns = crate::shard::ownership::namespace(target.stream, target.topic, 0);
            call.node().next_balanced(topic_ns, target.partitions_count)
        }
    };
    if partition >= target.partitions_count {
        return call.deny(ErrorCode::ResourceNotFound);
    }
    let addr = PartitionAddr {
        stream: target.stream,
        topic: target.topic,
        partition,
    };
    let record = request.record(body).to_vec();
    match call
        .node()
        .partition(addr.ns(), PartitionOp::Append { record })
        .await
    {
        PartitionReply::Appended { base_offset } => {
            let mut out = Vec::with_capacity(24);
            let confirmation = SendConfirmation {
                stream_id: target.stream,
                topic_id: target.topic,
                partition_id: partition,
                base_offset,
            };
            responses::encode_send_confirmations(&mut out, &[confirmation]);
            call.ok(&out)
        }
        PartitionReply::Failed(code) => call.deny(code),
        other => unexpected(&call, other),
    }
}

fn unexpected(call: &Call<'_>, reply: PartitionReply) -> Reply {
    tracing::error!(?reply, "unexpected partition reply");
    call.deny(ErrorCode::Error)
}

/// How a consumer is keyed, and (for a group member) which partitions it
/// may use now.
enum Consumer {
    Single(ConsumerKey),
    /// `owned`: partitions the caller may poll; `committable`: those it may
    /// write the group's offset for (owned, plus partitions it is handing
    /// over while their revocation is pending).
    Group {
        key: ConsumerKey,
        owned: Vec<u32>,
        committable: Vec<u32>,
    },
}

fn consumer_of(
    call: &Call<'_>,
    metadata: &MetadataState,
    r: &TopicRef<'_>,
    kind: WireConsumerKind,
    id: &protocol::primitives::Identifier<'_>,
) -> Result<Consumer, ErrorCode> {
    match kind {
        WireConsumerKind::Consumer => {
            let numeric = match *id {
                protocol::primitives::Identifier::Numeric(n) => n,
                protocol::primitives::Identifier::Name(name) => xxh32(name.as_bytes()),
            };
            Ok(Consumer::Single((ConsumerKind::Consumer, numeric)))
        }
        WireConsumerKind::ConsumerGroup => {
            let group = metadata
                .find_group(&ident(&r.stream_id), &ident(&r.topic_id), &ident(id))
                .map_err(|_| ErrorCode::ConsumerGroupIdNotFound)?;
            let client = ClientId(call.bound.client);
            let owned: Vec<u32> = group
                .member(client)
                .map(|m| m.partitions.iter().map(|p| p.0).collect())
                .unwrap_or_default();
            let handing_over = group
                .pending_revocations()
                .filter(|p| p.from == client)
                .map(|p| p.partition.0);
            let committable = owned.iter().copied().chain(handing_over).collect();
            Ok(Consumer::Group {
                key: (ConsumerKind::ConsumerGroup, group.id.0),
                owned,
                committable,
            })
        }
    }
}

fn poll_start(strategy: PollingStrategy) -> PollStart {
    match strategy {
        PollingStrategy::Offset(offset) => PollStart::Offset(offset),
        PollingStrategy::Timestamp(ts) => PollStart::Timestamp(ts),
        PollingStrategy::First => PollStart::First,
        PollingStrategy::Last => PollStart::Last,
        PollingStrategy::Next => PollStart::Next,
    }
}

pub async fn poll(call: Call<'_>, request: PollMessages<'_>) -> Reply {
    let resolved = {
        let metadata = call.node().metadata();
        resolve(&call, &metadata, &request.topic, poll_action).and_then(|target| {
            let consumer = consumer_of(
                &call,
                &metadata,
                &request.topic,
                request.consumer.kind,
                &request.consumer.id,
            )?;
            Ok((target, consumer))
        })
    };
    let (target, consumer) = match resolved {
        Ok(resolved) => resolved,
        Err(code) => return call.deny(code),
    };
    let (key, partition) = match consumer {
        Consumer::Single(key) => (key, request.partition_id.unwrap_or(0)),
        Consumer::Group { key, owned, .. } => {
            match request.partition_id.or_else(|| owned.first().copied()) {
                Some(p) if owned.contains(&p) => (key, p),
                _ => return stale_assignment(&call),
            }
        }
    };
    if partition >= target.partitions_count {
        return call.deny(ErrorCode::PartitionNotFound);
    }
    let addr = PartitionAddr {
        stream: target.stream,
        topic: target.topic,
        partition,
    };
    let op = PartitionOp::Poll {
        start: poll_start(request.strategy),
        count: request.count,
        consumer: key,
        auto_commit: request.auto_commit,
        max_bytes: POLL_MAX_BYTES,
    };
    match call.node().partition(addr.ns(), op).await {
        PartitionReply::Polled(body) => call.ok(&body),
        PartitionReply::Failed(code) => call.deny(code),
        other => unexpected(&call, other),
    }
}

/// An empty poll telling a group member to re-read its assignment.
fn stale_assignment(call: &Call<'_>) -> Reply {
    let mut out = Vec::with_capacity(PollReplyHeader::SIZE);
    PollReplyHeader::stale_assignment(0).encode(&mut out);
    call.ok(&out)
}

/// Resolves an offset target: the partition, and the consumer key. Group
/// writes are only allowed for partitions the caller owns.
fn offset_target(
    call: &Call<'_>,
    target: &OffsetTarget<'_>,
    write: bool,
) -> Result<(PartitionAddr, ConsumerKey), ErrorCode> {
    let metadata = call.node().metadata();
    let resolved = resolve(call, &metadata, &target.topic, poll_action);
    let topic = match resolved {
        Ok(topic) => topic,
        Err(ErrorCode::StreamIdNotFound | ErrorCode::TopicIdNotFound) if write => {
            return Err(ErrorCode::ResourceNotFound);
        }
        Err(code) => return Err(code),
    };
    let consumer = consumer_of(
        call,
        &metadata,
        &target.topic,
        target.consumer.kind,
        &target.consumer.id,
    )
    .map_err(|code| {
        if write {
            ErrorCode::ResourceNotFound
        } else {
            code
        }
    })?;
    let partition = match (target.partition_id, write) {
        (Some(p), _) => p,
        (None, false) => 0,
        (None, true) => return Err(ErrorCode::ResourceNotFound),
    };
    if partition >= topic.partitions_count {
        return Err(if write {
            ErrorCode::ResourceNotFound
        } else {
            ErrorCode::PartitionNotFound
        });
    }
    let key = match consumer {
        Consumer::Single(key) => key,
        Consumer::Group {
            key, committable, ..
        } if !write || committable.contains(&partition) => key,
        Consumer::Group { .. } => return Err(ErrorCode::ResourceNotFound),
    };
    Ok((
        PartitionAddr {
            stream: topic.stream,
            topic: topic.topic,
            partition,
        },
        key,
    ))
}

pub async fn get_offset(call: Call<'_>, target: OffsetTarget<'_>) -> Reply {
    let (addr, consumer) = match offset_target(&call, &target, false) {
        Ok(resolved) => resolved,
        Err(code) => return call.deny(code),
    };
    match call
        .node()
        .partition(addr.ns(), PartitionOp::GetOffset { consumer })
        .await
    {
        PartitionReply::Offset(None) => call.ok(&[]),
        PartitionReply::Offset(Some((current_offset, stored_offset))) => {
            let mut out = Vec::with_capacity(20);
            ConsumerOffsetInfo {
                partition_id: addr.partition,
                current_offset,
                stored_offset,
            }
            .encode(&mut out);
            call.ok(&out)
        }
        PartitionReply::Failed(code) => call.deny(code),
        other => unexpected(&call, other),
    }
}

pub async fn store_offset(call: Call<'_>, request: StoreConsumerOffset<'_>) -> Reply {
    let (addr, consumer) = match offset_target(&call, &request.target, true) {
        Ok(resolved) => resolved,
        Err(code) => return call.deny(code),
    };
    let op = PartitionOp::StoreOffset {
        consumer,
        offset: request.offset,
    };
    match call.node().partition(addr.ns(), op).await {
        PartitionReply::Stored { caught_up } => {
            if caught_up && consumer.0 == ConsumerKind::ConsumerGroup {
                call.node().complete_revocation(addr, consumer.1).await;
            }
            call.ok(&[])
        }
        PartitionReply::Failed(code) => call.deny(code),
        other => unexpected(&call, other),
    }
}

pub async fn delete_offset(call: Call<'_>, request: DeleteConsumerOffset<'_>) -> Reply {
    let (addr, consumer) = match offset_target(&call, &request.target, true) {
        Ok(resolved) => resolved,
        Err(code) => return call.deny(code),
    };
    done(
        &call,
        call.node()
            .partition(addr.ns(), PartitionOp::DeleteOffset { consumer })
            .await,
    )
}

fn done(call: &Call<'_>, reply: PartitionReply) -> Reply {
    match reply {
        PartitionReply::Done => call.ok(&[]),
        PartitionReply::Failed(code) => call.deny(code),
        other => unexpected(call, other),
    }
}

pub async fn flush(call: Call<'_>, request: FlushUnsavedBuffer<'_>) -> Reply {
    let target = {
        let metadata = call.node().metadata();
        match resolve(&call, &metadata, &request.topic, send_action) {
            Ok(target) => target,
            Err(code) => return call.deny(code),
        }
    };
    if request.partition_id >= target.partitions_count {
        return call.deny(ErrorCode::PartitionNotFound);
    }
    let addr = PartitionAddr {
        stream: target.stream,
        topic: target.topic,
        partition: request.partition_id,
    };
    done(
        &call,
        call.node()
            .partition(
                addr.ns(),
                PartitionOp::Flush {
                    fsync: request.fsync,
                },
            )
            .await,
    )
}
