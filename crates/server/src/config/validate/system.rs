//! Rules of `[system]`: directory names, logging, encryption at rest, the
//! unsupported switches, the memory pool and `[system.sharding]`.

use super::{in_range, non_empty, positive_at_most, quoted, require, secret_shown};
use crate::config::error::ConfigError;
use crate::config::schema::{LoggingConfig, MemoryPoolConfig, ShardingConfig, SystemConfig};
use crate::config::values::{ByteSize, ConfigDuration};

const LOGGING_INTERVAL_MIN: ConfigDuration = ConfigDuration::from_secs(1);
/// AES-256-GCM key length.
const ENCRYPTION_KEY_LEN: usize = 32;
const MEMORY_POOL_SIZE_MIN: ByteSize = ByteSize::mib(512);
const MEMORY_POOL_ALIGNMENT_BYTES: u64 = 4_096;
const BUCKET_CAPACITY_MIN: u32 = 128;
const INBOX_CAPACITY_MIN: usize = 1;
const INBOX_CAPACITY_MAX: usize = 1_048_576;
const SHUTDOWN_DRAIN_TIMEOUT_MAX: ConfigDuration = ConfigDuration::from_secs(600);
const SHUTDOWN_POLL_INTERVAL_MAX: ConfigDuration = ConfigDuration::from_secs(5);
const SHUTDOWN_JOIN_TIMEOUT_MAX: ConfigDuration = ConfigDuration::from_secs(900);
const IDLE_SPIN_MAX: ConfigDuration = ConfigDuration::from_millis(10);
const RECONCILE_PERIODIC_INTERVAL_MAX: ConfigDuration = ConfigDuration::from_secs(30);

pub(super) fn validate(system: &SystemConfig) -> Result<(), ConfigError> {
    // An empty data root would make `--fresh` delete the working directory.
    non_empty("system.path", &system.path)?;
    non_empty("system.runtime.path", &system.runtime.path)?;
    non_empty("system.stream.path", &system.stream.path)?;
    non_empty("system.topic.path", &system.topic.path)?;
    non_empty("system.partition.path", &system.partition.path)?;
    validate_logging(&system.logging)?;
    if system.encryption.enabled {
        let key = &system.encryption.key;
        require(
            base64_decoded_len(key.trim()) == Some(ENCRYPTION_KEY_LEN),
            "system.encryption.key",
            secret_shown(key),
            "standard base64 of exactly 32 bytes when system.encryption.enabled = true",
        )?;
        for (index, previous) in system.encryption.previous_key_texts().enumerate() {
            require(
                base64_decoded_len(previous) == Some(ENCRYPTION_KEY_LEN),
                "system.encryption.previous_keys",
                format!("entry {index} {}", secret_shown(previous)),
                "comma-separated standard base64 keys of exactly 32 bytes each",
            )?;
        }
    }
    let unsupported = "false (the feature is not supported)";
    require(
        !system.segment.archive_expired,
        "system.segment.archive_expired",
        true,
        unsupported,
    )?;
    require(
        !system.recovery.recreate_missing_state,
        "system.recovery.recreate_missing_state",
        true,
        unsupported,
    )?;
    validate_memory_pool(&system.memory_pool)?;
    validate_sharding(&system.sharding)
}

fn validate_logging(logging: &LoggingConfig) -> Result<(), ConfigError> {
    non_empty("system.logging.path", &logging.path)?;
    non_empty("system.logging.level", &logging.level)?;
    let total = logging.max_total_size;
    let allowed = format!(
        "0 (unlimited) or at least system.logging.max_file_size ({})",
        logging.max_file_size
    );
    require(
        total.is_zero() || total >= logging.max_file_size,
        "system.logging.max_total_size",
        quoted(total),
        &allowed,
    )?;
    for (key, interval) in [
        (
            "system.logging.rotation_check_interval",
            logging.rotation_check_interval,
        ),
        ("system.logging.retention", logging.retention),
    ] {
        require(
            interval >= LOGGING_INTERVAL_MIN,
            key,
            quoted(interval),
            "at least 1s",
        )?;
    }
    Ok(())
}

fn validate_memory_pool(pool: &MemoryPoolConfig) -> Result<(), ConfigError> {
    if pool.enabled {
        let size = pool.size;
        let allowed = format!(
            "at least {MEMORY_POOL_SIZE_MIN} and a multiple of {MEMORY_POOL_ALIGNMENT_BYTES} bytes \
             when system.memory_pool.enabled = true"
        );
        require(
            size >= MEMORY_POOL_SIZE_MIN
                && size.as_bytes().is_multiple_of(MEMORY_POOL_ALIGNMENT_BYTES),
            "system.memory_pool.size",
            quoted(size),
            &allowed,
        )?;
    }
    let capacity = pool.bucket_capacity;
    let allowed = format!("a power of two, at least {BUCKET_CAPACITY_MIN}");
    require(
        capacity.is_power_of_two() && capacity >= BUCKET_CAPACITY_MIN,
        "system.memory_pool.bucket_capacity",
        capacity,
        &allowed,
    )
}

fn validate_sharding(sharding: &ShardingConfig) -> Result<(), ConfigError> {
    for (key, capacity) in [
        ("system.sharding.inbox_capacity", sharding.inbox_capacity),
        (
            "system.sharding.reply_inbox_capacity",
            sharding.reply_inbox_capacity,
        ),
    ] {
        in_range(key, capacity, INBOX_CAPACITY_MIN, INBOX_CAPACITY_MAX)?;
    }
    let drain = sharding.shutdown_drain_timeout;
    positive_at_most(
        "system.sharding.shutdown_drain_timeout",
        drain,
        SHUTDOWN_DRAIN_TIMEOUT_MAX,
    )?;
    let spin = sharding.idle_spin;
    require(
        spin <= IDLE_SPIN_MAX,
        "system.sharding.idle_spin",
        quoted(spin),
        "at most 10 ms",
    )?;
    let poll = sharding.shutdown_poll_interval;
    positive_at_most(
        "system.sharding.shutdown_poll_interval",
        poll,
        SHUTDOWN_POLL_INTERVAL_MAX,
    )?;
    let allowed = format!("at most system.sharding.shutdown_drain_timeout ({drain})");
    require(
        poll <= drain,
        "system.sharding.shutdown_poll_interval",
        quoted(poll),
        &allowed,
    )?;
    let join = sharding.shutdown_join_timeout;
    let allowed = format!(
        "at least system.sharding.shutdown_drain_timeout ({drain}) and at most {SHUTDOWN_JOIN_TIMEOUT_MAX}"
    );
    require(
        join >= drain && join <= SHUTDOWN_JOIN_TIMEOUT_MAX,
        "system.sharding.shutdown_join_timeout",
        quoted(join),
        &allowed,
    )?;
    positive_at_most(
        "system.sharding.reconcile_periodic_interval",
        sharding.reconcile_periodic_interval,
        RECONCILE_PERIODIC_INTERVAL_MAX,
    )
}

/// Length of the bytes a standard-alphabet base64 text decodes to (padding
/// optional), or `None` when it is not base64.
fn base64_decoded_len(text: &str) -> Option<usize> {
    let unpadded = text.trim_end_matches('=');
    let padding = text.len() - unpadded.len();
    let alphabet = |byte: u8| byte.is_ascii_alphanumeric() || byte == b'+' || byte == b'/';
    let well_formed = padding <= 2
        && unpadded.bytes().all(alphabet)
        && unpadded.len() % 4 != 1
        && (padding == 0 || text.len().is_multiple_of(4));
    well_formed.then_some(unpadded.len() * 3 / 4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_base64_texts_when_measuring_should_count_decoded_bytes() {
        let key_32 = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
        assert_eq!(base64_decoded_len(key_32), Some(32));
        assert_eq!(base64_decoded_len(key_32.trim_end_matches('=')), Some(32));
        assert_eq!(base64_decoded_len("c2VjcmV0"), Some(6));
        assert_eq!(base64_decoded_len("not base64!"), None);
        assert_eq!(base64_decoded_len("abcde"), None);
        assert_eq!(base64_decoded_len("ab==="), None);
    }
}
