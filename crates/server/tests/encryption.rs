//! Encryption at rest (storage spec §14, issue 21) against the real binary
//! and the official SDK: no plaintext reaches the data files, every message
//! comes back after a restart (TCP and HTTP), another key or encryption
//! turned off over encrypted data is refused with the directory unchanged,
//! keys rotate across restarts, plaintext data from before encryption stays
//! readable, and the SDK's own client-side encryption still round-trips.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use harness::sdk::{id, name, root_client};
use harness::{ServerOptions, TestServer, Workdir, run_to_exit};
use iggy::prelude::*;

/// Base64 of bytes 0..32 and of bytes 31..=0.
const KEY_A: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
const KEY_B: &str = "Hx4dHBsaGRgXFhUUExIREA8ODQwLCgkIBwYFBAMCAQA=";
const PAYLOAD_MARKER: &str = "PLAINTEXT-PAYLOAD-MARKER";
const HEADER_MARKER: &str = "PLAINTEXT-HEADER-MARKER";

fn options(key: Option<&str>, previous: Option<&str>) -> ServerOptions {
    let mut options = ServerOptions::default();
    if let Some(key) = key {
        options = options
            .env("IGGY_SYSTEM_ENCRYPTION_ENABLED", "true")
            .env("IGGY_SYSTEM_ENCRYPTION_KEY", key);
    }
    if let Some(previous) = previous {
        options = options.env("IGGY_SYSTEM_ENCRYPTION_PREVIOUS_KEYS", previous);
    }
    options
}

fn message(i: u32) -> IggyMessage {
    let key = HeaderKey::try_from("tag").unwrap();
    let value = HeaderValue::try_from(format!("{HEADER_MARKER}-{i}").as_str()).unwrap();
    IggyMessage::builder()
        .payload(format!("{PAYLOAD_MARKER}-{i}").into_bytes().into())
        .user_headers(BTreeMap::from([(key, value)]))
        .build()
        .unwrap()
}

async fn create_topic(client: &IggyClient) {
    client.create_stream("s").await.unwrap();
    client
        .create_topic(&name("s"), "t", &TopicCreateOptions::default())
        .await
        .unwrap();
}

async fn send(client: &IggyClient, range: std::ops::Range<u32>) {
    let mut batch: Vec<IggyMessage> = range.map(message).collect();
    client
        .send_messages(
            &name("s"),
            &name("t"),
            &Partitioning::partition_id(0),
            &mut batch,
        )
        .await
        .unwrap();
}

async fn poll_all(client: &IggyClient) -> Vec<IggyMessage> {
    client
        .poll_messages(
            &name("s"),
            &name("t"),
            Some(0),
            &Consumer::new(id(1)),
            &PollingStrategy::offset(0),
            1_000,
            false,
        )
        .await
        .unwrap()
        .messages
}

/// Checks that the messages are numbers `0..count` with their payload and
/// header, in order.
fn assert_messages(messages: &[IggyMessage], count: u32) {
    assert_eq!(messages.len(), count as usize);
    for (i, m) in (0..count).zip(messages) {
        assert_eq!(m.header.offset, u64::from(i));
        assert_eq!(m.payload, format!("{PAYLOAD_MARKER}-{i}").as_bytes());
        let headers = m.user_headers_map().unwrap().unwrap();
        let tag = &headers[&HeaderKey::try_from("tag").unwrap()];
        assert_eq!(tag.as_str().unwrap(), format!("{HEADER_MARKER}-{i}"));
    }
}

/// Every file below `dir`, path to bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path.clone());
            }
            out.insert(
                path.clone(),
                if path.is_dir() {
                    Vec::new()
                } else {
                    std::fs::read(&path).unwrap()
                },
            );
        }
    }
    out
}

fn files_containing(dir: &Path, needle: &[u8]) -> Vec<PathBuf> {
    snapshot(dir)
        .into_iter()
        .filter(|(_, bytes)| bytes.windows(needle.len()).any(|w| w == needle))
        .map(|(path, _)| path)
        .collect()
}

/// Runs one server life: start, `body`, graceful stop.
async fn life<F, Fut>(workdir: &Workdir, options: &ServerOptions, body: F)
where
    F: FnOnce(IggyClient, std::net::SocketAddr) -> Fut,
    Fut: Future<Output = ()>,
{
    let server = TestServer::start(workdir, options);
    let client = root_client(server.tcp()).await;
    let http = server.address("http").expect("HTTP is served");
    body(client, http).await;
    let (status, _) = server.stop();
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn given_encryption_when_producing_should_store_no_plaintext_and_return_all_after_restart() {
    let workdir = Workdir::new();
    let encrypted = options(Some(KEY_A), None);
    life(&workdir, &encrypted, |client, _| async move {
        create_topic(&client).await;
        send(&client, 0..5).await;
        send(&client, 5..8).await;
        assert_messages(&poll_all(&client).await, 8);
    })
    .await;
    let data = workdir.data();
    assert!(data.join("encryption.check").exists());
    for marker in [PAYLOAD_MARKER, HEADER_MARKER, KEY_A] {
        let found = files_containing(&data, marker.as_bytes());
        assert!(found.is_empty(), "{marker} found in {found:?}");
    }
    assert!(
        !harness::output(workdir.path()).contains(KEY_A),
        "key logged"
    );

    life(&workdir, &encrypted, |client, http| async move {
        assert_messages(&poll_all(&client).await, 8);
        let over_http = HttpClient::new(&format!("http://{http}")).unwrap();
        over_http
            .login_user(harness::ROOT_USERNAME, harness::ROOT_PASSWORD)
            .await
            .unwrap();
        let polled = over_http
            .poll_messages(
                &name("s"),
                &name("t"),
                Some(0),
                &Consumer::new(id(2)),
                &PollingStrategy::offset(0),
                100,
                false,
            )
            .await
            .unwrap();
        assert_messages(&polled.messages, 8);
    })
    .await;
}

#[tokio::test]
async fn given_encrypted_data_when_booting_with_another_key_or_disabled_should_refuse_unchanged() {
    let workdir = Workdir::new();
    life(
        &workdir,
        &options(Some(KEY_A), None),
        |client, _| async move {
            create_topic(&client).await;
            send(&client, 0..3).await;
        },
    )
    .await;
    let before = snapshot(&workdir.data());
    let refusals = [
        (
            options(Some(KEY_B), None),
            "does not match the key recorded",
        ),
        (options(None, None), "system.encryption.enabled = false"),
        (options(Some("c2VjcmV0"), None), "system.encryption.key"),
        (options(Some(KEY_A), Some(KEY_B)), "matches no key recorded"),
        (options(Some(KEY_B), Some(KEY_B)), "configured twice"),
    ];
    for (refused, expected) in refusals {
        let (status, output) = run_to_exit(&workdir, &refused);
        assert!(!status.success(), "{output}");
        assert!(output.contains(expected), "{expected}: {output}");
        assert!(
            !output.contains(KEY_B) && !output.contains("c2VjcmV0"),
            "{output}"
        );
        assert_eq!(snapshot(&workdir.data()), before, "changed by {expected}");
    }
    life(
        &workdir,
        &options(Some(KEY_A), None),
        |client, _| async move {
            assert_messages(&poll_all(&client).await, 3);
        },
    )
    .await;
}

#[tokio::test]
async fn given_rotated_key_across_restarts_should_read_messages_of_both_keys() {
    let workdir = Workdir::new();
    life(
        &workdir,
        &options(Some(KEY_A), None),
        |client, _| async move {
            create_topic(&client).await;
            send(&client, 0..4).await;
        },
    )
    .await;
    let rotated = options(Some(KEY_B), Some(KEY_A));
    life(&workdir, &rotated, |client, _| async move {
        send(&client, 4..9).await;
        assert_messages(&poll_all(&client).await, 9);
    })
    .await;
    let check = std::fs::read(workdir.data().join("encryption.check")).unwrap();
    assert_eq!(check.len(), 16 + 2 * 40 + 8, "two keys recorded");
    let (status, output) = run_to_exit(&workdir, &options(Some(KEY_B), None));
    assert!(!status.success(), "the old key is still needed: {output}");
    life(&workdir, &rotated, |client, _| async move {
        assert_messages(&poll_all(&client).await, 9);
    })
    .await;
    assert!(files_containing(&workdir.data(), PAYLOAD_MARKER.as_bytes()).is_empty());
}

#[tokio::test]
async fn given_plaintext_data_when_enabling_encryption_should_serve_old_and_new() {
    let workdir = Workdir::new();
    life(&workdir, &options(None, None), |client, _| async move {
        create_topic(&client).await;
        send(&client, 0..3).await;
    })
    .await;
    life(
        &workdir,
        &options(Some(KEY_A), None),
        |client, _| async move {
            send(&client, 3..6).await;
            assert_messages(&poll_all(&client).await, 6);
        },
    )
    .await;
    let still_plain = files_containing(&workdir.data(), format!("{PAYLOAD_MARKER}-2").as_bytes());
    assert_eq!(still_plain.len(), 1, "the old batch stays as it was");
    let sealed = files_containing(&workdir.data(), format!("{PAYLOAD_MARKER}-4").as_bytes());
    assert!(sealed.is_empty(), "{sealed:?}");
}

#[tokio::test]
async fn given_sdk_client_side_encryption_should_round_trip_through_an_encrypting_server() {
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &options(Some(KEY_A), None));
    let encryptor = Aes256GcmEncryptor::from_base64_key(KEY_B).unwrap();
    let client = IggyClient::builder()
        .with_encryptor(Arc::new(EncryptorKind::Aes256Gcm(encryptor)))
        .with_tcp()
        .with_server_address(server.tcp().to_string())
        .build()
        .unwrap();
    client.connect().await.unwrap();
    client
        .login_user(harness::ROOT_USERNAME, harness::ROOT_PASSWORD)
        .await
        .unwrap();
    create_topic(&client).await;
    send(&client, 0..4).await;
    assert_messages(&poll_all(&client).await, 4);
    let plain_reader = root_client(server.tcp()).await;
    let opaque = poll_all(&plain_reader).await;
    assert_eq!(opaque.len(), 4);
    assert!(
        !opaque[0]
            .payload
            .windows(PAYLOAD_MARKER.len())
            .any(|w| w == PAYLOAD_MARKER.as_bytes()),
        "the server returns the client's ciphertext, not plaintext"
    );
}

/// Raw SendMessages of `record` to partition 0 of s/t; returns the status.
fn raw_send(stream: &mut std::net::TcpStream, session: u64, request: u64, record: &[u8]) -> u32 {
    use protocol::primitives::{Identifier, Partitioning};
    let mut metadata = Vec::new();
    Identifier::Name("s").encode(&mut metadata);
    Identifier::Name("t").encode(&mut metadata);
    Partitioning::PartitionId(0).encode(&mut metadata);
    let count = protocol::batch::BatchHeader::read(record)
        .unwrap()
        .message_count;
    metadata.extend_from_slice(&count.to_le_bytes());
    let mut body = (metadata.len() as u32).to_le_bytes().to_vec();
    body.extend_from_slice(&metadata);
    body.extend_from_slice(record);
    let code = protocol::CommandCode::SendMessages;
    harness::raw::send(stream, code, session, request, &body);
    let (header, _) = harness::raw::read_frame(stream).unwrap();
    protocol::header::ReplyHeader::decode(&header)
        .unwrap()
        .status
}

/// Raw PollMessages of partition 0 of s/t from offset 0; returns the batch
/// records of the reply.
fn raw_poll(stream: &mut std::net::TcpStream, session: u64, request: u64) -> Vec<Vec<u8>> {
    let (status, records) = raw_poll_status(stream, session, request);
    assert_eq!(status, 0);
    records
}

/// `raw_poll`, with the reply's status (the records are empty unless 0).
fn raw_poll_status(
    stream: &mut std::net::TcpStream,
    session: u64,
    request: u64,
) -> (u32, Vec<Vec<u8>>) {
    use protocol::primitives::{Consumer, ConsumerKind, Identifier, PollingStrategy};
    let mut body = Vec::new();
    let consumer = Consumer {
        kind: ConsumerKind::Consumer,
        id: Identifier::Numeric(1),
    };
    consumer.encode(&mut body);
    Identifier::Name("s").encode(&mut body);
    Identifier::Name("t").encode(&mut body);
    protocol::primitives::put_optional_partition(&mut body, Some(0));
    PollingStrategy::Offset(0).encode(&mut body);
    body.extend_from_slice(&1_000u32.to_le_bytes());
    body.push(0);
    let code = protocol::CommandCode::PollMessages;
    harness::raw::send(stream, code, session, request, &body);
    let (header, reply) = harness::raw::read_frame(stream).unwrap();
    let status = protocol::header::ReplyHeader::decode(&header)
        .unwrap()
        .status;
    if status != 0 {
        return (status, Vec::new());
    }
    let mut records = Vec::new();
    let mut rest = &reply[protocol::responses::PollReplyHeader::SIZE..];
    while !rest.is_empty() {
        let len = protocol::batch::BatchHeader::read(rest)
            .unwrap()
            .batch_length as usize;
        records.push(rest[..len].to_vec());
        rest = &rest[len..];
    }
    (status, records)
}

/// The frames of records (everything after each batch header).
fn frames_of(records: &[Vec<u8>]) -> Vec<u8> {
    let header = protocol::batch::BATCH_HEADER_SIZE;
    records.iter().flat_map(|r| r[header..].to_vec()).collect()
}

/// A poll answered from the server's memory right after the send and one
/// answered from the segment files after a restart both return the frames
/// the producer sent, byte for byte (checksums included), in records that
/// verify and name no key; a batch with a wrong checksum is refused.
#[tokio::test]
async fn given_encryption_when_polling_from_memory_and_from_disk_should_return_the_producers_frames()
 {
    use protocol::batch::{Verify, build_record, validate_record};
    let workdir = Workdir::new();
    let encrypted = options(Some(KEY_A), None);
    let headers = b"\x01\x00\x00\x00k\x02\x03\x00\x00\x00abc";
    let produced = [
        build_record(
            1_000,
            &[(1, b"first payload", b""), (2, b"second", headers)],
        ),
        build_record(2_000, &[(3, PAYLOAD_MARKER.as_bytes(), headers)]),
    ];
    let check = |records: Vec<Vec<u8>>| {
        for record in &records {
            let header = validate_record(record, Verify::Checksums).unwrap();
            assert_eq!(header.key_id, 0, "served records name no key");
        }
        assert_eq!(frames_of(&records), frames_of(&produced));
    };
    let server = TestServer::start(&workdir, &encrypted);
    create_topic(&root_client(server.tcp()).await).await;
    let mut raw = harness::raw::connect(server.tcp());
    let session = harness::raw::login(&mut raw);
    for (request, record) in (1..).zip(&produced) {
        assert_eq!(raw_send(&mut raw, session, request, record), 0);
    }
    let mut wrong = build_record(3_000, &[(4, b"fourth", b"")]);
    let last = wrong.len() - 1;
    wrong[last] ^= 1;
    let refused = raw_send(&mut raw, session, 3, &wrong);
    assert_eq!(refused, protocol::ErrorCode::InvalidMessageChecksum as u32);
    check(raw_poll(&mut raw, session, 4));
    drop(raw);
    assert!(server.stop().0.success());
    assert!(files_containing(&workdir.data(), PAYLOAD_MARKER.as_bytes()).is_empty());

    let server = TestServer::start(&workdir, &encrypted);
    let mut raw = harness::raw::connect(server.tcp());
    let session = harness::raw::login(&mut raw);
    check(raw_poll(&mut raw, session, 1));
    drop(raw);
    assert!(server.stop().0.success());
}

/// Sealed frames read from disk are verified by opening them (their tags),
/// not by rehashing: a ciphertext byte changed on disk under a running
/// server fails the poll with CannotDecryptData (72) and serves nothing.
#[tokio::test]
async fn given_sealed_frame_changed_on_disk_when_polling_should_refuse_with_72() {
    use std::os::unix::fs::FileExt;
    let workdir = Workdir::new();
    let encrypted = options(Some(KEY_A), None);
    life(&workdir, &encrypted, |client, _| async move {
        create_topic(&client).await;
        send(&client, 0..3).await;
    })
    .await;
    let segment = snapshot(&workdir.data())
        .into_keys()
        .find(|path| {
            path.extension().is_some_and(|e| e == "log")
                && path.starts_with(workdir.data().join("streams"))
        })
        .expect("a segment file");
    let server = TestServer::start(&workdir, &encrypted);
    let mut raw = harness::raw::connect(server.tcp());
    let session = harness::raw::login(&mut raw);
    assert_eq!(raw_poll(&mut raw, session, 1).len(), 1, "served from disk");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&segment)
        .unwrap();
    let ciphertext = protocol::batch::BATCH_HEADER_SIZE + protocol::batch::MESSAGE_HEADER_SIZE + 20;
    let mut byte = [0u8; 1];
    std::fs::File::open(&segment)
        .unwrap()
        .read_exact_at(&mut byte, ciphertext as u64)
        .unwrap();
    file.write_all_at(&[byte[0] ^ 1], ciphertext as u64)
        .unwrap();
    let (status, records) = raw_poll_status(&mut raw, session, 2);
    assert_eq!(status, protocol::ErrorCode::CannotDecryptData as u32);
    assert!(records.is_empty());
    drop(raw);
    server.stop();
}
