//! View change and recovery (replication spec §5, §6.3): votes, the
//! DoViewChange log selection, StartView, and the probes of a restarted
//! replica.
//!
//! Safety rules kept here: the view (and log view) is persisted before any
//! DoViewChange or StartView of it is sent; the new primary takes the log
//! of the highest log view, then the highest head, so every committed op
//! survives (a committed op is durable on a replication quorum, which meets
//! every view-change quorum); log_view moves only once the journal holds
//! the view's log; a restarted replica never resumes as primary.

use super::message::{Entry, Message, ReplicaId};
use super::{Action, DVC_ENTRIES_MAX, Dvc, Status, VsrReplica, check_chain};
use crate::types::{Op, View};

impl VsrReplica {
    /// Votes to leave the current view for `view`.
    pub(super) fn start_view_change(&mut self, view: View, actions: &mut Vec<Action>) {
        assert!(view > self.view, "a view change moves forward");
        assert!(
            self.status != Status::Recovering,
            "recovering replicas vote only once their probes ran out"
        );
        self.status = Status::ViewChange;
        self.view = view;
        // Answers to repairs asked in the old view no longer fit our log.
        self.repair_source = None;
        self.dvcs.clear();
        self.dvc_sent = false;
        self.acks.clear();
        self.in_pipeline.clear();
        self.ticks_in_view_change = 0;
        *self.svc_votes.entry(view).or_insert(0) |= 1 << self.id;
        self.broadcast(actions, &Message::StartViewChange { view });
        self.maybe_send_dvc(actions);
    }

    pub(super) fn on_view_message(
        &mut self,
        from: ReplicaId,
        message: Message,
        actions: &mut Vec<Action>,
    ) {
        match message {
            Message::StartViewChange { view } => self.on_svc(from, view, actions),
            Message::DoViewChange {
                view,
                log_view,
                head,
                commit,
                entries,
                uncertain,
            } => {
                let dvc = Dvc {
                    log_view,
                    head,
                    commit,
                    entries,
                    uncertain,
                };
                self.on_dvc(from, view, dvc, actions);
            }
            Message::StartView {
                view,
                head,
                commit,
                entries,
                nonce,
            } => {
                let suffix = Dvc {
                    log_view: view,
                    head,
                    commit,
                    entries,
                    uncertain: false,
                };
                self.on_start_view(from, suffix, nonce, actions);
            }
            Message::RequestStartView { view, nonce, blank } => {
                if blank {
                    let report = Message::ViewReport {
                        view: self.view,
                        nonce,
                        blank: self.holds_nothing(),
                    };
                    self.send(actions, from, report);
                }
                self.on_request_start_view(from, view, nonce, actions)
            }
            Message::ViewReport { view, nonce, blank } => {
                if self.blank && nonce == self.nonce {
                    self.view_reports.insert(from, (view, blank));
                    self.maybe_genesis(actions);
                }
            }
            _ => unreachable!("normal-operation messages are handled in normal.rs"),
        }
    }

    fn on_svc(&mut self, from: ReplicaId, view: View, actions: &mut Vec<Action>) {
        if view < self.view || self.status == Status::Recovering {
            return;
        }
        if view == self.view && self.status == Status::Normal {
            return; // a vote for the view we are in: nothing to leave
        }
        *self.svc_votes.entry(view).or_insert(0) |= 1 << from;
        if view == self.view {
            self.maybe_send_dvc(actions);
        } else {
            // One vote for a newer view moves us there (the reference's
            // rule). The spec's stricter one (a normal replica waits for a
            // quorum of votes, §5.3 step 2) stalled a replica that had
            // moved ahead alone; it needs the catch-up path TigerBeetle
            // has, which is not built yet.
            self.start_view_change(view, actions);
        }
    }

    /// Once a view-change quorum voted for this view, persist it and send
    /// the log suffix to its primary.
    fn maybe_send_dvc(&mut self, actions: &mut Vec<Action>) {
        let votes = self.svc_votes.get(&self.view).copied().unwrap_or(0);
        if self.dvc_sent || votes.count_ones() < u32::from(self.quorums.view_change) {
            return;
        }
        self.dvc_sent = true;
        self.persist_superblock(actions);
        let dvc = self.own_dvc();
        let primary = self.primary_of(self.view);
        if primary == self.id {
            self.dvcs.insert(self.id, dvc);
            self.maybe_start_view(actions);
        } else {
            self.send_dvc(dvc, actions);
        }
    }

    /// Sends our DoViewChange for the current view to its primary.
    fn send_dvc(&self, dvc: Dvc, actions: &mut Vec<Action>) {
        let message = Message::DoViewChange {
            view: self.view,
            log_view: self.log_view,
            head: dvc.head,
            commit: dvc.commit,
            entries: dvc.entries,
            uncertain: dvc.uncertain,
        };
        self.send(actions, self.primary_of(self.view), message);
    }

    /// The newest `DVC_ENTRIES_MAX` entries of the log, head first (what a
    /// DoViewChange or a StartView carries).
    fn log_suffix(&self) -> Vec<Entry> {
        self.log
            .iter()
            .rev()
            .take(DVC_ENTRIES_MAX)
            .cloned()
            .collect()
    }

    /// Our DoViewChange: the log suffix and where our log stands.
    fn own_dvc(&self) -> Dvc {
        let entries = self.log_suffix();
        Dvc {
            log_view: self.log_view,
            head: self.head(),
            commit: self.commit_max.min(self.head()),
            entries,
            uncertain: self.uncertain,
        }
    }

    fn on_dvc(&mut self, from: ReplicaId, view: View, dvc: Dvc, actions: &mut Vec<Action>) {
        if view < self.view || self.primary_of(view) != self.id {
            return;
        }
        if self.status == Status::Recovering {
            return;
        }
        if view > self.view {
            self.start_view_change(view, actions);
        }
        if self.status != Status::ViewChange {
            return; // the view already started; the sender will hear of it
        }
        *self.svc_votes.entry(view).or_insert(0) |= 1 << from;
        self.dvcs.insert(from, dvc);
        self.maybe_send_dvc(actions);
        self.maybe_start_view(actions);
    }

    /// The primary-elect, with a view-change quorum of DVCs (its own
    /// included): selects the log, journals it, persists and starts.
    fn maybe_start_view(&mut self, actions: &mut Vec<Action>) {
        if self.status != Status::ViewChange
            || self.dvcs.len() < usize::from(self.quorums.view_change)
            || !self.dvcs.contains_key(&self.id)
        {
            return;
        }
        let Some(canonical) = self.select_canonical() else {
            return; // wait for more DoViewChanges (or stall, §5.5)
        };
        let commit = self
            .dvcs
            .values()
            .map(|d| d.commit)
            .max()
            .unwrap_or(Op::ZERO);
        let Some(merged) = self.merge(&canonical) else {
            return; // our own log lacks the prefix the suffix hangs from
        };
        self.install_log(merged, actions);
        self.log_view = self.view;
        self.persist_superblock(actions);
        // Our journal now holds the view's log: an uncertain primary-elect
        // is certain again.
        self.uncertain = false;
        if self.uncertain_persisted {
            actions.push(Action::Uncertain(false));
            self.uncertain_persisted = false;
        }
        self.status = Status::Normal;
        self.commit_max = commit.max(self.commit_max);
        assert!(
            self.commit_max <= self.head(),
            "the canonical log holds every commit"
        );
        self.acks = ((self.commit_max.0 + 1)..=self.head().0)
            .map(|op| (Op(op), 1 << self.id))
            .collect();
        self.in_pipeline = self
            .acks
            .keys()
            .filter_map(|&op| self.entry(op))
            .map(|e| (e.client, e.request))
            .collect();
        let start_view = self.start_view_message(0);
        self.broadcast(actions, &start_view);
        self.ticks_since_commit_sent = 0;
        self.apply_committed(actions);
    }

    /// The log selection of replication spec §5.5 over the DoViewChanges
    /// received. Those not flagged uncertain decide once they reach the
    /// view-change quorum (flagged ones, whose heads may have lost
    /// acknowledged entries, are left out). Failing that, once every
    /// roster replica has sent one, all count: the highest log view, then
    /// the highest head (a flagged head never cuts anything, as a lower
    /// head never does here); but if a flagged sender holds the highest log
    /// view while a lower-log-view DVC reaches above every canonical head,
    /// the canonical log's true end is unknown, and the view stalls
    /// rather than guess. `None`: wait.
    fn select_canonical(&self) -> Option<Dvc> {
        let ignore_log_view = super::planted(super::PlantedBug::DvcIgnoresLogView);
        let rank = |d: &&Dvc| {
            let log_view = if ignore_log_view { View(0) } else { d.log_view };
            (log_view, d.head)
        };
        let certain: Vec<&Dvc> = self.dvcs.values().filter(|d| !d.uncertain).collect();
        if certain.len() >= usize::from(self.quorums.view_change) {
            return certain.into_iter().max_by_key(rank).cloned();
        }
        if self.dvcs.len() < usize::from(self.n) {
            return None;
        }
        let canonical_view = self.dvcs.values().map(|d| d.log_view).max()?;
        let canonical: Vec<&Dvc> = self
            .dvcs
            .values()
            .filter(|d| d.log_view == canonical_view)
            .collect();
        let top = canonical.iter().map(|d| d.head).max()?;
        let flagged_canonical = canonical.iter().any(|d| d.uncertain);
        let beyond = self
            .dvcs
            .values()
            .any(|d| d.log_view < canonical_view && d.head > top);
        if flagged_canonical && beyond {
            return None;
        }
        self.dvcs.values().max_by_key(rank).cloned()
    }

    /// The canonical log from our `log_start` on: our own entries below
    /// the canonical suffix (which must chain into them), then the suffix.
    /// A suffix reaching down to our checkpoint must hold the checkpoint's
    /// op (committed, so in every view's log). `None` when our log does not
    /// reach the suffix's parent, or the suffix does not reach our
    /// checkpoint.
    fn merge(&self, canonical: &Dvc) -> Option<Vec<Entry>> {
        let suffix: Vec<Entry> = canonical.entries.iter().rev().cloned().collect();
        let first = suffix.first().map_or(canonical.head.next(), |e| e.op);
        let checkpointed = self.checkpoint_op() > Op::ZERO;
        let merged = if !checkpointed && first == Op(1) {
            suffix
        } else if first <= self.log_start {
            let skip = usize::try_from(self.log_start.0 - first.0).expect("fits");
            let at_checkpoint = suffix.get(skip)?;
            if at_checkpoint.identity != self.log[0].identity {
                return None;
            }
            suffix[skip..].to_vec()
        } else {
            let below = Op(first.0 - 1);
            if self.head() < below {
                return None;
            }
            let keep = self.entries_through(below);
            let parent = self.log[keep - 1].identity;
            if suffix.first().is_some_and(|e| e.parent != parent) {
                return None;
            }
            let mut merged = self.log[..keep].to_vec();
            merged.extend(suffix);
            merged
        };
        check_chain(self.log_start, &merged);
        assert!(
            merged.first().is_none_or(|e| e.op == self.log_start),
            "a merged log starts where ours does"
        );
        Some(merged)
    }

    /// Replaces the log with `merged`, journaling what changed and syncing.
    fn install_log(&mut self, merged: Vec<Entry>, actions: &mut Vec<Action>) {
        self.persist_uncertainty(actions);
        let same = self
            .log
            .iter()
            .zip(&merged)
            .take_while(|(a, b)| a.identity == b.identity)
            .count();
        let kept = Op(self.log_start.0 - 1 + same as u64);
        assert!(
            kept >= self.commit_min,
            "a view's log never drops an op applied here"
        );
        actions.push(Action::TruncateAfter(kept));
        for entry in &merged[same..] {
            actions.push(Action::Journal(entry.clone()));
        }
        actions.push(Action::Sync);
        self.log = merged;
        // The log is now this view's: answers to older repairs are stale.
        self.repair_source = None;
    }

    fn start_view_message(&self, nonce: u64) -> Message {
        let entries = self.log_suffix();
        Message::StartView {
            view: self.view,
            head: self.head(),
            commit: self.commit_max,
            entries,
            nonce,
        }
    }

    /// Adopts the view `suffix.log_view` from its primary (the suffix is
    /// the view's log, head first, and its commit point).
    fn on_start_view(
        &mut self,
        from: ReplicaId,
        suffix: Dvc,
        nonce: u64,
        actions: &mut Vec<Action>,
    ) {
        let (view, head, commit) = (suffix.log_view, suffix.head, suffix.commit);
        if from != self.primary_of(view) || view < self.view {
            return;
        }
        let recovering = self.status == Status::Recovering;
        if recovering && nonce != self.nonce && view <= self.view {
            return; // an answer to another boot's probe
        }
        // A primary answered: the group is alive, whether or not we can
        // adopt its view yet (a long repair or transfer is no reason to
        // take the group for restarted and start voting).
        self.probes_unanswered = 0;
        if self.blank && !self.may_adopt_blank(view, nonce) {
            return;
        }
        if view == self.view && self.status == Status::Normal && head <= self.head() {
            return; // a stale copy of the view we already hold
        }
        let Some(merged) = self.merge(&suffix) else {
            // Our log is too short for the suffix, or its unapplied tail is
            // not this view's: keep what we applied (committed, hence in
            // every view's log) and repair the rest from the new primary.
            // A newer view is entered first (persisted), so we stop acting
            // in the old one; its log view waits for the repair.
            if view > self.view {
                self.view = view;
                self.persist_superblock(actions);
                if self.status == Status::Normal {
                    self.status = Status::ViewChange;
                    self.ticks_in_view_change = 0;
                }
                self.acks.clear();
                self.in_pipeline.clear();
                self.dvcs.clear();
                self.dvc_sent = false;
            }
            if self.head() > self.commit_min {
                self.persist_uncertainty(actions);
                self.cut_log_after(self.commit_min);
                actions.push(Action::TruncateAfter(self.commit_min));
                actions.push(Action::Sync);
            }
            self.request_repair(from, view, head, actions);
            return;
        };
        if self.log_start.0 - 1 + (merged.len() as u64) < self.commit_min.0 {
            return;
        }
        self.view = view;
        self.persist_superblock(actions);
        self.install_log(merged, actions);
        self.log_view = view;
        self.persist_superblock(actions);
        self.status = Status::Normal;
        // The view's log is adopted and journaled: the head is certain again.
        self.uncertain = false;
        self.blank = false;
        self.view_reports.clear();
        if self.uncertain_persisted {
            actions.push(Action::Uncertain(false));
            self.uncertain_persisted = false;
        }
        self.dvcs.clear();
        self.acks.clear();
        self.in_pipeline.clear();
        self.ticks_since_heartbeat = 0;
        self.commit_max = self.commit_max.max(commit);
        // Ops below our checkpoint are not ours to acknowledge (we hold
        // only their state).
        for op in (commit.0 + 1).max(self.log_start.0)..=self.head().0 {
            let identity = self.entry(Op(op)).expect("held").identity;
            self.acknowledge(Op(op), identity, actions);
        }
        self.apply_committed(actions);
    }

    /// A blank replica forgot its view, and a deposed primary that has not
    /// noticed still answers probes: it adopts only an echo of this boot's
    /// probe, of a view at least the highest that nonce-echoing reports
    /// from `n - view_change_quorum + 1` other replicas give (§6.3).
    fn may_adopt_blank(&self, view: View, nonce: u64) -> bool {
        let needed = usize::from(self.n - self.quorums.view_change + 1);
        nonce == self.nonce
            && self.view_reports.len() >= needed
            && self
                .view_reports
                .values()
                .all(|&(reported, _)| view >= reported)
    }

    /// Whether this replica provably holds no op anyone could need: blank,
    /// or certain with an empty log and no checkpoint (it acknowledged
    /// nothing it still keeps, and nothing was committed through it). A
    /// replica that started a new group holds nothing until its first
    /// prepare, so a blank peer that missed the start can still join it.
    fn holds_nothing(&self) -> bool {
        self.blank
            || (self.head() == Op::ZERO && self.checkpoint_op() == Op::ZERO && !self.uncertain)
    }

    /// Genesis (replication spec §6.2): a blank replica whose probe every
    /// other roster replica answered as holding nothing (blank, or a new
    /// group's member with an empty log) belongs to a new group. It
    /// becomes certain with an empty log (it holds and acknowledged
    /// nothing) and votes for the next view at once, so the group's first
    /// primary is elected by a view-change quorum of such members: a
    /// primary that started alone could prepare ops nobody else can ever
    /// take from it, while its blank peers wait for a view it cannot lead.
    /// Stale answers cannot count (they echo this boot's nonce), and one
    /// replica with data anywhere prevents it, so a wipe can never start a
    /// second history.
    fn maybe_genesis(&mut self, actions: &mut Vec<Action>) {
        let everyone = self.view_reports.len() == usize::from(self.n) - 1;
        // A blank replica that already met a primary (and moved its view)
        // waits for that view instead.
        let first_view = self.log_view == self.view;
        if !everyone || !first_view || !self.view_reports.values().all(|&(_, blank)| blank) {
            return;
        }
        assert!(
            self.blank && self.log.is_empty(),
            "genesis of an empty replica"
        );
        self.blank = false;
        self.uncertain = false;
        self.view_reports.clear();
        // Written, the superblock marks the replica as no longer blank.
        actions.push(Action::Superblock {
            view: self.view,
            log_view: self.log_view,
        });
        if self.uncertain_persisted {
            actions.push(Action::Uncertain(false));
            self.uncertain_persisted = false;
        }
        assert!(
            !self.blank && !self.uncertain,
            "a certain member of a new group"
        );
        self.status = Status::ViewChange;
        let next = self.view.next();
        self.start_view_change(next, actions);
    }

    /// Heard a newer view than ours: ask its primary for it.
    pub(super) fn probe_newer_view(&mut self, view: View, actions: &mut Vec<Action>) {
        if self.primary_of(view) == self.id {
            return;
        }
        let probe = Message::RequestStartView {
            view,
            nonce: self.nonce,
            blank: self.blank,
        };
        self.send(actions, self.primary_of(view), probe);
    }

    fn on_request_start_view(
        &mut self,
        from: ReplicaId,
        view: View,
        nonce: u64,
        actions: &mut Vec<Action>,
    ) {
        if !self.is_primary() || view > self.view || self.log_view != self.view {
            return;
        }
        let start_view = self.start_view_message(nonce);
        self.send(actions, from, start_view);
    }

    pub(super) fn tick_view_change(&mut self, actions: &mut Vec<Action>) {
        self.ticks_in_view_change += 1;
        if self
            .ticks_in_view_change
            .is_multiple_of(self.timing.retransmit_interval)
        {
            self.resend_view_change(actions);
        }
        if self.ticks_in_view_change < self.timing.view_change_timeout {
            return;
        }
        // No new view in time: vote for the next one, but move only with a
        // quorum (a lone replica never climbs views by itself).
        self.ticks_in_view_change = 0;
        let next = self.vote_target();
        *self.svc_votes.entry(next).or_insert(0) |= 1 << self.id;
        self.broadcast(actions, &Message::StartViewChange { view: next });
        let votes = self.svc_votes.get(&next).copied().unwrap_or(0);
        if votes.count_ones() >= u32::from(self.quorums.view_change) {
            self.start_view_change(next, actions);
        }
    }

    /// The view a vote to move on goes to: the next one, or the highest
    /// one others already voted for (§5.3 step 1), so votes meet.
    pub(super) fn vote_target(&self) -> View {
        let voted = self
            .svc_votes
            .keys()
            .next_back()
            .copied()
            .unwrap_or_default();
        self.view.next().max(voted)
    }

    /// Resends our vote for the current view and, once sent, our DVC: a
    /// lost one would otherwise stall the view change.
    fn resend_view_change(&mut self, actions: &mut Vec<Action>) {
        self.broadcast(actions, &Message::StartViewChange { view: self.view });
        let primary = self.primary_of(self.view);
        if self.dvc_sent && primary != self.id {
            self.send_dvc(self.own_dvc(), actions);
        }
    }

    pub(super) fn tick_recovering(&mut self, actions: &mut Vec<Action>) {
        self.ticks_since_heartbeat += 1;
        if self.ticks_since_heartbeat < self.timing.retransmit_interval {
            return;
        }
        self.ticks_since_heartbeat = 0;
        if self.probes_unanswered >= super::PROBE_ATTEMPTS_MAX && !self.blank {
            // Nobody leads a view we can join: the whole group restarted
            // (or is in an older view than ours, persisted before a crash).
            // Start a view change on our own log (a new view, so this
            // replica never resumes a primaryship it held before). An
            // uncertain replica takes part with its DoViewChange flagged,
            // which counts only as §5.5 allows; a blank one never votes.
            self.status = Status::ViewChange;
            let next = self.vote_target();
            self.start_view_change(next, actions);
            return;
        }
        self.probes_unanswered += 1;
        for to in self.others().collect::<Vec<_>>() {
            let probe = Message::RequestStartView {
                view: self.view,
                nonce: self.nonce,
                blank: self.blank,
            };
            self.send(actions, to, probe);
        }
    }
}
