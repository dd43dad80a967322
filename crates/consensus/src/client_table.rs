//! The client-sessions table (binary protocol §7.4).
//!
//! Each registered client id has a session number (the commit position of its
//! registration), the highest request number whose reply was committed (the
//! watermark), that request's checksum, the request currently executing, and
//! a small ring of recent replies. `admit` decides what to do with an incoming
//! request; `begin` and `complete` bracket its execution. Nothing here does
//! I/O or reads a clock: the caller passes commit positions in.
//!
//! Invariants: a request number is executed at most once per client id; the
//! watermark never decreases; at most one request per client is in flight.

use std::collections::{HashMap, VecDeque};

/// Replies kept per client for byte-identical replay of retries.
pub const REPLIES_KEPT: usize = 5;
/// Default capacity (`metadata.clients_table_max`).
pub const DEFAULT_CAPACITY: usize = 8192;

pub type ClientId = u128;

#[derive(Debug, Clone)]
struct Entry {
    session: u64,
    user_id: u32,
    watermark: u64,
    watermark_checksum: u128,
    in_flight: Option<u64>,
    last_commit: u64,
    replies: VecDeque<(u64, Vec<u8>)>,
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

    /// Registers (or re-registers) a client at commit position `session`,
    /// which must be non-zero and larger than any earlier session of it.
    /// Returns the client evicted to make room, if any.
    pub fn register(&mut self, client: ClientId, user_id: u32, session: u64) -> Option<ClientId> {
        assert!(client != 0, "client ids are non-zero");
        assert!(session != 0, "session numbers are non-zero");
        let evicted = if !self.entries.contains_key(&client) && self.entries.len() >= self.capacity
        {
            self.evict_oldest()
        } else {
            None
        };
        let entry = Entry {
            session,
            user_id,
            watermark: 0,
            watermark_checksum: 0,
            in_flight: None,
            last_commit: session,
            replies: VecDeque::with_capacity(REPLIES_KEPT),
        };
        if let Some(old) = self.entries.insert(client, entry) {
            assert!(old.session < session, "sessions of one client only grow");
        }
        evicted
    }

    fn evict_oldest(&mut self) -> Option<ClientId> {
        let oldest = self
            .entries
            .iter()
            .filter(|(_, e)| e.in_flight.is_none())
            .min_by_key(|(_, e)| e.last_commit);
        let client = *oldest?.0;
        self.entries.remove(&client);
        Some(client)
    }

    pub fn unregister(&mut self, client: ClientId) -> bool {
        self.entries.remove(&client).is_some()
    }

    /// The session and user of a registered client.
    pub fn session_of(&self, client: ClientId) -> Option<(u64, u32)> {
        self.entries.get(&client).map(|e| (e.session, e.user_id))
    }

    /// Decides what to do with a request (binary protocol §7.4.2).
    pub fn admit(&self, client: ClientId, session: u64, request: u64, checksum: u128) -> Admission {
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
    pub fn begin(&mut self, client: ClientId, request: u64) {
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

    /// Records the committed reply of `request` (at commit position `commit`)
    /// and advances the watermark. `reply` is `None` for replies that must not
    /// be replayed verbatim (they then answer with AlreadyApplied).
    pub fn complete(
        &mut self,
        client: ClientId,
        request: u64,
        checksum: u128,
        commit: u64,
        reply: Option<Vec<u8>>,
    ) {
        let Some(entry) = self.entries.get_mut(&client) else {
            return; // logged out or evicted while executing
        };
        if entry.in_flight != Some(request) {
            return; // re-registered by another login while executing
        }
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
    pub fn abort(&mut self, client: ClientId, request: u64) {
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

    const C: ClientId = 0xABCD;

    fn table() -> ClientTable {
        let mut t = ClientTable::new(4);
        t.register(C, 7, 10);
        t
    }

    fn run(t: &mut ClientTable, request: u64, checksum: u128, reply: &[u8]) {
        assert_eq!(t.admit(C, 10, request, checksum), Admission::Execute);
        t.begin(C, request);
        t.complete(C, request, checksum, 11, Some(reply.to_vec()));
    }

    #[test]
    fn given_unknown_client_or_old_session_when_admitting_should_evict() {
        let t = table();
        assert_eq!(t.admit(1, 10, 1, 0), Admission::NoSession);
        assert_eq!(t.admit(C, 9, 1, 0), Admission::SessionTooLow);
        assert_eq!(t.admit(C, 11, 1, 0), Admission::Drop);
    }

    #[test]
    fn given_retry_when_admitting_should_replay_identical_reply() {
        let mut t = table();
        run(&mut t, 1, 0x55, b"reply-1");
        assert_eq!(
            t.admit(C, 10, 1, 0x55),
            Admission::Replay(b"reply-1".to_vec())
        );
        assert_eq!(t.admit(C, 10, 2, 0x66), Admission::Execute);
    }

    #[test]
    fn given_in_flight_request_when_retried_should_answer_in_flight() {
        let mut t = table();
        t.begin(C, 1);
        assert_eq!(t.admit(C, 10, 1, 0), Admission::InFlight);
        t.abort(C, 1);
        assert_eq!(t.admit(C, 10, 1, 0), Admission::Execute);
    }

    #[test]
    fn given_request_executing_when_another_arrives_should_answer_in_flight() {
        let mut t = table();
        t.begin(C, 1);
        assert_eq!(t.admit(C, 10, 2, 0), Admission::InFlight);
    }

    #[test]
    fn given_re_registration_while_executing_when_completing_should_ignore_the_stale_request() {
        let mut t = table();
        t.begin(C, 1);
        t.register(C, 7, 11);
        t.complete(C, 1, 0, 12, Some(b"r".to_vec()));
        assert_eq!(
            t.admit(C, 11, 1, 0),
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
        assert_eq!(t.admit(C, 10, 1, 0), Admission::AlreadyApplied);
        assert_eq!(t.admit(C, 10, 2, 0), Admission::Replay(b"r".to_vec()));
    }

    #[test]
    fn given_reused_number_with_other_body_when_admitting_should_drop() {
        let mut t = table();
        run(&mut t, 3, 0x1, b"r");
        assert_eq!(t.admit(C, 10, 3, 0x2), Admission::Drop);
        assert_eq!(
            t.admit(C, 10, 3, 0),
            Admission::Replay(b"r".to_vec()),
            "a zero stamp never conflicts"
        );
    }

    #[test]
    fn given_full_table_when_registering_should_evict_oldest_commit() {
        let mut t = ClientTable::new(2);
        t.register(1, 0, 5);
        t.register(2, 0, 6);
        assert_eq!(t.register(3, 0, 7), Some(1));
        assert_eq!(t.len(), 2);
        assert_eq!(t.session_of(3), Some((7, 0)));
    }
}
