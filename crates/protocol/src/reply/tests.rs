//! Reply frames read back the way SDK 0.11.0 reads them.

use super::*;
use crate::codes::CommandCode;
use crate::responses::LoginReply;

/// Mirrors the SDK's reply handling (iggy `vsr.rs`) with its public pieces:
/// command byte, size, status first, then result-section stripping decided
/// by the reply's operation.
fn sdk_read(frame: &[u8]) -> Result<Vec<u8>, u32> {
    let size = iggy_binary_protocol::read_size_field(frame).expect("header present") as usize;
    assert_eq!(size, frame.len(), "size covers the whole frame");
    match frame[60] {
        13 => {
            return Err(EvictionHeader::decode(frame)
                .expect("valid eviction")
                .reason
                .sdk_error()
                .as_u32());
        }
        8 => {}
        _ => return Err(3),
    }
    let header = ReplyHeader::decode(frame).expect("valid reply");
    if header.status != 0 {
        return Err(header.status);
    }
    let sdk_op: iggy_binary_protocol::Operation = bytemuck::checked::cast(frame[208]);
    let body = &frame[HEADER_SIZE..];
    let framed = sdk_op.is_result_framed()
        || (sdk_op == iggy_binary_protocol::Operation::Register && !body.is_empty());
    if !framed {
        return Ok(body.to_vec());
    }
    match iggy_binary_protocol::result_code(body) {
        Some(0) => Ok(body[iggy_binary_protocol::result_section_len(body).ok_or(3u32)?..].to_vec()),
        Some(code) => Err(code),
        None => Err(3),
    }
}

fn request(code: CommandCode, body: &[u8]) -> RequestHeader {
    RequestHeader::for_command(code, 0x1234, 7, 3, body)
}

#[test]
fn given_read_success_when_sdk_reads_should_get_the_raw_payload() {
    let frame = ReplyBuilder::for_request(&request(CommandCode::GetStreams, b""))
        .op(7)
        .success(b"records");
    assert_eq!(sdk_read(&frame), Ok(b"records".to_vec()));
    let header = ReplyHeader::decode(&frame).unwrap();
    assert_eq!(
        (header.operation, header.request, header.client, header.op),
        (Operation::NonReplicated, 3, 0x1234, 7)
    );
}

#[test]
fn given_metadata_success_when_sdk_reads_should_strip_the_result_section() {
    let req = request(CommandCode::CreateStream, b"\x01s");
    let frame = ReplyBuilder::for_request(&req)
        .op(8)
        .commit(8)
        .success(b"details");
    assert_eq!(&frame[HEADER_SIZE..HEADER_SIZE + 4], &[0, 0, 0, 0]);
    assert_eq!(sdk_read(&frame), Ok(b"details".to_vec()));
    let header = ReplyHeader::decode(&frame).unwrap();
    assert_eq!(header.request_checksum, req.request_checksum);
    let empty =
        ReplyBuilder::for_request(&request(CommandCode::StoreConsumerOffset, b"")).success(&[]);
    assert_eq!(empty.len(), HEADER_SIZE + 4);
    assert_eq!(sdk_read(&empty), Ok(vec![]));
}

#[test]
fn given_rejections_and_denials_when_sdk_reads_should_fail_with_the_code() {
    let req = request(CommandCode::CreateStream, b"\x01s");
    assert_eq!(
        sdk_read(&ReplyBuilder::for_request(&req).rejection(ErrorCode::StreamNameAlreadyExists)),
        Err(1012)
    );
    assert_eq!(
        sdk_read(&ReplyBuilder::for_request(&req).denial(ErrorCode::Unauthorized)),
        Err(41)
    );
    let poll = request(CommandCode::PollMessages, b"");
    assert_eq!(
        sdk_read(&ReplyBuilder::for_request(&poll).denial(ErrorCode::StreamIdNotFound)),
        Err(1009)
    );
}

#[test]
#[should_panic(expected = "would read as success")]
fn given_non_framed_operation_when_building_rejection_should_refuse() {
    let _ = ReplyBuilder::for_request(&request(CommandCode::SendMessages, b""))
        .rejection(ErrorCode::InvalidCommand);
}

#[test]
fn given_delete_segments_when_answering_under_68_should_be_result_framed() {
    let builder = ReplyBuilder::for_request(&request(CommandCode::DeleteSegments, b""))
        .operation(Operation::TruncatePartition);
    assert_eq!(sdk_read(&builder.success(&[])), Ok(vec![]));
    assert_eq!(
        sdk_read(&builder.rejection(ErrorCode::PartitionNotFound)),
        Err(3007)
    );
    let raw = ReplyBuilder::for_request(&request(CommandCode::DeleteSegments, b"")).success(&[]);
    assert_eq!(raw.len(), HEADER_SIZE);
}

#[test]
fn given_login_when_replying_should_frame_payload_and_transient_rejection() {
    let login = RequestHeader::for_command(CommandCode::LoginRegister, 0x99, 0, 0, b"body");
    let mut payload = Vec::new();
    LoginReply {
        user_id: 0,
        session: 7,
        server_protocol_version: 0x2C00,
        server_version: "x",
    }
    .encode(&mut payload);
    let frame = ReplyBuilder::for_request(&login)
        .op(7)
        .commit(7)
        .success(&payload);
    assert_eq!(sdk_read(&frame), Ok(payload));
    let transient = ReplyBuilder::for_request(&login).rejection(ErrorCode::TransientNotAccepted);
    assert_eq!(sdk_read(&transient), Err(58));
}

#[test]
fn given_evictions_when_sdk_reads_should_map_reasons() {
    let req = request(CommandCode::CreateStream, b"");
    assert_eq!(
        sdk_read(&eviction(&req, EvictionReason::NoSession)),
        Err(40)
    );
    assert_eq!(
        sdk_read(&eviction(&req, EvictionReason::InvalidCredentials)),
        Err(42)
    );
    let frame = eviction(&req, EvictionReason::IncompatibleProtocol);
    assert_eq!(sdk_read(&frame), Err(14003));
    let header = EvictionHeader::decode(&frame).unwrap();
    assert_eq!(
        (
            header.server_protocol_version,
            header.server_protocol_version_min,
            header.client
        ),
        (0x2C00, 0x2C00, 0x1234)
    );
}

#[test]
fn given_payload_length_when_building_success_header_should_count_the_prefix() {
    let builder = ReplyBuilder::for_request(&request(CommandCode::CreateTopic, b""));
    let header = ReplyHeader::decode(&builder.success_header(10)).unwrap();
    assert_eq!(header.size as usize, HEADER_SIZE + 4 + 10);
    let poll = ReplyBuilder::for_request(&request(CommandCode::PollMessages, b""));
    assert_eq!(
        ReplyHeader::decode(&poll.success_header(16)).unwrap().size as usize,
        HEADER_SIZE + 16
    );
}
