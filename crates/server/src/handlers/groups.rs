//! Consumer groups (binary protocol §10.7). Membership is keyed by the
//! client id of the joining connection.

use engine::metadata::groups::ConsumerGroup;
use engine::metadata::permissions::Action;
use engine::metadata::topic::Topic;
use engine::metadata::{ApplyOutcome, ClientId, MetadataState, OpKind};
use protocol::ErrorCode;
use protocol::requests::{CreateConsumerGroup, GroupRef, TopicRef};
use protocol::responses::{self, Assignment, ConsumerGroupInfo, GroupMember};

use super::Call;
use super::Reply;
use super::convert::ident;
use super::write::{self, CacheReply, no_payload};

fn group_info<'a>(topic: &Topic, group: &'a ConsumerGroup) -> ConsumerGroupInfo<'a> {
    ConsumerGroupInfo {
        id: group.id.0,
        partitions_count: topic.partitions_count(),
        members_count: group.members_count() as u32,
        name: group.name(),
    }
}

fn group_details(topic: &Topic, group: &ConsumerGroup) -> Vec<u8> {
    let partitions: Vec<Vec<u32>> = group
        .members()
        .map(|m| m.partitions.iter().map(|p| p.0).collect())
        .collect();
    let members: Vec<GroupMember<'_>> = group
        .members()
        .zip(&partitions)
        .map(|(m, parts)| GroupMember {
            id: m.client_id.0 as u32,
            partitions: parts,
        })
        .collect();
    let mut out = Vec::new();
    responses::encode_group_details(&mut out, &group_info(topic, group), &members);
    out
}

/// Resolves the topic and checks read access: status errors for a missing
/// stream or topic (spec §10.7), Unauthorized for a denial.
fn readable_topic<'m>(
    call: &Call<'_>,
    metadata: &'m MetadataState,
    r: &TopicRef<'_>,
) -> Result<&'m Topic, ErrorCode> {
    let stream = metadata
        .resolve_stream(&ident(&r.stream_id))
        .map_err(|_| ErrorCode::StreamIdNotFound)?;
    let topic = metadata
        .find_topic(&ident(&r.stream_id), &ident(&r.topic_id))
        .map_err(|_| ErrorCode::TopicIdNotFound)?;
    if !metadata.is_allowed(
        call.user(),
        Action::ReadTopic {
            stream,
            topic: topic.id,
        },
    ) {
        return Err(ErrorCode::Unauthorized);
    }
    Ok(topic)
}

pub fn get(call: &Call<'_>, r: &GroupRef<'_>) -> Reply {
    let metadata = call.node().metadata();
    let topic = match readable_topic(call, &metadata, &r.topic) {
        Ok(topic) => topic,
        Err(code) => return call.deny(code),
    };
    match metadata.find_group(
        &ident(&r.topic.stream_id),
        &ident(&r.topic.topic_id),
        &ident(&r.group_id),
    ) {
        Ok(group) => call.ok(&group_details(topic, group)),
        Err(_) => call.ok(&[]),
    }
}

pub fn list(call: &Call<'_>, r: &TopicRef<'_>) -> Reply {
    let metadata = call.node().metadata();
    let topic = match readable_topic(call, &metadata, r) {
        Ok(topic) => topic,
        Err(code) => return call.deny(code),
    };
    let groups: Vec<_> = topic.groups().map(|g| group_info(topic, g)).collect();
    let mut out = Vec::new();
    responses::encode_groups(&mut out, &groups);
    call.ok(&out)
}

pub async fn create(call: Call<'_>, r: CreateConsumerGroup<'_>) -> Reply {
    let kind = OpKind::CreateConsumerGroup {
        stream: ident(&r.topic.stream_id),
        topic: ident(&r.topic.topic_id),
        name: r.name.as_str().to_owned(),
    };
    let respond = |state: &MetadataState, outcome: &ApplyOutcome| {
        let ApplyOutcome::GroupCreated {
            stream,
            topic,
            group,
        } = outcome
        else {
            return Vec::new();
        };
        let topic = state
            .stream(*stream)
            .and_then(|s| s.topic(*topic))
            .expect("the group's topic exists");
        group_details(topic, topic.group(*group).expect("a created group exists"))
    };
    write::execute_with(call, move |_| Ok(kind), respond, CacheReply::Yes).await
}

pub async fn delete(call: Call<'_>, r: GroupRef<'_>) -> Reply {
    let kind = OpKind::DeleteConsumerGroup {
        stream: ident(&r.topic.stream_id),
        topic: ident(&r.topic.topic_id),
        group: ident(&r.group_id),
    };
    write::execute(call, kind, no_payload).await
}

pub async fn join(call: Call<'_>, r: GroupRef<'_>) -> Reply {
    let (stream, topic, group) = (
        ident(&r.topic.stream_id),
        ident(&r.topic.topic_id),
        ident(&r.group_id),
    );
    // Partitions with served-but-uncommitted data move only once committed
    // (or after the rebalancing timeout), so nothing is delivered twice.
    let in_flight = call
        .node()
        .in_flight_partitions(&stream, &topic, &group)
        .await;
    let client = ClientId(call.bound.client);
    let kind = OpKind::JoinConsumerGroup {
        stream,
        topic,
        group,
        client,
        in_flight,
    };
    write::execute(call, kind, no_payload).await
}

pub async fn leave(call: Call<'_>, r: GroupRef<'_>) -> Reply {
    let kind = OpKind::LeaveConsumerGroup {
        stream: ident(&r.topic.stream_id),
        topic: ident(&r.topic.topic_id),
        group: ident(&r.group_id),
        client: ClientId(call.bound.client),
    };
    write::execute(call, kind, no_payload).await
}

/// The caller's assignment; an empty body when it is not a member.
pub fn sync(call: &Call<'_>, r: &GroupRef<'_>) -> Reply {
    let metadata = call.node().metadata();
    if let Err(code) = readable_topic(call, &metadata, &r.topic) {
        return call.deny(code);
    }
    let assignment = metadata.assignment(
        &ident(&r.topic.stream_id),
        &ident(&r.topic.topic_id),
        &ident(&r.group_id),
        ClientId(call.bound.client),
    );
    match assignment {
        Ok(Some(a)) => {
            let partitions: Vec<u32> = a.partitions.iter().map(|p| p.0).collect();
            let mut out = Vec::new();
            Assignment {
                generation: a.generation,
                partitions: &partitions,
            }
            .encode(&mut out);
            call.ok(&out)
        }
        Ok(None) => call.ok(&[]),
        Err(e) => call.deny(write::error_code(e.code())),
    }
}
