//! Sealing and opening the frames of one batch record.
//!
//! A sealed field (a payload, or a non-empty user-headers block) is stored as
//!
//! ```text
//!   0  12  nonce       random, fresh for every field
//!  12   n  ciphertext  AES-256-GCM of the n plaintext bytes
//! 12+n 16  tag         GCM authentication tag
//! ```
//!
//! so a sealed field is [`SEALED_OVERHEAD`] (28) bytes longer than its
//! plaintext; empty user headers stay empty. The additional authenticated
//! data is the message id (u128 LE) followed by one byte naming the field
//! (0 payload, 1 user headers): a sealed payload moved to another message or
//! swapped with its headers fails to open. In the frame header the lengths
//! are the sealed ones and the checksum covers the sealed bytes, so storage
//! verifies stored batches without the key. The batch header carries the
//! key's id in `key_id` (protocol `batch`), covered by the batch checksum.
//!
//! Opening restores exactly what the producer sent: plaintext lengths, the
//! frame checksum over the plaintext, `key_id` 0 and the batch checksum of
//! the plaintext frames.

use protocol::batch::{
    BATCH_HEADER_SIZE, BatchError, BatchHeader, Frame, Frames, MESSAGE_HEADER_SIZE, MSG_CHECKSUM,
    MSG_ID, MSG_PAYLOAD_LENGTH, MSG_USER_HEADERS_LENGTH, Verify, validate_record,
};
use protocol::checksum::xxh3_64;
use rand::RngCore;
use ring::aead::{Aad, LessSafeKey, Nonce};

use super::{KeyId, Keyring};

/// Bytes of a GCM nonce.
pub const NONCE_LEN: usize = 12;
/// Bytes of a GCM tag.
pub const TAG_LEN: usize = 16;
/// What sealing adds to a field.
pub const SEALED_OVERHEAD: usize = NONCE_LEN + TAG_LEN;

const FIELD_PAYLOAD: u8 = 0;
const FIELD_USER_HEADERS: u8 = 1;

/// An opened record: its rewritten batch header and its plaintext frames.
pub type OpenedRecord = ([u8; BATCH_HEADER_SIZE], Vec<u8>);

/// Why a stored batch could not be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecryptError {
    #[error("batch header is unreadable: {0}")]
    Header(#[from] protocol::batch::BatchError),
    #[error("batch was encrypted under key id {key_id}, which is not configured")]
    UnknownKey { key_id: KeyId },
    #[error("message frame {index} is not a sealed frame")]
    Malformed { index: u32 },
    #[error("message frame {index} failed authentication under key id {key_id}")]
    Authentication { index: u32, key_id: KeyId },
}

impl Keyring {
    /// Seals every frame of a producer record under the active key, into a
    /// new record of the sealed size (one copy of each field, sealed where
    /// it lands). Server fields are carried over; the batch checksum is
    /// recomputed (stamping recomputes it again). The record's layout is
    /// checked first; a record already naming a key is refused.
    pub fn encrypt_record(&self, plain: &[u8]) -> Result<Vec<u8>, BatchError> {
        let header = validate_record(plain, Verify::Layout)?;
        if header.key_id != 0 {
            return Err(BatchError::KeyIdNotZero {
                found: header.key_id,
            });
        }
        let key = self
            .key(self.active)
            .expect("the active key is in the keyring");
        let frames = || Frames::new(&plain[BATCH_HEADER_SIZE..]).map(|f| f.expect("validated").1);
        let sealed_len: usize = frames().map(|f| sealed_frame_len(&f)).sum();
        let mut out = Vec::with_capacity(BATCH_HEADER_SIZE + sealed_len);
        out.extend_from_slice(&plain[..BATCH_HEADER_SIZE]);
        let mut checksums = Vec::with_capacity(header.message_count as usize);
        let mut rng = rand::rng();
        for frame in frames() {
            checksums.push(seal_frame(key, &mut rng, &frame, &mut out));
        }
        assert_eq!(out.len(), BATCH_HEADER_SIZE + sealed_len, "sized exactly");
        let mut sealed = header;
        sealed.batch_length = out.len() as u64;
        sealed.key_id = self.active.0;
        sealed.batch_checksum = sealed.checksum_over(checksums);
        sealed.write(&mut out);
        Ok(out)
    }

    /// Opens a stored record given as its (possibly rewritten) batch header
    /// and its frames. `Ok(None)` for a plaintext batch, which is served as
    /// it is.
    pub fn decrypt_record(
        &self,
        header: &[u8; BATCH_HEADER_SIZE],
        frames: &[u8],
    ) -> Result<Option<OpenedRecord>, DecryptError> {
        let parsed = BatchHeader::read(header)?;
        let key_id = KeyId(parsed.key_id);
        if key_id == KeyId::PLAINTEXT {
            return Ok(None);
        }
        let key = self
            .key(key_id)
            .ok_or(DecryptError::UnknownKey { key_id })?;
        let (out, checksums) = open_frames(key, key_id, frames)?;
        let mut opened = parsed;
        opened.batch_length = (BATCH_HEADER_SIZE + out.len()) as u64;
        opened.key_id = 0;
        opened.batch_checksum = opened.checksum_over(checksums);
        let mut out_header = [0u8; BATCH_HEADER_SIZE];
        opened.write(&mut out_header);
        Ok(Some((out_header, out)))
    }
}

/// Whether a stored batch header says its frames are plaintext (what a
/// server without a keyring can serve).
pub fn is_plaintext(header: &[u8; BATCH_HEADER_SIZE]) -> bool {
    BatchHeader::read(header).is_ok_and(|h| h.key_id == 0)
}

fn sealed_len(plain_len: usize) -> usize {
    if plain_len == 0 {
        0
    } else {
        plain_len + SEALED_OVERHEAD
    }
}

fn sealed_frame_len(frame: &Frame<'_>) -> usize {
    MESSAGE_HEADER_SIZE + sealed_len(frame.payload().len()) + sealed_len(frame.user_headers().len())
}

fn aad(id: &[u8], field: u8) -> [u8; 17] {
    let mut aad = [0u8; 17];
    aad[..16].copy_from_slice(id);
    aad[16] = field;
    aad
}

/// Appends one sealed frame to `out`; returns its checksum.
fn seal_frame(
    key: &LessSafeKey,
    rng: &mut impl RngCore,
    frame: &Frame<'_>,
    out: &mut Vec<u8>,
) -> u64 {
    let start = out.len();
    let bytes = frame.as_bytes();
    out.extend_from_slice(&bytes[..MESSAGE_HEADER_SIZE]);
    let id = &bytes[MSG_ID..MSG_ID + 16];
    let payload_len = seal_field(key, rng, aad(id, FIELD_PAYLOAD), frame.payload(), out);
    let headers_len = seal_field(
        key,
        rng,
        aad(id, FIELD_USER_HEADERS),
        frame.user_headers(),
        out,
    );
    let header = &mut out[start..start + MESSAGE_HEADER_SIZE];
    put_u32(header, MSG_PAYLOAD_LENGTH, payload_len);
    put_u32(header, MSG_USER_HEADERS_LENGTH, headers_len);
    finish_frame(&mut out[start..])
}

/// Appends `[nonce][ciphertext][tag]` for a non-empty field; returns the
/// sealed length.
fn seal_field(
    key: &LessSafeKey,
    rng: &mut impl RngCore,
    aad_bytes: [u8; 17],
    plain: &[u8],
    out: &mut Vec<u8>,
) -> u32 {
    if plain.is_empty() {
        return 0;
    }
    let mut nonce = [0u8; NONCE_LEN];
    rng.fill_bytes(&mut nonce);
    out.extend_from_slice(&nonce);
    let at = out.len();
    out.extend_from_slice(plain);
    let tag = key
        .seal_in_place_separate_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(aad_bytes),
            &mut out[at..],
        )
        .expect("a field under 64 MB is far below the GCM input limit");
    out.extend_from_slice(tag.as_ref());
    u32::try_from(plain.len() + SEALED_OVERHEAD).expect("a frame field fits u32")
}

/// Copies and opens every frame; returns the plaintext frames and their
/// checksums.
fn open_frames(
    key: &LessSafeKey,
    key_id: KeyId,
    frames: &[u8],
) -> Result<(Vec<u8>, Vec<u64>), DecryptError> {
    let mut out = Vec::with_capacity(frames.len());
    let mut checksums = Vec::new();
    for (index, item) in Frames::new(frames).enumerate() {
        let index = index as u32;
        let (_, frame) = item.map_err(|_| DecryptError::Malformed { index })?;
        let start = out.len();
        out.extend_from_slice(&frame.as_bytes()[..MESSAGE_HEADER_SIZE]);
        let id = &frame.as_bytes()[MSG_ID..MSG_ID + 16];
        let fail = DecryptError::Authentication { index, key_id };
        let payload = open_field(key, aad(id, FIELD_PAYLOAD), frame.payload(), &mut out)
            .ok_or(fail.clone())?;
        let headers = open_field(
            key,
            aad(id, FIELD_USER_HEADERS),
            frame.user_headers(),
            &mut out,
        )
        .ok_or(fail)?;
        if payload == 0 {
            return Err(DecryptError::Malformed { index });
        }
        let header = &mut out[start..start + MESSAGE_HEADER_SIZE];
        put_u32(header, MSG_PAYLOAD_LENGTH, payload);
        put_u32(header, MSG_USER_HEADERS_LENGTH, headers);
        checksums.push(finish_frame(&mut out[start..]));
    }
    Ok((out, checksums))
}

/// Appends the plaintext of a sealed field (copied, then opened where it
/// lies); returns its length, `None` when it fails to open. An empty field
/// stays empty.
fn open_field(
    key: &LessSafeKey,
    aad_bytes: [u8; 17],
    sealed: &[u8],
    out: &mut Vec<u8>,
) -> Option<u32> {
    if sealed.is_empty() {
        return Some(0);
    }
    if sealed.len() < SEALED_OVERHEAD {
        return None;
    }
    let nonce: [u8; NONCE_LEN] = sealed[..NONCE_LEN].try_into().expect("12 bytes");
    let at = out.len();
    out.extend_from_slice(&sealed[NONCE_LEN..]);
    let opened = key
        .open_in_place(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(aad_bytes),
            &mut out[at..],
        )
        .ok()?
        .len();
    out.truncate(at + opened);
    u32::try_from(opened).ok()
}

/// Writes the checksum of a complete frame (header then fields) and
/// returns it.
fn finish_frame(frame: &mut [u8]) -> u64 {
    let checksum = xxh3_64(&frame[MSG_ID..]);
    frame[MSG_CHECKSUM..MSG_CHECKSUM + 8].copy_from_slice(&checksum.to_le_bytes());
    checksum
}

fn put_u32(bytes: &mut [u8], at: usize, value: u32) {
    bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
}
