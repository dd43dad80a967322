//! Scenario tests of the replica over a lossless in-memory network that
//! delivers in order; faults, crashes and seeds are the simulator's.

use std::collections::VecDeque;

use super::message::{Envelope, Request};
use super::*;

const TIMING: Timing = Timing {
    commit_interval: 2,
    heartbeat_timeout: 10,
    view_change_timeout: 10,
    retransmit_interval: 3,
};

struct Group {
    replicas: Vec<Option<VsrReplica>>,
    journals: Vec<Durable>,
    queue: VecDeque<Envelope>,
    applied: Vec<Vec<Op>>,
    replies: Vec<(ClientId, RequestNumber, Op)>,
    /// Replicas whose traffic is dropped.
    isolated: Vec<bool>,
}

impl Group {
    fn new(n: u8) -> Group {
        Group {
            replicas: (0..n)
                .map(|id| Some(VsrReplica::genesis(id, n, TIMING, 1 + u64::from(id))))
                .collect(),
            journals: vec![Durable::default(); usize::from(n)],
            queue: VecDeque::new(),
            applied: vec![Vec::new(); usize::from(n)],
            replies: Vec::new(),
            isolated: vec![false; usize::from(n)],
        }
    }

    fn replica(&self, id: u8) -> &VsrReplica {
        self.replicas[usize::from(id)].as_ref().expect("up")
    }

    fn perform(&mut self, id: u8, actions: Vec<Action>) {
        for action in actions {
            let journal = &mut self.journals[usize::from(id)];
            // Journal slots hold the ops above the checkpoint.
            let base = journal.snapshot.as_ref().map_or(0, |s| s.op().0);
            match action {
                Action::Send(envelope) => self.queue.push_back(envelope),
                Action::Journal(entry) => {
                    journal.entries.truncate((entry.op.0 - base - 1) as usize);
                    journal.entries.push(entry);
                }
                Action::TruncateAfter(op) => journal.entries.truncate((op.0 - base) as usize),
                Action::Sync => {}
                Action::Superblock { view, log_view } => {
                    journal.blank = false;
                    journal.view = view;
                    journal.log_view = log_view;
                }
                Action::Uncertain(uncertain) => journal.uncertain = uncertain,
                Action::Apply(entry) => self.applied[usize::from(id)].push(entry.op),
                Action::Reply {
                    client,
                    request,
                    op,
                } => self.replies.push((client, request, op)),
                Action::Checkpoint(mut snapshot) => {
                    // The state machine here is the list of applied ops.
                    let applied = &self.applied[usize::from(id)];
                    assert_eq!(
                        applied.last(),
                        Some(&snapshot.op()),
                        "taken at the commit point"
                    );
                    snapshot.state = applied.iter().flat_map(|op| op.0.to_le_bytes()).collect();
                    journal.entries.drain(..(snapshot.op().0 - base) as usize);
                    journal.snapshot = Some(snapshot.clone());
                    self.replicas[usize::from(id)]
                        .as_mut()
                        .expect("up")
                        .checkpointed(snapshot);
                }
                Action::InstallSnapshot(snapshot) => {
                    journal.entries.clear();
                    self.applied[usize::from(id)] = snapshot
                        .state
                        .chunks(8)
                        .map(|word| Op(u64::from_le_bytes(word.try_into().expect("8 bytes"))))
                        .collect();
                    journal.snapshot = Some(snapshot);
                }
            }
        }
    }

    fn deliver(&mut self) {
        while let Some(envelope) = self.queue.pop_front() {
            let (from, to) = (envelope.from, envelope.to);
            if self.isolated[usize::from(from)] || self.isolated[usize::from(to)] {
                continue;
            }
            if let Some(replica) = self.replicas[usize::from(to)].as_mut() {
                let actions = replica.on_message(from, envelope.message);
                self.perform(to, actions);
            }
        }
    }

    fn tick(&mut self, ticks: u32) {
        for _ in 0..ticks {
            for id in 0..self.replicas.len() as u8 {
                if let Some(replica) = self.replicas[usize::from(id)].as_mut() {
                    let actions = replica.on_tick();
                    self.perform(id, actions);
                }
            }
            self.deliver();
        }
    }

    fn request(&mut self, to: u8, client: u128, number: u64) -> Result<(), NotAdmitted> {
        let request = Request {
            client: ClientId(client),
            number: RequestNumber(number),
            body: vec![number as u8].into(),
        };
        let actions = self.replicas[usize::from(to)]
            .as_mut()
            .expect("up")
            .on_request(request, 1_000)?;
        self.perform(to, actions);
        self.deliver();
        Ok(())
    }

    fn restart(&mut self, id: u8, nonce: u64) {
        let n = self.replicas.len() as u8;
        let durable = self.journals[usize::from(id)].clone();
        self.applied[usize::from(id)] = durable
            .snapshot
            .as_ref()
            .map(|s| {
                s.state
                    .chunks(8)
                    .map(|word| Op(u64::from_le_bytes(word.try_into().expect("8 bytes"))))
                    .collect()
            })
            .unwrap_or_default();
        self.replicas[usize::from(id)] = Some(VsrReplica::boot(id, n, TIMING, durable, nonce));
    }
}

#[test]
fn given_three_replicas_when_the_primary_prepares_should_commit_at_quorum_and_apply_everywhere() {
    let mut group = Group::new(3);
    group.request(0, 7, 1).unwrap();
    assert_eq!(group.replies, vec![(ClientId(7), RequestNumber(1), Op(1))]);
    group.tick(3);
    for id in 0..3 {
        assert_eq!(group.applied[id], vec![Op(1)], "replica {id} applied op 1");
    }
    assert!(matches!(
        group.request(1, 7, 2),
        Err(NotAdmitted::NotPrimary { view: View(0) })
    ));
}

#[test]
fn given_a_retried_request_when_committed_should_answer_from_the_client_table() {
    let mut group = Group::new(3);
    group.request(0, 7, 1).unwrap();
    group.request(0, 7, 1).unwrap();
    assert_eq!(group.replies.len(), 2, "the retry is answered again");
    assert_eq!(group.replies[0], group.replies[1], "with the same op");
    assert_eq!(group.replica(0).head(), Op(1), "and not prepared twice");
}

#[test]
fn given_one_backup_down_when_requesting_should_still_commit_with_a_quorum() {
    let mut group = Group::new(3);
    group.isolated[2] = true;
    group.request(0, 7, 1).unwrap();
    assert_eq!(
        group.replies.len(),
        1,
        "primary and one backup are a quorum of 3"
    );
    group.isolated[2] = false;
    group.tick(5);
    assert_eq!(
        group.applied[2],
        vec![Op(1)],
        "the backup caught up by retransmission"
    );
}

#[test]
fn given_a_silent_primary_when_the_heartbeat_times_out_should_elect_the_next_keeping_commits() {
    let mut group = Group::new(3);
    group.request(0, 7, 1).unwrap();
    group.isolated[0] = true;
    group.tick(40);
    let primary = group.replica(1);
    assert!(primary.is_primary(), "replica 1 leads view 1");
    assert_eq!(primary.view(), View(1));
    assert!(
        primary.head() >= Op(1),
        "the committed op survived the view change"
    );
    group.request(1, 7, 2).unwrap();
    assert_eq!(
        group.replies.last(),
        Some(&(ClientId(7), RequestNumber(2), Op(2)))
    );
}

#[test]
fn given_a_restarted_primary_when_recovering_should_never_resume_leading() {
    let mut group = Group::new(3);
    group.request(0, 7, 1).unwrap();
    group.tick(3);
    group.restart(0, 99);
    assert_eq!(group.replica(0).status(), Status::Recovering);
    assert!(matches!(
        group.request(0, 7, 2),
        Err(NotAdmitted::NotPrimary { .. })
    ));
    group.tick(60);
    let restarted = group.replica(0);
    assert!(
        restarted.view() > View(0) || restarted.status() != Status::Normal,
        "it may lead only a later view, never the one it held"
    );
}

#[test]
fn given_a_damaged_journal_entry_when_booting_should_keep_the_sound_prefix_and_be_uncertain() {
    let mut group = Group::new(3);
    for number in 1..=3 {
        group.request(0, 7, number).unwrap();
    }
    let mut durable = group.journals[1].clone();
    assert_eq!(durable.entries.len(), 3);
    durable.entries[1].body = [&durable.entries[1].body[..], &[0xA5]].concat().into();
    let replica = VsrReplica::boot(1, 3, TIMING, durable, 5);
    assert_eq!(
        replica.head(),
        Op(1),
        "entries from the damaged one on are cut"
    );
    assert!(
        replica.is_uncertain(),
        "it may have acknowledged what it lost"
    );
    assert_eq!(replica.status(), Status::Recovering);
}

#[test]
fn given_an_uncertain_replica_when_its_probes_run_out_should_offer_its_log_only_flagged() {
    let mut durable = Durable::default();
    let request = Request {
        client: ClientId(7),
        number: RequestNumber(1),
        body: vec![1].into(),
    };
    let mut entry = message::Entry::new(Op(1), View(0), 0, request, 1);
    entry.body = [&entry.body[..], &[0xA5]].concat().into();
    durable.entries.push(entry);
    let mut replica = VsrReplica::boot(1, 3, TIMING, durable, 5);
    for _ in 0..200 {
        let actions = replica.on_tick();
        assert!(
            !actions.iter().any(|a| matches!(
                a,
                Action::Send(Envelope {
                    message: Message::DoViewChange {
                        uncertain: false,
                        ..
                    },
                    ..
                })
            )),
            "an uncertain replica offers its log only flagged as uncertain"
        );
    }
    assert!(
        replica.is_uncertain(),
        "it stays uncertain until a view starts"
    );
}

#[test]
fn given_a_wiped_replica_when_only_the_primary_answers_should_not_adopt_its_view() {
    let mut group = Group::new(3);
    group.request(0, 7, 1).unwrap();
    group.tick(3);
    let blank = Durable {
        blank: true,
        ..Durable::default()
    };
    group.replicas[2] = Some(VsrReplica::boot(2, 3, TIMING, blank, 77));
    group.journals[2] = Durable::default();
    // Replica 1 is cut off: only the primary reports, short of the two
    // reports a blank replica of three needs.
    group.isolated[1] = true;
    group.tick(30);
    assert_eq!(
        group.replica(2).status(),
        Status::Recovering,
        "waits for both reports"
    );
    group.isolated[1] = false;
    group.tick(30);
    let replica = group.replica(2);
    assert_eq!(
        replica.status(),
        Status::Normal,
        "adopted once both peers reported"
    );
    assert!(!replica.is_uncertain());
    assert_eq!(replica.head(), Op(1), "and refilled the log");
}

const SMALL: Limits = Limits {
    checkpoint_interval: 4,
    checkpoint_bytes: u64::MAX,
    state_chunk_max: 20,
};

impl Group {
    fn with_limits(n: u8, limits: Limits) -> Group {
        let mut group = Group::new(n);
        for replica in &mut group.replicas {
            let taken = replica.take().expect("up");
            *replica = Some(taken.with_limits(limits));
        }
        group
    }
}

#[test]
fn given_a_checkpoint_interval_when_ops_commit_should_checkpoint_and_drop_the_journal_below() {
    let group = checkpointed_group(SMALL, 6, Op(4));
    for id in 0..3 {
        let replica = group.replica(id);
        assert!(
            replica.entry(Op(4)).is_some(),
            "the checkpoint's op is kept"
        );
        assert_eq!(replica.head(), Op(6));
        let journal = &group.journals[usize::from(id)];
        assert_eq!(journal.entries.len(), 2, "ops 5 and 6 above the checkpoint");
    }
}

#[test]
fn given_a_backup_behind_every_journal_when_it_returns_should_catch_up_by_state_transfer() {
    let mut group = Group::with_limits(3, SMALL);
    group.request(0, 7, 1).unwrap();
    group.tick(3);
    group.isolated[2] = true;
    for number in 2..=11 {
        group.request(0, 7, number).unwrap();
    }
    assert!(group.replica(0).checkpoint_op() >= Op(8));
    group.isolated[2] = false;
    group.tick(30);
    let backup = group.replica(2);
    assert_eq!(backup.head(), Op(11), "caught up");
    assert_eq!(backup.commit_min(), Op(11));
    assert!(
        backup.checkpoint_op() >= Op(8),
        "by installing a checkpoint"
    );
    assert_eq!(
        group.applied[2],
        (1..=11).map(Op).collect::<Vec<_>>(),
        "its state is every op's, in order (the transferred state, then repair)"
    );
    assert!(!backup.is_transferring());
    // The installed checkpoint survives a restart.
    group.restart(2, 42);
    assert_eq!(
        group.replica(2).commit_min(),
        group.replica(2).checkpoint_op()
    );
    group.tick(30);
    assert_eq!(group.replica(2).status(), Status::Normal);
    assert_eq!(group.replica(2).commit_min(), Op(11));
}

#[test]
fn given_a_retry_after_state_transfer_when_the_new_primary_answers_should_use_the_transferred_table()
 {
    let mut group = Group::with_limits(3, SMALL);
    group.isolated[2] = true;
    group.request(0, 5, 1).unwrap();
    for number in 1..=8 {
        group.request(0, 7, number).unwrap();
    }
    group.isolated[2] = false;
    group.tick(30);
    assert!(group.replica(2).checkpoint_op() >= Op(8));
    // Replica 0 goes away (1 leads view 1), comes back; then 1 goes away,
    // so 2, whose table came by transfer, leads view 2.
    group.isolated[0] = true;
    group.tick(80);
    group.isolated[0] = false;
    group.tick(20);
    group.isolated[1] = true;
    group.tick(80);
    let primary = 2;
    assert!(group.replica(primary).is_primary(), "2 leads");
    let before = group.replicas[usize::from(primary)]
        .as_ref()
        .expect("up")
        .head();
    // Client 5's only request committed at op 1, below the checkpoint
    // replica 2 installed: only the transferred table knows it.
    group.request(primary, 5, 1).unwrap();
    assert_eq!(
        group.replies.last(),
        Some(&(ClientId(5), RequestNumber(1), Op(1))),
        "the retry of a committed request is answered with its op"
    );
    assert_eq!(
        group.replica(primary).head(),
        before,
        "and not prepared again"
    );
}

fn blank() -> Durable {
    Durable {
        blank: true,
        ..Durable::default()
    }
}

#[test]
fn given_a_whole_roster_booting_blank_when_all_report_blank_should_start_a_new_group() {
    let mut group = Group::new(3);
    for id in 0..3u8 {
        group.journals[usize::from(id)] = blank();
        group.replicas[usize::from(id)] =
            Some(VsrReplica::boot(id, 3, TIMING, blank(), 50 + u64::from(id)));
    }
    assert_eq!(group.replica(0).status(), Status::Recovering);
    group.tick(20);
    for id in 0..3 {
        let replica = group.replica(id);
        assert_eq!(
            replica.status(),
            Status::Normal,
            "replica {id} started the group"
        );
        assert!(!replica.is_blank() && !replica.is_uncertain());
        assert_eq!(replica.view(), View(1), "its first primary is elected");
        assert!(
            !group.journals[usize::from(id)].blank,
            "the superblock marks it as started"
        );
    }
    assert!(matches!(
        group.request(0, 7, 1),
        Err(NotAdmitted::NotPrimary { view: View(1) })
    ));
    group.request(1, 7, 1).unwrap();
    assert_eq!(group.replies, vec![(ClientId(7), RequestNumber(1), Op(1))]);
}

#[test]
fn given_two_wiped_replicas_when_one_peer_holds_data_should_not_start_a_new_group() {
    let mut group = Group::new(3);
    group.request(0, 7, 1).unwrap();
    group.tick(3);
    for id in 1..3u8 {
        group.journals[usize::from(id)] = blank();
        group.replicas[usize::from(id)] =
            Some(VsrReplica::boot(id, 3, TIMING, blank(), 60 + u64::from(id)));
    }
    group.tick(40);
    for id in 1..3 {
        let replica = group.replica(id);
        assert_eq!(replica.status(), Status::Normal, "replica {id} joined");
        assert_eq!(
            replica.head(),
            Op(1),
            "with the group's history, not a new one"
        );
    }
}

#[test]
fn given_a_group_of_one_when_a_retry_arrives_right_after_a_restart_should_answer_from_the_journal()
{
    let mut group = Group::new(1);
    group.request(0, 7, 1).unwrap();
    group.restart(0, 9);
    assert_eq!(
        group.replica(0).status(),
        Status::Normal,
        "one replica serves at once"
    );
    // Before any tick: the journal is committed but not yet applied.
    group.request(0, 7, 1).unwrap();
    assert_eq!(
        group.replica(0).head(),
        Op(1),
        "the retry is not prepared again"
    );
    assert!(
        group
            .replies
            .iter()
            .all(|reply| *reply == (ClientId(7), RequestNumber(1), Op(1))),
        "every answer (re-applying the journal answers again) names op 1"
    );
}

#[test]
fn given_two_uncertain_replicas_of_three_when_every_replica_reports_should_elect_on_all_their_logs()
{
    let mut group = Group::new(3);
    for number in 1..=3 {
        group.request(0, 7, number).unwrap();
    }
    group.tick(3);
    // The whole group restarts; 0 and 1 find their last entry damaged.
    for id in 0..3u8 {
        let mut durable = group.journals[usize::from(id)].clone();
        if id < 2 {
            durable.entries[2].body = [&durable.entries[2].body[..], &[0xA5]].concat().into();
        }
        group.replicas[usize::from(id)] =
            Some(VsrReplica::boot(id, 3, TIMING, durable, 70 + u64::from(id)));
    }
    assert!(group.replica(0).is_uncertain() && group.replica(1).is_uncertain());
    // One certain DoViewChange is short of a quorum; once all three
    // reported, all count, and the certain log (head 3) wins.
    group.tick(200);
    for id in 0..3 {
        let replica = group.replica(id);
        assert_eq!(replica.status(), Status::Normal, "replica {id} is normal");
        assert!(!replica.is_uncertain(), "replica {id} is certain again");
        assert_eq!(replica.head(), Op(3), "nothing acknowledged was lost");
    }
    let primary = (0..3u8)
        .find(|&id| group.replica(id).is_primary())
        .expect("a primary");
    group.request(primary, 7, 4).unwrap();
    assert_eq!(
        group.replies.last(),
        Some(&(ClientId(7), RequestNumber(4), Op(4)))
    );
}

#[test]
fn given_a_byte_budget_when_op_bodies_reach_it_should_checkpoint_before_the_op_interval() {
    // One-byte bodies: the third applied op reaches a 3-byte budget long
    // before the 100-op interval.
    let limits = Limits {
        checkpoint_interval: 100,
        checkpoint_bytes: 3,
        state_chunk_max: 20,
    };
    checkpointed_group(limits, 7, Op(6));
}

/// A group of three with `limits` that committed `ops` requests, each
/// replica checkpointed at `at` with the journal below it gone.
fn checkpointed_group(limits: Limits, ops: u64, at: Op) -> Group {
    let mut group = Group::with_limits(3, limits);
    for number in 1..=ops {
        group.request(0, 7, number).unwrap();
    }
    group.tick(3);
    for id in 0..3 {
        let replica = group.replica(id);
        assert_eq!(replica.checkpoint_op(), at, "replica {id}");
        assert!(
            replica.entry(Op(at.0 - 1)).is_none(),
            "the journal below is gone"
        );
    }
    group
}

#[test]
fn given_ops_below_the_interval_when_a_checkpoint_is_asked_should_take_it_at_the_commit_point() {
    let mut group = Group::with_limits(3, SMALL);
    for number in 1..=3 {
        group.request(0, 7, number).unwrap();
    }
    group.tick(3);
    for id in 0..3u8 {
        assert_eq!(group.replica(id).checkpoint_op(), Op(0), "not due yet");
        let actions = group.replicas[usize::from(id)]
            .as_mut()
            .expect("up")
            .checkpoint_now();
        group.perform(id, actions);
        let replica = group.replica(id);
        assert_eq!(replica.checkpoint_op(), Op(3), "replica {id}");
        assert!(replica.entry(Op(2)).is_none(), "the journal below is gone");
        // Asked again with nothing applied above it: nothing to take.
        let again = group.replicas[usize::from(id)]
            .as_mut()
            .expect("up")
            .checkpoint_now();
        assert!(again.is_empty());
    }
    // The group goes on above the asked checkpoint.
    group.request(0, 7, 4).unwrap();
    group.tick(3);
    assert!((0..3).all(|id| group.replica(id).commit_min() == Op(4)));
}

/// Group commit: requests prepared together are journaled, synced once,
/// and only then acknowledged by the primary itself and committed.
#[test]
fn given_requests_prepared_together_when_synced_once_should_commit_them_in_order() {
    for n in [1, 3] {
        let mut group = Group::new(n);
        let primary = group.replicas[0].as_mut().expect("up");
        let mut prepared = Vec::new();
        for client in [7, 8, 9] {
            let request = Request {
                client: ClientId(client),
                number: RequestNumber(1),
                body: vec![client as u8].into(),
            };
            prepared.extend(primary.prepare_request(request, 1_000).expect("admitted"));
        }
        let journaled = prepared
            .iter()
            .filter(|a| matches!(a, Action::Journal(_)))
            .count();
        assert_eq!(journaled, 3, "n = {n}");
        assert!(
            !prepared
                .iter()
                .any(|a| matches!(a, Action::Sync | Action::Apply(_))),
            "nothing is synced or applied before the sync is asked for"
        );
        assert_eq!(
            primary.commit_max(),
            Op(0),
            "no commit without our own sync"
        );
        let synced = primary.sync_prepared();
        assert!(
            matches!(synced.first(), Some(Action::Sync)),
            "one sync first"
        );
        assert_eq!(
            synced.iter().filter(|a| matches!(a, Action::Sync)).count(),
            1
        );
        assert!(primary.sync_prepared().is_empty(), "nothing left to sync");
        group.perform(0, prepared);
        group.perform(0, synced);
        group.deliver();
        group.tick(3);
        assert_eq!(group.replica(0).commit_max(), Op(3), "n = {n}");
        let clients: Vec<u128> = group.replies.iter().map(|(c, _, _)| c.0).collect();
        assert_eq!(clients, vec![7, 8, 9], "answered in op order, n = {n}");
        for id in 0..n {
            assert_eq!(group.applied[usize::from(id)], vec![Op(1), Op(2), Op(3)]);
        }
    }
}

#[test]
#[should_panic(expected = "prepared requests are synced first")]
fn given_a_prepared_request_when_a_tick_comes_before_its_sync_should_panic() {
    let mut group = Group::new(3);
    let primary = group.replicas[0].as_mut().expect("up");
    let request = Request {
        client: ClientId(7),
        number: RequestNumber(1),
        body: vec![1].into(),
    };
    primary.prepare_request(request, 1_000).expect("admitted");
    primary.on_tick();
}
