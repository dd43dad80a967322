//! The replica wire (replication spec §3): how a [`Message`] between two
//! replicas of one group travels as bytes. A frame is a 256-byte header
//! then `size - 256` body bytes, little-endian, sharing the client frames'
//! 128-byte prefix (binary-protocol spec §4.1). Pure: no I/O.
//!
//! A TCP reader reads 256 bytes, learns the frame's length from
//! [`frame_size`] (which checks the seal and the size limit first, so a
//! corrupt header never makes it wait for or buffer a bogus body), reads
//! the body and calls [`decode`]. Decoding never panics, allocates nothing
//! before the seal, size and body checksum hold, and then only for what the
//! frame holds (see [`decode`]). Every frame decodes to one value and every
//! value encodes to one frame: unused bytes must be zero.
//!
//! ```text
//! prefix (every frame)
//!   0 u128 checksum       XXH3-64 of bytes 16..256 (the seal), zero-extended;
//!                         Prepare/RepairPrepare: low 64 = entry identity,
//!                         high 64 = the seal
//!  16 u128 checksum_body  XXH3-64 of the body (also when empty), zero-extended:
//!                         every body, not only DoViewChange/StartView's;
//!                         Prepare/RepairPrepare (ours): the entry identity,
//!                         which covers the body (not hashed twice)
//!  32 u128 cluster        48 u32 size (256 + body)    52 u32 view (message's)
//!  56 u32  release = 0    60 u8 command               61 u8 replica (sender)
//!  62..128 zero
//! per command, bytes 128..256 (u64 unless marked; "u128>64" = a spec u128
//! holding our u64, high half zero; (ours) = not in the spec table)
//!   6 Prepare      128 u128 client  144 u128>64 parent  176 op  184 commit
//!                  192 timestamp_us  200 request  216 group  228 incarnation
//!                  236 u32 entry view (ours)           body = entry body
//!  19 RepairPrepare  as Prepare, commit = 0
//!   7 PrepareOk    144 u128>64 identity  160 op  200 group  208 incarnation
//!   9 Commit       152 commit  168 group  208 incarnation
//!  10 StartViewChange  128 group  208 incarnation
//!  11 DoViewChange 128 head  136 commit  144 group  152 u32 log_view
//!                  156 u8 uncertain (0/1)
//!                  208 incarnation   body = <= 128 entry records, head first
//!  12 StartView    128 head  136 commit  144 group  208 incarnation
//!                  240 u128>64 nonce               body = entry records
//!  17 RequestStartView  128 group  136 u8 blank (0/1)  137 u8 reply = 0
//!                  208 incarnation  240 u128>64 nonce
//!  17 ViewReport   as RequestStartView with reply = 1, blank = the sender's
//!  18 RequestPrepares  144 from  152 to  160 group  208 incarnation
//!  21 RangeEvicted 144 oldest  152 group  208 incarnation
//!  22 RequestStateTransfer  152 group  208 incarnation
//!  23 StateTransferTarget  144 commit_op (= entry op)  152 group
//!                  160 u8 available = 1  176 state len (ours)
//!                  184 state checksum (ours)  208 incarnation
//!                  body = one entry record, then client records
//!  24 RequestStateChunk  144 offset  152 group  168 op (ours)  208 incarnation
//!  25 StateChunk   144 offset  152 group  168 op (ours)  208 incarnation
//!  30 ForwardRequest (ours)  160 group  208 incarnation  240 u128>64 nonce
//!                  body = the forwarded op's bytes
//!  31 ForwardReply (ours)  144 op  152 u32 code (0: committed)  160 group
//!                  208 incarnation  240 u128>64 nonce
//!  32 LogFetch (ours)  144 from  152 until  160 group  168 purge generation
//!                  208 incarnation  240 u128>64 nonce
//!  33 LogChunk (ours)  144 first  152 end  160 group  208 incarnation
//!                  240 u128>64 nonce  body = whole batch records
//! entry record (64 bytes, then its body)
//!   0 op  8 u32 view  12 u32 body_len  16 parent  24 identity  32 u128 client
//!  48 request  56 timestamp_us  64.. body_len bytes of body
//! client record (32 bytes): 0 u128 client  16 request  24 op
//! ```
//!
//! Spec fields we have no value for stay zero: Prepare's request_checksum
//! (160), operation (208) and user_id (224); Commit's commit_checksum (128)
//! and timestamp_monotonic (144); DoViewChange's bitsets (224, 240); every `nonce@128`; StateTransferTarget's
//! unavailable_transient (161) and commit_max (168); RequestStateChunk's
//! len (160) and artifact (164) and StateChunk's artifact (160) (the state
//! is the only artifact). A prepare's identity is ours (`Entry::identity`,
//! a hash of its content), not the spec's header hash; the seal does not
//! cover it (spec §3), and the replica drops an entry whose identity does
//! not match its content (`Entry::is_sound`) on receipt. That check is
//! what catches a prepare's corrupt body: [`decode`] does not hash it.

use bytes::Bytes;
use protocol::checksum::xxh3_64;
use protocol::header::{COMMAND_OFFSET, HEADER_SIZE, SIZE_OFFSET};
use thiserror::Error;

use crate::types::{ClientId, Op, REPLICAS_MAX, RequestNumber, View};
use crate::vsr::DVC_ENTRIES_MAX;
use crate::vsr::message::{Entry, Message, ReplicaId};

/// Bytes of an entry record's fixed part in a DoViewChange, StartView or
/// StateTransferTarget body; its body follows.
pub const ENTRY_RECORD_SIZE: usize = 64;
/// Bytes of one client-table row in a StateTransferTarget body.
pub const CLIENT_RECORD_SIZE: usize = 32;

const CHECKSUM: usize = 0;
const CHECKSUM_BODY: usize = 16;
const CLUSTER: usize = 32;
const VIEW: usize = 52;
const RELEASE: usize = 56;
const REPLICA: usize = 61;
/// The seal covers the header from here to its end.
const SEALED_FROM: usize = 16;

const _: () = assert!(CLUSTER + 16 == SIZE_OFFSET && SIZE_OFFSET + 4 == VIEW);
const _: () = assert!(VIEW + 4 == RELEASE && RELEASE + 4 == COMMAND_OFFSET);
const _: () = assert!(COMMAND_OFFSET + 1 == REPLICA && CHECKSUM + 16 == SEALED_FROM);
const _: () = assert!(CHECKSUM_BODY == SEALED_FROM && HEADER_SIZE == 256);

/// Header offsets past the prefix, by command (the table above).
mod at {
    pub mod prepare {
        pub const CLIENT: usize = 128;
        pub const PARENT: usize = 144;
        pub const OP: usize = 176;
        pub const COMMIT: usize = 184;
        pub const TIMESTAMP: usize = 192;
        pub const REQUEST: usize = 200;
        pub const GROUP: usize = 216;
        pub const INCARNATION: usize = 228;
        pub const ENTRY_VIEW: usize = 236;
    }
    pub mod prepare_ok {
        pub const IDENTITY: usize = 144;
        pub const OP: usize = 160;
        pub const GROUP: usize = 200;
    }
    pub mod commit {
        pub const COMMIT: usize = 152;
        pub const GROUP: usize = 168;
    }
    /// DoViewChange and StartView.
    pub mod view_log {
        pub const HEAD: usize = 128;
        pub const COMMIT: usize = 136;
        pub const GROUP: usize = 144;
        pub const LOG_VIEW: usize = 152;
        pub const UNCERTAIN: usize = 156;
    }
    pub mod start_view {
        pub const GROUP: usize = 128;
        pub const BLANK: usize = 136;
        pub const REPLY: usize = 137;
    }
    pub mod repair {
        pub const FROM: usize = 144;
        pub const TO: usize = 152;
        pub const GROUP: usize = 160;
        pub const OLDEST: usize = 144;
        pub const EVICTED_GROUP: usize = 152;
    }
    /// Commands 22..25.
    pub mod transfer {
        pub const COMMIT_OP: usize = 144;
        pub const OFFSET: usize = 144;
        pub const GROUP: usize = 152;
        pub const AVAILABLE: usize = 160;
        pub const OP: usize = 168;
        pub const LEN: usize = 176;
        pub const CHECKSUM: usize = 184;
    }
    pub mod forward {
        pub const OP: usize = 144;
        pub const CODE: usize = 152;
        pub const GROUP: usize = 160;
    }
    /// LogFetch (from, until) and LogChunk (first, end).
    pub mod log {
        pub const LOW: usize = 144;
        pub const HIGH: usize = 152;
        pub const GROUP: usize = 160;
        /// LogFetch only.
        pub const GENERATION: usize = 168;
    }
    /// Every partition frame but a prepare carries its incarnation here.
    pub const INCARNATION: usize = 208;
    pub const NONCE: usize = 240;
}

const _: () = assert!(at::prepare::ENTRY_VIEW + 4 <= at::NONCE);
const _: () = assert!(at::prepare_ok::GROUP + 8 == at::INCARNATION);

/// Entry record offsets (the table above).
mod record {
    pub const OP: usize = 0;
    pub const VIEW: usize = 8;
    pub const BODY_LEN: usize = 12;
    pub const PARENT: usize = 16;
    pub const IDENTITY: usize = 24;
    pub const CLIENT: usize = 32;
    pub const REQUEST: usize = 48;
    pub const TIMESTAMP: usize = 56;
}

const _: () = assert!(record::TIMESTAMP + 8 == ENTRY_RECORD_SIZE);
const _: () = assert!(CLIENT_RECORD_SIZE == 16 + 8 + 8);

/// A message as it travels: the sender, and the cluster, group and
/// partition incarnation it belongs to (replication spec §2-§3). The
/// receiver drops frames of another cluster or incarnation, and a transport
/// checks `from` against the peer its connection authenticated (the replica
/// core trusts it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub cluster: u128,
    pub from: ReplicaId,
    pub group: u64,
    pub incarnation: u64,
    pub message: Message,
}

/// Replica command numbers (replication spec §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Command {
    Prepare = 6,
    PrepareOk = 7,
    Commit = 9,
    StartViewChange = 10,
    DoViewChange = 11,
    StartView = 12,
    /// Also a ViewReport, with the reply flag set.
    RequestStartView = 17,
    RequestPrepares = 18,
    RepairPrepare = 19,
    RangeEvicted = 21,
    RequestStateTransfer = 22,
    StateTransferTarget = 23,
    RequestStateChunk = 24,
    StateChunk = 25,
    /// Ours (replication spec §3 leaves 30 and up to implementations).
    ForwardRequest = 30,
    ForwardReply = 31,
    LogFetch = 32,
    LogChunk = 33,
}

impl Command {
    const ALL: [Command; 18] = [
        Command::Prepare,
        Command::PrepareOk,
        Command::Commit,
        Command::StartViewChange,
        Command::DoViewChange,
        Command::StartView,
        Command::RequestStartView,
        Command::RequestPrepares,
        Command::RepairPrepare,
        Command::RangeEvicted,
        Command::RequestStateTransfer,
        Command::StateTransferTarget,
        Command::RequestStateChunk,
        Command::StateChunk,
        Command::ForwardRequest,
        Command::ForwardReply,
        Command::LogFetch,
        Command::LogChunk,
    ];

    pub fn from_u8(value: u8) -> Option<Command> {
        Command::ALL.into_iter().find(|c| *c as u8 == value)
    }

    pub fn of(message: &Message) -> Command {
        match message {
            Message::Prepare { .. } => Command::Prepare,
            Message::PrepareOk { .. } => Command::PrepareOk,
            Message::Commit { .. } => Command::Commit,
            Message::StartViewChange { .. } => Command::StartViewChange,
            Message::DoViewChange { .. } => Command::DoViewChange,
            Message::StartView { .. } => Command::StartView,
            Message::RequestStartView { .. } | Message::ViewReport { .. } => {
                Command::RequestStartView
            }
            Message::RequestPrepares { .. } => Command::RequestPrepares,
            Message::RepairPrepare { .. } => Command::RepairPrepare,
            Message::RangeEvicted { .. } => Command::RangeEvicted,
            Message::RequestStateTransfer { .. } => Command::RequestStateTransfer,
            Message::StateTransferTarget { .. } => Command::StateTransferTarget,
            Message::RequestStateChunk { .. } => Command::RequestStateChunk,
            Message::StateChunk { .. } => Command::StateChunk,
            Message::ForwardRequest { .. } => Command::ForwardRequest,
            Message::ForwardReply { .. } => Command::ForwardReply,
            Message::LogFetch { .. } => Command::LogFetch,
            Message::LogChunk { .. } => Command::LogChunk,
        }
    }

    /// Whether the low half of `checksum` is an entry identity (and the
    /// high half the seal).
    fn carries_identity(raw: u8) -> bool {
        raw == Command::Prepare as u8 || raw == Command::RepairPrepare as u8
    }

    fn group_at(self) -> usize {
        match self {
            Command::Prepare | Command::RepairPrepare => at::prepare::GROUP,
            Command::PrepareOk => at::prepare_ok::GROUP,
            Command::Commit => at::commit::GROUP,
            Command::StartViewChange | Command::RequestStartView => at::start_view::GROUP,
            Command::DoViewChange | Command::StartView => at::view_log::GROUP,
            Command::RequestPrepares => at::repair::GROUP,
            Command::RangeEvicted => at::repair::EVICTED_GROUP,
            Command::RequestStateTransfer
            | Command::StateTransferTarget
            | Command::RequestStateChunk
            | Command::StateChunk => at::transfer::GROUP,
            Command::ForwardRequest | Command::ForwardReply => at::forward::GROUP,
            Command::LogFetch | Command::LogChunk => at::log::GROUP,
        }
    }

    fn incarnation_at(self) -> usize {
        match self {
            Command::Prepare | Command::RepairPrepare => at::prepare::INCARNATION,
            _ => at::INCARNATION,
        }
    }
}

/// Why bytes are not a replica frame. Checked in this order: length,
/// seal, command, size, body checksum, fields, canonical form.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WireError {
    #[error("{len} bytes are shorter than the {HEADER_SIZE}-byte header")]
    Short { len: usize },
    #[error("the header seal does not match its bytes")]
    BadSeal,
    #[error("unknown replica command {command}")]
    UnknownCommand { command: u8 },
    #[error("frame size {size} is smaller than the header")]
    SizeBelowHeader { size: u32 },
    #[error("frame size {size} exceeds the {max_size}-byte limit")]
    TooLarge { size: u32, max_size: usize },
    #[error("the header announces {size} bytes but {len} were given")]
    SizeMismatch { size: usize, len: usize },
    #[error("the body does not match checksum_body")]
    BadBodyChecksum,
    #[error("{field} = {value} is out of range")]
    FieldOutOfRange { field: &'static str, value: u128 },
    #[error("body of command {command} is malformed: {reason}")]
    MalformedBody { command: u8, reason: &'static str },
    #[error("{count} entries exceed the limit of {max}")]
    TooManyEntries { count: usize, max: usize },
    #[error("header byte {offset} differs from what the fields encode (unused bytes are zero)")]
    NonCanonical { offset: usize },
}

/// Encodes a frame. Panics on values no replica sends (a sender id of
/// `REPLICAS_MAX` or more, an entry at op 0, a DoViewChange of more than
/// `DVC_ENTRIES_MAX` entries, a frame past 4 GiB): `decode` refuses each.
pub fn encode(frame: &Frame) -> Vec<u8> {
    assert!(
        frame.from < REPLICAS_MAX,
        "replica {} not in a roster",
        frame.from
    );
    let mut out = vec![0u8; HEADER_SIZE];
    put_body(&frame.message, &mut out);
    let size = u32::try_from(out.len()).expect("a frame's size fits its u32 field");
    let body_checksum = match &frame.message {
        Message::Prepare { entry, .. } | Message::RepairPrepare { entry, .. } => entry.identity,
        _ => xxh3_64(&out[HEADER_SIZE..]),
    };
    let header = header_of(frame, size, body_checksum);
    out[..HEADER_SIZE].copy_from_slice(&header.0);
    debug_assert_eq!(decode(&out, out.len()).as_ref(), Ok(frame));
    out
}

/// Checks a frame's header (its first 256 bytes: seal, command, size
/// against `max_size`) and returns the whole frame's length in bytes.
pub fn frame_size(header: &[u8], max_size: usize) -> Result<usize, WireError> {
    check_header(header, max_size).map(|(_, _, size)| size)
}

/// Decodes one whole frame (`bytes` is exactly the frame). Never panics.
/// Allocates only after the seal and the size (≤ `max_size`) hold: the
/// frame's bytes once (entry bodies are slices of them), plus one `Entry`
/// value per entry record, sized from the records actually present (an
/// `Entry` is at most 1.5 × its 64-byte record).
pub fn decode(bytes: &[u8], max_size: usize) -> Result<Frame, WireError> {
    check_header(bytes, max_size)?;
    decode_shared(Bytes::copy_from_slice(bytes), max_size)
}

/// [`decode`] of a frame already owned: entry bodies share its buffer
/// (nothing is copied).
pub fn decode_shared(bytes: Bytes, max_size: usize) -> Result<Frame, WireError> {
    let (header, command, size) = check_header(&bytes, max_size)?;
    if bytes.len() != size {
        return Err(WireError::SizeMismatch {
            size,
            len: bytes.len(),
        });
    }
    let body = bytes.slice(HEADER_SIZE..);
    let body_checksum = if Command::carries_identity(command as u8) {
        // The entry's identity covers its body: the replica checks it on
        // receipt (`Entry::is_sound`), so the body is not hashed twice.
        header.u128(CHECKSUM) as u64
    } else {
        xxh3_64(&body)
    };
    if header.u128(CHECKSUM_BODY) != u128::from(body_checksum) {
        return Err(WireError::BadBodyChecksum);
    }
    let from = header.u8(REPLICA);
    if from >= REPLICAS_MAX {
        return Err(out_of_range("replica", from));
    }
    let frame = Frame {
        cluster: header.u128(CLUSTER),
        from,
        group: header.u64(command.group_at()),
        incarnation: header.u64(command.incarnation_at()),
        message: decode_message(command, &header, &body)?,
    };
    // Every byte the fields do not explain must be zero, so a frame has one
    // encoding: re-encode the header and compare. Bytes 0..16 follow from
    // the rest once the seal holds.
    let expected = header_of(&frame, header.u32(SIZE_OFFSET), body_checksum);
    let sealed = SEALED_FROM..HEADER_SIZE;
    if let Some(offset) = sealed.into_iter().find(|&i| expected.0[i] != header.0[i]) {
        return Err(WireError::NonCanonical { offset });
    }
    Ok(frame)
}

fn check_header(bytes: &[u8], max_size: usize) -> Result<(Header, Command, usize), WireError> {
    let header = Header::read(bytes)?;
    // The command byte picks the half of `checksum` that holds the seal;
    // it is sealed itself, so a corrupt one fails the check either way.
    let raw = header.u8(COMMAND_OFFSET);
    let seal = xxh3_64(&header.0[SEALED_FROM..]);
    let checksum = header.u128(CHECKSUM);
    let sealed = if Command::carries_identity(raw) {
        checksum >> 64 == u128::from(seal)
    } else {
        checksum == u128::from(seal)
    };
    if !sealed {
        return Err(WireError::BadSeal);
    }
    let command = Command::from_u8(raw).ok_or(WireError::UnknownCommand { command: raw })?;
    let size = header.u32(SIZE_OFFSET);
    if (size as usize) < HEADER_SIZE {
        return Err(WireError::SizeBelowHeader { size });
    }
    if size as usize > max_size {
        return Err(WireError::TooLarge { size, max_size });
    }
    Ok((header, command, size as usize))
}

/// The sealed header of `frame`, whose body is `size - 256` bytes hashing
/// to `body_checksum`.
fn header_of(frame: &Frame, size: u32, body_checksum: u64) -> Header {
    let mut h = Header([0; HEADER_SIZE]);
    let command = Command::of(&frame.message);
    put_fields(&frame.message, &mut h);
    h.put_u64(command.group_at(), frame.group);
    h.put_u64(command.incarnation_at(), frame.incarnation);
    h.put_u128(CHECKSUM_BODY, u128::from(body_checksum));
    h.put_u128(CLUSTER, frame.cluster);
    h.put_u32(SIZE_OFFSET, size);
    h.put_u32(VIEW, frame.message.view().0);
    h.0[COMMAND_OFFSET] = command as u8;
    h.0[REPLICA] = frame.from;
    let seal = u128::from(xxh3_64(&h.0[SEALED_FROM..]));
    let checksum = match &frame.message {
        Message::Prepare { entry, .. } | Message::RepairPrepare { entry, .. } => {
            seal << 64 | u128::from(entry.identity)
        }
        _ => seal,
    };
    h.put_u128(CHECKSUM, checksum);
    h
}

/// Writes the command's own header fields (not group or incarnation).
fn put_fields(message: &Message, h: &mut Header) {
    use at::{prepare_ok, repair, start_view, transfer, view_log};
    match message {
        Message::Prepare { commit, entry, .. } => {
            put_prepare(h, entry);
            h.put_u64(at::prepare::COMMIT, commit.0);
        }
        Message::RepairPrepare { entry, .. } => put_prepare(h, entry),
        Message::PrepareOk { op, identity, .. } => {
            h.put_u128(prepare_ok::IDENTITY, u128::from(*identity));
            h.put_u64(prepare_ok::OP, op.0);
        }
        Message::Commit { commit, .. } => h.put_u64(at::commit::COMMIT, commit.0),
        Message::StartViewChange { .. } | Message::RequestStateTransfer { .. } => {}
        Message::DoViewChange {
            log_view,
            head,
            commit,
            uncertain,
            ..
        } => {
            h.put_u64(view_log::HEAD, head.0);
            h.put_u64(view_log::COMMIT, commit.0);
            h.put_u32(view_log::LOG_VIEW, log_view.0);
            h.0[view_log::UNCERTAIN] = u8::from(*uncertain);
        }
        Message::StartView {
            head,
            commit,
            nonce,
            ..
        } => {
            h.put_u64(view_log::HEAD, head.0);
            h.put_u64(view_log::COMMIT, commit.0);
            h.put_u128(at::NONCE, u128::from(*nonce));
        }
        Message::RequestStartView { nonce, blank, .. } => {
            h.0[start_view::BLANK] = u8::from(*blank);
            h.put_u128(at::NONCE, u128::from(*nonce));
        }
        Message::ViewReport { nonce, blank, .. } => {
            h.0[start_view::REPLY] = 1;
            h.0[start_view::BLANK] = u8::from(*blank);
            h.put_u128(at::NONCE, u128::from(*nonce));
        }
        Message::RequestPrepares { from, to, .. } => {
            h.put_u64(repair::FROM, from.0);
            h.put_u64(repair::TO, to.0);
        }
        Message::RangeEvicted { oldest, .. } => h.put_u64(repair::OLDEST, oldest.0),
        Message::StateTransferTarget {
            entry,
            len,
            checksum,
            ..
        } => {
            h.put_u64(transfer::COMMIT_OP, entry.op.0);
            h.0[transfer::AVAILABLE] = 1;
            h.put_u64(transfer::LEN, *len);
            h.put_u64(transfer::CHECKSUM, *checksum);
        }
        Message::RequestStateChunk { op, offset, .. } | Message::StateChunk { op, offset, .. } => {
            h.put_u64(transfer::OFFSET, *offset);
            h.put_u64(transfer::OP, op.0);
        }
        Message::ForwardRequest { nonce, .. } => h.put_u128(at::NONCE, u128::from(*nonce)),
        Message::ForwardReply {
            nonce, op, code, ..
        } => {
            h.put_u128(at::NONCE, u128::from(*nonce));
            h.put_u64(at::forward::OP, op.0);
            h.put_u32(at::forward::CODE, *code);
        }
        Message::LogFetch {
            nonce,
            from,
            until,
            generation,
            ..
        } => {
            h.put_u128(at::NONCE, u128::from(*nonce));
            h.put_u64(at::log::LOW, *from);
            h.put_u64(at::log::HIGH, *until);
            h.put_u64(at::log::GENERATION, *generation);
        }
        Message::LogChunk {
            nonce, first, end, ..
        } => {
            h.put_u128(at::NONCE, u128::from(*nonce));
            h.put_u64(at::log::LOW, *first);
            h.put_u64(at::log::HIGH, *end);
        }
    }
}

fn put_prepare(h: &mut Header, entry: &Entry) {
    use at::prepare;
    h.put_u128(prepare::CLIENT, entry.client.0);
    h.put_u128(prepare::PARENT, u128::from(entry.parent));
    h.put_u64(prepare::OP, entry.op.0);
    h.put_u64(prepare::TIMESTAMP, entry.timestamp_us);
    h.put_u64(prepare::REQUEST, entry.request.0);
    h.put_u32(prepare::ENTRY_VIEW, entry.view.0);
}

fn put_body(message: &Message, out: &mut Vec<u8>) {
    match message {
        Message::Prepare { entry, .. } | Message::RepairPrepare { entry, .. } => {
            assert!(entry.op > Op::ZERO, "ops start at 1");
            out.extend_from_slice(&entry.body);
        }
        Message::DoViewChange { entries, .. } => {
            assert!(
                entries.len() <= DVC_ENTRIES_MAX,
                "{} entries",
                entries.len()
            );
            entries.iter().for_each(|entry| put_record(out, entry));
        }
        Message::StartView { entries, .. } => entries.iter().for_each(|e| put_record(out, e)),
        Message::StateTransferTarget { entry, clients, .. } => {
            put_record(out, entry);
            for (client, request, op) in clients {
                out.extend_from_slice(&client.0.to_le_bytes());
                out.extend_from_slice(&request.0.to_le_bytes());
                out.extend_from_slice(&op.0.to_le_bytes());
            }
        }
        Message::StateChunk { bytes, .. }
        | Message::ForwardRequest { body: bytes, .. }
        | Message::LogChunk { records: bytes, .. } => out.extend_from_slice(bytes),
        _ => {}
    }
}

/// Appends one entry record (the fixed part, then the body) to `out`: the
/// layout DoViewChange and StartView bodies use, and what a replicated
/// group's journal stores per op ("WALs hold prepares as replicated").
pub fn encode_entry(entry: &Entry, out: &mut Vec<u8>) {
    put_record(out, entry);
}

/// Decodes `bytes` as exactly one entry record (no bytes before or after).
/// The entry's soundness (identity over its content) is the caller's to
/// check.
pub fn decode_entry(bytes: &[u8]) -> Result<Entry, WireError> {
    let (entry, rest) = take_entry(Command::RepairPrepare, &Bytes::copy_from_slice(bytes))?;
    if !rest.is_empty() {
        return Err(malformed(
            Command::RepairPrepare,
            "bytes after the entry record",
        ));
    }
    Ok(entry)
}

/// Decodes a record that may keep only the first bytes of its entry's body
/// (a group whose state machine holds the rest itself, `hold_body` in the
/// engine): the entry with the bytes kept as its body, and the length of
/// the whole body. A whole record decodes as `decode_entry` does.
pub fn decode_entry_prefix(bytes: &[u8]) -> Result<(Entry, usize), WireError> {
    let command = Command::RepairPrepare;
    if bytes.len() < ENTRY_RECORD_SIZE {
        return Err(malformed(command, "an entry record cut short"));
    }
    let body_len =
        u32::from_le_bytes(array(&bytes[..ENTRY_RECORD_SIZE], record::BODY_LEN)) as usize;
    let kept = bytes.len() - ENTRY_RECORD_SIZE;
    if kept > body_len {
        return Err(malformed(command, "bytes after the entry record"));
    }
    // The record as if its body were whole up to what it keeps.
    let mut whole = bytes.to_vec();
    whole[record::BODY_LEN..record::BODY_LEN + 4].copy_from_slice(&(kept as u32).to_le_bytes());
    let (entry, _) = take_entry(command, &Bytes::from(whole))?;
    Ok((entry, body_len))
}

/// The fixed part of an entry's record (its body follows it): with the
/// body, the bytes `encode_entry` writes, for a writer that takes both
/// without joining them.
pub fn entry_record_head(entry: &Entry) -> [u8; ENTRY_RECORD_SIZE] {
    let mut out = Vec::with_capacity(ENTRY_RECORD_SIZE);
    put_record_head(&mut out, entry);
    out.try_into()
        .expect("the fixed part is ENTRY_RECORD_SIZE bytes")
}

fn put_record(out: &mut Vec<u8>, entry: &Entry) {
    put_record_head(out, entry);
    out.extend_from_slice(&entry.body);
}

fn put_record_head(out: &mut Vec<u8>, entry: &Entry) {
    assert!(entry.op > Op::ZERO, "ops start at 1");
    let body_len = u32::try_from(entry.body.len()).expect("an entry body fits a frame");
    out.extend_from_slice(&entry.op.0.to_le_bytes());
    out.extend_from_slice(&entry.view.0.to_le_bytes());
    out.extend_from_slice(&body_len.to_le_bytes());
    out.extend_from_slice(&entry.parent.to_le_bytes());
    out.extend_from_slice(&entry.identity.to_le_bytes());
    out.extend_from_slice(&entry.client.0.to_le_bytes());
    out.extend_from_slice(&entry.request.0.to_le_bytes());
    out.extend_from_slice(&entry.timestamp_us.to_le_bytes());
}

fn decode_message(command: Command, h: &Header, body: &Bytes) -> Result<Message, WireError> {
    use at::{prepare_ok, repair, start_view, transfer, view_log};
    let view = View(h.u32(VIEW));
    if !matches!(
        command,
        Command::Prepare
            | Command::RepairPrepare
            | Command::DoViewChange
            | Command::StartView
            | Command::StateTransferTarget
            | Command::StateChunk
            | Command::ForwardRequest
            | Command::LogChunk
    ) && !body.is_empty()
    {
        return Err(malformed(command, "a body on a header-only command"));
    }
    Ok(match command {
        Command::Prepare => Message::Prepare {
            view,
            commit: Op(h.u64(at::prepare::COMMIT)),
            entry: prepare_entry(h, body)?,
        },
        Command::RepairPrepare => Message::RepairPrepare {
            view,
            entry: prepare_entry(h, body)?,
        },
        Command::PrepareOk => Message::PrepareOk {
            view,
            op: Op(h.u64(prepare_ok::OP)),
            identity: h.u64_in_u128(prepare_ok::IDENTITY, "prepare_checksum")?,
        },
        Command::Commit => Message::Commit {
            view,
            commit: Op(h.u64(at::commit::COMMIT)),
        },
        Command::StartViewChange => Message::StartViewChange { view },
        Command::DoViewChange => Message::DoViewChange {
            view,
            log_view: View(h.u32(view_log::LOG_VIEW)),
            head: Op(h.u64(view_log::HEAD)),
            commit: Op(h.u64(view_log::COMMIT)),
            entries: entry_list(command, body, DVC_ENTRIES_MAX)?,
            uncertain: h.flag(view_log::UNCERTAIN, "uncertain")?,
        },
        Command::StartView => Message::StartView {
            view,
            head: Op(h.u64(view_log::HEAD)),
            commit: Op(h.u64(view_log::COMMIT)),
            entries: entry_list(command, body, usize::MAX)?,
            nonce: h.u64_in_u128(at::NONCE, "nonce")?,
        },
        Command::RequestStartView => {
            let nonce = h.u64_in_u128(at::NONCE, "nonce")?;
            let blank = h.flag(start_view::BLANK, "blank")?;
            match h.flag(start_view::REPLY, "reply")? {
                false => Message::RequestStartView { view, nonce, blank },
                true => Message::ViewReport { view, nonce, blank },
            }
        }
        Command::RequestPrepares => Message::RequestPrepares {
            view,
            from: Op(h.u64(repair::FROM)),
            to: Op(h.u64(repair::TO)),
        },
        Command::RangeEvicted => Message::RangeEvicted {
            view,
            oldest: Op(h.u64(repair::OLDEST)),
        },
        Command::RequestStateTransfer => Message::RequestStateTransfer { view },
        Command::StateTransferTarget => transfer_target(h, view, body)?,
        Command::RequestStateChunk => Message::RequestStateChunk {
            view,
            op: Op(h.u64(transfer::OP)),
            offset: h.u64(transfer::OFFSET),
        },
        Command::StateChunk => Message::StateChunk {
            view,
            op: Op(h.u64(transfer::OP)),
            offset: h.u64(transfer::OFFSET),
            bytes: body.to_vec(),
        },
        Command::ForwardRequest => Message::ForwardRequest {
            view,
            nonce: h.u64_in_u128(at::NONCE, "nonce")?,
            body: body.to_vec(),
        },
        Command::ForwardReply => Message::ForwardReply {
            view,
            nonce: h.u64_in_u128(at::NONCE, "nonce")?,
            op: Op(h.u64(at::forward::OP)),
            code: h.u32(at::forward::CODE),
        },
        Command::LogFetch => Message::LogFetch {
            view,
            nonce: h.u64_in_u128(at::NONCE, "nonce")?,
            from: h.u64(at::log::LOW),
            until: h.u64(at::log::HIGH),
            generation: h.u64(at::log::GENERATION),
        },
        Command::LogChunk => Message::LogChunk {
            view,
            nonce: h.u64_in_u128(at::NONCE, "nonce")?,
            first: h.u64(at::log::LOW),
            end: h.u64(at::log::HIGH),
            records: body.to_vec(),
        },
    })
}

/// The entry a Prepare or RepairPrepare carries in its header and body.
fn prepare_entry(h: &Header, body: &Bytes) -> Result<Entry, WireError> {
    use at::prepare;
    Ok(Entry {
        op: entry_op(h.u64(prepare::OP))?,
        view: View(h.u32(prepare::ENTRY_VIEW)),
        parent: h.u64_in_u128(prepare::PARENT, "parent")?,
        // The low half of `checksum` (spec §3).
        identity: h.u64(CHECKSUM),
        client: ClientId(h.u128(prepare::CLIENT)),
        request: RequestNumber(h.u64(prepare::REQUEST)),
        timestamp_us: h.u64(prepare::TIMESTAMP),
        body: body.clone(),
    })
}

fn transfer_target(h: &Header, view: View, body: &Bytes) -> Result<Message, WireError> {
    use at::transfer;
    let command = Command::StateTransferTarget;
    let available = h.u8(transfer::AVAILABLE);
    if available != 1 {
        return Err(out_of_range("available", available));
    }
    if body.is_empty() {
        return Err(malformed(command, "no entry"));
    }
    let (entry, rows) = take_entry(command, body)?;
    let rows = &rows[..];
    if h.u64(transfer::COMMIT_OP) != entry.op.0 {
        return Err(out_of_range("commit_op", h.u64(transfer::COMMIT_OP)));
    }
    if !rows.len().is_multiple_of(CLIENT_RECORD_SIZE) {
        return Err(malformed(command, "a client record cut short"));
    }
    let clients = rows
        .chunks_exact(CLIENT_RECORD_SIZE)
        .map(|row| {
            let client = ClientId(u128::from_le_bytes(array(row, 0)));
            let request = RequestNumber(u64::from_le_bytes(array(row, 16)));
            (client, request, Op(u64::from_le_bytes(array(row, 24))))
        })
        .collect();
    Ok(Message::StateTransferTarget {
        view,
        entry,
        clients,
        len: h.u64(transfer::LEN),
        checksum: h.u64(transfer::CHECKSUM),
    })
}

/// A body made only of entry records, at most `max` of them. The records
/// are counted first, so the list is allocated once, at its true length.
fn entry_list(command: Command, body: &Bytes, max: usize) -> Result<Vec<Entry>, WireError> {
    let mut count = 0;
    let mut rest = &body[..];
    while !rest.is_empty() {
        let (_, body_len, after) = split_record(command, rest)?;
        rest = &after[body_len..];
        count += 1;
    }
    if count > max {
        return Err(WireError::TooManyEntries { count, max });
    }
    let mut entries = Vec::with_capacity(count);
    let mut rest = body.clone();
    while !rest.is_empty() {
        let (entry, after) = take_entry(command, &rest)?;
        entries.push(entry);
        rest = after;
    }
    assert_eq!(entries.len(), count, "both passes read the same records");
    Ok(entries)
}

/// Decodes the entry record at the front of `bytes`; returns what follows
/// (the entry's body and the rest are slices of `bytes`).
fn take_entry(command: Command, bytes: &Bytes) -> Result<(Entry, Bytes), WireError> {
    let (fixed, body_len, _) = split_record(command, bytes)?;
    let body = bytes.slice(ENTRY_RECORD_SIZE..ENTRY_RECORD_SIZE + body_len);
    let rest = bytes.slice(ENTRY_RECORD_SIZE + body_len..);
    let u64_at = |at| u64::from_le_bytes(array(fixed, at));
    let entry = Entry {
        op: entry_op(u64_at(record::OP))?,
        view: View(u32::from_le_bytes(array(fixed, record::VIEW))),
        parent: u64_at(record::PARENT),
        identity: u64_at(record::IDENTITY),
        client: ClientId(u128::from_le_bytes(array(fixed, record::CLIENT))),
        request: RequestNumber(u64_at(record::REQUEST)),
        timestamp_us: u64_at(record::TIMESTAMP),
        body,
    };
    Ok((entry, rest))
}

/// Splits the record at the front of `bytes` into its fixed part, its body
/// length (checked: the body is there in full) and the rest, body first.
fn split_record(command: Command, bytes: &[u8]) -> Result<(&[u8], usize, &[u8]), WireError> {
    if bytes.len() < ENTRY_RECORD_SIZE {
        return Err(malformed(command, "an entry record cut short"));
    }
    let (fixed, rest) = bytes.split_at(ENTRY_RECORD_SIZE);
    let body_len = u32::from_le_bytes(array(fixed, record::BODY_LEN)) as usize;
    if body_len > rest.len() {
        return Err(malformed(command, "an entry body runs past the frame"));
    }
    Ok((fixed, body_len, rest))
}

/// The `N` bytes at `at` of a fixed-size record or header, whose layout
/// puts every field inside it.
fn array<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    *bytes[at..]
        .first_chunk()
        .expect("a field lies inside its fixed-size record")
}

fn entry_op(op: u64) -> Result<Op, WireError> {
    match op {
        0 => Err(out_of_range("entry op", 0u8)),
        op => Ok(Op(op)),
    }
}

fn out_of_range(field: &'static str, value: impl Into<u128>) -> WireError {
    WireError::FieldOutOfRange {
        field,
        value: value.into(),
    }
}

fn malformed(command: Command, reason: &'static str) -> WireError {
    WireError::MalformedBody {
        command: command as u8,
        reason,
    }
}

/// A 256-byte header, read and written by offset (no alignment needed).
struct Header([u8; HEADER_SIZE]);

impl Header {
    fn read(bytes: &[u8]) -> Result<Header, WireError> {
        let header = bytes.first_chunk::<HEADER_SIZE>();
        header
            .map(|h| Header(*h))
            .ok_or(WireError::Short { len: bytes.len() })
    }

    fn u8(&self, at: usize) -> u8 {
        self.0[at]
    }

    fn u32(&self, at: usize) -> u32 {
        u32::from_le_bytes(array(&self.0, at))
    }

    fn u64(&self, at: usize) -> u64 {
        u64::from_le_bytes(array(&self.0, at))
    }

    fn u128(&self, at: usize) -> u128 {
        u128::from_le_bytes(array(&self.0, at))
    }

    /// A spec u128 field holding one of our u64s: the high half is zero.
    fn u64_in_u128(&self, at: usize, field: &'static str) -> Result<u64, WireError> {
        let value = self.u128(at);
        u64::try_from(value).map_err(|_| out_of_range(field, value))
    }

    fn flag(&self, at: usize, field: &'static str) -> Result<bool, WireError> {
        match self.0[at] {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(out_of_range(field, other)),
        }
    }

    fn put_u32(&mut self, at: usize, value: u32) {
        self.0[at..at + 4].copy_from_slice(&value.to_le_bytes());
    }

    fn put_u64(&mut self, at: usize, value: u64) {
        self.0[at..at + 8].copy_from_slice(&value.to_le_bytes());
    }

    fn put_u128(&mut self, at: usize, value: u128) {
        self.0[at..at + 16].copy_from_slice(&value.to_le_bytes());
    }
}

#[cfg(test)]
mod tests;
