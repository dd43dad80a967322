//! The commit path of one consensus group on its primary (replication spec
//! §2, §4.1, §4.3), sans-IO: the caller feeds in requests, journal progress
//! and acknowledgements, and performs what comes back.
//!
//! Order of events for one op: `prepare` fixes its number (`head + 1`) and
//! timestamp (`max(now, last + 1)`); the caller journals it and reports
//! `on_written` (in the kernel) and `on_synced` (fsynced). The replica's own
//! acknowledgement follows its group's durability (§4.3): `Written` groups
//! (partitions under `replicated`) count an op once written, `Synced` ones
//! (metadata, `persisted`) once fsynced. Backups' PrepareOks arrive through
//! `on_prepare_ok`. An op commits when a replication quorum acknowledged it
//! and every op below it committed; the caller applies committed ops in
//! order and reports each with `on_applied`.
//!
//! Invariants (checked on every transition): commit_min ≤ commit_max ≤
//! head; synced ≤ written ≤ head; the pipeline holds exactly the ops
//! (commit_max, head]; ops, views and timestamps never go back.

use std::collections::VecDeque;
use std::ops::RangeInclusive;

use crate::types::{Op, Quorums, View};

/// A DVC addresses at most this many ops, so no pipeline may be deeper
/// (replication spec §4.1).
pub const PIPELINE_DEPTH_MAX: usize = 127;
/// Default `metadata.prepare_queue_depth` / `partition.prepare_queue_depth`.
pub const PIPELINE_DEPTH_DEFAULT: usize = 32;

/// When this replica's own copy of an op counts as an acknowledgement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Once the journal write completed (in the page cache): survives a
    /// process kill, not a power loss.
    Written,
    /// Once the journal is fsynced through the op.
    Synced,
}

/// A group's fixed shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupConfig {
    pub replica_count: u8,
    /// This replica's index in the roster.
    pub replica: u8,
    pub durability: Durability,
    /// Ops prepared but not yet committed, at most.
    pub pipeline_depth: usize,
}

impl GroupConfig {
    /// A group of one (clustering off).
    pub fn single(durability: Durability) -> GroupConfig {
        GroupConfig {
            replica_count: 1,
            replica: 0,
            durability,
            pipeline_depth: PIPELINE_DEPTH_DEFAULT,
        }
    }
}

/// Where a group stands after restart: its journal's head (every op in it
/// is committed on a group of one, replication spec §6.2) and the newest
/// timestamp it stamped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recovered {
    pub view: View,
    pub head: Op,
    pub last_timestamp_us: u64,
}

/// What `prepare` fixed for a new op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prepared {
    pub op: Op,
    pub view: View,
    pub timestamp_us: u64,
}

/// Why `prepare` refused (the request never entered the pipeline, so a
/// retry is safe).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("the prepare pipeline is full")]
    PipelineFull,
    #[error("this replica is not the primary of view {view:?}")]
    NotPrimary { view: View },
}

#[derive(Debug, Clone, Copy)]
struct InFlight {
    op: Op,
    /// Bit `r` set: replica `r` acknowledged it.
    acks: u8,
}

/// The commit pipeline of one group on one replica.
#[derive(Debug)]
pub struct Replica {
    config: GroupConfig,
    quorums: Quorums,
    view: View,
    head: Op,
    written: Op,
    synced: Op,
    commit_max: Op,
    commit_min: Op,
    last_timestamp_us: u64,
    pipeline: VecDeque<InFlight>,
}

impl Replica {
    /// Resumes a group from its journal. A group of one has committed its
    /// whole journal; a larger group's journal head is only a candidate
    /// (the view change decides it) and is not resumed here.
    pub fn open(config: GroupConfig, recovered: Recovered) -> Replica {
        assert!(config.replica < config.replica_count, "replica in roster");
        assert!(
            (1..=PIPELINE_DEPTH_MAX).contains(&config.pipeline_depth),
            "pipeline depth 1..=127"
        );
        assert_eq!(
            config.replica_count, 1,
            "only a group of one resumes its journal as committed"
        );
        let replica = Replica {
            quorums: Quorums::of(config.replica_count),
            config,
            view: recovered.view,
            head: recovered.head,
            written: recovered.head,
            synced: recovered.head,
            commit_max: recovered.head,
            commit_min: recovered.head,
            last_timestamp_us: recovered.last_timestamp_us,
            pipeline: VecDeque::new(),
        };
        replica.check_invariants();
        replica
    }

    pub fn head(&self) -> Op {
        self.head
    }

    pub fn view(&self) -> View {
        self.view
    }

    /// Highest op known committed.
    pub fn commit_max(&self) -> Op {
        self.commit_max
    }

    /// Highest op applied here.
    pub fn commit_min(&self) -> Op {
        self.commit_min
    }

    pub fn is_primary(&self) -> bool {
        self.view.0 % u32::from(self.config.replica_count) == u32::from(self.config.replica)
    }

    /// The newest timestamp this group stamped.
    pub fn last_timestamp_us(&self) -> u64 {
        self.last_timestamp_us
    }

    /// The timestamp a prepare made now would carry: never below or equal
    /// to the last one, so a log's timestamps strictly increase.
    pub fn next_timestamp(&self, now_us: u64) -> u64 {
        now_us.max(self.last_timestamp_us + 1)
    }

    /// Admits a new op at the head of the log. The caller must journal it
    /// (with exactly this op number and timestamp) before anything else.
    pub fn prepare(&mut self, now_us: u64) -> Result<Prepared, Refusal> {
        if !self.is_primary() {
            return Err(Refusal::NotPrimary { view: self.view });
        }
        if self.pipeline.len() >= self.config.pipeline_depth {
            return Err(Refusal::PipelineFull);
        }
        let head_before = self.head;
        let timestamp_us = self.next_timestamp(now_us);
        self.head = self.head.next();
        self.last_timestamp_us = timestamp_us;
        self.pipeline.push_back(InFlight {
            op: self.head,
            acks: 0,
        });
        self.check_invariants();
        assert_eq!(self.head, head_before.next(), "one op per prepare");
        Ok(Prepared {
            op: self.head,
            view: self.view,
            timestamp_us,
        })
    }

    /// The journal holds every op through `through` (written, maybe not
    /// synced). Returns the ops that became committed, to apply in order.
    pub fn on_written(&mut self, through: Op) -> Option<RangeInclusive<Op>> {
        assert!(through <= self.head, "written beyond the head");
        self.written = self.written.max(through);
        if self.config.durability == Durability::Written {
            self.self_ack(self.written);
        }
        self.advance_commit()
    }

    /// The journal is fsynced through `through` (which implies written).
    pub fn on_synced(&mut self, through: Op) -> Option<RangeInclusive<Op>> {
        assert!(through <= self.head, "synced beyond the head");
        self.written = self.written.max(through);
        self.synced = self.synced.max(through);
        self.self_ack(self.written);
        self.advance_commit()
    }

    /// This replica's own copy of the single op `op` became durable as its
    /// group's durability requires (for groups whose ops complete out of
    /// order, such as a partition's appends and offset stores).
    pub fn on_local_ack(&mut self, op: Op) -> Option<RangeInclusive<Op>> {
        assert!(
            op > self.commit_max && op <= self.head,
            "acked op in the pipeline"
        );
        let own = 1u8 << self.config.replica;
        let entry = self
            .pipeline
            .iter_mut()
            .find(|e| e.op == op)
            .expect("every op in (commit_max, head] is in the pipeline");
        entry.acks |= own;
        self.advance_commit()
    }

    /// A backup's PrepareOk for `op` in the current view.
    pub fn on_prepare_ok(&mut self, from: u8, op: Op) -> Option<RangeInclusive<Op>> {
        assert!(
            from < self.config.replica_count,
            "ack from a roster replica"
        );
        assert!(
            from != self.config.replica,
            "own acks come from the journal"
        );
        if let Some(entry) = self.pipeline.iter_mut().find(|e| e.op == op) {
            entry.acks |= 1 << from;
        }
        self.advance_commit()
    }

    /// The caller applied `op` (the next committed op, in order).
    pub fn on_applied(&mut self, op: Op) {
        assert_eq!(op, self.commit_min.next(), "ops apply in order, once");
        assert!(op <= self.commit_max, "only committed ops apply");
        self.commit_min = op;
        self.check_invariants();
    }

    fn self_ack(&mut self, through: Op) {
        let own = 1u8 << self.config.replica;
        for entry in self.pipeline.iter_mut().filter(|e| e.op <= through) {
            entry.acks |= own;
        }
    }

    /// Commits the longest run of quorum-acknowledged ops at the front of
    /// the pipeline (an op never commits before the ops below it).
    fn advance_commit(&mut self) -> Option<RangeInclusive<Op>> {
        let before = self.commit_max;
        let quorum = u32::from(self.quorums.replication);
        while let Some(front) = self.pipeline.front() {
            if front.acks.count_ones() < quorum {
                break;
            }
            assert_eq!(front.op, self.commit_max.next(), "pipeline in op order");
            self.commit_max = front.op;
            self.pipeline.pop_front();
        }
        self.check_invariants();
        (self.commit_max > before).then(|| before.next()..=self.commit_max)
    }

    fn check_invariants(&self) {
        assert!(
            self.commit_min <= self.commit_max,
            "commit_min <= commit_max"
        );
        assert!(self.commit_max <= self.head, "commit_max <= head");
        assert!(self.synced <= self.written, "synced <= written");
        assert!(self.written <= self.head, "written <= head");
        assert_eq!(
            self.pipeline.len() as u64,
            self.head.0 - self.commit_max.0,
            "the pipeline holds exactly (commit_max, head]"
        );
        assert!(self.pipeline.len() <= self.config.pipeline_depth);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn single(durability: Durability) -> Replica {
        Replica::open(GroupConfig::single(durability), Recovered::default())
    }

    #[test]
    fn given_synced_group_when_only_written_should_not_commit() {
        let mut r = single(Durability::Synced);
        let p = r.prepare(100).unwrap();
        assert_eq!(p.op, Op(1));
        assert_eq!(r.on_written(Op(1)), None, "metadata waits for the fsync");
        assert_eq!(r.on_synced(Op(1)), Some(Op(1)..=Op(1)));
        r.on_applied(Op(1));
        assert_eq!(r.commit_min(), Op(1));
    }

    #[test]
    fn given_written_group_when_written_should_commit_without_fsync() {
        let mut r = single(Durability::Written);
        r.prepare(100).unwrap();
        r.prepare(100).unwrap();
        assert_eq!(r.on_written(Op(2)), Some(Op(1)..=Op(2)));
    }

    #[test]
    fn given_clock_going_back_when_preparing_should_keep_timestamps_increasing() {
        let mut r = single(Durability::Synced);
        let a = r.prepare(500).unwrap();
        let b = r.prepare(400).unwrap();
        assert!(b.timestamp_us > a.timestamp_us);
    }

    #[test]
    fn given_recovered_journal_when_opening_should_continue_its_numbering() {
        let recovered = Recovered {
            view: View(0),
            head: Op(41),
            last_timestamp_us: 9,
        };
        let mut r = Replica::open(GroupConfig::single(Durability::Synced), recovered);
        assert_eq!(
            r.commit_max(),
            Op(41),
            "a group of one committed its journal"
        );
        let p = r.prepare(1).unwrap();
        assert_eq!(p.op, Op(42));
        assert_eq!(p.timestamp_us, 10);
    }

    #[test]
    fn given_full_pipeline_when_preparing_should_refuse_until_a_commit() {
        let config = GroupConfig {
            pipeline_depth: 2,
            ..GroupConfig::single(Durability::Synced)
        };
        let mut r = Replica::open(config, Recovered::default());
        r.prepare(1).unwrap();
        r.prepare(1).unwrap();
        assert_eq!(r.prepare(1), Err(Refusal::PipelineFull));
        r.on_synced(Op(1));
        assert_eq!(r.prepare(1).unwrap().op, Op(3));
    }

    #[test]
    fn given_ops_acked_out_of_order_when_acking_should_commit_only_the_prefix() {
        let mut r = single(Durability::Written);
        for _ in 0..3 {
            r.prepare(1).unwrap();
        }
        assert_eq!(r.on_local_ack(Op(2)), None, "op 1 is not durable yet");
        assert_eq!(r.on_local_ack(Op(3)), None);
        assert_eq!(r.on_local_ack(Op(1)), Some(Op(1)..=Op(3)));
    }

    #[test]
    #[should_panic(expected = "ops apply in order")]
    fn given_committed_ops_when_applied_out_of_order_should_trip() {
        let mut r = single(Durability::Written);
        r.prepare(1).unwrap();
        r.prepare(1).unwrap();
        r.on_written(Op(2));
        r.on_applied(Op(2));
    }

    #[test]
    #[should_panic(expected = "written beyond the head")]
    fn given_unprepared_op_when_reported_written_should_trip() {
        let mut r = single(Durability::Written);
        r.on_written(Op(1));
    }
}
