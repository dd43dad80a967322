//! The partition group's op bodies, results and checkpoint state, as
//! the module docs lay them out (`super`).

use std::ops::Range;

use consensus::Op;
use protocol::ErrorCode;
use protocol::batch::BatchHeader;
use storage::Offset;
use storage::offsets::ConsumerKind;

use crate::partition::ConsumerKey;

pub(super) const APPEND: u8 = 1;
pub(super) const STORE_OFFSET: u8 = 2;
pub(super) const DELETE_OFFSET: u8 = 3;
pub(super) const PURGE: u8 = 4;
/// Bytes before the batch record in an append's body.
pub const APPEND_PREFIX: usize = 9;

/// A change of the partition, as a client asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Appends the batch record `buffer[range]`.
    Append {
        buffer: Vec<u8>,
        range: Range<usize>,
    },
    StoreOffset {
        consumer: ConsumerKey,
        offset: Offset,
    },
    DeleteOffset {
        consumer: ConsumerKey,
    },
    /// Empties the partition as purge number `generation` (its log
    /// restarts at offset 0; stored offsets go).
    Purge {
        generation: u64,
    },
}

/// What a committed op did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    Appended { base_offset: Offset },
    Stored { caught_up: bool },
    Deleted,
    Purged,
    Failed(ErrorCode),
}

impl Applied {
    pub fn encode(self) -> Vec<u8> {
        let mut out = Vec::with_capacity(12);
        match self {
            Applied::Failed(code) => out.extend_from_slice(&(code as u32).to_le_bytes()),
            Applied::Appended { base_offset } => {
                out.extend_from_slice(&0u32.to_le_bytes());
                out.extend_from_slice(&base_offset.0.to_le_bytes());
            }
            Applied::Stored { caught_up } => {
                out.extend_from_slice(&0u32.to_le_bytes());
                out.push(u8::from(caught_up));
            }
            Applied::Deleted | Applied::Purged => out.extend_from_slice(&0u32.to_le_bytes()),
        }
        out
    }

    /// Reads a result back, knowing what was asked.
    pub fn decode(kind: &Command, bytes: &[u8]) -> Option<Applied> {
        let (code, rest) = bytes.split_first_chunk::<4>()?;
        let code = u32::from_le_bytes(*code);
        if code != 0 {
            return Some(Applied::Failed(
                ErrorCode::from_u32(code).unwrap_or(ErrorCode::Error),
            ));
        }
        match kind {
            Command::Append { .. } => Some(Applied::Appended {
                base_offset: Offset(u64::from_le_bytes(*rest.first_chunk::<8>()?)),
            }),
            Command::StoreOffset { .. } => Some(Applied::Stored {
                caught_up: *rest.first()? != 0,
            }),
            Command::DeleteOffset { .. } => Some(Applied::Deleted),
            Command::Purge { .. } => Some(Applied::Purged),
        }
    }
}

pub(super) fn consumer_code(kind: ConsumerKind) -> u8 {
    match kind {
        ConsumerKind::Consumer => 1,
        ConsumerKind::ConsumerGroup => 2,
    }
}

pub(super) fn put_consumer(out: &mut Vec<u8>, consumer: ConsumerKey) {
    out.push(consumer_code(consumer.0));
    out.extend_from_slice(&consumer.1.to_le_bytes());
}

/// The body of an append at `base_offset`.
/// An append's op body (`encode_append`) made from the request `buffer`
/// whose `range` is the batch, and where in the returned buffer it starts:
/// written over the bytes before the batch when there are enough of them
/// (no copy), else copied.
pub(super) fn append_body(
    mut buffer: Vec<u8>,
    range: Range<usize>,
    base_offset: Offset,
) -> (Vec<u8>, usize) {
    assert!(range.end <= buffer.len(), "the batch lies in its buffer");
    let Some(start) = range.start.checked_sub(APPEND_PREFIX) else {
        return (encode_append(base_offset, &buffer[range]), 0);
    };
    buffer[start] = APPEND;
    buffer[start + 1..range.start].copy_from_slice(&base_offset.0.to_le_bytes());
    buffer.truncate(range.end);
    debug_assert!(matches!(
        decode(&buffer[start..]),
        Ok(Decoded::Append { base_offset: b, .. }) if b == base_offset
    ));
    (buffer, start)
}

pub fn encode_append(base_offset: Offset, record: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(APPEND_PREFIX + record.len());
    out.push(APPEND);
    out.extend_from_slice(&base_offset.0.to_le_bytes());
    out.extend_from_slice(record);
    out
}

pub fn encode_store(consumer: ConsumerKey, offset: Offset) -> Vec<u8> {
    let mut out = vec![STORE_OFFSET];
    put_consumer(&mut out, consumer);
    out.extend_from_slice(&offset.0.to_le_bytes());
    out
}

pub fn encode_delete(consumer: ConsumerKey) -> Vec<u8> {
    let mut out = vec![DELETE_OFFSET];
    put_consumer(&mut out, consumer);
    out
}

pub fn encode_purge(generation: u64) -> Vec<u8> {
    let mut out = vec![PURGE];
    out.extend_from_slice(&generation.to_le_bytes());
    out
}

/// The body of a command that is not an append (an append's body needs
/// its base offset, which only the primary knows).
pub fn encode_command(command: &Command) -> Option<Vec<u8>> {
    match command {
        Command::Append { .. } => None,
        Command::StoreOffset { consumer, offset } => Some(encode_store(*consumer, *offset)),
        Command::DeleteOffset { consumer } => Some(encode_delete(*consumer)),
        Command::Purge { generation } => Some(encode_purge(*generation)),
    }
}

/// A decoded op body; an append's record is `body[APPEND_PREFIX..]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded {
    Append {
        base_offset: Offset,
        messages: u32,
    },
    StoreOffset {
        consumer: ConsumerKey,
        offset: Offset,
    },
    DeleteOffset {
        consumer: ConsumerKey,
    },
    Purge {
        generation: u64,
    },
}

pub fn decode(body: &[u8]) -> Result<Decoded, String> {
    let fixed = |at: usize, len: usize| {
        body.get(at..at + len)
            .ok_or_else(|| format!("op body of {} bytes cut short", body.len()))
    };
    let consumer = || -> Result<ConsumerKey, String> {
        let kind = match fixed(1, 1)?[0] {
            1 => ConsumerKind::Consumer,
            2 => ConsumerKind::ConsumerGroup,
            other => return Err(format!("unknown consumer kind {other}")),
        };
        let id = u32::from_le_bytes(fixed(2, 4)?.try_into().expect("4"));
        Ok((kind, id))
    };
    match body.first() {
        Some(&APPEND) => {
            let base_offset = Offset(u64::from_le_bytes(fixed(1, 8)?.try_into().expect("8")));
            let header = BatchHeader::read(&body[APPEND_PREFIX..]).map_err(|e| e.to_string())?;
            Ok(Decoded::Append {
                base_offset,
                messages: header.message_count,
            })
        }
        Some(&STORE_OFFSET) if body.len() == 14 => Ok(Decoded::StoreOffset {
            consumer: consumer()?,
            offset: Offset(u64::from_le_bytes(fixed(6, 8)?.try_into().expect("8"))),
        }),
        Some(&DELETE_OFFSET) if body.len() == 6 => Ok(Decoded::DeleteOffset {
            consumer: consumer()?,
        }),
        Some(&PURGE) if body.len() == 9 => Ok(Decoded::Purge {
            generation: u64::from_le_bytes(fixed(1, 8)?.try_into().expect("8")),
        }),
        _ => Err(format!("unknown partition op of {} bytes", body.len())),
    }
}

/// Where a checkpoint's log stands: the purge generation it was taken in
/// and the op it was taken at (absent from an earlier build's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointPurge {
    pub generation: u64,
    pub op: Op,
}

/// The checkpoint state: the log's end, the stored offsets, the purge
/// generation and the op.
pub(super) fn encode_checkpoint(
    next: Offset,
    offsets: &[(ConsumerKey, Offset)],
    purge: CheckpointPurge,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(28 + offsets.len() * 13);
    out.extend_from_slice(&next.0.to_le_bytes());
    let count = u32::try_from(offsets.len()).expect("offsets fit a u32");
    out.extend_from_slice(&count.to_le_bytes());
    for &(consumer, offset) in offsets {
        put_consumer(&mut out, consumer);
        out.extend_from_slice(&offset.0.to_le_bytes());
    }
    out.extend_from_slice(&purge.generation.to_le_bytes());
    out.extend_from_slice(&purge.op.0.to_le_bytes());
    out
}

/// A checkpoint's state: the log's end, its offsets unless it was written
/// by a build that did not keep them, and its purge generation and op
/// unless it was written by a build that did not keep those.
pub(super) type Checkpoint = (
    Offset,
    Option<Vec<(ConsumerKey, Offset)>>,
    Option<CheckpointPurge>,
);

pub(super) fn decode_checkpoint(bytes: &[u8]) -> Result<Checkpoint, String> {
    let cut = || format!("a partition checkpoint of {} bytes cut short", bytes.len());
    let (next, rest) = bytes.split_first_chunk::<8>().ok_or_else(cut)?;
    let next = Offset(u64::from_le_bytes(*next));
    if rest.is_empty() {
        return Ok((next, None, None));
    }
    let (count, rest) = rest.split_first_chunk::<4>().ok_or_else(cut)?;
    let count = u32::from_le_bytes(*count) as usize;
    let (mut rest, purge) = match rest.len().checked_sub(count * 13) {
        Some(0) => (rest, None),
        Some(16) => {
            let (rows, tail) = rest.split_at(count * 13);
            let generation = u64::from_le_bytes(tail[..8].try_into().expect("8"));
            let op = Op(u64::from_le_bytes(tail[8..].try_into().expect("8")));
            (rows, Some(CheckpointPurge { generation, op }))
        }
        _ => (rest, None),
    };
    if rest.len() != count * 13 {
        return Err(format!(
            "a partition checkpoint announces {count} offsets in {} bytes",
            rest.len()
        ));
    }
    let mut offsets = Vec::with_capacity(count);
    while let Some((row, tail)) = rest.split_first_chunk::<13>() {
        let kind = match row[0] {
            1 => ConsumerKind::Consumer,
            2 => ConsumerKind::ConsumerGroup,
            other => return Err(format!("unknown consumer kind {other} in a checkpoint")),
        };
        let id = u32::from_le_bytes(row[1..5].try_into().expect("4"));
        let offset = Offset(u64::from_le_bytes(row[5..13].try_into().expect("8")));
        offsets.push(((kind, id), offset));
        rest = tail;
    }
    Ok((next, Some(offsets), purge))
}
