//! The stream record: a named namespace holding topics whose names are unique
//! within it.

use super::ids::{StreamId, TopicId};
use super::names::{Named, NamedMap};
use super::topic::Topic;

#[derive(Clone, Debug, PartialEq)]
pub struct Stream {
    pub id: StreamId,
    name: String,
    pub created_at_us: u64,
    pub(crate) topics: NamedMap<TopicId, Topic>,
}

impl Named for Stream {
    fn name(&self) -> &str {
        &self.name
    }
    fn set_name(&mut self, name: String) {
        self.name = name;
    }
}

impl Stream {
    pub(crate) fn new(id: StreamId, name: String, created_at_us: u64) -> Self {
        Self {
            id,
            name,
            created_at_us,
            topics: NamedMap::default(),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn topics(&self) -> impl Iterator<Item = &Topic> {
        self.topics.values()
    }

    pub fn topics_count(&self) -> u32 {
        u32::try_from(self.topics.len()).expect("topic count is below the ID limit")
    }

    pub fn topic(&self, id: TopicId) -> Option<&Topic> {
        self.topics.get(&id)
    }

    pub fn topic_by_name(&self, name: &str) -> Option<&Topic> {
        self.topics.id_of(name).and_then(|id| self.topics.get(&id))
    }
}
