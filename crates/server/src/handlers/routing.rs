//! Routed consumer traffic of a cluster (binary protocol §7.11): SDK 0.11.0
//! uses it whenever cluster metadata lists two or more nodes. A poll with
//! auto-commit and every consumer-offset write first ask the coordinator
//! (the node the client is logged in to) where the partition's group
//! primary is (103, 123); the client then opens a data connection there,
//! attaches it to its coordinator session (14) so that it acts on that
//! session's group memberships, and polls on the primary (104) or writes
//! the offset (121/122, served anywhere here: a non-primary forwards them).
//!
//! On a single node these commands are never sent (it lists one node);
//! they are refused with `FeatureUnavailable`.

use protocol::ErrorCode;
use protocol::requests::{AttachConsumerSession, OffsetTarget, PollMessages, TopicRef};
use protocol::responses::PollRouting;

use super::messages::{self, Caller, poll_action, resolve};
use super::system::roster_node;
use super::{Call, Reply};
use crate::node::cluster_state::ClusterShared;
use crate::node::partitions::PartitionAddr;

/// The namespace of the partition a request names, checked as a poll is.
fn partition_of(
    call: &Call<'_>,
    topic: &TopicRef<'_>,
    partition: Option<u32>,
) -> Result<u64, ErrorCode> {
    let metadata = call.node().metadata();
    let target = resolve(call.user(), &metadata, topic, poll_action)?;
    let partition = partition.unwrap_or(0);
    if partition >= target.partitions_count {
        return Err(ErrorCode::PartitionNotFound);
    }
    Ok(PartitionAddr {
        stream: target.stream,
        topic: target.topic,
        partition,
    }
    .ns())
}

/// The route to a partition's primary: this connection's session, the
/// metadata this node applied, and the primary's roster entry; 58 while
/// the group has no primary in a normal view (the SDK retries).
fn route(call: &Call<'_>, topic: &TopicRef<'_>, partition: Option<u32>) -> Reply {
    let shared = call.node().ctx.cluster.clone();
    let ns = match partition_of(call, topic, partition) {
        Ok(ns) => ns,
        Err(code) => return call.deny(code),
    };
    let Some(primary) = shared.partition_primary(ns) else {
        return call.deny(ErrorCode::TransientNotAccepted);
    };
    let mut out = Vec::with_capacity(96);
    roster_node(&shared, primary, |node| {
        PollRouting {
            client_id: call.bound.client,
            session: call.bound.session,
            metadata_watermark: call.node().metadata_commit(),
            primary: *node,
        }
        .encode(&mut out)
    });
    call.ok(&out)
}

/// 103: where to poll with auto-commit.
pub fn poll_route(call: &Call<'_>, request: &PollMessages<'_>) -> Reply {
    route(call, &request.topic, request.partition_id)
}

/// 123: where to write a consumer offset.
pub fn offset_route(call: &Call<'_>, target: &OffsetTarget<'_>) -> Reply {
    route(call, &target.topic, target.partition_id)
}

/// 14: this connection acts on the coordinator session's memberships. The
/// session must be a client of the same user that this node has applied
/// (a watermark above what it applied: 58, the SDK retries); the attached
/// session gains nothing else and is not kept alive by it.
pub fn attach(call: &Call<'_>, request: &AttachConsumerSession) -> Reply {
    let node = call.node();
    if request.metadata_watermark > node.metadata_commit() {
        return call.deny(ErrorCode::TransientNotAccepted);
    }
    let owner = node
        .metadata()
        .client(engine::metadata::ClientId(request.client_id))
        .map(|client| client.user_id);
    match owner {
        Some(user) if user == call.user() => {
            node.attach_session(call.session.connection_id, request.client_id);
            call.ok(&[])
        }
        Some(_) => call.deny(ErrorCode::Unauthorized),
        None => call.deny(ErrorCode::TransientNotAccepted),
    }
}

/// 104: a poll served only by the partition group's primary (58 elsewhere:
/// the SDK asks for the route again).
pub async fn poll_on_primary(call: Call<'_>, request: PollMessages<'_>) -> Reply {
    let shared = call.node().ctx.cluster.clone();
    let ns = match partition_of(&call, &request.topic, request.partition_id) {
        Ok(ns) => ns,
        Err(code) => return call.deny(code),
    };
    if !leads(&shared, ns) {
        return call.deny(ErrorCode::TransientNotAccepted);
    }
    let caller = Caller::of(&call);
    match messages::poll_partition(call.node(), caller, &request).await {
        Ok(body) => call.ok_parts(body.byte_len(), body.into_parts()),
        Err(code) => call.deny(code),
    }
}

fn leads(shared: &ClusterShared, ns: u64) -> bool {
    shared.partition_primary(ns) == Some(shared.replica)
}
