//! Issue 21's first sealed layout (`SealedLayout::Original`), which this
//! server still opens (`record`) and no longer writes:
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

use protocol::batch::MSG_ID;

/// The additional data of one field of the frame whose bytes are `frame`.
pub(super) fn aad(frame: &[u8], field: u8) -> [u8; 17] {
    let mut aad = [0u8; 17];
    aad[..16].copy_from_slice(&frame[MSG_ID..MSG_ID + 16]);
    aad[16] = field;
    aad
}
