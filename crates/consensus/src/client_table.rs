//! The client-sessions table (binary protocol §7.4).
//!
//! Each registered client id has a session (the op of its Register, so
//! sessions and eviction ages count in the same op numbering), the highest
//! request number whose reply was committed (the watermark), that request's
//! checksum, the request currently executing, and a small ring of recent
//! replies. `admit` decides what to do with an incoming request; `begin`
//! and `complete` bracket its execution. Nothing here does I/O or reads a
//! clock: the caller passes ops in.
//!
//! Invariants: a request number is executed at most once per client id; the
//! watermark never decreases; at most one request per client is in flight;
//! a client's session and last commit only grow.

use std::collections::{HashMap, VecDeque};

use crate::types::{Op, RequestNumber, Session};

/// Replies kept per client for byte-identical replay of retries.
pub const REPLIES_KEPT: usize = 5;
/// Default capacity (`metadata.clients_table_max`).
pub const DEFAULT_CAPACITY: usize = 8192;

pub use crate::types::ClientId;

#[derive(Debug, Clone)]
struct Entry {
    session: Session,
    user_id: u32,
    watermark: RequestNumber,
    watermark_checksum: u128,
    in_flight: Option<RequestNumber>,
    last_commit: Op,
    replies: VecDeque<(RequestNumber, Vec<u8>)>,
}

/// What to do with an incoming request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// New request: execute it (after `begin`).
    Execute,
    /// A retry whose reply is cached: send these bytes again.
    Replay(Vec<u8>),
    /// A retry whose reply is no longer cached: answer 59 RequestAlreadyApplied.
    AlreadyApplied,
    /// The same request is still executing: answer 57 TransientNotCommitted.
    InFlight,
    /// The client id is not registered: evict with reason NoSession.
    NoSession,
    /// The request carries an older session: evict with reason SessionTooLow.
    SessionTooLow,
    /// A future session, or a reused number with a different body: a client
    /// bug. Never execute; drop it (or close the connection).
    Drop,
}

/// A client's entry on its way from one table to another (`take`, `put`).
#[derive(Debug)]
pub struct MovedEntry(Entry);

/// The table. Capacity-bounded: when full, registering a new client evicts
/// the entry whose last commit is oldest (it re-registers on its next login).
#[derive(Debug)]
pub struct ClientTable {
    entries: HashMap<ClientId, Entry>,
    capacity: usize,
}

impl ClientTable {
    pub fn new(capacity: usize) -> Self {
        assert!(capacity >= 1, "a client table holds at least one client");
        Self {
            entries: HashMap::new(),
            capacity,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Registers (or re-registers) a client with the session its Register
    /// op opened, which must be larger than any earlier session of it.
    /// Returns the client evicted to make room, if any.
    pub fn register(
        &mut self,
        client: ClientId,
        user_id: u32,
        session: Session,
    ) -> Option<ClientId> {
        assert!(client.0 != 0, "client ids are non-zero");
        assert!(session.0 != 0, "sessions are ops, never zero");
        let evicted = if !self.entries.contains_key(&client) && self.entries.len() >= self.capacity
        {
            self.evict_oldest()
        } else {
            None
        };
        let entry = Entry {
            session,
            user_id,
            watermark: RequestNumber(0),
            watermark_checksum: 0,
            in_flight: None,
            last_commit: Op(session.0),
            replies: VecDeque::with_capacity(REPLIES_KEPT),
        };
        if let Some(old) = self.entries.insert(client, entry) {
            assert!(old.session < session, "sessions of one client only grow");
        }
        assert!(self.entries.len() <= self.capacity, "the table is bounded");
        evicted
    }

    /// The entry with the oldest last commit, preferring one with nothing
    /// in flight; when every entry has a request executing, the oldest of
    /// those (its request's completion then finds no entry and is dropped).
    fn evict_oldest(&mut self) -> Option<ClientId> {
        let idle = self
            .entries
            .iter()
            .filter(|(_, e)| e.in_flight.is_none())
            .min_by_key(|(_, e)| e.last_commit);
        let oldest = idle.or_else(|| self.entries.iter().min_by_key(|(_, e)| e.last_commit));
        let client = *oldest?.0;
        self.entries.remove(&client);
        Some(client)
    }

    pub fn unregister(&mut self, client: ClientId) -> bool {
        self.entries.remove(&client).is_some()
    }

    /// Takes a client's entry out, to be put in another table (its
    /// connection moves to another shard, which admits its requests from
    /// then on).
    pub fn take(&mut self, client: ClientId) -> Option<MovedEntry> {
        self.entries.remove(&client).map(MovedEntry)
    }

    /// Puts an entry taken from another table; a newer session already
    /// here wins. Returns the client evicted to make room, if any.
    pub fn put(&mut self, client: ClientId, moved: MovedEntry) -> Option<ClientId> {
        assert!(client.0 != 0, "client ids are non-zero");
        let MovedEntry(entry) = moved;
        if let Some(here) = self.entries.get(&client)
            && here.session >= entry.session
        {
            return None;
        }
        let evicted = if !self.entries.contains_key(&client) && self.entries.len() >= self.capacity
        {
            self.evict_oldest()
        } else {
            None
        };
        self.entries.insert(client, entry);
        assert!(self.entries.len() <= self.capacity, "the table is bounded");
        evicted
    }

    /// The session and user of a registered client.
    pub fn session_of(&self, client: ClientId) -> Option<(Session, u32)> {
        self.entries.get(&client).map(|e| (e.session, e.user_id))
    }

    /// Decides what to do with a request (binary protocol §7.4.2).
    pub fn admit(
        &self,
        client: ClientId,
        session: Session,
        request: RequestNumber,
        checksum: u128,
    ) -> Admission {
        let Some(entry) = self.entries.get(&client) else {
            return Admission::NoSession;
        };
        if session < entry.session {
            return Admission::SessionTooLow;
        }
        if session > entry.session {
            return Admission::Drop;
        }
        // One request per client executes at a time. The SDK is lock-step,
        // so a second one means a client id shared by two connections: it
        // waits, like a retry of the executing request.
        if entry.in_flight.is_some() {
            return Admission::InFlight;
        }
        if request > entry.watermark {
            return Admission::Execute;
        }
        let conflicts = |stored: u128| stored != 0 && checksum != 0 && stored != checksum;
        if request == entry.watermark && conflicts(entry.watermark_checksum) {
            return Admission::Drop;
        }
        match entry.replies.iter().find(|(number, _)| *number == request) {
            Some((_, reply)) => Admission::Replay(reply.clone()),
            None => Admission::AlreadyApplied,
        }
    }

    /// Marks `request` as executing. Only after `admit` returned `Execute`.
    pub fn begin(&mut self, client: ClientId, request: RequestNumber) {
        let entry = self
            .entries
            .get_mut(&client)
            .expect("begin after a successful admit");
        assert!(
            entry.in_flight.is_none(),
            "one request in flight per client"
        );
        assert!(request > entry.watermark, "only new requests execute");
        entry.in_flight = Some(request);
    }

    /// Records the committed reply of `request` (committed at `commit`)
    /// and advances the watermark. `reply` is `None` for replies that must not
    /// be replayed verbatim (they then answer with AlreadyApplied).
    pub fn complete(
        &mut self,
        client: ClientId,
        request: RequestNumber,
        checksum: u128,
        commit: Op,
        reply: Option<Vec<u8>>,
    ) {
        let Some(entry) = self.entries.get_mut(&client) else {
            return; // logged out or evicted while executing
        };
        if entry.in_flight != Some(request) {
            return; // re-registered by another login while executing
        }
        assert!(request > entry.watermark, "the watermark only grows");
        entry.in_flight = None;
        entry.watermark = request;
        entry.watermark_checksum = checksum;
        entry.last_commit = entry.last_commit.max(commit);
        if let Some(reply) = reply {
            if entry.replies.len() == REPLIES_KEPT {
                entry.replies.pop_front();
            }
            entry.replies.push_back((request, reply));
        }
    }

    /// Abandons an executing request that produced no committed effect (e.g.
    /// rejected before reaching the journal), so a retry may execute.
    pub fn abort(&mut self, client: ClientId, request: RequestNumber) {
        if let Some(entry) = self.entries.get_mut(&client)
            && entry.in_flight == Some(request)
        {
            entry.in_flight = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: ClientId = ClientId(0xABCD);
    const S: Session = Session(10);

    fn r(n: u64) -> RequestNumber {
        RequestNumber(n)
    }

    fn table() -> ClientTable {
        let mut t = ClientTable::new(4);
        t.register(C, 7, S);
        t
    }

    fn run(t: &mut ClientTable, request: u64, checksum: u128, reply: &[u8]) {
        assert_eq!(t.admit(C, S, r(request), checksum), Admission::Execute);
        t.begin(C, r(request));
        t.complete(C, r(request), checksum, Op(11), Some(reply.to_vec()));
    }

    #[test]
    fn given_an_entry_moved_to_another_table_when_retried_there_should_replay() {
        let mut from = table();
        run(&mut from, 1, 0x11, b"one");
        let moved = from.take(C).expect("registered");
        assert!(from.is_empty());
        assert_eq!(from.admit(C, S, r(2), 0x22), Admission::NoSession);
        let mut to = ClientTable::new(4);
        assert_eq!(to.put(C, moved), None);
        assert_eq!(
            to.admit(C, S, r(1), 0x11),
            Admission::Replay(b"one".to_vec())
        );
        assert_eq!(to.admit(C, S, r(2), 0x22), Admission::Execute);
        // A newer session already there is kept.
        let mut newer = ClientTable::new(4);
        newer.register(C, 7, Session(20));
        newer.put(C, to.take(C).unwrap());
        assert_eq!(newer.session_of(C), Some((Session(20), 7)));
    }

    #[test]
    fn given_unknown_client_or_old_session_when_admitting_should_evict() {
        let t = table();
        assert_eq!(t.admit(ClientId(1), S, r(1), 0), Admission::NoSession);
        assert_eq!(t.admit(C, Session(9), r(1), 0), Admission::SessionTooLow);
        assert_eq!(t.admit(C, Session(11), r(1), 0), Admission::Drop);
    }

    #[test]
    fn given_retry_when_admitting_should_replay_identical_reply() {
        let mut t = table();
        run(&mut t, 1, 0x55, b"reply-1");
        assert_eq!(
            t.admit(C, S, r(1), 0x55),
            Admission::Replay(b"reply-1".to_vec())
        );
        assert_eq!(t.admit(C, S, r(2), 0x66), Admission::Execute);
    }

    #[test]
    fn given_in_flight_request_when_retried_should_answer_in_flight() {
        let mut t = table();
        t.begin(C, r(1));
        assert_eq!(t.admit(C, S, r(1), 0), Admission::InFlight);
        t.abort(C, r(1));
        assert_eq!(t.admit(C, S, r(1), 0), Admission::Execute);
    }

    #[test]
    fn given_request_executing_when_another_arrives_should_answer_in_flight() {
        let mut t = table();
        t.begin(C, r(1));
        assert_eq!(t.admit(C, S, r(2), 0), Admission::InFlight);
    }

    #[test]
    fn given_re_registration_while_executing_when_completing_should_ignore_the_stale_request() {
        let mut t = table();
        t.begin(C, r(1));
        t.register(C, 7, Session(11));
        t.complete(C, r(1), 0, Op(12), Some(b"r".to_vec()));
        assert_eq!(
            t.admit(C, Session(11), r(1), 0),
            Admission::Execute,
            "the new session starts fresh"
        );
    }

    #[test]
    fn given_reply_aged_out_when_retried_should_answer_already_applied() {
        let mut t = table();
        for request in 1..=(REPLIES_KEPT as u64 + 1) {
            run(&mut t, request, 0, b"r");
        }
        assert_eq!(t.admit(C, S, r(1), 0), Admission::AlreadyApplied);
        assert_eq!(t.admit(C, S, r(2), 0), Admission::Replay(b"r".to_vec()));
    }

    #[test]
    fn given_reused_number_with_other_body_when_admitting_should_drop() {
        let mut t = table();
        run(&mut t, 3, 0x1, b"r");
        assert_eq!(t.admit(C, S, r(3), 0x2), Admission::Drop);
        assert_eq!(
            t.admit(C, S, r(3), 0),
            Admission::Replay(b"r".to_vec()),
            "a zero stamp never conflicts"
        );
    }

    #[test]
    fn given_full_table_when_registering_should_evict_oldest_commit() {
        let mut t = ClientTable::new(2);
        t.register(ClientId(1), 0, Session(5));
        t.register(ClientId(2), 0, Session(6));
        // Client 1 commits later than client 2 registered: 2 is now oldest.
        t.begin(ClientId(1), r(1));
        t.complete(ClientId(1), r(1), 0, Op(8), None);
        assert_eq!(t.register(ClientId(3), 0, Session(9)), Some(ClientId(2)));
        assert_eq!(t.len(), 2);
        assert_eq!(t.session_of(ClientId(3)), Some((Session(9), 0)));
    }

    #[test]
    fn given_full_table_with_every_request_in_flight_when_registering_should_still_evict() {
        let mut t = ClientTable::new(1);
        t.register(ClientId(1), 0, Session(5));
        t.begin(ClientId(1), r(1));
        assert_eq!(t.register(ClientId(2), 0, Session(6)), Some(ClientId(1)));
        t.complete(ClientId(1), r(1), 0, Op(7), None);
        assert_eq!(t.len(), 1, "the evicted client's completion finds nothing");
    }

    #[test]
    #[should_panic(expected = "sessions of one client only grow")]
    fn given_registered_client_when_registering_an_older_session_should_trip() {
        let mut t = table();
        t.register(C, 7, Session(3));
    }
}
