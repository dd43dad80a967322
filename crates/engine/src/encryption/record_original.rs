//! Opening batches sealed in issue 21's first layout
//! (`SealedLayout::Original`), which this server still reads and no longer
//! writes:
//!
//! ```text
//! sealed field (payload, or non-empty user headers; n plaintext bytes):
//!    0   12  nonce       random, fresh for every field
//!   12    n  ciphertext  AES-256-GCM of the field
//!  12+n  16  tag
//! additional data, 17 bytes: message id (u128 LE), then 0 for the payload
//!   or 1 for the user headers
//! ```
//!
//! Nothing of the producer's checksum is sealed, so opening rehashes each
//! restored frame.

use protocol::batch::MSG_USER_HEADERS_LENGTH;
use protocol::batch::{Frames, MESSAGE_HEADER_SIZE, MSG_ID, MSG_PAYLOAD_LENGTH};
use ring::aead::LessSafeKey;

use super::KeyId;
use super::record::{
    DecryptError, FIELD_PAYLOAD, FIELD_USER_HEADERS, finish_frame, open_field, put_u32,
};

fn aad(frame: &[u8], field: u8) -> [u8; 17] {
    let mut aad = [0u8; 17];
    aad[..16].copy_from_slice(&frame[MSG_ID..MSG_ID + 16]);
    aad[16] = field;
    aad
}

/// Copies and opens every frame; returns the plaintext frames and their
/// checksums (recomputed).
pub(super) fn open_frames(
    key: &LessSafeKey,
    key_id: KeyId,
    frames: &[u8],
) -> Result<(Vec<u8>, Vec<u64>), DecryptError> {
    let mut out = Vec::with_capacity(frames.len());
    let mut checksums = Vec::new();
    for (index, item) in Frames::new(frames).enumerate() {
        let index = index as u32;
        let (_, frame) = item.map_err(|_| DecryptError::Malformed { index })?;
        let bytes = frame.as_bytes();
        let start = out.len();
        out.extend_from_slice(&bytes[..MESSAGE_HEADER_SIZE]);
        let fail = DecryptError::Authentication { index, key_id };
        let payload = open_field(key, aad(bytes, FIELD_PAYLOAD), frame.payload(), &mut out)
            .ok_or(fail.clone())?;
        let headers_aad = aad(bytes, FIELD_USER_HEADERS);
        let headers = open_field(key, headers_aad, frame.user_headers(), &mut out).ok_or(fail)?;
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
