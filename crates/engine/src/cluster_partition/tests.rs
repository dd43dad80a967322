//! Three replicas of one partition group over simulated disks, in one
//! process: appends and offsets committed through VSR land at the same
//! offsets with the same bytes on every replica, and a replayed journal
//! does not append twice.

use std::path::PathBuf;

use consensus::vsr::Limits;
use consensus::vsr::VsrReplica;
use protocol::batch::build_record;
use storage::{LogOptions, SimStorage};

use super::*;
use crate::metadata::topic::options::Durability;
use crate::partition::{PartitionOptions, PollRequest, PollStart};
use crate::replicated::net::{Member, Net, placement};

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
        replicated_by_group: true,
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
    /// Log fetches made by the replica opened with a source.
    fetches: Rc<std::cell::Cell<u32>>,
}

impl Cluster {
    async fn start() -> Cluster {
        let mut cluster = Cluster {
            net: Net::new(3),
            nonce: 900,
            fetches: Rc::default(),
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
                    serve_fetch(&peer, from, until, 600)
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
            checkpoint_interval: 4,
            ..Limits::default()
        };
        let node = ReplicatedPartition::open(
            storage,
            &journal_dir(),
            placement(id, limits),
            self.nonce,
            Rc::new(partition),
            false,
        )
        .await
        .expect("opens");
        self.net.nodes[usize::from(id)] = Some(node);
    }

    async fn submit(&mut self, command: Command) -> Option<Applied> {
        let primary = self.net.primary();
        let node = self.net.node_mut(primary);
        let client = node.client();
        let Submit::Prepared { request, effects } = node
            .submit(&command, 5_000_000)
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
        let partition = self.net.node(id).partition().clone();
        let polled = partition
            .poll(
                PollRequest {
                    start: PollStart::First,
                    count: 1000,
                    consumer: (ConsumerKind::Consumer, 1),
                    auto_commit: false,
                    max_bytes: u64::MAX,
                },
                0,
            )
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
        let batch = record(tag, 3);
        let applied = cluster
            .submit(Command::Append {
                range: 0..batch.len(),
                buffer: batch,
            })
            .await;
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

#[compio::test]
async fn given_a_restart_when_the_journal_replays_should_not_append_twice() {
    let mut cluster = Cluster::start().await;
    for tag in 1..=3 {
        let batch = record(tag, 2);
        cluster
            .submit(Command::Append {
                range: 0..batch.len(),
                buffer: batch,
            })
            .await
            .expect("prepared");
    }
    let backup = (cluster.net.primary() + 1) % 3;
    let before = cluster.messages(backup).await;
    // A process kill: written data survives.
    cluster.net.nodes[usize::from(backup)] = None;
    cluster.open(backup).await;
    cluster.net.tick(200).await;
    assert_eq!(cluster.messages(backup).await, before, "nothing doubled");
    let batch = record(9, 1);
    let applied = cluster
        .submit(Command::Append {
            range: 0..batch.len(),
            buffer: batch,
        })
        .await;
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
        let batch = record(tag, 2);
        cluster
            .submit(Command::Append {
                range: 0..batch.len(),
                buffer: batch,
            })
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
    let batch = record(99, 1);
    let applied = cluster
        .submit(Command::Append {
            range: 0..batch.len(),
            buffer: batch,
        })
        .await;
    assert_eq!(
        applied,
        Some(Applied::Appended {
            base_offset: Offset(48)
        })
    );
    cluster.net.tick(20).await;
    assert_eq!(
        cluster.messages(wiped).await,
        cluster.messages(primary).await
    );
}

#[compio::test]
async fn given_a_peer_whose_retention_dropped_the_start_when_refilling_should_restart_the_log_there()
 {
    let mut cluster = Cluster::start().await;
    let primary = cluster.net.primary();
    let wiped = (primary + 1) % 3;
    cluster.net.nodes[usize::from(wiped)] = None;
    for tag in 1..=30 {
        let batch = record(tag, 4);
        cluster
            .submit(Command::Append {
                range: 0..batch.len(),
                buffer: batch,
            })
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

#[compio::test]
async fn given_a_purge_op_when_committed_should_empty_every_replica_and_keep_offsets_growing() {
    let mut cluster = Cluster::start().await;
    for tag in 1..=3 {
        let batch = record(tag, 3);
        cluster
            .submit(Command::Append {
                range: 0..batch.len(),
                buffer: batch,
            })
            .await
            .expect("committed");
    }
    let stored = cluster
        .submit(Command::StoreOffset {
            consumer: (ConsumerKind::Consumer, 4),
            offset: Offset(5),
        })
        .await;
    assert_eq!(stored, Some(Applied::Stored { caught_up: true }));
    let purged = cluster.submit(Command::Purge { generation: 1 }).await;
    assert_eq!(purged, Some(Applied::Purged));
    cluster.net.tick(10).await;
    for id in 0..3 {
        let partition = cluster.net.node(id).partition();
        assert!(
            cluster.messages(id).await.is_empty(),
            "replica {id} is empty"
        );
        assert!(partition.consumer_offsets().is_empty());
        assert_eq!(partition.purge_generation(), 1);
        assert_eq!(partition.log().next_offset(), Offset(9), "offsets go on");
    }
    // The same generation again changes nothing; a new append goes on
    // from the end.
    let again = cluster.submit(Command::Purge { generation: 1 }).await;
    assert_eq!(again, Some(Applied::Purged));
    let batch = record(7, 2);
    let applied = cluster
        .submit(Command::Append {
            range: 0..batch.len(),
            buffer: batch,
        })
        .await;
    assert_eq!(
        applied,
        Some(Applied::Appended {
            base_offset: Offset(9)
        })
    );
    // A backup restarted replays its journal across the purge: nothing
    // comes back, nothing doubles.
    let backup = (cluster.net.primary() + 1) % 3;
    cluster.net.nodes[usize::from(backup)] = None;
    cluster.open(backup).await;
    cluster.net.tick(200).await;
    let primary = cluster.net.primary();
    let expected = cluster.messages(primary).await;
    assert_eq!(expected.len(), 1);
    assert_eq!(cluster.messages(backup).await, expected);
}
