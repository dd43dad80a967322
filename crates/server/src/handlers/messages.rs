//! Messages and consumer offsets (binary protocol §10.8, §10.10, §11): the
//! handler resolves the target and checks permissions on this shard, then
//! runs the partition operation on the partition's owner.

use engine::metadata::permissions::Action;
use engine::metadata::topic::Topic;
use engine::metadata::{ClientId, MetadataState, StreamId, UserId};
use protocol::ErrorCode;
use protocol::batch::{BatchError, Verify};
use protocol::checksum::xxh32;
use protocol::header::HEADER_SIZE;
use protocol::primitives::{ConsumerKind as WireConsumerKind, Partitioning, PollingStrategy};
use protocol::requests::{
    DeleteConsumerOffset, FlushUnsavedBuffer, OffsetTarget, PollMessages, SendMessages,
    StoreConsumerOffset, TopicRef,
};
use protocol::responses::{self, ConsumerOffsetInfo, PollReplyHeader, SendConfirmation};
use storage::Offset;
use storage::offsets::ConsumerKind;

use super::convert::ident;
use super::{Call, Reply, write};
use crate::node::Node;
use crate::node::partitions::{
    Committed, ConsumerKey, POLL_MAX_BYTES, PartitionAddr, PartitionOp, PartitionReply, PollStart,
    PolledBody,
};

/// A resolved topic: ids, partition count, and the caller's permission.
pub(super) struct Target {
    pub stream: u32,
    pub topic: u32,
    pub partitions_count: u32,
}

pub(super) fn resolve(
    user: UserId,
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
    if !metadata.is_allowed(user, action(stream, topic.id)) {
        return Err(ErrorCode::Unauthorized);
    }
    Ok(Target {
        stream: stream.0,
        topic: topic.id.0,
        partitions_count: topic.partitions_count(),
    })
}

pub(super) fn poll_action(stream: StreamId, topic: engine::metadata::TopicId) -> Action {
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

/// SendMessages with the whole request frame: the batch is validated where
/// it arrived and stored as a slice of the frame, without a copy.
pub async fn send(call: Call<'_>, frame: Vec<u8>) -> Reply {
    let started = std::time::Instant::now();
    let body = &frame[HEADER_SIZE..];
    let request = match SendMessages::decode(body) {
        Ok(request) => request,
        Err(e) => {
            tracing::debug!("undecodable SendMessages body: {e}");
            return call.deny(ErrorCode::InvalidCommand);
        }
    };
    // With encryption on, sealing verifies the checksums in the pass that
    // seals each frame (`Keyring::encrypt_record`), so they are hashed once.
    let verify = match call.node().ctx.encryption {
        Some(_) => Verify::Layout,
        None => Verify::Checksums,
    };
    if let Err(e) = request.validate(body, verify) {
        tracing::debug!("refused a batch: {e}");
        return call.deny(batch_error_code(&e));
    }
    let topic = TopicRef {
        stream_id: request.stream_id,
        topic_id: request.topic_id,
    };
    let addr = match route_append(call.node(), call.user(), &topic, &request.partitioning) {
        Ok(addr) => addr,
        Err(
            ErrorCode::StreamIdNotFound | ErrorCode::TopicIdNotFound | ErrorCode::PartitionNotFound,
        ) => return call.deny(ErrorCode::ResourceNotFound),
        Err(code) => return call.deny(code),
    };
    crate::telemetry::record_partition(addr.stream, addr.topic, addr.partition);
    call.session.partition.set(Some(addr.ns()));
    let range = HEADER_SIZE + request.batch.start..HEADER_SIZE + request.batch.end;
    let (count, bytes) = (request.messages_count, range.len() as u64);
    let node = call.node();
    let appended = async move {
        let (confirmation, committed) = append_numbered(node, addr, frame, range).await?;
        node.ctx.metrics.messages_in(u64::from(count), bytes);
        node.ctx.metrics.observe_send(started.elapsed());
        let mut out = Vec::with_capacity(24);
        responses::encode_send_confirmations(&mut out, &[confirmation]);
        Ok((out, committed))
    };
    write_once(&call, appended).await
}

/// Runs a partition write at most once per request number (binary
/// protocol §7.4.2): a retry of a completed one gets the same reply bytes
/// (the same offsets), never a second append. A failure changed nothing,
/// so it releases the request for a retry, except 57 (it may have
/// committed), which every retry gets again. `run` does nothing until polled,
/// which happens only after admission. The reply carries the op the
/// partition's group numbered the write and its commit point.
async fn write_once(
    call: &Call<'_>,
    run: impl Future<Output = Result<(Vec<u8>, Committed), ErrorCode>>,
) -> Reply {
    if let Err(answer) = write::admit(call) {
        return answer;
    }
    match run.await {
        Ok((payload, committed)) => {
            let reply = call
                .builder()
                .op(committed.op.0)
                .commit(committed.commit.0)
                .success(&payload);
            write::complete(call, call.node().metadata_commit(), Some(reply.clone()));
            Reply::frame(reply)
        }
        // It may have committed (replication spec §7.2): a replay of this
        // request gets this same answer and never runs it again.
        Err(ErrorCode::TransientNotCommitted) => {
            let reply = call.builder().rejection(ErrorCode::TransientNotCommitted);
            write::complete(call, call.node().metadata_commit(), Some(reply.clone()));
            Reply::frame(reply)
        }
        Err(code) => {
            write::abandon(call);
            call.deny(code)
        }
    }
}

/// Appends one validated batch record to the partition `partitioning` picks,
/// on the partition's owner. Transport-neutral: the caller maps the errors.
pub async fn append(
    node: &Node,
    user: UserId,
    topic: &TopicRef<'_>,
    partitioning: &Partitioning<'_>,
    record: Vec<u8>,
) -> Result<SendConfirmation, ErrorCode> {
    let addr = route_append(node, user, topic, partitioning)?;
    let whole = 0..record.len();
    store_append(node, addr, record, whole).await
}

/// The partition a batch goes to, after the send permission check.
pub fn route_append(
    node: &Node,
    user: UserId,
    topic: &TopicRef<'_>,
    partitioning: &Partitioning<'_>,
) -> Result<PartitionAddr, ErrorCode> {
    let target = resolve(user, &node.metadata(), topic, send_action)?;
    let partition = match partitioning.resolve(target.partitions_count) {
        Some(p) => p,
        None => {
            let topic_ns = crate::node::ownership::namespace(target.stream, target.topic, 0);
            node.next_balanced(topic_ns, target.partitions_count)
        }
    };
    if partition >= target.partitions_count {
        return Err(ErrorCode::PartitionNotFound);
    }
    Ok(PartitionAddr {
        stream: target.stream,
        topic: target.topic,
        partition,
    })
}

/// Stores the record at `buffer[range]` on the partition's owner.
pub async fn store_append(
    node: &Node,
    addr: PartitionAddr,
    buffer: Vec<u8>,
    range: std::ops::Range<usize>,
) -> Result<SendConfirmation, ErrorCode> {
    let (confirmation, _) = append_numbered(node, addr, buffer, range).await?;
    Ok(confirmation)
}

/// `store_append`, with the op the partition's group numbered it.
async fn append_numbered(
    node: &Node,
    addr: PartitionAddr,
    buffer: Vec<u8>,
    range: std::ops::Range<usize>,
) -> Result<(SendConfirmation, Committed), ErrorCode> {
    let (buffer, range) = seal(node, buffer, range)?;
    match node
        .partition(addr.ns(), PartitionOp::Append { buffer, range })
        .await
    {
        PartitionReply::Appended {
            base_offset,
            committed,
        } => {
            let confirmation = SendConfirmation {
                stream_id: addr.stream,
                topic_id: addr.topic,
                partition_id: addr.partition,
                base_offset: base_offset.0,
            };
            Ok((confirmation, committed))
        }
        other => Err(failure(other)),
    }
}

/// Encryption at rest (storage spec §14): a produced batch is sealed here,
/// on the shard that received it (so the cipher work spreads over the
/// shards), before it travels to the partition's owner; the owner stamps
/// and stores the sealed record like any other. Sealing verifies every
/// checksum (a wrong one is refused as without encryption). Without
/// encryption the record goes on untouched.
fn seal(
    node: &Node,
    buffer: Vec<u8>,
    range: std::ops::Range<usize>,
) -> Result<(Vec<u8>, std::ops::Range<usize>), ErrorCode> {
    let Some(keyring) = &node.ctx.encryption else {
        return Ok((buffer, range));
    };
    let record = buffer.get(range).ok_or(ErrorCode::InvalidCommand)?;
    let sealed = keyring.encrypt_record(record).map_err(|e| {
        tracing::debug!("refused a batch to encrypt: {e}");
        batch_error_code(&e)
    })?;
    let whole = 0..sealed.len();
    Ok((sealed, whole))
}

/// The error of a partition reply that is not the expected success.
fn failure(reply: PartitionReply) -> ErrorCode {
    match reply {
        PartitionReply::Failed(code) => code,
        other => {
            tracing::error!(reply = ?other, "unexpected partition reply");
            ErrorCode::Error
        }
    }
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
    client: ClientId,
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
        PollingStrategy::Offset(offset) => PollStart::Offset(Offset(offset)),
        PollingStrategy::Timestamp(ts) => PollStart::Timestamp(ts),
        PollingStrategy::First => PollStart::First,
        PollingStrategy::Last => PollStart::Last,
        PollingStrategy::Next => PollStart::Next,
    }
}

pub async fn poll(call: Call<'_>, request: PollMessages<'_>) -> Reply {
    let caller = Caller::of(&call);
    let started = std::time::Instant::now();
    match poll_noting(call.node(), caller, &request, call.session.partition).await {
        Ok(body) => {
            let metrics = &call.node().ctx.metrics;
            metrics.messages_out(
                u64::from(body.header.messages_count),
                body.byte_len() as u64,
            );
            metrics.observe_poll(started.elapsed());
            call.ok_parts(body.byte_len(), body.into_parts())
        }
        Err(code) => call.deny(code),
    }
}

/// Who is asking: the user (for permissions) and the client (for group
/// membership).
#[derive(Debug, Clone, Copy)]
pub struct Caller {
    pub user: UserId,
    pub client: ClientId,
}

impl Caller {
    /// The user of the connection, and the client whose group memberships
    /// it acts on: its own, or the coordinator session it attached to
    /// (ATTACH_CONSUMER_SESSION, binary protocol §7.11).
    pub(super) fn of(call: &Call<'_>) -> Self {
        let client = call
            .node()
            .attached_session(call.session.connection_id)
            .unwrap_or(call.bound.client);
        Self {
            user: call.user(),
            client: ClientId(client),
        }
    }
}

/// Polls one partition on its owner; the reply body is the binary poll
/// reply (header and shared record slices), which each transport renders
/// its own way.
pub async fn poll_partition(
    node: &Node,
    caller: Caller,
    request: &PollMessages<'_>,
) -> Result<PolledBody, ErrorCode> {
    poll_noting(node, caller, request, &std::cell::Cell::new(None)).await
}

/// `poll_partition`, noting the partition it polls in `noted`.
async fn poll_noting(
    node: &Node,
    caller: Caller,
    request: &PollMessages<'_>,
    noted: &std::cell::Cell<Option<u64>>,
) -> Result<PolledBody, ErrorCode> {
    let (target, consumer) = {
        let metadata = node.metadata();
        let target = resolve(caller.user, &metadata, &request.topic, poll_action)?;
        let consumer = consumer_of(
            caller.client,
            &metadata,
            &request.topic,
            request.consumer.kind,
            &request.consumer.id,
        )?;
        (target, consumer)
    };
    let (key, partition) = match consumer {
        Consumer::Single(key) => (key, request.partition_id.unwrap_or(0)),
        Consumer::Group { key, owned, .. } => {
            match request.partition_id.or_else(|| owned.first().copied()) {
                Some(p) if owned.contains(&p) => (key, p),
                _ => return Ok(stale_assignment()),
            }
        }
    };
    if partition >= target.partitions_count {
        return Err(ErrorCode::PartitionNotFound);
    }
    let addr = PartitionAddr {
        stream: target.stream,
        topic: target.topic,
        partition,
    };
    crate::telemetry::record_partition(addr.stream, addr.topic, addr.partition);
    noted.set(Some(addr.ns()));
    let op = PartitionOp::Poll {
        start: poll_start(request.strategy),
        count: request.count,
        consumer: key,
        auto_commit: request.auto_commit,
        max_bytes: POLL_MAX_BYTES,
    };
    match node.partition(addr.ns(), op).await {
        // Sealed records were opened on the partition's owner.
        PartitionReply::Polled(body) => Ok(body),
        other => Err(failure(other)),
    }
}

/// An empty poll telling a group member to re-read its assignment.
fn stale_assignment() -> PolledBody {
    PolledBody {
        header: PollReplyHeader::stale_assignment(0),
        records: Vec::new(),
    }
}

/// Resolves an offset target: the partition, and the consumer key. Group
/// writes are only allowed for partitions the caller owns.
fn offset_target(
    node: &Node,
    caller: Caller,
    target: &OffsetTarget<'_>,
    write: bool,
) -> Result<(PartitionAddr, ConsumerKey), ErrorCode> {
    let metadata = node.metadata();
    let resolved = resolve(caller.user, &metadata, &target.topic, poll_action);
    let topic = match resolved {
        Ok(topic) => topic,
        Err(ErrorCode::StreamIdNotFound | ErrorCode::TopicIdNotFound) if write => {
            return Err(ErrorCode::ResourceNotFound);
        }
        Err(code) => return Err(code),
    };
    let consumer = consumer_of(
        caller.client,
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
    match read_offset(call.node(), Caller::of(&call), &target).await {
        Ok(None) => call.ok(&[]),
        Ok(Some(info)) => {
            let mut out = Vec::with_capacity(20);
            info.encode(&mut out);
            call.ok(&out)
        }
        Err(code) => call.deny(code),
    }
}

/// A consumer's stored offset and the partition's current offset; `None`
/// when nothing was stored.
pub async fn read_offset(
    node: &Node,
    caller: Caller,
    target: &OffsetTarget<'_>,
) -> Result<Option<ConsumerOffsetInfo>, ErrorCode> {
    let (addr, consumer) = offset_target(node, caller, target, false)?;
    match node
        .partition(addr.ns(), PartitionOp::GetOffset { consumer })
        .await
    {
        PartitionReply::Offset(offsets) => {
            Ok(
                offsets.map(|(current_offset, stored_offset)| ConsumerOffsetInfo {
                    partition_id: addr.partition,
                    current_offset: current_offset.0,
                    stored_offset: stored_offset.0,
                }),
            )
        }
        other => Err(failure(other)),
    }
}

pub async fn store_offset(call: Call<'_>, request: StoreConsumerOffset<'_>) -> Reply {
    let caller = Caller::of(&call);
    let node = call.node();
    let stored = async move {
        let offset = Offset(request.offset);
        let wait = request.ack == protocol::requests::AckLevel::Quorum;
        let committed = store_numbered(node, caller, &request.target, offset, wait).await?;
        Ok((Vec::new(), committed))
    };
    write_once(&call, stored).await
}

/// Stores a consumer's offset; a group member that has caught up on a
/// partition it is handing over completes the hand-over.
pub async fn write_offset(
    node: &Node,
    caller: Caller,
    target: &OffsetTarget<'_>,
    offset: u64,
) -> Result<(), ErrorCode> {
    store_numbered(node, caller, target, Offset(offset), true).await?;
    Ok(())
}

/// `write_offset`, with the op the partition's group numbered it.
async fn store_numbered(
    node: &Node,
    caller: Caller,
    target: &OffsetTarget<'_>,
    offset: Offset,
    wait: bool,
) -> Result<Committed, ErrorCode> {
    let (addr, consumer) = offset_target(node, caller, target, true)?;
    let op = PartitionOp::StoreOffset {
        consumer,
        offset,
        wait,
    };
    match node.partition(addr.ns(), op).await {
        PartitionReply::Stored {
            caught_up,
            committed,
        } => {
            if caught_up && consumer.0 == ConsumerKind::ConsumerGroup {
                node.complete_revocation(addr, consumer.1).await;
            }
            Ok(committed)
        }
        other => Err(failure(other)),
    }
}

pub async fn delete_offset(call: Call<'_>, request: DeleteConsumerOffset<'_>) -> Reply {
    let caller = Caller::of(&call);
    let node = call.node();
    let removed = async move {
        let wait = request.ack == protocol::requests::AckLevel::Quorum;
        let committed = remove_numbered(node, caller, &request.target, wait).await?;
        Ok((Vec::new(), committed))
    };
    write_once(&call, removed).await
}

/// Deletes a consumer's stored offset.
pub async fn remove_offset(
    node: &Node,
    caller: Caller,
    target: &OffsetTarget<'_>,
) -> Result<(), ErrorCode> {
    remove_numbered(node, caller, target, true).await?;
    Ok(())
}

/// `remove_offset`, with the op the partition's group numbered it.
async fn remove_numbered(
    node: &Node,
    caller: Caller,
    target: &OffsetTarget<'_>,
    wait: bool,
) -> Result<Committed, ErrorCode> {
    let (addr, consumer) = offset_target(node, caller, target, true)?;
    let op = PartitionOp::DeleteOffset { consumer, wait };
    match node.partition(addr.ns(), op).await {
        PartitionReply::Deleted(committed) => Ok(committed),
        other => Err(failure(other)),
    }
}

fn done(reply: PartitionReply) -> Result<(), ErrorCode> {
    match reply {
        PartitionReply::Done => Ok(()),
        other => Err(failure(other)),
    }
}

fn reply_done(call: &Call<'_>, result: Result<(), ErrorCode>) -> Reply {
    match result {
        Ok(()) => call.ok(&[]),
        Err(code) => call.deny(code),
    }
}

pub async fn flush(call: Call<'_>, request: FlushUnsavedBuffer<'_>) -> Reply {
    let target = {
        let metadata = call.node().metadata();
        match resolve(call.user(), &metadata, &request.topic, send_action) {
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
    let reply = call
        .node()
        .partition(
            addr.ns(),
            PartitionOp::Flush {
                fsync: request.fsync,
            },
        )
        .await;
    reply_done(&call, done(reply))
}
