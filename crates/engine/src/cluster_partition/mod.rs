//! A partition group of a cluster (replication spec §2, §4): appends and
//! consumer-offset changes of one partition incarnation committed through
//! Viewstamped Replication (`crate::replicated`) and applied on every
//! replica to its own copy of the partition (segments and offset files).
//!
//! The primary fixes what must be equal everywhere before it prepares: the
//! batch's base offset (the end of its log plus the appends in its
//! pipeline) and the timestamp (the entry's), and it checks the batch's
//! layout, so an append that is prepared always applies. Applying is
//! idempotent for appends: the segments outlive the group's checkpoint,
//! so after a restart the journal replays ops the log already holds, and
//! an append whose base offset is below the log's end is taken as done.
//!
//! ```text
//! op body (little-endian)
//!   0 u8 kind   1 append | 2 store offset | 3 delete offset
//!   append        1 u64 base offset   9.. the batch record (header, messages)
//!   store offset  1 u8 consumer kind (1 consumer, 2 group)  2 u32 id  6 u64 offset
//!   delete offset 1 u8 consumer kind  2 u32 id
//! result
//!   0 u32 code (0 = done, else the wire error code)
//!   done: append 4 u64 base offset | store offset 4 u8 caught up | delete: nothing
//! checkpoint state
//!   0 u64 the log's next offset (the segments must hold everything below)
//! ```
//!
//! Not built: partition state transfer. A replica whose log ends below a
//! checkpoint it is given (a wiped node, or one that fell behind every
//! peer's journal) refuses it with an error that says so.

#[cfg(test)]
mod tests;

use std::ops::Range;
use std::path::Path;
use std::rc::Rc;

use consensus::vsr::message::{Entry, Message, ReplicaId};
use consensus::{ClientId, Op, RequestNumber, View};
use protocol::ErrorCode;
use protocol::batch::{BatchHeader, Verify, validate_record};
use storage::offsets::ConsumerKind;
use storage::{Offset, Storage, StorageError};

use crate::partition::{ConsumerKey, Partition, PartitionError};
use crate::replicated::{Effect, Group, GroupError, Placement, StateMachine, Submitted, Submitter};

const APPEND: u8 = 1;
const STORE_OFFSET: u8 = 2;
const DELETE_OFFSET: u8 = 3;
/// Bytes before the batch record in an append's body.
pub const APPEND_PREFIX: usize = 9;

/// A change of the partition, as a client asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Appends the batch record `buffer[range]`.
    Append {
        buffer: Vec<u8>,
        range: Range<usize>,
    },
    StoreOffset {
        consumer: ConsumerKey,
        offset: Offset,
    },
    DeleteOffset {
        consumer: ConsumerKey,
    },
}

/// What a committed op did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    Appended { base_offset: Offset },
    Stored { caught_up: bool },
    Deleted,
    Failed(ErrorCode),
}

impl Applied {
    pub fn encode(self) -> Vec<u8> {
        let mut out = Vec::with_capacity(12);
        match self {
            Applied::Failed(code) => out.extend_from_slice(&(code as u32).to_le_bytes()),
            Applied::Appended { base_offset } => {
                out.extend_from_slice(&0u32.to_le_bytes());
                out.extend_from_slice(&base_offset.0.to_le_bytes());
            }
            Applied::Stored { caught_up } => {
                out.extend_from_slice(&0u32.to_le_bytes());
                out.push(u8::from(caught_up));
            }
            Applied::Deleted => out.extend_from_slice(&0u32.to_le_bytes()),
        }
        out
    }

    /// Reads a result back, knowing what was asked.
    pub fn decode(kind: &Command, bytes: &[u8]) -> Option<Applied> {
        let (code, rest) = bytes.split_first_chunk::<4>()?;
        let code = u32::from_le_bytes(*code);
        if code != 0 {
            return Some(Applied::Failed(
                ErrorCode::from_u32(code).unwrap_or(ErrorCode::Error),
            ));
        }
        match kind {
            Command::Append { .. } => Some(Applied::Appended {
                base_offset: Offset(u64::from_le_bytes(*rest.first_chunk::<8>()?)),
            }),
            Command::StoreOffset { .. } => Some(Applied::Stored {
                caught_up: *rest.first()? != 0,
            }),
            Command::DeleteOffset { .. } => Some(Applied::Deleted),
        }
    }
}

fn consumer_code(kind: ConsumerKind) -> u8 {
    match kind {
        ConsumerKind::Consumer => 1,
        ConsumerKind::ConsumerGroup => 2,
    }
}

fn put_consumer(out: &mut Vec<u8>, consumer: ConsumerKey) {
    out.push(consumer_code(consumer.0));
    out.extend_from_slice(&consumer.1.to_le_bytes());
}

/// The body of an append at `base_offset`.
pub fn encode_append(base_offset: Offset, record: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(APPEND_PREFIX + record.len());
    out.push(APPEND);
    out.extend_from_slice(&base_offset.0.to_le_bytes());
    out.extend_from_slice(record);
    out
}

pub fn encode_store(consumer: ConsumerKey, offset: Offset) -> Vec<u8> {
    let mut out = vec![STORE_OFFSET];
    put_consumer(&mut out, consumer);
    out.extend_from_slice(&offset.0.to_le_bytes());
    out
}

pub fn encode_delete(consumer: ConsumerKey) -> Vec<u8> {
    let mut out = vec![DELETE_OFFSET];
    put_consumer(&mut out, consumer);
    out
}

/// A decoded op body; an append's record is `body[APPEND_PREFIX..]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded {
    Append {
        base_offset: Offset,
        messages: u32,
    },
    StoreOffset {
        consumer: ConsumerKey,
        offset: Offset,
    },
    DeleteOffset {
        consumer: ConsumerKey,
    },
}

pub fn decode(body: &[u8]) -> Result<Decoded, String> {
    let fixed = |at: usize, len: usize| {
        body.get(at..at + len)
            .ok_or_else(|| format!("op body of {} bytes cut short", body.len()))
    };
    let consumer = || -> Result<ConsumerKey, String> {
        let kind = match fixed(1, 1)?[0] {
            1 => ConsumerKind::Consumer,
            2 => ConsumerKind::ConsumerGroup,
            other => return Err(format!("unknown consumer kind {other}")),
        };
        let id = u32::from_le_bytes(fixed(2, 4)?.try_into().expect("4"));
        Ok((kind, id))
    };
    match body.first() {
        Some(&APPEND) => {
            let base_offset = Offset(u64::from_le_bytes(fixed(1, 8)?.try_into().expect("8")));
            let header = BatchHeader::read(&body[APPEND_PREFIX..]).map_err(|e| e.to_string())?;
            Ok(Decoded::Append {
                base_offset,
                messages: header.message_count,
            })
        }
        Some(&STORE_OFFSET) if body.len() == 14 => Ok(Decoded::StoreOffset {
            consumer: consumer()?,
            offset: Offset(u64::from_le_bytes(fixed(6, 8)?.try_into().expect("8"))),
        }),
        Some(&DELETE_OFFSET) if body.len() == 6 => Ok(Decoded::DeleteOffset {
            consumer: consumer()?,
        }),
        _ => Err(format!("unknown partition op of {} bytes", body.len())),
    }
}

/// Appends applied between background syncs of the segments, so that a
/// checkpoint (which fsyncs them first) never meets a large unsynced tail.
const BACKGROUND_SYNC_APPENDS: u32 = 16;

/// The group's state machine: this node's copy of the partition.
pub struct PartitionMachine<S: Storage> {
    partition: Rc<Partition<S>>,
    /// Appends applied since the last background sync.
    unsynced: u32,
}

impl<S: Storage> PartitionMachine<S> {
    async fn apply_append(&self, entry: &Entry, base_offset: Offset) -> Applied {
        let range = APPEND_PREFIX..entry.body.len();
        loop {
            let applied = self
                .partition
                .apply_append(
                    entry.body.clone(),
                    range.clone(),
                    base_offset,
                    entry.timestamp_us,
                )
                .await;
            match applied {
                Ok(base_offset) => return Applied::Appended { base_offset },
                // A full disk here is this node's alone: wait for room
                // rather than diverge from the replicas that applied it.
                Err(PartitionError::Storage(StorageError::NoSpace { dir })) => {
                    tracing::warn!(dir = %dir.display(), op = entry.op.0, "no space to apply a committed append; retrying");
                    compio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
                // A committed op that cannot be applied: fail-stop
                // (replication spec §6.7).
                Err(e) => panic!("cannot apply committed append {}: {e}", entry.op),
            }
        }
    }
}

impl<S: Storage> StateMachine for PartitionMachine<S> {
    async fn apply(&mut self, entry: &Entry) -> Vec<u8> {
        let decoded = decode(&entry.body).unwrap_or_else(|e| {
            panic!("committed partition op {} cannot be decoded: {e}", entry.op)
        });
        let applied = match decoded {
            Decoded::Append { base_offset, .. } => {
                let applied = self.apply_append(entry, base_offset).await;
                self.unsynced += 1;
                if self.unsynced >= BACKGROUND_SYNC_APPENDS {
                    self.unsynced = 0;
                    let log = self.partition.log().clone();
                    compio::runtime::spawn(async move {
                        if let Err(e) = log.sync().await {
                            tracing::error!("background segment sync failed: {e}");
                        }
                    })
                    .detach();
                }
                applied
            }
            Decoded::StoreOffset { consumer, offset } => {
                match self.partition.apply_store_offset(consumer, offset).await {
                    Ok(caught_up) => Applied::Stored { caught_up },
                    Err(PartitionError::OffsetBeyondEnd { .. }) => {
                        Applied::Failed(ErrorCode::InvalidOffset)
                    }
                    Err(e) => panic!("cannot apply committed offset store {}: {e}", entry.op),
                }
            }
            Decoded::DeleteOffset { consumer } => {
                match self.partition.apply_delete_offset(consumer).await {
                    Ok(()) => Applied::Deleted,
                    Err(PartitionError::OffsetNotFound) => {
                        Applied::Failed(ErrorCode::ConsumerOffsetNotFound)
                    }
                    Err(e) => panic!("cannot apply committed offset delete {}: {e}", entry.op),
                }
            }
        };
        applied.encode()
    }

    async fn persist(&mut self) -> Result<(), StorageError> {
        self.partition.flush(true).await.map_err(|e| match e {
            PartitionError::Storage(e) => e,
            other => unreachable!("a flush fails only in storage: {other}"),
        })
    }

    fn snapshot(&self) -> Vec<u8> {
        self.partition.log().next_offset().0.to_le_bytes().to_vec()
    }

    async fn restore(&mut self, bytes: &[u8]) -> Result<(), String> {
        let next = bytes
            .first_chunk::<8>()
            .map(|b| Offset(u64::from_le_bytes(*b)))
            .ok_or("a partition checkpoint cut short")?;
        let held = self.partition.log().next_offset();
        if held < next {
            return Err(format!(
                "this replica's log of {} ends at offset {}, below the checkpoint's {}: \
                 it must be refilled from a peer, and partition state transfer is not built",
                self.partition.dir().display(),
                held.0,
                next.0
            ));
        }
        Ok(())
    }
}

/// The answer to a submission.
#[derive(Debug)]
pub enum Submit {
    /// Prepared as this node's request `request`; its result comes with
    /// the `Effect::Reply` for it.
    Prepared {
        request: RequestNumber,
        effects: Vec<Effect>,
    },
    /// Invalid as asked; nothing was prepared.
    Rejected(ErrorCode),
    /// Not the primary of a normal view: the primary of `view` is.
    NotPrimary { view: View },
    /// The pipeline is full; nothing was prepared (safe to retry).
    Busy,
}

pub struct ReplicatedPartition<S: Storage> {
    group: Group<S, PartitionMachine<S>>,
    partition: Rc<Partition<S>>,
    /// This boot's client for the ops this node submits.
    submitter: Submitter,
}

impl<S: Storage> ReplicatedPartition<S> {
    /// Opens the group of `partition` with its journal in `dir`; `created`:
    /// the partition is being created as its create op commits (a group
    /// with no trace here starts normal in its created view, see
    /// `Group::create`).
    pub async fn open(
        storage: S,
        dir: &Path,
        placement: Placement,
        nonce: u64,
        partition: Rc<Partition<S>>,
        created: bool,
    ) -> Result<Self, GroupError> {
        assert!(nonce != 0, "a boot nonce is never zero");
        let machine = PartitionMachine {
            partition: partition.clone(),
            unsynced: 0,
        };
        let group = if created {
            Group::create(storage, dir, placement, nonce, machine).await?
        } else {
            Group::open(storage, dir, placement, nonce, machine).await?
        };
        Ok(ReplicatedPartition {
            group,
            partition,
            submitter: Submitter::new(nonce, placement.identity.replica),
        })
    }

    pub fn group(&self) -> &Group<S, PartitionMachine<S>> {
        &self.group
    }

    /// See `Group::set_outbox`.
    pub fn set_outbox(&mut self, outbox: Box<dyn FnMut(consensus::vsr::message::Envelope)>) {
        self.group.set_outbox(outbox);
    }

    pub fn partition(&self) -> &Rc<Partition<S>> {
        &self.partition
    }

    pub fn client(&self) -> ClientId {
        self.submitter.client()
    }

    /// Where the next append starts: after the newest append in the
    /// pipeline, or at the end of the applied log.
    fn head_offset(&self) -> Offset {
        let replica = self.group.replica();
        let mut op = replica.head();
        while op > replica.commit_min() {
            let entry = replica.entry(op).expect("the log holds its pipeline");
            if let Ok(Decoded::Append {
                base_offset,
                messages,
            }) = decode(&entry.body)
            {
                return base_offset.plus(u64::from(messages));
            }
            op = Op(op.0 - 1);
        }
        self.partition.log().next_offset()
    }

    /// Submits a change at `now_us` (the primary stamps and prepares it).
    pub async fn submit(&mut self, command: &Command, now_us: u64) -> Result<Submit, GroupError> {
        let replica = self.group.replica();
        if !replica.is_primary() {
            return Ok(Submit::NotPrimary {
                view: replica.view(),
            });
        }
        let body = match command {
            Command::Append { buffer, range } => {
                let Some(record) = buffer.get(range.clone()) else {
                    return Ok(Submit::Rejected(ErrorCode::InvalidMessagesCount));
                };
                let header = match validate_record(record, Verify::Layout) {
                    Ok(header) => header,
                    Err(_) => return Ok(Submit::Rejected(ErrorCode::InvalidMessagesCount)),
                };
                if header.message_count == 0 {
                    return Ok(Submit::Rejected(ErrorCode::InvalidMessagesCount));
                }
                encode_append(self.head_offset(), record)
            }
            Command::StoreOffset { consumer, offset } => encode_store(*consumer, *offset),
            Command::DeleteOffset { consumer } => encode_delete(*consumer),
        };
        Ok(
            match self.submitter.submit(&mut self.group, body, now_us).await? {
                Submitted::Prepared { request, effects } => Submit::Prepared { request, effects },
                Submitted::NotPrimary { view } => Submit::NotPrimary { view },
                Submitted::Busy => Submit::Busy,
            },
        )
    }

    /// A frame from a peer.
    pub async fn on_message(
        &mut self,
        from: ReplicaId,
        message: Message,
    ) -> Result<Vec<Effect>, GroupError> {
        self.group.on_message(from, message).await
    }

    /// One tick of the group's timers.
    pub async fn on_tick(&mut self) -> Result<Vec<Effect>, GroupError> {
        self.group.on_tick().await
    }
}
