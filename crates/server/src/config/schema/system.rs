//! `[system]`: the data root and its sub-directories, logging, encryption
//! at rest, the memory pool and `[system.sharding]`. Directory paths below
//! `system.path` are relative to it; `system.path` is relative to the
//! working directory.

use serde::{Deserialize, Serialize};

use crate::config::values::{ByteSize, ConfigDuration, CpuAllocation};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemConfig {
    /// Data root; everything on disk lives below it.
    pub path: String,
    pub runtime: RuntimeConfig,
    pub logging: LoggingConfig,
    pub encryption: EncryptionConfig,
    pub stream: DirectoryConfig,
    pub topic: DirectoryConfig,
    pub partition: SystemPartitionConfig,
    pub segment: SegmentConfig,
    pub recovery: RecoveryConfig,
    pub memory_pool: MemoryPoolConfig,
    pub sharding: ShardingConfig,
}

/// `[system.runtime]`: recreated every boot, holds the config dump.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeConfig {
    pub path: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoggingConfig {
    /// Log directory under the data root.
    pub path: String,
    /// Filter directive in `RUST_LOG` syntax.
    pub level: String,
    pub file_enabled: bool,
    /// Zero means a single unbounded file.
    pub max_file_size: ByteSize,
    /// Zero means unlimited.
    pub max_total_size: ByteSize,
    pub rotation_check_interval: ConfigDuration,
    pub retention: ConfigDuration,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EncryptionConfig {
    pub enabled: bool,
    /// Secret: base64 of a 32-byte AES-256-GCM key. Never dumped.
    pub key: String,
    /// Secret: keys older data was encrypted with, comma-separated base64
    /// (key rotation). Never dumped.
    pub previous_keys: String,
}

impl EncryptionConfig {
    /// The previous keys as written, trimmed, empty entries skipped.
    pub fn previous_key_texts(&self) -> impl Iterator<Item = &str> {
        self.previous_keys
            .split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
    }
}

/// A section holding only a directory name (`system.stream`, `system.topic`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirectoryConfig {
    pub path: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemPartitionConfig {
    pub path: String,
    pub validate_checksum: bool,
    /// Which partitions are written with direct I/O.
    pub direct_io: DirectIo,
    /// Memory for written batches of partitions written with direct I/O,
    /// for the whole node (split evenly between shards); zero: each keeps
    /// 8 MiB, as a buffered partition does.
    pub cache_size: ByteSize,
    /// Touch `cache_size` of memory at start instead of at first use.
    pub cache_prefault: bool,
    /// A segment written through the page cache starts the write-back of
    /// every this many bytes; zero leaves write-back to the kernel.
    pub write_behind: ByteSize,
}

/// `system.partition.direct_io`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DirectIo {
    /// Partitions that fsync every batch (`persisted` durability).
    Fsync,
    /// Every partition.
    Always,
    /// None.
    Never,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentConfig {
    /// Unsupported; validation requires `false`.
    pub archive_expired: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoveryConfig {
    /// Unsupported; validation requires `false`.
    pub recreate_missing_state: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryPoolConfig {
    pub enabled: bool,
    pub size: ByteSize,
    pub bucket_capacity: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardingConfig {
    pub cpu_allocation: CpuAllocation,
    /// Pin shard threads to their CPUs (and bind NUMA memory).
    pub pin_cores: bool,
    pub inbox_capacity: usize,
    pub reply_inbox_capacity: usize,
    pub shutdown_drain_timeout: ConfigDuration,
    pub shutdown_poll_interval: ConfigDuration,
    pub shutdown_join_timeout: ConfigDuration,
    pub reconcile_periodic_interval: ConfigDuration,
    /// Polling without sleeping after the last request (`shard::event_loop`).
    pub idle_spin: ConfigDuration,
}
