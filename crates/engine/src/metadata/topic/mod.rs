//! The topic record: partitions, resolved options, the options as the client
//! sent them, and the topic's consumer groups.
//!
//! Invariant: partition IDs are exactly `0..partitions.len()` (creation
//! appends the next IDs, deletion removes the highest), so a partition's ID
//! is its index.

pub mod option_value;
pub mod options;
pub mod units;

use super::groups::ConsumerGroup;
use super::ids::{ConsumerGroupId, PartitionId, TopicId};
use super::names::{Named, NamedMap};
use option_value::{OptionEntry, OptionValue};
use options::{TOPIC_OPTION_KEYS, TopicOptions};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partition {
    pub id: PartitionId,
    pub created_at_us: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Topic {
    pub id: TopicId,
    name: String,
    pub created_at_us: u64,
    pub(crate) partitions: Vec<Partition>,
    /// The effective options.
    pub options: TopicOptions,
    /// The option entries the client sent (create, then merged updates),
    /// reported back as the topic's `options`.
    pub client_options: Vec<OptionEntry>,
    pub(crate) groups: NamedMap<ConsumerGroupId, ConsumerGroup>,
    /// Next consumer group ID; groups IDs are never reused.
    pub(crate) next_group_id: u32,
    /// Number of purges applied; the storage layer records it in `purge.gen`.
    pub purge_generation: u64,
}

impl Named for Topic {
    fn name(&self) -> &str {
        &self.name
    }
    fn set_name(&mut self, name: String) {
        self.name = name;
    }
}

/// The fields of a topic header, used to build or restore one.
#[derive(Clone, Debug, PartialEq)]
pub struct TopicHeader {
    pub id: TopicId,
    pub name: String,
    pub created_at_us: u64,
    pub options: TopicOptions,
    pub client_options: Vec<OptionEntry>,
    pub next_group_id: u32,
    pub purge_generation: u64,
}

impl Topic {
    pub(crate) fn new(header: TopicHeader, partitions: Vec<Partition>) -> Self {
        for (index, partition) in partitions.iter().enumerate() {
            assert_eq!(
                partition.id.0 as usize, index,
                "partition IDs are consecutive from 0"
            );
        }
        Self {
            id: header.id,
            name: header.name,
            created_at_us: header.created_at_us,
            partitions,
            options: header.options,
            client_options: header.client_options,
            groups: NamedMap::default(),
            next_group_id: header.next_group_id,
            purge_generation: header.purge_generation,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn partitions(&self) -> &[Partition] {
        &self.partitions
    }

    pub fn partitions_count(&self) -> u32 {
        u32::try_from(self.partitions.len()).expect("partition count is below the ID limit")
    }

    pub fn partition(&self, id: PartitionId) -> Option<&Partition> {
        self.partitions.get(id.0 as usize)
    }

    pub fn groups(&self) -> impl Iterator<Item = &ConsumerGroup> {
        self.groups.values()
    }

    pub fn groups_count(&self) -> usize {
        self.groups.len()
    }

    pub fn group(&self, id: ConsumerGroupId) -> Option<&ConsumerGroup> {
        self.groups.get(&id)
    }

    pub fn next_group_id(&self) -> u32 {
        self.next_group_id
    }

    /// The catalogue values the client did not send, in key order, with
    /// their canonical kinds (the reply's `derived_options`).
    pub fn derived_options(&self) -> Vec<OptionEntry> {
        TOPIC_OPTION_KEYS
            .iter()
            .filter(|key| !self.client_options.iter().any(|e| e.key == **key))
            .filter_map(|key| {
                let value: OptionValue = self.options.value_of(key)?;
                Some(OptionEntry::new(key, value))
            })
            .collect()
    }

    /// Merges an update's entries into the client-sent options (same key
    /// replaced in place, new keys appended).
    pub(crate) fn merge_client_options(&mut self, entries: &[OptionEntry]) {
        for entry in entries {
            match self.client_options.iter_mut().find(|e| e.key == entry.key) {
                Some(existing) => existing.value = entry.value.clone(),
                None => self.client_options.push(entry.clone()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::options::{KEY_DURABILITY, KEY_MESSAGE_EXPIRY};
    use super::*;

    fn topic(client_options: Vec<OptionEntry>) -> Topic {
        let header = TopicHeader {
            id: TopicId(0),
            name: "t".into(),
            created_at_us: 1,
            options: TopicOptions::default(),
            client_options,
            next_group_id: 0,
            purge_generation: 0,
        };
        Topic::new(
            header,
            vec![Partition {
                id: PartitionId(0),
                created_at_us: 1,
            }],
        )
    }

    #[test]
    fn given_client_sent_keys_when_deriving_should_report_only_the_others() {
        let sent = vec![OptionEntry::new(
            KEY_DURABILITY,
            OptionValue::String("replicated".into()),
        )];
        let t = topic(sent);
        let derived = t.derived_options();
        assert_eq!(derived.len(), TOPIC_OPTION_KEYS.len() - 1);
        assert!(derived.iter().all(|e| e.key != KEY_DURABILITY));
    }

    #[test]
    fn given_update_entries_when_merging_should_replace_same_key() {
        let mut t = topic(vec![OptionEntry::new(
            KEY_MESSAGE_EXPIRY,
            OptionValue::U64(5),
        )]);
        t.merge_client_options(&[
            OptionEntry::new(KEY_MESSAGE_EXPIRY, OptionValue::U64(9)),
            OptionEntry::new(KEY_DURABILITY, OptionValue::String("persisted".into())),
        ]);
        assert_eq!(t.client_options.len(), 2);
        assert_eq!(t.client_options[0].value, OptionValue::U64(9));
    }
}
