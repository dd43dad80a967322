//! Identifiers and positions of the replication protocol, as newtypes so
//! that an op, a view, a session and a request number never stand side by
//! side as bare integers (replication spec, "Terms").

use std::fmt;

/// A log position of one group: 1-based, so `Op::ZERO` means "none yet".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Op(pub u64);

impl Op {
    pub const ZERO: Op = Op(0);

    /// The op after this one.
    pub fn next(self) -> Op {
        Op(self.0.checked_add(1).expect("op numbers never overflow"))
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "op {}", self.0)
    }
}

/// A view number; the primary of view `v` is replica `v mod n`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct View(pub u32);

/// A client session: the op of the Register that opened it (binary
/// protocol §7.3.7), so it is unique within the metadata group and grows
/// with every registration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Session(pub u64);

impl Session {
    /// The session a Register committed at `op` opens.
    pub fn of_register(op: Op) -> Session {
        assert!(op > Op::ZERO, "a Register is a real op");
        Session(op.0)
    }
}

/// A client's request number: 1, 2, 3... per session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestNumber(pub u64);

/// A client's 128-bit id (non-zero for clients; 0 marks server-made ops).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClientId(pub u128);

/// The largest replica group the protocol supports.
pub const REPLICAS_MAX: u8 = 6;

/// Quorum sizes of a group of `n` replicas (replication spec §2):
/// replication = ceil(n/2) capped at 3 (2 for n = 2); view change =
/// n - replication + 1 (2 for n = 2); nack = n - replication + 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quorums {
    pub replication: u8,
    pub view_change: u8,
    pub nack: u8,
}

impl Quorums {
    pub fn of(n: u8) -> Quorums {
        assert!((1..=REPLICAS_MAX).contains(&n), "1..=6 replicas, not {n}");
        let replication = if n == 2 { 2 } else { n.div_ceil(2).min(3) };
        let nack = n - replication + 1;
        let view_change = if n == 2 { 2 } else { nack };
        let quorums = Quorums {
            replication,
            view_change,
            nack,
        };
        // Any replication quorum meets any view-change quorum, so a new
        // view always hears of every committed op.
        assert!(quorums.replication + quorums.view_change > n);
        quorums
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_group_sizes_when_computing_quorums_should_match_the_spec_table() {
        // replication spec §2: n = 1..6.
        let expected = [
            (1, 1, 1),
            (2, 2, 1),
            (2, 2, 2),
            (2, 3, 3),
            (3, 3, 3),
            (3, 4, 4),
        ];
        for (n, (replication, view_change, nack)) in (1..=6).zip(expected) {
            let q = Quorums::of(n);
            assert_eq!(
                (q.replication, q.view_change, q.nack),
                (replication, view_change, nack),
                "n = {n}"
            );
        }
    }

    #[test]
    #[should_panic(expected = "a Register is a real op")]
    fn given_op_zero_when_opening_a_session_should_refuse() {
        Session::of_register(Op::ZERO);
    }
}
