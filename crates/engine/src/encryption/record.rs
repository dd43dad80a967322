//! Sealing and opening the frames of one batch record. New batches are
//! sealed in the `ChecksumInside` layout ([`super::SealedLayout`]):
//!
//! ```text
//! sealed payload (n >= 1 plaintext bytes), n + 36 bytes:
//!    0    12  nonce       random, fresh for every field
//!   12   n+8  ciphertext  AES-256-GCM of the payload, then the producer's
//!                         frame checksum (u64 LE)
//!  20+n   16  tag         GCM authentication tag
//! sealed user headers (n >= 1; empty headers stay empty), n + 28 bytes:
//!    0    12  nonce
//!   12     n  ciphertext  AES-256-GCM of the user headers
//!  12+n   16  tag
//! additional data, 25 bytes: message header bytes 8..32 (id, offset_delta,
//!   timestamp_delta), then 0 for the payload or 1 for the user headers
//! ```
//!
//! The tag covers every byte the producer's checksum covers (the lengths
//! through the ciphertext's length), so the checksum opened with the payload
//! always matches the opened frame: a poll restores it without rehashing.
//! Sealing verifies each checksum in the same pass, before sealing it. A
//! payload moved to another message or swapped with its headers fails to
//! open. In the frame header the lengths are the sealed ones and the checksum
//! covers the sealed bytes, so storage verifies batches without the key.

use protocol::batch::{
    BATCH_HEADER_SIZE, BatchError, BatchHeader, Frame, Frames, MESSAGE_HEADER_SIZE, MSG_CHECKSUM,
    MSG_ID, MSG_PAYLOAD_LENGTH, MSG_USER_HEADERS_LENGTH, Verify, validate_record,
};
use protocol::checksum::xxh3_64;
use rand::RngCore;
use ring::aead::{Aad, LessSafeKey, Nonce};

use super::{KeyId, Keyring, SealMark, SealedLayout, record_original};

/// Bytes of a GCM nonce.
pub const NONCE_LEN: usize = 12;
/// Bytes of a GCM tag.
pub const TAG_LEN: usize = 16;
/// What sealing adds to a field.
pub const SEALED_OVERHEAD: usize = NONCE_LEN + TAG_LEN;
/// Bytes of the producer's frame checksum sealed after a payload.
pub const CHECKSUM_INSIDE_LEN: usize = 8;

const FIELD_PAYLOAD: u8 = 0;
const FIELD_USER_HEADERS: u8 = 1;
/// Message header bytes 8..32: id, offset_delta and timestamp_delta.
const AAD_HEADER_END: usize = MSG_USER_HEADERS_LENGTH;
const AAD_LEN: usize = AAD_HEADER_END - MSG_ID + 1;
const _: () = assert!(AAD_LEN == 25);

/// An opened record: its rewritten batch header and its plaintext frames.
pub type OpenedRecord = ([u8; BATCH_HEADER_SIZE], Vec<u8>);

/// Why a stored batch could not be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecryptError {
    #[error("batch header is unreadable: {0}")]
    Header(#[from] protocol::batch::BatchError),
    #[error("batch was encrypted under key id {key_id}, which is not configured")]
    UnknownKey { key_id: KeyId },
    #[error("batch was sealed in layout {layout}, which this server does not know")]
    UnknownLayout { layout: u32 },
    #[error("message frame {index} is not a sealed frame")]
    Malformed { index: u32 },
    #[error("message frame {index} failed authentication under key id {key_id}")]
    Authentication { index: u32, key_id: KeyId },
}

impl Keyring {
    /// Seals every frame of a producer record under the active key, into a
    /// new record of the sealed size (one copy of each field, sealed where
    /// it lands). The record's layout is checked first, and every frame
    /// checksum and the batch checksum as it goes: the sealed checksum is
    /// served back as it is. Server fields are carried over; the batch
    /// checksum is recomputed (stamping recomputes it again). A record
    /// already naming a key is refused.
    pub fn encrypt_record(&self, plain: &[u8]) -> Result<Vec<u8>, BatchError> {
        self.encrypt_record_with(plain, &mut rand::rng())
    }

    /// `encrypt_record` with the nonces drawn from `rng`.
    pub(super) fn encrypt_record_with(
        &self,
        plain: &[u8],
        rng: &mut impl RngCore,
    ) -> Result<Vec<u8>, BatchError> {
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
        let count = header.message_count as usize;
        let (mut plain_checksums, mut sealed_checksums) =
            (Vec::with_capacity(count), Vec::with_capacity(count));
        for (index, frame) in frames().enumerate() {
            // Hashed just before it is copied and sealed, while it is in cache.
            let checksum = xxh3_64(&frame.as_bytes()[MSG_ID..]);
            if checksum != frame.checksum() {
                let index = index as u32;
                return Err(BatchError::MessageChecksum { index });
            }
            plain_checksums.push(checksum);
            sealed_checksums.push(seal_frame(key, rng, &frame, &mut out));
        }
        if header.checksum_over(plain_checksums) != header.batch_checksum {
            return Err(BatchError::BatchChecksum);
        }
        assert_eq!(out.len(), BATCH_HEADER_SIZE + sealed_len, "sized exactly");
        let mut sealed = header;
        sealed.batch_length = out.len() as u64;
        sealed.key_id = SealMark {
            key_id: self.active,
            layout: SealedLayout::ChecksumInside,
        }
        .to_field();
        sealed.batch_checksum = sealed.checksum_over(sealed_checksums);
        sealed.write(&mut out);
        Ok(out)
    }

    /// Opens a stored record given as its (possibly rewritten) batch header
    /// and its frames, into a copy. `Ok(None)` for a plaintext batch, which
    /// is served as it is.
    pub fn decrypt_record(
        &self,
        header: &[u8; BATCH_HEADER_SIZE],
        frames: &[u8],
    ) -> Result<Option<OpenedRecord>, DecryptError> {
        if SealMark::from_field(BatchHeader::read(header)?.key_id)?.is_none() {
            return Ok(None);
        }
        let mut out = frames.to_vec();
        let (opened, len) = self.decrypt_record_in_place(header, &mut out)?;
        out.truncate(len);
        Ok(Some((opened, out)))
    }

    /// Opens a stored record where its frames lie, in whichever layout its
    /// header names: each field is decrypted toward the start of `frames`
    /// by what sealing added, so nothing is copied first. Returns the
    /// rewritten header and the length of the plaintext frames, which are
    /// `frames[..len]`. A plaintext record is left as it is. After an error
    /// `frames` holds no record and must be dropped.
    pub fn decrypt_record_in_place(
        &self,
        header: &[u8; BATCH_HEADER_SIZE],
        frames: &mut [u8],
    ) -> Result<([u8; BATCH_HEADER_SIZE], usize), DecryptError> {
        let parsed = BatchHeader::read(header)?;
        let Some(mark) = SealMark::from_field(parsed.key_id)? else {
            return Ok((*header, frames.len()));
        };
        let key = self.key(mark.key_id).ok_or(DecryptError::UnknownKey {
            key_id: mark.key_id,
        })?;
        let (len, checksums) = open_frames(key, mark, frames)?;
        assert!(len < frames.len(), "opening removes nonces and tags");
        let mut opened = parsed;
        opened.batch_length = (BATCH_HEADER_SIZE + len) as u64;
        opened.key_id = 0;
        opened.batch_checksum = opened.checksum_over(checksums);
        let mut out_header = [0u8; BATCH_HEADER_SIZE];
        opened.write(&mut out_header);
        Ok((out_header, len))
    }
}

/// Whether a stored batch header says its frames are plaintext (what a
/// server without a keyring can serve).
pub fn is_plaintext(header: &[u8; BATCH_HEADER_SIZE]) -> bool {
    BatchHeader::read(header).is_ok_and(|h| h.key_id == 0)
}

/// Whether opening a stored batch authenticates every frame byte its frame
/// checksums cover, so a read that hands it to the opener need not rehash
/// its frames (storage `Verify::BatchChecksum`): true in the
/// `ChecksumInside` layout, whose tags cover the fields and the additional
/// data the id and deltas (lengths and reserved bytes are checked by the
/// layout); the original layout leaves the deltas unauthenticated.
pub fn opening_authenticates(header: &BatchHeader) -> bool {
    matches!(
        SealMark::from_field(header.key_id),
        Ok(Some(SealMark {
            layout: SealedLayout::ChecksumInside,
            ..
        }))
    )
}

fn sealed_len(plain_len: usize) -> usize {
    if plain_len == 0 {
        0
    } else {
        plain_len + SEALED_OVERHEAD
    }
}

fn sealed_frame_len(frame: &Frame<'_>) -> usize {
    let payload = frame.payload().len() + CHECKSUM_INSIDE_LEN;
    MESSAGE_HEADER_SIZE + sealed_len(payload) + sealed_len(frame.user_headers().len())
}

/// The additional data of a field in either layout (the original one's is
/// shorter).
struct FieldAad {
    bytes: [u8; AAD_LEN],
    len: usize,
}

impl FieldAad {
    fn of(layout: SealedLayout, frame: &[u8], field: u8) -> Self {
        match layout {
            SealedLayout::ChecksumInside => Self {
                bytes: aad(frame, field),
                len: AAD_LEN,
            },
            SealedLayout::Original => {
                let original = record_original::aad(frame, field);
                let mut bytes = [0u8; AAD_LEN];
                bytes[..original.len()].copy_from_slice(&original);
                Self {
                    bytes,
                    len: original.len(),
                }
            }
        }
    }
}

impl AsRef<[u8]> for FieldAad {
    fn as_ref(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// The additional data of one field of the frame whose bytes are `frame`.
fn aad(frame: &[u8], field: u8) -> [u8; AAD_LEN] {
    let mut aad = [0u8; AAD_LEN];
    aad[..AAD_LEN - 1].copy_from_slice(&frame[MSG_ID..AAD_HEADER_END]);
    aad[AAD_LEN - 1] = field;
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
    let checksum = frame.checksum().to_le_bytes();
    let payload = [frame.payload(), &checksum[..]];
    let payload_len = seal_field(key, rng, aad(bytes, FIELD_PAYLOAD), &payload, out);
    let headers = [frame.user_headers()];
    let headers_len = seal_field(key, rng, aad(bytes, FIELD_USER_HEADERS), &headers, out);
    let header = &mut out[start..start + MESSAGE_HEADER_SIZE];
    put_u32(header, MSG_PAYLOAD_LENGTH, payload_len);
    put_u32(header, MSG_USER_HEADERS_LENGTH, headers_len);
    finish_frame(&mut out[start..])
}

/// Appends `[nonce][ciphertext][tag]` of the concatenated `parts`, or
/// nothing when they are empty; returns the sealed length.
fn seal_field(
    key: &LessSafeKey,
    rng: &mut impl RngCore,
    aad_bytes: [u8; AAD_LEN],
    parts: &[&[u8]],
    out: &mut Vec<u8>,
) -> u32 {
    let plain_len: usize = parts.iter().map(|p| p.len()).sum();
    if plain_len == 0 {
        return 0;
    }
    let mut nonce = [0u8; NONCE_LEN];
    rng.fill_bytes(&mut nonce);
    out.extend_from_slice(&nonce);
    let at = out.len();
    for part in parts {
        out.extend_from_slice(part);
    }
    let tag = key
        .seal_in_place_separate_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(aad_bytes),
            &mut out[at..],
        )
        .expect("a field under 64 MB is far below the GCM input limit");
    out.extend_from_slice(tag.as_ref());
    u32::try_from(plain_len + SEALED_OVERHEAD).expect("a frame field fits u32")
}

/// Opens every frame of `frames` where it lies, moving it toward the start
/// by what sealing added (`write` never passes `read`); returns the length
/// of the plaintext frames and their checksums.
fn open_frames(
    key: &LessSafeKey,
    mark: SealMark,
    frames: &mut [u8],
) -> Result<(usize, Vec<u64>), DecryptError> {
    let (mut read, mut write) = (0, 0);
    let mut checksums = Vec::new();
    while read < frames.len() {
        let index = checksums.len() as u32;
        let (payload_sealed, headers_sealed) = match Frames::new(&frames[read..]).next() {
            Some(Ok((_, frame))) => (frame.payload().len(), frame.user_headers().len()),
            _ => return Err(DecryptError::Malformed { index }),
        };
        frames.copy_within(read..read + MESSAGE_HEADER_SIZE, write);
        let header: [u8; MESSAGE_HEADER_SIZE] = frames[write..write + MESSAGE_HEADER_SIZE]
            .try_into()
            .expect("a whole message header");
        let aad = |field| FieldAad::of(mark.layout, &header, field);
        let fail = DecryptError::Authentication {
            index,
            key_id: mark.key_id,
        };
        let payload_at = (read + MESSAGE_HEADER_SIZE, write + MESSAGE_HEADER_SIZE);
        let payload_opened =
            open_field_within(key, aad(FIELD_PAYLOAD), frames, payload_at, payload_sealed)
                .ok_or(fail.clone())?;
        let (payload, checksum) = match mark.layout {
            SealedLayout::ChecksumInside => {
                let payload = payload_opened
                    .checked_sub(CHECKSUM_INSIDE_LEN)
                    .ok_or(DecryptError::Malformed { index })?;
                let at = payload_at.1 + payload;
                let bytes = frames[at..at + CHECKSUM_INSIDE_LEN]
                    .try_into()
                    .expect("8 bytes");
                (payload, Some(u64::from_le_bytes(bytes)))
            }
            SealedLayout::Original => (payload_opened, None),
        };
        // Authenticated, so an empty payload is a layout sealing never writes.
        if payload == 0 {
            return Err(DecryptError::Malformed { index });
        }
        let headers_at = (payload_at.0 + payload_sealed, payload_at.1 + payload);
        let headers = open_field_within(
            key,
            aad(FIELD_USER_HEADERS),
            frames,
            headers_at,
            headers_sealed,
        )
        .ok_or(fail)?;
        let end = headers_at.1 + headers;
        let frame = &mut frames[write..end];
        put_u32(frame, MSG_PAYLOAD_LENGTH, len_u32(payload));
        put_u32(frame, MSG_USER_HEADERS_LENGTH, len_u32(headers));
        let checksum = match checksum {
            Some(checksum) => {
                frame[MSG_CHECKSUM..MSG_CHECKSUM + 8].copy_from_slice(&checksum.to_le_bytes());
                debug_assert_eq!(xxh3_64(&frame[MSG_ID..]), checksum, "authenticated");
                checksum
            }
            None => finish_frame(frame),
        };
        checksums.push(checksum);
        (read, write) = (headers_at.0 + headers_sealed, end);
    }
    Ok((write, checksums))
}

/// Opens the sealed field at `frames[at.0..at.0 + sealed_len]` so that its
/// plaintext lands at `frames[at.1..]` (`at.1 <= at.0`); returns the
/// plaintext's length, `None` when it fails to open. An empty field stays
/// empty.
fn open_field_within(
    key: &LessSafeKey,
    aad_bytes: FieldAad,
    frames: &mut [u8],
    at: (usize, usize),
    sealed_len: usize,
) -> Option<usize> {
    let (from, to) = at;
    assert!(to <= from, "a field only moves toward the start");
    if sealed_len == 0 {
        return Some(0);
    }
    if sealed_len < SEALED_OVERHEAD {
        return None;
    }
    let nonce: [u8; NONCE_LEN] = frames[from..from + NONCE_LEN].try_into().expect("12 bytes");
    let sealed_from = from + NONCE_LEN - to;
    let opened = key
        .open_within(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(aad_bytes),
            &mut frames[to..from + sealed_len],
            sealed_from..,
        )
        .ok()?;
    Some(opened.len())
}

fn len_u32(len: usize) -> u32 {
    u32::try_from(len).expect("a frame field fits u32")
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
