//! Deliberate protocol bugs, compiled only with the `planted-bugs`
//! feature, one selected per run by the simulator: each must break an
//! invariant the simulator checks, or the simulator is too weak.

use std::sync::atomic::{AtomicU8, Ordering};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Bug {
    None = 0,
    /// The primary commits an op on its own acknowledgement.
    CommitBeforeQuorum = 1,
    /// A backup sends PrepareOk before the journal write is synced.
    AckBeforeFsync = 2,
    /// The new primary picks the longest log, whatever its log view.
    DvcIgnoresLogView = 3,
    /// A replica that found a damaged entry treats it (and what follows)
    /// as never written, and votes on the shortened log.
    NackCorruptEntry = 4,
}

impl Bug {
    pub const ALL: [(&'static str, Bug); 4] = [
        ("commit-before-quorum", Bug::CommitBeforeQuorum),
        ("ack-before-fsync", Bug::AckBeforeFsync),
        ("dvc-ignores-log-view", Bug::DvcIgnoresLogView),
        ("nack-corrupt-entry", Bug::NackCorruptEntry),
    ];

    pub fn named(name: &str) -> Option<Bug> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, b)| *b)
    }
}

static SELECTED: AtomicU8 = AtomicU8::new(0);

/// Plants `bug` for every replica of this process.
pub fn plant(bug: Bug) {
    SELECTED.store(bug as u8, Ordering::Relaxed);
}

pub fn is(bug: Bug) -> bool {
    SELECTED.load(Ordering::Relaxed) == bug as u8
}
