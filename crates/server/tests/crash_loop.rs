//! Repeated SIGKILL at pseudo-random moments while a producer writes, a
//! consumer stores offsets (both under `Persisted`, then both under the
//! default `Replicated` policy) and an admin creates streams: after every restart each
//! acknowledged message is present exactly once, in order and byte-identical,
//! no acknowledged offset went backwards, and every acknowledged stream
//! exists.
//!
//! Short by default (4 rounds, in the regular suite); the soak mode is
//! `IGGY_CRASH_ROUNDS=200 cargo test -p server --test crash_loop --release`
//! (`IGGY_CRASH_SEED` varies the kill moments).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use harness::sdk::{id, name, root_client};
use harness::{ServerOptions, TestServer, Workdir};
use iggy::prelude::*;

const DEFAULT_ROUNDS: u32 = 4;
const BATCH: u32 = 10;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A kill moment in 100..600 ms, from a SplitMix64 step of the seed.
fn kill_after(seed: u64, round: u32) -> Duration {
    let mut z = seed.wrapping_add(u64::from(round).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    Duration::from_millis(100 + (z ^ (z >> 31)) % 500)
}

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
            let n: u32 = text
                .get(1..9)
                .and_then(|d| d.parse().ok())
                .unwrap_or_else(|| panic!("corrupt payload served: {text:?}"));
            assert_eq!(
                m.payload.as_ref(),
                numbered(n).payload.as_ref(),
                "message {n} is not byte-identical"
            );
            out.push(n);
        }
    }
}

/// What one round's clients saw acknowledged.
#[derive(Default)]
struct Acked {
    messages: Vec<u32>,
    offset: Option<u64>,
    streams: Vec<String>,
}

#[tokio::test]
async fn given_persisted_producer_when_killed_repeatedly_should_keep_every_acknowledged_message() {
    crash_loop(Durability::Persisted).await;
}

/// The default policy: acknowledged means written to the kernel, which a
/// process kill does not undo.
#[tokio::test]
async fn given_default_policy_producer_when_killed_repeatedly_should_keep_every_acknowledged_message()
 {
    crash_loop(Durability::Replicated).await;
}

async fn crash_loop(durability: Durability) {
    let rounds = env_u64("IGGY_CRASH_ROUNDS", u64::from(DEFAULT_ROUNDS)) as u32;
    let seed = env_u64("IGGY_CRASH_SEED", 7);
    let workdir = Workdir::new();
    let mut next_number = 0u32;
    let mut acknowledged: Vec<u32> = Vec::new();
    let mut stored_offset: Option<u64> = None;
    let mut streams: Vec<String> = Vec::new();
    for round in 0..rounds {
        let server = TestServer::start(&workdir, &ServerOptions::default());
        let client = root_client(server.tcp()).await;
        if round == 0 {
            client.create_stream("c").await.unwrap();
            let options = TopicCreateOptions {
                durability,
                consumer_offset_durability: durability,
                ..TopicCreateOptions::default()
            };
            client
                .create_topic(&name("c"), "t", &options)
                .await
                .unwrap();
        }
        let acked = Arc::new(Mutex::new(Acked::default()));
        let producer = {
            let acked = acked.clone();
            let start = next_number;
            tokio::spawn(async move {
                let consumer = Consumer::new(id(7));
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
                    acked.lock().unwrap().messages.extend(n..n + BATCH);
                    n += BATCH;
                    // The consumer's offset follows, one store per batch.
                    let offset = u64::from(n - 1);
                    let stored = client
                        .store_consumer_offset(&consumer, &name("c"), &name("t"), Some(0), offset)
                        .await;
                    if stored.is_err() {
                        return;
                    }
                    acked.lock().unwrap().offset = Some(offset);
                    if n.is_multiple_of(BATCH * 8) {
                        let stream = format!("meta-{round}-{n}");
                        if client.create_stream(&stream).await.is_err() {
                            return;
                        }
                        acked.lock().unwrap().streams.push(stream);
                    }
                }
            })
        };
        tokio::time::sleep(kill_after(seed, round)).await;
        unsafe { libc::kill(server.pid(), libc::SIGKILL) };
        // The SDK would keep reconnecting; the request in flight is
        // unacknowledged.
        producer.abort();
        let _ = producer.await;
        drop(server);
        {
            let acked = acked.lock().unwrap();
            acknowledged.extend(acked.messages.iter().copied());
            stored_offset = acked.offset.or(stored_offset);
            streams.extend(acked.streams.iter().cloned());
        }

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
        if let Some(offset) = stored_offset {
            let found = client
                .get_consumer_offset(&Consumer::new(id(7)), &name("c"), &name("t"), Some(0))
                .await
                .unwrap()
                .expect("an acknowledged offset survives");
            assert!(
                found.stored_offset >= offset,
                "stored offset went back from {offset} to {} in round {round}",
                found.stored_offset
            );
        }
        for stream in &streams {
            assert!(
                client.get_stream(&name(stream)).await.unwrap().is_some(),
                "acknowledged stream {stream} lost in round {round}"
            );
        }
        next_number = present.last().map_or(0, |n| n + 1);
        assert!(next_number >= acknowledged.last().map_or(0, |n| n + 1));
        server.kill();
    }
    assert!(
        acknowledged.len() >= (rounds * BATCH) as usize,
        "the producer made progress"
    );
    eprintln!(
        "crash loop ({durability:?}): {rounds} kills survived, {} acknowledged messages checked, {} streams",
        acknowledged.len(),
        streams.len()
    );
}
