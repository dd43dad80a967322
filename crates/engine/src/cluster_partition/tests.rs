//! Three replicas of one partition group over simulated disks, in one
//! process: appends and offsets committed through VSR land at the same
//! offsets with the same bytes on every replica, and a replayed journal
//! does not append twice.

use std::future::poll_fn;
use std::path::PathBuf;
use std::task::Poll;

use consensus::vsr::Limits;
use consensus::vsr::VsrReplica;
use protocol::batch::build_record;
use storage::seam::CrashMode;
use storage::{LogOptions, SimStorage};

use super::*;
use crate::metadata::topic::options::Durability;
use crate::partition::{PartitionOptions, PollRequest, PollStart};
use crate::replicated::Sync;
use crate::replicated::net::{Member, Net, placement};
use storage::offsets::ConsumerKind;

mod adopt;
mod purge;

impl<S: Storage> Member for ReplicatedPartition<S> {
    async fn message(&mut self, from: ReplicaId, message: Message) -> Vec<Effect> {
        self.on_message(from, message).await.expect("storage works")
    }
    async fn tick(&mut self) -> Vec<Effect> {
        // A checkpoint written beside the group completes at the next tick:
        // the frames delivered before it are prepared, committed and
        // applied while it runs.
        let group = self.group_mut();
        group.complete_checkpoint().await.expect("storage works");
        self.on_tick().await.expect("storage works")
    }
    fn replica(&self) -> &VsrReplica {
        self.group().replica()
    }
}

fn partition_dir() -> PathBuf {
    PathBuf::from("/data/streams/1/topics/1/partitions/0")
}

fn journal_dir() -> PathBuf {
    partition_dir().join("prepares-1")
}

fn options() -> PartitionOptions {
    PartitionOptions {
        log: LogOptions {
            segment_size_bytes: 4096,
            offset_reservation: 64,
            follow_log_end: true,
            ..LogOptions::default()
        },
        durability: Durability::Replicated,
        offset_durability: Durability::Replicated,
    }
}

fn record(tag: u64, count: usize) -> Vec<u8> {
    let payloads: Vec<Vec<u8>> = (0..count)
        .map(|i| format!("{tag}-{i}").into_bytes())
        .collect();
    let messages: Vec<(u128, &[u8], &[u8])> = payloads
        .iter()
        .enumerate()
        .map(|(i, p)| ((u128::from(tag) << 32) | i as u128, p.as_slice(), &b""[..]))
        .collect();
    build_record(tag, &messages)
}

struct Cluster {
    net: Net<ReplicatedPartition<SimStorage>>,
    nonce: u64,
    /// Ops between checkpoints.
    checkpoint_interval: u64,
    /// Log fetches made by the replica opened with a source.
    fetches: Rc<std::cell::Cell<u32>>,
    /// Whether the journals are fsynced (`persisted`; under `replicated`
    /// neither they nor the held batches are).
    fsync: bool,
}

impl Cluster {
    async fn start() -> Cluster {
        Cluster::start_checkpointing_every(4).await
    }

    async fn start_checkpointing_every(checkpoint_interval: u64) -> Cluster {
        Cluster::start_with(checkpoint_interval, true).await
    }

    /// Journals written to the kernel only, as `replicated` topics are.
    async fn start_unsynced() -> Cluster {
        Cluster::start_with(4, false).await
    }

    async fn start_with(checkpoint_interval: u64, fsync: bool) -> Cluster {
        let mut cluster = Cluster {
            net: Net::new(3),
            nonce: 900,
            checkpoint_interval,
            fetches: Rc::default(),
            fsync,
        };
        for id in 0..3 {
            cluster.open(id).await;
        }
        cluster.net.tick(30).await;
        cluster
    }

    /// Opens replica `id`, refilling logs from replica `source`'s
    /// partition as a node's log fetches would.
    async fn open_with_source(&mut self, id: u8, source: u8) {
        self.open(id).await;
        self.refill_from(id, source);
    }

    /// Replica `id` refills its log from replica `source`'s partition.
    fn refill_from(&mut self, id: u8, source: u8) {
        let peer = self.net.node(source).partition().clone();
        let fetches = Rc::new(std::cell::Cell::new(0u32));
        let counted = fetches.clone();
        self.net.nodes[usize::from(id)]
            .as_mut()
            .expect("opened")
            .set_log_source(Rc::new(move |from, until| {
                let peer = peer.clone();
                counted.set(counted.get() + 1);
                Box::pin(async move {
                    // A small chunk, so the refill takes several fetches.
                    let generation = peer.purge_generation();
                    serve_fetch(&peer, from, until, 600, generation)
                        .await
                        .map_err(|e| e.to_string())
                })
            }));
        self.fetches = fetches;
    }

    async fn open(&mut self, id: u8) {
        self.nonce += 1;
        let storage = self.net.storages[usize::from(id)].clone();
        storage.create_dir_all(&journal_dir()).await.expect("dirs");
        let partition = Partition::open(storage.clone(), &partition_dir(), options(), 0)
            .await
            .expect("partition opens")
            .partition;
        let limits = Limits {
            checkpoint_interval: self.checkpoint_interval,
            ..Limits::default()
        };
        let placement = Placement {
            fsync: self.fsync,
            ..placement(id, limits)
        };
        let node = ReplicatedPartition::open(
            storage,
            &journal_dir(),
            placement,
            self.nonce,
            Rc::new(partition),
            false,
        )
        .await
        .expect("opens");
        self.net.nodes[usize::from(id)] = Some(node);
    }

    /// A group whose segments are never fsynced, past a checkpoint of 16
    /// appends; with its primary and a backup (the victim of the tests).
    async fn checkpointed_unsynced() -> (Cluster, u8, u8) {
        let mut cluster = Cluster::start_unsynced().await;
        let primary = cluster.net.primary();
        let victim = (primary + 1) % 3;
        for tag in 1..=16 {
            cluster.append(tag, 3).await.expect("committed");
        }
        cluster.net.tick(20).await;
        (cluster, primary, victim)
    }

    /// `id` loses power: only what it fsynced survives, and it is down.
    fn power_loss(&mut self, id: u8) {
        let survived = self.net.storages[usize::from(id)].crash(CrashMode::Clean);
        self.net.storages[usize::from(id)] = survived;
        self.net.nodes[usize::from(id)] = None;
    }

    /// `id` is a full member: a new append lands at `offset` and `id`
    /// then holds what the primary holds.
    async fn assert_member_again(&mut self, id: u8, primary: u8, offset: Offset) {
        let applied = self.append(99, 1).await;
        assert_eq!(
            applied,
            Some(Applied::Appended {
                base_offset: offset
            })
        );
        self.net.tick(20).await;
        assert_eq!(self.messages(id).await, self.messages(primary).await);
    }

    /// Submits an append of `count` records tagged `tag`.
    async fn append(&mut self, tag: u64, count: usize) -> Option<Applied> {
        let batch = record(tag, count);
        self.submit(Command::Append {
            range: 0..batch.len(),
            buffer: batch,
        })
        .await
    }

    async fn submit(&mut self, mut command: Command) -> Option<Applied> {
        let primary = self.net.primary();
        let node = self.net.node_mut(primary);
        let client = node.client();
        let Submit::Prepared { request, effects } = node
            .submit(&mut command, 5_000_000)
            .await
            .expect("storage works")
        else {
            return None;
        };
        self.net.take(effects);
        self.net.deliver().await;
        self.net.tick(5).await;
        let (_, _, _, result) = self
            .net
            .replies
            .iter()
            .find(|(c, r, _, _)| *c == client && *r == request)
            .expect("answered once committed");
        Applied::decode(&command, result)
    }

    /// Each record's first offset, header and messages, as a poll serves
    /// them.
    async fn messages(&self, id: u8) -> Vec<(u64, Vec<u8>, Vec<u8>)> {
        self.messages_from(id, PollStart::First).await
    }

    async fn messages_from(&self, id: u8, start: PollStart) -> Vec<(u64, Vec<u8>, Vec<u8>)> {
        let partition = self.net.node(id).partition().clone();
        let polled = partition
            .poll(PollRequest {
                start,
                count: 1000,
                consumer: (ConsumerKind::Consumer, 1),
                auto_commit: false,
                max_bytes: u64::MAX,
            })
            .await
            .expect("polls");
        polled
            .records
            .iter()
            .map(|r| {
                (
                    r.first_offset.0,
                    r.header.to_vec(),
                    r.bytes[r.frames.clone()].to_vec(),
                )
            })
            .collect()
    }
}

#[test]
fn given_each_op_when_encoded_should_match_the_documented_bytes() {
    let consumer = (ConsumerKind::ConsumerGroup, 0x0102_0304);
    assert_eq!(
        encode_store(consumer, Offset(0x1122)),
        [2, 2, 4, 3, 2, 1, 0x22, 0x11, 0, 0, 0, 0, 0, 0]
    );
    assert_eq!(
        encode_delete((ConsumerKind::Consumer, 9)),
        [3, 1, 9, 0, 0, 0]
    );
    let batch = record(1, 2);
    let body = encode_append(Offset(5), &batch);
    assert_eq!(body[..APPEND_PREFIX], [1, 5, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(
        decode(&body),
        Ok(Decoded::Append {
            base_offset: Offset(5),
            messages: 2
        })
    );
    assert_eq!(
        decode(&encode_store(consumer, Offset(3))),
        Ok(Decoded::StoreOffset {
            consumer,
            offset: Offset(3)
        })
    );
    assert_eq!(encode_purge(0x0102), [4, 2, 1, 0, 0, 0, 0, 0, 0]);
    assert_eq!(
        decode(&encode_purge(7)),
        Ok(Decoded::Purge { generation: 7 })
    );
    assert!(decode(&[2, 2, 0]).is_err(), "cut short");
    assert!(decode(&[9]).is_err(), "unknown kind");
    let appended = Applied::Appended {
        base_offset: Offset(7),
    };
    assert_eq!(appended.encode(), [0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0]);
    let append = Command::Append {
        buffer: batch.clone(),
        range: 0..batch.len(),
    };
    assert_eq!(Applied::decode(&append, &appended.encode()), Some(appended));
    let failed = Applied::Failed(ErrorCode::InvalidOffset);
    assert_eq!(Applied::decode(&append, &failed.encode()), Some(failed));
}

#[compio::test]
async fn given_appends_on_the_primary_when_committed_should_land_at_equal_offsets_everywhere() {
    let mut cluster = Cluster::start().await;
    for tag in 1..=6 {
        let applied = cluster.append(tag, 3).await;
        assert_eq!(
            applied,
            Some(Applied::Appended {
                base_offset: Offset((tag - 1) * 3)
            })
        );
    }
    let stored = cluster
        .submit(Command::StoreOffset {
            consumer: (ConsumerKind::Consumer, 4),
            offset: Offset(10),
        })
        .await;
    assert_eq!(stored, Some(Applied::Stored { caught_up: true }));
    let beyond = cluster
        .submit(Command::StoreOffset {
            consumer: (ConsumerKind::Consumer, 4),
            offset: Offset(18),
        })
        .await;
    assert_eq!(beyond, Some(Applied::Failed(ErrorCode::InvalidOffset)));
    let first = cluster.messages(0).await;
    assert_eq!(first.len(), 6, "every batch");
    for id in 1..3 {
        assert_eq!(
            cluster.messages(id).await,
            first,
            "replica {id} holds equal bytes"
        );
        let partition = cluster.net.node(id).partition();
        assert_eq!(
            partition.stored_offset((ConsumerKind::Consumer, 4)),
            Some(Offset(10))
        );
    }
}

/// Group commit: appends prepared one after the other with their sync
/// deferred are stamped at consecutive offsets, answered only after the
/// one sync, and land equal everywhere.
#[compio::test]
async fn given_appends_prepared_together_when_synced_once_should_commit_each_at_its_offset() {
    let mut cluster = Cluster::start_unsynced().await;
    let primary = cluster.net.primary();
    let node = cluster.net.node_mut(primary);
    let client = node.client();
    let committed = node.group().replica().commit_max();
    let mut requests = Vec::new();
    let mut effects = Vec::new();
    for tag in 1..=3 {
        let Submit::Prepared {
            request,
            effects: more,
        } = node
            .submit_as(&mut append(tag, 3), 5_000_000, Sync::Later)
            .await
            .expect("storage works")
        else {
            panic!("the primary prepares");
        };
        requests.push(request);
        effects.extend(more);
    }
    assert_eq!(
        node.group().replica().commit_max(),
        committed,
        "not before the sync"
    );
    assert!(
        !effects.iter().any(|e| matches!(e, Effect::Reply { .. })),
        "nothing answered before the sync"
    );
    effects.extend(node.sync_prepared().await.expect("storage works"));
    cluster.net.take(effects);
    cluster.net.deliver().await;
    cluster.net.tick(5).await;
    for (index, request) in requests.iter().enumerate() {
        let (_, _, _, result) = cluster
            .net
            .replies
            .iter()
            .find(|(c, r, _, _)| *c == client && r == request)
            .expect("answered once committed");
        assert_eq!(
            Applied::decode(&append(0, 3), result),
            Some(Applied::Appended {
                base_offset: Offset(index as u64 * 3)
            })
        );
    }
    let first = cluster.messages(primary).await;
    assert_eq!(first.len(), 3, "every batch");
    for id in 0..3 {
        assert_eq!(cluster.messages(id).await, first, "replica {id}");
    }
}

#[compio::test]
async fn given_a_restart_when_the_journal_replays_should_not_append_twice() {
    let mut cluster = Cluster::start().await;
    for tag in 1..=3 {
        cluster.append(tag, 2).await.expect("prepared");
    }
    let backup = (cluster.net.primary() + 1) % 3;
    let before = cluster.messages(backup).await;
    // A process kill: written data survives.
    cluster.net.nodes[usize::from(backup)] = None;
    cluster.open(backup).await;
    cluster.net.tick(200).await;
    assert_eq!(cluster.messages(backup).await, before, "nothing doubled");
    let applied = cluster.append(9, 1).await;
    assert_eq!(
        applied,
        Some(Applied::Appended {
            base_offset: Offset(6)
        })
    );
    cluster.net.tick(20).await;
    let primary = cluster.net.primary();
    assert_eq!(
        cluster.messages(backup).await,
        cluster.messages(primary).await,
        "caught up with equal bytes"
    );
}

#[compio::test]
async fn given_a_wiped_backup_behind_every_checkpoint_when_it_rejoins_should_refill_log_and_offsets()
 {
    let mut cluster = Cluster::start().await;
    let primary = cluster.net.primary();
    let wiped = (primary + 1) % 3;
    cluster.net.nodes[usize::from(wiped)] = None;
    for tag in 1..=24 {
        cluster
            .append(tag, 2)
            .await
            .expect("committed by the other two");
        if tag % 5 == 0 {
            let stored = cluster
                .submit(Command::StoreOffset {
                    consumer: (ConsumerKind::Consumer, tag as u32),
                    offset: Offset(tag),
                })
                .await;
            assert_eq!(stored, Some(Applied::Stored { caught_up: true }));
        }
    }
    let deleted = cluster
        .submit(Command::DeleteOffset {
            consumer: (ConsumerKind::Consumer, 10),
        })
        .await;
    assert_eq!(deleted, Some(Applied::Deleted));
    assert!(
        cluster.net.node(primary).group().replica().checkpoint_op() > consensus::Op(8),
        "the primary's journal no longer starts at op 1"
    );
    // The wiped node comes back with empty disks.
    cluster.net.storages[usize::from(wiped)] = SimStorage::new();
    cluster.open_with_source(wiped, primary).await;
    cluster.net.tick(400).await;
    assert!(cluster.fetches.get() > 1, "refilled in several fetches");
    let expected = cluster.messages(primary).await;
    assert_eq!(expected.len(), 24);
    assert_eq!(
        cluster.messages(wiped).await,
        expected,
        "the refilled log holds the primary's bytes"
    );
    assert_eq!(
        cluster.net.node(wiped).partition().consumer_offsets(),
        cluster.net.node(primary).partition().consumer_offsets(),
        "offsets as the primary holds them"
    );
    assert_eq!(
        cluster.net.node(wiped).partition().consumer_offsets().len(),
        3,
        "stores of 5, 15 and 20 (10 deleted)"
    );
    // It is a full member again: a new append lands there too.
    cluster
        .assert_member_again(wiped, primary, Offset(48))
        .await;
}

/// A `replicated` partition's segments are not fsynced before a
/// checkpoint: a power loss can leave the log below it. The boot keeps what
/// the log holds and the group refills the rest from a peer before it
/// serves.
#[compio::test]
async fn given_a_power_loss_below_the_checkpoint_when_booting_should_refill_from_a_peer_before_serving()
 {
    let (mut cluster, primary, victim) = Cluster::checkpointed_unsynced().await;
    let checkpoint = cluster.net.node(victim).group().replica().checkpoint_op();
    assert!(checkpoint > consensus::Op(8), "the victim checkpointed");
    let expected = cluster.messages(primary).await;
    assert_eq!(expected.len(), 16);
    // Power loss: only what was fsynced survives.
    cluster.power_loss(victim);
    cluster.open_with_source(victim, primary).await;
    let node = cluster.net.node_mut(victim);
    assert!(
        node.has_boot_gap(),
        "the checkpoint lies above the log the power loss left"
    );
    let before = node.partition().log().next_offset();
    node.refill_boot_gap()
        .await
        .expect("refilled from the peer");
    assert!(!node.has_boot_gap());
    assert!(cluster.fetches.get() >= 1, "fetched from the peer");
    assert!(
        cluster.net.node(victim).partition().committed_end() > before,
        "the committed end is the checkpoint's again"
    );
    cluster.net.tick(200).await;
    assert_eq!(
        cluster.messages(victim).await,
        expected,
        "the victim serves the whole log again"
    );
    // A full member: a new append lands there at the same offset.
    cluster
        .assert_member_again(victim, primary, Offset(48))
        .await;
}

/// Without a peer that holds the lost batches the refill fails (the group
/// is then not served) instead of serving a log below its checkpoint.
#[compio::test]
async fn given_a_power_loss_below_the_checkpoint_and_no_peer_holding_it_when_refilling_should_fail()
{
    let (mut cluster, _, victim) = Cluster::checkpointed_unsynced().await;
    cluster.power_loss(victim);
    cluster.open(victim).await;
    let node = cluster.net.node_mut(victim);
    assert!(node.has_boot_gap());
    node.set_log_source(Rc::new(|from, _| {
        Box::pin(async move { Err(format!("no peer holds offset {}", from.0)) })
    }));
    let refused = node.refill_boot_gap().await;
    assert!(
        matches!(&refused, Err(GroupError::Format { reason, .. }) if reason.contains("no peer holds")),
        "{refused:?}"
    );
    assert!(node.has_boot_gap(), "still not served");
}

#[compio::test]
async fn given_a_peer_whose_retention_dropped_the_start_when_refilling_should_restart_the_log_there()
 {
    let mut cluster = Cluster::start().await;
    let primary = cluster.net.primary();
    let wiped = (primary + 1) % 3;
    cluster.net.nodes[usize::from(wiped)] = None;
    for tag in 1..=30 {
        cluster
            .append(tag, 4)
            .await
            .expect("committed by the other two");
    }
    // Retention on both remaining replicas drops their oldest segments.
    for id in (0..3).filter(|&id| id != wiped) {
        let deleted = cluster
            .net
            .node(id)
            .partition()
            .delete_segments(2)
            .await
            .expect("retention");
        assert_eq!(deleted, 2, "4 KiB segments: several are sealed");
    }
    let first = cluster
        .net
        .node(primary)
        .partition()
        .log()
        .first_offset()
        .expect("messages left");
    assert!(first > Offset::ZERO);
    cluster.net.storages[usize::from(wiped)] = SimStorage::new();
    cluster.open_with_source(wiped, primary).await;
    cluster.net.tick(400).await;
    let refilled = cluster.net.node(wiped).partition().log();
    assert_eq!(
        refilled.first_offset(),
        Some(first),
        "starts where the peers do"
    );
    assert_eq!(
        cluster.messages(wiped).await,
        cluster.messages(primary).await
    );
}

impl Cluster {
    /// Prepares `command` on replica `id` (its primary) and queues the
    /// frames, without delivering them.
    async fn prepare_on(&mut self, id: u8, mut command: Command) {
        let node = self.net.node_mut(id);
        let Submit::Prepared { effects, .. } = node
            .submit(&mut command, 5_000_000)
            .await
            .expect("storage works")
        else {
            panic!("replica {id} prepares");
        };
        self.net.take(effects);
    }

    /// The primary of a normal view other than `not`.
    fn primary_besides(&self, not: u8) -> u8 {
        (0..3)
            .find(|&id| id != not && self.net.node(id).group().replica().is_primary())
            .expect("a primary among the others")
    }
}

fn append(tag: u64, count: usize) -> Command {
    let batch = record(tag, count);
    Command::Append {
        range: 0..batch.len(),
        buffer: batch,
    }
}

/// The segment is the op's log: a primary cut off with appends it
/// prepared alone holds their batches above its commit point (never
/// served); when it rejoins the next view, they are cut and the view's own
/// batches take their offsets.
#[compio::test]
async fn given_appends_a_cut_off_primary_prepared_alone_when_it_rejoins_should_hold_the_new_views_batches()
 {
    // One append in the new view: the old primary's log is cut at the
    // view change; three: past the new view's checkpoint, it catches up
    // by state transfer, refilling from the new primary's segments after
    // cutting its held batches.
    rejoin_after_preparing_alone(1).await;
    rejoin_after_preparing_alone(3).await;
}

async fn rejoin_after_preparing_alone(new_appends: u64) {
    let mut cluster = Cluster::start().await;
    for tag in 1..=2 {
        cluster.submit(append(tag, 2)).await.expect("committed");
    }
    let old = cluster.net.primary();
    cluster.net.cut = Some(old);
    for tag in 10..=11 {
        cluster.prepare_on(old, append(tag, 3)).await;
    }
    cluster.net.deliver().await;
    let partition = cluster.net.node(old).partition().clone();
    assert_eq!(partition.committed_end(), Offset(4));
    assert_eq!(
        partition.log().next_offset(),
        Offset(10),
        "held above the commit point"
    );
    assert_eq!(
        cluster.messages(old).await.len(),
        2,
        "held batches are not served"
    );

    cluster.net.tick(200).await;
    let new = cluster.primary_besides(old);
    for tag in 20..20 + new_appends {
        let node = cluster.net.node_mut(new);
        let Submit::Prepared { effects, .. } = node
            .submit(&mut append(tag, 1), 6_000_000)
            .await
            .expect("storage works")
        else {
            panic!("the new primary prepares");
        };
        cluster.net.take(effects);
        cluster.net.deliver().await;
    }
    cluster.net.tick(20).await;
    cluster.refill_from(old, new);
    cluster.net.cut = None;
    cluster.net.tick(300).await;
    let expected = cluster.messages(new).await;
    let offsets: Vec<u64> = [0, 2].into_iter().chain(4..4 + new_appends).collect();
    assert_eq!(
        expected.iter().map(|m| m.0).collect::<Vec<_>>(),
        offsets,
        "the new view's batches follow the committed ones"
    );
    let end = Offset(4 + new_appends);
    for id in 0..3 {
        assert_eq!(cluster.messages(id).await, expected, "replica {id}");
        let partition = cluster.net.node(id).partition();
        assert_eq!(
            partition.log().next_offset(),
            end,
            "replica {id} holds nothing else"
        );
        assert_eq!(partition.committed_end(), end);
    }
}

/// A restart: a journaled append whose batch is held comes back from the
/// segment (the journal keeps only its head), and a batch written whose
/// journal record never was (a crash between the two) is cut.
#[compio::test]
async fn given_a_restart_with_held_batches_and_an_orphan_when_replayed_should_serve_exactly_the_log()
 {
    let mut cluster = Cluster::start().await;
    for tag in 1..=3 {
        cluster.submit(append(tag, 2)).await.expect("committed");
    }
    let backup = (cluster.net.primary() + 1) % 3;
    cluster.net.nodes[usize::from(backup)] = None;
    // A batch in the segment that no journal record names.
    let storage = cluster.net.storages[usize::from(backup)].clone();
    let partition = Partition::open(storage, &partition_dir(), options(), 0)
        .await
        .expect("opens")
        .partition;
    let orphan = record(66, 4);
    partition
        .hold_append(bytes::Bytes::from(orphan), Offset(6), 7_000_000)
        .await
        .expect("written");
    partition.flush(true).await.expect("flushed");
    drop(partition);
    cluster.open(backup).await;
    assert_eq!(
        cluster.net.node(backup).partition().log().next_offset(),
        Offset(6),
        "the orphan is cut at open"
    );
    cluster.net.tick(200).await;
    cluster.submit(append(4, 1)).await.expect("committed");
    cluster.net.tick(20).await;
    let primary = cluster.net.primary();
    let expected = cluster.messages(primary).await;
    assert_eq!(
        expected.iter().map(|m| m.0).collect::<Vec<_>>(),
        [0, 2, 4, 6]
    );
    assert_eq!(cluster.messages(backup).await, expected);
}

/// A checkpoint written beside a group holds its segments' I/O while it
/// syncs them; the group's next append waits on that same I/O to make
/// its batch durable. On real files (whose I/O suspends) the group must
/// not stall: the checkpoint's work runs whatever the driver awaits.
#[compio::test]
async fn given_a_checkpoint_syncing_beside_when_the_next_appends_come_should_not_stall() {
    let dir = tempfile::tempdir().expect("temp dir");
    let partition_dir = dir.path().join("partition");
    let journal_dir = partition_dir.join("prepares-1");
    let storage = storage::RealStorage;
    storage.create_dir_all(&journal_dir).await.expect("dirs");
    let partition = Partition::open(storage, &partition_dir, options(), 0)
        .await
        .expect("partition opens")
        .partition;
    let mut alone = placement(
        0,
        Limits {
            checkpoint_interval: 2,
            ..Limits::default()
        },
    );
    alone.replicas = 1;
    // Appends written, not synced: the checkpoint's sync has work to do.
    alone.fsync = false;
    let mut node =
        ReplicatedPartition::open(storage, &journal_dir, alone, 1, Rc::new(partition), true)
            .await
            .expect("opens");
    let appends = async {
        for tag in 0..12u64 {
            let batch = record(tag, 200);
            let mut command = Command::Append {
                range: 0..batch.len(),
                buffer: batch,
            };
            let submitted = node
                .submit(&mut command, 5_000_000)
                .await
                .expect("storage works");
            assert!(
                matches!(submitted, Submit::Prepared { .. }),
                "a group of one leads"
            );
            // The driver polls the checkpoint once between requests, as a
            // node's loop does when its other work is ready first.
            let group = node.group_mut();
            let ready = poll_fn(|cx| Poll::Ready(group.poll_checkpoint(cx).is_ready())).await;
            if ready {
                group.finish_checkpoint().await.expect("checkpoint written");
            }
        }
        node.group_mut()
            .complete_checkpoint()
            .await
            .expect("checkpoint written");
    };
    compio::time::timeout(std::time::Duration::from_secs(20), appends)
        .await
        .expect("the appends and checkpoints complete");
    assert_eq!(node.partition().committed_end(), Offset(12 * 200));
    assert!(
        node.group().replica().checkpoint_op() > Op(0),
        "checkpointed"
    );
}

/// An append's body is built over the request's bytes before the batch
/// when there are at least the prefix's 9 of them, else copied; either way
/// it is `encode_append`'s bytes.
#[test]
fn given_a_batch_inside_its_request_when_building_the_body_should_match_encode_append() {
    let batch = record(3, 4);
    for before in [0usize, 5, 9, 40] {
        let mut buffer = vec![0xAA; before];
        buffer.extend_from_slice(&batch);
        buffer.extend_from_slice(&[0xBB; 7]);
        let range = before..before + batch.len();
        let (body, start) = append_body(buffer, range, Offset(77));
        assert_eq!(
            body[start..],
            encode_append(Offset(77), &batch)[..],
            "{before} bytes before the batch"
        );
        assert_eq!(start, before.saturating_sub(APPEND_PREFIX));
    }
}
