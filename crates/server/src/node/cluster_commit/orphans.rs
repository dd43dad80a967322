//! Sessions no connection holds any more (replication spec §7.4): they
//! would keep their consumer-group memberships, and the partitions
//! assigned to them, for ever. Once caught up, a node ends its own
//! sessions from before it started that none of its connections is bound
//! to; the leader ends the sessions of a node whose replica link has been
//! down for 1.2 heartbeat intervals (the link stands for the lease's
//! renewals). Each end is a committed `UnregisterClient`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use consensus::View;
use crossfire::oneshot::oneshot;
use engine::metadata::{ClientId, MetadataOp, OpKind, UserId};
use tracing::info;

use super::{Input, Task};

/// How long a peer's link must stay down before the leader ends the
/// sessions registered on it, in heartbeat intervals (replication spec
/// §7.4: a session lease not renewed within 1.2 × `heartbeat.interval`
/// ends). Its clients have reconnected elsewhere by then, and their old
/// sessions would hold consumer-group partitions.
const ORPHAN_AFTER_INTERVALS: f64 = 1.2;
/// The heartbeat interval assumed when the verifier is off (the default
/// `heartbeat.interval`).
const ORPHAN_INTERVAL_DEFAULT: Duration = Duration::from_secs(30);
/// How long an ended orphan may take to go before its end is submitted
/// again (the first may have been refused in a view change).
const ORPHAN_RETRY: Duration = Duration::from_secs(10);
/// How often the sessions are checked for orphans.
const ORPHAN_CHECK: Duration = Duration::from_secs(1);

/// What `end_orphaned_sessions` tracks between checks.
pub(super) struct Orphans {
    /// When each peer's link was last seen up (`None`: never since boot).
    last_up: Vec<Option<Instant>>,
    since_boot: Instant,
    /// How long a link stays down before its node's sessions end.
    after: Duration,
    /// The view the clocks above run in: a new view restarts them (a new
    /// primary has not watched the links of the old view).
    view: View,
    last_check: Option<Instant>,
    /// Sessions whose end was submitted, and when (submitted again if
    /// still there after `ORPHAN_RETRY`).
    ending: BTreeMap<u128, Instant>,
}

impl Orphans {
    pub(super) fn new(replicas: u8, heartbeat: Option<Duration>) -> Self {
        let interval = heartbeat.unwrap_or(ORPHAN_INTERVAL_DEFAULT);
        Orphans {
            last_up: vec![None; usize::from(replicas)],
            since_boot: Instant::now(),
            after: interval.mul_f64(ORPHAN_AFTER_INTERVALS),
            view: View(0),
            last_check: None,
            ending: BTreeMap::new(),
        }
    }

    /// Whether `peer`'s link has been down for `after` (counting from
    /// this process's start when it never came up).
    fn gone(&self, peer: u8, now: Instant) -> bool {
        let since = self.last_up[usize::from(peer)].unwrap_or(self.since_boot);
        now.duration_since(since) >= self.after
    }
}

impl Task {
    /// Ends the sessions no connection holds any more (they would hold
    /// consumer-group memberships forever): once caught up, this node's
    /// own sessions from before this process started that no connection
    /// of it is bound to (it restarted; its clients reconnected), and, on
    /// the leader, the sessions of a node whose link has been down for
    /// 1.2 heartbeat intervals. Each end is a committed `UnregisterClient`.
    pub(super) fn end_orphaned_sessions(&mut self) {
        let now = Instant::now();
        let local = self.group.group().replica().id();
        let view = self.group.group().replica().view();
        if view != self.orphans.view {
            self.orphans.view = view;
            self.orphans.last_up.fill(Some(now));
        }
        for peer in 0..self.replicas {
            if peer != local && self.connected(peer) {
                self.orphans.last_up[usize::from(peer)] = Some(now);
            }
        }
        if self
            .orphans
            .last_check
            .is_some_and(|at| now.duration_since(at) < ORPHAN_CHECK)
        {
            return;
        }
        self.orphans.last_check = Some(now);
        let replica = self.group.group().replica();
        let caught_up = replica.status() == consensus::vsr::Status::Normal
            && replica.commit_min() == replica.head();
        if !caught_up {
            return;
        }
        let leader = replica.is_primary();
        let started_at_us = self.node.ctx.started_at_us;
        let live = self.node.ctx.clients.bound_clients();
        let state = self.group.state();
        self.orphans.ending.retain(|client, at| {
            state.client(ClientId(*client)).is_some() && now.duration_since(*at) < ORPHAN_RETRY
        });
        let orphaned: Vec<u128> = state
            .clients()
            .filter(|session| match session.node {
                Some(node) if node == local => {
                    session.registered_at_us < started_at_us && !live.contains(&session.id.0)
                }
                Some(node) => leader && node < self.replicas && self.orphans.gone(node, now),
                None => false,
            })
            .map(|session| session.id.0)
            .filter(|client| !self.orphans.ending.contains_key(client))
            .collect();
        for client in orphaned {
            info!(client, "ending a session no connection holds");
            let op = MetadataOp {
                timestamp_us: 0,
                actor: UserId::ROOT,
                kind: OpKind::UnregisterClient {
                    client: ClientId(client),
                },
            };
            let (reply, _) = oneshot();
            if self.tx.try_send(Input::Submit(op, reply)).is_err() {
                return; // the queue is full: the next check tries again
            }
            self.orphans.ending.insert(client, now);
        }
    }
}
