//! Subcommands that manage resources: streams, topics, partitions, segments,
//! consumer offsets and groups, users and personal access tokens (spec §6.1-6.9).

use super::ListModeArg;
use crate::parse;
use clap::{Args, Subcommand, ValueEnum};
use iggy::prelude::{
    CompressionAlgorithm, GlobalPermissions, Identifier, IggyExpiry, MaxTopicSize,
};

#[derive(Debug, Subcommand)]
pub enum StreamAction {
    /// Create stream with given name
    #[command(visible_alias = "c")]
    Create {
        /// Legacy stream ID flag (ignored)
        #[arg(short = 's', long)]
        stream_id: Option<u32>,
        /// Name of the stream
        name: String,
    },
    /// Delete stream with given ID
    #[command(visible_alias = "d")]
    Delete {
        /// Stream ID to delete (numeric ID or name)
        #[arg(value_parser = parse::identifier)]
        stream_id: Identifier,
    },
    /// Update stream name for given stream ID
    #[command(visible_alias = "u")]
    Update {
        /// Stream ID to update (numeric ID or name)
        #[arg(value_parser = parse::identifier)]
        stream_id: Identifier,
        /// New name for the stream
        name: String,
    },
    /// Get details of a single stream with given ID
    #[command(visible_alias = "g")]
    Get {
        /// Stream ID to get (numeric ID or name)
        #[arg(value_parser = parse::identifier)]
        stream_id: Identifier,
    },
    /// List all streams
    #[command(visible_alias = "l")]
    List(ListModeArg),
    /// Purge all topics in given stream ID
    #[command(visible_alias = "p")]
    Purge {
        /// Stream ID to purge (numeric ID or name)
        #[arg(value_parser = parse::identifier)]
        stream_id: Identifier,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DurabilityArg {
    Replicated,
    Persisted,
}

#[derive(Debug, Args)]
pub struct TopicCreateArgs {
    /// Stream ID to create topic (numeric ID or name)
    #[arg(value_parser = parse::identifier)]
    pub stream_id: Identifier,
    /// Name of the topic
    pub name: String,
    /// Number of partitions inside the topic
    pub partitions_count: u32,
    /// Compression algorithm for the topic, set to "none" for no compression
    #[arg(value_parser = parse::compression)]
    pub compression_algorithm: CompressionAlgorithm,
    /// Message expiry time in human-readable format like "unlimited" or "15days 2min 2s"
    ///
    /// ("server_default" or skipping parameter makes CLI to use server default expiry time)
    #[arg(value_parser = parse::expiry)]
    pub message_expiry: Vec<IggyExpiry>,
    /// Max topic size in human-readable format like "unlimited" or "15GB"
    ///
    /// ("server_default" or skipping parameter makes CLI to use server default)
    #[arg(short = 'm', long, value_parser = parse::max_topic_size, default_value = "server_default")]
    pub max_topic_size: MaxTopicSize,
    /// Durability of the topic's messages
    #[arg(long, value_enum, default_value_t = DurabilityArg::Replicated)]
    pub durability: DurabilityArg,
    /// Durability of the topic's consumer offsets
    #[arg(long, value_enum, default_value_t = DurabilityArg::Replicated)]
    pub consumer_offset_durability: DurabilityArg,
    /// Extra topic option KEY=VALUE (see `iggy options topic`); repeatable
    #[arg(long = "set", value_parser = parse::key_value)]
    pub set: Vec<(String, String)>,
    /// Legacy topic ID flag (ignored)
    #[arg(short = 't', long)]
    pub topic_id: Option<u32>,
}

#[derive(Debug, Args)]
pub struct TopicUpdateArgs {
    /// Stream ID (numeric ID or name)
    #[arg(value_parser = parse::identifier)]
    pub stream_id: Identifier,
    /// Topic ID to update (numeric ID or name)
    #[arg(value_parser = parse::identifier)]
    pub topic_id: Identifier,
    /// New name for the topic
    pub name: String,
    /// Compression algorithm for the topic, set to "none" for no compression
    #[arg(value_parser = parse::compression)]
    pub compression_algorithm: CompressionAlgorithm,
    /// New message expiry time ("server_default" or omitting keeps the current value)
    #[arg(value_parser = parse::expiry)]
    pub message_expiry: Vec<IggyExpiry>,
    /// New max topic size ("server_default" or omitting keeps the current value)
    #[arg(short = 'm', long, value_parser = parse::max_topic_size, default_value = "server_default")]
    pub max_topic_size: MaxTopicSize,
}

#[derive(Debug, Subcommand)]
pub enum TopicAction {
    /// Create topic with given name, number of partitions and expiry time for given stream ID
    #[command(visible_alias = "c")]
    Create(TopicCreateArgs),
    /// Delete topic with given ID in given stream ID
    #[command(visible_alias = "d")]
    Delete {
        #[arg(value_parser = parse::identifier)]
        stream_id: Identifier,
        #[arg(value_parser = parse::identifier)]
        topic_id: Identifier,
    },
    /// Update topic name, compression algorithm, message expiry and max size
    #[command(visible_alias = "u")]
    Update(TopicUpdateArgs),
    /// Get topic detail for given topic ID and stream ID
    #[command(visible_alias = "g")]
    Get {
        #[arg(value_parser = parse::identifier)]
        stream_id: Identifier,
        #[arg(value_parser = parse::identifier)]
        topic_id: Identifier,
        /// [addition] Add the topic's option rows (value, explicit or derived)
        #[arg(long)]
        options: bool,
    },
    /// List all topics in given stream ID
    #[command(visible_alias = "l")]
    List {
        #[arg(value_parser = parse::identifier)]
        stream_id: Identifier,
        #[command(flatten)]
        mode: ListModeArg,
    },
    /// Purge topic with given ID in given stream ID
    #[command(visible_alias = "p")]
    Purge {
        #[arg(value_parser = parse::identifier)]
        stream_id: Identifier,
        #[arg(value_parser = parse::identifier)]
        topic_id: Identifier,
    },
}

#[derive(Debug, Args)]
pub struct PartitionArgs {
    /// Stream ID (numeric ID or name)
    #[arg(value_parser = parse::identifier)]
    pub stream_id: Identifier,
    /// Topic ID (numeric ID or name)
    #[arg(value_parser = parse::identifier)]
    pub topic_id: Identifier,
    /// Partitions count
    #[arg(value_parser = clap::value_parser!(u32).range(1..100001))]
    pub partitions_count: u32,
}

#[derive(Debug, Subcommand)]
pub enum PartitionAction {
    /// Create partitions for the specified topic ID and stream ID
    #[command(visible_alias = "c")]
    Create(PartitionArgs),
    /// Delete partitions for the specified topic ID and stream ID
    #[command(visible_alias = "d")]
    Delete(PartitionArgs),
}

#[derive(Debug, Subcommand)]
pub enum SegmentAction {
    /// Delete segments for the specified topic ID, stream ID and partition ID
    #[command(visible_alias = "d")]
    Delete {
        #[arg(value_parser = parse::identifier)]
        stream_id: Identifier,
        #[arg(value_parser = parse::identifier)]
        topic_id: Identifier,
        /// Partition ID
        partition_id: u32,
        /// Segments count
        #[arg(value_parser = clap::value_parser!(u32).range(1..100001))]
        segments_count: u32,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ConsumerKindArg {
    #[value(alias = "c")]
    Consumer,
    #[value(alias = "cg")]
    ConsumerGroup,
}

#[derive(Debug, Args)]
pub struct OffsetTarget {
    /// Regular consumer for which the offset is handled
    #[arg(short = 'k', long, value_enum, default_value_t = ConsumerKindArg::Consumer)]
    pub kind: ConsumerKindArg,
    /// Consumer ID (or consumer group ID with --kind consumer-group)
    #[arg(value_parser = parse::identifier)]
    pub consumer_id: Identifier,
    #[arg(value_parser = parse::identifier)]
    pub stream_id: Identifier,
    #[arg(value_parser = parse::identifier)]
    pub topic_id: Identifier,
    /// Partition ID
    pub partition_id: u32,
}

#[derive(Debug, Subcommand)]
pub enum ConsumerOffsetAction {
    /// Retrieve the offset of a consumer for a given partition from the server
    #[command(visible_alias = "g")]
    Get(OffsetTarget),
    /// Set the offset of a consumer for a given partition on the server
    #[command(visible_alias = "s")]
    Set {
        #[command(flatten)]
        target: OffsetTarget,
        /// Offset to set
        offset: u64,
    },
}

#[derive(Debug, Subcommand)]
pub enum ConsumerGroupAction {
    /// Create consumer group with given name for given stream ID and topic ID
    #[command(visible_alias = "c")]
    Create {
        /// Legacy group ID flag (ignored)
        #[arg(short = 'g', long)]
        group_id: Option<u32>,
        #[arg(value_parser = parse::identifier)]
        stream_id: Identifier,
        #[arg(value_parser = parse::identifier)]
        topic_id: Identifier,
        /// Consumer group name
        name: String,
    },
    /// Delete consumer group with given ID for given stream ID and topic ID
    #[command(visible_alias = "d")]
    Delete(GroupTarget),
    /// Get details of a single consumer group with given ID for given stream ID and topic ID
    #[command(visible_alias = "g")]
    Get {
        #[command(flatten)]
        target: GroupTarget,
        /// [addition] Also show each partition's stored and current offset and the lag
        #[arg(long)]
        lag: bool,
    },
    /// List all consumer groups for given stream ID and topic ID
    #[command(visible_alias = "l")]
    List {
        #[arg(value_parser = parse::identifier)]
        stream_id: Identifier,
        #[arg(value_parser = parse::identifier)]
        topic_id: Identifier,
        #[command(flatten)]
        mode: ListModeArg,
    },
}

#[derive(Debug, Args)]
pub struct GroupTarget {
    #[arg(value_parser = parse::identifier)]
    pub stream_id: Identifier,
    #[arg(value_parser = parse::identifier)]
    pub topic_id: Identifier,
    /// Consumer group ID (numeric ID or name)
    #[arg(value_parser = parse::identifier)]
    pub group_id: Identifier,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum UserStatusArg {
    Active,
    Inactive,
}

impl std::fmt::Display for UserStatusArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            UserStatusArg::Active => "active",
            UserStatusArg::Inactive => "inactive",
        })
    }
}

#[derive(Debug, Args)]
pub struct PermissionArgs {
    /// Set global permissions for created user (comma separated list)
    #[arg(short = 'g', long, value_parser = parse::global_permissions)]
    pub global_permissions: Option<GlobalPermissions>,
    /// Set stream permissions for created user (STREAM_ID[:PERMS][#TOPIC_ID[:PERMS]]...)
    #[arg(short = 's', long, value_parser = parse::stream_permissions)]
    pub stream_permissions: Vec<parse::StreamPermissionSpec>,
}

#[derive(Debug, Subcommand)]
pub enum UserAction {
    /// Create user with given username and password
    #[command(visible_alias = "c")]
    Create {
        /// Username (3..50 characters)
        username: String,
        /// Password (3..100 characters)
        password: String,
        /// User status
        #[arg(short = 'u', long, value_enum, default_value_t = UserStatusArg::Active)]
        user_status: UserStatusArg,
        #[command(flatten)]
        permissions: PermissionArgs,
    },
    /// Delete user with given ID
    #[command(visible_alias = "d")]
    Delete {
        #[arg(value_parser = parse::identifier)]
        user_id: Identifier,
    },
    /// Get details of a single user with given ID
    #[command(visible_alias = "g")]
    Get {
        #[arg(value_parser = parse::identifier)]
        user_id: Identifier,
    },
    /// List all users
    #[command(visible_alias = "l")]
    List(ListModeArg),
    /// Change username for user with given ID
    #[command(visible_alias = "n")]
    Name {
        #[arg(value_parser = parse::identifier)]
        user_id: Identifier,
        /// New username
        username: String,
    },
    /// Change status for user with given ID
    #[command(visible_alias = "s")]
    Status {
        #[arg(value_parser = parse::identifier)]
        user_id: Identifier,
        /// New status
        #[arg(value_enum)]
        status: UserStatusArg,
    },
    /// Change password for user with given ID
    #[command(visible_alias = "pwd")]
    Password {
        #[arg(value_parser = parse::identifier)]
        user_id: Identifier,
        /// Current password (prompted when omitted)
        current_password: Option<String>,
        /// New password (prompted when omitted)
        new_password: Option<String>,
    },
    /// Set permissions for user with given ID (no flags removes all permissions)
    #[command(visible_alias = "p")]
    Permissions {
        #[arg(value_parser = parse::identifier)]
        user_id: Identifier,
        #[command(flatten)]
        permissions: PermissionArgs,
    },
}

#[derive(Debug, Subcommand)]
pub enum PatAction {
    /// Create personal access token
    ///
    /// In quiet mode only the raw token value is printed.
    #[command(visible_alias = "c")]
    Create {
        /// Name of the personal access token
        name: String,
        /// Token expiry time in human-readable format like "unlimited" or "15days 2min 2s"
        #[arg(value_parser = parse::expiry, conflicts_with = "store_token")]
        expiry: Vec<IggyExpiry>,
        /// Store the token in the secure storage instead of printing it
        #[arg(short = 's', long)]
        store_token: bool,
    },
    /// Delete personal access token
    #[command(visible_alias = "d")]
    Delete {
        /// Name of the personal access token
        name: String,
    },
    /// List all personal access tokens
    #[command(visible_alias = "l")]
    List(ListModeArg),
}
