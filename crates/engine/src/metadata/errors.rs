//! Errors of the metadata state machine and their Iggy wire codes.
//!
//! Every rejection an operation can meet while being validated or applied is
//! one variant here; `code()` maps it to the number an SDK 0.11.0 client
//! understands (binary spec §12.2/§12.3). The numbers are pinned by a test.

use super::ids::{ClientId, ConsumerGroupId, Ident, PartitionId, StreamId, TopicId, UserId};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetadataError {
    #[error("unauthorized: user {user} may not {action}")]
    Unauthorized { user: UserId, action: &'static str },

    #[error("stream {stream} not found")]
    StreamNotFound { stream: Ident },
    #[error("stream name '{name}' already exists")]
    StreamNameExists { name: String },
    #[error("invalid stream name of {len_bytes} bytes")]
    InvalidStreamName { len_bytes: usize },
    #[error("too many streams: all {limit} stream IDs are in use")]
    TooManyStreams { limit: u32 },

    #[error("topic {topic} not found in stream {stream}")]
    TopicNotFound { stream: StreamId, topic: Ident },
    #[error("topic name '{name}' already exists in stream {stream}")]
    TopicNameExists { stream: StreamId, name: String },
    #[error("invalid topic name of {len_bytes} bytes")]
    InvalidTopicName { len_bytes: usize },
    #[error("too many topics in stream {stream}: all {limit} topic IDs are in use")]
    TooManyTopics { stream: StreamId, limit: u32 },
    #[error(
        "invalid topic size: max_topic_size {max_topic_size} is below segment_size {segment_size}"
    )]
    InvalidTopicSize {
        max_topic_size: u64,
        segment_size: u64,
    },

    #[error("partitions count {count} is outside {min}..={max}")]
    TooManyPartitions { count: u32, min: u32, max: u32 },
    #[error("invalid partitions count {requested}: topic has {existing}")]
    InvalidPartitionsCount { requested: u32, existing: u32 },
    #[error("partition ID space exhausted: {existing} + {requested} exceeds {limit}")]
    PartitionIdSpaceExhausted {
        existing: u32,
        requested: u32,
        limit: u32,
    },
    #[error("partition {partition} not found in topic {topic} of stream {stream}")]
    PartitionNotFound {
        stream: StreamId,
        topic: TopicId,
        partition: PartitionId,
    },

    #[error("unsupported option key '{key}'")]
    UnsupportedOptionKey { key: String },
    #[error("invalid value for option '{key}': {reason}")]
    InvalidOptionValue { key: String, reason: &'static str },

    #[error("consumer group {group} not found in topic {topic} of stream {stream}")]
    ConsumerGroupNotFound {
        stream: StreamId,
        topic: TopicId,
        group: Ident,
    },
    #[error("consumer group name '{name}' already exists")]
    ConsumerGroupNameExists { name: String },
    #[error("invalid consumer group name of {len_bytes} bytes")]
    InvalidConsumerGroupName { len_bytes: usize },
    #[error("client {client} is not a member of consumer group {group}")]
    ConsumerGroupMemberNotFound {
        group: ConsumerGroupId,
        client: ClientId,
    },
    #[error("consumer group ID space of topic {topic} is exhausted")]
    ConsumerGroupIdsExhausted { topic: TopicId },

    #[error("client {client} not found")]
    ClientNotFound { client: ClientId },

    #[error("user {user} not found")]
    UserNotFound { user: Ident },
    #[error("user '{username}' already exists")]
    UserExists { username: String },
    #[error("invalid username of {len_bytes} bytes")]
    InvalidUsername { len_bytes: usize },
    #[error("invalid password of {len_bytes} bytes")]
    InvalidPassword { len_bytes: usize },
    #[error("user {user} cannot be deleted")]
    CannotDeleteUser { user: UserId },
    #[error("permissions of user {user} cannot be changed")]
    CannotChangePermissions { user: UserId },
    #[error("user ID space exhausted")]
    UsersLimitReached,

    #[error("invalid personal access token name of {len_bytes} bytes")]
    InvalidTokenName { len_bytes: usize },
    #[error("personal access token '{name}' already exists for user {user}")]
    TokenExists { user: UserId, name: String },
    #[error("user {user} already holds the maximum of {limit} personal access tokens")]
    TokenLimitReached { user: UserId, limit: u32 },
    #[error("invalid personal access token expiry: {reason}")]
    InvalidTokenExpiry { reason: &'static str },
    #[error("personal access token '{name}' of user {user} not found")]
    TokenNotFound { user: UserId, name: String },

    /// Cluster mode: this node does not lead the metadata group; nothing
    /// was recorded, so the request is safe to retry anywhere.
    #[error("not the metadata leader (the leader is the primary of view {view})")]
    NotPrimary { view: u32 },
    /// Cluster mode: the operation may or may not commit (a view change
    /// interrupted it, or the pipeline is full); retry the same request.
    #[error("the operation is not committed yet; retry it")]
    NotCommitted,
    /// Cluster mode: the leader refused an op this node forwarded to it,
    /// with this Iggy error code (nothing was committed).
    #[error("the metadata leader refused the operation (error {code})")]
    Forwarded { code: u32 },
}

impl MetadataError {
    /// The Iggy wire error code (binary spec §12.3).
    pub fn code(&self) -> u32 {
        use MetadataError as E;
        match self {
            E::Unauthorized { .. } => 41,
            E::StreamNotFound { .. } => 1009,
            E::StreamNameExists { .. } => 1012,
            E::InvalidStreamName { .. } => 1013,
            E::TooManyStreams { .. } => 1020,
            E::TopicNotFound { .. } => 2010,
            E::TopicNameExists { .. } => 2013,
            E::InvalidTopicName { .. } => 2014,
            E::TooManyTopics { .. } => 2021,
            E::InvalidTopicSize { .. } => 1019,
            E::TooManyPartitions { .. } => 2015,
            E::InvalidPartitionsCount { .. } => 2019,
            E::PartitionIdSpaceExhausted { .. } => 3013,
            E::PartitionNotFound { .. } => 3007,
            E::UnsupportedOptionKey { .. } => 4041,
            E::InvalidOptionValue { .. } => 4042,
            E::ConsumerGroupNotFound { .. } => 5000,
            E::ConsumerGroupNameExists { .. } => 5004,
            E::InvalidConsumerGroupName { .. } => 5005,
            E::ConsumerGroupMemberNotFound { .. } => 5006,
            E::ConsumerGroupIdsExhausted { .. } => 5002,
            E::ClientNotFound { .. } => 100,
            E::UserNotFound { .. } | E::TokenNotFound { .. } => 20,
            E::UserExists { .. } => 46,
            E::InvalidUsername { .. } => 43,
            E::InvalidPassword { .. } => 44,
            E::CannotDeleteUser { .. } => 48,
            E::CannotChangePermissions { .. } => 49,
            E::UsersLimitReached => 55,
            E::InvalidTokenName { .. } => 50,
            E::TokenExists { .. } => 51,
            E::TokenLimitReached { .. } => 52,
            E::InvalidTokenExpiry { .. } => 56,
            E::NotCommitted => 57,
            E::NotPrimary { .. } => 58,
            E::Forwarded { code } => *code,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(text: &str) -> String {
        text.to_owned()
    }

    #[test]
    fn given_every_error_when_mapping_to_wire_should_pin_iggy_codes() {
        let (s, t, p) = (StreamId(1), TopicId(2), PartitionId(3));
        let (u, c, g) = (UserId(4), ClientId(5), ConsumerGroupId(6));
        let table: Vec<(MetadataError, u32)> = vec![
            (
                MetadataError::Unauthorized {
                    user: u,
                    action: "x",
                },
                41,
            ),
            (
                MetadataError::StreamNotFound {
                    stream: Ident::Id(1),
                },
                1009,
            ),
            (MetadataError::StreamNameExists { name: name("s") }, 1012),
            (MetadataError::InvalidStreamName { len_bytes: 0 }, 1013),
            (MetadataError::TooManyStreams { limit: 1 }, 1020),
            (
                MetadataError::TopicNotFound {
                    stream: s,
                    topic: Ident::Id(2),
                },
                2010,
            ),
            (
                MetadataError::TopicNameExists {
                    stream: s,
                    name: name("t"),
                },
                2013,
            ),
            (MetadataError::InvalidTopicName { len_bytes: 0 }, 2014),
            (MetadataError::NotCommitted, 57),
            (MetadataError::NotPrimary { view: 4 }, 58),
            (
                MetadataError::TooManyTopics {
                    stream: s,
                    limit: 1,
                },
                2021,
            ),
            (
                MetadataError::InvalidTopicSize {
                    max_topic_size: 1,
                    segment_size: 2,
                },
                1019,
            ),
            (
                MetadataError::TooManyPartitions {
                    count: 0,
                    min: 1,
                    max: 1000,
                },
                2015,
            ),
            (
                MetadataError::InvalidPartitionsCount {
                    requested: 2,
                    existing: 1,
                },
                2019,
            ),
            (
                MetadataError::PartitionIdSpaceExhausted {
                    existing: 1,
                    requested: 1,
                    limit: 1,
                },
                3013,
            ),
            (
                MetadataError::PartitionNotFound {
                    stream: s,
                    topic: t,
                    partition: p,
                },
                3007,
            ),
            (MetadataError::UnsupportedOptionKey { key: name("k") }, 4041),
            (
                MetadataError::InvalidOptionValue {
                    key: name("k"),
                    reason: "r",
                },
                4042,
            ),
            (
                MetadataError::ConsumerGroupNotFound {
                    stream: s,
                    topic: t,
                    group: Ident::Id(6),
                },
                5000,
            ),
            (
                MetadataError::ConsumerGroupNameExists { name: name("g") },
                5004,
            ),
            (
                MetadataError::InvalidConsumerGroupName { len_bytes: 0 },
                5005,
            ),
            (
                MetadataError::ConsumerGroupMemberNotFound {
                    group: g,
                    client: c,
                },
                5006,
            ),
            (MetadataError::ConsumerGroupIdsExhausted { topic: t }, 5002),
            (MetadataError::ClientNotFound { client: c }, 100),
            (MetadataError::UserNotFound { user: Ident::Id(4) }, 20),
            (
                MetadataError::TokenNotFound {
                    user: u,
                    name: name("p"),
                },
                20,
            ),
            (
                MetadataError::UserExists {
                    username: name("bob"),
                },
                46,
            ),
            (MetadataError::InvalidUsername { len_bytes: 1 }, 43),
            (MetadataError::InvalidPassword { len_bytes: 1 }, 44),
            (MetadataError::CannotDeleteUser { user: UserId::ROOT }, 48),
            (
                MetadataError::CannotChangePermissions { user: UserId::ROOT },
                49,
            ),
            (MetadataError::UsersLimitReached, 55),
            (MetadataError::InvalidTokenName { len_bytes: 1 }, 50),
            (
                MetadataError::TokenExists {
                    user: u,
                    name: name("p"),
                },
                51,
            ),
            (
                MetadataError::TokenLimitReached {
                    user: u,
                    limit: 100,
                },
                52,
            ),
            (MetadataError::InvalidTokenExpiry { reason: "r" }, 56),
        ];
        for (error, code) in table {
            assert_eq!(error.code(), code, "{error}");
        }
    }
}
