//! The journal encoding of a [`MetadataOp`].
//!
//! ```text
//! op = u8 version (= 1) | u8 kind | u64 timestamp_us | u32 actor | body
//! ```
//!
//! | kind | operation                   | body |
//! |-----:|-----------------------------|------|
//! | 1    | CreateStream                | `str` name |
//! | 2    | UpdateStream                | `ident` stream, `str` name |
//! | 3/4  | DeleteStream / PurgeStream  | `ident` stream |
//! | 10   | CreateTopic                 | `ident` stream, `str` name, `u32` partitions, `vec<option_entry>` |
//! | 11   | UpdateTopic                 | `ident` stream, `ident` topic, `str` name, `vec<option_entry>` |
//! | 12/13| DeleteTopic / PurgeTopic    | `ident` stream, `ident` topic |
//! | 20/21| Create/DeletePartitions     | `ident` stream, `ident` topic, `u32` count |
//! | 22   | DeleteSegments              | `ident` stream, `ident` topic, `u32` partition, `u32` count |
//! | 30   | CreateConsumerGroup         | `ident` stream, `ident` topic, `str` name |
//! | 31   | DeleteConsumerGroup         | `ident` stream, `ident` topic, `ident` group |
//! | 32   | JoinConsumerGroup           | `ident` stream, `ident` topic, `ident` group, `u128` client, `vec<u32>` in-flight partitions |
//! | 33   | LeaveConsumerGroup          | `ident` stream, `ident` topic, `ident` group, `u128` client |
//! | 34   | CompleteRevocation          | `ident` stream, `ident` topic, `ident` group, `u32` partition |
//! | 40   | CreateUser                  | `str` username, `str` password hash, `user_status`, `opt<permissions>` |
//! | 41   | UpdateUser                  | `ident` user, `opt<str>` username, `opt<user_status>` |
//! | 42   | DeleteUser                  | `ident` user |
//! | 43   | ChangePassword              | `ident` user, `str` new password hash |
//! | 44   | UpdatePermissions           | `ident` user, `opt<permissions>` |
//! | 50   | CreatePersonalAccessToken   | `str` name, `str` token hash, `opt<u64>` expires_at_us, `u32` max per user |
//! | 51   | DeletePersonalAccessToken   | `str` name |
//! | 52   | DeleteExpiredPersonalAccessTokens | (empty) |
//! | 60   | RegisterClient              | `u128` client, `u32` user, `transport`, `str` address |
//! | 61   | UnregisterClient            | `u128` client |
//! | 62   | RegisterClient on a node    | `u128` client, `u32` user, `transport`, `str` address, `u8` node |
//!
//! Decoding rejects an unknown version or kind, any invalid tag and any
//! trailing byte.

use super::primitives::{
    CodecError, Put, Reader, put_ident, put_option_entries, put_permissions, read_ident,
    read_option_entries, read_permissions, read_transport, read_user_status, transport_code,
    user_status_code,
};
use crate::metadata::ids::{ClientId, Ident, PartitionId, UserId};
use crate::metadata::ops::{MetadataOp, OpKind};

/// Current journal encoding version.
pub const OP_FORMAT_VERSION: u8 = 1;
/// Bytes before the body: version, kind, timestamp, actor.
pub const OP_HEADER_BYTES: usize = 1 + 1 + 8 + 4;

mod kind {
    pub const CREATE_STREAM: u8 = 1;
    pub const UPDATE_STREAM: u8 = 2;
    pub const DELETE_STREAM: u8 = 3;
    pub const PURGE_STREAM: u8 = 4;
    pub const CREATE_TOPIC: u8 = 10;
    pub const UPDATE_TOPIC: u8 = 11;
    pub const DELETE_TOPIC: u8 = 12;
    pub const PURGE_TOPIC: u8 = 13;
    pub const CREATE_PARTITIONS: u8 = 20;
    pub const DELETE_PARTITIONS: u8 = 21;
    pub const DELETE_SEGMENTS: u8 = 22;
    pub const CREATE_GROUP: u8 = 30;
    pub const DELETE_GROUP: u8 = 31;
    pub const JOIN_GROUP: u8 = 32;
    pub const LEAVE_GROUP: u8 = 33;
    pub const COMPLETE_REVOCATION: u8 = 34;
    pub const CREATE_USER: u8 = 40;
    pub const UPDATE_USER: u8 = 41;
    pub const DELETE_USER: u8 = 42;
    pub const CHANGE_PASSWORD: u8 = 43;
    pub const UPDATE_PERMISSIONS: u8 = 44;
    pub const CREATE_TOKEN: u8 = 50;
    pub const DELETE_TOKEN: u8 = 51;
    pub const DELETE_EXPIRED_TOKENS: u8 = 52;
    pub const REGISTER_CLIENT: u8 = 60;
    pub const UNREGISTER_CLIENT: u8 = 61;
    /// A `RegisterClient` that names its cluster node (kind 60 names none).
    pub const REGISTER_CLIENT_ON: u8 = 62;
}

impl MetadataOp {
    /// Appends the encoded operation to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.put_u8(OP_FORMAT_VERSION);
        out.put_u8(self.kind.code());
        out.put_u64(self.timestamp_us);
        out.put_u32(self.actor.0);
        assert_eq!(out.len() - start, OP_HEADER_BYTES);
        if !encode_resource_body(&self.kind, out) && !encode_group_body(&self.kind, out) {
            encode_account_body(&self.kind, out);
        }
    }

    /// Decodes exactly one operation from `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        let mut r = Reader::new(bytes);
        let version = r.u8()?;
        if version != OP_FORMAT_VERSION {
            return Err(CodecError::UnsupportedVersion {
                what: "operation",
                found: version.into(),
            });
        }
        let code = r.u8()?;
        let timestamp_us = r.u64()?;
        let actor = UserId(r.u32()?);
        let kind = match decode_resource_body(code, &mut r)? {
            Some(kind) => kind,
            None => match decode_group_body(code, &mut r)? {
                Some(kind) => kind,
                None => decode_account_body(code, &mut r)?,
            },
        };
        r.finish()?;
        Ok(MetadataOp {
            timestamp_us,
            actor,
            kind,
        })
    }
}

impl OpKind {
    /// The operation's kind code in the journal encoding.
    pub fn code(&self) -> u8 {
        use OpKind as K;
        match self {
            K::CreateStream { .. } => kind::CREATE_STREAM,
            K::UpdateStream { .. } => kind::UPDATE_STREAM,
            K::DeleteStream { .. } => kind::DELETE_STREAM,
            K::PurgeStream { .. } => kind::PURGE_STREAM,
            K::CreateTopic { .. } => kind::CREATE_TOPIC,
            K::UpdateTopic { .. } => kind::UPDATE_TOPIC,
            K::DeleteTopic { .. } => kind::DELETE_TOPIC,
            K::PurgeTopic { .. } => kind::PURGE_TOPIC,
            K::CreatePartitions { .. } => kind::CREATE_PARTITIONS,
            K::DeletePartitions { .. } => kind::DELETE_PARTITIONS,
            K::DeleteSegments { .. } => kind::DELETE_SEGMENTS,
            K::CreateConsumerGroup { .. } => kind::CREATE_GROUP,
            K::DeleteConsumerGroup { .. } => kind::DELETE_GROUP,
            K::JoinConsumerGroup { .. } => kind::JOIN_GROUP,
            K::LeaveConsumerGroup { .. } => kind::LEAVE_GROUP,
            K::CompleteRevocation { .. } => kind::COMPLETE_REVOCATION,
            K::CreateUser { .. } => kind::CREATE_USER,
            K::UpdateUser { .. } => kind::UPDATE_USER,
            K::DeleteUser { .. } => kind::DELETE_USER,
            K::ChangePassword { .. } => kind::CHANGE_PASSWORD,
            K::UpdatePermissions { .. } => kind::UPDATE_PERMISSIONS,
            K::CreatePersonalAccessToken { .. } => kind::CREATE_TOKEN,
            K::DeletePersonalAccessToken { .. } => kind::DELETE_TOKEN,
            K::DeleteExpiredPersonalAccessTokens => kind::DELETE_EXPIRED_TOKENS,
            K::RegisterClient { node: None, .. } => kind::REGISTER_CLIENT,
            K::RegisterClient { node: Some(_), .. } => kind::REGISTER_CLIENT_ON,
            K::UnregisterClient { .. } => kind::UNREGISTER_CLIENT,
        }
    }
}

/// Streams, topics, partitions. Returns false for other kinds.
fn encode_resource_body(op: &OpKind, out: &mut Vec<u8>) -> bool {
    use OpKind as K;
    match op {
        K::CreateStream { name } => out.put_str(name),
        K::UpdateStream { stream, name } => {
            put_ident(out, stream);
            out.put_str(name);
        }
        K::DeleteStream { stream } | K::PurgeStream { stream } => put_ident(out, stream),
        K::CreateTopic {
            stream,
            name,
            partitions_count,
            options,
        } => {
            put_ident(out, stream);
            out.put_str(name);
            out.put_u32(*partitions_count);
            put_option_entries(out, options);
        }
        K::UpdateTopic {
            stream,
            topic,
            name,
            options,
        } => {
            put_ident(out, stream);
            put_ident(out, topic);
            out.put_str(name);
            put_option_entries(out, options);
        }
        K::DeleteTopic { stream, topic } | K::PurgeTopic { stream, topic } => {
            put_ident(out, stream);
            put_ident(out, topic);
        }
        K::CreatePartitions {
            stream,
            topic,
            count,
        }
        | K::DeletePartitions {
            stream,
            topic,
            count,
        } => {
            put_ident(out, stream);
            put_ident(out, topic);
            out.put_u32(*count);
        }
        K::DeleteSegments {
            stream,
            topic,
            partition,
            count,
        } => {
            put_ident(out, stream);
            put_ident(out, topic);
            out.put_u32(partition.0);
            out.put_u32(*count);
        }
        _ => return false,
    }
    true
}

/// Consumer groups. Returns false for other kinds.
fn encode_group_body(op: &OpKind, out: &mut Vec<u8>) -> bool {
    use OpKind as K;
    match op {
        K::CreateConsumerGroup {
            stream,
            topic,
            name,
        } => {
            put_ident(out, stream);
            put_ident(out, topic);
            out.put_str(name);
        }
        K::DeleteConsumerGroup {
            stream,
            topic,
            group,
        } => {
            put_ident(out, stream);
            put_ident(out, topic);
            put_ident(out, group);
        }
        K::JoinConsumerGroup {
            stream,
            topic,
            group,
            client,
            in_flight,
        } => {
            put_group_target(out, (stream, topic, group));
            out.put_u128(client.0);
            out.put_len(in_flight.len());
            for partition in in_flight {
                out.put_u32(partition.0);
            }
        }
        K::LeaveConsumerGroup {
            stream,
            topic,
            group,
            client,
        } => {
            put_group_target(out, (stream, topic, group));
            out.put_u128(client.0);
        }
        K::CompleteRevocation {
            stream,
            topic,
            group,
            partition,
        } => {
            put_group_target(out, (stream, topic, group));
            out.put_u32(partition.0);
        }
        _ => return false,
    }
    true
}

fn put_group_target(out: &mut Vec<u8>, (stream, topic, group): (&Ident, &Ident, &Ident)) {
    put_ident(out, stream);
    put_ident(out, topic);
    put_ident(out, group);
}

/// Users, tokens, client sessions.
fn encode_account_body(op: &OpKind, out: &mut Vec<u8>) {
    use OpKind as K;
    match op {
        K::CreateUser {
            username,
            password_hash,
            status,
            permissions,
        } => {
            out.put_str(username);
            out.put_str(password_hash);
            out.put_u8(user_status_code(*status));
            put_opt(out, permissions.as_ref(), put_permissions);
        }
        K::UpdateUser {
            user,
            username,
            status,
        } => {
            put_ident(out, user);
            put_opt(out, username.as_deref(), |out, name| out.put_str(name));
            put_opt(out, status.as_ref(), |out, s| {
                out.put_u8(user_status_code(*s))
            });
        }
        K::DeleteUser { user } => put_ident(out, user),
        K::ChangePassword {
            user,
            new_password_hash,
        } => {
            put_ident(out, user);
            out.put_str(new_password_hash);
        }
        K::UpdatePermissions { user, permissions } => {
            put_ident(out, user);
            put_opt(out, permissions.as_ref(), put_permissions);
        }
        K::CreatePersonalAccessToken {
            name,
            token_hash,
            expires_at_us,
            max_tokens_per_user,
        } => {
            out.put_str(name);
            out.put_str(token_hash);
            put_opt(out, expires_at_us.as_ref(), |out, at| out.put_u64(*at));
            out.put_u32(*max_tokens_per_user);
        }
        K::DeletePersonalAccessToken { name } => out.put_str(name),
        K::DeleteExpiredPersonalAccessTokens => {}
        K::RegisterClient {
            client,
            user,
            transport,
            address,
            node,
        } => {
            out.put_u128(client.0);
            out.put_u32(user.0);
            out.put_u8(transport_code(*transport));
            out.put_str(address);
            if let Some(node) = node {
                out.put_u8(*node);
            }
        }
        K::UnregisterClient { client } => out.put_u128(client.0),
        _ => unreachable!("resource and group kinds are encoded above"),
    }
}

fn put_opt<T: ?Sized>(out: &mut Vec<u8>, value: Option<&T>, put: impl FnOnce(&mut Vec<u8>, &T)) {
    match value {
        Some(value) => {
            out.put_u8(1);
            put(out, value);
        }
        None => out.put_u8(0),
    }
}

fn decode_resource_body(code: u8, r: &mut Reader<'_>) -> Result<Option<OpKind>, CodecError> {
    use OpKind as K;
    Ok(Some(match code {
        kind::CREATE_STREAM => K::CreateStream { name: r.str()? },
        kind::UPDATE_STREAM => K::UpdateStream {
            stream: read_ident(r)?,
            name: r.str()?,
        },
        kind::DELETE_STREAM => K::DeleteStream {
            stream: read_ident(r)?,
        },
        kind::PURGE_STREAM => K::PurgeStream {
            stream: read_ident(r)?,
        },
        kind::CREATE_TOPIC => K::CreateTopic {
            stream: read_ident(r)?,
            name: r.str()?,
            partitions_count: r.u32()?,
            options: read_option_entries(r)?,
        },
        kind::UPDATE_TOPIC => K::UpdateTopic {
            stream: read_ident(r)?,
            topic: read_ident(r)?,
            name: r.str()?,
            options: read_option_entries(r)?,
        },
        kind::DELETE_TOPIC => K::DeleteTopic {
            stream: read_ident(r)?,
            topic: read_ident(r)?,
        },
        kind::PURGE_TOPIC => K::PurgeTopic {
            stream: read_ident(r)?,
            topic: read_ident(r)?,
        },
        kind::CREATE_PARTITIONS => K::CreatePartitions {
            stream: read_ident(r)?,
            topic: read_ident(r)?,
            count: r.u32()?,
        },
        kind::DELETE_PARTITIONS => K::DeletePartitions {
            stream: read_ident(r)?,
            topic: read_ident(r)?,
            count: r.u32()?,
        },
        kind::DELETE_SEGMENTS => K::DeleteSegments {
            stream: read_ident(r)?,
            topic: read_ident(r)?,
            partition: PartitionId(r.u32()?),
            count: r.u32()?,
        },
        _ => return Ok(None),
    }))
}

fn decode_group_body(code: u8, r: &mut Reader<'_>) -> Result<Option<OpKind>, CodecError> {
    use OpKind as K;
    Ok(Some(match code {
        kind::CREATE_GROUP => K::CreateConsumerGroup {
            stream: read_ident(r)?,
            topic: read_ident(r)?,
            name: r.str()?,
        },
        kind::DELETE_GROUP => K::DeleteConsumerGroup {
            stream: read_ident(r)?,
            topic: read_ident(r)?,
            group: read_ident(r)?,
        },
        kind::JOIN_GROUP => {
            let (stream, topic, group) = (read_ident(r)?, read_ident(r)?, read_ident(r)?);
            let client = ClientId(r.u128()?);
            let in_flight = (0..r.len()?)
                .map(|_| r.u32().map(PartitionId))
                .collect::<Result<Vec<_>, _>>()?;
            K::JoinConsumerGroup {
                stream,
                topic,
                group,
                client,
                in_flight,
            }
        }
        kind::LEAVE_GROUP => K::LeaveConsumerGroup {
            stream: read_ident(r)?,
            topic: read_ident(r)?,
            group: read_ident(r)?,
            client: ClientId(r.u128()?),
        },
        kind::COMPLETE_REVOCATION => K::CompleteRevocation {
            stream: read_ident(r)?,
            topic: read_ident(r)?,
            group: read_ident(r)?,
            partition: PartitionId(r.u32()?),
        },
        _ => return Ok(None),
    }))
}

fn decode_account_body(code: u8, r: &mut Reader<'_>) -> Result<OpKind, CodecError> {
    use OpKind as K;
    Ok(match code {
        kind::CREATE_USER => K::CreateUser {
            username: r.str()?,
            password_hash: r.str()?,
            status: read_user_status(r)?,
            permissions: r.opt("permissions flag", read_permissions)?,
        },
        kind::UPDATE_USER => K::UpdateUser {
            user: read_ident(r)?,
            username: r.opt("username flag", Reader::str)?,
            status: r.opt("status flag", read_user_status)?,
        },
        kind::DELETE_USER => K::DeleteUser {
            user: read_ident(r)?,
        },
        kind::CHANGE_PASSWORD => K::ChangePassword {
            user: read_ident(r)?,
            new_password_hash: r.str()?,
        },
        kind::UPDATE_PERMISSIONS => K::UpdatePermissions {
            user: read_ident(r)?,
            permissions: r.opt("permissions flag", read_permissions)?,
        },
        kind::CREATE_TOKEN => K::CreatePersonalAccessToken {
            name: r.str()?,
            token_hash: r.str()?,
            expires_at_us: r.opt("expiry flag", Reader::u64)?,
            max_tokens_per_user: r.u32()?,
        },
        kind::DELETE_TOKEN => K::DeletePersonalAccessToken { name: r.str()? },
        kind::DELETE_EXPIRED_TOKENS => K::DeleteExpiredPersonalAccessTokens,
        kind::REGISTER_CLIENT => K::RegisterClient {
            client: ClientId(r.u128()?),
            user: UserId(r.u32()?),
            transport: read_transport(r)?,
            address: r.str()?,
            node: None,
        },
        kind::REGISTER_CLIENT_ON => K::RegisterClient {
            client: ClientId(r.u128()?),
            user: UserId(r.u32()?),
            transport: read_transport(r)?,
            address: r.str()?,
            node: Some(r.u8()?),
        },
        kind::UNREGISTER_CLIENT => K::UnregisterClient {
            client: ClientId(r.u128()?),
        },
        other => return Err(r.tag_error("operation kind", other.into())),
    })
}

#[cfg(test)]
#[path = "op_tests.rs"]
mod tests;
