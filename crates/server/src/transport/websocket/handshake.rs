//! The opening handshake (RFC 6455 §4.2): an HTTP/1.1 GET asking to upgrade,
//! answered by `101 Switching Protocols` with the key's accept hash.
//!
//! Required of the request: method GET, version HTTP/1.1, `Upgrade:
//! websocket`, a `Connection` header naming `upgrade`,
//! `Sec-WebSocket-Version: 13` (else 426 naming 13) and a
//! `Sec-WebSocket-Key` of 16 bytes in base64. The path, subprotocols and
//! extensions are not looked at: none is offered back, so the connection
//! carries plain binary messages. The request and its headers may take at
//! most [`MAX_REQUEST`] bytes.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sha1::{Digest, Sha1};

/// The most bytes a handshake request may take.
pub const MAX_REQUEST: usize = 8 << 10;

/// RFC 6455's fixed GUID, appended to the key before hashing.
const ACCEPT_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// What to answer a complete request with.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// `101`: the request took `consumed` bytes; what follows is frames.
    Upgrade { response: Vec<u8>, consumed: usize },
    /// An HTTP error; the connection closes after it.
    Refuse {
        response: Vec<u8>,
        reason: &'static str,
    },
}

/// The answer to the request at the start of `bytes`, or `None` while its
/// headers are incomplete (and within [`MAX_REQUEST`]).
pub fn answer(bytes: &[u8]) -> Option<Answer> {
    let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") else {
        return (bytes.len() >= MAX_REQUEST).then(|| refuse(431, "the handshake is too long"));
    };
    let consumed = end + 4;
    if consumed > MAX_REQUEST {
        return Some(refuse(431, "the handshake is too long"));
    }
    let Ok(text) = std::str::from_utf8(&bytes[..end]) else {
        return Some(refuse(400, "the handshake is not text"));
    };
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (method, _target, version) = (parts.next(), parts.next(), parts.next());
    if method != Some("GET") || version != Some("HTTP/1.1") || parts.next().is_some() {
        return Some(refuse(400, "not an HTTP/1.1 GET"));
    }
    let mut headers = Vec::new();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Some(refuse(400, "a malformed header"));
        };
        headers.push((name.trim(), value.trim()));
    }
    let header = |wanted: &str| {
        headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(wanted))
            .map(|(_, value)| *value)
    };
    let has_token = |wanted: &str, token: &str| {
        header(wanted).is_some_and(|value| {
            value
                .split(',')
                .any(|item| item.trim().eq_ignore_ascii_case(token))
        })
    };
    if !has_token("upgrade", "websocket") || !has_token("connection", "upgrade") {
        return Some(refuse(400, "not a WebSocket upgrade"));
    }
    if header("sec-websocket-version") != Some("13") {
        return Some(Answer::Refuse {
            response: status(426, "Sec-WebSocket-Version: 13\r\n"),
            reason: "an unsupported WebSocket version",
        });
    }
    let key = header("sec-websocket-key").unwrap_or_default();
    if STANDARD.decode(key).map(|k| k.len()) != Ok(16) {
        return Some(refuse(400, "a missing or malformed Sec-WebSocket-Key"));
    }
    let response = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {}\r\n\r\n",
        accept_key(key)
    );
    Some(Answer::Upgrade {
        response: response.into_bytes(),
        consumed,
    })
}

/// `Sec-WebSocket-Accept` for `key`: base64 of SHA-1 over the key and
/// the GUID.
pub fn accept_key(key: &str) -> String {
    let mut hash = Sha1::new();
    hash.update(key.as_bytes());
    hash.update(ACCEPT_GUID.as_bytes());
    STANDARD.encode(hash.finalize())
}

fn refuse(code: u16, reason: &'static str) -> Answer {
    Answer::Refuse {
        response: status(code, ""),
        reason,
    }
}

fn status(code: u16, extra_headers: &str) -> Vec<u8> {
    let text = match code {
        400 => "Bad Request",
        426 => "Upgrade Required",
        _ => "Request Header Fields Too Large",
    };
    format!(
        "HTTP/1.1 {code} {text}\r\n{extra_headers}Connection: close\r\nContent-Length: 0\r\n\r\n"
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    const REQUEST: &str = "GET /chat HTTP/1.1\r\nHost: server.example.com\r\n\
        Upgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n\
        Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";

    #[test]
    fn given_the_rfc_key_when_hashed_should_give_the_rfc_accept() {
        // RFC 6455 §1.3.
        assert_eq!(
            accept_key("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    #[test]
    fn given_a_request_with_frames_after_it_when_answered_should_upgrade_and_count_only_the_request()
     {
        let mut bytes = REQUEST.as_bytes().to_vec();
        bytes.extend_from_slice(&[0x82, 0x80]);
        let Some(Answer::Upgrade { response, consumed }) = answer(&bytes) else {
            panic!("not upgraded");
        };
        assert_eq!(consumed, REQUEST.len());
        let response = String::from_utf8(response).unwrap();
        assert!(response.starts_with("HTTP/1.1 101 Switching Protocols\r\n"));
        assert!(response.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"));
        assert!(response.ends_with("\r\n\r\n"));
    }

    #[test]
    fn given_a_partial_request_when_answered_should_wait_for_more() {
        for cut in [0, 10, REQUEST.len() - 1] {
            assert_eq!(answer(&REQUEST.as_bytes()[..cut]), None);
        }
        assert!(matches!(
            answer(&vec![b'a'; MAX_REQUEST]),
            Some(Answer::Refuse { .. })
        ));
    }

    #[test]
    fn given_bad_requests_when_answered_should_refuse_with_their_status() {
        let refused = |request: String| match answer(request.as_bytes()) {
            Some(Answer::Refuse { response, .. }) => String::from_utf8(response).unwrap(),
            other => panic!("{other:?} for {request}"),
        };
        assert!(refused(REQUEST.replace("GET", "POST")).starts_with("HTTP/1.1 400"));
        assert!(
            refused(REQUEST.replace("Upgrade: websocket", "Upgrade: h2c"))
                .starts_with("HTTP/1.1 400")
        );
        assert!(
            refused(REQUEST.replace("keep-alive, Upgrade", "close")).starts_with("HTTP/1.1 400")
        );
        let old = refused(REQUEST.replace("Version: 13", "Version: 8"));
        assert!(old.starts_with("HTTP/1.1 426") && old.contains("Sec-WebSocket-Version: 13"));
        assert!(
            refused(REQUEST.replace("dGhlIHNhbXBsZSBub25jZQ==", "short"))
                .starts_with("HTTP/1.1 400")
        );
        assert!(refused(REQUEST.replace("Host: ", "Host ")).starts_with("HTTP/1.1 400"));
    }
}
