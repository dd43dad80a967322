//! Per-topic options (storage spec §5, binary spec §8.7): the resolved
//! values, the catalogue of keys, defaults, validation and the `0 = server
//! default` rule.
//!
//! Resolution happens when the create/update operation is applied; the
//! defaults are fixed constants, so every replica resolves identically and
//! the result is stored, never recomputed from configuration.

use std::collections::BTreeSet;

use super::option_value::{OptionEntry, OptionValue};
use super::units::{parse_duration_us, parse_size_bytes};
use crate::metadata::errors::MetadataError;

pub const DEFAULT_SEGMENT_SIZE_BYTES: u64 = 1 << 30;
pub const SEGMENT_SIZE_MIN_BYTES: u64 = 1 << 20;
pub const SEGMENT_SIZE_MAX_BYTES: u64 = 1 << 30;
pub const SEGMENT_SIZE_ALIGNMENT_BYTES: u64 = 512;
pub const DEFAULT_MESSAGES_REQUIRED_TO_SAVE: u32 = 1024;
pub const MESSAGES_REQUIRED_TO_SAVE_MAX: u32 = 16_777_216;
pub const DEFAULT_SIZE_OF_MESSAGES_REQUIRED_TO_SAVE_BYTES: u64 = 1 << 20;
pub const SIZE_OF_MESSAGES_REQUIRED_TO_SAVE_MAX_BYTES: u64 = 1 << 30;
/// Preallocation may reserve at most this much per topic.
pub const PREALLOCATION_MAX_BYTES: u64 = 64 << 30;

const _: () = assert!(DEFAULT_SEGMENT_SIZE_BYTES.is_multiple_of(SEGMENT_SIZE_ALIGNMENT_BYTES));
const _: () = assert!(SEGMENT_SIZE_MIN_BYTES <= DEFAULT_SEGMENT_SIZE_BYTES);
const _: () = assert!(DEFAULT_SEGMENT_SIZE_BYTES <= SEGMENT_SIZE_MAX_BYTES);

pub const KEY_COMPRESSION: &str = "compression_algorithm";
pub const KEY_MESSAGE_EXPIRY: &str = "message_expiry";
pub const KEY_MAX_TOPIC_SIZE: &str = "max_topic_size";
pub const KEY_SEGMENT_SIZE: &str = "segment_size";
pub const KEY_DURABILITY: &str = "durability";
pub const KEY_OFFSET_DURABILITY: &str = "consumer_offset_durability";
pub const KEY_MESSAGES_REQUIRED_TO_SAVE: &str = "messages_required_to_save";
pub const KEY_SIZE_REQUIRED_TO_SAVE: &str = "size_of_messages_required_to_save";
pub const KEY_PREALLOCATE: &str = "preallocate_segments";

/// Every topic option key, sorted (derived options are reported in this order).
pub const TOPIC_OPTION_KEYS: [&str; 9] = [
    KEY_COMPRESSION,
    KEY_OFFSET_DURABILITY,
    KEY_DURABILITY,
    KEY_MAX_TOPIC_SIZE,
    KEY_MESSAGE_EXPIRY,
    KEY_MESSAGES_REQUIRED_TO_SAVE,
    KEY_PREALLOCATE,
    KEY_SEGMENT_SIZE,
    KEY_SIZE_REQUIRED_TO_SAVE,
];

/// The keys an UpdateTopic may carry.
pub const UPDATABLE_TOPIC_OPTION_KEYS: [&str; 3] =
    [KEY_COMPRESSION, KEY_MESSAGE_EXPIRY, KEY_MAX_TOPIC_SIZE];

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CompressionAlgorithm {
    #[default]
    None,
    Gzip,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MessageExpiry {
    #[default]
    Never,
    AfterMicros(u64),
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MaxTopicSize {
    #[default]
    Unlimited,
    Bytes(u64),
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    #[default]
    Replicated,
    Persisted,
}

/// The effective options of a topic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TopicOptions {
    pub compression: CompressionAlgorithm,
    pub message_expiry: MessageExpiry,
    pub max_topic_size: MaxTopicSize,
    pub segment_size_bytes: u64,
    pub durability: Durability,
    pub consumer_offset_durability: Durability,
    pub messages_required_to_save: u32,
    pub size_of_messages_required_to_save_bytes: u64,
    pub preallocate_segments: bool,
}

impl Default for TopicOptions {
    fn default() -> Self {
        Self {
            compression: CompressionAlgorithm::None,
            message_expiry: MessageExpiry::Never,
            max_topic_size: MaxTopicSize::Unlimited,
            segment_size_bytes: DEFAULT_SEGMENT_SIZE_BYTES,
            durability: Durability::Replicated,
            consumer_offset_durability: Durability::Replicated,
            messages_required_to_save: DEFAULT_MESSAGES_REQUIRED_TO_SAVE,
            size_of_messages_required_to_save_bytes:
                DEFAULT_SIZE_OF_MESSAGES_REQUIRED_TO_SAVE_BYTES,
            preallocate_segments: false,
        }
    }
}

impl MessageExpiry {
    /// The wire form: µs, `u64::MAX` for never.
    pub fn as_wire_micros(self) -> u64 {
        match self {
            MessageExpiry::Never => u64::MAX,
            MessageExpiry::AfterMicros(us) => us,
        }
    }
}

impl MaxTopicSize {
    /// The wire form: bytes, `u64::MAX` for unlimited.
    pub fn as_wire_bytes(self) -> u64 {
        match self {
            MaxTopicSize::Unlimited => u64::MAX,
            MaxTopicSize::Bytes(bytes) => bytes,
        }
    }
}

impl TopicOptions {
    /// Resolves the options a CreateTopic carries: defaults for absent keys,
    /// validation of present ones, then the cross-option rules.
    pub fn resolve_create(
        entries: &[OptionEntry],
        partitions_count: u32,
    ) -> Result<Self, MetadataError> {
        reject_duplicates(entries)?;
        let mut options = Self::default();
        for entry in entries {
            options.set(entry)?;
        }
        options.validate(partitions_count)?;
        Ok(options)
    }

    /// Applies an UpdateTopic's options; absent keys keep their value.
    pub fn resolve_update(
        &self,
        entries: &[OptionEntry],
        partitions_count: u32,
    ) -> Result<Self, MetadataError> {
        reject_duplicates(entries)?;
        let mut options = *self;
        for entry in entries {
            if !UPDATABLE_TOPIC_OPTION_KEYS.contains(&entry.key.as_str()) {
                return Err(MetadataError::UnsupportedOptionKey {
                    key: entry.key.clone(),
                });
            }
            options.set(entry)?;
        }
        options.validate(partitions_count)?;
        Ok(options)
    }

    /// The value of one catalogue key in its canonical kind (for replies).
    pub fn value_of(&self, key: &str) -> Option<OptionValue> {
        Some(match key {
            KEY_COMPRESSION => OptionValue::String(compression_name(self.compression).into()),
            KEY_MESSAGE_EXPIRY => OptionValue::U64(self.message_expiry.as_wire_micros()),
            KEY_MAX_TOPIC_SIZE => OptionValue::U64(self.max_topic_size.as_wire_bytes()),
            KEY_SEGMENT_SIZE => OptionValue::U64(self.segment_size_bytes),
            KEY_DURABILITY => OptionValue::String(durability_name(self.durability).into()),
            KEY_OFFSET_DURABILITY => {
                OptionValue::String(durability_name(self.consumer_offset_durability).into())
            }
            KEY_MESSAGES_REQUIRED_TO_SAVE => OptionValue::U32(self.messages_required_to_save),
            KEY_SIZE_REQUIRED_TO_SAVE => {
                OptionValue::U64(self.size_of_messages_required_to_save_bytes)
            }
            KEY_PREALLOCATE => OptionValue::Bool(self.preallocate_segments),
            _ => return None,
        })
    }

    fn set(&mut self, entry: &OptionEntry) -> Result<(), MetadataError> {
        let key = entry.key.as_str();
        let value = &entry.value;
        match key {
            KEY_COMPRESSION => self.compression = parse_compression(key, value)?,
            KEY_MESSAGE_EXPIRY => {
                self.message_expiry = match number(key, value, parse_duration_us)? {
                    0 | u64::MAX => MessageExpiry::Never,
                    us => MessageExpiry::AfterMicros(us),
                }
            }
            KEY_MAX_TOPIC_SIZE => {
                self.max_topic_size = match number(key, value, parse_size_bytes)? {
                    0 | u64::MAX => MaxTopicSize::Unlimited,
                    bytes => MaxTopicSize::Bytes(bytes),
                }
            }
            KEY_SEGMENT_SIZE => self.segment_size_bytes = parse_segment_size(key, value)?,
            KEY_DURABILITY => self.durability = parse_durability(key, value)?,
            KEY_OFFSET_DURABILITY => {
                self.consumer_offset_durability = parse_durability(key, value)?
            }
            KEY_MESSAGES_REQUIRED_TO_SAVE => {
                let count = number(key, value, |_| None)?;
                self.messages_required_to_save = u32::try_from(count)
                    .ok()
                    .filter(|c| (1..=MESSAGES_REQUIRED_TO_SAVE_MAX).contains(c))
                    .ok_or_else(|| invalid(key, "must be within 1..=16777216"))?;
            }
            KEY_SIZE_REQUIRED_TO_SAVE => {
                let bytes = number(key, value, parse_size_bytes)?;
                if !(1..=SIZE_OF_MESSAGES_REQUIRED_TO_SAVE_MAX_BYTES).contains(&bytes) {
                    return Err(invalid(key, "must be within 1 B..=1 GiB"));
                }
                self.size_of_messages_required_to_save_bytes = bytes;
            }
            KEY_PREALLOCATE => {
                self.preallocate_segments = value
                    .as_flag()
                    .ok_or_else(|| invalid(key, "expected a boolean"))?;
            }
            _ => {
                return Err(MetadataError::UnsupportedOptionKey {
                    key: key.to_owned(),
                });
            }
        }
        Ok(())
    }

    fn validate(&self, partitions_count: u32) -> Result<(), MetadataError> {
        if let MaxTopicSize::Bytes(max) = self.max_topic_size
            && max < self.segment_size_bytes
        {
            return Err(MetadataError::InvalidTopicSize {
                max_topic_size: max,
                segment_size: self.segment_size_bytes,
            });
        }
        let reserved = self
            .segment_size_bytes
            .saturating_mul(u64::from(partitions_count));
        if self.preallocate_segments && reserved > PREALLOCATION_MAX_BYTES {
            return Err(invalid(
                KEY_PREALLOCATE,
                "segment_size x partitions exceeds 64 GiB",
            ));
        }
        Ok(())
    }
}

fn invalid(key: &str, reason: &'static str) -> MetadataError {
    MetadataError::InvalidOptionValue {
        key: key.to_owned(),
        reason,
    }
}

fn reject_duplicates(entries: &[OptionEntry]) -> Result<(), MetadataError> {
    let mut seen = BTreeSet::new();
    for entry in entries {
        if !seen.insert(entry.key.as_str()) {
            return Err(invalid(&entry.key, "duplicate key"));
        }
    }
    Ok(())
}

/// An integer of any width, or a string that is a decimal number or parses
/// with `parse_text` (durations, byte sizes).
fn number(
    key: &str,
    value: &OptionValue,
    parse_text: fn(&str) -> Option<u64>,
) -> Result<u64, MetadataError> {
    if let Some(number) = value.as_integer() {
        return Ok(number);
    }
    let text = value
        .as_text()
        .ok_or_else(|| invalid(key, "expected an unsigned integer"))?;
    text.parse::<u64>()
        .ok()
        .or_else(|| parse_text(text))
        .ok_or_else(|| invalid(key, "unparsable number"))
}

fn parse_segment_size(key: &str, value: &OptionValue) -> Result<u64, MetadataError> {
    let bytes = number(key, value, parse_size_bytes)?;
    if bytes == 0 {
        return Ok(DEFAULT_SEGMENT_SIZE_BYTES);
    }
    if !(SEGMENT_SIZE_MIN_BYTES..=SEGMENT_SIZE_MAX_BYTES).contains(&bytes) {
        return Err(invalid(key, "must be within 1 MiB..=1 GiB"));
    }
    if !bytes.is_multiple_of(SEGMENT_SIZE_ALIGNMENT_BYTES) {
        return Err(invalid(key, "must be a multiple of 512 bytes"));
    }
    Ok(bytes)
}

fn parse_compression(
    key: &str,
    value: &OptionValue,
) -> Result<CompressionAlgorithm, MetadataError> {
    match value.as_text().map(str::to_ascii_lowercase).as_deref() {
        Some("none") => Ok(CompressionAlgorithm::None),
        Some("gzip") => Ok(CompressionAlgorithm::Gzip),
        _ => Err(invalid(key, "expected 'none' or 'gzip'")),
    }
}

fn parse_durability(key: &str, value: &OptionValue) -> Result<Durability, MetadataError> {
    match value.as_text().map(str::to_ascii_lowercase).as_deref() {
        Some("replicated") => Ok(Durability::Replicated),
        Some("persisted") => Ok(Durability::Persisted),
        _ => Err(invalid(key, "expected 'replicated' or 'persisted'")),
    }
}

pub fn compression_name(compression: CompressionAlgorithm) -> &'static str {
    match compression {
        CompressionAlgorithm::None => "none",
        CompressionAlgorithm::Gzip => "gzip",
    }
}

pub fn durability_name(durability: Durability) -> &'static str {
    match durability {
        Durability::Replicated => "replicated",
        Durability::Persisted => "persisted",
    }
}

#[cfg(test)]
#[path = "options_tests.rs"]
mod tests;
