//! `POST .../messages` bodies: `{"partitioning": {kind, value}, "messages":
//! [{id?, payload, user_headers?}]}` with base64 payloads and header values.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use serde_json::Value;

use super::BodyError;
use crate::ErrorCode;
use crate::batch::build_record;
use crate::primitives::{MAX_KV_FIELD_LEN, MAX_USER_HEADERS_BYTES, Partitioning, put_kv_pair};

/// Largest payload one message may carry.
pub const MAX_PAYLOAD_BYTES: usize = 64_000_000;

/// Header value kinds by their JSON names; the index + 1 is the wire code.
pub const HEADER_KIND_NAMES: [&str; 15] = [
    "raw", "string", "bool", "int8", "int16", "int32", "int64", "int128", "uint8", "uint16",
    "uint32", "uint64", "uint128", "float32", "float64",
];

/// The JSON name of a header kind code (`raw` for unknown codes).
pub fn header_kind_name(kind: u8) -> &'static str {
    HEADER_KIND_NAMES
        .get(usize::from(kind).wrapping_sub(1))
        .copied()
        .unwrap_or("raw")
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SendBody<'a> {
    partitioning: PartitioningJson,
    #[serde(borrow)]
    messages: Vec<MessageJson<'a>>,
}

#[derive(Deserialize)]
struct PartitioningJson {
    kind: String,
    #[serde(default)]
    value: String,
}

#[derive(Deserialize)]
struct MessageJson<'a> {
    #[serde(default)]
    id: MessageId,
    /// Borrowed from the body: base64 has no characters JSON escapes, so
    /// a payload is decoded where it lies instead of copied first.
    #[serde(borrow)]
    payload: std::borrow::Cow<'a, str>,
    #[serde(default)]
    user_headers: Option<Value>,
}

/// A message id: a number, a decimal string, or a UUID (32 hex digits,
/// dashes optional).
#[derive(Default)]
struct MessageId(u128);

impl<'de> Deserialize<'de> for MessageId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IdVisitor;
        impl Visitor<'_> for IdVisitor {
            type Value = MessageId;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a message id: an unsigned number, a decimal string or a UUID")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<MessageId, E> {
                Ok(MessageId(u128::from(v)))
            }
            fn visit_u128<E: de::Error>(self, v: u128) -> Result<MessageId, E> {
                Ok(MessageId(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<MessageId, E> {
                parse_message_id(v)
                    .map(MessageId)
                    .ok_or_else(|| E::custom(format!("invalid message id '{v}'")))
            }
        }
        deserializer.deserialize_any(IdVisitor)
    }
}

fn parse_message_id(text: &str) -> Option<u128> {
    if let Ok(n) = text.parse::<u128>() {
        return Some(n);
    }
    let hex: String = text.chars().filter(|c| *c != '-').collect();
    (hex.len() == 32)
        .then(|| u128::from_str_radix(&hex, 16).ok())
        .flatten()
}

/// The partitioning of a JSON batch, owning its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendTarget {
    Balanced,
    PartitionId(u32),
    Key(Vec<u8>),
}

impl SendTarget {
    pub fn wire(&self) -> Partitioning<'_> {
        match self {
            SendTarget::Balanced => Partitioning::Balanced,
            SendTarget::PartitionId(id) => Partitioning::PartitionId(*id),
            SendTarget::Key(key) => Partitioning::MessagesKey(key),
        }
    }
}

fn partitioning(json: &PartitioningJson) -> Result<SendTarget, BodyError> {
    let value = BASE64
        .decode(&json.value)
        .map_err(|_| BodyError::Code(ErrorCode::InvalidKeyValueLength))?;
    match json.kind.as_str() {
        "balanced" => Ok(SendTarget::Balanced),
        "partition_id" => {
            let bytes: [u8; 4] = value
                .as_slice()
                .try_into()
                .map_err(|_| BodyError::Code(ErrorCode::InvalidKeyValueLength))?;
            Ok(SendTarget::PartitionId(u32::from_le_bytes(bytes)))
        }
        "messages_key" => {
            if !(1..=MAX_KV_FIELD_LEN).contains(&value.len()) {
                return Err(BodyError::Code(ErrorCode::InvalidKeyValueLength));
            }
            Ok(SendTarget::Key(value))
        }
        other => Err(BodyError::Invalid(format!(
            "unknown partitioning kind '{other}'"
        ))),
    }
}

#[derive(Deserialize)]
struct HeaderField {
    kind: String,
    value: String,
}

#[derive(Deserialize)]
struct HeaderEntry {
    key: HeaderField,
    value: HeaderField,
}

fn header_field(field: &HeaderField) -> Result<(u8, Vec<u8>), BodyError> {
    let kind = HEADER_KIND_NAMES
        .iter()
        .position(|k| k.eq_ignore_ascii_case(&field.kind))
        .ok_or_else(|| BodyError::Invalid(format!("unknown header kind '{}'", field.kind)))?;
    let bytes = BASE64
        .decode(&field.value)
        .map_err(|_| BodyError::Invalid("a header value is not valid base64".into()))?;
    if !(1..=MAX_KV_FIELD_LEN).contains(&bytes.len()) {
        return Err(BodyError::Code(ErrorCode::InvalidKeyValueLength));
    }
    Ok((kind as u8 + 1, bytes))
}

/// User headers in their wire form: from an array of fields, or raw bytes
/// given as base64.
fn user_headers(value: Option<&Value>) -> Result<Vec<u8>, BodyError> {
    let block = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::String(raw)) => BASE64
            .decode(raw)
            .map_err(|_| BodyError::Invalid("user_headers is not valid base64".into()))?,
        Some(array @ Value::Array(_)) => {
            let entries: Vec<HeaderEntry> = serde_json::from_value(array.clone())
                .map_err(|e| BodyError::Invalid(format!("invalid user_headers: {e}")))?;
            let mut block = Vec::new();
            for entry in &entries {
                let (key_kind, key) = header_field(&entry.key)?;
                let (value_kind, value) = header_field(&entry.value)?;
                put_kv_pair(&mut block, key_kind, &key, value_kind, &value);
                if block.len() > MAX_USER_HEADERS_BYTES {
                    return Err(BodyError::Code(ErrorCode::TooBigUserHeaders));
                }
            }
            block
        }
        Some(_) => {
            return Err(BodyError::Invalid(
                "user_headers must be an array or a string".into(),
            ));
        }
    };
    if block.len() > MAX_USER_HEADERS_BYTES {
        return Err(BodyError::Code(ErrorCode::TooBigUserHeaders));
    }
    Ok(block)
}

struct Prepared {
    id: u128,
    payload: Vec<u8>,
    headers: Vec<u8>,
}

fn prepare(
    message: &MessageJson<'_>,
    new_id: &mut impl FnMut() -> u128,
) -> Result<Prepared, BodyError> {
    let payload = BASE64
        .decode(message.payload.as_bytes())
        .map_err(|_| BodyError::Invalid("a payload is not valid base64".into()))?;
    if payload.is_empty() {
        return Err(BodyError::Code(ErrorCode::EmptyMessagePayload));
    }
    if payload.len() > MAX_PAYLOAD_BYTES {
        return Err(BodyError::Code(ErrorCode::TooBigMessagePayload));
    }
    let id = match message.id.0 {
        0 => new_id(),
        id => id,
    };
    Ok(Prepared {
        id,
        payload,
        headers: user_headers(message.user_headers.as_ref())?,
    })
}

/// A decoded send body: where it goes and the batch record to append.
#[derive(Debug)]
pub struct SendBatch {
    pub target: SendTarget,
    pub record: Vec<u8>,
    pub messages: u32,
}

/// Decodes a send body into a batch record stamped with
/// `origin_timestamp_us`; messages without an id (or id 0) get `new_id()`.
pub fn decode_send_body(
    body: &[u8],
    origin_timestamp_us: u64,
    mut new_id: impl FnMut() -> u128,
) -> Result<SendBatch, BodyError> {
    let body: SendBody = serde_json::from_slice(body)?;
    if body.messages.is_empty() {
        return Err(BodyError::Code(ErrorCode::InvalidMessagesCount));
    }
    let target = partitioning(&body.partitioning)?;
    let prepared = body
        .messages
        .iter()
        .map(|m| prepare(m, &mut new_id))
        .collect::<Result<Vec<_>, _>>()?;
    let parts: Vec<(u128, &[u8], &[u8])> = prepared
        .iter()
        .map(|m| (m.id, m.payload.as_slice(), m.headers.as_slice()))
        .collect();
    Ok(SendBatch {
        target,
        record: build_record(origin_timestamp_us, &parts),
        messages: prepared.len() as u32,
    })
}
