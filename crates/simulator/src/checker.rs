//! The invariants every run is checked against (replication spec §9), per
//! group: committed-prefix agreement, each request executed at most once,
//! every reply equal to the sequential model's result, acknowledged
//! requests kept, checkpoints and transfers equal to the model's state.

use std::collections::BTreeMap;

use consensus::vsr::message::{Entry, Message};
use consensus::{ClientId, Op, RequestNumber, View};

use crate::app::{GroupId, Metadata, State};

/// A broken invariant: what and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation(pub String);

/// One group's committed history and its sequential model.
#[derive(Debug)]
struct History {
    /// The identity committed at each op, filled by the first apply.
    committed: BTreeMap<Op, (u64, ClientId, RequestNumber)>,
    /// The timestamp of each committed op (they strictly increase).
    timestamps: BTreeMap<Op, u64>,
    /// The service applied once, in op order, to every first commit.
    model: State,
    results: BTreeMap<Op, Vec<u8>>,
    /// The model's state (encoded) after each op, for checkpoints.
    states: BTreeMap<Op, Vec<u8>>,
}

impl History {
    fn new(group: GroupId) -> History {
        History {
            committed: BTreeMap::new(),
            timestamps: BTreeMap::new(),
            model: State::new(group),
            results: BTreeMap::new(),
            states: BTreeMap::new(),
        }
    }
}

#[derive(Debug, Default)]
pub struct Checker {
    groups: BTreeMap<GroupId, History>,
    /// The group and op at which each request committed.
    executed: BTreeMap<(ClientId, RequestNumber), (GroupId, Op)>,
    /// Requests answered as committed, and where the answer said.
    acknowledged: BTreeMap<(ClientId, RequestNumber), (GroupId, Op)>,
    /// Ghost acks (replication spec §9 (6)): what each replica of each
    /// group acknowledged (PrepareOk) and has not since given up by
    /// adopting a view's log without it, across its crashes.
    prepared_ok: BTreeMap<(u8, GroupId), BTreeMap<Op, u64>>,
    /// §9 (3): the replica that sent Prepares in each (group, view), and
    /// the one identity prepared at each (group, view, op).
    primaries: BTreeMap<(GroupId, View), u8>,
    prepared: BTreeMap<(GroupId, View, Op), u64>,
    /// §9 (1): the highest view each replica stamped on a view-scoped
    /// frame, across its restarts (a lost superblock write shows here).
    stamped: BTreeMap<(u8, GroupId), View>,
}

impl Checker {
    fn history(&mut self, group: GroupId) -> &mut History {
        self.groups
            .entry(group)
            .or_insert_with(|| History::new(group))
    }

    /// A replica of `group` applied `entry` with `result` (ops arrive in
    /// order per replica; the simulator asserts that).
    pub fn applied(
        &mut self,
        group: GroupId,
        replica: u8,
        entry: &Entry,
        result: &[u8],
    ) -> Result<(), Violation> {
        let fact = (entry.identity, entry.client, entry.request);
        let history = self.history(group);
        match history.committed.get(&entry.op) {
            Some(known) if *known != fact => {
                return Err(Violation(format!(
                    "agreement: replica {replica} applied {:?} of {group:?} as {fact:?}, another committed {known:?}",
                    entry.op
                )));
            }
            Some(_) => {
                let model = &history.results[&entry.op];
                if model.as_slice() != result {
                    return Err(Violation(format!(
                        "state: replica {replica}'s result for {:?} of {group:?} is {result:?}, the sequential model's {model:?}",
                        entry.op
                    )));
                }
                return Ok(());
            }
            None => {
                assert_eq!(
                    history.committed.keys().last().map_or(0, |op| op.0) + 1,
                    entry.op.0,
                    "first commits arrive in op order"
                );
                let (model, _) = history.model.apply(entry.op.0, &entry.body);
                if model != result {
                    return Err(Violation(format!(
                        "state: replica {replica}'s result for {:?} of {group:?} is {result:?}, the sequential model's {model:?}",
                        entry.op
                    )));
                }
                let mut state = Vec::new();
                history.model.encode(&mut state);
                history.states.insert(entry.op, state);
                history.results.insert(entry.op, model);
                history.committed.insert(entry.op, fact);
                history.timestamps.insert(entry.op, entry.timestamp_us);
                let before = history.timestamps.range(..entry.op).next_back();
                let after = history.timestamps.range(entry.op.next()..).next();
                let ordered = before.is_none_or(|(_, t)| *t < entry.timestamp_us)
                    && after.is_none_or(|(_, t)| *t > entry.timestamp_us);
                if !ordered {
                    return Err(Violation(format!(
                        "timestamps: {:?} of {group:?} stamped {} out of op order",
                        entry.op, entry.timestamp_us
                    )));
                }
            }
        }
        if entry.client.0 == 0 {
            return Ok(());
        }
        let key = (entry.client, entry.request);
        if let Some(first) = self.executed.insert(key, (group, entry.op)) {
            return Err(Violation(format!(
                "at most once: {key:?} committed at {first:?} and again at {:?} of {group:?}",
                entry.op
            )));
        }
        Ok(())
    }

    /// A client was told its request committed at `op` of `group`.
    pub fn replied(
        &mut self,
        group: GroupId,
        client: ClientId,
        request: RequestNumber,
        op: Op,
        result: &[u8],
    ) -> Result<(), Violation> {
        let key = (client, request);
        let model = self.groups.get(&group).and_then(|h| h.results.get(&op));
        if model.is_none_or(|model| model.as_slice() != result) {
            return Err(Violation(format!(
                "reply: {key:?} answered {result:?} for {op:?} of {group:?}, the sequential model has {model:?}"
            )));
        }
        match self.executed.get(&key) {
            Some(&executed) if executed == (group, op) => {}
            other => {
                return Err(Violation(format!(
                    "reply: {key:?} answered as {op:?} of {group:?}, committed at {other:?}"
                )));
            }
        }
        if let Some(earlier) = self.acknowledged.insert(key, (group, op))
            && earlier != (group, op)
        {
            return Err(Violation(format!(
                "reply: {key:?} answered as {earlier:?} and as {op:?} of {group:?}"
            )));
        }
        Ok(())
    }

    /// A replica checkpointed (or installed by state transfer) the service
    /// state `state` of `group` as of `op`: it must be the model's there.
    pub fn checkpoint(
        &self,
        group: GroupId,
        replica: u8,
        op: Op,
        state: &[u8],
        what: &str,
    ) -> Result<(), Violation> {
        match self.groups.get(&group).and_then(|h| h.states.get(&op)) {
            Some(model) if model.as_slice() == state => Ok(()),
            Some(_) => Err(Violation(format!(
                "{what}: replica {replica}'s state of {group:?} at {op:?} differs from the sequential model's"
            ))),
            None => Err(Violation(format!(
                "{what}: replica {replica} holds state of {group:?} at {op:?}, which never committed"
            ))),
        }
    }

    /// A replica sent `message` in `group`: at most one primary acts per
    /// view, at most one identity is prepared per (view, op), and no
    /// view-scoped frame goes back below a view the replica stamped before
    /// (replication spec §9 (1), (3)).
    pub fn sent(
        &mut self,
        replica: u8,
        group: GroupId,
        message: &Message,
    ) -> Result<(), Violation> {
        if let Message::Prepare { view, entry, .. } = message {
            if let Some(&other) = self.primaries.get(&(group, *view))
                && other != replica
            {
                return Err(Violation(format!(
                    "one primary per view: replicas {other} and {replica} both prepared in {view:?} of {group:?}"
                )));
            }
            self.primaries.insert((group, *view), replica);
            let key = (group, *view, entry.op);
            match self.prepared.get(&key) {
                Some(&identity) if identity != entry.identity => {
                    return Err(Violation(format!(
                        "one prepare per (view, op): {key:?} prepared as {identity:x} and as {:x}",
                        entry.identity
                    )));
                }
                _ => {
                    self.prepared.insert(key, entry.identity);
                }
            }
        }
        let view_scoped = matches!(
            message,
            Message::Prepare { .. }
                | Message::PrepareOk { .. }
                | Message::Commit { .. }
                | Message::DoViewChange { .. }
                | Message::StartView { .. }
        );
        if view_scoped {
            let view = message.view();
            let highest = self.stamped.entry((replica, group)).or_default();
            if view < *highest {
                return Err(Violation(format!(
                    "views never go back: replica {replica} stamped {view:?} on a frame of {group:?} after {highest:?}"
                )));
            }
            *highest = view;
        }
        Ok(())
    }

    /// A replica's disk was wiped: it forgot the views it stamped (a blank
    /// replica adopts a view before it stamps any frame).
    pub fn wiped(&mut self, replica: u8) {
        self.stamped.retain(|(r, _), _| *r != replica);
    }

    /// A replica acknowledged `op` (with `identity`) in `group`.
    pub fn prepare_ok(&mut self, replica: u8, group: GroupId, op: Op, identity: u64) {
        self.prepared_ok
            .entry((replica, group))
            .or_default()
            .insert(op, identity);
    }

    /// A replica cut its journal above `op` (adopting a view's log) or
    /// replaced it through `op` (state transfer): what it acknowledged
    /// there is no longer its to keep.
    pub fn gave_up(&mut self, replica: u8, group: GroupId, above: Option<Op>, through: Option<Op>) {
        if let Some(acked) = self.prepared_ok.get_mut(&(replica, group)) {
            if let Some(above) = above {
                acked.retain(|op, _| *op <= above);
            }
            if let Some(through) = through {
                acked.retain(|op, _| *op > through);
            }
        }
    }

    /// A replica's DoViewChange (never flagged uncertain: ours are not
    /// sent then) must report every op it acknowledged: a lower head, or
    /// another entry at such an op, would let the view drop a committed op.
    pub fn dvc_sent(
        &self,
        replica: u8,
        group: GroupId,
        head: Op,
        entries: &[Entry],
    ) -> Result<(), Violation> {
        let Some(acked) = self.prepared_ok.get(&(replica, group)) else {
            return Ok(());
        };
        if let Some((&op, _)) = acked.range(head.next()..).next() {
            return Err(Violation(format!(
                "ghost ack: replica {replica}'s DoViewChange for {group:?} reports head {head:?}, below {op:?} it acknowledged"
            )));
        }
        for entry in entries {
            if let Some(&identity) = acked.get(&entry.op)
                && identity != entry.identity
            {
                return Err(Violation(format!(
                    "ghost ack: replica {replica}'s DoViewChange for {group:?} reports another entry at {:?} than it acknowledged",
                    entry.op
                )));
            }
        }
        Ok(())
    }

    /// Every acknowledged request is still in its group's committed history.
    pub fn acknowledged_kept(&self) -> Result<(), Violation> {
        for (key, (group, op)) in &self.acknowledged {
            let committed = self.groups.get(group).and_then(|h| h.committed.get(op));
            match committed {
                Some((_, client, request)) if (*client, *request) == *key => {}
                other => {
                    return Err(Violation(format!(
                        "acknowledged {key:?} at {op:?} of {group:?} is not what committed there: {other:?}"
                    )));
                }
            }
        }
        Ok(())
    }

    /// The identities of `group`'s committed ops, in op order.
    pub fn history_of(&self, group: GroupId) -> Vec<u64> {
        let Some(history) = self.groups.get(&group) else {
            return Vec::new();
        };
        let identities: Vec<u64> = history
            .committed
            .values()
            .map(|(identity, _, _)| *identity)
            .collect();
        assert_eq!(
            history.committed.keys().last().map_or(0, |op| op.0),
            identities.len() as u64,
            "the committed history has no holes"
        );
        identities
    }

    /// The sequential model of `group` after every committed op.
    pub fn model(&self, group: GroupId) -> State {
        self.groups
            .get(&group)
            .map_or_else(|| State::new(group), |h| h.model.clone())
    }

    /// The committed metadata state (what clients learn partitions from).
    pub fn metadata(&self) -> Metadata {
        self.groups
            .get(&GroupId::Metadata)
            .and_then(|h| h.model.metadata().cloned())
            .unwrap_or_default()
    }

    pub fn committed_ops(&self) -> usize {
        self.groups.values().map(|h| h.committed.len()).sum()
    }

    pub fn acknowledged_count(&self) -> usize {
        self.acknowledged.len()
    }
}
