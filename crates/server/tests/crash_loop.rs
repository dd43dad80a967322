//! Repeated SIGKILL while a producer writes with `Persisted` durability:
//! after every restart each acknowledged message is present exactly once, in
//! order and byte-identical. (The long soak lives in the reliability suite;
//! this short version runs with every test run.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use harness::sdk::{id, name, root_client};
use harness::{ServerOptions, TestServer, Workdir};
use iggy::prelude::*;

const ROUNDS: u32 = 4;
const BATCH: u32 = 10;

fn numbered(n: u32) -> IggyMessage {
    IggyMessage::builder()
        .payload(format!("n{n:08}-payload").into_bytes().into())
        .build()
        .unwrap()
}

/// Every message number in the partition, in offset order.
async fn read_all(client: &IggyClient) -> Vec<u32> {
    let consumer = Consumer::new(id(1));
    let (mut next, mut out) = (0u64, Vec::new());
    loop {
        let polled = client
            .poll_messages(
                &name("c"),
                &name("t"),
                Some(0),
                &consumer,
                &PollingStrategy::offset(next),
                500,
                false,
            )
            .await
            .unwrap();
        let Some(last) = polled.messages.last() else {
            return out;
        };
        next = last.header.offset + 1;
        for m in &polled.messages {
            let text = std::str::from_utf8(&m.payload).unwrap();
            assert!(
                text.ends_with("-payload"),
                "corrupt payload served: {text:?}"
            );
            out.push(text[1..9].parse().unwrap());
        }
    }
}

#[tokio::test]
async fn given_producer_when_killed_repeatedly_should_keep_every_acknowledged_message() {
    let workdir = Workdir::new();
    let mut next_number = 0u32;
    let mut acknowledged: Vec<u32> = Vec::new();
    for round in 0..ROUNDS {
        let server = TestServer::start(&workdir, &ServerOptions::default());
        let client = root_client(server.tcp()).await;
        if round == 0 {
            client.create_stream("c").await.unwrap();
            let options = TopicCreateOptions {
                durability: Durability::Persisted,
                ..TopicCreateOptions::default()
            };
            client
                .create_topic(&name("c"), "t", &options)
                .await
                .unwrap();
        }
        let acked = Arc::new(Mutex::new(Vec::new()));
        let producer = {
            let acked = acked.clone();
            let start = next_number;
            tokio::spawn(async move {
                let mut n = start;
                loop {
                    let mut batch: Vec<IggyMessage> = (n..n + BATCH).map(numbered).collect();
                    let sent = client
                        .send_messages(
                            &name("c"),
                            &name("t"),
                            &Partitioning::partition_id(0),
                            &mut batch,
                        )
                        .await;
                    if sent.is_err() {
                        return;
                    }
                    acked.lock().unwrap().extend(n..n + BATCH);
                    n += BATCH;
                }
            })
        };
        tokio::time::sleep(Duration::from_millis(150 + 97 * u64::from(round))).await;
        unsafe { libc::kill(server.pid(), libc::SIGKILL) };
        // The SDK would keep reconnecting; the batch in flight is unacknowledged.
        producer.abort();
        let _ = producer.await;
        drop(server);
        acknowledged.extend(acked.lock().unwrap().iter().copied());

        let server = TestServer::start(&workdir, &ServerOptions::default());
        let client = root_client(server.tcp()).await;
        let present = read_all(&client).await;
        assert!(
            present.windows(2).all(|w| w[0] < w[1]),
            "messages out of order or duplicated after round {round}"
        );
        for n in &acknowledged {
            assert!(
                present.binary_search(n).is_ok(),
                "acknowledged message {n} lost in round {round}"
            );
        }
        next_number = present.last().map_or(0, |n| n + 1);
        assert!(next_number >= acknowledged.last().map_or(0, |n| n + 1));
        server.kill();
    }
    assert!(
        acknowledged.len() >= (ROUNDS * BATCH) as usize,
        "the producer made progress"
    );
}
