//! The 128-byte prefix every header shares (spec 4.1).
//!
//! ```text
//! offset size type  field
//!      0   16 u128  checksum        0 on client frames
//!     16   16 u128  checksum_body   0 on client frames
//!     32   16 u128  cluster
//!     48    4 u32   size            whole frame, header included
//!     52    4 u32   view
//!     56    4 u32   release
//!     60    1 u8    command
//!     61    1 u8    replica
//!     62   66 -     reserved_frame  zero
//! ```

use super::{COMMAND_OFFSET, Command, HEADER_SIZE, HeaderError, SIZE_OFFSET};

pub(super) const CHECKSUM: usize = 0;
pub(super) const CHECKSUM_BODY: usize = 16;
pub(super) const CLUSTER: usize = 32;
pub(super) const VIEW: usize = 52;
pub(super) const RELEASE: usize = 56;
pub(super) const REPLICA: usize = 61;
pub(super) const RESERVED_FRAME: usize = 62;
pub(super) const PREFIX_END: usize = 128;

const _: () = assert!(CLUSTER + 16 == SIZE_OFFSET);
const _: () =
    assert!(SIZE_OFFSET + 4 == VIEW && VIEW + 4 == RELEASE && RELEASE + 4 == COMMAND_OFFSET);
const _: () = assert!(COMMAND_OFFSET + 1 == REPLICA && REPLICA + 1 == RESERVED_FRAME);
const _: () = assert!(RESERVED_FRAME + 66 == PREFIX_END);

/// The decoded shared prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Prefix {
    pub checksum: u128,
    pub checksum_body: u128,
    pub cluster: u128,
    pub size: u32,
    pub view: u32,
    pub release: u32,
    pub command: Command,
    pub replica: u8,
}

/// Borrows the first 256 bytes of `bytes` as a header.
pub(super) fn header_bytes(bytes: &[u8]) -> Result<&[u8; HEADER_SIZE], HeaderError> {
    bytes
        .get(..HEADER_SIZE)
        .and_then(|b| b.try_into().ok())
        .ok_or(HeaderError::TooShort { len: bytes.len() })
}

pub(super) fn u32_at(b: &[u8; HEADER_SIZE], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes inside the header"))
}

pub(super) fn u64_at(b: &[u8; HEADER_SIZE], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes inside the header"))
}

pub(super) fn u128_at(b: &[u8; HEADER_SIZE], at: usize) -> u128 {
    u128::from_le_bytes(
        b[at..at + 16]
            .try_into()
            .expect("16 bytes inside the header"),
    )
}

pub(super) fn put_u32(b: &mut [u8; HEADER_SIZE], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

pub(super) fn put_u64(b: &mut [u8; HEADER_SIZE], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

pub(super) fn put_u128(b: &mut [u8; HEADER_SIZE], at: usize, v: u128) {
    b[at..at + 16].copy_from_slice(&v.to_le_bytes());
}

impl Prefix {
    pub fn decode(b: &[u8; HEADER_SIZE]) -> Result<Self, HeaderError> {
        let value = b[COMMAND_OFFSET];
        let command = Command::from_u8(value).ok_or(HeaderError::UnknownCommand { value })?;
        Ok(Self {
            checksum: u128_at(b, CHECKSUM),
            checksum_body: u128_at(b, CHECKSUM_BODY),
            cluster: u128_at(b, CLUSTER),
            size: u32_at(b, SIZE_OFFSET),
            view: u32_at(b, VIEW),
            release: u32_at(b, RELEASE),
            command,
            replica: b[REPLICA],
        })
    }

    /// Writes the prefix and zeroes `reserved_frame`.
    pub fn write(&self, b: &mut [u8; HEADER_SIZE]) {
        put_u128(b, CHECKSUM, self.checksum);
        put_u128(b, CHECKSUM_BODY, self.checksum_body);
        put_u128(b, CLUSTER, self.cluster);
        put_u32(b, SIZE_OFFSET, self.size);
        put_u32(b, VIEW, self.view);
        put_u32(b, RELEASE, self.release);
        b[COMMAND_OFFSET] = self.command.as_u8();
        b[REPLICA] = self.replica;
        b[RESERVED_FRAME..PREFIX_END].fill(0);
    }
}
