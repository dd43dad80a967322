//! Conversions at the boundary between wire types (`protocol`) and domain
//! types (`engine`), and the views that turn metadata records into reply
//! bodies.

use engine::metadata::permissions as domain;
use engine::metadata::stream::Stream;
use engine::metadata::topic::Topic;
use engine::metadata::topic::option_value::{OptionEntry, OptionValue};
use engine::metadata::topic::options::CompressionAlgorithm;
use engine::metadata::user::{User, UserStatus};
use engine::metadata::{Ident, StreamId, TopicId};
use protocol::ErrorCode;
use protocol::primitives::{self as wire, Identifier, Options, put_kv_pair};
use protocol::requests::UserStatus as WireUserStatus;
use protocol::responses::{self, PartitionInfo, StreamInfo, TopicInfo, UserInfo};

use crate::node::partition_stats::{PartitionStatsRegistry, Totals};

/// The TLV kind code of String keys.
const STRING_KIND: u8 = 2;

pub fn ident(id: &Identifier<'_>) -> Ident {
    match *id {
        Identifier::Numeric(n) => Ident::Id(n),
        Identifier::Name(name) => Ident::Name(name.to_owned()),
    }
}

/// Option pairs of a request, typed; a value of an unknown kind is refused.
pub fn option_entries(options: &Options<'_>) -> Result<Vec<OptionEntry>, ErrorCode> {
    options
        .iter()
        .map(|(key, entry)| {
            OptionValue::from_bytes(entry.value_kind, entry.value)
                .map(|value| OptionEntry::new(key, value))
                .ok_or(ErrorCode::InvalidOptionValue)
        })
        .collect()
}

/// Streams and users accept no option keys.
pub fn refuse_options(options: &Options<'_>) -> Result<(), ErrorCode> {
    if options.is_empty() {
        Ok(())
    } else {
        Err(ErrorCode::UnsupportedOptionKey)
    }
}

pub fn encode_options(entries: &[OptionEntry]) -> Vec<u8> {
    let mut out = Vec::new();
    for entry in entries {
        put_kv_pair(
            &mut out,
            STRING_KIND,
            entry.key.as_bytes(),
            entry.value.kind_code(),
            &entry.value.to_bytes(),
        );
    }
    out
}

pub fn user_status(status: WireUserStatus) -> UserStatus {
    match status {
        WireUserStatus::Active => UserStatus::Active,
        WireUserStatus::Inactive => UserStatus::Inactive,
    }
}

fn wire_user_status(status: UserStatus) -> WireUserStatus {
    match status {
        UserStatus::Active => WireUserStatus::Active,
        UserStatus::Inactive => WireUserStatus::Inactive,
    }
}

pub fn permissions_in(p: &wire::Permissions) -> domain::Permissions {
    let g = &p.global;
    let global = domain::GlobalPermissions::from_flags([
        g.manage_servers,
        g.read_servers,
        g.manage_users,
        g.read_users,
        g.manage_streams,
        g.read_streams,
        g.manage_topics,
        g.read_topics,
        g.poll_messages,
        g.send_messages,
    ]);
    let streams = p
        .streams
        .iter()
        .map(|s| {
            let topics = s
                .topics
                .iter()
                .map(|t| {
                    let flags = [
                        t.manage_topic,
                        t.read_topic,
                        t.poll_messages,
                        t.send_messages,
                    ];
                    (
                        TopicId(t.topic_id),
                        domain::TopicPermissions::from_flags(flags),
                    )
                })
                .collect();
            let flags = [
                s.manage_stream,
                s.read_stream,
                s.manage_topics,
                s.read_topics,
                s.poll_messages,
                s.send_messages,
            ];
            (
                StreamId(s.stream_id),
                domain::StreamPermissions::from_flags(flags, topics),
            )
        })
        .collect();
    domain::Permissions { global, streams }
}

pub fn permissions_out(p: &domain::Permissions) -> wire::Permissions {
    let [a, b, c, d, e, f, g, h, i, j] = p.global.flags();
    let global = wire::GlobalPermissions {
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
    };
    let streams = p
        .streams
        .iter()
        .map(|(id, s)| {
            let [
                manage_stream,
                read_stream,
                manage_topics,
                read_topics,
                poll_messages,
                send_messages,
            ] = s.flags();
            let topics = s
                .topics
                .iter()
                .map(|(tid, t)| {
                    let [manage_topic, read_topic, poll_messages, send_messages] = t.flags();
                    wire::TopicPermissions {
                        topic_id: tid.0,
                        manage_topic,
                        read_topic,
                        poll_messages,
                        send_messages,
                    }
                })
                .collect();
            wire::StreamPermissions {
                stream_id: id.0,
                manage_stream,
                read_stream,
                manage_topics,
                read_topics,
                poll_messages,
                send_messages,
                topics,
            }
        })
        .collect();
    wire::Permissions { global, streams }
}

pub fn user_info(user: &User) -> UserInfo<'_> {
    UserInfo {
        id: user.id.0,
        created_at: user.created_at_us,
        status: wire_user_status(user.status),
        username: user.username(),
        options: &[],
    }
}

pub fn user_details(user: &User) -> Vec<u8> {
    let mut out = Vec::new();
    let permissions = user.permissions.as_ref().map(permissions_out);
    responses::encode_user_details(&mut out, &user_info(user), permissions.as_ref());
    out
}

/// Topic record plus its two option blocks (kept alive by the caller).
pub struct TopicView {
    options: Vec<u8>,
    derived: Vec<u8>,
    totals: Totals,
    partitions: Vec<PartitionInfo>,
}

impl TopicView {
    pub fn new(stream: StreamId, topic: &Topic, stats: &PartitionStatsRegistry) -> Self {
        let partitions: Vec<PartitionInfo> = topic
            .partitions()
            .iter()
            .map(|p| stats.partition_info(stream, topic.id, p.id, p.created_at_us))
            .collect();
        let totals = partitions.iter().fold(Totals::default(), |mut t, p| {
            t.size_bytes += p.size_bytes;
            t.messages_count += p.messages_count;
            t
        });
        Self {
            options: encode_options(&topic.client_options),
            derived: encode_options(&topic.derived_options()),
            totals,
            partitions,
        }
    }

    pub fn info<'a>(&'a self, topic: &'a Topic) -> TopicInfo<'a> {
        TopicInfo {
            id: topic.id.0,
            created_at: topic.created_at_us,
            partitions_count: topic.partitions_count(),
            message_expiry: topic.options.message_expiry.as_wire_micros(),
            compression: match topic.options.compression {
                CompressionAlgorithm::None => responses::CompressionAlgorithm::None,
                CompressionAlgorithm::Gzip => responses::CompressionAlgorithm::Gzip,
            },
            max_topic_size: topic.options.max_topic_size.as_wire_bytes(),
            size_bytes: self.totals.size_bytes,
            messages_count: self.totals.messages_count,
            name: topic.name(),
            options: &self.options,
            derived_options: &self.derived,
        }
    }

    pub fn totals(&self) -> Totals {
        self.totals
    }

    pub fn partitions(&self) -> &[PartitionInfo] {
        &self.partitions
    }
}

pub fn topic_details(stream: StreamId, topic: &Topic, stats: &PartitionStatsRegistry) -> Vec<u8> {
    let view = TopicView::new(stream, topic, stats);
    let mut out = Vec::new();
    responses::encode_topic_details(&mut out, &view.info(topic), &view.partitions);
    out
}

pub fn stream_record<'a>(stream: &'a Stream, totals: Totals) -> StreamInfo<'a> {
    StreamInfo {
        id: stream.id.0,
        created_at: stream.created_at_us,
        topics_count: stream.topics_count(),
        size_bytes: totals.size_bytes,
        messages_count: totals.messages_count,
        name: stream.name(),
        options: &[],
    }
}

pub fn stream_details(stream: &Stream, stats: &PartitionStatsRegistry) -> Vec<u8> {
    let views: Vec<(&Topic, TopicView)> = stream
        .topics()
        .map(|t| (t, TopicView::new(stream.id, t, stats)))
        .collect();
    let totals = views
        .iter()
        .fold(Totals::default(), |t, (_, v)| t.add(v.totals()));
    let infos: Vec<TopicInfo<'_>> = views.iter().map(|(t, v)| v.info(t)).collect();
    let mut out = Vec::new();
    responses::encode_stream_details(&mut out, &stream_record(stream, totals), &infos);
    out
}

pub fn stream_totals(stream: &Stream, stats: &PartitionStatsRegistry) -> Totals {
    stream.topics().fold(Totals::default(), |t, topic| {
        t.add(TopicView::new(stream.id, topic, stats).totals())
    })
}
