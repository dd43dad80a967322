//! Replicated metadata operations and what applying one reports.
//!
//! An operation is everything needed to apply it identically on any replica:
//! the commit timestamp, the acting user, and server-generated values
//! (password and token hashes, resolved token expiry, the PAT limit) already
//! filled in. Targets are named as the request named them ([`Ident`]) and are
//! resolved when the operation is applied, against the state at that point
//! of the log.

use super::ids::{ClientId, ConsumerGroupId, Ident, PartitionId, StreamId, TopicId, UserId};
use super::permissions::Permissions;
use super::topic::option_value::OptionEntry;
use super::user::{Transport, UserStatus};

/// One replicated metadata operation.
#[derive(Clone, Debug, PartialEq)]
pub struct MetadataOp {
    /// Commit timestamp (µs since epoch) assigned by the primary.
    pub timestamp_us: u64,
    /// The user on whose behalf the operation runs; server-originated
    /// operations use the root user.
    pub actor: UserId,
    pub kind: OpKind,
}

#[derive(Clone, Debug, PartialEq)]
pub enum OpKind {
    CreateStream {
        name: String,
    },
    UpdateStream {
        stream: Ident,
        name: String,
    },
    DeleteStream {
        stream: Ident,
    },
    PurgeStream {
        stream: Ident,
    },

    CreateTopic {
        stream: Ident,
        name: String,
        partitions_count: u32,
        options: Vec<OptionEntry>,
    },
    UpdateTopic {
        stream: Ident,
        topic: Ident,
        name: String,
        options: Vec<OptionEntry>,
    },
    DeleteTopic {
        stream: Ident,
        topic: Ident,
    },
    PurgeTopic {
        stream: Ident,
        topic: Ident,
    },

    CreatePartitions {
        stream: Ident,
        topic: Ident,
        count: u32,
    },
    DeletePartitions {
        stream: Ident,
        topic: Ident,
        count: u32,
    },
    /// Recorded only: the storage layer removes the segments.
    DeleteSegments {
        stream: Ident,
        topic: Ident,
        partition: PartitionId,
        count: u32,
    },

    CreateConsumerGroup {
        stream: Ident,
        topic: Ident,
        name: String,
    },
    DeleteConsumerGroup {
        stream: Ident,
        topic: Ident,
        group: Ident,
    },
    /// `in_flight`: partitions with polled-but-uncommitted group data, as
    /// the primary saw them when admitting the join (cooperative rebalance).
    JoinConsumerGroup {
        stream: Ident,
        topic: Ident,
        group: Ident,
        client: ClientId,
        in_flight: Vec<PartitionId>,
    },
    LeaveConsumerGroup {
        stream: Ident,
        topic: Ident,
        group: Ident,
        client: ClientId,
    },
    /// Hands a pending partition to its new owner (offset caught up, or the
    /// rebalancing timeout forced it). Server-originated.
    CompleteRevocation {
        stream: Ident,
        topic: Ident,
        group: Ident,
        partition: PartitionId,
    },

    CreateUser {
        username: String,
        password_hash: String,
        status: UserStatus,
        permissions: Option<Permissions>,
    },
    UpdateUser {
        user: Ident,
        username: Option<String>,
        status: Option<UserStatus>,
    },
    DeleteUser {
        user: Ident,
    },
    /// Carries the new hash; the current password was verified on admission.
    ChangePassword {
        user: Ident,
        new_password_hash: String,
    },
    UpdatePermissions {
        user: Ident,
        permissions: Option<Permissions>,
    },

    /// A token of the acting user.
    CreatePersonalAccessToken {
        name: String,
        token_hash: String,
        expires_at_us: Option<u64>,
        max_tokens_per_user: u32,
    },
    DeletePersonalAccessToken {
        name: String,
    },
    /// Removes every token with `expires_at <= timestamp_us` (the cleaner).
    DeleteExpiredPersonalAccessTokens,

    RegisterClient {
        client: ClientId,
        user: UserId,
        transport: Transport,
        address: String,
        /// The cluster node whose connection holds the session (`None` on
        /// a single node): its sessions end when it restarts or stays
        /// unreachable.
        node: Option<u8>,
    },
    /// Ends a session and removes it from every consumer group.
    UnregisterClient {
        client: ClientId,
    },
}

/// What an applied operation changed, with the IDs the caller needs for the
/// reply and for the storage layer (directories to create, delete, purge).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApplyOutcome {
    StreamCreated {
        stream: StreamId,
    },
    StreamUpdated {
        stream: StreamId,
    },
    StreamDeleted {
        stream: StreamId,
    },
    StreamPurged {
        stream: StreamId,
        topics: Vec<TopicPurged>,
    },

    TopicCreated {
        stream: StreamId,
        topic: TopicId,
        partitions_count: u32,
    },
    TopicUpdated {
        stream: StreamId,
        topic: TopicId,
    },
    TopicDeleted {
        stream: StreamId,
        topic: TopicId,
    },
    TopicPurged(TopicPurged),

    /// Partitions `first .. first + count` were added.
    PartitionsCreated {
        stream: StreamId,
        topic: TopicId,
        first: PartitionId,
        count: u32,
    },
    /// Partitions `first .. first + count` were removed.
    PartitionsDeleted {
        stream: StreamId,
        topic: TopicId,
        first: PartitionId,
        count: u32,
    },
    SegmentsDeleted {
        stream: StreamId,
        topic: TopicId,
        partition: PartitionId,
        count: u32,
    },

    GroupCreated {
        stream: StreamId,
        topic: TopicId,
        group: ConsumerGroupId,
    },
    GroupDeleted {
        stream: StreamId,
        topic: TopicId,
        group: ConsumerGroupId,
    },
    /// `changed` is false when the client was already a member.
    GroupJoined {
        stream: StreamId,
        topic: TopicId,
        group: ConsumerGroupId,
        changed: bool,
    },
    GroupLeft {
        stream: StreamId,
        topic: TopicId,
        group: ConsumerGroupId,
    },
    /// `changed` is false when nothing was pending for the partition.
    RevocationCompleted {
        stream: StreamId,
        topic: TopicId,
        group: ConsumerGroupId,
        partition: PartitionId,
        changed: bool,
    },

    UserCreated {
        user: UserId,
    },
    UserUpdated {
        user: UserId,
    },
    UserDeleted {
        user: UserId,
    },
    PasswordChanged {
        user: UserId,
    },
    PermissionsUpdated {
        user: UserId,
    },

    TokenCreated {
        user: UserId,
        name: String,
    },
    TokenDeleted {
        user: UserId,
        name: String,
    },
    ExpiredTokensDeleted {
        count: u32,
    },

    ClientRegistered {
        client: ClientId,
    },
    ClientUnregistered {
        client: ClientId,
        groups_left: u32,
    },
}

/// A purged topic and its new purge generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TopicPurged {
    pub stream: StreamId,
    pub topic: TopicId,
    pub purge_generation: u64,
}
