//! Retries are applied once (binary protocol §7.4.2): a proxy between the
//! SDK and the server sends chosen request frames twice, byte for byte
//! (same client, session and request number), as a client retrying after a
//! lost reply would. Both replies must be identical and the effect must
//! happen once: one stream, every message stored once, one offset store.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use harness::sdk::{id, name, read_back, root_client};
use harness::{ServerOptions, TestServer, Workdir};
use iggy::prelude::*;
use protocol::header::{HEADER_SIZE, RequestHeader, frame_size};
use protocol::{CommandCode, Route, route};

/// What the proxy saw: commands it duplicated, and any reply pair that
/// differed.
#[derive(Default)]
struct Replayed {
    commands: BTreeSet<u32>,
    mismatches: Vec<String>,
    /// The `op` field (header offset 176) of each SendMessages reply: the
    /// partition group's op numbering.
    send_ops: Vec<u64>,
}

fn read_frame(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut frame = vec![0u8; HEADER_SIZE];
    stream.read_exact(&mut frame).ok()?;
    let size = frame_size(&frame).map_or(HEADER_SIZE, |s| s as usize);
    frame.resize(size.max(HEADER_SIZE), 0);
    stream.read_exact(&mut frame[HEADER_SIZE..]).ok()?;
    Some(frame)
}

/// A lock-step proxy that sends every frame of `duplicated` twice.
fn replaying_proxy(
    upstream: SocketAddr,
    duplicated: &'static [CommandCode],
) -> (SocketAddr, Arc<Mutex<Replayed>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Replayed::default()));
    let record = seen.clone();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { return };
            let record = record.clone();
            std::thread::spawn(move || {
                let mut server = TcpStream::connect(upstream).unwrap();
                while let Some(request) = read_frame(&mut client) {
                    let code = RequestHeader::decode(&request)
                        .ok()
                        .and_then(|header| match route(&header) {
                            Route::Command(code) => Some(code),
                            _ => None,
                        });
                    server.write_all(&request).unwrap();
                    let Some(reply) = read_frame(&mut server) else {
                        break;
                    };
                    if let Some(code) = code.filter(|c| duplicated.contains(c)) {
                        server.write_all(&request).unwrap();
                        let again = read_frame(&mut server).expect("a reply to the retry");
                        let mut record = record.lock().unwrap();
                        record.commands.insert(code as u32);
                        if code == CommandCode::SendMessages {
                            let op = u64::from_le_bytes(reply[176..184].try_into().unwrap());
                            record.send_ops.push(op);
                        }
                        if again != reply {
                            record.mismatches.push(format!(
                                "{code:?}: first reply {:?}, retry {:?}",
                                &reply[HEADER_SIZE..],
                                &again[HEADER_SIZE..]
                            ));
                        }
                    }
                    if client.write_all(&reply).is_err() {
                        break;
                    }
                }
                let _ = client.shutdown(Shutdown::Both);
            });
        }
    });
    (addr, seen)
}

#[tokio::test]
async fn given_retried_writes_when_sent_twice_should_apply_once_with_identical_replies() {
    const DUPLICATED: &[CommandCode] = &[
        CommandCode::CreateStream,
        CommandCode::CreateTopic,
        CommandCode::SendMessages,
        CommandCode::StoreConsumerOffset,
    ];
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &ServerOptions::default());
    let (proxy, seen) = replaying_proxy(server.tcp(), DUPLICATED);
    let client = root_client(proxy).await;
    client.create_stream("dup").await.unwrap();
    client
        .create_topic(&name("dup"), "t", &TopicCreateOptions::default())
        .await
        .unwrap();
    for batch in 0..3u32 {
        let mut messages: Vec<IggyMessage> = (0..10)
            .map(|i| {
                IggyMessage::builder()
                    .payload(format!("m{}", batch * 10 + i).into_bytes().into())
                    .build()
                    .unwrap()
            })
            .collect();
        client
            .send_messages(
                &name("dup"),
                &name("t"),
                &Partitioning::partition_id(0),
                &mut messages,
            )
            .await
            .unwrap();
    }
    let consumer = Consumer::new(id(3));
    client
        .store_consumer_offset(&consumer, &name("dup"), &name("t"), Some(0), 7)
        .await
        .unwrap();

    let direct = root_client(server.tcp()).await;
    let streams = direct.get_streams().await.unwrap();
    assert_eq!(
        streams.iter().filter(|s| s.name == "dup").count(),
        1,
        "the stream was created once"
    );
    let polled = read_back(&direct, "dup", "t", 0, PollingStrategy::offset(0), 100).await;
    let payloads: Vec<String> = polled
        .messages
        .iter()
        .map(|m| String::from_utf8(m.payload.to_vec()).unwrap())
        .collect();
    let expected: Vec<String> = (0..30).map(|i| format!("m{i}")).collect();
    assert_eq!(payloads, expected, "every message stored exactly once");
    let stored = direct
        .get_consumer_offset(&consumer, &name("dup"), &name("t"), Some(0))
        .await
        .unwrap()
        .expect("the offset was stored");
    assert_eq!(stored.stored_offset, 7);

    let seen = seen.lock().unwrap();
    assert!(seen.mismatches.is_empty(), "{:#?}", seen.mismatches);
    let all: BTreeSet<u32> = DUPLICATED.iter().map(|c| *c as u32).collect();
    assert_eq!(seen.commands, all, "every kind of write was retried");
    assert_eq!(seen.send_ops.len(), 3);
    assert!(
        seen.send_ops.windows(2).all(|w| w[0] < w[1]) && seen.send_ops[0] > 0,
        "sends are numbered by their partition's group: {:?}",
        seen.send_ops
    );
}
