//! The permissions model (storage spec §12, binary spec §8.8): global flags,
//! optional per-stream entries, each with optional per-topic entries. A user
//! whose permissions are `None` has none. The rules live in [`authorize`].

mod authorize;

use std::collections::BTreeMap;

use super::ids::{StreamId, TopicId};

pub use authorize::{Action, Subject, authorize};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GlobalPermissions {
    pub manage_servers: bool,
    pub read_servers: bool,
    pub manage_users: bool,
    pub read_users: bool,
    pub manage_streams: bool,
    pub read_streams: bool,
    pub manage_topics: bool,
    pub read_topics: bool,
    pub poll_messages: bool,
    pub send_messages: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamPermissions {
    pub manage_stream: bool,
    pub read_stream: bool,
    pub manage_topics: bool,
    pub read_topics: bool,
    pub poll_messages: bool,
    pub send_messages: bool,
    pub topics: BTreeMap<TopicId, TopicPermissions>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TopicPermissions {
    pub manage_topic: bool,
    pub read_topic: bool,
    pub poll_messages: bool,
    pub send_messages: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Permissions {
    pub global: GlobalPermissions,
    pub streams: BTreeMap<StreamId, StreamPermissions>,
}

impl GlobalPermissions {
    /// Every global flag set (the root user's permissions).
    pub fn all() -> Self {
        Self::from_flags([true; GLOBAL_FLAG_COUNT])
    }

    /// The flags in wire order (binary spec §8.8).
    pub fn flags(&self) -> [bool; GLOBAL_FLAG_COUNT] {
        [
            self.manage_servers,
            self.read_servers,
            self.manage_users,
            self.read_users,
            self.manage_streams,
            self.read_streams,
            self.manage_topics,
            self.read_topics,
            self.poll_messages,
            self.send_messages,
        ]
    }

    pub fn from_flags(f: [bool; GLOBAL_FLAG_COUNT]) -> Self {
        Self {
            manage_servers: f[0],
            read_servers: f[1],
            manage_users: f[2],
            read_users: f[3],
            manage_streams: f[4],
            read_streams: f[5],
            manage_topics: f[6],
            read_topics: f[7],
            poll_messages: f[8],
            send_messages: f[9],
        }
    }
}

impl StreamPermissions {
    /// The six flags in wire order (binary spec §8.8).
    pub fn flags(&self) -> [bool; STREAM_FLAG_COUNT] {
        [
            self.manage_stream,
            self.read_stream,
            self.manage_topics,
            self.read_topics,
            self.poll_messages,
            self.send_messages,
        ]
    }

    pub fn from_flags(
        f: [bool; STREAM_FLAG_COUNT],
        topics: BTreeMap<TopicId, TopicPermissions>,
    ) -> Self {
        Self {
            manage_stream: f[0],
            read_stream: f[1],
            manage_topics: f[2],
            read_topics: f[3],
            poll_messages: f[4],
            send_messages: f[5],
            topics,
        }
    }
}

impl TopicPermissions {
    /// The four flags in wire order (binary spec §8.8).
    pub fn flags(&self) -> [bool; TOPIC_FLAG_COUNT] {
        [
            self.manage_topic,
            self.read_topic,
            self.poll_messages,
            self.send_messages,
        ]
    }

    pub fn from_flags(f: [bool; TOPIC_FLAG_COUNT]) -> Self {
        Self {
            manage_topic: f[0],
            read_topic: f[1],
            poll_messages: f[2],
            send_messages: f[3],
        }
    }
}

impl Permissions {
    /// Root's permissions: every global flag, no stream entries.
    pub fn root() -> Self {
        Self {
            global: GlobalPermissions::all(),
            streams: BTreeMap::new(),
        }
    }
}

pub const GLOBAL_FLAG_COUNT: usize = 10;
pub const STREAM_FLAG_COUNT: usize = 6;
pub const TOPIC_FLAG_COUNT: usize = 4;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_flags_when_round_tripping_should_preserve_wire_order() {
        let mut f = [false; GLOBAL_FLAG_COUNT];
        f[4] = true;
        let global = GlobalPermissions::from_flags(f);
        assert!(global.manage_streams && !global.read_streams);
        assert_eq!(global.flags(), f);
        let stream = StreamPermissions::from_flags(
            [false, true, false, false, false, true],
            BTreeMap::new(),
        );
        assert!(stream.read_stream && stream.send_messages);
        let topic = TopicPermissions::from_flags([false, false, true, false]);
        assert_eq!(topic.flags(), [false, false, true, false]);
    }
}
