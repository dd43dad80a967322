use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::metadata::ids::Ident;
use crate::metadata::permissions::{
    GlobalPermissions, Permissions, StreamPermissions, TopicPermissions,
};
use crate::metadata::topic::option_value::{OptionEntry, OptionValue};
use crate::metadata::user::{Transport, UserStatus};
use crate::metadata::{StreamId, TopicId};

fn op(kind: OpKind) -> MetadataOp {
    MetadataOp {
        timestamp_us: 0x0102_0304_0506_0708,
        actor: UserId(9),
        kind,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn encoded(op: &MetadataOp) -> Vec<u8> {
    let mut out = Vec::new();
    op.encode(&mut out);
    out
}

fn sample_permissions() -> Permissions {
    let topics = BTreeMap::from([(
        TopicId(3),
        TopicPermissions::from_flags([true, false, false, true]),
    )]);
    let stream = StreamPermissions::from_flags([false, true, false, false, false, false], topics);
    let global = GlobalPermissions {
        read_users: true,
        ..GlobalPermissions::default()
    };
    Permissions {
        global,
        streams: BTreeMap::from([(StreamId(2), stream)]),
    }
}

/// One operation of every kind.
fn every_kind() -> Vec<OpKind> {
    let (s, t, g) = (
        Ident::Name("orders".into()),
        Ident::Id(1),
        Ident::Name("g".into()),
    );
    let options = vec![
        OptionEntry::new("durability", OptionValue::String("replicated".into())),
        OptionEntry::new("segment_size", OptionValue::U64(1 << 20)),
    ];
    vec![
        OpKind::CreateStream {
            name: "orders".into(),
        },
        OpKind::UpdateStream {
            stream: Ident::Id(0),
            name: "renamed".into(),
        },
        OpKind::DeleteStream { stream: s.clone() },
        OpKind::PurgeStream { stream: s.clone() },
        OpKind::CreateTopic {
            stream: s.clone(),
            name: "t".into(),
            partitions_count: 3,
            options,
        },
        OpKind::UpdateTopic {
            stream: s.clone(),
            topic: t.clone(),
            name: "t2".into(),
            options: vec![],
        },
        OpKind::DeleteTopic {
            stream: s.clone(),
            topic: t.clone(),
        },
        OpKind::PurgeTopic {
            stream: s.clone(),
            topic: t.clone(),
        },
        OpKind::CreatePartitions {
            stream: s.clone(),
            topic: t.clone(),
            count: 2,
        },
        OpKind::DeletePartitions {
            stream: s.clone(),
            topic: t.clone(),
            count: 1,
        },
        OpKind::DeleteSegments {
            stream: s.clone(),
            topic: t.clone(),
            partition: PartitionId(4),
            count: 5,
        },
        OpKind::CreateConsumerGroup {
            stream: s.clone(),
            topic: t.clone(),
            name: "g".into(),
        },
        OpKind::DeleteConsumerGroup {
            stream: s.clone(),
            topic: t.clone(),
            group: g.clone(),
        },
        OpKind::JoinConsumerGroup {
            stream: s.clone(),
            topic: t.clone(),
            group: g.clone(),
            client: ClientId(u128::MAX),
            in_flight: vec![PartitionId(2), PartitionId(0)],
        },
        OpKind::CompleteRevocation {
            stream: s.clone(),
            topic: t.clone(),
            group: g.clone(),
            partition: PartitionId(2),
        },
        OpKind::LeaveConsumerGroup {
            stream: s,
            topic: t,
            group: g,
            client: ClientId(7),
        },
        OpKind::CreateUser {
            username: "alice".into(),
            password_hash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".into(),
            status: UserStatus::Inactive,
            permissions: Some(sample_permissions()),
        },
        OpKind::UpdateUser {
            user: Ident::Id(1),
            username: Some("bob".into()),
            status: None,
        },
        OpKind::DeleteUser {
            user: Ident::Name("bob".into()),
        },
        OpKind::ChangePassword {
            user: Ident::Id(1),
            new_password_hash: "h2".into(),
        },
        OpKind::UpdatePermissions {
            user: Ident::Id(1),
            permissions: None,
        },
        OpKind::CreatePersonalAccessToken {
            name: "ci".into(),
            token_hash: "ab".repeat(32),
            expires_at_us: Some(99),
            max_tokens_per_user: 100,
        },
        OpKind::DeletePersonalAccessToken { name: "ci".into() },
        OpKind::DeleteExpiredPersonalAccessTokens,
        OpKind::RegisterClient {
            client: ClientId(1 << 112),
            user: UserId(1),
            transport: Transport::WebSocket,
            address: "127.0.0.1:5000".into(),
            node: None,
        },
        OpKind::RegisterClient {
            client: ClientId(1 << 112),
            user: UserId(1),
            transport: Transport::Quic,
            address: "127.0.0.1:5001".into(),
            node: Some(2),
        },
        OpKind::UnregisterClient {
            client: ClientId(1 << 112),
        },
    ]
}

#[test]
fn given_every_op_kind_when_round_tripping_should_decode_identically() {
    let kinds = every_kind();
    let codes: BTreeSet<u8> = kinds.iter().map(OpKind::code).collect();
    assert_eq!(
        codes.len(),
        kinds.len(),
        "one sample per kind, no duplicate codes"
    );
    for kind in kinds {
        let original = op(kind);
        let bytes = encoded(&original);
        assert_eq!(
            MetadataOp::decode(&bytes),
            Ok(original.clone()),
            "{original:?}"
        );
    }
}

#[test]
fn given_create_stream_when_encoding_should_match_golden_bytes() {
    let bytes = encoded(&op(OpKind::CreateStream { name: "s".into() }));
    assert_eq!(
        hex(&bytes),
        "01 01 08 07 06 05 04 03 02 01 09 00 00 00 01 00 73"
    );
}

#[test]
fn given_register_client_on_a_node_when_encoding_should_match_golden_bytes() {
    let kind = OpKind::RegisterClient {
        client: ClientId(0x0102),
        user: UserId(3),
        transport: Transport::Tcp,
        address: "a".into(),
        node: Some(2),
    };
    let expected = concat!(
        "01 3e 08 07 06 05 04 03 02 01 09 00 00 00 ",
        "02 01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 ",
        "03 00 00 00 01 01 00 61 02"
    );
    assert_eq!(hex(&encoded(&op(kind.clone()))), expected);
    // Without a node it is kind 60, as before nodes were named.
    let OpKind::RegisterClient {
        client,
        user,
        transport,
        address,
        ..
    } = kind
    else {
        unreachable!()
    };
    let legacy = OpKind::RegisterClient {
        client,
        user,
        transport,
        address,
        node: None,
    };
    assert_eq!(
        hex(&encoded(&op(legacy))),
        concat!(
            "01 3c 08 07 06 05 04 03 02 01 09 00 00 00 ",
            "02 01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 ",
            "03 00 00 00 01 01 00 61"
        )
    );
}

#[test]
fn given_join_group_when_encoding_should_match_golden_bytes() {
    let kind = OpKind::JoinConsumerGroup {
        stream: Ident::Id(5),
        topic: Ident::Name("t".into()),
        group: Ident::Id(0),
        client: ClientId(0x0102),
        in_flight: vec![PartitionId(3)],
    };
    let bytes = encoded(&MetadataOp {
        timestamp_us: 1,
        actor: UserId(0),
        kind,
    });
    let expected = concat!(
        "01 20 01 00 00 00 00 00 00 00 00 00 00 00 ",
        "01 05 00 00 00 ",
        "02 01 00 74 ",
        "01 00 00 00 00 ",
        "02 01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 ",
        "01 00 00 00 03 00 00 00"
    );
    assert_eq!(hex(&bytes), expected);
}

#[test]
fn given_create_user_with_permissions_when_encoding_should_match_golden_bytes() {
    let kind = OpKind::CreateUser {
        username: "al".into(),
        password_hash: "h".into(),
        status: UserStatus::Active,
        permissions: Some(sample_permissions()),
    };
    let bytes = encoded(&MetadataOp {
        timestamp_us: 0,
        actor: UserId(0),
        kind,
    });
    let expected = concat!(
        "01 28 00 00 00 00 00 00 00 00 00 00 00 00 ",
        "02 00 61 6c ",
        "01 00 68 ",
        "01 ",
        "01 ",
        "08 00 01 00 00 00 ",
        "02 00 00 00 02 01 00 00 00 ",
        "03 00 00 00 09"
    );
    assert_eq!(hex(&bytes), expected);
}

#[test]
fn given_corrupt_input_when_decoding_should_refuse_without_panicking() {
    let bytes = encoded(&op(every_kind().remove(4)));
    for cut in 0..bytes.len() {
        assert!(
            MetadataOp::decode(&bytes[..cut]).is_err(),
            "truncated at {cut}"
        );
    }
    let mut trailing = bytes.clone();
    trailing.push(0);
    assert_eq!(
        MetadataOp::decode(&trailing),
        Err(CodecError::TrailingBytes { count: 1 })
    );
    let mut version = bytes.clone();
    version[0] = 2;
    assert!(matches!(
        MetadataOp::decode(&version),
        Err(CodecError::UnsupportedVersion { .. })
    ));
    let mut unknown = bytes;
    unknown[1] = 99;
    assert!(matches!(
        MetadataOp::decode(&unknown),
        Err(CodecError::InvalidTag { .. })
    ));
}

#[test]
fn given_random_bytes_when_decoding_should_never_panic() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let valid: Vec<Vec<u8>> = every_kind().into_iter().map(|k| encoded(&op(k))).collect();
    for round in 0..2000 {
        let mut bytes = valid[round % valid.len()].clone();
        let flips = rng.random_range(1..4);
        for _ in 0..flips {
            let at = rng.random_range(0..bytes.len());
            bytes[at] = rng.random();
        }
        let _ = MetadataOp::decode(&bytes);
    }
}
