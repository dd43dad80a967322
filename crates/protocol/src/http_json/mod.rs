//! Request bodies of the HTTP API that carry wire data, decoded without I/O
//! (HTTP API spec §8.6, §15.1): a JSON send body becomes the same batch
//! record a binary SendMessages carries, and a JSON permissions block the
//! same `Permissions`. Everything a client controls is checked here (base64,
//! header kinds and lengths, payload sizes), so the decoder is a fuzz target.

mod send;

pub use send::{
    HEADER_KIND_NAMES, MAX_PAYLOAD_BYTES, SendBatch, SendTarget, decode_send_body, header_kind_name,
};

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::ErrorCode;
use crate::primitives::{GlobalPermissions, Permissions, StreamPermissions, TopicPermissions};

/// Why a body was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    /// Not JSON at all (`data = false`) or JSON of the wrong shape.
    #[error("invalid request body: {message}")]
    Json { data: bool, message: String },
    /// A value the protocol refuses with this code.
    #[error("refused with {0:?}")]
    Code(ErrorCode),
    /// A value that is malformed for its field.
    #[error("{0}")]
    Invalid(String),
}

impl From<serde_json::Error> for BodyError {
    fn from(e: serde_json::Error) -> Self {
        BodyError::Json {
            data: e.is_data(),
            message: e.to_string(),
        }
    }
}

/// A permissions block as JSON carries it (map keys are decimal ids).
#[derive(Debug, Deserialize)]
pub struct PermissionsJson {
    #[serde(default)]
    global: GlobalJson,
    #[serde(default)]
    streams: Option<BTreeMap<String, StreamJson>>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct GlobalJson {
    manage_servers: bool,
    read_servers: bool,
    manage_users: bool,
    read_users: bool,
    manage_streams: bool,
    read_streams: bool,
    manage_topics: bool,
    read_topics: bool,
    poll_messages: bool,
    send_messages: bool,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct StreamJson {
    manage_stream: bool,
    read_stream: bool,
    manage_topics: bool,
    read_topics: bool,
    poll_messages: bool,
    send_messages: bool,
    topics: Option<BTreeMap<String, TopicJson>>,
}

#[derive(Debug, Deserialize, Default, Clone, Copy)]
#[serde(default)]
struct TopicJson {
    manage_topic: bool,
    read_topic: bool,
    poll_messages: bool,
    send_messages: bool,
}

impl PermissionsJson {
    /// The block in its protocol form; entries whose key is not a u32 are
    /// refused.
    pub fn into_permissions(self) -> Result<Permissions, BodyError> {
        let g = self.global;
        let id = |key: &str| {
            key.parse::<u32>()
                .map_err(|_| BodyError::Invalid(format!("'{key}' is not a stream or topic id")))
        };
        let mut streams = Vec::new();
        for (key, s) in self.streams.unwrap_or_default() {
            let mut topics = Vec::new();
            for (key, t) in s.topics.unwrap_or_default() {
                topics.push(TopicPermissions {
                    topic_id: id(&key)?,
                    manage_topic: t.manage_topic,
                    read_topic: t.read_topic,
                    poll_messages: t.poll_messages,
                    send_messages: t.send_messages,
                });
            }
            streams.push(StreamPermissions {
                stream_id: id(&key)?,
                manage_stream: s.manage_stream,
                read_stream: s.read_stream,
                manage_topics: s.manage_topics,
                read_topics: s.read_topics,
                poll_messages: s.poll_messages,
                send_messages: s.send_messages,
                topics,
            });
        }
        Ok(Permissions {
            global: GlobalPermissions {
                manage_servers: g.manage_servers,
                read_servers: g.read_servers,
                manage_users: g.manage_users,
                read_users: g.read_users,
                manage_streams: g.manage_streams,
                read_streams: g.read_streams,
                manage_topics: g.manage_topics,
                read_topics: g.read_topics,
                poll_messages: g.poll_messages,
                send_messages: g.send_messages,
            },
            streams,
        })
    }
}

#[cfg(test)]
mod tests;
