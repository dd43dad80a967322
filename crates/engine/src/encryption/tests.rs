use protocol::batch::{
    BATCH_HEADER_SIZE, BatchHeader, Frames, MESSAGE_HEADER_SIZE, Verify, build_record,
    stamp_record, validate_record,
};

use super::key_check::{
    Admitted, CHECK_LEN, ConfiguredKeys, KeyCheckEntry, KeyCheckFile, KeyCheckFileError, Refusal,
    admit,
};
use super::*;

const HEADERS: &[u8] = b"\x01\x00\x00\x00k\x02\x03\x00\x00\x00abc";

fn key(byte: u8) -> EncryptionKey {
    EncryptionKey::new([byte; KEY_LEN])
}

fn keyring(byte: u8) -> Keyring {
    Keyring::new(KeyId(1), &[(KeyId(1), key(byte))])
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

fn split(record: &[u8]) -> ([u8; BATCH_HEADER_SIZE], &[u8]) {
    let header = record[..BATCH_HEADER_SIZE].try_into().unwrap();
    (header, &record[BATCH_HEADER_SIZE..])
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn given_record_when_sealing_and_opening_should_restore_the_plaintext_bytes() {
    let ring = keyring(7);
    let mut sealed = ring.encrypt_record(&plain()).unwrap();
    let header = stamp_record(&mut sealed, 3, 40, 5_000);
    let mark = SealMark::from_field(header.key_id).unwrap().unwrap();
    assert_eq!(mark.key_id, KeyId(1));
    validate_record(&sealed, Verify::Checksums).expect("sealed record is a valid record");
    let (h, frames) = split(&sealed);
    let (out_header, out_frames) = ring.decrypt_record(&h, frames).unwrap().unwrap();
    let mut opened = out_header.to_vec();
    opened.extend_from_slice(&out_frames);
    assert_eq!(opened, plain());
}

/// Opening where the frames lie gives the producer's record, as opening
/// into a copy does; a plaintext record is left as it is.
#[test]
fn given_record_when_opening_in_place_should_restore_the_plaintext_bytes() {
    let ring = keyring(7);
    let mut sealed = ring.encrypt_record(&plain()).unwrap();
    stamp_record(&mut sealed, 3, 40, 5_000);
    let (h, _) = split(&sealed);
    let mut frames = sealed[BATCH_HEADER_SIZE..].to_vec();
    let (header, len) = ring.decrypt_record_in_place(&h, &mut frames).unwrap();
    let mut opened = header.to_vec();
    opened.extend_from_slice(&frames[..len]);
    assert_eq!(opened, plain());
    let record = plain();
    let mut frames = record[BATCH_HEADER_SIZE..].to_vec();
    let (h, _) = split(&record);
    assert_eq!(
        ring.decrypt_record_in_place(&h, &mut frames),
        Ok((h, frames.len()))
    );
    assert_eq!(frames, &record[BATCH_HEADER_SIZE..]);
}

#[test]
fn given_sealed_record_should_hold_no_plaintext_and_sealed_lengths() {
    let sealed = keyring(7).encrypt_record(&plain()).unwrap();
    assert!(!contains(&sealed, b"secret payload"));
    assert!(!contains(&sealed, b"abc"));
    let frames: Vec<_> = Frames::new(&sealed[BATCH_HEADER_SIZE..])
        .map(|f| f.unwrap().1)
        .collect();
    assert_eq!(
        frames[0].payload().len(),
        18 + CHECKSUM_INSIDE_LEN + SEALED_OVERHEAD
    );
    assert_eq!(
        frames[0].user_headers().len(),
        0,
        "empty headers stay empty"
    );
    assert_eq!(
        frames[1].user_headers().len(),
        HEADERS.len() + SEALED_OVERHEAD
    );
    assert_eq!(
        sealed.len(),
        plain().len() + 3 * SEALED_OVERHEAD + 2 * CHECKSUM_INSIDE_LEN,
        "28 bytes per sealed field, and a checksum inside each payload"
    );
    assert_ne!(
        frames[0].payload()[..NONCE_LEN],
        frames[1].payload()[..NONCE_LEN],
        "a fresh nonce per field"
    );
}

#[test]
fn given_another_key_when_opening_should_fail_authentication() {
    let sealed = keyring(7).encrypt_record(&plain()).unwrap();
    let (h, frames) = split(&sealed);
    assert_eq!(
        keyring(8).decrypt_record(&h, frames),
        Err(DecryptError::Authentication {
            index: 0,
            key_id: KeyId(1)
        })
    );
}

#[test]
fn given_unknown_key_id_when_opening_should_name_it() {
    let sealed = Keyring::new(KeyId(2), &[(KeyId(2), key(7))])
        .encrypt_record(&plain())
        .unwrap();
    let (h, frames) = split(&sealed);
    assert_eq!(
        keyring(7).decrypt_record(&h, frames),
        Err(DecryptError::UnknownKey { key_id: KeyId(2) })
    );
}

#[test]
fn given_payloads_swapped_between_messages_when_opening_should_fail() {
    let ring = keyring(7);
    let record = build_record(0, &[(1, b"aaaa", b""), (2, b"bbbb", b"")]);
    let mut sealed = ring.encrypt_record(&record).unwrap();
    let field_len = 4 + CHECKSUM_INSIDE_LEN + SEALED_OVERHEAD;
    let first = BATCH_HEADER_SIZE + MESSAGE_HEADER_SIZE;
    let second = first + MESSAGE_HEADER_SIZE + field_len;
    let a = sealed[first..first + field_len].to_vec();
    let b = sealed[second..second + field_len].to_vec();
    sealed[first..first + a.len()].copy_from_slice(&b);
    sealed[second..second + b.len()].copy_from_slice(&a);
    let (h, frames) = split(&sealed);
    assert!(matches!(
        ring.decrypt_record(&h, frames),
        Err(DecryptError::Authentication { index: 0, .. })
    ));
}

#[test]
fn given_record_naming_a_key_when_sealing_should_refuse() {
    let ring = keyring(7);
    let sealed = ring.encrypt_record(&plain()).unwrap();
    assert_eq!(
        ring.encrypt_record(&sealed),
        Err(protocol::batch::BatchError::KeyIdNotZero { found: 0x0100_0001 })
    );
    assert!(ring.encrypt_record(&plain()[..300]).is_err());
}

#[test]
fn given_plaintext_batch_when_opening_should_pass_it_through() {
    let record = plain();
    let (h, frames) = split(&record);
    assert!(is_plaintext(&h));
    assert_eq!(keyring(7).decrypt_record(&h, frames), Ok(None));
}

#[test]
fn given_rotated_keyring_should_open_batches_of_either_key() {
    let old = keyring(7).encrypt_record(&plain()).unwrap();
    let both = Keyring::new(KeyId(2), &[(KeyId(1), key(7)), (KeyId(2), key(9))]);
    let new = both.encrypt_record(&plain()).unwrap();
    let mark = SealMark::from_field(BatchHeader::read(&new).unwrap().key_id);
    assert_eq!(mark.unwrap().unwrap().key_id, KeyId(2));
    for sealed in [old, new] {
        let (h, frames) = split(&sealed);
        assert!(both.decrypt_record(&h, frames).unwrap().is_some());
    }
}

#[test]
fn given_key_when_debugging_should_show_nothing_of_it() {
    assert_eq!(format!("{:?}", key(0xAB)), "EncryptionKey(******)");
    assert!(!format!("{:?}", keyring(0xAB)).contains("171"));
}

/// Pins the check derivation: changing it would refuse every existing
/// encrypted data directory.
#[test]
fn given_fixed_key_when_checking_should_match_golden_value() {
    let check = key(0).check();
    assert_eq!(
        hex(&check),
        "e11b76c302fd63dc3bd6385f3e84b92858dee3a4c0636011b0f9b4c4d4284193"
    );
    assert_ne!(check, key(1).check());
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn encode_entries(entries: &[(u32, u8)]) -> Vec<u8> {
    let mut out = b"IGGYKEYS".to_vec();
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    for (id, byte) in entries {
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&[*byte; CHECK_LEN]);
    }
    let checksum = protocol::checksum::xxh3_64(&out);
    out.extend_from_slice(&checksum.to_le_bytes());
    out
}

#[test]
fn given_key_check_file_when_encoding_should_match_golden_bytes() {
    let bytes = encode_entries(&[(1, 0x11), (3, 0x33)]);
    assert_eq!(bytes.len(), 16 + 2 * 40 + 8);
    assert_eq!(
        hex(&bytes[..24]),
        "494747594b4559530100020000000000\
         0100000000000000"
    );
    let file = KeyCheckFile::decode(&bytes).unwrap();
    assert_eq!(
        file.entries()[1],
        KeyCheckEntry {
            id: KeyId(3),
            check: [0x33; CHECK_LEN]
        }
    );
    assert_eq!(file.encode(), bytes);
}

#[test]
fn given_damaged_key_check_file_when_decoding_should_refuse() {
    let bytes = encode_entries(&[(1, 0x11)]);
    let mut flipped = bytes.clone();
    flipped[30] ^= 1;
    assert_eq!(
        KeyCheckFile::decode(&flipped),
        Err(KeyCheckFileError::Checksum)
    );
    assert!(matches!(
        KeyCheckFile::decode(&bytes[..bytes.len() - 1]),
        Err(KeyCheckFileError::Length { .. })
    ));
    assert_eq!(
        KeyCheckFile::decode(&encode_entries(&[(2, 1), (2, 2)])),
        Err(KeyCheckFileError::Entries)
    );
    assert_eq!(
        KeyCheckFile::decode(&encode_entries(&[(0, 1)])),
        Err(KeyCheckFileError::Entries)
    );
}

/// A batch header holds a key id in 24 bits (`SealMark`): the file never
/// records a larger one, and a directory at the largest takes no new key.
#[test]
fn given_key_id_beyond_24_bits_should_be_refused() {
    assert_eq!(
        KeyCheckFile::decode(&encode_entries(&[(1, 1), (0x0100_0000, 2)])),
        Err(KeyCheckFileError::Entries)
    );
    let full = recorded(&[(KeyId::MAX.0, 7)]);
    assert!(matches!(
        admit(Some(&full), Some(&configured(9, &[7]))),
        Err(Refusal::TooManyKeys)
    ));
}

fn configured(current: u8, previous: &[u8]) -> ConfiguredKeys {
    ConfiguredKeys {
        current: key(current),
        previous: previous.iter().map(|b| key(*b)).collect(),
    }
}

fn recorded(keys: &[(u32, u8)]) -> KeyCheckFile {
    let mut bytes = b"IGGYKEYS".to_vec();
    bytes.extend_from_slice(&1u16.to_le_bytes());
    bytes.extend_from_slice(&(keys.len() as u16).to_le_bytes());
    bytes.extend_from_slice(&[0; 4]);
    for (id, byte) in keys {
        bytes.extend_from_slice(&id.to_le_bytes());
        bytes.extend_from_slice(&[0; 4]);
        bytes.extend_from_slice(&key(*byte).check());
    }
    let checksum = protocol::checksum::xxh3_64(&bytes);
    bytes.extend_from_slice(&checksum.to_le_bytes());
    KeyCheckFile::decode(&bytes).unwrap()
}

#[test]
fn given_no_record_when_first_enabling_should_record_key_one() {
    let Ok(Admitted::Encrypted { keyring, record }) = admit(None, Some(&configured(7, &[]))) else {
        panic!("first use is admitted");
    };
    assert_eq!(keyring.active(), KeyId(1));
    assert_eq!(record.unwrap(), recorded(&[(1, 7)]));
}

#[test]
fn given_recorded_key_when_starting_with_it_should_write_nothing() {
    let file = recorded(&[(1, 7)]);
    let admitted = admit(Some(&file), Some(&configured(7, &[])));
    assert!(matches!(
        admitted,
        Ok(Admitted::Encrypted { record: None, .. })
    ));
}

#[test]
fn given_recorded_key_when_starting_with_another_should_refuse() {
    let file = recorded(&[(1, 7)]);
    assert_eq!(
        admit(Some(&file), Some(&configured(8, &[]))).unwrap_err(),
        Refusal::KeyMismatch {
            unmatched: vec![KeyId(1)]
        }
    );
}

#[test]
fn given_recorded_key_when_disabled_should_refuse() {
    let file = recorded(&[(1, 7)]);
    assert_eq!(
        admit(Some(&file), None).unwrap_err(),
        Refusal::DisabledOverEncryptedData {
            ids: vec![KeyId(1)]
        }
    );
    assert!(matches!(admit(None, None), Ok(Admitted::Plaintext)));
}

#[test]
fn given_new_key_with_old_as_previous_when_starting_should_rotate() {
    let file = recorded(&[(1, 7)]);
    let Ok(Admitted::Encrypted { keyring, record }) =
        admit(Some(&file), Some(&configured(9, &[7])))
    else {
        panic!("rotation is admitted");
    };
    assert_eq!(keyring.active(), KeyId(2));
    assert_eq!(keyring.ids().collect::<Vec<_>>(), [KeyId(1), KeyId(2)]);
    assert_eq!(record.unwrap(), recorded(&[(1, 7), (2, 9)]));
}

#[test]
fn given_rotated_directory_when_dropping_an_old_key_should_refuse() {
    let file = recorded(&[(1, 7), (2, 9)]);
    assert_eq!(
        admit(Some(&file), Some(&configured(9, &[]))).unwrap_err(),
        Refusal::KeyMismatch {
            unmatched: vec![KeyId(1)]
        }
    );
}

#[test]
fn given_unrecorded_previous_key_should_refuse() {
    let file = recorded(&[(1, 7)]);
    assert_eq!(
        admit(Some(&file), Some(&configured(7, &[5]))).unwrap_err(),
        Refusal::UnknownPreviousKey { index: 0 }
    );
    assert_eq!(
        admit(None, Some(&configured(7, &[7]))).unwrap_err(),
        Refusal::DuplicateKey
    );
}

#[test]
fn given_old_key_back_as_current_should_seal_under_its_id() {
    let file = recorded(&[(1, 7), (2, 9)]);
    let Ok(Admitted::Encrypted { keyring, record }) =
        admit(Some(&file), Some(&configured(7, &[9])))
    else {
        panic!("admitted");
    };
    assert_eq!(keyring.active(), KeyId(1));
    assert!(record.is_none());
}
