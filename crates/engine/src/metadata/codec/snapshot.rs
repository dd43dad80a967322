//! The snapshot encoding of a whole [`MetadataState`] (checksums and file
//! framing are added by the storage layer).
//!
//! ```text
//! snapshot  = u16 version (= 2; 1 is read) | vec<stream> | vec<user> | vec<client>
//! stream    = u32 id | str name | u64 created_at_us | vec<topic>
//! topic     = u32 id | str name | u64 created_at_us | options | vec<option_entry> client options
//!             | u32 next_group_id | u64 purge_generation | vec<u64 partition created_at_us> | vec<group>
//! options   = u8 compression (1 none, 2 gzip) | u64 message_expiry_us (MAX = never)
//!             | u64 max_topic_size (MAX = unlimited) | u64 segment_size | u8 durability (1 replicated, 2 persisted)
//!             | u8 offset durability | u32 messages_required_to_save | u64 size_required_to_save | bool preallocate
//! group     = u32 id | str name | u64 created_at_us | u64 generation | vec<member> | vec<pending>
//! member    = u128 client | u64 joined_at_us | vec<u32 partition>
//! pending   = u32 partition | u128 from | u128 to | u64 since_us
//! user      = u32 id | str username | str password_hash | user_status | opt<permissions> | u64 created_at_us | vec<token>
//! token     = str name | str token_hash | u64 created_at_us | opt<u64> expires_at_us
//! client    = u128 id | u32 user | transport | str address | u64 registered_at_us
//!             | opt<u8> node (version 2; absent in version 1)
//! ```
//!
//! Partition IDs are implicit (their index). Records appear in ascending ID
//! order. Decoding checks every invariant the state relies on (ID limits,
//! unique IDs and names, valid group assignments, members being registered
//! clients) and refuses an inconsistent snapshot instead of asserting.

use super::primitives::{
    CodecError, Put, Reader, put_option_entries, put_permissions, read_option_entries,
    read_permissions, read_transport, read_user_status, transport_code, user_status_code,
};
use crate::metadata::groups::{ConsumerGroup, GroupMember, PendingRevocation};
use crate::metadata::ids::{
    ClientId, ConsumerGroupId, PARTITION_ID_LIMIT, PartitionId, STREAM_ID_LIMIT, StreamId,
    TOPIC_ID_LIMIT, TopicId, UserId,
};
use crate::metadata::state::MetadataState;
use crate::metadata::stream::Stream;
use crate::metadata::topic::options::{
    CompressionAlgorithm, Durability, MaxTopicSize, MessageExpiry, TopicOptions,
};
use crate::metadata::topic::{Partition, Topic, TopicHeader};
use crate::metadata::user::{ClientSession, PersonalAccessToken, User, UserHeader};

/// Current snapshot encoding version.
pub const SNAPSHOT_FORMAT_VERSION: u16 = 2;
/// The version before clients named their cluster node; still read.
const SNAPSHOT_FORMAT_V1: u16 = 1;

fn inconsistent(reason: &'static str) -> CodecError {
    CodecError::Inconsistent { reason }
}

impl MetadataState {
    /// Appends the snapshot encoding of the whole state to `out`.
    pub fn encode_snapshot(&self, out: &mut Vec<u8>) {
        out.put_u16(SNAPSHOT_FORMAT_VERSION);
        out.put_len(self.streams.len());
        for stream in self.streams.values() {
            out.put_u32(stream.id.0);
            out.put_str(stream.name());
            out.put_u64(stream.created_at_us);
            out.put_len(stream.topics.len());
            for topic in stream.topics() {
                put_topic(out, topic);
            }
        }
        out.put_len(self.users.len());
        for user in self.users.values() {
            put_user(out, user);
        }
        out.put_len(self.clients.len());
        for client in self.clients.values() {
            out.put_u128(client.id.0);
            out.put_u32(client.user_id.0);
            out.put_u8(transport_code(client.transport));
            out.put_str(&client.address);
            out.put_u64(client.registered_at_us);
            match client.node {
                Some(node) => {
                    out.put_u8(1);
                    out.put_u8(node);
                }
                None => out.put_u8(0),
            }
        }
    }

    /// Rebuilds a state from its snapshot encoding.
    pub fn decode_snapshot(bytes: &[u8]) -> Result<Self, CodecError> {
        let mut r = Reader::new(bytes);
        let version = r.u16()?;
        if version != SNAPSHOT_FORMAT_VERSION && version != SNAPSHOT_FORMAT_V1 {
            return Err(CodecError::UnsupportedVersion {
                what: "snapshot",
                found: version,
            });
        }
        let mut state = MetadataState::new();
        for _ in 0..r.len()? {
            let stream = read_stream(&mut r)?;
            if stream.id.0 >= STREAM_ID_LIMIT
                || state.streams.get(&stream.id).is_some()
                || state.streams.contains_name(stream.name())
            {
                return Err(inconsistent("stream ID out of range or duplicated"));
            }
            state.streams.insert(stream.id, stream);
        }
        for _ in 0..r.len()? {
            let user = read_user(&mut r)?;
            if state.users.get(&user.id).is_some() || state.users.contains_name(user.username()) {
                return Err(inconsistent("duplicate user"));
            }
            state.users.insert(user.id, user);
        }
        for _ in 0..r.len()? {
            let client = read_client(&mut r, version)?;
            if state.clients.insert(client.id, client).is_some() {
                return Err(inconsistent("duplicate client"));
            }
        }
        r.finish()?;
        check_members_registered(&state)?;
        Ok(state)
    }
}

fn put_topic(out: &mut Vec<u8>, topic: &Topic) {
    out.put_u32(topic.id.0);
    out.put_str(topic.name());
    out.put_u64(topic.created_at_us);
    put_options(out, &topic.options);
    put_option_entries(out, &topic.client_options);
    out.put_u32(topic.next_group_id);
    out.put_u64(topic.purge_generation);
    out.put_len(topic.partitions.len());
    for partition in &topic.partitions {
        out.put_u64(partition.created_at_us);
    }
    out.put_len(topic.groups_count());
    for group in topic.groups() {
        out.put_u32(group.id.0);
        out.put_str(group.name());
        out.put_u64(group.created_at_us);
        out.put_u64(group.generation);
        out.put_len(group.members_count());
        for member in group.members() {
            out.put_u128(member.client_id.0);
            out.put_u64(member.joined_at_us);
            out.put_len(member.partitions.len());
            for partition in &member.partitions {
                out.put_u32(partition.0);
            }
        }
        out.put_len(group.pending_revocations().count());
        for pending in group.pending_revocations() {
            out.put_u32(pending.partition.0);
            out.put_u128(pending.from.0);
            out.put_u128(pending.to.0);
            out.put_u64(pending.since_us);
        }
    }
}

fn put_options(out: &mut Vec<u8>, options: &TopicOptions) {
    out.put_u8(match options.compression {
        CompressionAlgorithm::None => 1,
        CompressionAlgorithm::Gzip => 2,
    });
    out.put_u64(options.message_expiry.as_wire_micros());
    out.put_u64(options.max_topic_size.as_wire_bytes());
    out.put_u64(options.segment_size_bytes);
    out.put_u8(durability_code(options.durability));
    out.put_u8(durability_code(options.consumer_offset_durability));
    out.put_u32(options.messages_required_to_save);
    out.put_u64(options.size_of_messages_required_to_save_bytes);
    out.put_bool(options.preallocate_segments);
}

fn durability_code(durability: Durability) -> u8 {
    match durability {
        Durability::Replicated => 1,
        Durability::Persisted => 2,
    }
}

fn put_user(out: &mut Vec<u8>, user: &User) {
    out.put_u32(user.id.0);
    out.put_str(user.username());
    out.put_str(&user.password_hash);
    out.put_u8(user_status_code(user.status));
    match &user.permissions {
        Some(permissions) => {
            out.put_u8(1);
            put_permissions(out, permissions);
        }
        None => out.put_u8(0),
    }
    out.put_u64(user.created_at_us);
    out.put_len(user.tokens_count());
    for token in user.tokens() {
        out.put_str(&token.name);
        out.put_str(&token.token_hash);
        out.put_u64(token.created_at_us);
        match token.expires_at_us {
            Some(at) => {
                out.put_u8(1);
                out.put_u64(at);
            }
            None => out.put_u8(0),
        }
    }
}

fn read_stream(r: &mut Reader<'_>) -> Result<Stream, CodecError> {
    let id = StreamId(r.u32()?);
    let mut stream = Stream::new(id, r.str()?, r.u64()?);
    for _ in 0..r.len()? {
        let topic = read_topic(r)?;
        if topic.id.0 >= TOPIC_ID_LIMIT
            || stream.topics.get(&topic.id).is_some()
            || stream.topics.contains_name(topic.name())
        {
            return Err(inconsistent("topic ID out of range or duplicated"));
        }
        stream.topics.insert(topic.id, topic);
    }
    Ok(stream)
}

fn read_topic(r: &mut Reader<'_>) -> Result<Topic, CodecError> {
    let header = TopicHeader {
        id: TopicId(r.u32()?),
        name: r.str()?,
        created_at_us: r.u64()?,
        options: read_options(r)?,
        client_options: read_option_entries(r)?,
        next_group_id: r.u32()?,
        purge_generation: r.u64()?,
    };
    let partitions_count = r.len()?;
    if partitions_count > PARTITION_ID_LIMIT as usize {
        return Err(inconsistent("too many partitions"));
    }
    let mut partitions = Vec::with_capacity(partitions_count);
    for index in 0..partitions_count {
        let id = PartitionId(u32::try_from(index).expect("bounded by the partition limit"));
        partitions.push(Partition {
            id,
            created_at_us: r.u64()?,
        });
    }
    let next_group_id = header.next_group_id;
    let mut topic = Topic::new(header, partitions);
    for _ in 0..r.len()? {
        let group = read_group(r)?;
        if group.id.0 >= next_group_id
            || topic.groups.get(&group.id).is_some()
            || topic.groups.contains_name(group.name())
            || !group.assignment_is_valid(topic.partitions_count())
        {
            return Err(inconsistent("invalid consumer group"));
        }
        topic.groups.insert(group.id, group);
    }
    Ok(topic)
}

fn read_options(r: &mut Reader<'_>) -> Result<TopicOptions, CodecError> {
    let compression = match r.u8()? {
        1 => CompressionAlgorithm::None,
        2 => CompressionAlgorithm::Gzip,
        tag => return Err(r.tag_error("compression", tag.into())),
    };
    let message_expiry = match r.u64()? {
        u64::MAX => MessageExpiry::Never,
        us => MessageExpiry::AfterMicros(us),
    };
    let max_topic_size = match r.u64()? {
        u64::MAX => MaxTopicSize::Unlimited,
        bytes => MaxTopicSize::Bytes(bytes),
    };
    Ok(TopicOptions {
        compression,
        message_expiry,
        max_topic_size,
        segment_size_bytes: r.u64()?,
        durability: read_durability(r)?,
        consumer_offset_durability: read_durability(r)?,
        messages_required_to_save: r.u32()?,
        size_of_messages_required_to_save_bytes: r.u64()?,
        preallocate_segments: r.bool("preallocate")?,
    })
}

fn read_durability(r: &mut Reader<'_>) -> Result<Durability, CodecError> {
    match r.u8()? {
        1 => Ok(Durability::Replicated),
        2 => Ok(Durability::Persisted),
        tag => Err(r.tag_error("durability", tag.into())),
    }
}

fn read_group(r: &mut Reader<'_>) -> Result<ConsumerGroup, CodecError> {
    let id = ConsumerGroupId(r.u32()?);
    let mut header = ConsumerGroup::new(id, r.str()?, r.u64()?);
    header.generation = r.u64()?;
    let count = r.len()?;
    let mut members: Vec<GroupMember> = Vec::with_capacity(count);
    for _ in 0..count {
        let client_id = ClientId(r.u128()?);
        let joined_at_us = r.u64()?;
        let partitions = (0..r.len()?)
            .map(|_| r.u32().map(PartitionId))
            .collect::<Result<Vec<_>, _>>()?;
        if members
            .last()
            .is_some_and(|last| last.client_id >= client_id)
        {
            return Err(inconsistent("group members out of order"));
        }
        members.push(GroupMember {
            client_id,
            joined_at_us,
            partitions,
        });
    }
    let mut pending: Vec<PendingRevocation> = Vec::new();
    for _ in 0..r.len()? {
        let revocation = PendingRevocation {
            partition: PartitionId(r.u32()?),
            from: ClientId(r.u128()?),
            to: ClientId(r.u128()?),
            since_us: r.u64()?,
        };
        if pending
            .last()
            .is_some_and(|last| last.partition >= revocation.partition)
        {
            return Err(inconsistent("pending revocations out of order"));
        }
        pending.push(revocation);
    }
    Ok(ConsumerGroup::restore(header, members, pending))
}

fn read_user(r: &mut Reader<'_>) -> Result<User, CodecError> {
    let header = UserHeader {
        id: UserId(r.u32()?),
        username: r.str()?,
        password_hash: r.str()?,
        status: read_user_status(r)?,
        permissions: r.opt("permissions flag", read_permissions)?,
        created_at_us: r.u64()?,
    };
    let mut user = User::new(header);
    for _ in 0..r.len()? {
        let token = PersonalAccessToken {
            user_id: user.id,
            name: r.str()?,
            token_hash: r.str()?,
            created_at_us: r.u64()?,
            expires_at_us: r.opt("expiry flag", Reader::u64)?,
        };
        if user.tokens.insert(token.name.clone(), token).is_some() {
            return Err(inconsistent("duplicate token name"));
        }
    }
    Ok(user)
}

fn read_client(r: &mut Reader<'_>, version: u16) -> Result<ClientSession, CodecError> {
    Ok(ClientSession {
        id: ClientId(r.u128()?),
        user_id: UserId(r.u32()?),
        transport: read_transport(r)?,
        address: r.str()?,
        registered_at_us: r.u64()?,
        node: if version == SNAPSHOT_FORMAT_V1 {
            None
        } else {
            r.opt("node flag", Reader::u8)?
        },
    })
}

fn check_members_registered(state: &MetadataState) -> Result<(), CodecError> {
    let all_registered = state
        .streams()
        .flat_map(Stream::topics)
        .flat_map(Topic::groups)
        .all(|group| {
            group
                .members()
                .all(|member| state.client(member.client_id).is_some())
        });
    all_registered
        .then_some(())
        .ok_or(inconsistent("group member is not a registered client"))
}
