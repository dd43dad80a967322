//! Batch records: the one byte layout shared by SendMessages bodies, poll
//! replies, the partition journal and segment `.log` files.
//!
//! ```text
//! record = [batch header: 256 bytes][frame]...
//! frame  = [message header: 48 bytes][payload][user headers]
//!
//! batch header (all little-endian)
//!   0  u64 partition_id      stamped by the server
//!   8  u64 base_offset       stamped by the server
//!  16  u64 base_timestamp    stamped by the server (µs)
//!  24  u64 origin_timestamp  producer's smallest message time (µs)
//!  32  u64 batch_length      256 + frame bytes
//!  40  u64 batch_checksum    see `batch_checksum`
//!  48  u32 message_count
//!  52  u32 key_id            0 = plaintext; otherwise frames encrypted at
//!                            rest: bits 0-23 the key's id in the data
//!                            directory's key check file, bits 24-31 the
//!                            sealed layout (`engine::encryption::SealMark`);
//!                            producers send 0
//!  56  200 reserved, zero
//!
//! message header
//!   0  u64  checksum         XXH3-64 over header[8..48] ++ payload ++ user headers
//!   8  u128 id
//!  24  u32  offset_delta     position in the batch as produced
//!  28  u32  timestamp_delta  µs after origin_timestamp
//!  32  u32  user_headers_length
//!  36  u32  payload_length
//!  40  u64  reserved, zero
//! ```
//!
//! The batch checksum is XXH3-64 over the five u64 header fields
//! (partition_id, base_offset, base_timestamp, origin_timestamp,
//! batch_length), the u32 message_count and then each frame's 8-byte
//! checksum, in frame order; a non-zero key_id (u32) follows message_count,
//! so a stored encrypted batch whose key_id is flipped fails its checksum
//! (a plaintext batch hashes exactly as the spec says). Frame checksums do
//! not cover the batch header, so the server can stamp offsets and times
//! without touching frames.

use crate::checksum::{Xxh3Stream, xxh3_64};

pub const BATCH_HEADER_SIZE: usize = 256;
pub const MESSAGE_HEADER_SIZE: usize = 48;

const PARTITION_ID: usize = 0;
const BASE_OFFSET: usize = 8;
const BASE_TIMESTAMP: usize = 16;
const ORIGIN_TIMESTAMP: usize = 24;
const BATCH_LENGTH: usize = 32;
const BATCH_CHECKSUM: usize = 40;
const MESSAGE_COUNT: usize = 48;
const KEY_ID: usize = 52;
const BATCH_RESERVED: usize = 56;

/// Byte positions of the message header's fields (see the table above);
/// public so code that rewrites frames (encryption at rest) names them.
pub const MSG_CHECKSUM: usize = 0;
pub const MSG_ID: usize = 8;
const MSG_OFFSET_DELTA: usize = 24;
const MSG_TIMESTAMP_DELTA: usize = 28;
pub const MSG_USER_HEADERS_LENGTH: usize = 32;
pub const MSG_PAYLOAD_LENGTH: usize = 36;
const MSG_RESERVED: usize = 40;

/// Why a batch record is not acceptable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    #[error("batch record shorter than its {BATCH_HEADER_SIZE}-byte header ({len} bytes)")]
    TooShort { len: usize },
    #[error("batch_length {declared} does not match the {actual} bytes available")]
    LengthMismatch { declared: u64, actual: usize },
    #[error("reserved bytes of the batch header are not zero")]
    HeaderReservedNotZero,
    #[error("batch holds no messages")]
    Empty,
    #[error("message frame {index} overruns the batch")]
    FrameOverrun { index: u32 },
    #[error("reserved bytes of message frame {index} are not zero")]
    FrameReservedNotZero { index: u32 },
    #[error("message_count {declared} but the frames hold {actual} messages")]
    MessageCountMismatch { declared: u32, actual: u32 },
    #[error("message frame {index} has offset_delta {found}")]
    OffsetDeltaMismatch { index: u32, found: u32 },
    #[error("message frame {index} has an empty payload")]
    EmptyPayload { index: u32 },
    #[error("checksum of message frame {index} does not match")]
    MessageChecksum { index: u32 },
    #[error("batch checksum does not match")]
    BatchChecksum,
    #[error("key_id {found} is set by the server only; a producer sends 0")]
    KeyIdNotZero { found: u32 },
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4-byte slice"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8-byte slice"))
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// The decoded fields of a batch header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BatchHeader {
    pub partition_id: u64,
    pub base_offset: u64,
    pub base_timestamp: u64,
    pub origin_timestamp: u64,
    pub batch_length: u64,
    pub batch_checksum: u64,
    pub message_count: u32,
    /// 0 for plaintext frames; otherwise the id of the key that encrypted
    /// them at rest.
    pub key_id: u32,
}

impl BatchHeader {
    /// Reads the header at the start of `bytes`, checking that it is whole
    /// and that its reserved bytes are zero.
    pub fn read(bytes: &[u8]) -> Result<Self, BatchError> {
        if bytes.len() < BATCH_HEADER_SIZE {
            return Err(BatchError::TooShort { len: bytes.len() });
        }
        if bytes[BATCH_RESERVED..BATCH_HEADER_SIZE]
            .iter()
            .any(|&b| b != 0)
        {
            return Err(BatchError::HeaderReservedNotZero);
        }
        Ok(Self {
            partition_id: u64_at(bytes, PARTITION_ID),
            base_offset: u64_at(bytes, BASE_OFFSET),
            base_timestamp: u64_at(bytes, BASE_TIMESTAMP),
            origin_timestamp: u64_at(bytes, ORIGIN_TIMESTAMP),
            batch_length: u64_at(bytes, BATCH_LENGTH),
            batch_checksum: u64_at(bytes, BATCH_CHECKSUM),
            message_count: u32_at(bytes, MESSAGE_COUNT),
            key_id: u32_at(bytes, KEY_ID),
        })
    }

    /// Writes every field and zeroes the reserved area of `out[..256]`.
    pub fn write(&self, out: &mut [u8]) {
        assert!(out.len() >= BATCH_HEADER_SIZE, "header buffer too small");
        put_u64(out, PARTITION_ID, self.partition_id);
        put_u64(out, BASE_OFFSET, self.base_offset);
        put_u64(out, BASE_TIMESTAMP, self.base_timestamp);
        put_u64(out, ORIGIN_TIMESTAMP, self.origin_timestamp);
        put_u64(out, BATCH_LENGTH, self.batch_length);
        put_u64(out, BATCH_CHECKSUM, self.batch_checksum);
        put_u32(out, MESSAGE_COUNT, self.message_count);
        put_u32(out, KEY_ID, self.key_id);
        out[BATCH_RESERVED..BATCH_HEADER_SIZE].fill(0);
    }

    /// The offset of the last message, when the batch is dense
    /// (`offset_delta == index`, which admission enforces).
    pub fn last_offset(&self) -> u64 {
        assert!(self.message_count > 0, "an empty batch has no last offset");
        self.base_offset + u64::from(self.message_count) - 1
    }

    /// The batch checksum of these header fields over the given frame
    /// checksums, in order.
    pub fn checksum_over(&self, frame_checksums: impl IntoIterator<Item = u64>) -> u64 {
        let mut hash = BatchHasher::new(self);
        frame_checksums.into_iter().for_each(|c| hash.push(c));
        hash.finish()
    }
}

/// The batch checksum, fed one frame checksum at a time: they are gathered
/// into a 4 KiB block before the hasher sees them (a streaming hasher fed
/// 8 bytes a call spent more on its bookkeeping than on hashing).
struct BatchHasher {
    hash: Xxh3Stream,
    block: [u8; 4096],
    used: usize,
}

impl BatchHasher {
    fn new(header: &BatchHeader) -> Self {
        let (fixed, len) = header_checksum_prefix(header);
        let mut block = [0u8; 4096];
        block[..len].copy_from_slice(&fixed[..len]);
        BatchHasher {
            hash: Xxh3Stream::new(),
            block,
            used: len,
        }
    }

    fn push(&mut self, checksum: u64) {
        if self.used + 8 > self.block.len() {
            self.hash.update(&self.block[..self.used]);
            self.used = 0;
        }
        self.block[self.used..self.used + 8].copy_from_slice(&checksum.to_le_bytes());
        self.used += 8;
    }

    fn finish(mut self) -> u64 {
        self.hash.update(&self.block[..self.used]);
        self.hash.finish()
    }
}

/// A borrowed message frame inside a batch record.
#[derive(Debug, Clone, Copy)]
pub struct Frame<'a> {
    bytes: &'a [u8],
}

impl<'a> Frame<'a> {
    pub fn checksum(&self) -> u64 {
        u64_at(self.bytes, MSG_CHECKSUM)
    }
    pub fn id(&self) -> u128 {
        u128::from_le_bytes(
            self.bytes[MSG_ID..MSG_ID + 16]
                .try_into()
                .expect("16 bytes"),
        )
    }
    pub fn offset_delta(&self) -> u32 {
        u32_at(self.bytes, MSG_OFFSET_DELTA)
    }
    pub fn timestamp_delta(&self) -> u32 {
        u32_at(self.bytes, MSG_TIMESTAMP_DELTA)
    }
    pub fn payload(&self) -> &'a [u8] {
        let len = u32_at(self.bytes, MSG_PAYLOAD_LENGTH) as usize;
        &self.bytes[MESSAGE_HEADER_SIZE..MESSAGE_HEADER_SIZE + len]
    }
    pub fn user_headers(&self) -> &'a [u8] {
        let payload = u32_at(self.bytes, MSG_PAYLOAD_LENGTH) as usize;
        &self.bytes[MESSAGE_HEADER_SIZE + payload..]
    }
    /// The whole frame, header included.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }
    /// Recomputes the frame checksum from its bytes.
    pub fn computed_checksum(&self) -> u64 {
        xxh3_64(&self.bytes[MSG_ID..])
    }
}

/// Iterates the frames of a record's body (`record[256..]`), checking that
/// each frame fits. Yields `(position of the frame in the body, frame)`.
pub struct Frames<'a> {
    body: &'a [u8],
    position: usize,
    index: u32,
}

impl<'a> Frames<'a> {
    pub fn new(body: &'a [u8]) -> Self {
        Self {
            body,
            position: 0,
            index: 0,
        }
    }
}

impl<'a> Iterator for Frames<'a> {
    type Item = Result<(usize, Frame<'a>), BatchError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.position >= self.body.len() {
            return None;
        }
        let index = self.index;
        let rest = &self.body[self.position..];
        if rest.len() < MESSAGE_HEADER_SIZE {
            self.position = self.body.len();
            return Some(Err(BatchError::FrameOverrun { index }));
        }
        let payload = u32_at(rest, MSG_PAYLOAD_LENGTH) as usize;
        let headers = u32_at(rest, MSG_USER_HEADERS_LENGTH) as usize;
        let size = MESSAGE_HEADER_SIZE
            .checked_add(payload)
            .and_then(|s| s.checked_add(headers));
        let Some(size) = size.filter(|&s| s <= rest.len()) else {
            self.position = self.body.len();
            return Some(Err(BatchError::FrameOverrun { index }));
        };
        if rest[MSG_RESERVED..MESSAGE_HEADER_SIZE]
            .iter()
            .any(|&b| b != 0)
        {
            self.position = self.body.len();
            return Some(Err(BatchError::FrameReservedNotZero { index }));
        }
        let at = self.position;
        self.position += size;
        self.index += 1;
        Some(Ok((
            at,
            Frame {
                bytes: &rest[..size],
            },
        )))
    }
}

/// How thoroughly `validate_record` checks a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    /// Layout only: lengths, reserved bytes, frame tiling and counts.
    Layout,
    /// Layout plus every message checksum and the batch checksum.
    Checksums,
    /// Layout plus the batch checksum over the checksums the frames state,
    /// without rehashing the frames: for frames whose contents another check
    /// authenticates (sealed frames, when they are opened).
    BatchChecksum,
}

/// Validates one whole record (`record.len()` must equal its `batch_length`).
/// Frames must be dense (`offset_delta == index`) and non-empty.
pub fn validate_record(record: &[u8], verify: Verify) -> Result<BatchHeader, BatchError> {
    let header = BatchHeader::read(record)?;
    if header.batch_length != record.len() as u64 {
        return Err(BatchError::LengthMismatch {
            declared: header.batch_length,
            actual: record.len(),
        });
    }
    if header.message_count == 0 {
        return Err(BatchError::Empty);
    }
    let mut count = 0u32;
    let mut hash = BatchHasher::new(&header);
    for item in Frames::new(&record[BATCH_HEADER_SIZE..]) {
        let (_, frame) = item?;
        if frame.offset_delta() != count {
            return Err(BatchError::OffsetDeltaMismatch {
                index: count,
                found: frame.offset_delta(),
            });
        }
        if frame.payload().is_empty() {
            return Err(BatchError::EmptyPayload { index: count });
        }
        if verify == Verify::Checksums && frame.computed_checksum() != frame.checksum() {
            return Err(BatchError::MessageChecksum { index: count });
        }
        if verify != Verify::Layout {
            hash.push(frame.checksum());
        }
        count += 1;
    }
    if count != header.message_count {
        return Err(BatchError::MessageCountMismatch {
            declared: header.message_count,
            actual: count,
        });
    }
    if verify != Verify::Layout && hash.finish() != header.batch_checksum {
        return Err(BatchError::BatchChecksum);
    }
    Ok(header)
}

/// The header fields the batch checksum starts with, and how many of the
/// 48 bytes are used: 44 for a plaintext batch (the spec's formula), 48
/// when a key_id is set.
fn header_checksum_prefix(header: &BatchHeader) -> ([u8; 48], usize) {
    let mut fixed = [0u8; 48];
    put_u64(&mut fixed, 0, header.partition_id);
    put_u64(&mut fixed, 8, header.base_offset);
    put_u64(&mut fixed, 16, header.base_timestamp);
    put_u64(&mut fixed, 24, header.origin_timestamp);
    put_u64(&mut fixed, 32, header.batch_length);
    put_u32(&mut fixed, 40, header.message_count);
    if header.key_id == 0 {
        return (fixed, 44);
    }
    put_u32(&mut fixed, 44, header.key_id);
    (fixed, 48)
}

/// Stamps the server fields into a validated record in place and
/// recomputes its batch checksum. Frames are left untouched.
pub fn stamp_record(
    record: &mut [u8],
    partition_id: u64,
    base_offset: u64,
    base_timestamp: u64,
) -> BatchHeader {
    let mut header = BatchHeader::read(record).expect("stamp_record needs a validated record");
    header.partition_id = partition_id;
    header.base_offset = base_offset;
    header.base_timestamp = base_timestamp;
    let checksums = Frames::new(&record[BATCH_HEADER_SIZE..])
        .map(|f| f.expect("validated record").1.checksum());
    header.batch_checksum = header.checksum_over(checksums);
    header.write(record);
    header
}

/// Whether the validated `record` already carries exactly the stamp
/// [`stamp_record`] would give it (its server fields and the batch checksum
/// over them), so a shared, immutable copy can be stored as it is.
pub fn is_stamped(record: &[u8], partition_id: u64, base_offset: u64, base_timestamp: u64) -> bool {
    let Ok(header) = BatchHeader::read(record) else {
        return false;
    };
    if header.partition_id != partition_id
        || header.base_offset != base_offset
        || header.base_timestamp != base_timestamp
    {
        return false;
    }
    let checksums = Frames::new(&record[BATCH_HEADER_SIZE..])
        .map_while(|f| f.ok().map(|(_, frame)| frame.checksum()));
    header.batch_checksum == header.checksum_over(checksums)
}

/// A contiguous run of frames selected from a stored record for a poll.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordSlice {
    /// The header to send: equal to the stored one when the whole record is
    /// selected, otherwise rewritten with the slice's length, count and
    /// checksum.
    pub header: [u8; BATCH_HEADER_SIZE],
    /// Byte range of the selected frames within the record.
    pub frames: std::ops::Range<usize>,
    /// Number of selected messages.
    pub count: u32,
    /// Offset of the first selected message.
    pub first_offset: u64,
}

/// Selects the messages of a dense record with offsets `>= from`, at most
/// `max` of them. Returns `None` when nothing qualifies.
pub fn slice_record(record: &[u8], from: u64, max: u32) -> Option<RecordSlice> {
    let header = BatchHeader::read(record).ok()?;
    // Checked: a corrupt header must not overflow the offset arithmetic.
    let last = header
        .base_offset
        .checked_add(u64::from(header.message_count.checked_sub(1)?))?;
    if max == 0 || last < from {
        return None;
    }
    let skip = from.saturating_sub(header.base_offset) as u32;
    let take = (header.message_count - skip).min(max);
    let mut start = None;
    let mut end = BATCH_HEADER_SIZE;
    // The count comes from the header: bound the allocation by what fits.
    let mut checksums = Vec::with_capacity((take as usize).min(record.len() / MESSAGE_HEADER_SIZE));
    for (index, item) in Frames::new(&record[BATCH_HEADER_SIZE..]).enumerate() {
        let (at, frame) = item.ok()?;
        let index = index as u32;
        if index < skip {
            continue;
        }
        if index >= skip + take {
            break;
        }
        start.get_or_insert(BATCH_HEADER_SIZE + at);
        end = BATCH_HEADER_SIZE + at + frame.as_bytes().len();
        checksums.push(frame.checksum());
    }
    let start = start?;
    let mut out = [0u8; BATCH_HEADER_SIZE];
    if skip == 0 && take == header.message_count {
        out.copy_from_slice(&record[..BATCH_HEADER_SIZE]);
    } else {
        let mut sliced = header;
        sliced.batch_length = (BATCH_HEADER_SIZE + end - start) as u64;
        sliced.message_count = take;
        sliced.batch_checksum = sliced.checksum_over(checksums);
        sliced.write(&mut out);
    }
    Some(RecordSlice {
        header: out,
        frames: start..end,
        count: take,
        first_offset: header.base_offset + u64::from(skip),
    })
}

/// Builds a record from `(id, payload, user_headers)` messages, as a
/// producer would: server fields zero, checksums filled in. Used by tests
/// and tools; the server never builds records itself.
pub fn build_record(origin_timestamp: u64, messages: &[(u128, &[u8], &[u8])]) -> Vec<u8> {
    let frames_len: usize = messages
        .iter()
        .map(|(_, p, h)| MESSAGE_HEADER_SIZE + p.len() + h.len())
        .sum();
    let mut record = vec![0u8; BATCH_HEADER_SIZE + frames_len];
    let mut at = BATCH_HEADER_SIZE;
    let mut checksums = Vec::with_capacity(messages.len());
    for (index, (id, payload, headers)) in messages.iter().enumerate() {
        let frame = &mut record[at..at + MESSAGE_HEADER_SIZE + payload.len() + headers.len()];
        frame[MSG_ID..MSG_ID + 16].copy_from_slice(&id.to_le_bytes());
        put_u32(frame, MSG_OFFSET_DELTA, index as u32);
        put_u32(frame, MSG_USER_HEADERS_LENGTH, headers.len() as u32);
        put_u32(frame, MSG_PAYLOAD_LENGTH, payload.len() as u32);
        frame[MESSAGE_HEADER_SIZE..MESSAGE_HEADER_SIZE + payload.len()].copy_from_slice(payload);
        frame[MESSAGE_HEADER_SIZE + payload.len()..].copy_from_slice(headers);
        let checksum = xxh3_64(&frame[MSG_ID..]);
        put_u64(frame, MSG_CHECKSUM, checksum);
        checksums.push(checksum);
        at += frame.len();
    }
    let mut header = BatchHeader {
        origin_timestamp,
        batch_length: record.len() as u64,
        message_count: messages.len() as u32,
        ..BatchHeader::default()
    };
    header.batch_checksum = header.checksum_over(checksums);
    header.write(&mut record);
    record
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        build_record(
            1_000,
            &[
                (1, b"one", b""),
                (2, b"two!", b"\x02\x00\x00\x00\x01k\x02\x01\x00\x00\x00v"),
                (3, b"3", b""),
            ],
        )
    }

    #[test]
    fn given_built_record_when_validating_should_accept() {
        let header = validate_record(&sample(), Verify::Checksums).unwrap();
        assert_eq!(header.message_count, 3);
        assert_eq!(header.origin_timestamp, 1_000);
    }

    #[test]
    fn given_stamped_record_when_validating_should_accept_new_checksum() {
        let mut record = sample();
        let header = stamp_record(&mut record, 2, 100, 5_000);
        assert_eq!(header.last_offset(), 102);
        let again = validate_record(&record, Verify::Checksums).unwrap();
        assert_eq!(again, header);
    }

    #[test]
    fn given_flipped_payload_bit_when_validating_should_report_message_checksum() {
        let mut record = sample();
        record[BATCH_HEADER_SIZE + MESSAGE_HEADER_SIZE] ^= 1;
        assert_eq!(
            validate_record(&record, Verify::Checksums),
            Err(BatchError::MessageChecksum { index: 0 })
        );
        assert!(validate_record(&record, Verify::Layout).is_ok());
    }

    /// The batch checksum mode checks what the frames state, not their bytes.
    #[test]
    fn given_batch_checksum_mode_should_catch_header_and_stated_checksums_but_not_frame_bytes() {
        let mut record = sample();
        record[BATCH_HEADER_SIZE + MESSAGE_HEADER_SIZE] ^= 1;
        assert!(validate_record(&record, Verify::BatchChecksum).is_ok());
        let mut record = sample();
        record[BATCH_HEADER_SIZE] ^= 1;
        assert_eq!(
            validate_record(&record, Verify::BatchChecksum),
            Err(BatchError::BatchChecksum)
        );
        let mut record = sample();
        record[ORIGIN_TIMESTAMP] ^= 1;
        assert_eq!(
            validate_record(&record, Verify::BatchChecksum),
            Err(BatchError::BatchChecksum)
        );
    }

    #[test]
    fn given_changed_header_field_when_validating_should_report_batch_checksum() {
        let mut record = sample();
        record[ORIGIN_TIMESTAMP] ^= 1;
        assert_eq!(
            validate_record(&record, Verify::Checksums),
            Err(BatchError::BatchChecksum)
        );
    }

    #[test]
    fn given_truncated_record_when_validating_should_fail() {
        let record = sample();
        assert!(validate_record(&record[..record.len() - 1], Verify::Layout).is_err());
        assert!(validate_record(&record[..100], Verify::Layout).is_err());
    }

    #[test]
    fn given_middle_slice_when_slicing_should_rewrite_header_consistently() {
        let mut record = sample();
        stamp_record(&mut record, 0, 10, 7);
        let slice = slice_record(&record, 11, 1).unwrap();
        assert_eq!(slice.count, 1);
        assert_eq!(slice.first_offset, 11);
        let mut rebuilt = slice.header.to_vec();
        rebuilt.extend_from_slice(&record[slice.frames.clone()]);
        let header = BatchHeader::read(&rebuilt).unwrap();
        assert_eq!(header.batch_length as usize, rebuilt.len());
        assert_eq!(header.base_offset, 10);
        let frames: Vec<_> = Frames::new(&rebuilt[BATCH_HEADER_SIZE..])
            .map(|f| f.unwrap().1.checksum())
            .collect();
        assert_eq!(header.checksum_over(frames), header.batch_checksum);
    }

    /// Golden bytes of a header with a key_id: the field sits at byte 52,
    /// little-endian, and the reserved area after it stays zero.
    #[test]
    fn given_key_id_when_writing_header_should_place_it_at_byte_52() {
        let header = BatchHeader {
            partition_id: 1,
            base_offset: 2,
            base_timestamp: 3,
            origin_timestamp: 4,
            batch_length: 256,
            batch_checksum: 5,
            message_count: 6,
            key_id: 0x0A0B_0C0D,
        };
        let mut out = [0xFFu8; BATCH_HEADER_SIZE];
        header.write(&mut out);
        assert_eq!(&out[48..56], &[6, 0, 0, 0, 0x0D, 0x0C, 0x0B, 0x0A]);
        assert!(out[56..].iter().all(|&b| b == 0));
        assert_eq!(BatchHeader::read(&out).unwrap(), header);
        out[56] = 1;
        assert_eq!(
            BatchHeader::read(&out),
            Err(BatchError::HeaderReservedNotZero)
        );
    }

    /// A plaintext batch hashes as the spec says (44 header bytes); a key_id
    /// joins the hash, so flipping it is caught by the batch checksum.
    #[test]
    fn given_key_id_when_checksumming_should_cover_it_and_leave_plaintext_unchanged() {
        let mut record = sample();
        let plain = BatchHeader::read(&record).unwrap();
        let spec_formula = {
            let mut hash = Xxh3Stream::new();
            hash.update(&header_checksum_prefix(&plain).0[..44]);
            for item in Frames::new(&record[BATCH_HEADER_SIZE..]) {
                hash.update(&item.unwrap().1.checksum().to_le_bytes());
            }
            hash.finish()
        };
        assert_eq!(plain.batch_checksum, spec_formula);
        put_u32(&mut record, KEY_ID, 7);
        let stamped = stamp_record(&mut record, 0, 0, 1);
        assert_eq!(stamped.key_id, 7);
        validate_record(&record, Verify::Checksums).unwrap();
        put_u32(&mut record, KEY_ID, 8);
        assert_eq!(
            validate_record(&record, Verify::Checksums),
            Err(BatchError::BatchChecksum)
        );
    }

    /// More checksums than one 4 KiB block holds: the blocked hasher
    /// still gives the spec's hash of the prefix and every checksum.
    #[test]
    fn given_many_frames_when_checksumming_should_equal_the_one_shot_formula() {
        let header = BatchHeader::read(&sample()).unwrap();
        let checksums: Vec<u64> = (0..1500u64).map(|i| i.wrapping_mul(0x9E37_79B9)).collect();
        let mut bytes = header_checksum_prefix(&header).0[..44].to_vec();
        checksums
            .iter()
            .for_each(|c| bytes.extend_from_slice(&c.to_le_bytes()));
        assert_eq!(header.checksum_over(checksums), xxh3_64(&bytes));
    }

    #[test]
    fn given_whole_selection_when_slicing_should_keep_stored_header() {
        let record = sample();
        let slice = slice_record(&record, 0, 10).unwrap();
        assert_eq!(&slice.header[..], &record[..BATCH_HEADER_SIZE]);
        assert_eq!(slice.frames, BATCH_HEADER_SIZE..record.len());
        assert!(slice_record(&record, 3, 10).is_none());
    }
}
