//! The soak's load and its ledger: one producer thread with one SDK client
//! (a new one, dialing the next node, after any failure) sends a batch to
//! each partition in turn, now and then stores an offset of `CONSUMER` or
//! creates a stream, and writes down each request's outcome. A request that
//! failed or timed out is `Unknown` (it may have taken effect) and is never
//! retried with the same payload: the next one carries new ones.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use iggy::prelude::*;

use crate::harness::sdk::{id, name};
use crate::harness::{ROOT_PASSWORD, ROOT_USERNAME};

pub const PARTITIONS: u32 = 3;
const BATCH_MESSAGES: usize = 5;
/// The plain consumer whose offsets the producer stores.
pub const CONSUMER: u32 = 7;
/// Producer steps between two offset stores, and between two streams.
const STORE_EVERY: u64 = 25;
const CREATE_EVERY: u64 = 150;
const PRODUCER_PAUSE: Duration = Duration::from_millis(10);
const DIAL_PAUSE: Duration = Duration::from_millis(200);
/// How long one request may take before its outcome is unknown.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Acked,
    /// Failed or timed out: it may or may not have taken effect.
    Unknown,
}

/// One message sent: its outcome, when its batch left (since the ledger
/// began) and how long the answer took.
#[derive(Clone, Copy)]
pub struct Sent {
    pub outcome: Outcome,
    pub at: Duration,
    pub took: Duration,
}

/// Everything the producer sent, in order, with what it was told.
#[derive(Clone)]
pub struct Ledger {
    pub epoch: Instant,
    /// Per partition, each message; its index is its sequence number, its
    /// payload `p{partition}-{seq}`.
    pub messages: Vec<Vec<Sent>>,
    /// Per partition, each offset store of `CONSUMER`.
    pub stores: Vec<Vec<(u64, Outcome)>>,
    /// Streams created, `soak-{index}`.
    pub streams: Vec<Outcome>,
    /// Failed requests by error.
    pub failures: BTreeMap<String, u64>,
}

/// Per partition, how many messages were acknowledged and the last one's
/// sequence number; and the streams acknowledged, at one moment.
#[derive(Clone, Default)]
pub struct Snapshot {
    pub acked: Vec<(usize, Option<usize>)>,
    pub streams: Vec<String>,
}

impl Ledger {
    pub fn new() -> Ledger {
        Ledger {
            epoch: Instant::now(),
            messages: vec![Vec::new(); PARTITIONS as usize],
            stores: vec![Vec::new(); PARTITIONS as usize],
            streams: Vec::new(),
            failures: BTreeMap::new(),
        }
    }

    pub fn acked_count(&self, partition: usize) -> usize {
        let sent = &self.messages[partition];
        sent.iter().filter(|s| s.outcome == Outcome::Acked).count()
    }

    pub fn snapshot(&self) -> Snapshot {
        let acked = (0..PARTITIONS as usize)
            .map(|p| {
                let sent = &self.messages[p];
                let last = sent.iter().rposition(|s| s.outcome == Outcome::Acked);
                (self.acked_count(p), last)
            })
            .collect();
        let streams = self.streams.iter().enumerate();
        let streams = streams
            .filter(|(_, o)| **o == Outcome::Acked)
            .map(|(i, _)| stream_name(i))
            .collect();
        Snapshot { acked, streams }
    }

    /// Whether every partition acknowledged a send since `before`.
    pub fn progressed(&self, before: &Snapshot) -> Result<(), String> {
        let stuck: Vec<usize> = (0..PARTITIONS as usize)
            .filter(|&p| self.acked_count(p) <= before.acked.get(p).map_or(0, |a| a.0))
            .collect();
        if stuck.is_empty() {
            return Ok(());
        }
        Err(format!(
            "no send acknowledged since on partitions {stuck:?} (failures so far: {:?})",
            self.failures
        ))
    }

    /// Message `seq` of `partition` as a failure report names it.
    pub fn describe(&self, partition: u32, seq: usize) -> String {
        let sent = self.messages[partition as usize][seq];
        format!(
            "{} ({:?}, sent at {:.1?}, answered after {:.1?})",
            payload(partition, seq),
            sent.outcome,
            sent.at,
            sent.took
        )
    }

    /// The outcome of a `request`, its failure counted.
    fn outcome_of<T>(
        &mut self,
        request: &str,
        result: Result<Result<T, IggyError>, tokio::time::error::Elapsed>,
    ) -> Outcome {
        let failure = match result {
            Ok(Ok(_)) => return Outcome::Acked,
            Ok(Err(error)) => format!("{request}: {} ({})", error.as_string(), error.as_code()),
            Err(_) => format!("{request}: timeout"),
        };
        *self.failures.entry(failure).or_default() += 1;
        Outcome::Unknown
    }
}

pub fn payload(partition: u32, seq: usize) -> String {
    format!("p{partition}-{seq}")
}

pub fn stream_name(index: usize) -> String {
    format!("soak-{index}")
}

pub struct Producer {
    pub addresses: Vec<SocketAddr>,
    pub ledger: Arc<Mutex<Ledger>>,
    pub stop: Arc<AtomicBool>,
}

impl Producer {
    /// Runs on a thread of its own until `stop` is raised.
    pub fn spawn(self) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(self.run());
        })
    }

    async fn run(self) {
        let mut client: Option<IggyClient> = None;
        let (mut dial, mut step) = (0, 0u64);
        while !self.stop.load(Ordering::SeqCst) {
            let Some(connected) = &client else {
                client = connect(self.addresses[dial % self.addresses.len()]).await;
                dial += 1;
                if client.is_none() {
                    tokio::time::sleep(DIAL_PAUSE).await;
                }
                continue;
            };
            if !self.step(connected, step).await {
                client = None;
                dial += 1;
            }
            step += 1;
            tokio::time::sleep(PRODUCER_PAUSE).await;
        }
    }

    /// One step; false once a request failed (the client is then replaced).
    async fn step(&self, client: &IggyClient, step: u64) -> bool {
        let partition = (step % u64::from(PARTITIONS)) as u32;
        let acked = self.send(client, partition).await
            && (step % STORE_EVERY != STORE_EVERY - 1 || self.store(client, partition).await);
        acked && (step % CREATE_EVERY != CREATE_EVERY - 1 || self.create_stream(client).await)
    }

    async fn send(&self, client: &IggyClient, partition: u32) -> bool {
        let (first, epoch) = {
            let ledger = self.ledger.lock().unwrap();
            (ledger.messages[partition as usize].len(), ledger.epoch)
        };
        let mut batch: Vec<IggyMessage> = (first..first + BATCH_MESSAGES)
            .map(|seq| {
                let payload = payload(partition, seq).into_bytes();
                IggyMessage::builder()
                    .payload(payload.into())
                    .build()
                    .unwrap()
            })
            .collect();
        let (stream, topic) = (name("orders"), name("t"));
        let partitioning = Partitioning::partition_id(partition);
        let started = Instant::now();
        let sent = client.send_messages(&stream, &topic, &partitioning, &mut batch);
        let result = tokio::time::timeout(REQUEST_TIMEOUT, sent).await;
        let mut ledger = self.ledger.lock().unwrap();
        let sent = Sent {
            outcome: ledger.outcome_of("send", result),
            at: started - epoch,
            took: started.elapsed(),
        };
        let messages = &mut ledger.messages[partition as usize];
        messages.extend(std::iter::repeat_n(sent, BATCH_MESSAGES));
        sent.outcome == Outcome::Acked
    }

    /// Stores the offset of the partition's latest acknowledged message
    /// (it holds at least that many), if that is past the last store.
    async fn store(&self, client: &IggyClient, partition: u32) -> bool {
        let value = {
            let ledger = self.ledger.lock().unwrap();
            let last = ledger.stores[partition as usize].last().map(|s| s.0);
            match ledger.acked_count(partition as usize).checked_sub(1) {
                Some(value) if last.is_none_or(|last| value as u64 > last) => value as u64,
                _ => return true,
            }
        };
        let (stream, topic) = (name("orders"), name("t"));
        let consumer = Consumer::new(id(CONSUMER));
        let stored =
            client.store_consumer_offset(&consumer, &stream, &topic, Some(partition), value);
        let result = tokio::time::timeout(REQUEST_TIMEOUT, stored).await;
        let mut ledger = self.ledger.lock().unwrap();
        let outcome = ledger.outcome_of("store offset", result);
        ledger.stores[partition as usize].push((value, outcome));
        outcome == Outcome::Acked
    }

    async fn create_stream(&self, client: &IggyClient) -> bool {
        let stream = stream_name(self.ledger.lock().unwrap().streams.len());
        let result = tokio::time::timeout(REQUEST_TIMEOUT, client.create_stream(&stream)).await;
        let mut ledger = self.ledger.lock().unwrap();
        let outcome = ledger.outcome_of("create stream", result);
        ledger.streams.push(outcome);
        outcome == Outcome::Acked
    }
}

/// A signed-in SDK client that starts at `address` (and moves to the
/// leader, as the SDK does), or None.
async fn connect(address: SocketAddr) -> Option<IggyClient> {
    let client = IggyClient::builder()
        .with_tcp()
        .with_server_address(address.to_string())
        .build()
        .ok()?;
    let signed_in = async {
        client.connect().await?;
        client.login_user(ROOT_USERNAME, ROOT_PASSWORD).await
    };
    match tokio::time::timeout(REQUEST_TIMEOUT, signed_in).await {
        Ok(Ok(_)) => Some(client),
        _ => None,
    }
}
