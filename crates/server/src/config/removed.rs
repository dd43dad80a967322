//! Keys that older releases accepted and this one refuses (spec §8). A
//! removed key in the file, or its environment variable (or any variable
//! nested under it), stops loading with a message naming the replacement.

use std::path::Path;

use toml::Value;

use super::error::ConfigError;

/// Removed key paths and what replaced them.
pub(crate) const REMOVED_KEYS: [(&str, &str); 9] = [
    (
        "system.topic.max_size",
        "use the per-topic option `max_topic_size`",
    ),
    (
        "system.topic.message_expiry",
        "use the per-topic option `message_expiry`",
    ),
    (
        "system.partition.enforce_fsync",
        "use the per-topic option `enforce_fsync`",
    ),
    (
        "system.partition.messages_required_to_save",
        "use the per-topic option `messages_required_to_save`",
    ),
    (
        "system.partition.size_of_messages_required_to_save",
        "use the per-topic option `size_of_messages_required_to_save`",
    ),
    (
        "system.segment.size",
        "use the per-topic option `segment_size`",
    ),
    (
        "system.segment.preallocate",
        "use the per-topic option `preallocate_segments`",
    ),
    (
        "system.message_deduplication",
        "the whole table was removed",
    ),
    (
        "extra",
        "the whole table was removed; its limits are compile-time constants",
    ),
];

/// Refuses a file that sets a removed key.
pub(crate) fn check_file(file: &toml::Table, path: &Path) -> Result<(), ConfigError> {
    for (key, replacement) in REMOVED_KEYS {
        if lookup_dotted(file, key).is_some() {
            return Err(ConfigError::RemovedKey {
                key: key.to_owned(),
                origin: path.display().to_string(),
                replacement,
            });
        }
    }
    Ok(())
}

/// Refuses an environment variable that addresses a removed key.
pub(crate) fn check_env_name(name: &str) -> Result<(), ConfigError> {
    for (key, replacement) in REMOVED_KEYS {
        let removed_name = format!("IGGY_{}", key.replace('.', "_").to_ascii_uppercase());
        let nested = name
            .strip_prefix(removed_name.as_str())
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('_'));
        if nested {
            return Err(ConfigError::RemovedKey {
                key: key.to_owned(),
                origin: format!("environment variable {name}"),
                replacement,
            });
        }
    }
    Ok(())
}

fn lookup_dotted<'a>(table: &'a toml::Table, dotted: &str) -> Option<&'a Value> {
    let mut segments = dotted.split('.');
    let mut current = table.get(segments.next()?)?;
    for segment in segments {
        current = current.as_table()?.get(segment)?;
    }
    Some(current)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_removed_key_in_file_when_checking_should_name_replacement() {
        let file: toml::Table = "[system.segment]\nsize = \"1 GiB\"\n"
            .parse()
            .expect("toml");
        let error = check_file(&file, Path::new("config.toml")).expect_err("removed key");
        let message = error.to_string();
        assert!(message.contains("system.segment.size"), "{message}");
        assert!(message.contains("segment_size"), "{message}");
        let whole_table: toml::Table = "[extra]\nanything = 1\n".parse().expect("toml");
        assert!(check_file(&whole_table, Path::new("config.toml")).is_err());
    }

    #[test]
    fn given_removed_env_names_when_checking_should_refuse_key_and_nested_names() {
        assert!(check_env_name("IGGY_SYSTEM_TOPIC_MESSAGE_EXPIRY").is_err());
        assert!(check_env_name("IGGY_SYSTEM_MESSAGE_DEDUPLICATION_ENABLED").is_err());
        assert!(check_env_name("IGGY_EXTRA_LIMIT").is_err());
        assert!(check_env_name("IGGY_SYSTEM_SEGMENT_ARCHIVE_EXPIRED").is_ok());
        assert!(check_env_name("IGGY_EXTRAS").is_ok());
    }
}
