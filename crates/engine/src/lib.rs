//! Domain engine: streams, topics, partitions, users, permissions, tokens, consumer groups, polling, retention.
#![forbid(unsafe_code)]

pub mod cluster_metadata;
pub mod cluster_partition;
pub mod encryption;
pub mod metadata;
pub mod metadata_group;
pub mod partition;
pub mod replicated;
