//! JSON shapes of the HTTP API (spec §2, §7–§15), rendered from the same
//! typed records the binary protocol encodes, so both transports report the
//! same figures.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use engine::metadata::topic::option_value::{OptionEntry, OptionValue};
use protocol::primitives as wire;
use protocol::responses::{PartitionInfo, StreamInfo, TopicInfo, UserInfo};
use serde_json::{Map, Value, json};

/// A byte count as an exact size string: the largest binary or decimal
/// unit that divides it evenly (`"4 KiB"`, `"1 KB"`, `"1234 B"`).
pub fn byte_size(bytes: u64) -> String {
    const UNITS: [(u64, &str); 12] = [
        (1 << 60, "EiB"),
        (1_000_000_000_000_000_000, "EB"),
        (1 << 50, "PiB"),
        (1_000_000_000_000_000, "PB"),
        (1 << 40, "TiB"),
        (1_000_000_000_000, "TB"),
        (1 << 30, "GiB"),
        (1_000_000_000, "GB"),
        (1 << 20, "MiB"),
        (1_000_000, "MB"),
        (1 << 10, "KiB"),
        (1_000, "KB"),
    ];
    if bytes == 0 {
        return "0 B".to_owned();
    }
    UNITS
        .iter()
        .filter(|(unit, _)| bytes.is_multiple_of(*unit))
        .min_by_key(|(unit, _)| bytes / unit)
        .map_or_else(
            || format!("{bytes} B"),
            |(unit, name)| format!("{} {name}", bytes / unit),
        )
}

/// An option value in its string form.
pub fn option_text(value: &OptionValue) -> String {
    match value {
        OptionValue::Raw(bytes) => BASE64.encode(bytes),
        OptionValue::String(text) => text.clone(),
        OptionValue::Bool(v) => v.to_string(),
        OptionValue::I8(v) => v.to_string(),
        OptionValue::I16(v) => v.to_string(),
        OptionValue::I32(v) => v.to_string(),
        OptionValue::I64(v) => v.to_string(),
        OptionValue::I128(v) => v.to_string(),
        OptionValue::U8(v) => v.to_string(),
        OptionValue::U16(v) => v.to_string(),
        OptionValue::U32(v) => v.to_string(),
        OptionValue::U64(v) => v.to_string(),
        OptionValue::U128(v) => v.to_string(),
        OptionValue::F32(v) => v.to_string(),
        OptionValue::F64(v) => v.to_string(),
    }
}

/// `{key: {"value", "explicit"}}` from the client's and the derived options.
pub fn options(explicit: &[OptionEntry], derived: &[OptionEntry]) -> Value {
    let mut map = Map::new();
    let tagged = explicit
        .iter()
        .map(|e| (e, true))
        .chain(derived.iter().map(|e| (e, false)));
    for (entry, explicit) in tagged {
        map.insert(
            entry.key.clone(),
            json!({"value": option_text(&entry.value), "explicit": explicit}),
        );
    }
    Value::Object(map)
}

pub fn stream(info: &StreamInfo<'_>, topics: Option<Vec<Value>>) -> Value {
    let mut value = json!({
        "id": info.id,
        "created_at": info.created_at,
        "name": info.name,
        "size": byte_size(info.size_bytes),
        "messages_count": info.messages_count,
        "topics_count": info.topics_count,
        "options": {},
    });
    if let Some(topics) = topics {
        value["topics"] = Value::Array(topics);
    }
    value
}

pub fn topic(info: &TopicInfo<'_>, options: Value, partitions: Option<&[PartitionInfo]>) -> Value {
    let compression = match info.compression {
        protocol::responses::CompressionAlgorithm::None => "none",
        protocol::responses::CompressionAlgorithm::Gzip => "gzip",
    };
    let mut value = json!({
        "id": info.id,
        "created_at": info.created_at,
        "name": info.name,
        "size": byte_size(info.size_bytes),
        "message_expiry": info.message_expiry,
        "compression_algorithm": compression,
        "max_topic_size": info.max_topic_size,
        "messages_count": info.messages_count,
        "partitions_count": info.partitions_count,
        "options": options,
    });
    if let Some(partitions) = partitions {
        value["partitions"] = partitions.iter().map(partition).collect();
    }
    value
}

fn partition(p: &PartitionInfo) -> Value {
    json!({
        "id": p.id,
        "created_at": p.created_at,
        "segments_count": p.segments_count,
        "current_offset": p.current_offset,
        "size": byte_size(p.size_bytes),
        "messages_count": p.messages_count,
    })
}

pub fn user(info: &UserInfo<'_>, permissions: Option<Option<&wire::Permissions>>) -> Value {
    let status = match info.status {
        protocol::requests::UserStatus::Active => "active",
        protocol::requests::UserStatus::Inactive => "inactive",
    };
    let mut value = json!({
        "id": info.id,
        "created_at": info.created_at,
        "status": status,
        "username": info.username,
        "options": {},
    });
    if let Some(permissions) = permissions {
        value["permissions"] = permissions.map_or(Value::Null, permissions_json);
    }
    value
}

pub fn permissions_json(p: &wire::Permissions) -> Value {
    let g = &p.global;
    let mut streams = Map::new();
    for s in &p.streams {
        let mut topics = Map::new();
        for t in &s.topics {
            topics.insert(
                t.topic_id.to_string(),
                json!({
                    "manage_topic": t.manage_topic,
                    "read_topic": t.read_topic,
                    "poll_messages": t.poll_messages,
                    "send_messages": t.send_messages,
                }),
            );
        }
        streams.insert(
            s.stream_id.to_string(),
            json!({
                "manage_stream": s.manage_stream,
                "read_stream": s.read_stream,
                "manage_topics": s.manage_topics,
                "read_topics": s.read_topics,
                "poll_messages": s.poll_messages,
                "send_messages": s.send_messages,
                "topics": if topics.is_empty() { Value::Null } else { Value::Object(topics) },
            }),
        );
    }
    json!({
        "global": {
            "manage_servers": g.manage_servers,
            "read_servers": g.read_servers,
            "manage_users": g.manage_users,
            "read_users": g.read_users,
            "manage_streams": g.manage_streams,
            "read_streams": g.read_streams,
            "manage_topics": g.manage_topics,
            "read_topics": g.read_topics,
            "poll_messages": g.poll_messages,
            "send_messages": g.send_messages,
        },
        "streams": if streams.is_empty() { Value::Null } else { Value::Object(streams) },
    })
}

/// `YYYYMMDD_HHMMSS` (UTC) of a Unix time, for file names.
pub fn utc_stamp(unix_secs: u64) -> String {
    let days = (unix_secs / 86_400) as i64;
    let secs = unix_secs % 86_400;
    // Civil date from days since 1970-01-01 (Gregorian, proleptic).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}_{:02}{:02}{:02}",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_are_utc_calendar_times() {
        assert_eq!(utc_stamp(0), "19700101_000000");
        assert_eq!(utc_stamp(1_767_225_600), "20260101_000000");
        assert_eq!(utc_stamp(951_825_600 + 3661), "20000229_130101");
    }

    #[test]
    fn byte_sizes_are_exact() {
        assert_eq!(byte_size(0), "0 B");
        assert_eq!(byte_size(1234), "1234 B");
        assert_eq!(byte_size(1000), "1 KB");
        assert_eq!(byte_size(4096), "4 KiB");
        assert_eq!(byte_size(1 << 30), "1 GiB");
        assert_eq!(byte_size(5_000_000_000), "5 GB");
        assert_eq!(byte_size(1_024_000), "1000 KiB");
    }

    #[test]
    fn options_mark_what_the_client_set() {
        let explicit = [OptionEntry::new("segment_size", OptionValue::U64(1 << 20))];
        let derived = [OptionEntry::new(
            "durability",
            OptionValue::String("replicated".into()),
        )];
        assert_eq!(
            options(&explicit, &derived),
            json!({
                "segment_size": {"value": "1048576", "explicit": true},
                "durability": {"value": "replicated", "explicit": false},
            })
        );
    }
}
