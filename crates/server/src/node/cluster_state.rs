//! What every shard of a cluster node shares about the cluster: the roster
//! as clients are told it, the replica links' sender, who leads the
//! metadata group and each partition group as this node last saw them,
//! which peers are connected, and the start view of every partition
//! incarnation. Written by the replica tasks (metadata on shard 0, each
//! partition group on its owner shard), read by the handlers of any shard
//! (cluster metadata, routing). Off the data path: mutexes and atomics.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use consensus::View;
use consensus::vsr::Timing;
use consensus::vsr::message::{Message, ReplicaId};
use consensus::wire::Frame;
use engine::cluster_metadata::CreatedViews;
use server::cluster::LinkSender;
use server::cluster::lanes::Lane;
use tracing::warn;

use super::disk_space::DiskSpace;

/// One roster node as clients are told it (binary protocol §10.1, code
/// 12): its name, the host clients dial and its client ports (0 = not
/// served).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RosterEntry {
    pub name: String,
    pub host: String,
    pub tcp: u16,
    pub quic: u16,
    pub http: u16,
    pub websocket: u16,
}

pub struct ClusterShared {
    /// `cluster.name`.
    pub name: String,
    pub cluster: u128,
    pub replica: ReplicaId,
    pub replicas: u8,
    pub timing: Timing,
    /// This boot's nonce (each group derives its own from it).
    pub nonce: u64,
    pub roster: Vec<RosterEntry>,
    links: OnceLock<LinkSender>,
    created: Mutex<CreatedViews>,
    /// The metadata view, shifted left by one, with bit 0 set while it is
    /// normal.
    metadata_view: AtomicU64,
    /// Whether each peer's link is up (this node's own entry stays true).
    connected: Vec<AtomicBool>,
    /// Each partition group's view and whether it is normal, by namespace.
    partition_views: Mutex<HashMap<u64, (View, bool)>>,
    /// Set once this node's metadata group is normal and its applied
    /// state holds users (the root user exists): logins can succeed.
    settled: AtomicBool,
    /// The roster of one a server without `[cluster]` runs as (the
    /// single node is a group of one on the cluster path): clients are told
    /// of a single node, as before.
    pub implicit: bool,
    /// Free space of the data directory.
    pub disk: DiskSpace,
    /// A roster of one: partition groups that opened with journaled ops
    /// not committed yet (a restart), until they commit them. The node
    /// reports ready only once none is left, so that a client's first poll
    /// after a restart sees every acknowledged message.
    booting: std::sync::atomic::AtomicUsize,
}

impl ClusterShared {
    pub fn new(
        name: String,
        cluster: u128,
        replica: ReplicaId,
        timing: Timing,
        nonce: u64,
        roster: Vec<RosterEntry>,
        disk: DiskSpace,
    ) -> Self {
        let replicas = u8::try_from(roster.len()).expect("a roster fits u8");
        assert!(replica < replicas, "this node is on the roster");
        ClusterShared {
            name,
            cluster,
            replica,
            replicas,
            timing,
            nonce,
            links: OnceLock::new(),
            created: Mutex::new(CreatedViews::new()),
            metadata_view: AtomicU64::new(0),
            connected: (0..replicas)
                .map(|id| AtomicBool::new(id == replica))
                .collect(),
            partition_views: Mutex::new(HashMap::new()),
            settled: AtomicBool::new(false),
            implicit: false,
            disk,
            booting: std::sync::atomic::AtomicUsize::new(0),
            roster,
        }
    }

    /// Whether this node's metadata group is normal with users applied
    /// (a roster of one reports ready only then: boot waits for it).
    pub fn is_settled(&self) -> bool {
        self.settled.load(Ordering::Acquire)
    }

    /// See `booting`: a group opened with ops to commit again...
    pub fn boot_started(&self) {
        self.booting.fetch_add(1, Ordering::AcqRel);
    }

    /// ...has committed them (or stopped).
    pub fn boot_done(&self) {
        self.booting.fetch_sub(1, Ordering::AcqRel);
    }

    /// Partition groups still committing what they journaled before a
    /// restart.
    pub fn booting(&self) -> usize {
        self.booting.load(Ordering::Acquire)
    }

    /// A roster of one still starting: its metadata group not yet settled,
    /// or partition groups still committing again what they journaled.
    /// What boot waits out before it reports ready, and shard 0 before it
    /// accepts clients. Never for a larger roster (it settles with peers).
    pub fn lone_node_starting(&self) -> bool {
        self.replicas == 1 && (!self.is_settled() || self.booting() > 0)
    }

    pub fn set_settled(&self, settled: bool) {
        self.settled.store(settled, Ordering::Release);
    }

    /// Set once shard 0 has started the replica links.
    pub fn set_links(&self, sender: LinkSender) {
        let _ = self.links.set(sender);
    }

    /// The start views of the partition incarnations, as the metadata
    /// group last reported them (before it applies an op on any shard).
    pub fn set_created(&self, created: &CreatedViews) {
        *self.created.lock().expect("not poisoned") = created.clone();
    }

    pub fn created_view(&self, incarnation: u64) -> View {
        let created = self.created.lock().expect("not poisoned");
        created.get(&incarnation).copied().unwrap_or_else(|| {
            warn!(
                incarnation,
                "no start view recorded for a partition; using view 0"
            );
            View(0)
        })
    }

    /// Queues a frame of `group` for a peer; dropped (retransmission
    /// covers it) while the links are not up or the lane is full.
    pub fn send(&self, to: ReplicaId, group: u64, incarnation: u64, message: Message) {
        let Some(links) = self.links.get() else {
            return;
        };
        if let Err(e) = links.send(to, &self.frame(group, incarnation, message)) {
            warn!(peer = to, group, "replica frame dropped: {e}");
        }
    }

    /// This replica's frame of `group` carrying `message`.
    pub fn frame(&self, group: u64, incarnation: u64, message: Message) -> Frame {
        Frame {
            cluster: self.cluster,
            from: self.replica,
            group,
            incarnation,
            message,
        }
    }

    /// Queues an encoded frame (`LinkSender::encode`) of `group`, as `send`.
    pub fn send_encoded(&self, to: ReplicaId, group: u64, lane: Lane, bytes: bytes::Bytes) {
        let Some(links) = self.links.get() else {
            return;
        };
        if let Err(e) = links.send_encoded(to, lane, bytes) {
            warn!(peer = to, group, "replica frame dropped: {e}");
        }
    }

    fn primary_of(&self, view: View) -> ReplicaId {
        (view.0 % u32::from(self.replicas)) as ReplicaId
    }

    pub fn set_metadata_view(&self, view: View, normal: bool) {
        let packed = (u64::from(view.0) << 1) | u64::from(normal);
        self.metadata_view.store(packed, Ordering::Release);
    }

    /// The metadata view and whether it is normal.
    pub fn metadata_view(&self) -> (View, bool) {
        let packed = self.metadata_view.load(Ordering::Acquire);
        let view = View(u32::try_from(packed >> 1).expect("a view fits u32"));
        (view, packed & 1 == 1)
    }

    /// The metadata group's leader: the primary of its view while normal.
    pub fn metadata_leader(&self) -> Option<ReplicaId> {
        let (view, normal) = self.metadata_view();
        normal.then(|| self.primary_of(view))
    }

    pub fn set_connected(&self, peer: ReplicaId, connected: bool) {
        if peer != self.replica
            && let Some(flag) = self.connected.get(usize::from(peer))
        {
            flag.store(connected, Ordering::Relaxed);
        }
    }

    pub fn is_connected(&self, replica: ReplicaId) -> bool {
        self.connected
            .get(usize::from(replica))
            .is_some_and(|flag| flag.load(Ordering::Relaxed))
    }

    pub fn set_partition_view(&self, ns: u64, view: View, normal: bool) {
        let mut views = self.partition_views.lock().expect("not poisoned");
        views.insert(ns, (view, normal));
    }

    pub fn forget_partition(&self, ns: u64) {
        self.partition_views
            .lock()
            .expect("not poisoned")
            .remove(&ns);
    }

    /// The primary of a partition's group while its view is normal.
    pub fn partition_primary(&self, ns: u64) -> Option<ReplicaId> {
        let views = self.partition_views.lock().expect("not poisoned");
        match views.get(&ns) {
            Some(&(view, true)) => Some(self.primary_of(view)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str) -> RosterEntry {
        RosterEntry {
            name: name.to_owned(),
            host: "127.0.0.1".to_owned(),
            tcp: 1,
            quic: 2,
            http: 3,
            websocket: 4,
        }
    }

    #[test]
    fn given_views_when_normal_or_not_should_name_the_primary_only_while_normal() {
        let timing = Timing {
            commit_interval: 1,
            heartbeat_timeout: 1,
            view_change_timeout: 1,
            retransmit_interval: 1,
        };
        let roster = vec![entry("a"), entry("b"), entry("c")];
        let disk = DiskSpace::new(std::path::Path::new("."));
        let shared = ClusterShared::new("c".to_owned(), 7, 1, timing, 9, roster, disk);
        assert_eq!(shared.metadata_leader(), None, "no view seen yet");
        shared.set_metadata_view(View(4), true);
        assert_eq!(shared.metadata_leader(), Some(1));
        shared.set_metadata_view(View(5), false);
        assert_eq!(shared.metadata_leader(), None, "a view change");
        shared.set_partition_view(42, View(2), true);
        assert_eq!(shared.partition_primary(42), Some(2));
        shared.forget_partition(42);
        assert_eq!(shared.partition_primary(42), None);
        assert!(shared.is_connected(1), "itself");
        assert!(!shared.is_connected(0));
        shared.set_connected(0, true);
        assert!(shared.is_connected(0));
    }
}
