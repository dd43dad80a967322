//! Golden bytes of the sealed layouts and of the key id field: the current
//! layout rebuilt from its description with ring directly, and a batch the
//! original layout's build sealed, which must keep opening.

use protocol::batch::{
    BATCH_HEADER_SIZE, BatchError, BatchHeader, Frames, MESSAGE_HEADER_SIZE, Verify, build_record,
    stamp_record, validate_record,
};
use protocol::checksum::xxh3_64;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};

use super::*;

const HEADERS: &[u8] = b"\x01\x00\x00\x00k\x02\x03\x00\x00\x00abc";

fn keyring() -> Keyring {
    Keyring::new(KeyId(1), &[(KeyId(1), EncryptionKey::new([7; KEY_LEN]))])
}

fn plain() -> Vec<u8> {
    let mut record = build_record(
        1_000,
        &[
            (1, b"secret payload one", b""),
            (2, b"secret payload two", HEADERS),
        ],
    );
    stamp_record(&mut record, 3, 40, 5_000);
    record
}

/// Nonces 0, 1, 2, ...: sealing becomes reproducible.
struct CountingRng(u8);

impl rand::RngCore for CountingRng {
    fn next_u32(&mut self) -> u32 {
        rand_core_u64(self) as u32
    }
    fn next_u64(&mut self) -> u64 {
        rand_core_u64(self)
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        for byte in dest {
            *byte = self.0;
            self.0 = self.0.wrapping_add(1);
        }
    }
}

fn rand_core_u64(rng: &mut CountingRng) -> u64 {
    let mut bytes = [0u8; 8];
    rand::RngCore::fill_bytes(rng, &mut bytes);
    u64::from_le_bytes(bytes)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&text[at..at + 2], 16).unwrap())
        .collect()
}

fn split(record: &[u8]) -> ([u8; BATCH_HEADER_SIZE], &[u8]) {
    (
        record[..BATCH_HEADER_SIZE].try_into().unwrap(),
        &record[BATCH_HEADER_SIZE..],
    )
}

fn open(record: &[u8]) -> Vec<u8> {
    let (header, frames) = split(record);
    let (header, frames) = keyring().decrypt_record(&header, frames).unwrap().unwrap();
    let mut opened = header.to_vec();
    opened.extend_from_slice(&frames);
    opened
}

/// The first frame's sealed payload as the module documentation describes
/// it, built with ring alone: nonce, then AES-256-GCM of the payload and the
/// producer's checksum under the additional data header[8..32] ++ 0.
#[test]
fn given_current_layout_should_seal_payload_and_checksum_under_the_documented_aad() {
    let plain = plain();
    let sealed = keyring()
        .encrypt_record_with(&plain, &mut CountingRng(0))
        .unwrap();
    let producer = Frames::new(&plain[BATCH_HEADER_SIZE..])
        .next()
        .unwrap()
        .unwrap()
        .1;
    let mut expected = producer.payload().to_vec();
    expected.extend_from_slice(&producer.checksum().to_le_bytes());
    let mut aad = producer.as_bytes()[8..32].to_vec();
    aad.push(0);
    let nonce: [u8; NONCE_LEN] = std::array::from_fn(|i| i as u8);
    let key = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &[7; KEY_LEN]).unwrap());
    let tag = key
        .seal_in_place_separate_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(&aad[..]),
            &mut expected,
        )
        .unwrap();
    let mut field = nonce.to_vec();
    field.extend_from_slice(&expected);
    field.extend_from_slice(tag.as_ref());
    let frame = Frames::new(&sealed[BATCH_HEADER_SIZE..])
        .next()
        .unwrap()
        .unwrap()
        .1;
    assert_eq!(frame.payload(), &field[..]);
    assert_eq!(frame.checksum(), xxh3_64(&frame.as_bytes()[8..]));
    assert_eq!(&frame.as_bytes()[8..32], &producer.as_bytes()[8..32]);
}

/// Pins the whole sealed record (nonces 0, 1, 2, ...): a change here is a
/// change of the on-disk format.
#[test]
fn given_fixed_nonces_when_sealing_should_match_golden_bytes() {
    let sealed = keyring()
        .encrypt_record_with(&plain(), &mut CountingRng(0))
        .unwrap();
    assert_eq!(&sealed[52..56], &[1, 0, 0, 1], "key 1, layout 1");
    assert_eq!(hex(&sealed), CURRENT_GOLDEN);
    validate_record(&sealed, Verify::Checksums).unwrap();
    assert_eq!(open(&sealed), plain());
}

/// A batch sealed by the build that wrote the original layout (key_id 1,
/// nonces random): stored data of that build stays readable.
#[test]
fn given_batch_sealed_in_the_original_layout_when_opening_should_restore_the_plaintext() {
    let sealed = unhex(ORIGINAL_GOLDEN);
    assert_eq!(BatchHeader::read(&sealed).unwrap().key_id, 1);
    validate_record(&sealed, Verify::Checksums).unwrap();
    assert_eq!(open(&sealed), plain());
    let mut forged = sealed.clone();
    let last = forged.len() - 1;
    forged[last] ^= 1;
    let (header, frames) = split(&forged);
    assert!(matches!(
        keyring().decrypt_record(&header, frames),
        Err(DecryptError::Authentication { index: 1, .. })
    ));
}

#[test]
fn given_seal_marks_when_encoding_should_match_golden_fields() {
    let mark = |key_id, layout| SealMark {
        key_id: KeyId(key_id),
        layout,
    };
    assert_eq!(mark(1, SealedLayout::Original).to_field(), 1);
    assert_eq!(
        mark(2, SealedLayout::ChecksumInside).to_field(),
        0x0100_0002
    );
    assert_eq!(
        SealMark::from_field(0x0100_0002),
        Ok(Some(mark(2, SealedLayout::ChecksumInside)))
    );
    assert_eq!(SealMark::from_field(0), Ok(None));
    assert_eq!(
        SealMark::from_field(0x0200_0001),
        Err(DecryptError::UnknownLayout { layout: 2 })
    );
    assert_eq!(
        SealMark::from_field(0x0100_0000),
        Err(DecryptError::UnknownKey { key_id: KeyId(0) })
    );
}

/// Sealing verifies what it seals: the checksum inside is served back
/// without rehashing.
#[test]
fn given_wrong_checksums_when_sealing_should_refuse() {
    let mut record = plain();
    record[BATCH_HEADER_SIZE + MESSAGE_HEADER_SIZE] ^= 1;
    assert_eq!(
        keyring().encrypt_record(&record),
        Err(BatchError::MessageChecksum { index: 0 })
    );
    let mut record = plain();
    record[24] ^= 1;
    assert_eq!(
        keyring().encrypt_record(&record),
        Err(BatchError::BatchChecksum)
    );
}

/// The additional data covers the deltas: a stored timestamp_delta changed
/// (and its frame checksum recomputed) fails to open.
#[test]
fn given_changed_timestamp_delta_when_opening_should_fail_authentication() {
    let mut sealed = keyring().encrypt_record(&plain()).unwrap();
    let frame = BATCH_HEADER_SIZE;
    sealed[frame + 28] ^= 1;
    let checksum = xxh3_64(&sealed[frame + 8..frame + 48 + 18 + 36]);
    sealed[frame..frame + 8].copy_from_slice(&checksum.to_le_bytes());
    let (header, frames) = split(&sealed);
    assert_eq!(
        keyring().decrypt_record(&header, frames),
        Err(DecryptError::Authentication {
            index: 0,
            key_id: KeyId(1)
        })
    );
}

const CURRENT_GOLDEN: &str = concat!(
    "030000000000000028000000000000008813000000000000e803000000000000f501000000000000",
    "fa32da983ef928f80200000001000001000000000000000000000000000000000000000000000000",
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "0000000000000000000000000000000073cd6a4a18e43b5d01000000000000000000000000000000",
    "000000000000000000000000360000000000000000000000000102030405060708090a0b6be48a02",
    "787df93916cb89f3833c4c958f592a183e0f89e7af1839c0408b3d8c43b69dc10763709954f9100d",
    "43f8cfc7bc5f02000000000000000000000000000000010000000000000029000000360000000000",
    "0000000000000c0d0e0f1011121314151617d2beb31d35446ae391d4eb6895fe966f062239a65f6b",
    "dbc89778f8e139e2b920020802b932164bdf619718191a1b1c1d1e1f2021222330483d0a1eeb9675",
    "c4e192096754756782d14e2f4d8c49d0ccc5a1cc5f",
);

const ORIGINAL_GOLDEN: &str = concat!(
    "030000000000000028000000000000008813000000000000e803000000000000e501000000000000",
    "18e16064bfc9f1680200000001000000000000000000000000000000000000000000000000000000",
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "000000000000000000000000000000004b3972a1e2a2921601000000000000000000000000000000",
    "0000000000000000000000002e00000000000000000000001ad175acef0e874f6aaecda04ed31076",
    "95f2aa47553fcf5686f829514a4c14011bb45fd24e6a94b541a53413c183512469884eb240e50200",
    "00000000000000000000000000000100000000000000290000002e00000000000000000000008818",
    "6f1dc177fb3897a6d0a6a8f85288cb566726848d53e1c7c88a785f80cda1244f1537c1068064d743",
    "531569f82554317c7c5d0f1746f8cb19a8585093a2303eb0ded02f3366529e7c895e4df91dea232b",
    "5b5aad9f38",
);
