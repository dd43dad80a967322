//! The permissions block (spec 8.8), used by CreateUser, UpdatePermissions
//! and user-details replies.
//!
//! ```text
//! global   = 10 bools: manage_servers read_servers manage_users read_users
//!            manage_streams read_streams manage_topics read_topics
//!            poll_messages send_messages
//! then     = has_streams u8, and while 1: stream entry, has_next_stream u8
//! stream   = stream_id u32 | 6 bools: manage_stream read_stream manage_topics
//!            read_topics poll_messages send_messages
//!            | has_topics u8, and while 1: topic entry, has_next_topic u8
//! topic    = topic_id u32 | 4 bools: manage_topic read_topic poll_messages send_messages
//! ```
//!
//! 11 bytes without streams; each stream adds 12 bytes and 9 per topic.

use crate::wire::{DecodeError, Reader, WireWrite};

/// Server-wide permissions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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

/// Permissions on one stream and, optionally, some of its topics.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamPermissions {
    pub stream_id: u32,
    pub manage_stream: bool,
    pub read_stream: bool,
    pub manage_topics: bool,
    pub read_topics: bool,
    pub poll_messages: bool,
    pub send_messages: bool,
    pub topics: Vec<TopicPermissions>,
}

/// Permissions on one topic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TopicPermissions {
    pub topic_id: u32,
    pub manage_topic: bool,
    pub read_topic: bool,
    pub poll_messages: bool,
    pub send_messages: bool,
}

/// A whole permissions block.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Permissions {
    pub global: GlobalPermissions,
    pub streams: Vec<StreamPermissions>,
}

fn bools<const N: usize>(
    r: &mut Reader<'_>,
    field: &'static str,
) -> Result<[bool; N], DecodeError> {
    let mut out = [false; N];
    for slot in &mut out {
        *slot = r.flag(field)?;
    }
    Ok(out)
}

impl GlobalPermissions {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let [a, b, c, d, e, f, g, h, i, j] = bools::<10>(r, "global permission")?;
        Ok(Self {
            manage_servers: a,
            read_servers: b,
            manage_users: c,
            read_users: d,
            manage_streams: e,
            read_streams: f,
            manage_topics: g,
            read_topics: h,
            poll_messages: i,
            send_messages: j,
        })
    }

    fn encode(&self, out: &mut Vec<u8>) {
        for flag in [
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
        ] {
            out.put_bool(flag);
        }
    }
}

impl TopicPermissions {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let topic_id = r.u32("topic id")?;
        let [a, b, c, d] = bools::<4>(r, "topic permission")?;
        Ok(Self {
            topic_id,
            manage_topic: a,
            read_topic: b,
            poll_messages: c,
            send_messages: d,
        })
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32_le(self.topic_id);
        for flag in [
            self.manage_topic,
            self.read_topic,
            self.poll_messages,
            self.send_messages,
        ] {
            out.put_bool(flag);
        }
    }
}

impl StreamPermissions {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let stream_id = r.u32("stream id")?;
        let [a, b, c, d, e, f] = bools::<6>(r, "stream permission")?;
        let mut topics = Vec::new();
        let mut more = r.flag("has topics")?;
        while more {
            topics.push(TopicPermissions::decode(r)?);
            more = r.flag("has next topic")?;
        }
        Ok(Self {
            stream_id,
            manage_stream: a,
            read_stream: b,
            manage_topics: c,
            read_topics: d,
            poll_messages: e,
            send_messages: f,
            topics,
        })
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32_le(self.stream_id);
        let flags = [
            self.manage_stream,
            self.read_stream,
            self.manage_topics,
            self.read_topics,
            self.poll_messages,
            self.send_messages,
        ];
        for flag in flags {
            out.put_bool(flag);
        }
        out.put_bool(!self.topics.is_empty());
        for (index, topic) in self.topics.iter().enumerate() {
            topic.encode(out);
            out.put_bool(index + 1 < self.topics.len());
        }
    }
}

impl Permissions {
    /// Reads one block from `r`; the caller checks any declared length.
    pub fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let global = GlobalPermissions::decode(r)?;
        let mut streams = Vec::new();
        let mut more = r.flag("has streams")?;
        while more {
            streams.push(StreamPermissions::decode(r)?);
            more = r.flag("has next stream")?;
        }
        Ok(Self { global, streams })
    }

    /// Reads `u32 length | block` and checks the block is exactly that long.
    pub fn decode_prefixed(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let declared = r.u32("permissions length")? as usize;
        let mut inner = Reader::new(r.bytes("permissions", declared)?);
        let permissions = Self::decode(&mut inner)?;
        if !inner.is_empty() {
            let actual = inner.position();
            return Err(DecodeError::LengthMismatch {
                field: "permissions",
                declared,
                actual,
            });
        }
        Ok(permissions)
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        self.global.encode(out);
        out.put_bool(!self.streams.is_empty());
        for (index, stream) in self.streams.iter().enumerate() {
            stream.encode(out);
            out.put_bool(index + 1 < self.streams.len());
        }
    }

    /// Bytes `encode` writes.
    pub fn encoded_len(&self) -> usize {
        11 + self
            .streams
            .iter()
            .map(|s| 12 + 9 * s.topics.len())
            .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Permissions {
        let topic = TopicPermissions {
            topic_id: 3,
            manage_topic: true,
            read_topic: false,
            poll_messages: true,
            send_messages: false,
        };
        Permissions {
            global: GlobalPermissions {
                manage_servers: true,
                read_users: true,
                send_messages: true,
                ..Default::default()
            },
            streams: vec![
                StreamPermissions {
                    stream_id: 1,
                    read_stream: true,
                    topics: vec![
                        topic,
                        TopicPermissions {
                            topic_id: 4,
                            ..topic
                        },
                    ],
                    ..Default::default()
                },
                StreamPermissions {
                    stream_id: 2,
                    manage_stream: true,
                    ..Default::default()
                },
            ],
        }
    }

    #[test]
    fn given_blocks_when_round_tripping_should_match_and_size_correctly() {
        for permissions in [Permissions::default(), sample()] {
            let mut out = Vec::new();
            permissions.encode(&mut out);
            assert_eq!(out.len(), permissions.encoded_len());
            let mut r = Reader::new(&out);
            assert_eq!(Permissions::decode(&mut r), Ok(permissions));
            assert!(r.finish().is_ok());
        }
        assert_eq!(Permissions::default().encoded_len(), 11);
    }

    #[test]
    fn given_wrong_declared_length_when_decoding_prefixed_should_reject() {
        let mut block = Vec::new();
        sample().encode(&mut block);
        let mut prefixed = Vec::new();
        prefixed.put_len_u32(block.len() + 1);
        prefixed.extend_from_slice(&block);
        prefixed.push(0);
        let result = Permissions::decode_prefixed(&mut Reader::new(&prefixed));
        assert!(matches!(result, Err(DecodeError::LengthMismatch { .. })));
    }

    #[test]
    fn given_sdk_encoded_block_when_decoding_should_match() {
        use iggy_binary_protocol::{
            WireEncode, WireGlobalPermissions, WirePermissions, WireStreamPermissions,
            WireTopicPermissions,
        };
        let sdk = WirePermissions {
            global: WireGlobalPermissions {
                manage_servers: true,
                read_servers: false,
                manage_users: false,
                read_users: true,
                manage_streams: false,
                read_streams: false,
                manage_topics: false,
                read_topics: false,
                poll_messages: false,
                send_messages: true,
            },
            streams: vec![WireStreamPermissions {
                stream_id: 1,
                manage_stream: false,
                read_stream: true,
                manage_topics: false,
                read_topics: false,
                poll_messages: false,
                send_messages: false,
                topics: vec![WireTopicPermissions {
                    topic_id: 3,
                    manage_topic: true,
                    read_topic: false,
                    poll_messages: true,
                    send_messages: false,
                }],
            }],
        };
        let bytes = sdk.to_bytes();
        let ours = Permissions::decode(&mut Reader::new(&bytes)).unwrap();
        assert_eq!(ours.global, sample().global);
        assert_eq!(ours.streams[0].topics[0], sample().streams[0].topics[0]);
        let mut again = Vec::new();
        ours.encode(&mut again);
        assert_eq!(again, bytes.to_vec());
    }
}
