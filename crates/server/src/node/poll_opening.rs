//! Encryption at rest on the read path (storage spec §14): the sealed records
//! of a poll are opened on the partition's owner, right after the read, before
//! the reply goes to the connection's shard. There the buffer a disk read just
//! filled is still in this core's cache, and it is opened where it lies (no
//! copy) when the poll holds the only reference to it; a record still in the
//! partition's cache is copied once first, since the cache keeps it sealed.
//!
//! Plaintext records (written before encryption was enabled) pass through. A
//! record that does not open fails the poll with `CannotDecryptData` (72):
//! ciphertext is never served as if it were a message. Opening is also where
//! sealed frames are verified on read (`engine::encryption::opening_authenticates`).

use bytes::{Bytes, BytesMut};
use engine::encryption::{Keyring, is_plaintext};
use protocol::ErrorCode;
use protocol::batch::{BATCH_HEADER_SIZE, BatchHeader};

/// Opens every sealed record of a poll reply under `keyring` (`None`:
/// encryption is off, so only plaintext records can be served).
pub fn open_polled(
    keyring: Option<&Keyring>,
    records: &mut [([u8; BATCH_HEADER_SIZE], Bytes)],
) -> Result<(), ErrorCode> {
    for (header, frames) in records {
        if is_plaintext(header) {
            continue;
        }
        let Some(keyring) = keyring else {
            tracing::error!("a stored batch is encrypted but system.encryption.enabled = false");
            return Err(ErrorCode::CannotDecryptData);
        };
        open_record(keyring, header, frames)?;
    }
    Ok(())
}

fn open_record(
    keyring: &Keyring,
    header: &mut [u8; BATCH_HEADER_SIZE],
    frames: &mut Bytes,
) -> Result<(), ErrorCode> {
    // No copy when this is the only reference to the bytes (a disk read).
    let mut buffer = BytesMut::from(std::mem::take(frames));
    let (opened, len) = keyring
        .decrypt_record_in_place(header, &mut buffer)
        .map_err(|e| {
            let stored = BatchHeader::read(header).unwrap_or_default();
            tracing::error!(
                partition_id = stored.partition_id,
                base_offset = stored.base_offset,
                "cannot decrypt a stored batch (corrupt, or sealed under another key): {e}"
            );
            ErrorCode::CannotDecryptData
        })?;
    buffer.truncate(len);
    *header = opened;
    *frames = buffer.freeze();
    Ok(())
}
