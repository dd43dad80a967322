//! The invariants every run is checked against (replication spec §9):
//! committed-prefix agreement, each request executed at most once,
//! acknowledged requests committed, and equal state at the end.

use std::collections::BTreeMap;

use consensus::vsr::message::Entry;
use consensus::{ClientId, Op, RequestNumber};

use crate::app::App;

/// A broken invariant: what and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation(pub String);

#[derive(Debug, Default)]
pub struct Checker {
    /// The identity committed at each op, filled by the first apply.
    committed: BTreeMap<Op, (u64, ClientId, RequestNumber)>,
    /// The timestamp of each committed op (they strictly increase).
    timestamps: BTreeMap<Op, u64>,
    /// The op at which each request committed.
    executed: BTreeMap<(ClientId, RequestNumber), Op>,
    /// Requests answered as committed, and the op the answer named.
    acknowledged: BTreeMap<(ClientId, RequestNumber), Op>,
    /// The service applied once, in op order, to every first commit: the
    /// sequential model every replica and every reply must agree with.
    model: App,
    model_results: BTreeMap<Op, Vec<u8>>,
    /// The model's state (encoded) after each committed op, for checking
    /// checkpoints and state transfers.
    model_states: BTreeMap<Op, Vec<u8>>,
}

impl Checker {
    /// A replica applied `entry` (ops arrive in order per replica; the
    /// replica asserts that).
    pub fn applied(&mut self, replica: u8, entry: &Entry, result: &[u8]) -> Result<(), Violation> {
        let fact = (entry.identity, entry.client, entry.request);
        match self.committed.get(&entry.op) {
            Some(known) if *known != fact => {
                return Err(Violation(format!(
                    "agreement: replica {replica} applied {:?} as {fact:?}, another committed {known:?}",
                    entry.op
                )));
            }
            Some(_) => {
                let model = &self.model_results[&entry.op];
                if model.as_slice() != result {
                    return Err(Violation(format!(
                        "state: replica {replica}'s result for {:?} is {result:?}, the sequential model's {model:?}",
                        entry.op
                    )));
                }
                return Ok(());
            }
            None => {
                assert_eq!(
                    self.committed.keys().last().map_or(0, |op| op.0) + 1,
                    entry.op.0,
                    "first commits arrive in op order"
                );
                let model = self.model.apply(&entry.body);
                if model != result {
                    return Err(Violation(format!(
                        "state: replica {replica}'s result for {:?} is {result:?}, the sequential model's {model:?}",
                        entry.op
                    )));
                }
                self.model_results.insert(entry.op, model);
                let mut state = Vec::new();
                self.model.encode(&mut state);
                self.model_states.insert(entry.op, state);
                self.committed.insert(entry.op, fact);
                self.timestamps.insert(entry.op, entry.timestamp_us);
                let before = self.timestamps.range(..entry.op).next_back();
                let after = self.timestamps.range(entry.op.next()..).next();
                let ordered = before.is_none_or(|(_, t)| *t < entry.timestamp_us)
                    && after.is_none_or(|(_, t)| *t > entry.timestamp_us);
                if !ordered {
                    return Err(Violation(format!(
                        "timestamps: {:?} stamped {} out of op order",
                        entry.op, entry.timestamp_us
                    )));
                }
            }
        }
        if entry.client.0 == 0 {
            return Ok(());
        }
        let key = (entry.client, entry.request);
        if let Some(first) = self.executed.insert(key, entry.op) {
            return Err(Violation(format!(
                "at most once: {key:?} committed at {first:?} and again at {:?}",
                entry.op
            )));
        }
        Ok(())
    }

    /// A client was told its request committed at `op`.
    pub fn replied(
        &mut self,
        client: ClientId,
        request: RequestNumber,
        op: Op,
        result: &[u8],
    ) -> Result<(), Violation> {
        let key = (client, request);
        if self
            .model_results
            .get(&op)
            .is_none_or(|model| model.as_slice() != result)
        {
            return Err(Violation(format!(
                "reply: {key:?} answered {result:?} for {op:?}, the sequential model has {:?}",
                self.model_results.get(&op)
            )));
        }
        match self.executed.get(&key) {
            Some(&executed) if executed == op => {}
            other => {
                return Err(Violation(format!(
                    "reply: {key:?} answered as {op:?}, committed at {other:?}"
                )));
            }
        }
        if let Some(earlier) = self.acknowledged.insert(key, op)
            && earlier != op
        {
            return Err(Violation(format!(
                "reply: {key:?} answered as {earlier:?} and as {op:?}"
            )));
        }
        Ok(())
    }

    /// A replica checkpointed (or installed by state transfer) the service
    /// state `state` as of `op`: it must be the sequential model's there.
    pub fn checkpoint(
        &self,
        replica: u8,
        op: Op,
        state: &[u8],
        what: &str,
    ) -> Result<(), Violation> {
        match self.model_states.get(&op) {
            Some(model) if model.as_slice() == state => Ok(()),
            Some(_) => Err(Violation(format!(
                "{what}: replica {replica}'s state at {op:?} differs from the sequential model's"
            ))),
            None => Err(Violation(format!(
                "{what}: replica {replica} holds state at {op:?}, which never committed"
            ))),
        }
    }

    /// Every acknowledged request is still in the committed history.
    pub fn acknowledged_kept(&self) -> Result<(), Violation> {
        for (key, op) in &self.acknowledged {
            match self.committed.get(op) {
                Some((_, client, request)) if (*client, *request) == *key => {}
                other => {
                    return Err(Violation(format!(
                        "acknowledged {key:?} at {op:?} is not what committed there: {other:?}"
                    )));
                }
            }
        }
        Ok(())
    }

    /// The identities of the committed ops, in op order.
    pub fn history(&self) -> Vec<u64> {
        let history: Vec<u64> = self
            .committed
            .values()
            .map(|(identity, _, _)| *identity)
            .collect();
        assert_eq!(
            self.committed.keys().last().map_or(0, |op| op.0),
            history.len() as u64,
            "the committed history has no holes"
        );
        history
    }

    /// The sequential model's state after every committed op.
    pub fn model(&self) -> &App {
        &self.model
    }

    pub fn committed_ops(&self) -> usize {
        self.committed.len()
    }

    pub fn acknowledged_count(&self) -> usize {
        self.acknowledged.len()
    }
}
