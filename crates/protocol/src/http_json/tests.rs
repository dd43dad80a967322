use super::*;
use crate::batch::{BatchHeader, Frames, Verify, validate_record};

#[test]
fn a_send_body_becomes_a_valid_batch_record() {
    let body = br#"{"partitioning": {"kind": "partition_id", "value": "AgAAAA=="},
        "messages": [
          {"id": 0, "payload": "aGVsbG8="},
          {"id": "0196a8d2-7c3e-7b6a-9a1e-3f2b1c0d4e5f", "payload": "d29ybGQ=",
           "user_headers": [{"key": {"kind": "string", "value": "a2V5XzE="},
                             "value": {"kind": "int32", "value": "KgAAAA=="}}]}]}"#;
    let batch = decode_send_body(body, 77, || 9).unwrap();
    assert_eq!(batch.target, SendTarget::PartitionId(2));
    assert_eq!(batch.messages, 2);
    let header = validate_record(&batch.record, Verify::Checksums).unwrap();
    assert_eq!(header.message_count, 2);
    assert_eq!(
        BatchHeader::read(&batch.record).unwrap().origin_timestamp,
        77
    );
    let frames: Vec<_> = Frames::new(&batch.record[crate::batch::BATCH_HEADER_SIZE..])
        .map(|f| f.unwrap().1)
        .collect();
    assert_eq!(frames[0].id(), 9, "id 0 is replaced");
    assert_eq!(frames[1].id(), 0x0196a8d2_7c3e_7b6a_9a1e_3f2b1c0d4e5f);
    assert_eq!(frames[1].payload(), b"world");
    assert_eq!(frames[1].user_headers().len(), 5 + 5 + 5 + 4);
}

#[test]
fn bad_send_bodies_are_refused_with_their_reason() {
    let refuse = |body: &str| decode_send_body(body.as_bytes(), 0, || 1).unwrap_err();
    assert!(matches!(refuse("{"), BodyError::Json { data: false, .. }));
    assert!(matches!(
        refuse(r#"{"partitioning": 5, "messages": []}"#),
        BodyError::Json { data: true, .. }
    ));
    assert_eq!(
        refuse(r#"{"partitioning": {"kind": "balanced"}, "messages": []}"#),
        BodyError::Code(ErrorCode::InvalidMessagesCount)
    );
    assert_eq!(
        refuse(
            r#"{"partitioning": {"kind": "partition_id", "value": "AA=="}, "messages": [{"payload": "YQ=="}]}"#
        ),
        BodyError::Code(ErrorCode::InvalidKeyValueLength)
    );
    assert_eq!(
        refuse(r#"{"partitioning": {"kind": "balanced"}, "messages": [{"payload": ""}]}"#),
        BodyError::Code(ErrorCode::EmptyMessagePayload)
    );
    assert_eq!(
        refuse(
            r#"{"partitioning": {"kind": "balanced"}, "messages": [{"payload": "YQ==",
                "user_headers": [{"key": {"kind": "string", "value": ""}, "value": {"kind": "raw", "value": "YQ=="}}]}]}"#
        ),
        BodyError::Code(ErrorCode::InvalidKeyValueLength)
    );
    assert!(matches!(
        refuse(r#"{"partitioning": {"kind": "sideways"}, "messages": [{"payload": "YQ=="}]}"#),
        BodyError::Invalid(_)
    ));
}

#[test]
fn permissions_json_maps_ids_and_refuses_bad_keys() {
    let json = r#"{"global": {"read_streams": true},
                   "streams": {"3": {"send_messages": true, "topics": {"1": {"read_topic": true}}}}}"#;
    let parsed: PermissionsJson = serde_json::from_str(json).unwrap();
    let permissions = parsed.into_permissions().unwrap();
    assert!(permissions.global.read_streams);
    assert_eq!(permissions.streams[0].stream_id, 3);
    assert!(permissions.streams[0].topics[0].read_topic);
    let bad: PermissionsJson = serde_json::from_str(r#"{"streams": {"x": {}}}"#).unwrap();
    assert!(bad.into_permissions().is_err());
}

#[test]
fn an_escaped_payload_is_unescaped_before_it_is_decoded() {
    // "////" is [0xff; 3] in base64; a JSON encoder may write "/" as "\/".
    let body = br#"{"partitioning": {"kind": "partition_id", "value": "AAAAAA=="},
        "messages": [{"payload": "\/\/\/\/"}, {"payload": "////"}]}"#;
    let batch = decode_send_body(body, 1, || 3).unwrap();
    let frames: Vec<_> = Frames::new(&batch.record[crate::batch::BATCH_HEADER_SIZE..])
        .map(|f| f.unwrap().1)
        .collect();
    assert_eq!(frames[0].payload(), &[0xff; 3]);
    assert_eq!(frames[1].payload(), &[0xff; 3]);
}
