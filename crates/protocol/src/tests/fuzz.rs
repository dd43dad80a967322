//! A deterministic fuzz sweep: every decoder is fed truncations and random
//! mutations of valid inputs, and random bytes, and must return (Ok or Err)
//! without panicking. The seed is fixed, so a failure replays exactly.

use super::dump;
use crate::batch::{Verify, slice_record, stamp_record, validate_record};
use crate::codes::CommandCode;
use crate::header::{EvictionHeader, EvictionReason, ReplyHeader, RequestHeader};
use crate::primitives::{Options, Permissions, UserHeaders};
use crate::reply::eviction;
use crate::requests::{LoginRequest, Request, SendMessages};
use crate::wire::Reader;

/// SplitMix64: tiny, deterministic, good enough to pick bytes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }

    /// Flips, overwrites or small-integer-pokes a few bytes.
    fn mutate(&mut self, input: &[u8]) -> Vec<u8> {
        let mut out = input.to_vec();
        if out.is_empty() {
            let len = self.below(8);
            return self.bytes(len);
        }
        for _ in 0..1 + self.below(4) {
            let at = self.below(out.len());
            out[at] = match self.below(4) {
                0 => out[at] ^ (1 << self.below(8)),
                1 => self.next() as u8,
                2 => [0, 1, 2, 0xff][self.below(4)],
                _ => out[at].wrapping_add(1),
            };
        }
        out
    }
}

/// Valid bodies to start from: the spec's exchange plus a few more shapes.
fn seeds() -> Vec<(CommandCode, Vec<u8>)> {
    let login = "0000: 00 2c 00 00 08 72 75 73 74 2d 73 64 6b 06 30 2e\n0010: 31 31 2e 30 04 69 67 67 79 04 69 67 67 79 00 00\n0020: 00 00";
    let poll = "0000: 01 01 04 01 00 00 00 02 01 73 02 01 74 01 00 00\n0010: 00 00 01 00 00 00 00 00 00 00 00 0a 00 00 00 00";
    let store = "0000: 01 01 04 01 00 00 00 02 01 73 02 01 74 01 00 00\n0010: 00 00 00 00 00 00 00 00 00 00 01";
    let mut send = vec![
        16, 0, 0, 0, 2, 1, b's', 2, 1, b't', 2, 4, 0, 0, 0, 0, 2, 0, 0, 0,
    ];
    send.extend(crate::batch::build_record(
        5,
        &[
            (1, b"hello", b""),
            (2, b"world", &[2, 1, 0, 0, 0, b'k', 2, 1, 0, 0, 0, b'v']),
        ],
    ));
    let mut permissions = Vec::new();
    Permissions {
        streams: vec![crate::primitives::StreamPermissions {
            stream_id: 1,
            topics: vec![Default::default(), Default::default()],
            ..Default::default()
        }],
        ..Default::default()
    }
    .encode(&mut permissions);
    let mut create_user = vec![5, b'a', b'l', b'i', b'c', b'e', 3, b'p', b'w', b'd', 1, 1];
    create_user.extend((permissions.len() as u32).to_le_bytes());
    create_user.extend(&permissions);
    create_user.extend([2, 1, 0, 0, 0, b'k', 2, 1, 0, 0, 0, b'v']);
    vec![
        (CommandCode::LoginRegister, dump(login)),
        (CommandCode::PollMessages, dump(poll)),
        (CommandCode::StoreConsumerOffset, dump(store)),
        (CommandCode::SendMessages, send),
        (CommandCode::CreateUser, create_user),
        (
            CommandCode::UpdateUser,
            vec![1, 4, 0, 0, 0, 0, 1, 1, b'b', 1, 2],
        ),
        (
            CommandCode::ChangePassword,
            vec![2, 1, b'u', 3, b'o', b'l', b'd', 3, b'n', b'e', b'w'],
        ),
        (
            CommandCode::CreateTopic,
            vec![
                2, 1, b's', 1, 0, 0, 0, 1, b't', 2, 1, 0, 0, 0, b'k', 2, 1, 0, 0, 0, b'v',
            ],
        ),
        (
            CommandCode::DeleteConsumerOffset,
            vec![
                2, 2, 1, b'g', 1, 4, 1, 0, 0, 0, 1, 4, 2, 0, 0, 0, 0, 0, 0, 0, 0, 1,
            ],
        ),
        (CommandCode::GetSnapshotFile, vec![1, 2, 1, 100]),
        (CommandCode::AttachConsumerSession, vec![7; 32]),
        (
            CommandCode::DeleteSegments,
            vec![1, 4, 0, 0, 0, 0, 1, 4, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0],
        ),
    ]
}

fn decode_everything(code: CommandCode, body: &[u8]) {
    let _ = Request::decode(code, body);
    let _ = LoginRequest::decode(body);
    let _ = Options::parse(body);
    let _ = UserHeaders::parse(body);
    let _ = Permissions::decode(&mut Reader::new(body));
    let _ = Permissions::decode_prefixed(&mut Reader::new(body));
    if let Ok(send) = SendMessages::decode(body) {
        let _ = send.validate(body, Verify::Checksums);
    }
}

fn exercise_record(record: &mut [u8], rng: &mut Rng) {
    if validate_record(record, Verify::Layout).is_ok() {
        let _ = slice_record(record, rng.next() % 4, 1 + rng.below(3) as u32);
        stamp_record(record, rng.next(), rng.next() >> 1, rng.next());
        let _ = slice_record(record, rng.next(), rng.below(4) as u32);
    }
}

#[test]
fn given_truncated_and_mutated_bodies_when_decoding_should_never_panic() {
    let mut rng = Rng(0x1991_0401);
    for (code, body) in seeds() {
        assert!(
            Request::decode(code, &body).is_ok(),
            "seed for {code:?} must be valid"
        );
        // Bodies ending in an options block or a batch may legally end early.
        let open_ended = matches!(
            code,
            CommandCode::SendMessages
                | CommandCode::CreateUser
                | CommandCode::UpdateUser
                | CommandCode::CreateTopic
        );
        for cut in 0..body.len() {
            let decoded = Request::decode(code, &body[..cut]);
            assert!(
                open_ended || decoded.is_err(),
                "{code:?} accepted a cut at {cut}"
            );
            decode_everything(code, &body[..cut]);
        }
        for _ in 0..300 {
            let mutated = rng.mutate(&body);
            let other = CommandCode::ALL[rng.below(CommandCode::ALL.len())];
            decode_everything(code, &mutated);
            decode_everything(other, &mutated);
        }
    }
}

#[test]
fn given_random_bytes_when_decoding_every_command_should_never_panic() {
    let mut rng = Rng(42);
    for &code in CommandCode::ALL {
        for _ in 0..150 {
            let len = rng.below(64);
            decode_everything(code, &rng.bytes(len));
        }
    }
}

#[test]
fn given_mutated_headers_when_decoding_should_never_panic() {
    let mut rng = Rng(7);
    let request = RequestHeader::for_command(CommandCode::CreateStream, 1, 2, 3, b"\x01s");
    let valid = [
        request.encode(),
        ReplyHeader::for_request(&request).encode(),
        eviction(&request, EvictionReason::IncompatibleProtocol),
    ];
    for _ in 0..3000 {
        let pick = rng.below(valid.len());
        let mut bytes = rng.mutate(&valid[pick]);
        bytes.truncate(rng.below(300));
        if let Ok(header) = RequestHeader::decode(&bytes) {
            let _ = header.validate(rng.below(600));
            let _ = crate::header::route(&header);
            let _ = header.checksum_matches(&bytes);
        }
        let _ = ReplyHeader::decode(&bytes);
        if let Ok(header) = EvictionHeader::decode(&bytes) {
            let _ = header.validate();
        }
        let _ = crate::header::frame_size(&bytes);
    }
}

#[test]
fn given_mutated_batch_records_when_validating_should_never_panic() {
    let mut rng = Rng(99);
    let record =
        crate::batch::build_record(1, &[(1, b"a", b""), (2, b"bb", b""), (3, b"ccc", b"")]);
    for _ in 0..2000 {
        let mut mutated = rng.mutate(&record);
        if rng.below(4) == 0 {
            mutated.truncate(rng.below(mutated.len() + 1));
        }
        let _ = validate_record(&mutated, Verify::Checksums);
        exercise_record(&mut mutated, &mut rng);
    }
}
