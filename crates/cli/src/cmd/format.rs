//! Message output of `message poll` and `message consume` (spec §9.3):
//! templates with `%` placeholders, raw payload bytes, and the payload
//! encoding used by `%v` and the poll table.

use crate::args::message::{MessageOutputArgs, PayloadEncoding};
use crate::output::Out;
use crate::render::TIME_FORMAT_MICROS;
use base64::Engine;
use iggy::prelude::{IggyMessage, IggyTimestamp};

/// One piece of a parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Offset,
    Partition,
    Micros,
    Rfc3339,
    Id,
    Length,
    Payload,
    Headers,
}

#[derive(Debug, Clone)]
enum Mode {
    /// `offset|timestamp|payload` (the `--follow` and `consume` default).
    Line,
    Template(Vec<Piece>),
    /// Payload bytes and this terminator.
    Raw(u8),
}

#[derive(Debug, Clone)]
pub struct MessagePrinter {
    mode: Mode,
    encoding: PayloadEncoding,
}

impl MessagePrinter {
    pub fn new(args: &MessageOutputArgs) -> Self {
        let mode = if args.raw {
            Mode::Raw(b'\n')
        } else if args.raw0 {
            Mode::Raw(0)
        } else if let Some(template) = &args.message_format {
            Mode::Template(parse_template(template))
        } else {
            Mode::Line
        };
        Self {
            mode,
            encoding: args.payload_encoding.unwrap_or(PayloadEncoding::Utf8),
        }
    }

    pub fn encoding(&self) -> PayloadEncoding {
        self.encoding
    }

    /// The bytes printed for one message (including the terminator).
    pub fn render(&self, partition: u32, m: &IggyMessage) -> Vec<u8> {
        match &self.mode {
            Mode::Raw(end) => {
                let mut bytes = m.payload.to_vec();
                bytes.push(*end);
                bytes
            }
            Mode::Line => {
                let time =
                    IggyTimestamp::from(m.header.timestamp).to_local_string(TIME_FORMAT_MICROS);
                format!(
                    "{}|{time}|{}\n",
                    m.header.offset,
                    payload_text(&m.payload, self.encoding)
                )
                .into_bytes()
            }
            Mode::Template(pieces) => {
                let mut text = String::new();
                for piece in pieces {
                    match piece {
                        Piece::Text(t) => text.push_str(t),
                        Piece::Offset => text.push_str(&m.header.offset.to_string()),
                        Piece::Partition => text.push_str(&partition.to_string()),
                        Piece::Micros => text.push_str(&m.header.timestamp.to_string()),
                        Piece::Rfc3339 => text.push_str(&rfc3339(m.header.timestamp)),
                        Piece::Id => text.push_str(&m.header.id.to_string()),
                        Piece::Length => text.push_str(&m.payload.len().to_string()),
                        Piece::Payload => text.push_str(&payload_text(&m.payload, self.encoding)),
                        Piece::Headers => text.push_str(&headers_text(m)),
                    }
                }
                text.push('\n');
                text.into_bytes()
            }
        }
    }

    pub fn print(&self, out: &Out, partition: u32, m: &IggyMessage) {
        out.bytes(&self.render(partition, m));
    }
}

/// A payload as text in the chosen encoding (invalid UTF-8 is replaced).
pub fn payload_text(payload: &[u8], encoding: PayloadEncoding) -> String {
    match encoding {
        PayloadEncoding::Utf8 => String::from_utf8_lossy(payload).into_owned(),
        PayloadEncoding::Hex => payload.iter().map(|b| format!("{b:02x}")).collect(),
        PayloadEncoding::Base64 => base64::engine::general_purpose::STANDARD.encode(payload),
    }
}

fn rfc3339(micros: u64) -> String {
    let micros = i64::try_from(micros).unwrap_or(i64::MAX);
    chrono::DateTime::from_timestamp_micros(micros)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true))
        .unwrap_or_default()
}

fn headers_text(m: &IggyMessage) -> String {
    let Ok(Some(map)) = m.user_headers_map() else {
        return String::new();
    };
    let mut pairs: Vec<String> = map
        .iter()
        .map(|(k, v)| format!("{}={}", k.to_string_value(), v.to_string_value()))
        .collect();
    pairs.sort();
    pairs.join(",")
}

fn parse_template(template: &str) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut chars = template.chars();
    while let Some(c) = chars.next() {
        let piece = match c {
            '%' => match chars.next() {
                Some('o') => Piece::Offset,
                Some('p') => Piece::Partition,
                Some('t') => Piece::Micros,
                Some('T') => Piece::Rfc3339,
                Some('i') => Piece::Id,
                Some('l') => Piece::Length,
                Some('v') => Piece::Payload,
                Some('h') => Piece::Headers,
                Some('%') => {
                    text.push('%');
                    continue;
                }
                Some(other) => {
                    text.push('%');
                    text.push(other);
                    continue;
                }
                None => {
                    text.push('%');
                    continue;
                }
            },
            '\\' => {
                match chars.next() {
                    Some('n') => text.push('\n'),
                    Some('t') => text.push('\t'),
                    Some('\\') => text.push('\\'),
                    Some(other) => {
                        text.push('\\');
                        text.push(other);
                    }
                    None => text.push('\\'),
                }
                continue;
            }
            other => {
                text.push(other);
                continue;
            }
        };
        if !text.is_empty() {
            pieces.push(Piece::Text(std::mem::take(&mut text)));
        }
        pieces.push(piece);
    }
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn printer(format: Option<&str>, raw: bool, enc: Option<PayloadEncoding>) -> MessagePrinter {
        MessagePrinter::new(&MessageOutputArgs {
            message_format: format.map(str::to_owned),
            raw,
            raw0: false,
            payload_encoding: enc,
        })
    }

    fn message() -> IggyMessage {
        let mut m = IggyMessage::builder()
            .id(7)
            .payload(Bytes::from_static(b"hi\x01"))
            .build()
            .unwrap();
        m.header.offset = 12;
        m.header.timestamp = 1_700_000_000_123_456;
        m
    }

    #[test]
    fn given_template_when_rendered_should_substitute_placeholders_and_escapes() {
        let p = printer(
            Some("%p/%o %t %T id=%i len=%l %v 100%%\\t|\\\\"),
            false,
            None,
        );
        assert_eq!(
            String::from_utf8(p.render(2, &message())).unwrap(),
            "2/12 1700000000123456 2023-11-14T22:13:20.123456Z id=7 len=3 hi\u{1} 100%\t|\\\n"
        );
    }

    #[test]
    fn given_encodings_when_rendering_payload_should_encode() {
        let hex = printer(Some("%v"), false, Some(PayloadEncoding::Hex));
        assert_eq!(hex.render(0, &message()), b"686901\n");
        let b64 = printer(Some("%v"), false, Some(PayloadEncoding::Base64));
        assert_eq!(b64.render(0, &message()), b"aGkB\n");
        let raw = printer(None, true, Some(PayloadEncoding::Hex));
        assert_eq!(raw.render(0, &message()), b"hi\x01\n");
    }
}
