//! A poll reply as JSON (HTTP API spec §14), written straight into one
//! buffer: numbers through `itoa`, payloads base64-encoded in place, so
//! rendering 1,000 messages allocates once instead of a string per payload
//! and a serializer pass over every byte of it.
//!
//! The document, fields in this order:
//!
//! ```text
//! {"partition_id":P,"current_offset":O,"count":N,"messages":[
//!   {"header":{"checksum":C,"id":I,"offset":O,"timestamp":T,
//!    "origin_timestamp":T,"user_headers_length":L,"payload_length":L,
//!    "reserved":0},"payload":"<base64>","user_headers":[...]}, ...]}
//! ```
//!
//! `user_headers` is `[]` when a message has none, a list of `{"key":
//! {"kind","value"},"value":{"kind","value"}}` entries (values in base64)
//! when its block parses, and the block in base64 as a string when it does
//! not.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use protocol::batch::{BatchHeader, Frames};
use protocol::http_json::header_kind_name;
use protocol::primitives::UserHeaders;
use serde_json::{Value, json};

use crate::node::partitions::PolledBody;

/// Bytes of a rendered message besides its base64 frame.
const MESSAGE_OVERHEAD: usize = 320;

/// The JSON document; `None` when a stored record does not parse or does
/// not hold the messages the reply header counts (the caller answers with
/// an error).
pub fn render(body: &PolledBody) -> Option<Vec<u8>> {
    let count = body.header.messages_count;
    let mut rendered = 0u32;
    let capacity = 128 + count as usize * MESSAGE_OVERHEAD + body.byte_len() * 4 / 3;
    let mut out = Vec::with_capacity(capacity);
    let mut numbers = itoa::Buffer::new();
    let mut field = |out: &mut Vec<u8>, name: &[u8], value: u128| {
        out.extend_from_slice(name);
        out.extend_from_slice(numbers.format(value).as_bytes());
    };
    field(
        &mut out,
        b"{\"partition_id\":",
        body.header.partition_id.into(),
    );
    field(
        &mut out,
        b",\"current_offset\":",
        body.header.current_offset.into(),
    );
    field(&mut out, b",\"count\":", count.into());
    out.extend_from_slice(b",\"messages\":[");
    let mut first = true;
    for (batch, frames) in &body.records {
        let header = BatchHeader::read(batch).ok()?;
        for frame in Frames::new(frames) {
            let (_, frame) = frame.ok()?;
            rendered += 1;
            if !std::mem::take(&mut first) {
                out.push(b',');
            }
            let headers = frame.user_headers();
            let offset = header.base_offset + u64::from(frame.offset_delta());
            let origin = header.origin_timestamp + u64::from(frame.timestamp_delta());
            field(
                &mut out,
                b"{\"header\":{\"checksum\":",
                frame.checksum().into(),
            );
            field(&mut out, b",\"id\":", frame.id());
            field(&mut out, b",\"offset\":", offset.into());
            field(&mut out, b",\"timestamp\":", header.base_timestamp.into());
            field(&mut out, b",\"origin_timestamp\":", origin.into());
            field(
                &mut out,
                b",\"user_headers_length\":",
                headers.len() as u128,
            );
            field(
                &mut out,
                b",\"payload_length\":",
                frame.payload().len() as u128,
            );
            out.extend_from_slice(b",\"reserved\":0},\"payload\":\"");
            base64_into(&mut out, frame.payload());
            out.extend_from_slice(b"\",\"user_headers\":");
            if headers.is_empty() {
                out.extend_from_slice(b"[]");
            } else {
                serde_json::to_writer(&mut out, &headers_json(headers)).ok()?;
            }
            out.push(b'}');
        }
    }
    out.extend_from_slice(b"]}");
    (rendered == count).then_some(out)
}

/// Appends `bytes` in standard base64 (padded).
fn base64_into(out: &mut Vec<u8>, bytes: &[u8]) {
    let start = out.len();
    let len = base64::encoded_len(bytes.len(), true).expect("a payload's base64 fits in memory");
    out.resize(start + len, 0);
    let written = BASE64
        .encode_slice(bytes, &mut out[start..])
        .expect("sized above");
    assert_eq!(written, len, "base64 fills what was reserved");
}

/// A message's user headers block as JSON.
fn headers_json(block: &[u8]) -> Value {
    let Ok(headers) = UserHeaders::parse(block) else {
        return Value::String(BASE64.encode(block));
    };
    let field = |kind: u8, bytes: &[u8]| json!({"kind": header_kind_name(kind), "value": BASE64.encode(bytes)});
    headers
        .iter()
        .map(|e| json!({"key": field(e.key_kind, e.key), "value": field(e.value_kind, e.value)}))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::batch::BATCH_HEADER_SIZE;
    use protocol::http_json::decode_send_body;
    use protocol::responses::PollReplyHeader;

    fn body_of(sends: &[&str]) -> PolledBody {
        let records = sends
            .iter()
            .map(|send| {
                let record = decode_send_body(send.as_bytes(), 77, || 5).unwrap().record;
                let header: [u8; BATCH_HEADER_SIZE] =
                    record[..BATCH_HEADER_SIZE].try_into().unwrap();
                (
                    header,
                    bytes::Bytes::copy_from_slice(&record[BATCH_HEADER_SIZE..]),
                )
            })
            .collect();
        PolledBody {
            header: PollReplyHeader {
                partition_id: 3,
                current_offset: 41,
                messages_count: 3,
            },
            records,
        }
    }

    #[test]
    fn given_a_poll_when_rendered_should_write_the_golden_document() {
        let body = body_of(&[
            r#"{"partitioning": {"kind": "partition_id", "value": "AAAAAA=="}, "messages": [
                {"id": 7, "payload": "aGVsbG8="},
                {"id": 8, "payload": "d29ybGQ=", "user_headers": [
                    {"key": {"kind": "string", "value": "a2V5"}, "value": {"kind": "int32", "value": "KgAAAA=="}}]}]}"#,
            r#"{"partitioning": {"kind": "partition_id", "value": "AAAAAA=="}, "messages": [{"id": "340282366920938463463374607431768211455", "payload": "IQ=="}]}"#,
        ]);
        let text = String::from_utf8(render(&body).unwrap()).unwrap();
        let first = BatchHeader::read(&body.records[0].0).unwrap();
        let frames: Vec<_> = Frames::new(&body.records[0].1)
            .map(|f| f.unwrap().1.checksum())
            .collect();
        let expected_start = format!(
            "{{\"partition_id\":3,\"current_offset\":41,\"count\":3,\"messages\":[\
             {{\"header\":{{\"checksum\":{},\"id\":7,\"offset\":{},\"timestamp\":{},\
             \"origin_timestamp\":77,\"user_headers_length\":0,\"payload_length\":5,\
             \"reserved\":0}},\"payload\":\"aGVsbG8=\",\"user_headers\":[]}},",
            frames[0], first.base_offset, first.base_timestamp
        );
        assert!(text.starts_with(&expected_start), "{text}");
        assert!(text.contains(
            "\"payload\":\"d29ybGQ=\",\"user_headers\":[{\"key\":{\"kind\":\"string\",\"value\":\"a2V5\"},\
             \"value\":{\"kind\":\"int32\",\"value\":\"KgAAAA==\"}}]}"
        ), "{text}");
        assert!(
            text.contains("\"id\":340282366920938463463374607431768211455,"),
            "{text}"
        );
        assert!(
            text.ends_with("\"payload\":\"IQ==\",\"user_headers\":[]}]}"),
            "{text}"
        );
        // And it is JSON a client reads back.
        let parsed: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed["count"], 3);
        assert_eq!(parsed["messages"].as_array().unwrap().len(), 3);
        assert_eq!(parsed["messages"][1]["header"]["user_headers_length"], 17);
    }

    #[test]
    fn given_a_header_count_other_than_the_records_when_rendered_should_refuse() {
        let mut body = body_of(&[
            r#"{"partitioning": {"kind": "partition_id", "value": "AAAAAA=="}, "messages": [{"payload": "IQ=="}]}"#,
        ]);
        body.header.messages_count = 2;
        assert_eq!(render(&body), None);
    }

    #[test]
    fn given_no_records_when_rendered_should_write_an_empty_list() {
        let body = PolledBody {
            header: PollReplyHeader {
                partition_id: 0,
                current_offset: 0,
                messages_count: 0,
            },
            records: Vec::new(),
        };
        assert_eq!(
            render(&body).unwrap(),
            br#"{"partition_id":0,"current_offset":0,"count":0,"messages":[]}"#
        );
    }
}
