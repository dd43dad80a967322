//! A partition's consensus group on this node (replication spec §2: one
//! group per partition): every change of the partition (an append, a
//! consumer-offset store or delete, an auto-commit) is an op of it,
//! numbered per partition by the consensus core (`consensus::Replica`),
//! and a client is answered only once its op committed.
//!
//! Order of events for one op: `admit` waits for room in the pipeline and
//! for a durable op-number reservation and returns a `Permit`;
//! `Permit::prepare` numbers and stamps the op at the moment its effect is
//! made (so ops follow offsets); once the effect is durable as the
//! partition's policy requires, `ack` counts this node's acknowledgement,
//! and the commit advances over the run of acknowledged ops; `committed`
//! waits for an op's commit. An op whose effect failed is acknowledged all
//! the same (a committed no-op): its caller was told it failed.
//!
//! Op numbers are reserved ahead in `op.frontier` (a counter file), so
//! they never repeat across restarts: a restart continues above the
//! reservation. Invariants: admitted ops never exceed the pipeline depth;
//! every admitted op's number is reserved durably; the commit point never
//! passes an op that was not acknowledged.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::path::{Path, PathBuf};
use std::task::{Poll, Waker};

use consensus::replica::PIPELINE_DEPTH_MAX;
use consensus::{Durability, GroupConfig, Op, Recovered, Replica, View};
use storage::lock::AsyncLock;
use storage::{Storage, StorageError, counter_file};

pub const OP_FRONTIER_FILE: &str = "op.frontier";
/// Op numbers reserved per renewal of `op.frontier`.
pub const OP_RESERVATION: u64 = 1 << 16;

pub struct PartitionGroup<S: Storage> {
    storage: S,
    frontier_path: PathBuf,
    replica: RefCell<Replica>,
    /// Ops numbered at or below it are durably reserved.
    reserved: Cell<u64>,
    /// Admitted ops not yet committed.
    admitted: Cell<usize>,
    reserving: AsyncLock,
    /// Tasks waiting for room or for a commit; woken on every commit.
    waiters: RefCell<Vec<Waker>>,
}

/// Room in the pipeline for one op, with its number reserved. Dropped
/// unused, it gives the room back.
pub struct Permit<'a, S: Storage> {
    group: &'a PartitionGroup<S>,
    used: bool,
}

impl<S: Storage> PartitionGroup<S> {
    /// Resumes the group of the partition in `dir` above its op
    /// reservation.
    pub async fn open(
        storage: S,
        dir: &Path,
        durability: Durability,
    ) -> Result<Self, StorageError> {
        let frontier_path = dir.join(OP_FRONTIER_FILE);
        let reserved = counter_file::load(&storage, &frontier_path)
            .await?
            .unwrap_or(0);
        let config = GroupConfig {
            pipeline_depth: PIPELINE_DEPTH_MAX,
            ..GroupConfig::single(durability)
        };
        // Every op up to the reservation may have been used before a
        // crash: numbering continues above it.
        let recovered = Recovered {
            view: View(0),
            head: Op(reserved),
            last_timestamp_us: 0,
        };
        Ok(PartitionGroup {
            storage,
            frontier_path,
            replica: RefCell::new(Replica::open(config, recovered)),
            reserved: Cell::new(reserved),
            admitted: Cell::new(0),
            reserving: AsyncLock::default(),
            waiters: RefCell::new(Vec::new()),
        })
    }

    /// The highest committed op.
    pub fn commit(&self) -> Op {
        self.replica.borrow().commit_max()
    }

    /// Waits for room in the pipeline and a reserved op number.
    pub async fn admit(&self) -> Result<Permit<'_, S>, StorageError> {
        poll_fn(|cx| {
            if self.admitted.get() < PIPELINE_DEPTH_MAX {
                self.admitted.set(self.admitted.get() + 1);
                Poll::Ready(())
            } else {
                self.waiters.borrow_mut().push(cx.waker().clone());
                Poll::Pending
            }
        })
        .await;
        let permit = Permit {
            group: self,
            used: false,
        };
        self.reserve().await?;
        Ok(permit)
    }

    /// Makes sure every admitted op (and a pipeline more) has a durably
    /// reserved number; one renewal at a time.
    async fn reserve(&self) -> Result<(), StorageError> {
        let wanted = || self.replica.borrow().head().0 + PIPELINE_DEPTH_MAX as u64 * 2;
        if wanted() <= self.reserved.get() {
            return Ok(());
        }
        let _renewal = self.reserving.lock().await;
        if wanted() <= self.reserved.get() {
            return Ok(());
        }
        let renewed = wanted() + OP_RESERVATION;
        counter_file::store(&self.storage, &self.frontier_path, renewed).await?;
        self.reserved.set(renewed);
        Ok(())
    }

    /// This node's copy of `op`'s effect is durable (or the effect failed
    /// and the op commits as a no-op).
    pub fn ack(&self, op: Op) {
        let committed = self.replica.borrow_mut().on_local_ack(op);
        let Some(ops) = committed else { return };
        let (first, last) = (ops.start().0, ops.end().0);
        // A partition's ops take effect as they are made (the log caches
        // an append at once); committing is what lets them be answered.
        for number in first..=last {
            self.replica.borrow_mut().on_applied(Op(number));
        }
        let count = usize::try_from(last - first + 1).expect("a pipeline's worth");
        assert!(count <= self.admitted.get(), "only admitted ops commit");
        self.admitted.set(self.admitted.get() - count);
        for waker in self.waiters.borrow_mut().drain(..) {
            waker.wake();
        }
    }

    /// Resolves once `op` committed.
    pub async fn committed(&self, op: Op) {
        poll_fn(|cx| {
            if self.commit() >= op {
                Poll::Ready(())
            } else {
                self.waiters.borrow_mut().push(cx.waker().clone());
                Poll::Pending
            }
        })
        .await;
    }
}

impl<'a, S: Storage> Permit<'a, S> {
    /// Numbers and stamps the op now: call it at the moment its effect is
    /// made, with nothing awaited in between.
    pub fn prepare(mut self, now_us: u64) -> PendingOp<'a, S> {
        self.used = true;
        let group = self.group;
        let prepared = group
            .replica
            .borrow_mut()
            .prepare(now_us)
            .expect("admission keeps the pipeline below its depth");
        assert!(
            prepared.op.0 <= group.reserved.get(),
            "every prepared op number is durably reserved"
        );
        PendingOp {
            group,
            op: prepared.op,
            timestamp_us: prepared.timestamp_us,
            acked: false,
        }
    }
}

impl<S: Storage> Drop for Permit<'_, S> {
    fn drop(&mut self) {
        if !self.used {
            let group = self.group;
            group.admitted.set(group.admitted.get() - 1);
            for waker in group.waiters.borrow_mut().drain(..) {
                waker.wake();
            }
        }
    }
}

/// A prepared op awaiting this node's acknowledgement. Dropped without
/// one (its task was cancelled), it is acknowledged as a no-op, so the
/// group never waits for it forever.
pub struct PendingOp<'a, S: Storage> {
    group: &'a PartitionGroup<S>,
    pub op: Op,
    pub timestamp_us: u64,
    acked: bool,
}

impl<S: Storage> PendingOp<'_, S> {
    /// Acknowledges the op and waits for its commit (every op before it
    /// committed too). Returns the op and the commit point.
    pub async fn commit(mut self) -> (Op, Op) {
        self.acked = true;
        self.group.ack(self.op);
        self.group.committed(self.op).await;
        (self.op, self.group.commit())
    }
}

impl<S: Storage> PendingOp<'_, S> {
    /// Acknowledges the op without waiting for its commit.
    pub fn ack(mut self) {
        self.acked = true;
        self.group.ack(self.op);
    }
}

impl<S: Storage> Drop for PendingOp<'_, S> {
    fn drop(&mut self) {
        if !self.acked {
            self.group.ack(self.op);
        }
    }
}
