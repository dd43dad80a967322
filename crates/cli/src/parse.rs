//! Value grammars of the command line (spec §2.2, §6): identifiers, expiry
//! tokens, sizes, message headers, `KEY=VALUE` options and permission
//! strings. Every parser returns the exact error text clap prints after
//! `invalid value '<v>' for '<ARG>': `.

use iggy::prelude::{
    CompressionAlgorithm, GlobalPermissions, HeaderKey, HeaderKind, HeaderValue, Identifier,
    IggyError, IggyExpiry, MaxTopicSize, Permissions, StreamPermissions, TopicPermissions,
};
use std::collections::BTreeMap;
use std::str::FromStr;

/// The longest key or value of a `--set KEY=VALUE` option, in bytes.
const OPTION_PART_MAX_BYTES: usize = 255;
/// The longest message key, in bytes.
const MESSAGE_KEY_MAX_BYTES: usize = 255;

/// A numeric id when the text is a u32, otherwise a name of 1..255 bytes.
pub fn identifier(text: &str) -> Result<Identifier, String> {
    Identifier::from_str_value(text).map_err(|_| IggyError::InvalidIdentifier.to_string())
}

pub fn expiry(text: &str) -> Result<IggyExpiry, String> {
    IggyExpiry::from_str(text)
}

/// Sums expiry tokens: "never" is neutral, durations add, any server default wins.
pub fn sum_expiry(tokens: &[IggyExpiry]) -> IggyExpiry {
    tokens.iter().copied().sum()
}

pub fn max_topic_size(text: &str) -> Result<MaxTopicSize, String> {
    MaxTopicSize::from_str(text)
}

pub fn compression(text: &str) -> Result<CompressionAlgorithm, String> {
    CompressionAlgorithm::from_str(text)
}

pub fn message_key(text: &str) -> Result<String, String> {
    if text.is_empty() || text.len() > MESSAGE_KEY_MAX_BYTES {
        return Err(IggyError::InvalidCommand.to_string());
    }
    Ok(text.to_owned())
}

pub fn options_scope(text: &str) -> Result<String, String> {
    match text {
        "topic" | "stream" | "user" => Ok(text.to_owned()),
        _ => Err(IggyError::InvalidCommand.to_string()),
    }
}

/// `KEY=VALUE`, split at the first `=`.
pub fn key_value(raw: &str) -> Result<(String, String), String> {
    let Some((key, value)) = raw.split_once('=') else {
        return Err(format!("expected KEY=VALUE, got: {raw}"));
    };
    for (part, name) in [(key, "key"), (value, "value")] {
        if part.is_empty() {
            return Err(format!(
                "expected non-empty {name} in KEY=VALUE, got: {raw}"
            ));
        }
        if part.len() > OPTION_PART_MAX_BYTES {
            return Err(format!(
                "option {name} is {} bytes, maximum {OPTION_PART_MAX_BYTES}",
                part.len()
            ));
        }
    }
    Ok((key.to_owned(), value.to_owned()))
}

/// One `-H` occurrence: `key:kind:value[,key:kind:value...]`.
#[derive(Debug, Clone)]
pub struct HeaderList(pub Vec<(HeaderKey, HeaderValue)>);

pub fn headers(raw: &str) -> Result<HeaderList, String> {
    raw.split(',')
        .map(header_item)
        .collect::<Result<Vec<_>, _>>()
        .map(HeaderList)
}

fn header_item(item: &str) -> Result<(HeaderKey, HeaderValue), String> {
    let mut parts = item.splitn(3, ':');
    let (Some(key), Some(kind), Some(value)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(IggyError::InvalidFormat.to_string());
    };
    let kind = HeaderKind::from_str(&kind.to_lowercase())
        .map_err(|_| format!("Cannot parse header kind from {kind}"))?;
    let key = HeaderKey::try_from(key).map_err(|_| IggyError::InvalidHeaderValue.to_string())?;
    let bytes = header_value_bytes(kind, value)?;
    let value = HeaderValue::from_raw(kind, &bytes)
        .map_err(|_| IggyError::InvalidHeaderValue.to_string())?;
    Ok((key, value))
}

fn header_value_bytes(kind: HeaderKind, text: &str) -> Result<Vec<u8>, String> {
    fn num<T: FromStr>(text: &str) -> Result<T, String> {
        text.parse::<T>()
            .map_err(|_| IggyError::InvalidNumberValue.to_string())
    }
    Ok(match kind {
        HeaderKind::Raw | HeaderKind::String => text.as_bytes().to_vec(),
        HeaderKind::Bool => match text {
            "true" => vec![1],
            "false" => vec![0],
            _ => return Err(IggyError::InvalidBooleanValue.to_string()),
        },
        HeaderKind::Int8 => num::<i8>(text)?.to_le_bytes().to_vec(),
        HeaderKind::Int16 => num::<i16>(text)?.to_le_bytes().to_vec(),
        HeaderKind::Int32 => num::<i32>(text)?.to_le_bytes().to_vec(),
        HeaderKind::Int64 => num::<i64>(text)?.to_le_bytes().to_vec(),
        HeaderKind::Int128 => num::<i128>(text)?.to_le_bytes().to_vec(),
        HeaderKind::Uint8 => num::<u8>(text)?.to_le_bytes().to_vec(),
        HeaderKind::Uint16 => num::<u16>(text)?.to_le_bytes().to_vec(),
        HeaderKind::Uint32 => num::<u32>(text)?.to_le_bytes().to_vec(),
        HeaderKind::Uint64 => num::<u64>(text)?.to_le_bytes().to_vec(),
        HeaderKind::Uint128 => num::<u128>(text)?.to_le_bytes().to_vec(),
        HeaderKind::Float32 => num::<f32>(text)?.to_le_bytes().to_vec(),
        HeaderKind::Float64 => num::<f64>(text)?.to_le_bytes().to_vec(),
    })
}

/// Global permissions: listed names become true, all others false.
pub fn global_permissions(raw: &str) -> Result<GlobalPermissions, String> {
    let mut p = GlobalPermissions::default();
    let mut unknown = Vec::new();
    for name in raw.split(',') {
        let flag = match name {
            "manage_servers" | "m_srv" => &mut p.manage_servers,
            "read_servers" | "r_srv" => &mut p.read_servers,
            "manage_users" | "m_usr" => &mut p.manage_users,
            "read_users" | "r_usr" => &mut p.read_users,
            "manage_streams" | "m_str" => &mut p.manage_streams,
            "read_streams" | "r_str" => &mut p.read_streams,
            "manage_topics" | "m_top" => &mut p.manage_topics,
            "read_topics" | "r_top" => &mut p.read_topics,
            "poll_messages" | "p_msg" => &mut p.poll_messages,
            "send_messages" | "s_msg" => &mut p.send_messages,
            other => {
                unknown.push(other);
                continue;
            }
        };
        *flag = true;
    }
    match unknown_list(&unknown) {
        None => Ok(p),
        Some((plural, list)) => Err(format!("Unknown global permission{plural} {list}")),
    }
}

/// `("", "\"x\"")` for one unknown name, `("s", "\"x\", \"y\"")` for several.
fn unknown_list(unknown: &[&str]) -> Option<(&'static str, String)> {
    if unknown.is_empty() {
        return None;
    }
    let quoted: Vec<String> = unknown
        .iter()
        .map(|u| format!("\"{}\"", if u.is_empty() { "[empty]" } else { u }))
        .collect();
    let plural = if unknown.len() > 1 { "s" } else { "" };
    Some((plural, quoted.join(", ")))
}

/// One `-s` occurrence: `STREAM_ID[:PERMS][#TOPIC_ID[:PERMS]]...`.
#[derive(Debug, Clone)]
pub struct StreamPermissionSpec {
    pub stream_id: usize,
    pub permissions: StreamPermissions,
}

pub fn stream_permissions(raw: &str) -> Result<StreamPermissionSpec, String> {
    let mut parts = raw.split('#');
    let stream_part = parts.next().unwrap_or_default();
    let mut problems = Vec::new();
    let (id_text, perms) = split_perms(stream_part);
    let stream_id = id_text.parse::<usize>();
    let shown_id = id_text.to_owned();
    let mut permissions = StreamPermissions::default();
    match &stream_id {
        Err(e) => problems.push(format!("Invalid stream ID - {e}")),
        Ok(_) => {
            if let Some(perms) = perms
                && let Err(unknown) = apply_stream_perms(&mut permissions, perms)
            {
                problems.push(unknown_for(&unknown, "stream", &shown_id));
            }
        }
    }
    let mut topics = BTreeMap::new();
    for topic_part in parts {
        match topic_permissions(topic_part) {
            Ok((id, tp)) => {
                topics.insert(id, tp);
            }
            Err(problem) => problems.push(problem),
        }
    }
    if !problems.is_empty() {
        return Err(problems.join("; "));
    }
    if !topics.is_empty() {
        permissions.topics = Some(topics);
    }
    Ok(StreamPermissionSpec {
        stream_id: stream_id.unwrap_or_default(),
        permissions,
    })
}

fn split_perms(part: &str) -> (&str, Option<&str>) {
    match part.split_once(':') {
        Some((id, perms)) => (id, Some(perms)),
        None => (part, None),
    }
}

fn unknown_for(unknown: &[&str], level: &str, id: &str) -> String {
    let (plural, list) = unknown_list(unknown).unwrap_or_default();
    format!("Unknown permission{plural} {list} for {level} ID: {id}")
}

fn apply_stream_perms<'a>(p: &mut StreamPermissions, raw: &'a str) -> Result<(), Vec<&'a str>> {
    let mut unknown = Vec::new();
    for name in raw.split(',') {
        let flag = match name {
            "manage_stream" | "m_str" => &mut p.manage_stream,
            "read_stream" | "r_str" => &mut p.read_stream,
            "manage_topics" | "m_top" => &mut p.manage_topics,
            "read_topics" | "r_top" => &mut p.read_topics,
            "poll_messages" | "p_msg" => &mut p.poll_messages,
            "send_messages" | "s_msg" => &mut p.send_messages,
            other => {
                unknown.push(other);
                continue;
            }
        };
        *flag = true;
    }
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(unknown)
    }
}

fn topic_permissions(part: &str) -> Result<(usize, TopicPermissions), String> {
    let (id_text, perms) = split_perms(part);
    let id = id_text
        .parse::<usize>()
        .map_err(|e| format!("Invalid topic ID - {e}"))?;
    let mut p = TopicPermissions::default();
    let mut unknown = Vec::new();
    for name in perms
        .map(|s| s.split(',').collect::<Vec<_>>())
        .unwrap_or_default()
    {
        let flag = match name {
            "manage_topic" | "m_top" => &mut p.manage_topic,
            "read_topic" | "r_top" => &mut p.read_topic,
            "poll_messages" | "p_msg" => &mut p.poll_messages,
            "send_messages" | "s_msg" => &mut p.send_messages,
            other => {
                unknown.push(other);
                continue;
            }
        };
        *flag = true;
    }
    if !unknown.is_empty() {
        return Err(unknown_for(&unknown, "topic", id_text));
    }
    Ok((id, p))
}

/// `-g`/`-s` as the server wants them: neither → no permissions; only `-s` →
/// global all false; a repeated stream id keeps its last occurrence.
pub fn permissions(
    global: Option<GlobalPermissions>,
    streams: &[StreamPermissionSpec],
) -> Option<Permissions> {
    if global.is_none() && streams.is_empty() {
        return None;
    }
    let map: BTreeMap<usize, StreamPermissions> = streams
        .iter()
        .map(|s| (s.stream_id, s.permissions.clone()))
        .collect();
    Some(Permissions {
        global: global.unwrap_or_default(),
        streams: if map.is_empty() { None } else { Some(map) },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_unknown_global_names_when_parsing_should_list_them_quoted() {
        assert_eq!(
            global_permissions("bogus").unwrap_err(),
            "Unknown global permission \"bogus\""
        );
        assert_eq!(
            global_permissions("x,,r_str").unwrap_err(),
            "Unknown global permissions \"x\", \"[empty]\""
        );
    }

    #[test]
    fn given_stream_spec_with_topics_when_parsing_should_fill_both_levels() {
        let spec = stream_permissions("4:manage_stream,r_top#1:s_msg,p_msg#2:manage_topic")
            .expect("valid spec");
        assert_eq!(spec.stream_id, 4);
        assert!(spec.permissions.manage_stream && spec.permissions.read_topics);
        let topics = spec.permissions.topics.expect("topics");
        assert!(topics[&1].send_messages && topics[&1].poll_messages);
        assert!(topics[&2].manage_topic);
    }

    #[test]
    fn given_bad_stream_and_topic_parts_when_parsing_should_join_problems() {
        assert_eq!(
            stream_permissions("1:read_topic").unwrap_err(),
            "Unknown permission \"read_topic\" for stream ID: 1"
        );
        assert_eq!(
            stream_permissions("55:x,y#z").unwrap_err(),
            "Unknown permissions \"x\", \"y\" for stream ID: 55; Invalid topic ID - invalid digit found in string"
        );
    }

    #[test]
    fn given_header_items_when_parsing_should_report_spec_errors() {
        assert_eq!(headers("bad").unwrap_err(), "Invalid format");
        assert_eq!(
            headers("k:lz:1").unwrap_err(),
            "Cannot parse header kind from lz"
        );
        assert_eq!(headers("k:bool:TRUE").unwrap_err(), "Invalid boolean value");
        assert_eq!(headers("k:uint8:300").unwrap_err(), "Invalid number value");
        assert_eq!(headers("k:string:").unwrap_err(), "Invalid header value");
        assert_eq!(
            headers("a:UINT32:7,b:string:x:y").expect("valid").0.len(),
            2
        );
    }

    #[test]
    fn given_key_value_texts_when_parsing_should_split_at_first_equals() {
        assert_eq!(
            key_value("a=b=c").expect("valid"),
            ("a".to_owned(), "b=c".to_owned())
        );
        assert_eq!(key_value("ab").unwrap_err(), "expected KEY=VALUE, got: ab");
        assert_eq!(
            key_value("=v").unwrap_err(),
            "expected non-empty key in KEY=VALUE, got: =v"
        );
    }

    #[test]
    fn given_expiry_tokens_when_summed_should_follow_spec_rules() {
        let parts: Vec<IggyExpiry> = ["1day", "1hour"]
            .iter()
            .map(|t| expiry(t).unwrap())
            .collect();
        assert_eq!(sum_expiry(&parts).to_string(), "1day 1h");
        assert_eq!(
            sum_expiry(&[expiry("unlimited").unwrap()]),
            IggyExpiry::NeverExpire
        );
        assert_eq!(max_topic_size("none").unwrap(), MaxTopicSize::ServerDefault);
    }
}
