//! Log fetches of one partition group (replication spec §6.5, replica
//! commands 32/33): a replica given a checkpoint above its log asks its
//! peers, one at a time, for the committed batches it lacks (`LogFetch`),
//! and serves theirs from its own segments (`LogChunk`). Both run beside
//! the group's task, on the owning shard.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use consensus::View;
use consensus::vsr::message::{Message, ReplicaId};
use crossfire::oneshot::{TxOneshot, oneshot};
use engine::cluster_partition::{Fetched, LogSource, serve_fetch};
use engine::partition::Partition;
use storage::{Offset, RealStorage};
use tracing::warn;

use super::super::cluster_state::ClusterShared;

/// Bytes of batches a peer sends per log fetch (at least one batch).
const FETCH_CHUNK_BYTES: u64 = 1 << 20;
/// How long a log fetch waits for a peer's chunk before asking another.
const FETCH_TIMEOUT: Duration = Duration::from_secs(2);
/// A refill gives up (the group stops serving, saying why) after this
/// long without a byte of progress from any peer.
const REFILL_STALL_LIMIT: Duration = Duration::from_secs(300);

/// Log fetches of one group, beside its task (see the module docs).
pub(super) struct Fetch {
    shared: Arc<ClusterShared>,
    pub(super) ns: u64,
    incarnation: u64,
    partition: Rc<Partition<RealStorage>>,
    /// Fetches sent, by nonce: the peer asked and where its chunk goes.
    waiting: RefCell<BTreeMap<u64, (ReplicaId, TxOneshot<Fetched>)>>,
    next_nonce: Cell<u64>,
    /// Frames are being dropped at a full queue (logged once per run).
    pub(super) dropping: Cell<bool>,
}

impl Fetch {
    pub(super) fn new(
        shared: Arc<ClusterShared>,
        ns: u64,
        incarnation: u64,
        partition: Rc<Partition<RealStorage>>,
    ) -> Self {
        Fetch {
            shared,
            ns,
            incarnation,
            partition,
            waiting: RefCell::new(BTreeMap::new()),
            next_nonce: Cell::new(1),
            dropping: Cell::new(false),
        }
    }

    /// A peer asks for committed batches: answered from the segments by
    /// a task of its own.
    pub(super) fn serve(
        &self,
        peer: ReplicaId,
        nonce: u64,
        from: Offset,
        until: Offset,
        generation: u64,
    ) {
        let (shared, partition) = (self.shared.clone(), self.partition.clone());
        let (ns, incarnation) = (self.ns, self.incarnation);
        compio::runtime::spawn(async move {
            match serve_fetch(&partition, from, until, FETCH_CHUNK_BYTES, generation).await {
                Ok(fetched) => {
                    let chunk = Message::LogChunk {
                        view: View(0),
                        nonce,
                        first: fetched.first.0,
                        end: fetched.end.0,
                        records: fetched.records,
                    };
                    shared.send(peer, ns, incarnation, chunk);
                }
                Err(e) => warn!(ns, peer, "a peer's log fetch could not be served: {e}"),
            }
        })
        .detach();
    }

    pub(super) fn answered(&self, peer: ReplicaId, nonce: u64, fetched: Fetched) {
        let mut waiting = self.waiting.borrow_mut();
        if waiting.get(&nonce).is_some_and(|(asked, _)| *asked == peer)
            && let Some((_, reply)) = waiting.remove(&nonce)
        {
            reply.send(fetched);
        }
    }

    /// Asks `peer` once; `None` when it did not answer in time.
    async fn ask(&self, peer: ReplicaId, from: Offset, until: Offset) -> Option<Fetched> {
        let nonce = self.next_nonce.get();
        self.next_nonce.set(nonce + 1);
        let (reply, rx) = oneshot();
        self.waiting.borrow_mut().insert(nonce, (peer, reply));
        let fetch = Message::LogFetch {
            view: View(0),
            nonce,
            from: from.0,
            until: until.0,
            generation: self.partition.purge_generation(),
        };
        self.shared.send(peer, self.ns, self.incarnation, fetch);
        let answer = compio::time::timeout(FETCH_TIMEOUT, rx).await;
        self.waiting.borrow_mut().remove(&nonce);
        answer.ok()?.ok()
    }

    /// The group's `LogSource`: asks the peers in turn until one sends
    /// something at `from` (or says its log starts above it).
    pub(super) fn source(self: Rc<Self>) -> LogSource {
        Rc::new(move |from, until| {
            let fetch = self.clone();
            Box::pin(async move {
                let peers: Vec<ReplicaId> = (0..fetch.shared.replicas)
                    .filter(|&id| id != fetch.shared.replica)
                    .collect();
                let started = Instant::now();
                let mut turn = 0usize;
                loop {
                    let peer = peers[turn % peers.len()];
                    turn += 1;
                    if let Some(fetched) = fetch.ask(peer, from, until).await
                        && (!fetched.records.is_empty() || fetched.first > from)
                    {
                        return Ok(fetched);
                    }
                    if started.elapsed() > REFILL_STALL_LIMIT {
                        return Err(format!(
                            "no peer sent this partition's batches from offset {} in {} s",
                            from.0,
                            REFILL_STALL_LIMIT.as_secs()
                        ));
                    }
                    if turn.is_multiple_of(peers.len()) {
                        compio::time::sleep(Duration::from_millis(200)).await;
                    }
                }
            })
        })
    }
}
