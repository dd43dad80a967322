//! An in-process network for the drivers' tests: replicas of one group on
//! simulated disks, a queue standing in for the replica links, delivering
//! every frame in order (faults are the simulator's business).

use std::collections::VecDeque;

use consensus::vsr::VsrReplica;
use consensus::vsr::message::{Envelope, Message, ReplicaId};
use consensus::{ClientId, Op, RequestNumber};
use storage::seam::CrashMode;
use storage::{SimStorage, Storage};

use consensus::View;
use consensus::vsr::{Limits, Timing};
use storage::superblock::Identity;

use super::{Effect, Group, Placement, StateMachine};

/// A replica's driver, as the network drives it.
#[allow(async_fn_in_trait)]
pub(crate) trait Member {
    async fn message(&mut self, from: ReplicaId, message: Message) -> Vec<Effect>;
    async fn tick(&mut self) -> Vec<Effect>;
    fn replica(&self) -> &VsrReplica;
}

impl<S: Storage, M: StateMachine> Member for Group<S, M> {
    async fn message(&mut self, from: ReplicaId, message: Message) -> Vec<Effect> {
        self.on_message(from, message).await.expect("storage works")
    }
    async fn tick(&mut self) -> Vec<Effect> {
        // A checkpoint written beside the group (`checkpoint_beside`)
        // completes at the next tick: the frames delivered before it are
        // prepared, committed and applied while it runs.
        self.complete_checkpoint().await.expect("storage works");
        self.on_tick().await.expect("storage works")
    }
    fn replica(&self) -> &VsrReplica {
        Group::replica(self)
    }
}

/// Fast timers: elections in tens of ticks.
const TIMING: Timing = Timing {
    commit_interval: 2,
    heartbeat_timeout: 10,
    view_change_timeout: 10,
    retransmit_interval: 3,
};

/// Replica `replica` of a three-replica metadata group.
pub(crate) fn placement(replica: u8, limits: Limits) -> Placement {
    Placement {
        identity: Identity {
            cluster: 7,
            replica,
            group: 1 << 63,
            incarnation: 0,
        },
        replicas: 3,
        created_view: View(0),
        timing: TIMING,
        limits,
        fsync: true,
    }
}

pub(crate) struct Net<T> {
    pub storages: Vec<SimStorage>,
    pub nodes: Vec<Option<T>>,
    pub queue: VecDeque<Envelope>,
    pub replies: Vec<(ClientId, RequestNumber, Op, Vec<u8>)>,
    /// A replica cut off from the others: frames from or to it are lost.
    pub cut: Option<ReplicaId>,
    /// A replica that hears nothing (frames to it are lost; its own go out).
    pub deaf: Option<ReplicaId>,
}

impl<T: Member> Net<T> {
    /// `n` empty disks, no replica running yet.
    pub fn new(n: u8) -> Net<T> {
        Net {
            storages: (0..n).map(|_| SimStorage::new()).collect(),
            nodes: (0..n).map(|_| None).collect(),
            queue: VecDeque::new(),
            replies: Vec::new(),
            cut: None,
            deaf: None,
        }
    }

    pub fn node(&self, id: u8) -> &T {
        self.nodes[usize::from(id)].as_ref().expect("up")
    }

    pub fn node_mut(&mut self, id: u8) -> &mut T {
        self.nodes[usize::from(id)].as_mut().expect("up")
    }

    /// Queues the frames and records the replies.
    pub fn take(&mut self, effects: Vec<Effect>) {
        for effect in effects {
            match effect {
                Effect::Send(envelope) => self.queue.push_back(envelope),
                Effect::Reply {
                    client,
                    request,
                    op,
                    result,
                } => self.replies.push((client, request, op, result)),
            }
        }
    }

    /// Delivers every queued frame, and those they cause, in order.
    pub async fn deliver(&mut self) {
        while let Some(envelope) = self.queue.pop_front() {
            let cut = self
                .cut
                .is_some_and(|c| c == envelope.from || c == envelope.to);
            if cut || self.deaf == Some(envelope.to) {
                continue;
            }
            let Some(node) = self.nodes[usize::from(envelope.to)].as_mut() else {
                continue;
            };
            let effects = node.message(envelope.from, envelope.message).await;
            self.take(effects);
        }
    }

    pub async fn tick(&mut self, ticks: u32) {
        for _ in 0..ticks {
            for id in 0..self.nodes.len() {
                if let Some(node) = self.nodes[id].as_mut() {
                    let effects = node.tick().await;
                    self.take(effects);
                }
            }
            self.deliver().await;
        }
    }

    /// The replica that is the primary of a normal view.
    pub fn primary(&self) -> u8 {
        (0..self.nodes.len())
            .find(|&id| {
                self.nodes[id]
                    .as_ref()
                    .is_some_and(|n| n.replica().is_primary())
            })
            .map(|id| u8::try_from(id).expect("a small group"))
            .expect("a primary")
    }

    /// Replica `id` loses power: only synced state survives on its disk.
    pub fn power_loss(&mut self, id: u8) {
        self.nodes[usize::from(id)] = None;
        let survived = self.storages[usize::from(id)].crash(CrashMode::Clean);
        self.storages[usize::from(id)] = survived;
    }
}
