//! Moving a client's stream connection (TCP or WebSocket, plaintext or TLS)
//! to the shard that owns the partition it uses.
//!
//! A request for a partition another shard owns hops there and back (two
//! inbox messages and, when that shard sleeps, two wake-ups). For small
//! batches that is most of the work: one shard serving both ends moved 8
//! producers on one partition x1.39 / x1.18 faster at x0.62 / x0.76 CPU
//! per GB, and one producer of single messages x1.25 / x1.43 at x0.71 /
//! x0.65 (docs/benchmarks.md, session 19). So a connection whose last
//! `MOVE_AFTER` partition requests all went to the same other shard moves
//! there, between two requests: the session's state (its binding, its
//! client-table entry, the session it attached to) goes with a duplicate
//! of the socket, and that shard serves the next request. A connection
//! that spreads its requests over shards stays where it is. A TLS
//! connection carries its rustls session along (`transport::tls_conn`), a
//! WebSocket connection its limits (`transport::websocket::conn`); QUIC
//! connections, whose state lives in their library, never move.

use std::cell::Cell;

pub use crate::node::moved::MovedSession;
use crate::node::ownership::owner;

/// Consecutive partition requests to one other shard before moving there.
pub const MOVE_AFTER: u32 = 4;

/// Where a connection's partition requests have gone lately.
#[derive(Debug, Default)]
pub struct Affinity {
    /// The partition the request being handled used (set by the send and
    /// poll handlers).
    pub noted: Cell<Option<u64>>,
    /// The other shard the last requests went to, and how many in a row.
    streak: Option<(usize, u32)>,
}

impl Affinity {
    /// After a request: the shard to move to, once `MOVE_AFTER` partition
    /// requests in a row went to that one other shard.
    pub fn after_request(&mut self, here: usize, shard_count: usize) -> Option<usize> {
        let ns = self.noted.take()?;
        let target = owner(ns, shard_count);
        if target == here {
            self.streak = None;
            return None;
        }
        let count = match self.streak {
            Some((shard, count)) if shard == target => count + 1,
            _ => 1,
        };
        self.streak = Some((target, count));
        (count >= MOVE_AFTER).then(|| {
            self.streak = None;
            target
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A partition namespace owned by `shard` of `count`.
    fn ns_owned_by(shard: usize, count: usize) -> u64 {
        (0..).find(|ns| owner(*ns, count) == shard).unwrap()
    }

    #[test]
    fn given_requests_to_one_other_shard_when_counting_should_move_after_the_streak() {
        let mut affinity = Affinity::default();
        let there = ns_owned_by(1, 2);
        for _ in 1..MOVE_AFTER {
            affinity.noted.set(Some(there));
            assert_eq!(affinity.after_request(0, 2), None);
        }
        affinity.noted.set(Some(there));
        assert_eq!(affinity.after_request(0, 2), Some(1));
        // A request without a partition neither counts nor breaks a streak.
        assert_eq!(affinity.after_request(0, 2), None);
    }

    #[test]
    fn given_requests_spread_over_shards_when_counting_should_stay() {
        let mut affinity = Affinity::default();
        let (here, there) = (ns_owned_by(0, 2), ns_owned_by(1, 2));
        for i in 0..4 * MOVE_AFTER {
            let ns = if i % MOVE_AFTER == 0 { here } else { there };
            affinity.noted.set(Some(ns));
            assert_eq!(affinity.after_request(0, 2), None, "request {i}");
        }
        // Three shards: alternating between two others never moves.
        let mut affinity = Affinity::default();
        let (b, c) = (ns_owned_by(1, 3), ns_owned_by(2, 3));
        for i in 0..4 * MOVE_AFTER {
            affinity.noted.set(Some(if i % 2 == 0 { b } else { c }));
            assert_eq!(affinity.after_request(0, 3), None);
        }
    }
}
