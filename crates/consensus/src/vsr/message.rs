//! What replicas of one group say to each other (replication spec §3), as
//! in-memory values: the wire layout of each frame is the server issue's;
//! the fields and their meaning are fixed here.
//!
//! A log entry's identity is XXH3-64 over everything but its view, so a
//! prepare restamped into a newer view keeps it, and the parent link
//! (the identity of the entry one op below) chains a log.

use bytes::Bytes;
use protocol::checksum::Xxh3Stream;

use crate::types::{ClientId, Op, RequestNumber, View};

/// A replica's index in the roster.
pub type ReplicaId = u8;

/// One prepared operation of a group's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub op: Op,
    /// The view whose primary prepared it.
    pub view: View,
    /// The identity of the entry at `op - 1` (0 below op 1).
    pub parent: u64,
    pub identity: u64,
    pub client: ClientId,
    pub request: RequestNumber,
    pub timestamp_us: u64,
    /// Shared, never copied: the log, the prepares to each backup and the
    /// apply all hold the same bytes.
    pub body: Bytes,
}

impl Entry {
    pub fn new(op: Op, view: View, parent: u64, request: Request, timestamp_us: u64) -> Entry {
        assert!(op > Op::ZERO, "ops start at 1");
        let identity = identity_of(
            op,
            parent,
            request.client,
            request.number,
            timestamp_us,
            &request.body,
        );
        Entry {
            op,
            view,
            parent,
            identity,
            client: request.client,
            request: request.number,
            timestamp_us,
            body: request.body,
        }
    }

    /// Whether the identity matches the content (a corrupt entry does not).
    pub fn is_sound(&self) -> bool {
        self.identity
            == identity_of(
                self.op,
                self.parent,
                self.client,
                self.request,
                self.timestamp_us,
                &self.body,
            )
    }
}

fn identity_of(
    op: Op,
    parent: u64,
    client: ClientId,
    request: RequestNumber,
    timestamp_us: u64,
    body: &[u8],
) -> u64 {
    let mut hash = Xxh3Stream::new();
    hash.update(&op.0.to_le_bytes());
    hash.update(&parent.to_le_bytes());
    hash.update(&client.0.to_le_bytes());
    hash.update(&request.0.to_le_bytes());
    hash.update(&timestamp_us.to_le_bytes());
    hash.update(body);
    hash.finish()
}

/// The state of a group as of one committed op: what a checkpoint keeps
/// instead of the journal below it, and what state transfer installs on a
/// replica whose log ends below every peer's journal (replication spec
/// §6.5). Equal ops give byte-equal snapshots on every replica.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The op the snapshot was taken at (committed), kept whole: the next
    /// op chains onto its identity, and a DoViewChange always has a head.
    pub entry: Entry,
    /// The replicated client table as of `entry.op`: each client's latest
    /// committed request and the op it committed at.
    pub clients: Vec<(ClientId, RequestNumber, Op)>,
    /// The state machine's own bytes (opaque here).
    pub state: Vec<u8>,
}

impl Snapshot {
    pub fn op(&self) -> Op {
        self.entry.op
    }

    /// The checksum a transfer verifies the state bytes against.
    pub fn state_checksum(&self) -> u64 {
        checksum_of(&self.state)
    }
}

/// XXH3-64 of a byte string (a state transfer's artifact checksum).
pub fn checksum_of(bytes: &[u8]) -> u64 {
    let mut hash = Xxh3Stream::new();
    hash.update(bytes);
    hash.finish()
}

/// A client's request as it reaches the primary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub client: ClientId,
    pub number: RequestNumber,
    pub body: Bytes,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// Primary → backups: a new (or retransmitted) entry.
    Prepare {
        view: View,
        commit: Op,
        entry: Entry,
    },
    /// Backup → primary: `op` (with `identity`) is durable in my journal.
    PrepareOk { view: View, op: Op, identity: u64 },
    /// Primary → backups: heartbeat and commit point.
    Commit { view: View, commit: Op },
    /// A vote to leave the current view for `view`.
    StartViewChange { view: View },
    /// To the primary of `view`: my log's suffix (at most
    /// `DVC_ENTRIES_MAX`, head first) and where it stands.
    DoViewChange {
        view: View,
        log_view: View,
        head: Op,
        commit: Op,
        entries: Vec<Entry>,
        /// The sender's head is uncertain (it may have lost entries it
        /// acknowledged): its log counts only as replication spec §5.5
        /// allows, and its head never nacks.
        uncertain: bool,
    },
    /// New primary → all: the view's log suffix and commit point; `nonce`
    /// echoes a probe's nonce (0 otherwise).
    StartView {
        view: View,
        head: Op,
        commit: Op,
        entries: Vec<Entry>,
        nonce: u64,
    },
    /// A recovering replica asks the current primary for its view;
    /// `blank`: its journal is gone (a wiped replica), so every replica
    /// answers with a ViewReport.
    RequestStartView { view: View, nonce: u64, blank: bool },
    /// Any replica → a blank prober: my view and whether I am blank too,
    /// echoing the probe's nonce.
    ViewReport { view: View, nonce: u64, blank: bool },
    /// Asks for the entries `from..=to` (answered with RepairPrepares).
    RequestPrepares { view: View, from: Op, to: Op },
    /// A journaled entry sent to repair a peer's log; taken only where it
    /// chains onto the receiver's head.
    RepairPrepare { view: View, entry: Entry },
    /// An answer to RequestPrepares asking below what the sender keeps:
    /// its journal starts at `oldest` (its checkpoint); older ops come only
    /// by state transfer.
    RangeEvicted { view: View, oldest: Op },
    /// Asks for the sender's latest checkpoint.
    RequestStateTransfer { view: View },
    /// The checkpoint on offer: its op's entry and client table here, its
    /// state as `len` bytes (checksum `checksum`) fetched chunk by chunk.
    StateTransferTarget {
        view: View,
        entry: Entry,
        clients: Vec<(ClientId, RequestNumber, Op)>,
        len: u64,
        checksum: u64,
    },
    /// Asks for the state bytes of the checkpoint at `op` from `offset`.
    RequestStateChunk { view: View, op: Op, offset: u64 },
    /// State bytes of the checkpoint at `op`, starting at `offset`.
    StateChunk {
        view: View,
        op: Op,
        offset: u64,
        bytes: Vec<u8>,
    },
    /// A node → its group's primary: an op a client of that node asked for
    /// that only the primary may prepare (a session's Register or Logout,
    /// replication spec §1); `nonce` pairs it with its reply. Not a replica
    /// message: the node's driver handles it, the replica never sees it.
    ForwardRequest {
        view: View,
        nonce: u64,
        body: Vec<u8>,
    },
    /// The primary → the forwarding node: the op committed at `op` (`code`
    /// 0), or was refused with the Iggy error `code` (nothing committed).
    ForwardReply {
        view: View,
        nonce: u64,
        op: Op,
        code: u32,
    },
    /// A partition replica refilling its log below a checkpoint it
    /// installed → a peer: the committed batches from offset `from` up to
    /// (not including) `until`, paired with the answer by `nonce`, of the
    /// log as purge number `generation` left it (offsets restart at every
    /// purge: a peer of another generation sends none). Not a replica
    /// message: the node's driver serves it from its segments.
    LogFetch {
        view: View,
        nonce: u64,
        from: u64,
        until: u64,
        generation: u64,
    },
    /// The answer to a `LogFetch`: the peer's oldest retained offset
    /// (`first`), the end of what it could send (`end`), and whole batch
    /// records, in offset order, from `max(from, first)` to `end`.
    LogChunk {
        view: View,
        nonce: u64,
        first: u64,
        end: u64,
        records: Vec<u8>,
    },
}

impl Message {
    pub fn view(&self) -> View {
        match self {
            Message::Prepare { view, .. }
            | Message::PrepareOk { view, .. }
            | Message::Commit { view, .. }
            | Message::StartViewChange { view }
            | Message::DoViewChange { view, .. }
            | Message::StartView { view, .. }
            | Message::RequestStartView { view, .. }
            | Message::ViewReport { view, .. }
            | Message::RequestPrepares { view, .. }
            | Message::RepairPrepare { view, .. }
            | Message::RangeEvicted { view, .. }
            | Message::RequestStateTransfer { view }
            | Message::StateTransferTarget { view, .. }
            | Message::RequestStateChunk { view, .. }
            | Message::StateChunk { view, .. }
            | Message::ForwardRequest { view, .. }
            | Message::ForwardReply { view, .. }
            | Message::LogFetch { view, .. }
            | Message::LogChunk { view, .. } => *view,
        }
    }
}

/// A message with its sender and receiver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    pub from: ReplicaId,
    pub to: ReplicaId,
    pub message: Message,
}
