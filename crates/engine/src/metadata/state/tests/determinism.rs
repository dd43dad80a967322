//! Determinism and snapshot tests: a seeded random log (valid and invalid
//! operations mixed) applied to independent replicas — one fed the ops
//! directly, one fed them through the journal encoding, one restored from a
//! snapshot half-way — must end in byte-identical snapshots.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::*;
use crate::metadata::ids::PartitionId;
use crate::metadata::permissions::{GlobalPermissions, StreamPermissions};
use crate::metadata::topic::option_value::{OptionEntry, OptionValue};

const NAMES: [&str; 4] = ["alpha", "beta", "gamma", "0"];

fn pick_ident(rng: &mut StdRng) -> Ident {
    if rng.random_bool(0.5) {
        Ident::Id(rng.random_range(0..4))
    } else {
        Ident::Name(NAMES[rng.random_range(0..NAMES.len())].to_owned())
    }
}

fn pick_name(rng: &mut StdRng) -> String {
    NAMES[rng.random_range(0..NAMES.len())].to_owned()
}

fn random_permissions(rng: &mut StdRng) -> Option<Permissions> {
    rng.random_bool(0.7).then(|| {
        let global = GlobalPermissions {
            manage_streams: rng.random(),
            read_topics: rng.random(),
            ..Default::default()
        };
        let stream = StreamPermissions {
            manage_topics: rng.random(),
            ..Default::default()
        };
        Permissions {
            global,
            streams: [(crate::metadata::StreamId(0), stream)].into(),
        }
    })
}

fn random_resource_op(rng: &mut StdRng) -> OpKind {
    let (s, t) = (pick_ident(rng), pick_ident(rng));
    match rng.random_range(0..14) {
        0 | 1 => OpKind::CreateStream {
            name: pick_name(rng),
        },
        2 => OpKind::UpdateStream {
            stream: s,
            name: pick_name(rng),
        },
        3 => OpKind::DeleteStream { stream: s },
        4 => OpKind::PurgeStream { stream: s },
        5 | 6 => {
            let options = vec![OptionEntry::new(
                "segment_size",
                OptionValue::U64(rng.random_range(0..3) << 20),
            )];
            OpKind::CreateTopic {
                stream: s,
                name: pick_name(rng),
                partitions_count: rng.random_range(0..4),
                options,
            }
        }
        7 => OpKind::UpdateTopic {
            stream: s,
            topic: t,
            name: pick_name(rng),
            options: vec![],
        },
        8 => OpKind::DeleteTopic {
            stream: s,
            topic: t,
        },
        9 => OpKind::CreatePartitions {
            stream: s,
            topic: t,
            count: rng.random_range(0..3),
        },
        10 => OpKind::DeletePartitions {
            stream: s,
            topic: t,
            count: rng.random_range(0..3),
        },
        11 => OpKind::DeleteSegments {
            stream: s,
            topic: t,
            partition: PartitionId(rng.random_range(0..3)),
            count: 1,
        },
        12 => OpKind::CreateConsumerGroup {
            stream: s,
            topic: t,
            name: pick_name(rng),
        },
        _ => OpKind::DeleteConsumerGroup {
            stream: s,
            topic: t,
            group: pick_ident(rng),
        },
    }
}

fn random_account_op(rng: &mut StdRng) -> OpKind {
    let client = ClientId(rng.random_range(0..4));
    match rng.random_range(0..13) {
        0 => OpKind::CreateUser {
            username: format!("user-{}", pick_name(rng)),
            password_hash: "h".into(),
            status: UserStatus::Active,
            permissions: random_permissions(rng),
        },
        1 => OpKind::DeleteUser {
            user: pick_ident(rng),
        },
        2 => OpKind::UpdatePermissions {
            user: pick_ident(rng),
            permissions: random_permissions(rng),
        },
        3 => OpKind::CreatePersonalAccessToken {
            name: pick_name(rng).repeat(2),
            token_hash: format!("{}", rng.random::<u32>()),
            expires_at_us: rng.random_bool(0.5).then(|| rng.random_range(0..2_000)),
            max_tokens_per_user: 3,
        },
        4 => OpKind::DeleteExpiredPersonalAccessTokens,
        5 | 6 => OpKind::RegisterClient {
            client,
            user: UserId(rng.random_range(0..3)),
            transport: Transport::Tcp,
            address: "a".into(),
            node: rng.random_bool(0.5).then_some(1),
        },
        7 => OpKind::UnregisterClient { client },
        11 | 12 => OpKind::CompleteRevocation {
            stream: pick_ident(rng),
            topic: pick_ident(rng),
            group: pick_ident(rng),
            partition: PartitionId(rng.random_range(0..4)),
        },
        8 | 9 => {
            let (stream, topic, group) = (pick_ident(rng), pick_ident(rng), pick_ident(rng));
            let in_flight = (0..rng.random_range(0..3))
                .map(|_| PartitionId(rng.random_range(0..4)))
                .collect();
            OpKind::JoinConsumerGroup {
                stream,
                topic,
                group,
                client,
                in_flight,
            }
        }
        _ => {
            let (stream, topic, group) = (pick_ident(rng), pick_ident(rng), pick_ident(rng));
            OpKind::LeaveConsumerGroup {
                stream,
                topic,
                group,
                client,
            }
        }
    }
}

fn random_log(seed: u64, length: usize) -> Vec<MetadataOp> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..length)
        .map(|index| {
            let kind = if rng.random_bool(0.6) {
                random_resource_op(&mut rng)
            } else {
                random_account_op(&mut rng)
            };
            let actor = UserId(if rng.random_bool(0.8) {
                0
            } else {
                rng.random_range(1..3)
            });
            MetadataOp {
                timestamp_us: 1_000 + index as u64,
                actor,
                kind,
            }
        })
        .collect()
}

fn snapshot(state: &MetadataState) -> Vec<u8> {
    let mut out = Vec::new();
    state.encode_snapshot(&mut out);
    out
}

fn bootstrapped() -> MetadataState {
    Harness::new().state
}

#[test]
fn given_same_random_log_when_applied_on_three_replicas_should_end_in_equal_snapshots() {
    for seed in 0..8 {
        let log = random_log(seed, 400);
        let (mut direct, mut journaled) = (bootstrapped(), bootstrapped());
        let mut restored = None;
        let mut successes = 0;
        for (index, op) in log.iter().enumerate() {
            let outcome = direct.apply(op);
            successes += usize::from(outcome.is_ok());
            let mut bytes = Vec::new();
            op.encode(&mut bytes);
            let replayed = MetadataOp::decode(&bytes).expect("journal round trip");
            assert_eq!(
                journaled.apply(&replayed),
                outcome,
                "seed {seed} op {index}"
            );
            if index == log.len() / 2 {
                restored =
                    Some(MetadataState::decode_snapshot(&snapshot(&direct)).expect("restore"));
            } else if let Some(state) = restored.as_mut() {
                assert_eq!(
                    state.apply(op),
                    outcome,
                    "seed {seed} op {index} after restore"
                );
            }
        }
        assert!(
            successes > 50,
            "the log exercises real changes (seed {seed}: {successes})"
        );
        let expected = snapshot(&direct);
        assert_eq!(snapshot(&journaled), expected);
        assert_eq!(snapshot(&restored.expect("restored half-way")), expected);
    }
}

#[test]
fn given_rich_state_when_round_tripping_snapshot_should_rebuild_equal_state() {
    let mut h = Harness::new();
    h.ok(create_stream("s"));
    let options = vec![OptionEntry::new(
        "max_topic_size",
        OptionValue::String("2 GiB".into()),
    )];
    h.ok(OpKind::CreateTopic {
        stream: id(0),
        name: "t".into(),
        partitions_count: 3,
        options,
    });
    h.ok(OpKind::CreateConsumerGroup {
        stream: id(0),
        topic: id(0),
        name: "g".into(),
    });
    h.ok(create_user(
        "alice",
        random_permissions(&mut StdRng::seed_from_u64(3)),
    ));
    h.ok(OpKind::CreatePersonalAccessToken {
        name: "tok".into(),
        token_hash: "abc".into(),
        expires_at_us: Some(u64::MAX - 1),
        max_tokens_per_user: 10,
    });
    h.register(5, UserId(1));
    h.ok(OpKind::JoinConsumerGroup {
        stream: id(0),
        topic: id(0),
        group: id(0),
        client: ClientId(5),
        in_flight: vec![],
    });
    h.register(6, UserId(1));
    h.ok(OpKind::JoinConsumerGroup {
        stream: id(0),
        topic: id(0),
        group: id(0),
        client: ClientId(6),
        in_flight: vec![PartitionId(2)],
    });
    let group = h.state.find_group(&id(0), &id(0), &id(0)).expect("group");
    assert_eq!(group.pending_revocations().count(), 1);
    h.ok(OpKind::PurgeTopic {
        stream: id(0),
        topic: id(0),
    });

    let bytes = snapshot(&h.state);
    let decoded = MetadataState::decode_snapshot(&bytes).expect("valid snapshot");
    assert_eq!(decoded, h.state);
    assert_eq!(snapshot(&decoded), bytes);
    assert_eq!(
        MetadataState::decode_snapshot(&snapshot(&MetadataState::new())),
        Ok(MetadataState::new())
    );
}

#[test]
fn given_corrupt_snapshot_when_decoding_should_refuse_without_panicking() {
    let log = random_log(99, 300);
    let mut state = bootstrapped();
    for op in &log {
        let _ = state.apply(op);
    }
    let bytes = snapshot(&state);
    for cut in (0..bytes.len()).step_by(7) {
        assert!(
            MetadataState::decode_snapshot(&bytes[..cut]).is_err(),
            "truncated at {cut}"
        );
    }
    let mut rng = StdRng::seed_from_u64(5);
    for _ in 0..500 {
        let mut corrupt = bytes.clone();
        let at = rng.random_range(0..corrupt.len());
        corrupt[at] = rng.random();
        let _ = MetadataState::decode_snapshot(&corrupt);
    }
    let mut version = bytes;
    version[0] = 9;
    assert!(MetadataState::decode_snapshot(&version).is_err());
}

#[test]
fn given_a_version_1_snapshot_when_decoding_should_read_its_clients_without_a_node() {
    let mut h = Harness::new();
    h.register(7, UserId(0));
    let bytes = snapshot(&h.state);
    assert_eq!(&bytes[..2], &[2, 0], "written as version 2");
    assert_eq!(bytes.last(), Some(&0), "the client's node: none");
    // Version 1 is the same without the trailing node of each client
    // (clients come last).
    let mut v1 = bytes[..bytes.len() - 1].to_vec();
    v1[..2].copy_from_slice(&1u16.to_le_bytes());
    let decoded = MetadataState::decode_snapshot(&v1).expect("version 1 is read");
    assert_eq!(decoded, h.state);
    // A node round-trips in version 2.
    h.ok(OpKind::RegisterClient {
        client: ClientId(8),
        user: UserId(0),
        transport: Transport::Quic,
        address: "b".into(),
        node: Some(2),
    });
    let decoded = MetadataState::decode_snapshot(&snapshot(&h.state)).expect("valid");
    assert_eq!(decoded.client(ClientId(8)).map(|c| c.node), Some(Some(2)));
}
