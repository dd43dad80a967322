//! The replicated metadata state machine.
//!
//! [`MetadataState::apply`] takes one committed [`MetadataOp`] and either
//! changes the state or returns an error having changed nothing: every
//! handler resolves its targets, authorizes, and validates first, and only
//! then mutates. No clock, randomness or configuration is read, and all maps
//! are ordered, so replaying the same log yields the same state on every
//! replica.
//!
//! Order of checks in a handler: resolve targets (not-found errors; storage
//! spec §12 "not found passes through"), authorize the actor (41), validate
//! the request, mutate. Handlers live in the sibling modules by resource.

mod clients;
mod groups;
pub mod queries;
mod streams;
mod topics;
mod users;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use super::errors::MetadataError;
use super::ids::{ClientId, ConsumerGroupId, Ident, StreamId, TopicId, UserId};
use super::names::NamedMap;
use super::ops::{ApplyOutcome, MetadataOp, OpKind};
use super::permissions::{Action, Subject, authorize};
use super::stream::Stream;
use super::topic::Topic;
use super::user::{ClientSession, User};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct MetadataState {
    pub(crate) streams: NamedMap<StreamId, Stream>,
    pub(crate) users: NamedMap<UserId, User>,
    pub(crate) clients: BTreeMap<ClientId, ClientSession>,
}

/// The per-operation context handlers receive.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ctx {
    pub now_us: u64,
    pub actor: UserId,
}

impl MetadataState {
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies one committed operation.
    pub fn apply(&mut self, op: &MetadataOp) -> Result<ApplyOutcome, MetadataError> {
        let ctx = Ctx {
            now_us: op.timestamp_us,
            actor: op.actor,
        };
        let outcome = self.dispatch(ctx, &op.kind);
        if let Err(error) = &outcome {
            tracing::debug!(code = error.code(), %error, "metadata operation rejected");
        }
        outcome
    }

    fn dispatch(&mut self, ctx: Ctx, kind: &OpKind) -> Result<ApplyOutcome, MetadataError> {
        use OpKind as K;
        match kind {
            K::CreateStream { name } => self.create_stream(ctx, name),
            K::UpdateStream { stream, name } => self.update_stream(ctx, stream, name),
            K::DeleteStream { stream } => self.delete_stream(ctx, stream),
            K::PurgeStream { stream } => self.purge_stream(ctx, stream),
            K::CreateTopic { .. } => self.create_topic(ctx, kind),
            K::UpdateTopic {
                stream,
                topic,
                name,
                options,
            } => self.update_topic(ctx, (stream, topic), name, options),
            K::DeleteTopic { stream, topic } => self.delete_topic(ctx, (stream, topic)),
            K::PurgeTopic { stream, topic } => self.purge_topic(ctx, (stream, topic)),
            K::CreatePartitions {
                stream,
                topic,
                count,
            } => self.create_partitions(ctx, (stream, topic), *count),
            K::DeletePartitions {
                stream,
                topic,
                count,
            } => self.delete_partitions(ctx, (stream, topic), *count),
            K::DeleteSegments {
                stream,
                topic,
                partition,
                count,
            } => self.delete_segments(ctx, (stream, topic), *partition, *count),
            K::CreateConsumerGroup {
                stream,
                topic,
                name,
            } => self.create_group(ctx, (stream, topic), name),
            K::DeleteConsumerGroup {
                stream,
                topic,
                group,
            } => self.delete_group(ctx, (stream, topic), group),
            K::JoinConsumerGroup { .. } => self.join_group(ctx, kind),
            K::LeaveConsumerGroup {
                stream,
                topic,
                group,
                client,
            } => self.leave_group(ctx, (stream, topic), group, *client),
            K::CompleteRevocation {
                stream,
                topic,
                group,
                partition,
            } => self.complete_revocation(ctx, (stream, topic), group, *partition),
            K::CreateUser { .. } => self.create_user(ctx, kind),
            K::UpdateUser {
                user,
                username,
                status,
            } => self.update_user(ctx, user, username.as_deref(), *status),
            K::DeleteUser { user } => self.delete_user(ctx, user),
            K::ChangePassword {
                user,
                new_password_hash,
            } => self.change_password(ctx, user, new_password_hash),
            K::UpdatePermissions { user, permissions } => {
                self.update_permissions(ctx, user, permissions.as_ref())
            }
            K::CreatePersonalAccessToken { .. } => self.create_token(ctx, kind),
            K::DeletePersonalAccessToken { name } => self.delete_token(ctx, name),
            K::DeleteExpiredPersonalAccessTokens => Ok(self.delete_expired_tokens(ctx)),
            K::RegisterClient { .. } => self.register_client(ctx, kind),
            K::UnregisterClient { client } => self.unregister_client(*client),
        }
    }

    /// Whether `user` may perform `action` now (root always may; an unknown
    /// user may do nothing that needs a permission).
    pub fn is_allowed(&self, user: UserId, action: Action) -> bool {
        let permissions = match self.users.get(&user) {
            Some(record) => record.permissions.as_ref(),
            None if user.is_root() => None,
            None => return false,
        };
        authorize(
            Subject {
                user_id: user,
                permissions,
            },
            action,
        )
    }

    pub(crate) fn check(&self, ctx: Ctx, action: Action) -> Result<(), MetadataError> {
        if self.is_allowed(ctx.actor, action) {
            Ok(())
        } else {
            Err(MetadataError::Unauthorized {
                user: ctx.actor,
                action: action.describe(),
            })
        }
    }

    /// Resolves a stream identifier (a numeric name reads as an ID).
    pub fn resolve_stream(&self, stream: &Ident) -> Result<StreamId, MetadataError> {
        let found = match stream.as_id() {
            Some(id) => Some(StreamId(id)).filter(|id| self.streams.get(id).is_some()),
            None => match stream {
                Ident::Name(name) => self.streams.id_of(name),
                Ident::Id(_) => None,
            },
        };
        found.ok_or_else(|| MetadataError::StreamNotFound {
            stream: stream.clone(),
        })
    }

    /// Resolves a stream then a topic within it.
    pub fn resolve_topic(
        &self,
        stream: &Ident,
        topic: &Ident,
    ) -> Result<(StreamId, TopicId), MetadataError> {
        let stream_id = self.resolve_stream(stream)?;
        let record = self
            .streams
            .get(&stream_id)
            .expect("resolved stream exists");
        let found = match topic.as_id() {
            Some(id) => Some(TopicId(id)).filter(|id| record.topics.get(id).is_some()),
            None => match topic {
                Ident::Name(name) => record.topics.id_of(name),
                Ident::Id(_) => None,
            },
        };
        let topic_id = found.ok_or_else(|| MetadataError::TopicNotFound {
            stream: stream_id,
            topic: topic.clone(),
        })?;
        Ok((stream_id, topic_id))
    }

    /// Resolves a consumer group within a resolved topic.
    pub fn resolve_group(
        &self,
        (stream, topic): (StreamId, TopicId),
        group: &Ident,
    ) -> Result<ConsumerGroupId, MetadataError> {
        let record = self.topic_ref(stream, topic);
        let found = match group.as_id() {
            Some(id) => Some(ConsumerGroupId(id)).filter(|id| record.groups.get(id).is_some()),
            None => match group {
                Ident::Name(name) => record.groups.id_of(name),
                Ident::Id(_) => None,
            },
        };
        found.ok_or_else(|| MetadataError::ConsumerGroupNotFound {
            stream,
            topic,
            group: group.clone(),
        })
    }

    /// Resolves a user by ID or username.
    pub fn resolve_user(&self, user: &Ident) -> Result<UserId, MetadataError> {
        let found = match user.as_id() {
            Some(id) => Some(UserId(id)).filter(|id| self.users.get(id).is_some()),
            None => match user {
                Ident::Name(name) => self.users.id_of(name),
                Ident::Id(_) => None,
            },
        };
        found.ok_or_else(|| MetadataError::UserNotFound { user: user.clone() })
    }

    pub(crate) fn topic_ref(&self, stream: StreamId, topic: TopicId) -> &Topic {
        self.streams
            .get(&stream)
            .and_then(|s| s.topics.get(&topic))
            .expect("resolved topic exists")
    }

    pub(crate) fn topic_mut(&mut self, stream: StreamId, topic: TopicId) -> &mut Topic {
        self.streams
            .get_mut(&stream)
            .and_then(|s| s.topics.get_mut(&topic))
            .expect("resolved topic exists")
    }
}
