//! Read-side helpers for replies: streams with their topics, topics with
//! partitions and groups, users and their tokens, client sessions and their
//! group memberships. Lookups by [`Ident`] follow the same resolution rules
//! as operations. Nothing here mutates.

use super::MetadataState;
use crate::metadata::errors::MetadataError;
use crate::metadata::groups::ConsumerGroup;
use crate::metadata::ids::{
    ClientId, ConsumerGroupId, Ident, Namespace, PartitionId, StreamId, TopicId, UserId,
};
use crate::metadata::stream::Stream;
use crate::metadata::topic::Topic;
use crate::metadata::user::{ClientSession, PersonalAccessToken, User};

/// A member's view of its group (the SYNC_CONSUMER_GROUP reply).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    pub generation: u64,
    pub partitions: Vec<PartitionId>,
}

/// One group a client session belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Membership {
    pub stream: StreamId,
    pub topic: TopicId,
    pub group: ConsumerGroupId,
}

impl MetadataState {
    /// All streams in ID order (each knows its `topics_count`).
    pub fn streams(&self) -> impl Iterator<Item = &Stream> {
        self.streams.values()
    }

    pub fn streams_count(&self) -> usize {
        self.streams.len()
    }

    pub fn stream(&self, id: StreamId) -> Option<&Stream> {
        self.streams.get(&id)
    }

    /// The stream a request names, or `None` (GET_STREAM's empty reply).
    pub fn find_stream(&self, stream: &Ident) -> Option<&Stream> {
        self.resolve_stream(stream)
            .ok()
            .and_then(|id| self.streams.get(&id))
    }

    /// The topics of a stream, in ID order.
    pub fn topics(&self, stream: &Ident) -> Result<impl Iterator<Item = &Topic>, MetadataError> {
        let id = self.resolve_stream(stream)?;
        Ok(self
            .streams
            .get(&id)
            .expect("resolved stream exists")
            .topics())
    }

    /// A topic with its partitions and groups.
    pub fn find_topic(&self, stream: &Ident, topic: &Ident) -> Result<&Topic, MetadataError> {
        let (stream_id, topic_id) = self.resolve_topic(stream, topic)?;
        Ok(self.topic_ref(stream_id, topic_id))
    }

    /// The groups of a topic, in ID order.
    pub fn groups(
        &self,
        stream: &Ident,
        topic: &Ident,
    ) -> Result<impl Iterator<Item = &ConsumerGroup>, MetadataError> {
        Ok(self.find_topic(stream, topic)?.groups())
    }

    /// A group with its members and their partitions.
    pub fn find_group(
        &self,
        stream: &Ident,
        topic: &Ident,
        group: &Ident,
    ) -> Result<&ConsumerGroup, MetadataError> {
        let ids = self.resolve_topic(stream, topic)?;
        let group_id = self.resolve_group(ids, group)?;
        Ok(self
            .topic_ref(ids.0, ids.1)
            .group(group_id)
            .expect("resolved group exists"))
    }

    /// A member's assignment, or `None` when `client` is not a member.
    pub fn assignment(
        &self,
        stream: &Ident,
        topic: &Ident,
        group: &Ident,
        client: ClientId,
    ) -> Result<Option<Assignment>, MetadataError> {
        let record = self.find_group(stream, topic, group)?;
        Ok(record.member(client).map(|member| Assignment {
            generation: record.generation,
            partitions: member.partitions.clone(),
        }))
    }

    /// Every partition's namespace, for shard routing.
    pub fn namespaces(&self) -> impl Iterator<Item = Namespace> + '_ {
        self.streams.values().flat_map(|stream| {
            stream.topics().flat_map(move |topic| {
                topic.partitions().iter().map(move |partition| {
                    Namespace::try_new(stream.id, topic.id, partition.id)
                        .expect("allocated IDs are within the namespace limits")
                })
            })
        })
    }

    /// All users in ID order.
    pub fn users(&self) -> impl Iterator<Item = &User> {
        self.users.values()
    }

    pub fn user(&self, id: UserId) -> Option<&User> {
        self.users.get(&id)
    }

    /// The user a request names, or `None` (GET_USER's empty reply).
    pub fn find_user(&self, user: &Ident) -> Option<&User> {
        self.resolve_user(user)
            .ok()
            .and_then(|id| self.users.get(&id))
    }

    /// Exact username lookup (login), never read as a numeric ID.
    pub fn user_by_username(&self, username: &str) -> Option<&User> {
        self.users
            .id_of(username)
            .and_then(|id| self.users.get(&id))
    }

    /// The tokens of one user, by name.
    pub fn tokens_of(&self, user: UserId) -> impl Iterator<Item = &PersonalAccessToken> {
        self.users.get(&user).into_iter().flat_map(User::tokens)
    }

    /// The token with this BLAKE3 hex hash (PAT login), expired or not.
    pub fn find_token_by_hash(&self, token_hash: &str) -> Option<&PersonalAccessToken> {
        self.users
            .values()
            .flat_map(User::tokens)
            .find(|t| t.token_hash == token_hash)
    }

    /// All client sessions in ID order.
    pub fn clients(&self) -> impl Iterator<Item = &ClientSession> {
        self.clients.values()
    }

    pub fn client(&self, id: ClientId) -> Option<&ClientSession> {
        self.clients.get(&id)
    }

    /// The groups a client session belongs to.
    pub fn client_memberships(&self, client: ClientId) -> Vec<Membership> {
        let mut memberships = Vec::new();
        for stream in self.streams.values() {
            for topic in stream.topics() {
                for group in topic.groups().filter(|g| g.is_member(client)) {
                    memberships.push(Membership {
                        stream: stream.id,
                        topic: topic.id,
                        group: group.id,
                    });
                }
            }
        }
        memberships
    }
}
