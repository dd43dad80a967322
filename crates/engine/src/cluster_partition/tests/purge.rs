//! Purges in a partition group: the log restarts at offset 0 on every
//! replica (storage spec §6.5), whatever lies on either side of the purge
//! in the journal, across restarts, checkpoints and state transfers.

use super::*;

#[compio::test]
async fn given_a_purge_op_when_committed_should_empty_every_replica_and_restart_offsets_at_zero() {
    let mut cluster = Cluster::start().await;
    for tag in 1..=3 {
        cluster.append(tag, 3).await.expect("committed");
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
        assert_eq!(
            partition.log().next_offset(),
            Offset::ZERO,
            "offsets restart at 0 (storage spec §6.5)"
        );
    }
    // The same generation again changes nothing; a new append starts at 0.
    let again = cluster.submit(Command::Purge { generation: 1 }).await;
    assert_eq!(again, Some(Applied::Purged));
    let applied = cluster.append(7, 2).await;
    assert_eq!(
        applied,
        Some(Applied::Appended {
            base_offset: Offset::ZERO
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

/// A backup journals the append prepared right behind a purge before it
/// applies the purge: the purge empties the log, the held batch stays.
#[compio::test]
async fn given_an_append_prepared_behind_a_purge_when_both_commit_should_keep_it_everywhere() {
    let mut cluster = Cluster::start().await;
    cluster.submit(append(1, 3)).await.expect("committed");
    let primary = cluster.net.primary();
    cluster
        .prepare_on(primary, Command::Purge { generation: 1 })
        .await;
    cluster.prepare_on(primary, append(2, 2)).await;
    cluster.net.deliver().await;
    cluster.net.tick(20).await;
    for id in 0..3 {
        let messages = cluster.messages(id).await;
        assert_eq!(
            messages.iter().map(|m| m.0).collect::<Vec<_>>(),
            [0],
            "replica {id}: the purge emptied the log, the later append is kept from 0"
        );
    }
}

/// A restart after a purge and before any checkpoint covers it: the
/// journal's records of the purged appends keep only their heads, and
/// their batches come from the segments the purge kept aside; the first
/// checkpoint past the purge removes those.
#[compio::test]
async fn given_a_restart_after_a_purge_before_a_checkpoint_when_replayed_should_keep_the_purge() {
    let mut cluster = Cluster::start_checkpointing_every(1000).await;
    for tag in 1..=3 {
        cluster.submit(append(tag, 2)).await.expect("committed");
    }
    let purged = cluster.submit(Command::Purge { generation: 1 }).await;
    assert_eq!(purged, Some(Applied::Purged));
    cluster.submit(append(4, 3)).await.expect("committed");
    cluster.net.tick(10).await;
    let aside = |cluster: &Cluster, id: u8| {
        cluster.net.storages[usize::from(id)]
            .files()
            .into_iter()
            .filter(|path| path.to_string_lossy().contains("/purged-"))
            .count()
    };
    for id in 0..3 {
        assert!(
            aside(&cluster, id) > 0,
            "replica {id} keeps the purged segments aside"
        );
        cluster.net.nodes[usize::from(id)] = None;
    }
    for id in 0..3 {
        cluster.open(id).await;
        // Before the group commits again, the log past the purge is held:
        // a poll from below the log's start serves none of it.
        assert_eq!(
            cluster
                .messages_from(id, PollStart::Offset(Offset(0)))
                .await,
            [],
            "replica {id} serves nothing above its restored commit point"
        );
    }
    cluster.net.tick(300).await;
    let primary = cluster.net.primary();
    let expected = cluster.messages(primary).await;
    assert_eq!(expected.iter().map(|m| m.0).collect::<Vec<_>>(), [0]);
    assert_eq!(
        cluster
            .messages_from(primary, PollStart::Offset(Offset(0)))
            .await,
        expected,
        "a poll from below the log's start begins at it"
    );
    for id in 0..3 {
        assert_eq!(cluster.messages(id).await, expected, "replica {id}");
    }
}

/// A checkpoint taken before a purge and a restart after it: the
/// checkpoint's log end no longer describes the restarted log, which the
/// replay goes on from; nothing purged comes back, and new appends follow
/// the ones made after the purge.
#[compio::test]
async fn given_a_checkpoint_before_a_purge_when_every_replica_restarts_should_stay_purged() {
    let mut cluster = Cluster::start_checkpointing_every(4).await;
    for tag in 1..=9 {
        cluster.append(tag, 2).await.expect("committed");
    }
    let purged = cluster.submit(Command::Purge { generation: 1 }).await;
    assert_eq!(purged, Some(Applied::Purged));
    cluster.append(20, 3).await.expect("committed");
    cluster.net.tick(10).await;
    for id in 0..3 {
        let node = cluster.net.node(id);
        assert!(
            node.group().replica().checkpoint_op() < node.partition().purge_op(),
            "replica {id}: the latest checkpoint comes before the purge"
        );
        cluster.net.nodes[usize::from(id)] = None;
    }
    for id in 0..3 {
        cluster.open(id).await;
        assert!(
            !cluster.net.node(id).has_boot_gap(),
            "replica {id}: the checkpoint's end is not a gap in the purged log"
        );
    }
    cluster.net.tick(300).await;
    let primary = cluster.net.primary();
    let expected = cluster.messages(primary).await;
    assert_eq!(expected.iter().map(|m| m.0).collect::<Vec<_>>(), [0]);
    for id in 0..3 {
        assert_eq!(cluster.messages(id).await, expected, "replica {id}");
        assert_eq!(
            cluster.net.node(id).partition().log().next_offset(),
            Offset(3)
        );
    }
    let backup = (primary + 1) % 3;
    cluster
        .assert_member_again(backup, primary, Offset(3))
        .await;
}

/// Appends keep coming while a purge is in the pipeline: those journaled
/// behind it are kept whole until it applies, then held in order, and the
/// appends after them are held again; every replica ends with the same
/// log from 0, before and after a restart.
#[compio::test]
async fn given_appends_streaming_across_a_purge_when_committed_should_restart_at_zero_everywhere() {
    let mut cluster = Cluster::start_checkpointing_every(1000).await;
    for tag in 1..=3 {
        cluster.append(tag, 2).await.expect("committed");
    }
    let primary = cluster.net.primary();
    cluster
        .prepare_on(primary, Command::Purge { generation: 1 })
        .await;
    for tag in 10..=12 {
        cluster.prepare_on(primary, append(tag, 2)).await;
    }
    cluster.net.deliver().await;
    cluster.net.tick(20).await;
    for tag in 13..=15 {
        cluster.append(tag, 2).await.expect("committed");
    }
    cluster.net.tick(20).await;
    let offsets =
        |messages: &[(u64, Vec<u8>, Vec<u8>)]| messages.iter().map(|m| m.0).collect::<Vec<_>>();
    let expected = cluster.messages(primary).await;
    assert_eq!(offsets(&expected), [0, 2, 4, 6, 8, 10]);
    for id in 0..3 {
        assert_eq!(cluster.messages(id).await, expected, "replica {id}");
        let machine = cluster.net.node(id).group().machine();
        assert!(machine.pending_purges.is_empty() && machine.unheld.is_empty());
    }
    for id in 0..3u8 {
        cluster.net.nodes[usize::from(id)] = None;
    }
    for id in 0..3 {
        cluster.open(id).await;
    }
    cluster.net.tick(300).await;
    for id in 0..3 {
        assert_eq!(
            cluster.messages(id).await,
            expected,
            "replica {id} after a restart"
        );
    }
    let primary = cluster.net.primary();
    let backup = (primary + 1) % 3;
    cluster
        .assert_member_again(backup, primary, Offset(12))
        .await;
}

/// A backup down while its group purges and checkpoints past the purge
/// comes back to a checkpoint of a newer purge generation: it empties its
/// own log (which the purge took everywhere else) and refills it from the
/// peers from offset 0.
#[compio::test]
async fn given_a_backup_down_across_a_purge_when_it_rejoins_should_purge_and_refill_from_zero() {
    let mut cluster = Cluster::start().await;
    for tag in 1..=5 {
        cluster.append(tag, 2).await.expect("committed");
    }
    cluster.net.tick(10).await;
    let primary = cluster.net.primary();
    let lagging = (primary + 1) % 3;
    cluster.net.nodes[usize::from(lagging)] = None;
    let purged = cluster.submit(Command::Purge { generation: 1 }).await;
    assert_eq!(purged, Some(Applied::Purged));
    for tag in 10..=21 {
        cluster
            .append(tag, 2)
            .await
            .expect("committed by the other two");
    }
    let node = cluster.net.node(primary);
    assert!(
        node.group().replica().checkpoint_op() > node.partition().purge_op(),
        "the primary checkpointed past the purge"
    );
    cluster.open_with_source(lagging, primary).await;
    cluster.net.tick(400).await;
    let rejoined = cluster.net.node(lagging).partition();
    assert_eq!(rejoined.purge_generation(), 1);
    assert_eq!(rejoined.log().first_offset(), Some(Offset::ZERO));
    let expected = cluster.messages(primary).await;
    assert_eq!(expected.len(), 12);
    assert_eq!(cluster.messages(lagging).await, expected);
    // A refill of the log before the purge gets none of the new one.
    let peer = cluster.net.node(primary).partition().clone();
    let stale = serve_fetch(&peer, Offset::ZERO, Offset(24), 600, 0)
        .await
        .expect("served");
    assert!(stale.records.is_empty(), "no batch of another generation");
    cluster
        .assert_member_again(lagging, primary, Offset(24))
        .await;
}

#[test]
fn given_a_checkpoint_state_when_encoded_should_match_the_documented_bytes() {
    let purge = CheckpointPurge {
        generation: 3,
        op: consensus::Op(5),
    };
    let bytes = encode_checkpoint(
        Offset(0x0102),
        &[((ConsumerKind::Consumer, 9), Offset(7))],
        purge,
    );
    let mut golden = vec![2, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0];
    golden.extend_from_slice(&[1, 9, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0]);
    golden.extend_from_slice(&[3, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(bytes, golden);
    let offsets = vec![((ConsumerKind::Consumer, 9), Offset(7))];
    assert_eq!(
        decode_checkpoint(&bytes),
        Ok((Offset(0x0102), Some(offsets.clone()), Some(purge)))
    );
    // Earlier builds' states: without the purge, and without the offsets.
    assert_eq!(
        decode_checkpoint(&bytes[..25]),
        Ok((Offset(0x0102), Some(offsets), None))
    );
    assert_eq!(
        decode_checkpoint(&bytes[..8]),
        Ok((Offset(0x0102), None, None))
    );
    assert!(
        decode_checkpoint(&bytes[..30]).is_err(),
        "a cut state is refused"
    );
}

/// An append prepared behind a purge is committed and answered while the
/// backups have journaled it but applied neither; then every replica loses
/// power. The backups' journals must hold the append's batch themselves
/// (their segments still hold the purged log at those offsets), so the
/// acknowledged append survives.
#[compio::test]
async fn given_an_acknowledged_append_behind_a_purge_when_all_lose_power_before_applying_should_keep_it()
 {
    let mut cluster = Cluster::start_checkpointing_every(1000).await;
    for tag in 1..=3 {
        cluster.append(tag, 2).await.expect("committed");
    }
    cluster.net.tick(5).await;
    let primary = cluster.net.primary();
    let client = cluster.net.node(primary).client();
    let earlier = cluster.net.replies.len();
    cluster
        .prepare_on(primary, Command::Purge { generation: 1 })
        .await;
    cluster.prepare_on(primary, append(10, 2)).await;
    // Prepares reach the backups and their answers the primary, which
    // commits and answers; nothing tells the backups of the commit.
    while let Some(envelope) = cluster.net.queue.pop_front() {
        let wanted = matches!(
            envelope.message,
            Message::Prepare { .. } | Message::PrepareOk { .. }
        );
        if !wanted {
            continue;
        }
        let effects = cluster
            .net
            .node_mut(envelope.to)
            .on_message(envelope.from, envelope.message)
            .await
            .expect("storage works");
        cluster.net.take(effects);
    }
    let answered = cluster
        .net
        .replies
        .iter()
        .skip(earlier)
        .filter(|(c, ..)| *c == client)
        .count();
    assert_eq!(answered, 2, "the purge and the append are acknowledged");
    for id in 0..3u8 {
        cluster.net.power_loss(id);
    }
    for id in 0..3 {
        cluster.open(id).await;
    }
    cluster.net.tick(300).await;
    let primary = cluster.net.primary();
    let expected = cluster.messages(primary).await;
    assert_eq!(
        expected.iter().map(|m| m.0).collect::<Vec<_>>(),
        [0],
        "the acknowledged append survives, from offset 0"
    );
    for id in 0..3 {
        assert_eq!(cluster.messages(id).await, expected, "replica {id}");
    }
}
