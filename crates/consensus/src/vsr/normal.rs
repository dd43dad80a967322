//! Normal operation (replication spec §4): requests, prepares, their
//! acknowledgements, commits and the timers of a normal view.

use super::message::{Entry, Message, ReplicaId, Request};
use super::{Action, NotAdmitted, Status, VsrReplica};
use crate::types::{Op, View};

impl VsrReplica {
    /// A client request reaching this replica. The primary prepares it; a
    /// retry of a committed request is answered from the client table; one
    /// already in the pipeline is answered when it commits.
    pub fn on_request(
        &mut self,
        request: Request,
        now_us: u64,
    ) -> Result<Vec<Action>, NotAdmitted> {
        let mut actions = self.prepare_request(request, now_us)?;
        actions.extend(self.sync_prepared());
        Ok(actions)
    }

    /// Prepares `request` as `on_request` does, but leaves the journal
    /// sync, and with it this replica's own acknowledgement and any commit
    /// it allows, to `sync_prepared`: a primary handed several requests at
    /// once prepares each and syncs its journal once for all of them
    /// (group commit). `sync_prepared` must follow before any other input.
    pub fn prepare_request(
        &mut self,
        request: Request,
        now_us: u64,
    ) -> Result<Vec<Action>, NotAdmitted> {
        if !self.is_primary() {
            return Err(NotAdmitted::NotPrimary { view: self.view });
        }
        let mut actions = Vec::new();
        // The client table must hold everything committed before it judges
        // a retry (a group of one boots with its journal committed but not
        // yet applied).
        self.apply_committed(&mut actions);
        if let Some(&(number, op)) = self.clients.get(&request.client)
            && request.number <= number
        {
            if request.number == number {
                actions.push(Action::Reply {
                    client: request.client,
                    request: number,
                    op,
                });
            }
            return Ok(actions);
        }
        if self.in_pipeline.contains(&(request.client, request.number)) {
            return Ok(actions);
        }
        if self.acks.len() >= self.pipeline_max {
            return Err(NotAdmitted::Busy);
        }
        let head_before = self.head();
        let timestamp_us = self.next_timestamp(now_us);
        let op = head_before.next();
        let entry = Entry::new(op, self.view, self.head_identity(), request, timestamp_us);
        self.in_pipeline.insert((entry.client, entry.request));
        self.log.push(entry.clone());
        // The prepare goes out before our own write (replication spec §4.2:
        // forwarding MAY precede the write), so the backups' writes overlap
        // ours. Our ack counts at once: no PrepareOk can be taken before
        // these actions, the Sync included, have all run.
        let prepare = Message::Prepare {
            view: self.view,
            commit: self.commit_max,
            entry: entry.clone(),
        };
        self.broadcast(&mut actions, &prepare);
        actions.push(Action::Journal(entry));
        // Our own acknowledgement counts once the journal is synced.
        self.acks.insert(op, 0);
        self.unsynced.get_or_insert(op);
        assert_eq!(self.head(), head_before.next(), "one op per request");
        self.check_invariants();
        Ok(actions)
    }

    /// Syncs the journal under every op `prepare_request` prepared since
    /// the last sync, counts this replica's acknowledgement of each and
    /// commits what that allows. Nothing when nothing waits.
    pub fn sync_prepared(&mut self) -> Vec<Action> {
        let mut actions = Vec::new();
        let Some(first) = self.unsynced.take() else {
            return actions;
        };
        assert!(self.is_primary(), "only a primary prepares requests");
        assert!(first <= self.head(), "prepared ops are in the log");
        actions.push(Action::Sync);
        for op in first.0..=self.head().0 {
            let acks = self
                .acks
                .get_mut(&Op(op))
                .expect("a prepared op waits for acks");
            *acks |= 1 << self.id;
        }
        self.commit_ready(&mut actions);
        self.check_invariants();
        actions
    }

    /// The timestamp the next prepare will carry at `now_us`: strictly
    /// above every journaled one (so a new primary never stamps
    /// backwards), else now. A caller that stamps a body with it before
    /// `on_request` gets the entry's own timestamp.
    pub fn next_timestamp(&self, now_us: u64) -> u64 {
        self.log
            .last()
            .map_or(now_us, |e| now_us.max(e.timestamp_us + 1))
    }

    /// A message from another replica of the group.
    pub fn on_message(&mut self, from: ReplicaId, message: Message) -> Vec<Action> {
        assert!(from < self.n && from != self.id, "from a peer");
        assert!(
            self.unsynced.is_none(),
            "prepared requests are synced first"
        );
        let mut actions = Vec::new();
        match message {
            Message::Prepare {
                view,
                commit,
                entry,
            } => self.on_prepare(from, view, commit, entry, &mut actions),
            Message::PrepareOk { view, op, identity } => {
                self.on_prepare_ok(from, view, op, identity, &mut actions)
            }
            Message::Commit { view, commit } => self.on_commit(from, view, commit, &mut actions),
            Message::RequestPrepares {
                from: first, to, ..
            } => self.on_request_prepares(from, first, to, &mut actions),
            Message::RepairPrepare { view, entry } => {
                self.on_repair_prepare(from, view, entry, &mut actions)
            }
            // The node's driver answers forwarded ops and log fetches;
            // they are not the replica's (a driver that passes one on loses nothing).
            Message::ForwardRequest { .. }
            | Message::ForwardReply { .. }
            | Message::LogFetch { .. }
            | Message::LogChunk { .. } => {}
            message @ (Message::RangeEvicted { .. }
            | Message::RequestStateTransfer { .. }
            | Message::StateTransferTarget { .. }
            | Message::RequestStateChunk { .. }
            | Message::StateChunk { .. }) => self.on_transfer_message(from, message, &mut actions),
            other => self.on_view_message(from, other, &mut actions),
        }
        self.check_invariants();
        actions
    }

    fn on_prepare(
        &mut self,
        from: ReplicaId,
        view: View,
        commit: Op,
        entry: Entry,
        actions: &mut Vec<Action>,
    ) {
        if !entry.is_sound() || view < self.view {
            return;
        }
        if view > self.view || self.status != Status::Normal {
            // The group moved on without us, or we wait for a StartView.
            self.probe_newer_view(view, actions);
            return;
        }
        assert_eq!(
            from,
            self.primary_of(view),
            "prepares come from the primary"
        );
        // Only Commits reset the heartbeat (§4.2): a primary that can send
        // prepares but never commits them must still be voted out.
        let head = self.head();
        if entry.op <= head {
            // A retransmission: acknowledge again if it is the same entry.
            if self
                .entry(entry.op)
                .is_some_and(|e| e.identity == entry.identity)
            {
                self.acknowledge(entry.op, entry.identity, actions);
            }
        } else if entry.op == head.next() && entry.parent == self.head_identity() {
            let (op, identity) = (entry.op, entry.identity);
            self.log.push(entry.clone());
            if super::planted(super::PlantedBug::AckBeforeFsync) {
                self.acknowledge(op, identity, actions);
                actions.push(Action::Journal(entry));
                actions.push(Action::Sync);
            } else {
                actions.push(Action::Journal(entry));
                actions.push(Action::Sync);
                self.acknowledge(op, identity, actions);
            }
        } else {
            // A gap: ask the primary for what is missing.
            self.request_repair(from, view, entry.op, actions);
        }
        self.raise_commit(commit, actions);
    }

    /// PrepareOk for an entry this backup holds durably (the Sync for it
    /// precedes this in the action list).
    pub(super) fn acknowledge(&self, op: Op, identity: u64, actions: &mut Vec<Action>) {
        assert!(self.entry(op).is_some_and(|e| e.identity == identity));
        assert_eq!(self.log_view, self.view, "acks only in the view of its log");
        let ok = Message::PrepareOk {
            view: self.view,
            op,
            identity,
        };
        self.send(actions, self.primary_of(self.view), ok);
    }

    fn on_prepare_ok(
        &mut self,
        from: ReplicaId,
        view: View,
        op: Op,
        identity: u64,
        actions: &mut Vec<Action>,
    ) {
        if view != self.view || !self.is_primary() {
            return;
        }
        if self.entry(op).is_none_or(|e| e.identity != identity) {
            return;
        }
        if let Some(acks) = self.acks.get_mut(&op) {
            *acks |= 1 << from;
        }
        self.commit_ready(actions);
    }

    /// Primary: commits the run of quorum-acknowledged ops above the
    /// commit point, in order, then applies and answers them.
    fn commit_ready(&mut self, actions: &mut Vec<Action>) {
        let quorum = if super::planted(super::PlantedBug::CommitBeforeQuorum) {
            1
        } else {
            u32::from(self.quorums.replication)
        };
        loop {
            let next = self.commit_max.next();
            match self.acks.get(&next) {
                Some(acks) if acks.count_ones() >= quorum => {
                    self.acks.remove(&next);
                    self.commit_max = next;
                    self.ticks_oldest_uncommitted = 0;
                }
                _ => break,
            }
        }
        self.apply_committed(actions);
    }

    fn on_commit(&mut self, from: ReplicaId, view: View, commit: Op, actions: &mut Vec<Action>) {
        if view < self.view {
            return;
        }
        if view > self.view || self.status != Status::Normal {
            self.probe_newer_view(view, actions);
            return;
        }
        if from != self.primary_of(view) {
            return;
        }
        self.ticks_since_heartbeat = 0;
        // Our primary is alive and heard: votes to leave this view lapse.
        self.svc_votes.retain(|&w, _| w <= self.view);
        self.raise_commit(commit, actions);
    }

    /// Backup: learns that ops through `commit` committed; applies those
    /// it holds and asks for the rest.
    fn raise_commit(&mut self, commit: Op, actions: &mut Vec<Action>) {
        self.commit_max = self.commit_max.max(commit);
        if self.commit_max > self.head() {
            // Committed ops we lack: repair them (every heartbeat retries).
            let primary = self.primary_of(self.view);
            self.request_repair(primary, self.view, self.commit_max, actions);
        }
        self.apply_committed(actions);
    }

    /// Asks `peer` for the entries after our head, up to `to`, a bounded
    /// chunk at a time, and never again while a request for the next op is
    /// outstanding (retried after the retransmit interval): otherwise every
    /// out-of-order arrival would ask for the whole range again.
    pub(super) fn request_repair(
        &mut self,
        peer: ReplicaId,
        peer_view: View,
        to: Op,
        actions: &mut Vec<Action>,
    ) {
        let first = self.head().next();
        if first > to || peer == self.id || self.transfer.is_some() {
            return;
        }
        self.repair_target = to;
        let outstanding = self.repair_until >= first
            && self.repair_source == Some((peer, peer_view))
            && self.ticks_since_repair < self.timing.retransmit_interval;
        if outstanding {
            return;
        }
        let last = to.min(Op(first.0 + super::REPAIR_CHUNK_MAX - 1));
        self.repair_until = last;
        self.repair_source = Some((peer, peer_view));
        self.ticks_since_repair = 0;
        let request = Message::RequestPrepares {
            view: self.view,
            from: first,
            to: last,
        };
        self.send(actions, peer, request);
    }

    /// Applies committed ops this replica holds, in order; the primary
    /// answers their clients.
    pub(super) fn apply_committed(&mut self, actions: &mut Vec<Action>) {
        let through = self.commit_max.min(self.head());
        while self.commit_min < through {
            let op = self.commit_min.next();
            let entry = self.entry(op).expect("ops up to the head are held").clone();
            self.commit_min = op;
            self.applied_bytes = self.applied_bytes.saturating_add(entry.body.len() as u64);
            if entry.client.0 != 0 {
                self.clients.insert(entry.client, (entry.request, op));
                self.in_pipeline.remove(&(entry.client, entry.request));
            }
            let reply = self.primary_of(self.view) == self.id && entry.client.0 != 0;
            let (client, request) = (entry.client, entry.request);
            actions.push(Action::Apply(entry));
            if reply {
                actions.push(Action::Reply {
                    client,
                    request,
                    op,
                });
            }
            self.maybe_checkpoint(actions);
        }
    }

    /// Serves a peer's repair from our log (whatever view it is in: the
    /// receiver takes only entries that chain onto its head).
    fn on_request_prepares(
        &mut self,
        from: ReplicaId,
        first: Op,
        to: Op,
        actions: &mut Vec<Action>,
    ) {
        if self.status == Status::Recovering || first == Op::ZERO {
            return;
        }
        if first < self.log_start {
            // Below our checkpoint: the peer needs a state transfer.
            let evicted = Message::RangeEvicted {
                view: self.view,
                oldest: self.log_start,
            };
            self.send(actions, from, evicted);
            return;
        }
        let last = to
            .min(self.head())
            .min(Op(first.0.saturating_add(super::REPAIR_CHUNK_MAX - 1)));
        let mut op = first;
        while op <= last {
            let entry = self.entry(op).expect("ops up to the head are held").clone();
            let repair = Message::RepairPrepare {
                view: self.view,
                entry,
            };
            self.send(actions, from, repair);
            op = op.next();
        }
    }

    /// A repair entry: journaled where it chains onto our head; in a
    /// normal view it is acknowledged like a prepare.
    fn on_repair_prepare(
        &mut self,
        from: ReplicaId,
        view: View,
        entry: Entry,
        actions: &mut Vec<Action>,
    ) {
        // Only the peer we asked, in the view we asked it in: a late
        // answer from an older view's primary would graft another log onto
        // ours. A primary's log is its view's log and takes no repair.
        if self.repair_source != Some((from, view))
            || self.is_primary()
            || !entry.is_sound()
            || entry.op != self.head().next()
            || entry.parent != self.head_identity()
        {
            return;
        }
        let (op, identity) = (entry.op, entry.identity);
        self.persist_uncertainty(actions);
        self.log.push(entry.clone());
        actions.push(Action::Journal(entry));
        actions.push(Action::Sync);
        if self.status == Status::Normal && self.log_view == self.view && !self.is_primary() {
            self.acknowledge(op, identity, actions);
        }
        self.apply_committed(actions);
        if self.commit_max > self.head() && self.status == Status::Normal {
            let primary = self.primary_of(self.view);
            self.request_repair(primary, self.view, self.commit_max, actions);
        }
    }

    /// Time passes by one tick.
    pub fn on_tick(&mut self) -> Vec<Action> {
        assert!(
            self.unsynced.is_none(),
            "prepared requests are synced first"
        );
        let mut actions = Vec::new();
        self.ticks_since_repair = self.ticks_since_repair.saturating_add(1);
        self.tick_transfer(&mut actions);
        match self.status {
            Status::Normal if self.primary_of(self.view) == self.id => {
                self.tick_primary(&mut actions)
            }
            Status::Normal => self.tick_backup(&mut actions),
            Status::ViewChange => self.tick_view_change(&mut actions),
            Status::Recovering => self.tick_recovering(&mut actions),
        }
        self.check_invariants();
        actions
    }

    fn tick_primary(&mut self, actions: &mut Vec<Action>) {
        // A group of one boots with its whole journal committed: it applies
        // it on its first tick.
        self.apply_committed(actions);
        // A primary whose oldest uncommitted prepare has waited half a
        // heartbeat timeout abdicates: it stops sending Commits, so
        // backups that it cannot hear elect past it (§5.3 step 7).
        if self.acks.is_empty() {
            self.ticks_oldest_uncommitted = 0;
        } else {
            self.ticks_oldest_uncommitted += 1;
        }
        let abdicating = self.ticks_oldest_uncommitted >= self.timing.heartbeat_timeout / 2;
        self.ticks_since_commit_sent += 1;
        if !abdicating && self.ticks_since_commit_sent >= self.timing.commit_interval {
            self.ticks_since_commit_sent = 0;
            let commit = Message::Commit {
                view: self.view,
                commit: self.commit_max,
            };
            self.broadcast(actions, &commit);
        }
        self.ticks_since_retransmit += 1;
        if self.ticks_since_retransmit >= self.timing.retransmit_interval {
            self.ticks_since_retransmit = 0;
            self.retransmit(actions);
        }
    }

    /// Resends every uncommitted prepare to the replicas that have not
    /// acknowledged it.
    fn retransmit(&self, actions: &mut Vec<Action>) {
        for (&op, &acks) in &self.acks {
            let entry = self.entry(op).expect("pipeline ops are in the log").clone();
            for to in self.others().filter(|r| acks & (1 << r) == 0) {
                let prepare = Message::Prepare {
                    view: self.view,
                    commit: self.commit_max,
                    entry: entry.clone(),
                };
                self.send(actions, to, prepare);
            }
        }
    }

    /// A backup whose primary fell silent (no Commit for a heartbeat
    /// timeout) leaves the view for the next one others voted for.
    fn tick_backup(&mut self, actions: &mut Vec<Action>) {
        self.ticks_since_heartbeat += 1;
        if self.ticks_since_heartbeat >= self.timing.heartbeat_timeout {
            self.ticks_since_heartbeat = 0;
            let next = self.vote_target();
            self.start_view_change(next, actions);
        }
    }
}

impl View {
    pub fn next(self) -> View {
        View(self.0.checked_add(1).expect("views never overflow"))
    }
}
