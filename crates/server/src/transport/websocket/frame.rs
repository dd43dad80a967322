//! WebSocket frames (RFC 6455 §5.2) as this server reads and writes them.
//!
//! ```text
//!  byte 0: FIN (0x80) | RSV1-3 (0x70, must be 0) | opcode (0x0F)
//!  byte 1: MASK (0x80) | payload length (0x7F): 0-125 as is,
//!          126: a u16 follows, 127: a u64 follows (big-endian)
//!  then the 4-byte masking key when MASK is set, then the payload
//! ```
//!
//! A client's frames are masked (each payload byte XORed with the key byte
//! at its index mod 4); the server's are not. No extension is negotiated,
//! so the reserved bits are always zero. Control frames (close, ping,
//! pong) are never fragmented and carry at most 125 bytes.

/// Continues a fragmented message.
pub const CONTINUATION: u8 = 0x0;
pub const TEXT: u8 = 0x1;
pub const BINARY: u8 = 0x2;
pub const CLOSE: u8 = 0x8;
pub const PING: u8 = 0x9;
pub const PONG: u8 = 0xA;

/// The longest head: 2 bytes, an 8-byte length and a 4-byte key.
pub const MAX_HEAD: usize = 14;
/// The longest control frame payload.
pub const MAX_CONTROL: u64 = 125;

/// Close codes (RFC 6455 §7.4.1).
pub const CLOSE_NORMAL: u16 = 1000;
pub const CLOSE_PROTOCOL: u16 = 1002;
pub const CLOSE_UNSUPPORTED: u16 = 1003;
pub const CLOSE_POLICY: u16 = 1008;
pub const CLOSE_TOO_BIG: u16 = 1009;

/// A parsed frame head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub fin: bool,
    pub opcode: u8,
    pub mask: Option<[u8; 4]>,
    /// Payload bytes after the head.
    pub len: u64,
    /// Bytes of the head itself.
    pub head_len: usize,
}

impl Head {
    pub fn is_control(&self) -> bool {
        self.opcode & 0x8 != 0
    }
}

/// Why a head is refused; each closes the connection with 1002.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HeadError {
    #[error("reserved bits set without a negotiated extension")]
    Reserved,
    #[error("unknown opcode {0:#x}")]
    UnknownOpcode(u8),
    #[error("a fragmented or oversized control frame")]
    BadControl,
    #[error("an unmasked client frame")]
    Unmasked,
}

/// The head's length as announced by its first two bytes.
pub fn head_len(first_two: [u8; 2]) -> usize {
    let extended = match first_two[1] & 0x7F {
        126 => 2,
        127 => 8,
        _ => 0,
    };
    let mask = if first_two[1] & 0x80 != 0 { 4 } else { 0 };
    2 + extended + mask
}

/// Parses the head at the start of `bytes`: `Ok(None)` until all of it is
/// there.
pub fn parse_head(bytes: &[u8], accept_unmasked: bool) -> Result<Option<Head>, HeadError> {
    if bytes.len() < 2 {
        return Ok(None);
    }
    let (b0, b1) = (bytes[0], bytes[1]);
    let head_len = head_len([b0, b1]);
    if bytes.len() < head_len {
        return Ok(None);
    }
    if b0 & 0x70 != 0 {
        return Err(HeadError::Reserved);
    }
    let (fin, opcode, masked) = (b0 & 0x80 != 0, b0 & 0x0F, b1 & 0x80 != 0);
    if !matches!(opcode, CONTINUATION | TEXT | BINARY | CLOSE | PING | PONG) {
        return Err(HeadError::UnknownOpcode(opcode));
    }
    let (len, key_at) = match b1 & 0x7F {
        126 => (u64::from(u16::from_be_bytes([bytes[2], bytes[3]])), 4),
        127 => {
            let wide: [u8; 8] = bytes[2..10].try_into().expect("eight bytes");
            (u64::from_be_bytes(wide), 10)
        }
        short => (u64::from(short), 2),
    };
    let head = Head {
        fin,
        opcode,
        mask: masked.then(|| bytes[key_at..key_at + 4].try_into().expect("four bytes")),
        len,
        head_len,
    };
    if head.is_control() && (!fin || len > MAX_CONTROL) {
        return Err(HeadError::BadControl);
    }
    if head.mask.is_none() && !accept_unmasked {
        return Err(HeadError::Unmasked);
    }
    // Postcondition: the head was all there and its key sits at its end.
    assert!(head_len <= bytes.len() && head_len <= MAX_HEAD);
    Ok(Some(head))
}

/// The head of a server frame (final, unmasked) carrying `len` bytes.
pub fn server_head(opcode: u8, len: usize) -> Vec<u8> {
    let mut head = Vec::with_capacity(10);
    head.push(0x80 | opcode);
    match len {
        0..=125 => head.push(len as u8),
        126..=0xFFFF => {
            head.push(126);
            head.extend_from_slice(&(len as u16).to_be_bytes());
        }
        _ => {
            head.push(127);
            head.extend_from_slice(&(len as u64).to_be_bytes());
        }
    }
    head
}

/// A whole server control frame.
pub fn server_frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    assert!(
        payload.len() as u64 <= MAX_CONTROL,
        "a control payload fits"
    );
    let mut frame = server_head(opcode, payload.len());
    frame.extend_from_slice(payload);
    frame
}

/// A close frame's payload: the code, then a UTF-8 reason.
pub fn close_payload(code: u16, reason: &str) -> Vec<u8> {
    let mut payload = code.to_be_bytes().to_vec();
    payload.extend_from_slice(reason.as_bytes());
    payload.truncate(MAX_CONTROL as usize);
    payload
}

/// Removes the client's mask from `payload`, the whole payload of one
/// frame (the key's index restarts at every frame).
pub fn unmask(payload: &mut [u8], key: [u8; 4]) {
    let word = u64::from(u32::from_ne_bytes(key));
    let wide = word | (word << 32);
    let mut words = payload.chunks_exact_mut(8);
    for chunk in &mut words {
        let value = u64::from_ne_bytes((&*chunk).try_into().expect("eight bytes")) ^ wide;
        chunk.copy_from_slice(&value.to_ne_bytes());
    }
    // The remainder starts at a multiple of 8, so its index mod 4 is its
    // index in the remainder.
    for (i, byte) in words.into_remainder().iter_mut().enumerate() {
        *byte ^= key[i % 4];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masked(opcode: u8, fin: bool, payload: &[u8], key: [u8; 4]) -> Vec<u8> {
        let mut frame = server_head(opcode, payload.len());
        if !fin {
            frame[0] &= 0x7F;
        }
        frame[1] |= 0x80;
        frame.extend_from_slice(&key);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
        frame
    }

    #[test]
    fn given_server_heads_when_encoded_should_match_the_golden_bytes() {
        assert_eq!(server_head(BINARY, 5), [0x82, 5]);
        assert_eq!(server_head(BINARY, 125), [0x82, 125]);
        assert_eq!(server_head(BINARY, 126), [0x82, 126, 0, 126]);
        assert_eq!(server_head(BINARY, 0xFFFF), [0x82, 126, 0xFF, 0xFF]);
        assert_eq!(
            server_head(BINARY, 0x1_0000),
            [0x82, 127, 0, 0, 0, 0, 0, 1, 0, 0]
        );
        assert_eq!(
            server_frame(CLOSE, &close_payload(1008, "no")),
            [0x88, 4, 0x03, 0xF0, b'n', b'o']
        );
    }

    #[test]
    fn given_masked_frames_when_parsed_should_give_the_head_and_unmask_the_payload() {
        let key = [0x37, 0xFA, 0x21, 0x3D];
        for len in [0usize, 3, 8, 125, 126, 1000, 70_000] {
            let payload: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            let frame = masked(BINARY, true, &payload, key);
            let head = parse_head(&frame, false).unwrap().unwrap();
            assert_eq!(head.len, len as u64);
            assert_eq!(head.head_len + len, frame.len());
            assert_eq!(head.mask, Some(key));
            assert!(head.fin);
            let mut body = frame[head.head_len..].to_vec();
            unmask(&mut body, key);
            assert_eq!(body, payload, "length {len}");
            // Every prefix shorter than the head is incomplete.
            for cut in 0..head.head_len {
                assert_eq!(parse_head(&frame[..cut], false), Ok(None));
            }
        }
    }

    #[test]
    fn given_the_rfc_example_when_parsed_should_read_hello() {
        // RFC 6455 §5.7: a single-frame masked text message "Hello".
        let frame = [
            0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58,
        ];
        let head = parse_head(&frame, false).unwrap().unwrap();
        assert_eq!((head.opcode, head.len, head.head_len), (TEXT, 5, 6));
        let mut body = frame[6..].to_vec();
        unmask(&mut body, head.mask.unwrap());
        assert_eq!(body, b"Hello");
    }

    #[test]
    fn given_bad_heads_when_parsed_should_say_why() {
        let key = [1, 2, 3, 4];
        let mut reserved = masked(BINARY, true, b"x", key);
        reserved[0] |= 0x40;
        assert_eq!(parse_head(&reserved, false), Err(HeadError::Reserved));
        let unknown = masked(0x3, true, b"x", key);
        assert_eq!(
            parse_head(&unknown, false),
            Err(HeadError::UnknownOpcode(3))
        );
        let fragmented_ping = masked(PING, false, b"x", key);
        assert_eq!(
            parse_head(&fragmented_ping, false),
            Err(HeadError::BadControl)
        );
        let long_ping = masked(PING, true, &[0; 126], key);
        assert_eq!(parse_head(&long_ping, false), Err(HeadError::BadControl));
        let unmasked = server_frame(BINARY, b"x");
        assert_eq!(parse_head(&unmasked, false), Err(HeadError::Unmasked));
        assert!(parse_head(&unmasked, true).unwrap().is_some());
    }
}
