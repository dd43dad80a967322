//! One simulated server process: a replica of the metadata group and of
//! every partition incarnation it has materialized, each over its own
//! simulated disk. What a crash keeps: the disks, the retirement fences
//! of deleted incarnations and the wipe record; what it loses: every
//! replica and every applied state (rebuilt from checkpoints and the
//! journals).
//!
//! Materializing a partition incarnation (replication spec §2, §5.6,
//! §6.1-§6.2), as its create op is applied or, after a restart, as the
//! recovered metadata state lists it:
//! - a retired (fenced) incarnation is never materialized again;
//! - a disk with any trace of the group boots from it (recovering, with
//!   the `created_view` floor);
//! - on a wiped node, an incarnation created by an op at or below the
//!   commit point the node caught up to boots blank: the wipe may have
//!   erased what this node acknowledged in it;
//! - a replica whose metadata group is normal in the create's own view
//!   (so it has not restarted since that view began) starts the group
//!   normal in that view: the fast path, the group's first primary being
//!   the metadata primary that admitted the create;
//! - otherwise it boots recovering with an empty, certain log at the
//!   created view and joins by probing.

use std::collections::{BTreeMap, BTreeSet};

use consensus::vsr::message::Snapshot;
use consensus::vsr::{Durable, Limits, Status, Timing, VsrReplica};
use consensus::{ClientId, Op, View};

use crate::app::{GroupId, Incarnation, Reader, State};
use crate::disk::Disk;

/// One group's replica on this node, with the state it applied.
pub struct Member {
    pub replica: VsrReplica,
    /// Identities of the ops applied since boot or the last installed
    /// checkpoint, the first at op `applied_base + 1`.
    pub applied: Vec<u64>,
    pub applied_base: u64,
    pub state: State,
    /// Each client's latest result (what a retry is answered with).
    pub replies: BTreeMap<ClientId, (Op, Vec<u8>)>,
    /// A checkpoint being written beside the replica, as the server's
    /// partition groups write theirs: the snapshot (state taken when the
    /// replica asked), the service state it holds, and the tick its write
    /// completes. A crash before then loses it.
    pub deferred: Option<(Snapshot, Vec<u8>, u64)>,
}

impl Member {
    fn new(group: GroupId, replica: VsrReplica) -> Member {
        Member {
            replica,
            applied: Vec::new(),
            applied_base: 0,
            state: State::new(group),
            replies: BTreeMap::new(),
            deferred: None,
        }
    }

    /// The state a checkpoint keeps: the service state, then the replies.
    ///
    /// ```text
    /// state (State::encode); count u16 LE; per client: id u128 LE,
    /// op u64 LE, result length u8, result bytes
    /// ```
    pub fn encode_state(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.state.encode(&mut out);
        let count = u16::try_from(self.replies.len()).expect("few clients");
        out.extend_from_slice(&count.to_le_bytes());
        for (client, (op, result)) in &self.replies {
            out.extend_from_slice(&client.0.to_le_bytes());
            out.extend_from_slice(&op.0.to_le_bytes());
            out.push(u8::try_from(result.len()).expect("short results"));
            out.extend_from_slice(result);
        }
        out
    }

    /// Restores what `encode_state` wrote (a checkpoint at boot or one a
    /// state transfer installed).
    pub fn restore(&mut self, group: GroupId, snapshot: &Snapshot) {
        let (state, rest) = State::decode(group, &snapshot.state).expect("a checkpoint decodes");
        let mut reader = Reader(rest);
        let mut replies = BTreeMap::new();
        let count = u16::from_le_bytes(
            reader
                .take(2)
                .and_then(|b| b.try_into().ok())
                .expect("a count"),
        );
        for _ in 0..count {
            let client = ClientId(reader.u128().expect("a client"));
            let op = Op(reader.u64().expect("an op"));
            let len = reader.u8().expect("a length");
            let result = reader.take(usize::from(len)).expect("a result").to_vec();
            replies.insert(client, (op, result));
        }
        assert!(reader.0.is_empty(), "a checkpoint holds nothing else");
        self.state = state;
        self.replies = replies;
        self.applied.clear();
        self.applied_base = snapshot.op().0;
    }
}

pub struct Node {
    pub id: u8,
    pub n: u8,
    pub members: BTreeMap<GroupId, Member>,
    pub disks: BTreeMap<GroupId, Disk>,
    /// Incarnations this node retired (durable fences).
    pub fences: BTreeSet<GroupId>,
    /// Wiped: incarnations created by metadata ops at or below this op
    /// materialize blank (`Op(u64::MAX)` until the metadata group caught
    /// up to a view; durable).
    pub blank_until: Option<Op>,
    pub restart_at: Option<u64>,
    /// This node's clock error, in ticks (may be negative).
    pub skew_ticks: i64,
    pub limits: Limits,
    pub timing: Timing,
}

impl Node {
    pub fn up(&self) -> bool {
        !self.members.is_empty()
    }

    /// The process dies: every replica and applied state is gone.
    pub fn crash(&mut self) {
        self.members.clear();
    }

    /// The operator wipes the data directory (`--fresh`).
    pub fn wipe(&mut self) {
        self.disks.clear();
        self.fences.clear();
        self.disks.entry(GroupId::Metadata).or_default().wipe();
        self.blank_until = Some(Op(u64::MAX));
    }

    /// Starts the process: the metadata replica from its disk, then every
    /// partition incarnation its recovered state lists.
    pub fn start(&mut self, nonce: &mut impl FnMut() -> u64) {
        assert!(!self.up(), "a node starts once per crash");
        let group = GroupId::Metadata;
        let durable = self.disks.entry(group).or_default().crash();
        let member = self.boot_member(group, durable, View(0), nonce());
        self.members.insert(group, member);
        let live: Vec<(u8, Incarnation)> = self.members[&group]
            .state
            .metadata()
            .expect("the metadata group's state")
            .partitions()
            .collect();
        for (slot, incarnation) in live {
            self.materialize(slot, incarnation, nonce());
        }
    }

    /// The first start of a new cluster from blank disks: the metadata
    /// group starts once every replica reported blank (genesis rule).
    pub fn cold_start(&mut self, nonce: &mut impl FnMut() -> u64) {
        self.disks.entry(GroupId::Metadata).or_default().wipe();
        self.start(nonce);
    }

    /// The very first start of a new cluster, all in view 0 at once.
    pub fn genesis(&mut self, nonce: u64) {
        let replica =
            VsrReplica::genesis(self.id, self.n, self.timing, nonce).with_limits(self.limits);
        self.disks.entry(GroupId::Metadata).or_default();
        self.members
            .insert(GroupId::Metadata, Member::new(GroupId::Metadata, replica));
    }

    fn boot_member(
        &self,
        group: GroupId,
        durable: Durable,
        created_view: View,
        nonce: u64,
    ) -> Member {
        let snapshot = durable.snapshot.clone();
        let replica =
            VsrReplica::boot_group(self.id, self.n, self.timing, durable, nonce, created_view)
                .with_limits(self.limits);
        let mut member = Member::new(group, replica);
        if let Some(snapshot) = &snapshot {
            member.restore(group, snapshot);
        }
        member
    }

    /// Materializes a partition incarnation (the rules are in the module
    /// documentation). Returns whether it did.
    pub fn materialize(&mut self, slot: u8, incarnation: Incarnation, nonce: u64) -> bool {
        let group = GroupId::Partition {
            slot,
            revision: incarnation.revision,
        };
        if self.fences.contains(&group) || self.members.contains_key(&group) {
            return false;
        }
        let created_view = View(incarnation.created_view);
        let metadata = &self.members[&GroupId::Metadata].replica;
        let fast = metadata.status() == Status::Normal && metadata.view() == created_view;
        let blank = self
            .blank_until
            .is_some_and(|until| Op(incarnation.created_op) <= until);
        let disk = self.disks.entry(group).or_default();
        let durable = if !disk.untouched() {
            Some(disk.crash())
        } else if blank {
            disk.wipe();
            Some(disk.crash())
        } else {
            None
        };
        let member = if let Some(durable) = durable {
            self.boot_member(group, durable, created_view, nonce)
        } else if fast {
            let replica =
                VsrReplica::create_group(self.id, self.n, self.timing, created_view, nonce)
                    .with_limits(self.limits);
            Member::new(group, replica)
        } else {
            self.boot_member(group, Durable::default(), created_view, nonce)
        };
        self.members.insert(group, member);
        true
    }

    /// Retires a deleted incarnation: its replica and disk go, a fence
    /// stays so that it is never materialized again.
    pub fn retire(&mut self, group: GroupId) {
        self.members.remove(&group);
        self.disks.remove(&group);
        self.fences.insert(group);
    }

    /// Whether this node is a full copy of the cluster: up, every group
    /// in `live` materialized, normal, certain and not blank, and the
    /// metadata group applied through `metadata_committed` (the fault
    /// atlas damages another node's disk only while this holds).
    pub fn sound(&self, live: &[GroupId], metadata_committed: Op) -> bool {
        let Some(metadata) = self.members.get(&GroupId::Metadata) else {
            return false;
        };
        // A wiped node stays unsound until it applied past the point up to
        // which its partitions materialize blank (and those refilled).
        let past_wipe = self
            .blank_until
            .is_none_or(|until| metadata.replica.commit_min() >= until);
        past_wipe
            && metadata.replica.commit_min() >= metadata_committed
            && live.iter().all(|group| {
                self.members.get(group).is_some_and(|m| {
                    m.replica.status() == Status::Normal
                        && !m.replica.is_uncertain()
                        && !m.replica.is_blank()
                })
            })
    }
}
