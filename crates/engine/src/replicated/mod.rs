//! One replicated group on one replica: the sans-IO `VsrReplica` driven
//! over the storage seam. Every `Action` the replica asks for is performed
//! here, in order, against the group's journal (one record per op, op =
//! journal sequence), its superblock and its state machine; what must
//! leave the process (frames to peers, replies to clients) comes back as
//! `Effect`s for the caller (the server's replica links and sessions).
//!
//! Durability follows the replica's order exactly: a Journal action only
//! buffers, Sync makes every buffered record durable (a `replicated`
//! partition group's Sync only writes it to the page cache, which a process
//! kill keeps: its journal is never fsynced on its own; a committed op
//! becomes durable in the segments' background fsync, and the next
//! checkpoint drops its record, usually before the kernel wrote it back;
//! a power loss leaves such a group's head uncertain either way, replication
//! spec §6.3), Superblock and
//! Uncertain are atomic and durable when they return, a cut
//! (TruncateAfter) is durable when it returns, and a checkpoint or an
//! installed transfer replaces the journal prefix atomically. A storage
//! error leaves the group poisoned: the caller must stop the replica
//! (fail-stop, replication spec §6.7), never limp on.
//!
//! ```text
//! journal record payload   one entry record (consensus::wire::encode_entry),
//!                          or, for an op whose body the state machine
//!                          holds (`StateMachine::hold_body`), the record's
//!                          fixed part (body_len still the whole body's)
//!                          and the first bytes of the body it keeps
//! snapshot payload (little-endian)
//!   0  u32 entry_len, then the checkpoint op's entry record
//!      u32 clients, then per client: u128 id, u64 request, u64 op
//!      u64 state_len, then the state (below)
//! state
//!   0  u32 replies, then per client: u128 id, u64 op, u32 len, result bytes
//!      then the state machine's own snapshot bytes, to the end
//! ```

mod join;
#[cfg(test)]
pub(crate) mod net;
mod no_space;
mod seed;
mod submitter;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use bytes::Bytes;
use std::future::{Future, poll_fn};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use compio::runtime::ResumeUnwind;
use consensus::vsr::message::{Entry, Envelope, Message, ReplicaId, Request, Snapshot};
use consensus::vsr::{Action, Durable, Limits, NotAdmitted, Timing, VsrReplica};
use consensus::wire::{decode_entry, decode_entry_prefix, encode_entry, entry_record_head};
use consensus::{ClientId, Op, RequestNumber, View};
use storage::journal::Journal;
use storage::superblock::{self, Identity, Superblock};
use storage::{Storage, StorageError};

pub use no_space::{NO_SPACE_RETRY, wait_for_space};
pub use seed::seed_checkpoint;
use submitter::own_client;
pub use submitter::{Submitted, Submitter, Sync};

/// What a group's state machine is to its driver. Applying may await (the
/// server applies a metadata op on every shard before it answers); the
/// driver performs nothing else of the replica's actions meanwhile, so a
/// checkpoint that follows an apply sees its effect. The runtime is one
/// thread per shard, so the futures need not be `Send`.
#[allow(async_fn_in_trait)]
pub trait StateMachine: Sized {
    /// Applies one committed entry (deterministically: equal states and
    /// equal entries give equal states and results everywhere). A machine
    /// whose state lives outside the checkpoint (a partition's segments)
    /// must also take an entry it applied before a restart as a no-op.
    async fn apply(&mut self, entry: &Entry) -> Vec<u8>;
    /// Makes everything applied so far durable; runs before each
    /// checkpoint drops the journal below it.
    async fn persist(&mut self) -> Result<(), StorageError> {
        Ok(())
    }
    /// `persist` as work that may run beside the group, which applies
    /// later ops meanwhile (the work may make them durable too). `None`:
    /// this machine persists only in line, and its checkpoints are written
    /// in line whatever `Group::checkpoint_beside` says.
    fn persist_beside(&mut self) -> Option<Work> {
        None
    }
    /// Whether this machine keeps `entry`'s body itself: if so it stores
    /// the body now, as the op is journaled (a partition writes an
    /// append's batch to its segment), and returns how many leading bytes
    /// of the body the journal keeps; the journal record then holds only
    /// the entry's fixed part and those bytes. `None` (the default): the
    /// journal holds the whole body.
    async fn hold_body(&mut self, _entry: &Entry) -> Result<Option<usize>, StorageError> {
        Ok(None)
    }
    /// At open: a journaled entry whose record kept its whole body (the
    /// machine did not hold it), in op order, before any replay applies.
    fn journaled_whole(&mut self, _entry: &Entry) {}
    /// Makes every body held so far as durable as the journal's sync makes
    /// its records: on disk with `fsync`, else at least in the kernel.
    async fn sync_held(&mut self, _fsync: bool) -> Result<(), StorageError> {
        Ok(())
    }
    /// At open: the whole body of a journaled entry whose record kept only
    /// `entry.body` of it (`len` bytes in all), or `None` when the machine
    /// does not hold it (a crash took it before the record's sync): the
    /// journal then ends before that entry.
    async fn held_body(
        &mut self,
        _entry: &Entry,
        _len: usize,
    ) -> Result<Option<Bytes>, StorageError> {
        Ok(None)
    }
    /// The journal now ends at `after` (a view change dropped the ops
    /// above it, or, at open, nothing above it was journaled): drop what is
    /// held for later ops.
    async fn cut_held(&mut self, _after: Op) -> Result<(), StorageError> {
        Ok(())
    }
    /// A checkpoint at `op` (the latest `snapshot`, or an installed one)
    /// is durable: the journal no longer names any op at or below it.
    async fn checkpointed(&mut self, _op: Op) -> Result<(), StorageError> {
        Ok(())
    }
    /// The state as bytes (equal states give equal bytes).
    fn snapshot(&self) -> Vec<u8>;
    /// Replaces the state with the one `snapshot` wrote (a checkpoint at
    /// boot, or one a state transfer installed).
    async fn restore(&mut self, bytes: &[u8], from: Restore) -> Result<(), String>;
}

/// The journal's entries with their whole bodies: a record that kept only
/// part of its body gets the rest from the machine. The entries end before
/// the first whose body the machine does not hold or that does not match
/// its identity.
async fn held_bodies<M: StateMachine>(
    machine: &mut M,
    records: Vec<(Entry, usize)>,
) -> Result<Vec<Entry>, StorageError> {
    let mut entries = Vec::with_capacity(records.len());
    for (mut entry, len) in records {
        if entry.body.len() < len {
            let Some(body) = machine.held_body(&entry, len).await? else {
                break;
            };
            entry.body = body;
            if entry.body.len() != len || !entry.is_sound() {
                break;
            }
        } else {
            machine.journaled_whole(&entry);
        }
        entries.push(entry);
    }
    Ok(entries)
}

/// Storage work that runs beside a group's driver.
pub type Work = Pin<Box<dyn Future<Output = Result<(), StorageError>>>>;

/// A checkpoint being written beside the group: the snapshot the replica
/// asked for (state filled in), the work that makes it durable, and what
/// that work came to once it did.
struct Beside {
    snapshot: Snapshot,
    started: Instant,
    work: Work,
    written: Option<Result<(), StorageError>>,
}

/// Where a checkpoint being restored comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restore {
    /// This replica's own, at boot: state kept outside the checkpoint
    /// (segments, offset files) may be ahead of it, and the journal
    /// replays what lies above.
    Boot,
    /// A peer's, installed by a state transfer: this replica's state is
    /// behind it.
    Transfer,
}

/// What the caller must do on the group's behalf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    Send(Envelope),
    /// Answer `client`: its request committed at `op` with `result`.
    Reply {
        client: ClientId,
        request: RequestNumber,
        op: Op,
        result: Vec<u8>,
    },
}

/// What a replica's log says of one of its own requests after a view
/// change (`Group::own_fate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Above the commit point: it will be answered as it applies.
    Pending,
    /// Provably never committed: a replay may run it again.
    Dropped,
    /// Committed, but a state transfer skipped it here: its result is not
    /// known on this replica.
    Skipped,
    /// This replica cannot tell (not normal in a later view yet, an entry
    /// missing, or skipped by a state transfer).
    Unknown,
}

/// How a group is placed and timed.
#[derive(Debug, Clone, Copy)]
pub struct Placement {
    pub identity: Identity,
    pub replicas: u8,
    /// The view the group started in (0 for metadata; a partition
    /// incarnation's `created_view`).
    pub created_view: View,
    pub timing: Timing,
    pub limits: Limits,
    /// The journal is fsynced where the replica asks for durability; a
    /// group that is `replicated` only writes it to the kernel (it
    /// survives a process kill, replication spec §4.3).
    pub fsync: bool,
}

/// Why a group could not open or go on.
#[derive(Debug, thiserror::Error)]
pub enum GroupError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error("{what} in {dir} is unreadable: {reason}")]
    Format {
        what: &'static str,
        dir: PathBuf,
        reason: String,
    },
    /// The created-view floor (replication spec §5.6): a group's durable
    /// log view can never lie below the view its creation committed in.
    #[error(
        "{what} in {dir} has log view {log_view}, which falls below committed creation view \
         {created_view}: it certifies history this replica may not hold; the group is not \
         served and its files are kept"
    )]
    BelowCreatedView {
        what: &'static str,
        dir: PathBuf,
        log_view: u32,
        created_view: u32,
    },
}

pub struct Group<S: Storage, M: StateMachine> {
    replica: VsrReplica,
    journal: Journal<S>,
    storage: S,
    dir: PathBuf,
    identity: Identity,
    /// What the superblock durably says (`None`: never written).
    persisted: Option<Superblock>,
    machine: M,
    /// Whether a Sync fsyncs the journal (`persisted`, metadata) or only
    /// writes it to the page cache (`replicated`, module documentation).
    fsync: bool,
    /// Where frames go the moment the replica asks (so a prepare leaves
    /// before the primary's own journal write); `None`: returned as
    /// `Effect::Send` with the rest.
    outbox: Option<Box<dyn FnMut(Envelope)>>,
    /// Each client's latest result (kept by checkpoints).
    replies: BTreeMap<ClientId, (Op, Vec<u8>)>,
    /// This boot's own client (`Submitter`): its ops are answered on
    /// whichever replica applies them, primary or not, so a submission a
    /// primary prepared before it left its view learns its result when the
    /// next view commits it (replication spec §7.2).
    own: ClientId,
    /// Checkpoints are written beside the group (`checkpoint_beside`).
    beside: bool,
    /// The checkpoint being written beside the group, if one is.
    running: Option<Beside>,
}

impl<S: Storage, M: StateMachine> Group<S, M> {
    /// Opens the group in `dir` (creating it if needed) and boots its
    /// replica with this boot's `nonce` (non-zero, fresh per boot);
    /// `machine` is the state before any op, restored from the checkpoint
    /// if there is one.
    pub async fn open(
        storage: S,
        dir: &Path,
        placement: Placement,
        nonce: u64,
        machine: M,
    ) -> Result<Self, GroupError> {
        Self::open_or_create(storage, dir, placement, nonce, machine, false).await
    }

    /// Opens a partition incarnation's group as its create op commits
    /// (replication spec §2): a replica with no trace of it starts normal
    /// in `placement.created_view` with an empty log, so the view's
    /// primary serves at once; one that holds anything of it boots as
    /// `open` does.
    pub async fn create(
        storage: S,
        dir: &Path,
        placement: Placement,
        nonce: u64,
        machine: M,
    ) -> Result<Self, GroupError> {
        Self::open_or_create(storage, dir, placement, nonce, machine, true).await
    }

    async fn open_or_create(
        storage: S,
        dir: &Path,
        placement: Placement,
        nonce: u64,
        mut machine: M,
        create: bool,
    ) -> Result<Self, GroupError> {
        let persisted = superblock::load(&storage, dir, placement.identity).await?;
        let floor = placement.created_view.0;
        let below = |what: &'static str, log_view: u32| GroupError::BelowCreatedView {
            what,
            dir: dir.to_path_buf(),
            log_view,
            created_view: floor,
        };
        // Checked before the journal is opened (which may cut a torn tail):
        // a refused group's files stay as they are.
        if let Some(s) = persisted
            && s.log_view != 0
            && s.log_view < floor
        {
            return Err(below("the superblock", s.log_view));
        }
        // A journal never fsynced may be torn anywhere after a power loss
        // (the group's head is uncertain then): its records end at the
        // first entry that does not continue them.
        let (journal, recovery) = if placement.fsync {
            Journal::open(storage.clone(), dir).await?
        } else {
            Journal::open_unsynced(storage.clone(), dir).await?
        };
        let format = |what: &'static str| {
            let dir = dir.to_path_buf();
            move |reason: String| GroupError::Format { what, dir, reason }
        };
        let snapshot = match &recovery.snapshot {
            Some(s) => Some(decode_snapshot(&s.payload).map_err(format("the checkpoint"))?),
            None => None,
        };
        let records = recovery
            .records
            .iter()
            .map(|r| decode_entry_prefix(&r.payload).map_err(|e| e.to_string()))
            .collect::<Result<Vec<(Entry, usize)>, String>>()
            .map_err(format("a journal record"))?;
        if let Some((entry, _)) = records
            .iter()
            .find(|(e, _)| e.view.0 != 0 && e.view.0 < floor)
        {
            return Err(below("a journal entry", entry.view.0));
        }
        let replies = match &snapshot {
            Some(s) => decode_state(&mut machine, &s.state, Restore::Boot)
                .await
                .map_err(format("the checkpoint's state"))?,
            None => BTreeMap::new(),
        };
        let entries = held_bodies(&mut machine, records).await?;
        let head = entries
            .last()
            .map(|e| e.op)
            .or(snapshot.as_ref().map(Snapshot::op))
            .unwrap_or(Op::ZERO);
        if recovery
            .records
            .last()
            .is_some_and(|last| last.sequence > head.0)
        {
            // A body the machine should hold is missing or does not match
            // its entry: the journal ends before it, as at a torn record.
            tracing::warn!(dir = %dir.display(), head = head.0, "the journal ends at a body its state machine does not hold");
            journal.truncate_after(head.0).await?;
        }
        // Whatever the machine holds above the journal's head goes (written
        // before a crash took the op's record).
        machine.cut_held(head).await?;
        let blank = persisted.is_none() && snapshot.is_none() && entries.is_empty();
        let durable = Durable {
            view: View(persisted.map_or(0, |s| s.view)),
            log_view: View(persisted.map_or(0, |s| s.log_view)),
            snapshot,
            entries,
            uncertain: persisted.is_some_and(|s| s.uncertain),
            blank,
        };
        let replica = if create && blank {
            VsrReplica::create_group(
                placement.identity.replica,
                placement.replicas,
                placement.timing,
                placement.created_view,
                nonce,
            )
        } else {
            VsrReplica::boot_group(
                placement.identity.replica,
                placement.replicas,
                placement.timing,
                durable,
                nonce,
                placement.created_view,
            )
        }
        .with_limits(placement.limits);
        if !placement.fsync {
            // Rotations write over covered files: cheaper page-cache pages.
            journal.use_recycled_files();
        }
        // A group checkpoints often (partition groups every 16 MiB).
        journal.use_snapshot_slots();
        if placement.fsync {
            // Every record is synced before its PrepareOk: write it
            // straight to the device (falls back to buffered writes where
            // the filesystem has no direct I/O).
            journal.use_direct_io().await?;
        }
        Ok(Group {
            replica,
            journal,
            storage,
            dir: dir.to_path_buf(),
            identity: placement.identity,
            persisted,
            machine,
            fsync: placement.fsync,
            outbox: None,
            replies,
            own: own_client(nonce, placement.identity.replica),
            beside: false,
            running: None,
        })
    }

    pub fn replica(&self) -> &VsrReplica {
        &self.replica
    }

    /// The fate of this boot's own request `request`, prepared by this
    /// replica as the primary of `prepared_in`, a view it has left. Only a
    /// normal replica in a later view can tell: its log then holds every
    /// op above its commit point, so a request missing from there and not
    /// committed was dropped by the view change. One that is there is
    /// answered as it applies (`Effect::Reply`).
    pub fn own_fate(&self, request: RequestNumber, prepared_in: View) -> Fate {
        let replica = &self.replica;
        if replica.status() != consensus::vsr::Status::Normal || prepared_in >= replica.view() {
            return Fate::Unknown;
        }
        let mut op = replica.commit_min().next();
        while op <= replica.head() {
            match replica.entry(op) {
                Some(entry) if entry.client == self.own && entry.request == request => {
                    return Fate::Pending;
                }
                Some(_) => {}
                None => return Fate::Unknown,
            }
            op = op.next();
        }
        // Applied ops were answered; one a state transfer skipped shows
        // in the client table as committed at or past this request.
        match replica.committed_request(self.own) {
            Some((committed, _)) if committed >= request => Fate::Skipped,
            _ => Fate::Dropped,
        }
    }

    /// Sends every frame through `outbox` as soon as the replica asks for
    /// it, instead of returning it among the effects.
    pub fn set_outbox(&mut self, outbox: Box<dyn FnMut(Envelope)>) {
        self.outbox = Some(outbox);
    }

    /// Writes checkpoints beside the group from now on: the segments'
    /// persist and the snapshot's write run as work the caller polls
    /// (`poll_checkpoint`) while the group goes on preparing, committing
    /// and applying; only the journal's rotation (when the checkpoint is
    /// asked) and the bookkeeping of its compaction (`finish_checkpoint`)
    /// run in line. For a machine without `persist_beside` it changes
    /// nothing.
    pub fn checkpoint_beside(&mut self) {
        self.beside = true;
    }

    /// Polls the checkpoint written beside the group: `Ready` once its work
    /// is done (then call `finish_checkpoint`); `Pending` while it runs or
    /// when none does.
    pub fn poll_checkpoint(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let Some(running) = &mut self.running else {
            return Poll::Pending;
        };
        if running.written.is_none() {
            match running.work.as_mut().poll(cx) {
                Poll::Ready(written) => running.written = Some(written),
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(())
    }

    /// Completes the checkpoint whose work `poll_checkpoint` saw done: the
    /// journal files below it go and the replica drops its log there.
    pub async fn finish_checkpoint(&mut self) -> Result<(), GroupError> {
        let running = self.running.take().expect("a checkpoint runs beside");
        let written = running.written.expect("its work is done");
        written?;
        let op = running.snapshot.op();
        let written_us = running.started.elapsed().as_micros() as u64;
        let compacting = Instant::now();
        let kept_ops = self.journal.last_sequence() - op.0;
        // A state transfer may have installed a newer one meanwhile (it
        // waits for this one first, see `perform`).
        let newest = op > self.replica.checkpoint_op();
        if newest {
            self.journal.compact(op.0).await?;
        }
        self.replica.checkpointed(running.snapshot);
        if newest {
            self.machine.checkpointed(op).await?;
        }
        tracing::debug!(
            dir = %self.dir.display(),
            op = op.0,
            written_us,
            kept_ops,
            compact_us = compacting.elapsed().as_micros() as u64,
            "checkpoint written beside"
        );
        Ok(())
    }

    /// Waits for the checkpoint running beside the group, if any, and
    /// completes it.
    pub async fn complete_checkpoint(&mut self) -> Result<(), GroupError> {
        if self.running.is_none() {
            return Ok(());
        }
        poll_fn(|cx| self.poll_checkpoint(cx)).await;
        self.finish_checkpoint().await
    }

    pub fn machine_mut(&mut self) -> &mut M {
        &mut self.machine
    }

    pub fn machine(&self) -> &M {
        &self.machine
    }

    /// A client request (the primary prepares it and syncs its journal;
    /// see `VsrReplica::on_request`).
    pub async fn on_request(
        &mut self,
        request: Request,
        now_us: u64,
    ) -> Result<Result<Vec<Effect>, NotAdmitted>, GroupError> {
        let mut effects = match self.prepare_request(request, now_us).await? {
            Ok(effects) => effects,
            Err(refusal) => return Ok(Err(refusal)),
        };
        effects.extend(self.sync_prepared().await?);
        Ok(Ok(effects))
    }

    /// A client request prepared without its journal sync
    /// (`VsrReplica::prepare_request`): the group commits several at once.
    /// `sync_prepared` must follow before any other input.
    pub async fn prepare_request(
        &mut self,
        request: Request,
        now_us: u64,
    ) -> Result<Result<Vec<Effect>, NotAdmitted>, GroupError> {
        match self.replica.prepare_request(request, now_us) {
            Ok(actions) => Ok(Ok(self.perform(actions).await?)),
            Err(refusal) => Ok(Err(refusal)),
        }
    }

    /// Syncs the journal under the requests prepared since the last sync
    /// and commits what that allows (nothing when none waits).
    pub async fn sync_prepared(&mut self) -> Result<Vec<Effect>, GroupError> {
        let actions = self.replica.sync_prepared();
        self.perform(actions).await
    }

    /// A frame from a peer of this group.
    pub async fn on_message(
        &mut self,
        from: ReplicaId,
        message: Message,
    ) -> Result<Vec<Effect>, GroupError> {
        let actions = self.replica.on_message(from, message);
        self.perform(actions).await
    }

    /// Checkpoints at the applied op now, ahead of the limits (nothing
    /// while a checkpoint runs or when the applied op is checkpointed).
    pub async fn checkpoint_now(&mut self) -> Result<Vec<Effect>, GroupError> {
        if self.running.is_some() {
            return Ok(Vec::new());
        }
        let actions = self.replica.checkpoint_now();
        self.perform(actions).await
    }

    /// One tick of the group's timers.
    pub async fn on_tick(&mut self) -> Result<Vec<Effect>, GroupError> {
        let actions = self.replica.on_tick();
        self.perform(actions).await
    }

    /// Performs the replica's actions in order.
    async fn perform(&mut self, actions: Vec<Action>) -> Result<Vec<Effect>, GroupError> {
        let mut effects = Vec::new();
        for action in actions {
            match action {
                Action::Send(envelope) => match &mut self.outbox {
                    Some(outbox) => outbox(envelope),
                    None => effects.push(Effect::Send(envelope)),
                },
                Action::Journal(entry) => {
                    // The record is `encode_entry`'s, written without
                    // joining its head and shared body first; a body the
                    // machine holds itself leaves only its first bytes.
                    let head = entry_record_head(&entry);
                    let kept = match self.machine.hold_body(&entry).await? {
                        Some(kept) => {
                            assert!(kept < entry.body.len(), "a held body keeps its tail out");
                            &entry.body[..kept]
                        }
                        None => &entry.body[..],
                    };
                    let sequence = self.journal.append_parts(&[&head, kept])?;
                    assert_eq!(sequence, entry.op.0, "journal sequence = op");
                }
                Action::TruncateAfter(op) => {
                    self.journal.truncate_after(op.0).await?;
                    self.machine.cut_held(op).await?;
                }
                Action::Sync => {
                    // The journal's records and the machine's held bodies
                    // are made durable together: an op is acknowledged
                    // only once both are, and a boot cuts a record whose
                    // body is missing (and a body no record names).
                    let (dir, journal, fsync) = (&self.dir, &self.journal, self.fsync);
                    let machine = &mut self.machine;
                    let (journaled, held) = join::join2(
                        wait_for_space(dir, async || match fsync {
                            true => journal.sync().await,
                            false => journal.write_out().await,
                        }),
                        wait_for_space(dir, async || machine.sync_held(fsync).await),
                    )
                    .await;
                    journaled?;
                    held?;
                }
                Action::Superblock { view, log_view } => {
                    let uncertain = self.persisted.is_some_and(|s| s.uncertain);
                    self.store_superblock(view, log_view, uncertain).await?;
                }
                Action::Uncertain(uncertain) => {
                    let (view, log_view) = self.persisted.map_or((0, 0), |s| (s.view, s.log_view));
                    self.store_superblock(View(view), View(log_view), uncertain)
                        .await?;
                }
                Action::Apply(entry) => {
                    let result = self.machine.apply(&entry).await;
                    if entry.client == self.own {
                        effects.push(Effect::Reply {
                            client: entry.client,
                            request: entry.request,
                            op: entry.op,
                            result: result.clone(),
                        });
                    }
                    if entry.client.0 != 0 {
                        self.replies.insert(entry.client, (entry.op, result));
                    }
                }
                // This replica's own ops were answered as they applied.
                Action::Reply { client, .. } if client == self.own => {}
                Action::Reply {
                    client,
                    request,
                    op,
                } => {
                    let result = match self.replies.get(&client) {
                        Some((at, result)) if *at == op => result.clone(),
                        _ => Vec::new(),
                    };
                    effects.push(Effect::Reply {
                        client,
                        request,
                        op,
                        result,
                    });
                }
                Action::Checkpoint(mut snapshot) => {
                    assert!(self.running.is_none(), "one checkpoint at a time");
                    if self.beside
                        && let Some(persist) = self.machine.persist_beside()
                    {
                        // The state as of the checkpoint's op is taken now;
                        // the segments' persist and the snapshot's write
                        // run beside the later ops, which go to a new
                        // journal file: the finished checkpoint drops the
                        // older one whole.
                        let (dir, journal) = (&self.dir, &self.journal);
                        wait_for_space(dir, async || journal.rotate().await).await?;
                        snapshot.state = encode_state(&self.machine, &self.replies);
                        let payload = encode_snapshot(&snapshot);
                        let journal = self.journal.clone();
                        let op = snapshot.op().0;
                        // Its own task, so that it runs whatever the
                        // group's driver awaits meanwhile: the group's
                        // next ops may wait for the very locks (a
                        // segment's I/O) this work holds, and a future
                        // polled only by that driver would never release
                        // them.
                        let snapshot_dir = self.dir.clone();
                        let task = compio::runtime::spawn(async move {
                            persist.await?;
                            wait_for_space(&snapshot_dir, async || {
                                journal.store_snapshot(op, &payload).await
                            })
                            .await
                        });
                        let dir = self.dir.clone();
                        let work: Work = Box::pin(async move {
                            task.await.resume_unwind().unwrap_or(Err(
                                // Only the runtime's shutdown cancels it.
                                StorageError::Closed { dir },
                            ))
                        });
                        self.running = Some(Beside {
                            snapshot,
                            started: Instant::now(),
                            work,
                            written: None,
                        });
                        continue;
                    }
                    let started = Instant::now();
                    self.machine.persist().await?;
                    let persisted = started.elapsed();
                    snapshot.state = encode_state(&self.machine, &self.replies);
                    let payload = encode_snapshot(&snapshot);
                    let op = snapshot.op().0;
                    let (dir, journal) = (&self.dir, &self.journal);
                    wait_for_space(dir, async || journal.write_snapshot(op, &payload).await)
                        .await?;
                    self.replica.checkpointed(snapshot);
                    self.machine.checkpointed(Op(op)).await?;
                    // The group waits for its checkpoint: a latency source.
                    tracing::debug!(
                        dir = %self.dir.display(),
                        op,
                        elapsed_us = started.elapsed().as_micros() as u64,
                        persist_us = persisted.as_micros() as u64,
                        "checkpoint"
                    );
                }
                Action::InstallSnapshot(snapshot) => {
                    // A checkpoint written beside the group finishes first:
                    // its snapshot is older and must not land after this one.
                    self.complete_checkpoint().await?;
                    // Verified against its checksum by the replica; a state
                    // this build cannot read is fatal before anything is
                    // written.
                    let replies =
                        decode_state(&mut self.machine, &snapshot.state, Restore::Transfer)
                            .await
                            .map_err(|reason| GroupError::Format {
                                what: "a transferred checkpoint's state",
                                dir: self.dir.clone(),
                                reason,
                            })?;
                    let payload = encode_snapshot(&snapshot);
                    self.journal
                        .install_snapshot(snapshot.op().0, payload)
                        .await?;
                    self.replies = replies;
                    self.machine.checkpointed(snapshot.op()).await?;
                }
            }
        }
        Ok(effects)
    }

    async fn store_superblock(
        &mut self,
        view: View,
        log_view: View,
        uncertain: bool,
    ) -> Result<(), GroupError> {
        let next = Superblock {
            identity: self.identity,
            view: view.0,
            log_view: log_view.0,
            uncertain,
        };
        superblock::store(&self.storage, &self.dir, self.persisted.as_ref(), &next).await?;
        self.persisted = Some(next);
        Ok(())
    }
}

fn put_u32(out: &mut Vec<u8>, value: usize) {
    out.extend_from_slice(&u32::try_from(value).expect("fits u32").to_le_bytes());
}

/// The snapshot payload (layout in the module documentation).
pub fn encode_snapshot(snapshot: &Snapshot) -> Vec<u8> {
    let mut entry = Vec::new();
    encode_entry(&snapshot.entry, &mut entry);
    let mut out = Vec::with_capacity(entry.len() + snapshot.state.len() + 64);
    put_u32(&mut out, entry.len());
    out.extend_from_slice(&entry);
    put_u32(&mut out, snapshot.clients.len());
    for (client, request, op) in &snapshot.clients {
        out.extend_from_slice(&client.0.to_le_bytes());
        out.extend_from_slice(&request.0.to_le_bytes());
        out.extend_from_slice(&op.0.to_le_bytes());
    }
    out.extend_from_slice(&(snapshot.state.len() as u64).to_le_bytes());
    out.extend_from_slice(&snapshot.state);
    out
}

/// Reads a little-endian byte string front to back.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let (head, rest) = self
            .0
            .split_at_checked(n)
            .ok_or_else(|| format!("cut short ({n} bytes wanted, {} left)", self.0.len()))?;
        self.0 = rest;
        Ok(head)
    }
    fn u32(&mut self) -> Result<usize, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4")) as usize)
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8")))
    }
    fn u128(&mut self) -> Result<u128, String> {
        Ok(u128::from_le_bytes(self.take(16)?.try_into().expect("16")))
    }
}

pub fn decode_snapshot(bytes: &[u8]) -> Result<Snapshot, String> {
    let mut reader = Reader(bytes);
    let entry_len = reader.u32()?;
    let entry = decode_entry(reader.take(entry_len)?).map_err(|e| e.to_string())?;
    if !entry.is_sound() {
        return Err(format!("the checkpoint's entry at {} is damaged", entry.op));
    }
    let count = reader.u32()?;
    let mut clients = Vec::with_capacity(count.min(bytes.len() / 32));
    for _ in 0..count {
        let client = ClientId(reader.u128()?);
        let request = RequestNumber(reader.u64()?);
        let op = Op(reader.u64()?);
        clients.push((client, request, op));
    }
    let state_len = usize::try_from(reader.u64()?).map_err(|e| e.to_string())?;
    let state = reader.take(state_len)?.to_vec();
    if !reader.0.is_empty() {
        return Err("bytes after the state".to_owned());
    }
    Ok(Snapshot {
        entry,
        clients,
        state,
    })
}

fn encode_state<M: StateMachine>(
    machine: &M,
    replies: &BTreeMap<ClientId, (Op, Vec<u8>)>,
) -> Vec<u8> {
    let mut out = Vec::new();
    put_u32(&mut out, replies.len());
    for (client, (op, result)) in replies {
        out.extend_from_slice(&client.0.to_le_bytes());
        out.extend_from_slice(&op.0.to_le_bytes());
        put_u32(&mut out, result.len());
        out.extend_from_slice(result);
    }
    out.extend_from_slice(&machine.snapshot());
    out
}

type Replies = BTreeMap<ClientId, (Op, Vec<u8>)>;

/// Restores `machine` from a checkpoint's state and returns its replies.
async fn decode_state<M: StateMachine>(
    machine: &mut M,
    bytes: &[u8],
    from: Restore,
) -> Result<Replies, String> {
    let mut reader = Reader(bytes);
    let mut replies = BTreeMap::new();
    for _ in 0..reader.u32()? {
        let client = ClientId(reader.u128()?);
        let op = Op(reader.u64()?);
        let len = reader.u32()?;
        let result = reader.take(len)?.to_vec();
        replies.insert(client, (op, result));
    }
    machine.restore(reader.0, from).await?;
    Ok(replies)
}
