//! The replicated metadata state machine: streams, topics, partitions,
//! consumer groups, users, permissions, personal access tokens and client
//! sessions.
//!
//! Sans-IO and deterministic. The server turns a request into a
//! [`ops::MetadataOp`] (stamping the commit timestamp, the acting user and
//! any server-generated values such as password and token hashes), the
//! consensus layer journals its [`codec`] encoding, and every replica calls
//! [`state::MetadataState::apply`] in log order. Read-side helpers for
//! replies live in `state::queries`; the authorizer in [`permissions`].

pub mod codec;
pub mod errors;
pub mod groups;
pub mod ids;
pub mod names;
pub mod ops;
pub mod password;
pub mod permissions;
pub mod state;
pub mod stream;
pub mod token;
pub mod topic;
pub mod user;

pub use errors::MetadataError;
pub use ids::{
    ClientId, ConsumerGroupId, Ident, Namespace, PartitionId, StreamId, TopicId, UserId,
};
pub use ops::{ApplyOutcome, MetadataOp, OpKind};
pub use state::MetadataState;
pub use state::queries::{Assignment, Membership};
