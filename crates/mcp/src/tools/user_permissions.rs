//! The permissions argument of create_user and update_permissions, as the
//! agent writes it (every flag optional, false when left out), and its
//! conversion to the SDK's types. Stream and topic maps are keyed by id.

use std::collections::BTreeMap;

use iggy::prelude;
use rmcp::schemars;
use serde::Deserialize;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct Permissions {
    #[schemars(description = "server-wide permissions (optional)")]
    pub global: Option<GlobalPermissions>,
    #[schemars(description = "per-stream permissions keyed by stream id (optional)")]
    pub streams: Option<BTreeMap<usize, StreamPermissions>>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct GlobalPermissions {
    pub manage_servers: Option<bool>,
    pub read_servers: Option<bool>,
    pub manage_users: Option<bool>,
    pub read_users: Option<bool>,
    pub manage_streams: Option<bool>,
    pub read_streams: Option<bool>,
    pub manage_topics: Option<bool>,
    pub read_topics: Option<bool>,
    pub poll_messages: Option<bool>,
    pub send_messages: Option<bool>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct StreamPermissions {
    pub manage_stream: Option<bool>,
    pub read_stream: Option<bool>,
    pub manage_topics: Option<bool>,
    pub read_topics: Option<bool>,
    pub poll_messages: Option<bool>,
    pub send_messages: Option<bool>,
    #[schemars(description = "per-topic permissions keyed by topic id (optional)")]
    pub topics: Option<BTreeMap<usize, TopicPermissions>>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct TopicPermissions {
    pub manage_topic: Option<bool>,
    pub read_topic: Option<bool>,
    pub poll_messages: Option<bool>,
    pub send_messages: Option<bool>,
}

fn flag(value: Option<bool>) -> bool {
    value.unwrap_or(false)
}

impl From<Permissions> for prelude::Permissions {
    fn from(permissions: Permissions) -> Self {
        prelude::Permissions {
            global: permissions.global.map(Into::into).unwrap_or_default(),
            streams: permissions.streams.map(|streams| {
                streams
                    .into_iter()
                    .map(|(id, stream)| (id, stream.into()))
                    .collect()
            }),
        }
    }
}

impl From<GlobalPermissions> for prelude::GlobalPermissions {
    fn from(global: GlobalPermissions) -> Self {
        prelude::GlobalPermissions {
            manage_servers: flag(global.manage_servers),
            read_servers: flag(global.read_servers),
            manage_users: flag(global.manage_users),
            read_users: flag(global.read_users),
            manage_streams: flag(global.manage_streams),
            read_streams: flag(global.read_streams),
            manage_topics: flag(global.manage_topics),
            read_topics: flag(global.read_topics),
            poll_messages: flag(global.poll_messages),
            send_messages: flag(global.send_messages),
        }
    }
}

impl From<StreamPermissions> for prelude::StreamPermissions {
    fn from(stream: StreamPermissions) -> Self {
        prelude::StreamPermissions {
            manage_stream: flag(stream.manage_stream),
            read_stream: flag(stream.read_stream),
            manage_topics: flag(stream.manage_topics),
            read_topics: flag(stream.read_topics),
            poll_messages: flag(stream.poll_messages),
            send_messages: flag(stream.send_messages),
            topics: stream.topics.map(|topics| {
                topics
                    .into_iter()
                    .map(|(id, topic)| (id, topic.into()))
                    .collect()
            }),
        }
    }
}

impl From<TopicPermissions> for prelude::TopicPermissions {
    fn from(topic: TopicPermissions) -> Self {
        prelude::TopicPermissions {
            manage_topic: flag(topic.manage_topic),
            read_topic: flag(topic.read_topic),
            poll_messages: flag(topic.poll_messages),
            send_messages: flag(topic.send_messages),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_partial_flags_when_converting_should_default_the_rest_to_false() {
        let argument: Permissions = serde_json::from_value(serde_json::json!({
            "global": { "read_streams": true },
            "streams": { "3": { "poll_messages": true, "topics": { "1": { "read_topic": true } } } }
        }))
        .expect("valid permissions argument");
        let converted: prelude::Permissions = argument.into();
        assert!(converted.global.read_streams);
        assert!(!converted.global.manage_servers);
        let streams = converted.streams.expect("streams given");
        let stream = streams.get(&3).expect("stream 3 given");
        assert!(stream.poll_messages && !stream.send_messages);
        let topic = stream.topics.as_ref().and_then(|topics| topics.get(&1));
        assert!(topic.is_some_and(|topic| topic.read_topic && !topic.manage_topic));
    }
}
