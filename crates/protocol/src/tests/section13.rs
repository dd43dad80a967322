//! The minimum end-to-end exchange of spec section 13, byte for byte:
//! requests decode to the documented values, and replies we build are
//! identical to the documented dumps.

use super::dump;
use crate::batch::{BATCH_HEADER_SIZE, BatchHeader, Verify, slice_record, stamp_record};
use crate::checksum::xxh3_64;
use crate::codes::CommandCode;
use crate::error::ErrorCode;
use crate::header::{Command, EvictionReason, Operation, RequestHeader};
use crate::primitives::{ConsumerKind, Identifier, Partitioning, PollingStrategy};
use crate::reply::{ReplyBuilder, eviction};
use crate::requests::{
    CreateStream, CreateTopic, LoginCredentials, LoginRequest, PollMessages, SendMessages,
    StoreConsumerOffset,
};
use crate::responses::{
    ClusterMetadata, ClusterNode, CompressionAlgorithm, LoginReply, NodeRole, NodeStatus,
    PartitionInfo, PollReplyHeader, SendConfirmation, StreamInfo, TopicInfo,
    encode_send_confirmations, encode_stream_details, encode_topic_details,
};

const CLIENT: u128 = 0x7160_5f4e_3d2c_1b8a_7f4e_6d5b_4e9c_3a0f;
const CREATED_AT: u64 = 1_767_225_600_000_000;
const APPEND_TIME: u64 = 1_767_225_601_000_100;

const LOGIN_HEADER: &str = "
0000..002f: all 00
0030: 22 01 00 00 00 00 00 00 00 00 00 00 05 00 00 00
0040..007f: all 00
0080: 0f 3a 9c 4e 5b 6d 4e 7f 8a 1b 2c 3d 4e 5f 60 71
0090: 95 80 3f 2a 3c 20 de 8f 00 00 00 00 00 00 00 00
00a0: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
00b0: 01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
00c0..00ff: all 00
";

const LOGIN_BODY: &str = "
0000: 00 2c 00 00 08 72 75 73 74 2d 73 64 6b 06 30 2e
0010: 31 31 2e 30 04 69 67 67 79 04 69 67 67 79 00 00
0020: 00 00
";

const LOGIN_REPLY: &str = "
0000..002f: all 00
0030: 21 01 00 00 00 00 00 00 00 00 00 00 08 00 00 00
0040..007f: all 00
0080: 95 80 3f 2a 3c 20 de 8f 00 00 00 00 00 00 00 00
0090: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
00a0: 0f 3a 9c 4e 5b 6d 4e 7f 8a 1b 2c 3d 4e 5f 60 71
00b0: 07 00 00 00 00 00 00 00 07 00 00 00 00 00 00 00
00c0: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
00d0: 01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
00e0..00ff: all 00
0100: 00 00 00 00 00 00 00 00 07 00 00 00 00 00 00 00
0110: 00 2c 00 00 0c 30 2e 39 2e 30 2d 65 64 67 65 2e
0120: 35
";

const EVICTION_9: &str = "
0000..002f: all 00
0030: 00 01 00 00 00 00 00 00 00 00 00 00 0d 00 00 00
0040..007f: all 00
0080: 0f 3a 9c 4e 5b 6d 4e 7f 8a 1b 2c 3d 4e 5f 60 71
0090..00ef: all 00
00f0: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 09
";

const CLUSTER_METADATA_REQUEST: &str = "
0000..002f: all 00
0030: 00 01 00 00 00 00 00 00 00 00 00 00 05 00 00 00
0040..007f: all 00
0080: 0f 3a 9c 4e 5b 6d 4e 7f 8a 1b 2c 3d 4e 5f 60 71
0090: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
00a0: 00 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00
00b0: 02 00 00 00 00 00 00 00 07 00 00 00 00 00 00 00
00c0: 00 00 00 00 0c 00 00 00 00 00 00 00 00 00 00 00
00d0..00ff: all 00
";

const CLUSTER_METADATA_BODY: &str = "
0000: 0b 00 00 00 73 69 6e 67 6c 65 2d 6e 6f 64 65 01
0010: 00 00 00 09 00 00 00 69 67 67 79 2d 6e 6f 64 65
0020: 09 00 00 00 31 32 37 2e 30 2e 30 2e 31 9a 1f 90
0030: 1f b8 0b 9c 1f 00 00
";

const CREATE_STREAM_HEADER: &str = "
0000..002f: all 00
0030: 02 01 00 00 00 00 00 00 00 00 00 00 05 00 00 00
0040..007f: all 00
0080: 0f 3a 9c 4e 5b 6d 4e 7f 8a 1b 2c 3d 4e 5f 60 71
0090: 12 09 dd 95 56 7c b8 20 00 00 00 00 00 00 00 00
00a0: 00 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00
00b0: 80 00 00 00 00 00 00 00 07 00 00 00 00 00 00 00
00c0..00ff: all 00
";

const CREATE_STREAM_REPLY_BODY: &str = "
0000: 00 00 00 00 00 00 00 00 00 40 20 46 48 47 06 00
0010: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
0020: 00 00 00 00 01 73 00 00 00 00
";

const CREATE_TOPIC_BODY: &str = "
0000: 02 01 73 01 00 00 00 01 74 02 1a 00 00 00 63 6f
0010: 6e 73 75 6d 65 72 5f 6f 66 66 73 65 74 5f 64 75
0020: 72 61 62 69 6c 69 74 79 02 0a 00 00 00 72 65 70
0030: 6c 69 63 61 74 65 64 02 0a 00 00 00 64 75 72 61
0040: 62 69 6c 69 74 79 02 0a 00 00 00 72 65 70 6c 69
0050: 63 61 74 65 64
";

const CREATE_TOPIC_REPLY_BODY: &str = "
0000: 00 00 00 00 00 00 00 00 00 40 20 46 48 47 06 00
0010: 01 00 00 00 ff ff ff ff ff ff ff ff 01 ff ff ff
0020: ff ff ff ff ff 00 00 00 00 00 00 00 00 00 00 00
0030: 00 00 00 00 00 01 74 4c 00 00 00 02 1a 00 00 00
0040: 63 6f 6e 73 75 6d 65 72 5f 6f 66 66 73 65 74 5f
0050: 64 75 72 61 62 69 6c 69 74 79 02 0a 00 00 00 72
0060: 65 70 6c 69 63 61 74 65 64 02 0a 00 00 00 64 75
0070: 72 61 62 69 6c 69 74 79 02 0a 00 00 00 72 65 70
0080: 6c 69 63 61 74 65 64 00 00 00 00 00 00 00 00 00
0090: 40 20 46 48 47 06 00 00 00 00 00 00 00 00 00 00
00a0: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
00b0: 00 00 00
";

const SEND_HEADER: &str = "
0000..002f: all 00
0030: 7e 02 00 00 00 00 00 00 00 00 00 00 05 00 00 00
0040..007f: all 00
0080: 0f 3a 9c 4e 5b 6d 4e 7f 8a 1b 2c 3d 4e 5f 60 71
0090: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
00a0: 00 00 00 00 00 00 00 00 03 00 00 00 00 00 00 00
00b0: a0 00 00 00 00 00 00 00 07 00 00 00 00 00 00 00
00c0..00ff: all 00
";

const SEND_BODY: &str = "
0000: 10 00 00 00 02 01 73 02 01 74 02 04 00 00 00 00
0010: 02 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
0020: 00 00 00 00 00 00 00 00 00 00 00 00 40 82 2f 46
0030: 48 47 06 00 6a 01 00 00 00 00 00 00 8a d2 6e a9
0040: a1 f0 a4 d5 02 00 00 00 00 00 00 00 00 00 00 00
0050..010f: all 00
0110: 00 00 00 00 96 57 d4 fb 65 b8 0a d4 11 11 11 11
0120: 11 11 11 81 11 41 11 11 11 11 11 11 00 00 00 00
0130: 00 00 00 00 00 00 00 00 05 00 00 00 00 00 00 00
0140: 00 00 00 00 68 65 6c 6c 6f b6 62 70 d4 3e 96 de
0150: 66 22 22 22 22 22 22 22 82 22 42 22 22 22 22 22
0160: 22 01 00 00 00 05 00 00 00 00 00 00 00 05 00 00
0170: 00 00 00 00 00 00 00 00 00 77 6f 72 6c 64
";

const POLL_OFFSET_BODY: &str = "
0000: 01 01 04 01 00 00 00 02 01 73 02 01 74 01 00 00
0010: 00 00 01 00 00 00 00 00 00 00 00 0a 00 00 00 00
";

const POLL_OFFSET_REPLY_BODY: &str = "
0000: 00 00 00 00 01 00 00 00 00 00 00 00 02 00 00 00
0010: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
0020: a4 82 2f 46 48 47 06 00 40 82 2f 46 48 47 06 00
0030: 6a 01 00 00 00 00 00 00 41 a5 7a 89 5b 29 b8 13
0040: 02 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
0050..010f: all 00
0110: 96 57 d4 fb 65 b8 0a d4 11 11 11 11 11 11 11 81
0120: 11 41 11 11 11 11 11 11 00 00 00 00 00 00 00 00
0130: 00 00 00 00 05 00 00 00 00 00 00 00 00 00 00 00
0140: 68 65 6c 6c 6f b6 62 70 d4 3e 96 de 66 22 22 22
0150: 22 22 22 22 82 22 42 22 22 22 22 22 22 01 00 00
0160: 00 05 00 00 00 00 00 00 00 05 00 00 00 00 00 00
0170: 00 00 00 00 00 77 6f 72 6c 64
";

const STORE_OFFSET_BODY: &str = "
0000: 01 01 04 01 00 00 00 02 01 73 02 01 74 01 00 00
0010: 00 00 00 00 00 00 00 00 00 00 01
";

const POLL_NEXT_BODY: &str = "
0000: 01 01 04 01 00 00 00 02 01 73 02 01 74 01 00 00
0010: 00 00 05 00 00 00 00 00 00 00 00 0a 00 00 00 01
";

const POLL_NEXT_REPLY_BODY: &str = "
0000: 00 00 00 00 01 00 00 00 00 00 00 00 01 00 00 00
0010: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
0020: a4 82 2f 46 48 47 06 00 40 82 2f 46 48 47 06 00
0030: 35 01 00 00 00 00 00 00 7a e3 5e 9e 9b 45 79 8b
0040: 01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
0050..010f: all 00
0110: b6 62 70 d4 3e 96 de 66 22 22 22 22 22 22 22 82
0120: 22 42 22 22 22 22 22 22 01 00 00 00 05 00 00 00
0130: 00 00 00 00 05 00 00 00 00 00 00 00 00 00 00 00
0140: 77 6f 72 6c 64
";

const DENIAL: &str = "
0000..002f: all 00
0030: 00 01 00 00 00 00 00 00 00 00 00 00 08 00 00 00
0040..009f: all 00
00a0: 0f 3a 9c 4e 5b 6d 4e 7f 8a 1b 2c 3d 4e 5f 60 71
00b0: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
00c0: 00 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00
00d0: 02 00 00 00 00 00 00 00 28 00 00 00 00 00 00 00
00e0..00ff: all 00
";

fn login_request() -> RequestHeader {
    RequestHeader::decode(&dump(LOGIN_HEADER)).expect("the spec's login header decodes")
}

#[test]
fn given_spec_login_frame_when_decoding_should_read_root_credentials_and_checksum() {
    let (header_bytes, body) = (dump(LOGIN_HEADER), dump(LOGIN_BODY));
    let header = login_request();
    assert_eq!(
        (header.command, header.operation, header.size),
        (Command::Request, Operation::Register, 290)
    );
    assert_eq!(
        (header.client, header.session, header.request),
        (CLIENT, 0, 0)
    );
    assert_eq!(header.request_checksum, 0x8FDE_203C_2A3F_8095);
    assert_eq!(xxh3_64(&body), 0x8FDE_203C_2A3F_8095);
    assert_eq!(header.validate(header_bytes.len() + body.len()), Ok(()));
    assert!(header.checksum_matches(&body));
    let login = LoginRequest::decode(&body).unwrap();
    let LoginCredentials::Password { username, password } = login.credentials else {
        panic!("password shape")
    };
    assert_eq!(
        (username.as_str(), password, login.version.protocol_version),
        ("iggy", "iggy", 0x2C00)
    );
    let ours = RequestHeader::for_command(CommandCode::LoginRegister, CLIENT, 0, 0, &body);
    assert_eq!(ours.encode().to_vec(), header_bytes);
}

#[test]
fn given_spec_login_when_replying_should_match_reply_and_evictions_byte_for_byte() {
    let request = login_request();
    let mut payload = Vec::new();
    LoginReply {
        user_id: 0,
        session: 7,
        server_protocol_version: 0x2C00,
        server_version: "0.9.0-edge.5",
    }
    .encode(&mut payload);
    let frame = ReplyBuilder::for_request(&request)
        .op(7)
        .commit(7)
        .success(&payload);
    assert_eq!(frame, dump(LOGIN_REPLY));
    let rejected = eviction(&request, EvictionReason::InvalidCredentials);
    assert_eq!(rejected.to_vec(), dump(EVICTION_9));
    let mut expected_14 = dump(EVICTION_9);
    expected_14[0x90..0x98].copy_from_slice(&[0x00, 0x2c, 0, 0, 0x00, 0x2c, 0, 0]);
    expected_14[0xff] = 0x0e;
    assert_eq!(
        eviction(&request, EvictionReason::IncompatibleProtocol).to_vec(),
        expected_14
    );
}

#[test]
fn given_spec_cluster_metadata_exchange_when_encoding_should_match() {
    let header = RequestHeader::for_command(CommandCode::GetClusterMetadata, CLIENT, 7, 1, &[]);
    assert_eq!(header.encode().to_vec(), dump(CLUSTER_METADATA_REQUEST));
    let mut ping = dump(CLUSTER_METADATA_REQUEST);
    ping[0xc4] = 1;
    assert_eq!(
        RequestHeader::for_command(CommandCode::Ping, CLIENT, 7, 1, &[])
            .encode()
            .to_vec(),
        ping
    );
    let nodes = [ClusterNode {
        name: "iggy-node",
        ip: "127.0.0.1",
        tcp_port: 8090,
        quic_port: 8080,
        http_port: 3000,
        websocket_port: 8092,
        role: NodeRole::Leader,
        status: NodeStatus::Healthy,
    }];
    let mut body = Vec::new();
    ClusterMetadata {
        name: "single-node",
        nodes: &nodes,
    }
    .encode(&mut body);
    assert_eq!(body, dump(CLUSTER_METADATA_BODY));
}

#[test]
fn given_spec_create_stream_when_decoding_and_replying_should_match() {
    let body = [1u8, b's'];
    let header = RequestHeader::for_command(CommandCode::CreateStream, CLIENT, 7, 1, &body);
    assert_eq!(header.encode().to_vec(), dump(CREATE_STREAM_HEADER));
    assert_eq!(header.request_checksum, 0x20B8_7C56_95DD_0912);
    assert_eq!(CreateStream::decode(&body).unwrap().name.as_str(), "s");
    let stream = StreamInfo {
        id: 0,
        created_at: CREATED_AT,
        topics_count: 0,
        size_bytes: 0,
        messages_count: 0,
        name: "s",
        options: &[],
    };
    let mut payload = Vec::new();
    encode_stream_details(&mut payload, &stream, &[]);
    let frame = ReplyBuilder::for_request(&header)
        .op(8)
        .commit(8)
        .success(&payload);
    assert_eq!(&frame[256..], &dump(CREATE_STREAM_REPLY_BODY)[..]);
    assert_eq!(&frame[48..52], &0x12au32.to_le_bytes());
    let taken = ReplyBuilder::for_request(&header).rejection(ErrorCode::StreamNameAlreadyExists);
    assert_eq!(&taken[256..], &[1, 0, 0, 0, 0, 0, 0, 0, 0xf4, 0x03, 0, 0]);
}

#[test]
fn given_spec_create_topic_when_decoding_and_replying_should_match() {
    let body = dump(CREATE_TOPIC_BODY);
    let header = RequestHeader::for_command(CommandCode::CreateTopic, CLIENT, 7, 2, &body);
    assert_eq!(
        (header.size, header.request_checksum),
        (0x155, 0x420A_1751_AE53_C48D)
    );
    let topic = CreateTopic::decode(&body).unwrap();
    assert_eq!(
        (topic.stream_id, topic.partitions_count, topic.name.as_str()),
        (Identifier::Name("s"), 1, "t")
    );
    assert_eq!(
        topic
            .options
            .get("consumer_offset_durability")
            .unwrap()
            .value,
        b"replicated"
    );
    let info = TopicInfo {
        id: 0,
        created_at: CREATED_AT,
        partitions_count: 1,
        message_expiry: u64::MAX,
        compression: CompressionAlgorithm::None,
        max_topic_size: u64::MAX,
        size_bytes: 0,
        messages_count: 0,
        name: "t",
        options: topic.options.as_bytes(),
        derived_options: &[],
    };
    let partition = PartitionInfo {
        id: 0,
        created_at: CREATED_AT,
        segments_count: 0,
        current_offset: 0,
        size_bytes: 0,
        messages_count: 0,
    };
    let mut payload = Vec::new();
    encode_topic_details(&mut payload, &info, &[partition]);
    let frame = ReplyBuilder::for_request(&header)
        .op(9)
        .commit(9)
        .success(&payload);
    assert_eq!(&frame[256..], &dump(CREATE_TOPIC_REPLY_BODY)[..]);
}

fn spec_send() -> (RequestHeader, Vec<u8>) {
    let body = dump(SEND_BODY);
    (
        RequestHeader::for_command(CommandCode::SendMessages, CLIENT, 7, 3, &body),
        body,
    )
}

#[test]
fn given_spec_send_when_decoding_should_validate_batch_and_confirm() {
    let (header, body) = spec_send();
    assert_eq!(header.encode().to_vec(), dump(SEND_HEADER));
    let send = SendMessages::decode(&body).unwrap();
    assert_eq!(
        (send.stream_id, send.topic_id),
        (Identifier::Name("s"), Identifier::Name("t"))
    );
    assert_eq!(
        (send.partitioning, send.messages_count, send.batch.clone()),
        (Partitioning::PartitionId(0), 2, 0x14..382)
    );
    let batch = send.validate(&body, Verify::Checksums).unwrap();
    assert_eq!(
        (
            batch.batch_checksum,
            batch.batch_length,
            batch.origin_timestamp
        ),
        (0xD5A4_F0A1_A96E_D28A, 362, 1_767_225_601_000_000)
    );
    let mut payload = Vec::new();
    encode_send_confirmations(
        &mut payload,
        &[SendConfirmation {
            stream_id: 0,
            topic_id: 0,
            partition_id: 0,
            base_offset: 0,
        }],
    );
    let frame = ReplyBuilder::for_request(&header).success(&payload);
    assert_eq!(frame.len(), 0x118);
    assert_eq!(&frame[256..260], &[1, 0, 0, 0]);
    assert!(frame[260..].iter().all(|&b| b == 0));
}

fn stored_record() -> Vec<u8> {
    let (_, body) = spec_send();
    let mut record = body[0x14..].to_vec();
    stamp_record(&mut record, 0, 0, APPEND_TIME);
    record
}

#[test]
fn given_spec_polls_when_replying_should_serve_stored_and_sliced_records() {
    let (poll_body, next_body) = (dump(POLL_OFFSET_BODY), dump(POLL_NEXT_BODY));
    let poll = PollMessages::decode(&poll_body).unwrap();
    assert_eq!(
        (poll.consumer.kind, poll.consumer.id),
        (ConsumerKind::Consumer, Identifier::Numeric(1))
    );
    assert_eq!(
        (
            poll.partition_id,
            poll.strategy,
            poll.count,
            poll.auto_commit
        ),
        (Some(0), PollingStrategy::Offset(0), 10, false)
    );
    let record = stored_record();
    assert_eq!(
        BatchHeader::read(&record).unwrap().batch_checksum,
        0x13B8_295B_897A_A541
    );
    let mut body = Vec::new();
    PollReplyHeader {
        partition_id: 0,
        current_offset: 1,
        messages_count: 2,
    }
    .encode(&mut body);
    body.extend_from_slice(&record);
    assert_eq!(body, dump(POLL_OFFSET_REPLY_BODY));

    let next = PollMessages::decode(&next_body).unwrap();
    assert_eq!(
        (next.strategy, next.auto_commit),
        (PollingStrategy::Next, true)
    );
    let slice = slice_record(&record, 1, next.count).unwrap();
    assert_eq!(
        BatchHeader::read(&slice.header).unwrap().batch_checksum,
        0x8B79_459B_9E5E_E37A
    );
    let mut body = Vec::new();
    PollReplyHeader {
        partition_id: 0,
        current_offset: 1,
        messages_count: slice.count,
    }
    .encode(&mut body);
    body.extend_from_slice(&slice.header);
    body.extend_from_slice(&record[slice.frames.clone()]);
    assert_eq!(body, dump(POLL_NEXT_REPLY_BODY));
    assert_eq!(body.len() - 16 - BATCH_HEADER_SIZE, 53);
}

#[test]
fn given_spec_store_offset_and_denial_when_replying_should_match() {
    let body = dump(STORE_OFFSET_BODY);
    let store = StoreConsumerOffset::decode(&body).unwrap();
    assert_eq!((store.offset, store.target.partition_id), (0, Some(0)));
    let header = RequestHeader::for_command(CommandCode::StoreConsumerOffset, CLIENT, 7, 4, &body);
    assert_eq!(
        (
            header.size,
            header.request_checksum,
            header.operation.as_u8()
        ),
        (0x11b, 0, 0xa1)
    );
    let frame = ReplyBuilder::for_request(&header).success(&[]);
    assert_eq!((frame.len(), &frame[256..]), (0x104, &[0u8, 0, 0, 0][..]));

    let before_login = RequestHeader::for_command(CommandCode::GetStreams, CLIENT, 0, 1, &[]);
    let denial = ReplyBuilder::for_request(&before_login).denial(ErrorCode::Unauthenticated);
    assert_eq!(denial.to_vec(), dump(DENIAL));
}
