//! Domain engine: streams, topics, partitions, users, permissions, tokens, consumer groups, polling, retention.

pub mod metadata;
