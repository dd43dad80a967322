//! Checkpoints and state transfer (replication spec §6.5, §6.6).
//!
//! Every `checkpoint_interval` applied ops a replica snapshots its state at
//! the commit point (the caller fills in the state machine's bytes and
//! persists them) and drops its journal below that op, keeping the op
//! itself. A peer whose repair asks below a journal's start is told
//! RangeEvicted and fetches the checkpoint instead: its target (op entry
//! and client table), then the state bytes one chunk at a time, verified
//! against the target's checksum, installed atomically; repair then goes
//! on from the checkpoint's op.
//!
//! Safety: a checkpoint is only ever taken at an applied (committed) op,
//! so installing one replaces a log prefix with the committed history. A
//! transfer is installed only above the receiver's head, so it never drops
//! an entry the receiver holds (and may have acknowledged).

use super::message::{Entry, Message, ReplicaId, Snapshot, checksum_of};
use super::{Action, VsrReplica};
use crate::types::{ClientId, Op, RequestNumber, View};

/// Rounds without progress after which a transfer is given up (repair
/// starts a new one, perhaps from another peer).
const TRANSFER_STALLS_MAX: u32 = 5;

/// A state transfer under way.
#[derive(Debug, Clone)]
pub(super) struct Transfer {
    /// The peer (in the view it was in) whose RangeEvicted started it;
    /// only its answers are taken, in whatever view it is now: a
    /// checkpoint is committed state, whichever view it was offered in.
    source: (ReplicaId, View),
    /// Repair continues to this op once the checkpoint is installed.
    resume_to: Op,
    /// The checkpoint on offer, once known.
    target: Option<Target>,
    ticks: u32,
    stalls: u32,
}

#[derive(Debug, Clone)]
struct Target {
    entry: Entry,
    clients: Vec<(ClientId, RequestNumber, Op)>,
    len: u64,
    checksum: u64,
    received: Vec<u8>,
}

impl VsrReplica {
    /// After applying an op: checkpoint once `checkpoint_interval` ops, or
    /// `checkpoint_bytes` of op bodies, were applied above the last
    /// checkpoint (one at a time).
    pub(super) fn maybe_checkpoint(&mut self, actions: &mut Vec<Action>) {
        let due = self.commit_min.0 >= self.checkpoint_op().0 + self.limits.checkpoint_interval
            || (self.applied_bytes >= self.limits.checkpoint_bytes
                && self.commit_min > self.checkpoint_op());
        if !due || self.checkpoint_pending.is_some() {
            return;
        }
        self.checkpoint_at_commit(actions);
    }

    /// Asks for a checkpoint at the applied op now, ahead of the limits
    /// (for example so that retention may drop the log below it). Nothing
    /// when one is pending or the applied op is checkpointed already.
    pub fn checkpoint_now(&mut self) -> Vec<Action> {
        assert!(
            self.unsynced.is_none(),
            "prepared requests are synced first"
        );
        let mut actions = Vec::new();
        if self.checkpoint_pending.is_none() && self.commit_min > self.checkpoint_op() {
            self.checkpoint_at_commit(&mut actions);
        }
        actions
    }

    /// Asks for the checkpoint at `commit_min`.
    fn checkpoint_at_commit(&mut self, actions: &mut Vec<Action>) {
        // Preconditions: one checkpoint at a time, of applied state above
        // the last one.
        assert!(
            self.checkpoint_pending.is_none(),
            "one checkpoint at a time"
        );
        assert!(
            self.commit_min > self.checkpoint_op(),
            "a checkpoint moves forward"
        );
        self.applied_bytes = 0;
        let entry = self
            .entry(self.commit_min)
            .expect("the applied op is in the log")
            .clone();
        self.checkpoint_pending = Some(entry.op);
        actions.push(Action::Checkpoint(Snapshot {
            entry,
            clients: self.client_list(),
            state: Vec::new(),
        }));
    }

    /// The caller persisted the checkpoint asked for by
    /// [`Action::Checkpoint`]: the journal below its op is gone.
    pub fn checkpointed(&mut self, snapshot: Snapshot) {
        let op = snapshot.op();
        assert_eq!(
            self.checkpoint_pending,
            Some(op),
            "only the checkpoint asked for comes back"
        );
        self.checkpoint_pending = None;
        if op <= self.checkpoint_op() {
            return; // a state transfer installed a newer one meanwhile
        }
        assert!(op <= self.commit_min, "checkpoints are of applied state");
        assert_eq!(
            self.entry(op).map(|e| e.identity),
            Some(snapshot.entry.identity),
            "a checkpoint is of this replica's own log"
        );
        let below = usize::try_from(op.0 - self.log_start.0).expect("fits");
        self.log.drain(..below);
        self.log_start = op;
        self.snapshot = Some(snapshot);
        assert_eq!(self.log[0].op, op, "the checkpoint's op is kept");
        self.check_invariants();
    }

    /// The client table in id order, as a snapshot keeps it.
    fn client_list(&self) -> Vec<(ClientId, RequestNumber, Op)> {
        self.clients
            .iter()
            .map(|(&client, &(request, op))| (client, request, op))
            .collect()
    }

    pub(super) fn on_transfer_message(
        &mut self,
        from: ReplicaId,
        message: Message,
        actions: &mut Vec<Action>,
    ) {
        match message {
            Message::RangeEvicted { view, oldest } => {
                self.on_range_evicted(from, view, oldest, actions)
            }
            Message::RequestStateTransfer { .. } => self.offer_checkpoint(from, actions),
            Message::StateTransferTarget {
                view,
                entry,
                clients,
                len,
                checksum,
            } => {
                let target = Target {
                    entry,
                    clients,
                    len,
                    checksum,
                    received: Vec::new(),
                };
                self.on_target(from, view, target, actions)
            }
            Message::RequestStateChunk { op, offset, .. } => {
                self.serve_chunk(from, op, offset, actions)
            }
            Message::StateChunk {
                op, offset, bytes, ..
            } => self.on_chunk(from, op, offset, &bytes, actions),
            _ => unreachable!("only transfer messages come here"),
        }
    }

    /// The peer we asked for repair keeps nothing that low: fetch its
    /// checkpoint instead.
    fn on_range_evicted(
        &mut self,
        from: ReplicaId,
        view: View,
        oldest: Op,
        actions: &mut Vec<Action>,
    ) {
        let asked = self.repair_source == Some((from, view));
        if !asked || self.transfer.is_some() || self.is_primary() || self.head().next() >= oldest {
            return;
        }
        self.transfer = Some(Transfer {
            source: (from, view),
            resume_to: self.repair_target,
            target: None,
            ticks: 0,
            stalls: 0,
        });
        self.send(
            actions,
            from,
            Message::RequestStateTransfer { view: self.view },
        );
    }

    /// Offers our latest checkpoint (committed state, whatever our status).
    fn offer_checkpoint(&self, to: ReplicaId, actions: &mut Vec<Action>) {
        let Some(snapshot) = &self.snapshot else {
            return;
        };
        let target = Message::StateTransferTarget {
            view: self.view,
            entry: snapshot.entry.clone(),
            clients: snapshot.clients.clone(),
            len: snapshot.state.len() as u64,
            checksum: snapshot.state_checksum(),
        };
        self.send(actions, to, target);
    }

    fn on_target(
        &mut self,
        from: ReplicaId,
        view: View,
        target: Target,
        actions: &mut Vec<Action>,
    ) {
        let head = self.head();
        let Some(transfer) = self.transfer.as_mut() else {
            return;
        };
        if transfer.source.0 != from {
            return;
        }
        if target.entry.op <= head || !target.entry.is_sound() {
            // Nothing to gain (or a damaged offer): repair goes on.
            let resume_to = transfer.resume_to;
            self.transfer = None;
            self.repair_source = None;
            self.request_repair(from, view, resume_to, actions);
            return;
        }
        transfer.target = Some(target);
        transfer.ticks = 0;
        transfer.stalls = 0;
        self.request_next_chunk(actions);
    }

    fn serve_chunk(&self, to: ReplicaId, op: Op, offset: u64, actions: &mut Vec<Action>) {
        let Some(snapshot) = &self.snapshot else {
            return;
        };
        if snapshot.op() != op {
            // We checkpointed again since: offer the newer one.
            self.offer_checkpoint(to, actions);
            return;
        }
        let Ok(start) = usize::try_from(offset) else {
            return;
        };
        if start >= snapshot.state.len() {
            return;
        }
        let end = snapshot
            .state
            .len()
            .min(start + self.limits.state_chunk_max);
        let chunk = Message::StateChunk {
            view: self.view,
            op,
            offset,
            bytes: snapshot.state[start..end].to_vec(),
        };
        self.send(actions, to, chunk);
    }

    fn on_chunk(
        &mut self,
        from: ReplicaId,
        op: Op,
        offset: u64,
        bytes: &[u8],
        actions: &mut Vec<Action>,
    ) {
        let Some(transfer) = self.transfer.as_mut() else {
            return;
        };
        let Some(target) = transfer.target.as_mut() else {
            return;
        };
        let fits = target.received.len() as u64 + bytes.len() as u64 <= target.len;
        if transfer.source.0 != from
            || target.entry.op != op
            || offset != target.received.len() as u64
            || bytes.is_empty()
            || !fits
        {
            return;
        }
        target.received.extend_from_slice(bytes);
        transfer.ticks = 0;
        transfer.stalls = 0;
        self.request_next_chunk(actions);
    }

    /// Asks for the next chunk, or installs a complete, verified target
    /// (a checksum mismatch starts over with a fresh target).
    fn request_next_chunk(&mut self, actions: &mut Vec<Action>) {
        let transfer = self.transfer.as_mut().expect("a transfer is under way");
        let (peer, _) = transfer.source;
        let target = transfer.target.as_mut().expect("its target is known");
        if (target.received.len() as u64) < target.len {
            let request = Message::RequestStateChunk {
                view: self.view,
                op: target.entry.op,
                offset: target.received.len() as u64,
            };
            self.send(actions, peer, request);
            return;
        }
        if checksum_of(&target.received) != target.checksum {
            transfer.target = None;
            self.send(
                actions,
                peer,
                Message::RequestStateTransfer { view: self.view },
            );
            return;
        }
        let transfer = self.transfer.take().expect("a transfer is under way");
        let target = transfer.target.expect("its target is known");
        let (peer, view) = transfer.source;
        if target.entry.op <= self.head() {
            // Our log grew past it meanwhile (a prepare or a view's log):
            // installing would drop entries we hold. Repair goes on.
            self.request_repair(peer, view, transfer.resume_to, actions);
            return;
        }
        let snapshot = Snapshot {
            entry: target.entry,
            clients: target.clients,
            state: target.received,
        };
        self.install(snapshot, actions);
        self.request_repair(peer, view, transfer.resume_to.max(self.commit_max), actions);
    }

    /// Replaces our log (all of it below the snapshot's op) and state with
    /// the transferred checkpoint.
    fn install(&mut self, snapshot: Snapshot, actions: &mut Vec<Action>) {
        let op = snapshot.op();
        assert!(op > self.head(), "a transfer never drops an entry we hold");
        assert!(op > self.commit_min, "a transfer moves the state forward");
        self.persist_uncertainty(actions);
        actions.push(Action::InstallSnapshot(snapshot.clone()));
        self.log = vec![snapshot.entry.clone()];
        self.log_start = op;
        self.commit_min = op;
        self.commit_max = self.commit_max.max(op);
        self.clients = snapshot
            .clients
            .iter()
            .map(|&(client, request, at)| (client, (request, at)))
            .collect();
        self.in_pipeline.clear();
        self.acks.clear();
        self.snapshot = Some(snapshot);
        self.repair_source = None;
        assert_eq!(self.head(), op, "the log ends at the installed op");
        assert_eq!(self.commit_min, op, "the state is the checkpoint's");
    }

    /// Re-asks after silence; gives up after `TRANSFER_STALLS_MAX` rounds.
    pub(super) fn tick_transfer(&mut self, actions: &mut Vec<Action>) {
        let interval = self.timing.retransmit_interval;
        let Some(transfer) = self.transfer.as_mut() else {
            return;
        };
        transfer.ticks += 1;
        if transfer.ticks < interval {
            return;
        }
        transfer.ticks = 0;
        transfer.stalls += 1;
        if transfer.stalls > TRANSFER_STALLS_MAX {
            self.transfer = None;
            self.repair_source = None;
            return;
        }
        if transfer.target.is_some() {
            self.request_next_chunk(actions);
        } else {
            let (peer, _) = transfer.source;
            self.send(
                actions,
                peer,
                Message::RequestStateTransfer { view: self.view },
            );
        }
    }
}
