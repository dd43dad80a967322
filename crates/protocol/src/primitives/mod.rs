//! The field encodings shared by many bodies (spec 8): names, identifiers,
//! consumers, partition selectors, polling strategies, partitioning, the
//! key/value blocks and the permissions block.
//!
//! Decoders read from a [`Reader`](crate::wire::Reader) and borrow from its
//! buffer; encoders append to a `Vec<u8>`. Encoders assert the invariants
//! the decoders check (a name is 1..=255 bytes, ...): handing them invalid
//! values is a programming error, not an operating one.

mod identifier;
mod kv;
mod name;
mod partitioning;
mod permissions;
mod polling;

pub use identifier::{Consumer, ConsumerKind, Identifier};
pub use kv::{
    KvEntry, KvError, KvIter, MAX_KV_FIELD_LEN, MAX_OPTIONS, MAX_OPTIONS_BYTES,
    MAX_USER_HEADERS_BYTES, Options, UserHeaders, ValueKind, put_kv_pair,
};
pub use name::{MAX_NAME_LEN, WireName, put_name};
pub use partitioning::Partitioning;
pub use permissions::{GlobalPermissions, Permissions, StreamPermissions, TopicPermissions};
pub use polling::{PollingStrategy, put_optional_partition, read_optional_partition};
