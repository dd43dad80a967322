//! The replica frame codec's tests: golden bytes, round trips, bit flips,
//! truncations, out-of-range fields and a fuzz loop.
use super::*;
use crate::vsr::message::Request;

const MAX: usize = 1 << 20;
const CLUSTER_ID: u128 = 0x0f0e_0d0c_0b0a_0908_0706_0504_0302_0100;
const METADATA_GROUP: u64 = 1 << 63;

fn entry(op: u64, parent: u64, body: &[u8]) -> Entry {
    let request = Request {
        client: ClientId(0xc1 << 64 | 0xc2),
        number: RequestNumber(op + 100),
        body: body.to_vec().into(),
    };
    Entry::new(Op(op), View(2), parent, request, 1_000_000 + op)
}

fn frame(message: Message) -> Frame {
    Frame {
        cluster: CLUSTER_ID,
        from: 1,
        group: METADATA_GROUP,
        incarnation: 0,
        message,
    }
}

fn partition_frame(message: Message) -> Frame {
    Frame {
        group: (3 << 32) | (2 << 20) | 1,
        incarnation: 9,
        from: 2,
        ..frame(message)
    }
}

fn prepare() -> Frame {
    let message = Message::Prepare {
        view: View(3),
        commit: Op(4),
        entry: entry(5, 0xabcd, b"hi!"),
    };
    frame(message)
}

fn dvc() -> Frame {
    let first = entry(6, 0x66, b"six");
    let second = entry(7, first.identity, b"");
    frame(Message::DoViewChange {
        view: View(4),
        log_view: View(3),
        head: Op(7),
        commit: Op(5),
        entries: vec![second, first],
        uncertain: false,
    })
}

#[test]
fn given_an_entry_when_encoded_alone_should_decode_to_it_and_refuse_extra_bytes() {
    let one = entry(9, 0x99, b"nine");
    let mut bytes = Vec::new();
    encode_entry(&one, &mut bytes);
    assert_eq!(bytes.len(), ENTRY_RECORD_SIZE + 4);
    assert_eq!(decode_entry(&bytes), Ok(one));
    bytes.push(0);
    assert!(decode_entry(&bytes).is_err(), "a trailing byte");
    assert!(
        decode_entry(&bytes[..ENTRY_RECORD_SIZE]).is_err(),
        "a body cut short"
    );
}

#[test]
fn given_a_record_keeping_part_of_its_body_when_decoded_should_give_the_part_and_the_whole_length()
{
    let one = entry(9, 0x99, b"nine bytes");
    let mut bytes = Vec::new();
    encode_entry(&one, &mut bytes);
    let (whole, len) = decode_entry_prefix(&bytes).expect("a whole record");
    assert_eq!((whole, len), (one.clone(), 10));
    let (kept, len) = decode_entry_prefix(&bytes[..ENTRY_RECORD_SIZE + 4]).expect("a prefix");
    assert_eq!(len, 10);
    assert_eq!(&kept.body[..], b"nine");
    assert_eq!(
        (kept.op, kept.identity, kept.client, kept.timestamp_us),
        (one.op, one.identity, one.client, one.timestamp_us)
    );
    bytes.push(0);
    assert!(decode_entry_prefix(&bytes).is_err(), "a trailing byte");
    assert!(decode_entry_prefix(&bytes[..ENTRY_RECORD_SIZE - 1]).is_err());
}

/// One frame of every `Message` variant.
fn samples() -> Vec<Frame> {
    let view = View(3);
    let first = entry(6, 0x66, b"six");
    let second = entry(7, first.identity, b"seven");
    let partition = [
        Message::RepairPrepare {
            view,
            entry: entry(8, 0x77, b"eight"),
        },
        Message::PrepareOk {
            view,
            op: Op(5),
            identity: u64::MAX,
        },
        Message::Commit {
            view,
            commit: Op(4),
        },
        Message::StartViewChange { view: View(4) },
    ];
    let mut frames: Vec<Frame> = partition.into_iter().map(partition_frame).collect();
    frames.extend([prepare(), dvc()]);
    let metadata = [
        Message::StartView {
            view,
            head: Op(7),
            commit: Op(6),
            entries: vec![second, first.clone()],
            nonce: u64::MAX,
        },
        Message::RequestStartView {
            view,
            nonce: 42,
            blank: true,
        },
        Message::RequestStartView {
            view,
            nonce: 43,
            blank: false,
        },
        Message::ViewReport {
            view,
            nonce: 44,
            blank: true,
        },
        Message::RequestPrepares {
            view,
            from: Op(2),
            to: Op(9),
        },
        Message::RangeEvicted {
            view,
            oldest: Op(3),
        },
        Message::RequestStateTransfer { view },
        Message::StateTransferTarget {
            view,
            entry: first,
            clients: vec![
                (ClientId(1), RequestNumber(2), Op(3)),
                (ClientId(u128::MAX), RequestNumber(5), Op(6)),
            ],
            len: 1000,
            checksum: 0xfeed,
        },
        Message::RequestStateChunk {
            view,
            op: Op(6),
            offset: 512,
        },
        Message::StateChunk {
            view,
            op: Op(6),
            offset: 512,
            bytes: b"state".to_vec(),
        },
        Message::ForwardRequest {
            view,
            nonce: 71,
            body: b"register".to_vec(),
        },
        Message::ForwardReply {
            view,
            nonce: 71,
            op: Op(12),
            code: 58,
        },
        Message::LogFetch {
            view,
            nonce: 72,
            from: 1_000,
            until: 2_000,
            generation: 3,
        },
        Message::LogChunk {
            view,
            nonce: 72,
            first: 500,
            end: 1_200,
            records: b"batches".to_vec(),
        },
    ];
    frames.extend(metadata.into_iter().map(frame));
    frames
}

fn prepare_ok() -> Frame {
    partition_frame(Message::PrepareOk {
        view: View(3),
        op: Op(5),
        identity: 0x1122_3344_5566_7788,
    })
}

fn commit() -> Frame {
    partition_frame(Message::Commit {
        view: View(3),
        commit: Op(4),
    })
}

fn state_chunk() -> Frame {
    frame(Message::StateChunk {
        view: View(3),
        op: Op(6),
        offset: 512,
        bytes: b"state".to_vec(),
    })
}

/// Parses golden bytes written as `offset: hex words` lines, checking
/// each line's offset label.
fn golden(text: &str) -> Vec<u8> {
    let mut bytes = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (offset, hex) = line.split_once(':').expect("offset: bytes");
        assert_eq!(
            offset.parse::<usize>().expect("decimal offset"),
            bytes.len()
        );
        let digits: Vec<u8> = hex.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
        for pair in digits.chunks(2) {
            let pair = std::str::from_utf8(pair).expect("ascii");
            bytes.push(u8::from_str_radix(pair, 16).expect("hex byte"));
        }
    }
    bytes
}

fn assert_golden(frame: &Frame, text: &str) {
    let expected = golden(text);
    assert_eq!(encode(frame), expected);
    assert_eq!(decode(&expected, MAX).as_ref(), Ok(frame));
}

/// Recomputes `checksum_body` and the seal after a test edits a frame,
/// so decoding reaches the checks behind them.
fn reseal(bytes: &mut [u8]) {
    let body = match Command::carries_identity(bytes[COMMAND_OFFSET]) {
        // A prepare's checksum_body is its entry's identity.
        true => u128::from(u64::from_le_bytes(bytes[..8].try_into().expect("8"))),
        false => u128::from(xxh3_64(&bytes[HEADER_SIZE..])),
    };
    bytes[CHECKSUM_BODY..CHECKSUM_BODY + 16].copy_from_slice(&body.to_le_bytes());
    let seal = u128::from(xxh3_64(&bytes[SEALED_FROM..HEADER_SIZE]));
    let identity = u128::from(u64::from_le_bytes(bytes[..8].try_into().expect("8")));
    let checksum = match Command::carries_identity(bytes[COMMAND_OFFSET]) {
        true => seal << 64 | identity,
        false => seal,
    };
    bytes[..16].copy_from_slice(&checksum.to_le_bytes());
}

/// xorshift64*: a fixed, seedable stream for the fuzz loops.
struct Prng(u64);

impl Prng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}

#[test]
fn given_the_spec_table_when_pinning_command_numbers_should_match() {
    let numbers: Vec<u8> = Command::ALL.iter().map(|c| *c as u8).collect();
    assert_eq!(
        numbers,
        [
            6, 7, 9, 10, 11, 12, 17, 18, 19, 21, 22, 23, 24, 25, 30, 31, 32, 33
        ]
    );
    assert!((0..=255).filter_map(Command::from_u8).eq(Command::ALL));
}

#[test]
fn given_a_prepare_when_encoding_should_match_golden_bytes() {
    // checksum = identity (low) | seal (high); checksum_body = identity;
    // client@128 parent@144
    // op@176 commit@184 timestamp@192 request@200 group@216 view@236.
    assert_golden(
        &prepare(),
        "000: 86c0bbb683753a29 20502c68173f77ea 86c0bbb683753a29 0000000000000000
         032: 0001020304050607 08090a0b0c0d0e0f 0301000003000000 0000000006010000
         064: 0000000000000000 0000000000000000 0000000000000000 0000000000000000
         096: 0000000000000000 0000000000000000 0000000000000000 0000000000000000
         128: c200000000000000 c100000000000000 cdab000000000000 0000000000000000
         160: 0000000000000000 0000000000000000 0500000000000000 0400000000000000
         192: 45420f0000000000 6900000000000000 0000000000000000 0000000000000080
         224: 0000000000000000 0000000002000000 0000000000000000 0000000000000000
         256: 686921",
    );
}

#[test]
fn given_a_prepare_ok_when_encoding_should_match_golden_bytes() {
    // identity@144 op@160 group@200 incarnation@208; the empty body's
    // checksum is XXH3-64("") = 0x2d06800538d394c2.
    assert_golden(
        &prepare_ok(),
        "000: 552d475d14a6695b 0000000000000000 c294d3380580062d 0000000000000000
         032: 0001020304050607 08090a0b0c0d0e0f 0001000003000000 0000000007020000
         064: 0000000000000000 0000000000000000 0000000000000000 0000000000000000
         096: 0000000000000000 0000000000000000 0000000000000000 0000000000000000
         128: 0000000000000000 0000000000000000 8877665544332211 0000000000000000
         160: 0500000000000000 0000000000000000 0000000000000000 0000000000000000
         192: 0000000000000000 0100200003000000 0900000000000000 0000000000000000
         224: 0000000000000000 0000000000000000 0000000000000000 0000000000000000",
    );
}

#[test]
fn given_a_commit_when_encoding_should_match_golden_bytes() {
    // commit@152 group@168 incarnation@208.
    assert_golden(
        &commit(),
        "000: 8313bbede2304b40 0000000000000000 c294d3380580062d 0000000000000000
         032: 0001020304050607 08090a0b0c0d0e0f 0001000003000000 0000000009020000
         064: 0000000000000000 0000000000000000 0000000000000000 0000000000000000
         096: 0000000000000000 0000000000000000 0000000000000000 0000000000000000
         128: 0000000000000000 0000000000000000 0000000000000000 0400000000000000
         160: 0000000000000000 0100200003000000 0000000000000000 0000000000000000
         192: 0000000000000000 0000000000000000 0900000000000000 0000000000000000
         224: 0000000000000000 0000000000000000 0000000000000000 0000000000000000",
    );
}

#[test]
fn given_a_do_view_change_with_two_entries_when_encoding_should_match_golden_bytes() {
    // head@128 commit@136 group@144 log_view@152; body: op 7 (empty
    // body), then op 6 ("six"), each a 64-byte record then its body.
    assert_golden(
        &dvc(),
        "000: 8f8dff567f15be62 0000000000000000 b2ec2c82daa8bd7b 0000000000000000
         032: 0001020304050607 08090a0b0c0d0e0f 8301000004000000 000000000b010000
         064: 0000000000000000 0000000000000000 0000000000000000 0000000000000000
         096: 0000000000000000 0000000000000000 0000000000000000 0000000000000000
         128: 0700000000000000 0500000000000000 0000000000000080 0300000000000000
         160: 0000000000000000 0000000000000000 0000000000000000 0000000000000000
         192: 0000000000000000 0000000000000000 0000000000000000 0000000000000000
         224: 0000000000000000 0000000000000000 0000000000000000 0000000000000000
         256: 0700000000000000 0200000000000000 d783ec532a598c79 3d5b10190171dc6e
         288: c200000000000000 c100000000000000 6b00000000000000 47420f0000000000
         320: 0600000000000000 0200000003000000 6600000000000000 d783ec532a598c79
         352: c200000000000000 c100000000000000 6a00000000000000 46420f0000000000
         384: 736978",
    );
}

#[test]
fn given_a_state_chunk_when_encoding_should_match_golden_bytes() {
    // offset@144 group@152 artifact@160 (0) op@168; body = the bytes.
    assert_golden(
        &state_chunk(),
        "000: b98de18438258d72 0000000000000000 b42cf542a5f6de6d 0000000000000000
         032: 0001020304050607 08090a0b0c0d0e0f 0501000003000000 0000000019010000
         064: 0000000000000000 0000000000000000 0000000000000000 0000000000000000
         096: 0000000000000000 0000000000000000 0000000000000000 0000000000000000
         128: 0000000000000000 0000000000000000 0002000000000000 0000000000000080
         160: 0000000000000000 0600000000000000 0000000000000000 0000000000000000
         192: 0000000000000000 0000000000000000 0000000000000000 0000000000000000
         224: 0000000000000000 0000000000000000 0000000000000000 0000000000000000
         256: 7374617465",
    );
}

#[test]
fn given_every_variant_when_round_tripping_should_decode_the_same_frame() {
    let frames = samples();
    assert_eq!(frames.len(), 20, "every variant, RequestStartView twice");
    for frame in frames {
        let bytes = encode(&frame);
        assert_eq!(bytes[COMMAND_OFFSET], Command::of(&frame.message) as u8);
        assert_eq!(frame_size(&bytes[..HEADER_SIZE], MAX), Ok(bytes.len()));
        assert_eq!(decode(&bytes, MAX), Ok(frame));
    }
}

#[test]
fn given_a_sealed_frame_when_any_bit_flips_should_reject_it() {
    for frame in samples() {
        let bytes = encode(&frame);
        for bit in 0..bytes.len() * 8 {
            let mut flipped = bytes.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            match decode(&flipped, MAX) {
                Err(_) => {}
                // The seal leaves a prepare's identity out (spec §3);
                // a flipped identity no longer matches the entry's
                // content, and the replica drops such an entry.
                Ok(Frame {
                    message: Message::Prepare { entry, .. } | Message::RepairPrepare { entry, .. },
                    ..
                }) if bit < 64 => assert!(!entry.is_sound(), "bit {bit}"),
                // Nor does the body checksum cover a prepare's body: its
                // identity does, checked by the replica on receipt.
                Ok(Frame {
                    message: Message::Prepare { entry, .. } | Message::RepairPrepare { entry, .. },
                    ..
                }) if bit >= HEADER_SIZE * 8 => assert!(!entry.is_sound(), "bit {bit}"),
                Ok(other) => panic!("bit {bit} of {frame:?} accepted as {other:?}"),
            }
        }
    }
}

#[test]
fn given_a_truncated_or_extended_frame_when_decoding_should_reject_it() {
    for frame in samples() {
        let bytes = encode(&frame);
        for len in 0..bytes.len() {
            let error = decode(&bytes[..len], MAX).expect_err("a truncated frame");
            match len < HEADER_SIZE {
                true => assert_eq!(error, WireError::Short { len }),
                false => assert!(matches!(error, WireError::SizeMismatch { .. })),
            }
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(matches!(
            decode(&longer, MAX),
            Err(WireError::SizeMismatch { .. })
        ));
    }
}

#[test]
fn given_a_header_announcing_more_than_max_size_when_reading_should_reject_before_the_body() {
    let mut bytes = encode(&state_chunk());
    bytes.resize(HEADER_SIZE, 0);
    bytes[SIZE_OFFSET..SIZE_OFFSET + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    reseal(&mut bytes);
    let too_large = WireError::TooLarge {
        size: u32::MAX,
        max_size: MAX,
    };
    assert_eq!(frame_size(&bytes, MAX), Err(too_large.clone()));
    assert_eq!(decode(&bytes, MAX), Err(too_large));
    let whole = encode(&state_chunk());
    let limit = whole.len() - 1;
    assert!(matches!(
        decode(&whole, limit),
        Err(WireError::TooLarge { .. })
    ));
    assert!(decode(&whole, whole.len()).is_ok());
}

#[test]
fn given_a_size_below_the_header_when_reading_should_reject_it() {
    let mut bytes = encode(&commit());
    bytes[SIZE_OFFSET..SIZE_OFFSET + 4].copy_from_slice(&255u32.to_le_bytes());
    reseal(&mut bytes);
    assert_eq!(
        frame_size(&bytes, MAX),
        Err(WireError::SizeBelowHeader { size: 255 })
    );
}

#[test]
fn given_a_resealed_unknown_command_when_decoding_should_name_it() {
    for command in (0..=255).filter(|c| Command::from_u8(*c).is_none()) {
        let mut bytes = encode(&commit());
        bytes[COMMAND_OFFSET] = command;
        reseal(&mut bytes);
        assert_eq!(
            decode(&bytes, MAX),
            Err(WireError::UnknownCommand { command })
        );
    }
}

#[test]
fn given_a_u64_field_with_its_high_half_set_when_decoding_should_reject_it() {
    let mut bytes = encode(&prepare_ok());
    bytes[at::prepare_ok::IDENTITY + 8] = 1;
    reseal(&mut bytes);
    let error = decode(&bytes, MAX).expect_err("high half set");
    assert!(matches!(
        error,
        WireError::FieldOutOfRange {
            field: "prepare_checksum",
            ..
        }
    ));
    let mut bytes = encode(&prepare());
    bytes[at::prepare::PARENT + 15] = 0x80;
    reseal(&mut bytes);
    let error = decode(&bytes, MAX).expect_err("high half set");
    assert!(matches!(
        error,
        WireError::FieldOutOfRange {
            field: "parent",
            ..
        }
    ));
}

#[test]
fn given_an_unused_byte_set_when_decoding_should_reject_it_as_non_canonical() {
    for frame in samples() {
        let encoded = encode(&frame);
        // The release field, the prefix's reserved bytes, and byte 224
        // (Prepare's user_id, DoViewChange's nack bitset, unused by the
        // rest): zero in every command.
        for offset in [RELEASE, 62, 127, 224] {
            let mut bytes = encoded.clone();
            bytes[offset] = 1;
            reseal(&mut bytes);
            assert_eq!(decode(&bytes, MAX), Err(WireError::NonCanonical { offset }));
        }
    }
}

#[test]
fn given_flags_outside_their_range_when_decoding_should_reject_them() {
    let report = frame(Message::ViewReport {
        view: View(1),
        nonce: 5,
        blank: false,
    });
    let mut bytes = encode(&report);
    bytes[at::start_view::BLANK] = 2;
    reseal(&mut bytes);
    let error = decode(&bytes, MAX).expect_err("blank = 2");
    assert!(matches!(
        error,
        WireError::FieldOutOfRange { field: "blank", .. }
    ));
    let is_offer = |f: &Frame| matches!(f.message, Message::StateTransferTarget { .. });
    let offer = samples()
        .into_iter()
        .find(is_offer)
        .expect("a transfer target");
    let mut bytes = encode(&offer);
    bytes[at::transfer::AVAILABLE] = 0;
    reseal(&mut bytes);
    let error = decode(&bytes, MAX).expect_err("not available");
    assert!(matches!(
        error,
        WireError::FieldOutOfRange {
            field: "available",
            ..
        }
    ));
}

#[test]
fn given_more_entries_than_a_dvc_holds_when_decoding_should_reject_it() {
    let mut entries = vec![entry(1, 0, b"")];
    while entries.len() <= DVC_ENTRIES_MAX {
        let parent = entries.last().expect("non-empty").identity;
        entries.push(entry(entries.len() as u64 + 1, parent, b""));
    }
    // A StartView with nonce 0 has a DoViewChange's header but for the
    // command byte (log_view 0).
    let start_view = frame(Message::StartView {
        view: View(1),
        head: Op(129),
        commit: Op(1),
        entries,
        nonce: 0,
    });
    let mut bytes = encode(&start_view);
    bytes[COMMAND_OFFSET] = Command::DoViewChange as u8;
    reseal(&mut bytes);
    let error = WireError::TooManyEntries {
        count: DVC_ENTRIES_MAX + 1,
        max: DVC_ENTRIES_MAX,
    };
    assert_eq!(decode(&bytes, MAX), Err(error));
}

#[test]
fn given_malformed_bodies_when_decoding_should_reject_them() {
    let mut bytes = encode(&commit());
    bytes.push(0);
    bytes[SIZE_OFFSET..SIZE_OFFSET + 4].copy_from_slice(&257u32.to_le_bytes());
    reseal(&mut bytes);
    assert!(matches!(
        decode(&bytes, MAX),
        Err(WireError::MalformedBody { .. })
    ));
    // A record whose body length runs past the frame.
    let mut bytes = encode(&dvc());
    bytes[HEADER_SIZE + record::BODY_LEN] = 200;
    reseal(&mut bytes);
    assert!(matches!(
        decode(&bytes, MAX),
        Err(WireError::MalformedBody { .. })
    ));
    // A record at op 0.
    let mut bytes = encode(&dvc());
    bytes[HEADER_SIZE + record::OP] = 0;
    reseal(&mut bytes);
    let error = decode(&bytes, MAX).expect_err("op 0");
    assert!(matches!(
        error,
        WireError::FieldOutOfRange {
            field: "entry op",
            ..
        }
    ));
}

#[test]
fn given_a_frame_when_decoding_should_allocate_at_most_one_and_a_half_times_its_size() {
    // An `Entry` value (its body apart) fits in 1.5 records, a client
    // row in one: what decode's doc promises.
    assert!(size_of::<Entry>() <= ENTRY_RECORD_SIZE * 3 / 2);
    assert!(size_of::<(ClientId, RequestNumber, Op)>() <= CLIENT_RECORD_SIZE);
}

fn sparse_frame(prng: &mut Prng) -> Vec<u8> {
    let mut bytes = vec![0; HEADER_SIZE];
    bytes[COMMAND_OFFSET] = Command::ALL[prng.below(Command::ALL.len())] as u8;
    bytes[REPLICA] = prng.below(usize::from(REPLICAS_MAX)) as u8;
    for _ in 0..prng.below(8) {
        let at = 128 + prng.below(128);
        let value = [0, 1, prng.next() as u8][prng.below(3)];
        bytes[at] = value;
    }
    for _ in 0..prng.below(4) {
        let mut record = prng.bytes(ENTRY_RECORD_SIZE);
        let body_len = prng.below(20);
        // Now and then one byte longer than what follows.
        let claimed = (body_len + prng.below(2)) as u32;
        record[record::BODY_LEN..record::BODY_LEN + 4].copy_from_slice(&claimed.to_le_bytes());
        bytes.extend(record);
        bytes.extend(prng.bytes(body_len));
    }
    let trailing = prng.below(2) * prng.below(40);
    bytes.extend(prng.bytes(trailing));
    let size = bytes.len() as u32;
    bytes[SIZE_OFFSET..SIZE_OFFSET + 4].copy_from_slice(&size.to_le_bytes());
    reseal(&mut bytes);
    bytes
}

#[test]
fn given_random_bytes_when_decoding_should_never_panic() {
    let mut prng = Prng(0x5eed_0000_0000_0001);
    let samples: Vec<Vec<u8>> = samples().iter().map(encode).collect();
    for case in 0..6000 {
        let bytes = match case % 3 {
            // Plain noise: almost always a bad seal.
            0 => {
                let len = prng.below(600);
                prng.bytes(len)
            }
            // A sparse random header (a real command and sender, a few
            // random bytes past the prefix) over random entry records,
            // sized and sealed: reaches the field and body checks.
            1 => sparse_frame(&mut prng),
            // A real frame with a few bytes changed, resealed.
            _ => {
                let mut bytes = samples[prng.below(samples.len())].clone();
                for _ in 0..1 + prng.below(4) {
                    let at = prng.below(bytes.len());
                    bytes[at] = prng.next() as u8;
                }
                reseal(&mut bytes);
                bytes
            }
        };
        let _ = frame_size(&bytes, MAX);
        if let Ok(frame) = decode(&bytes, MAX) {
            // One encoding per frame: what decodes re-encodes exactly.
            assert_eq!(encode(&frame), bytes, "case {case}");
        }
    }
}

#[test]
fn given_a_log_chunk_when_encoding_should_match_golden_bytes() {
    // first@144 end@152 group@160 incarnation@208 nonce@240; body = records.
    let chunk = partition_frame(Message::LogChunk {
        view: View(3),
        nonce: 0x72,
        first: 500,
        end: 1_200,
        records: b"batches".to_vec(),
    });
    assert_golden(
        &chunk,
        "000: d4b86cfc22e3c335 0000000000000000 3d7ad24c73491804 0000000000000000
         032: 0001020304050607 08090a0b0c0d0e0f 0701000003000000 0000000021020000
         064: 0000000000000000 0000000000000000 0000000000000000 0000000000000000
         096: 0000000000000000 0000000000000000 0000000000000000 0000000000000000
         128: 0000000000000000 0000000000000000 f401000000000000 b004000000000000
         160: 0100200003000000 0000000000000000 0000000000000000 0000000000000000
         192: 0000000000000000 0000000000000000 0900000000000000 0000000000000000
         224: 0000000000000000 0000000000000000 7200000000000000 0000000000000000
         256: 62617463686573",
    );
}

#[test]
fn given_a_log_fetch_when_encoding_should_place_each_field_as_the_table_says() {
    let fetch = partition_frame(Message::LogFetch {
        view: View(0),
        nonce: 0x0a0b,
        from: 0x0102,
        until: 0x0304,
        generation: 0x0506,
    });
    let bytes = encode(&fetch);
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8"));
    assert_eq!(bytes[COMMAND_OFFSET], 32);
    assert_eq!(word(144), 0x0102, "from");
    assert_eq!(word(152), 0x0304, "until");
    assert_eq!(word(160), (3 << 32) | (2 << 20) | 1, "group");
    assert_eq!(word(168), 0x0506, "purge generation");
    assert_eq!(word(208), 9, "incarnation");
    assert_eq!(word(240), 0x0a0b, "nonce");
    assert_eq!(decode(&bytes, MAX).as_ref(), Ok(&fetch));
}
