//! A producer/consumer scenario through the official SDK over TCP: 10,000
//! messages with user headers go to a 3-partition topic through every
//! partitioning mode the SDK offers, and come back through every polling
//! strategy. The restart variant stops the server half-way through and
//! checks that nothing acknowledged is lost, for both durability policies.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::collections::{BTreeMap, BTreeSet};

use harness::sdk::{id, name, root_client};
use harness::{ServerOptions, TestServer, Workdir};
use iggy::prelude::*;

const MESSAGES: u32 = 10_000;
const BATCH_SIZE: u32 = 100;
const BATCHES: u32 = MESSAGES / BATCH_SIZE;
const PARTITIONS: u32 = 3;
const KEYS: u32 = 7;
const POLL_COUNT: u32 = 1_000;
const STREAM: &str = "scenario";

/// How one batch is routed; every third batch uses each mode in turn.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Partition(u32),
    Balanced,
    Key(u32),
}

fn mode_of(batch: u32) -> Mode {
    match batch % 3 {
        0 => Mode::Partition((batch / 3) % PARTITIONS),
        1 => Mode::Balanced,
        _ => Mode::Key(batch % KEYS),
    }
}

fn partitioning(mode: Mode) -> Partitioning {
    match mode {
        Mode::Partition(p) => Partitioning::partition_id(p),
        Mode::Balanced => Partitioning::balanced(),
        Mode::Key(k) => Partitioning::messages_key_str(&format!("key-{k}")).unwrap(),
    }
}

fn header_key(key: &str) -> HeaderKey {
    HeaderKey::try_from(key).unwrap()
}

fn message(index: u32, batch: u32) -> IggyMessage {
    let headers = BTreeMap::from([
        (header_key("index"), HeaderValue::from(index)),
        (header_key("batch"), HeaderValue::from(batch)),
        (
            header_key("note"),
            HeaderValue::try_from(format!("n{}", index % 13).as_str()).unwrap(),
        ),
    ]);
    IggyMessage::builder()
        .payload(format!("payload-{index}").into())
        .user_headers(headers)
        .build()
        .unwrap()
}

/// What the producer knows about each message it sent, keyed by index.
#[derive(Default)]
struct Sent {
    origin_timestamp: BTreeMap<u32, u64>,
    first_send_us: u64,
    last_ack_us: u64,
}

async fn send_batches(
    client: &IggyClient,
    topic: &str,
    batches: std::ops::Range<u32>,
    sent: &mut Sent,
) {
    if sent.first_send_us == 0 {
        sent.first_send_us = IggyTimestamp::now().as_micros();
    }
    for batch in batches {
        let first = batch * BATCH_SIZE;
        let mut messages: Vec<IggyMessage> = (first..first + BATCH_SIZE)
            .map(|i| message(i, batch))
            .collect();
        for (k, m) in messages.iter().enumerate() {
            sent.origin_timestamp
                .insert(first + k as u32, m.header.origin_timestamp);
        }
        client
            .send_messages(
                &name(STREAM),
                &name(topic),
                &partitioning(mode_of(batch)),
                &mut messages,
            )
            .await
            .unwrap();
    }
    sent.last_ack_us = IggyTimestamp::now().as_micros();
}

async fn poll(
    client: &IggyClient,
    topic: &str,
    partition: u32,
    consumer: &Consumer,
    strategy: PollingStrategy,
    count: u32,
    auto_commit: bool,
) -> PolledMessages {
    client
        .poll_messages(
            &name(STREAM),
            &name(topic),
            Some(partition),
            consumer,
            &strategy,
            count,
            auto_commit,
        )
        .await
        .unwrap()
}

/// Reads a whole partition with the offset strategy.
async fn read_partition(client: &IggyClient, topic: &str, partition: u32) -> Vec<IggyMessage> {
    let consumer = Consumer::new(id(1));
    let mut all = Vec::new();
    loop {
        let next = all.len() as u64;
        let polled = poll(
            client,
            topic,
            partition,
            &consumer,
            PollingStrategy::offset(next),
            POLL_COUNT,
            false,
        )
        .await;
        if polled.messages.is_empty() {
            return all;
        }
        all.extend(polled.messages);
    }
}

async fn read_topic(client: &IggyClient, topic: &str) -> Vec<Vec<IggyMessage>> {
    let mut partitions = Vec::new();
    for partition in 0..PARTITIONS {
        partitions.push(read_partition(client, topic, partition).await);
    }
    partitions
}

/// Checks one partition's messages against what the producer sent and
/// returns their indexes (user headers are decoded once per message).
fn check_partition(partition: u32, messages: &[IggyMessage], sent: &Sent) -> Vec<u32> {
    let mut previous_timestamp = 0;
    let mut indexes = Vec::with_capacity(messages.len());
    for (position, m) in messages.iter().enumerate() {
        assert_eq!(
            m.header.offset, position as u64,
            "offsets are contiguous in partition {partition}"
        );
        let headers = m.user_headers_map().unwrap().expect("user headers survive");
        let index = headers[&header_key("index")].as_uint32().unwrap();
        let batch = headers[&header_key("batch")].as_uint32().unwrap();
        assert_eq!(batch, index / BATCH_SIZE);
        assert_eq!(m.payload, format!("payload-{index}").as_bytes());
        assert_eq!(
            headers[&header_key("note")].as_str().unwrap(),
            format!("n{}", index % 13)
        );
        assert_eq!(
            m.header.origin_timestamp, sent.origin_timestamp[&index],
            "origin timestamp of {index}"
        );
        assert!(
            m.header.timestamp >= previous_timestamp,
            "server timestamps never go back"
        );
        assert!(m.header.timestamp >= sent.first_send_us && m.header.timestamp <= sent.last_ack_us);
        previous_timestamp = m.header.timestamp;
        if let Mode::Partition(expected) = mode_of(batch) {
            assert_eq!(
                partition, expected,
                "batch {batch} sent to partition {expected}"
            );
        }
        indexes.push(index);
    }
    indexes
}

/// Checks every message arrived exactly once, batches stay whole and
/// contiguous, keys stick to one partition and balanced batches spread.
fn check_topic(partitions: &[Vec<IggyMessage>], sent: &Sent) {
    let total: usize = partitions.iter().map(Vec::len).sum();
    assert_eq!(total, MESSAGES as usize);
    let mut seen = BTreeSet::new();
    let mut key_partition: BTreeMap<u32, u32> = BTreeMap::new();
    let mut balanced_partitions = BTreeSet::new();
    for (partition, messages) in partitions.iter().enumerate() {
        let partition = partition as u32;
        let indexes = check_partition(partition, messages, sent);
        for chunk in indexes.chunks(BATCH_SIZE as usize) {
            let batch = chunk[0] / BATCH_SIZE;
            let expected: Vec<u32> = (batch * BATCH_SIZE..(batch + 1) * BATCH_SIZE).collect();
            assert_eq!(chunk, expected, "batch {batch} is whole and in order");
            match mode_of(batch) {
                Mode::Key(key) => {
                    let first = *key_partition.entry(key).or_insert(partition);
                    assert_eq!(first, partition, "key {key} sticks to one partition");
                }
                Mode::Balanced => {
                    balanced_partitions.insert(partition);
                }
                Mode::Partition(_) => {}
            }
        }
        seen.extend(indexes);
    }
    assert_eq!(seen.len(), MESSAGES as usize, "every index exactly once");
    assert_eq!(
        balanced_partitions.len(),
        PARTITIONS as usize,
        "balanced spreads over all partitions"
    );
}

fn offsets(messages: &[IggyMessage]) -> Vec<u64> {
    messages.iter().map(|m| m.header.offset).collect()
}

async fn check_first_and_last(client: &IggyClient, topic: &str, partitions: &[Vec<IggyMessage>]) {
    let consumer = Consumer::new(id(2));
    for (partition, expected) in partitions.iter().enumerate() {
        let first = poll(
            client,
            topic,
            partition as u32,
            &consumer,
            PollingStrategy::first(),
            10,
            false,
        )
        .await;
        assert_eq!(offsets(&first.messages), offsets(&expected[..10]));
        assert_eq!(first.current_offset, expected.len() as u64 - 1);
        let last = poll(
            client,
            topic,
            partition as u32,
            &consumer,
            PollingStrategy::last(),
            10,
            false,
        )
        .await;
        assert_eq!(
            offsets(&last.messages),
            offsets(&expected[expected.len() - 10..])
        );
        assert_eq!(
            last.messages[9].payload,
            expected[expected.len() - 1].payload
        );
    }
}

/// The timestamp strategy starts at the first message whose server
/// timestamp is at or after the value.
async fn check_timestamp(client: &IggyClient, topic: &str, partitions: &[Vec<IggyMessage>]) {
    let consumer = Consumer::new(id(3));
    for (partition, expected) in partitions.iter().enumerate() {
        for probe in [0, expected.len() / 3, expected.len() - 1] {
            let value = expected[probe].header.timestamp;
            let start = expected
                .iter()
                .position(|m| m.header.timestamp >= value)
                .unwrap();
            let polled = poll(
                client,
                topic,
                partition as u32,
                &consumer,
                PollingStrategy::timestamp(value.into()),
                5,
                false,
            )
            .await;
            assert_eq!(
                polled.messages[0].header.offset, start as u64,
                "timestamp {value} in partition {partition}"
            );
            assert!(polled.messages.iter().all(|m| m.header.timestamp >= value));
        }
        let after = expected.last().unwrap().header.timestamp + 1;
        let polled = poll(
            client,
            topic,
            partition as u32,
            &consumer,
            PollingStrategy::timestamp(after.into()),
            5,
            false,
        )
        .await;
        assert!(
            polled.messages.is_empty(),
            "nothing after the newest timestamp"
        );
    }
}

/// Consumes a partition with `Next` and auto-commit, `take` messages at most.
async fn consume_next(
    client: &IggyClient,
    topic: &str,
    partition: u32,
    consumer: &Consumer,
    take: usize,
) -> Vec<IggyMessage> {
    let mut consumed = Vec::new();
    while consumed.len() < take {
        let count = POLL_COUNT.min((take - consumed.len()) as u32);
        let polled = poll(
            client,
            topic,
            partition,
            consumer,
            PollingStrategy::next(),
            count,
            true,
        )
        .await;
        if polled.messages.is_empty() {
            break;
        }
        consumed.extend(polled.messages);
    }
    consumed
}

async fn stored_offset(
    client: &IggyClient,
    topic: &str,
    partition: u32,
    consumer: &Consumer,
) -> Option<u64> {
    client
        .get_consumer_offset(consumer, &name(STREAM), &name(topic), Some(partition))
        .await
        .unwrap()
        .map(|info| info.stored_offset)
}

async fn check_next_consumes_everything(
    client: &IggyClient,
    topic: &str,
    partitions: &[Vec<IggyMessage>],
) {
    let consumer = Consumer::new(id(4));
    for (partition, expected) in partitions.iter().enumerate() {
        let partition = partition as u32;
        let consumed = consume_next(client, topic, partition, &consumer, usize::MAX).await;
        assert_eq!(offsets(&consumed), offsets(expected));
        assert_eq!(
            stored_offset(client, topic, partition, &consumer).await,
            Some(expected.len() as u64 - 1)
        );
    }
}

async fn create_topic(client: &IggyClient, topic: &str, durability: Durability) {
    let options = TopicCreateOptions {
        partitions_count: Some(PARTITIONS),
        durability,
        ..TopicCreateOptions::default()
    };
    let created = client
        .create_topic(&name(STREAM), topic, &options)
        .await
        .unwrap();
    assert_eq!(created.partitions_count, PARTITIONS);
}

#[tokio::test]
async fn given_three_partitions_when_sending_with_every_partitioning_should_poll_everything_back_with_every_strategy()
 {
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &ServerOptions::default());
    let client = root_client(server.tcp()).await;
    client.create_stream(STREAM).await.unwrap();
    create_topic(&client, "events", Durability::default()).await;

    let mut sent = Sent::default();
    send_batches(&client, "events", 0..BATCHES, &mut sent).await;
    let partitions = read_topic(&client, "events").await;
    check_topic(&partitions, &sent);
    check_first_and_last(&client, "events", &partitions).await;
    check_timestamp(&client, "events", &partitions).await;
    check_next_consumes_everything(&client, "events", &partitions).await;

    let topic = client
        .get_topic(&name(STREAM), &name("events"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(topic.messages_count, u64::from(MESSAGES));
    for (partition, expected) in topic.partitions.iter().zip(&partitions) {
        assert_eq!(partition.messages_count, expected.len() as u64);
        assert_eq!(partition.current_offset, expected.len() as u64 - 1);
    }
}

/// Sends half, consumes part of it with auto-commit, restarts the server,
/// then sends the rest and checks the whole topic and the consumer's resume.
#[tokio::test]
async fn given_scenario_when_server_restarts_midway_should_lose_nothing() {
    let workdir = Workdir::new();
    let topics = [
        ("replicated", Durability::Replicated),
        ("persisted", Durability::Persisted),
    ];
    let consumer = Consumer::new(id(9));
    let mut sent: BTreeMap<&str, Sent> = BTreeMap::new();
    let mut consumed_before: BTreeMap<(&str, u32), usize> = BTreeMap::new();
    let server = TestServer::start(&workdir, &ServerOptions::default());
    {
        let client = root_client(server.tcp()).await;
        client.create_stream(STREAM).await.unwrap();
        for (topic, durability) in topics {
            create_topic(&client, topic, durability).await;
            let entry = sent.entry(topic).or_default();
            send_batches(&client, topic, 0..BATCHES / 2, entry).await;
            for partition in 0..PARTITIONS {
                let consumed = consume_next(&client, topic, partition, &consumer, 250).await;
                assert_eq!(
                    offsets(&consumed),
                    (0..consumed.len() as u64).collect::<Vec<_>>()
                );
                consumed_before.insert((topic, partition), consumed.len());
            }
        }
    }
    assert!(server.stop().0.success());

    let server = TestServer::start(&workdir, &ServerOptions::default());
    let client = root_client(server.tcp()).await;
    for (topic, _) in topics {
        for partition in 0..PARTITIONS {
            let consumed = consumed_before[&(topic, partition)];
            let stored = stored_offset(&client, topic, partition, &consumer).await;
            assert_eq!(
                stored,
                Some(consumed as u64 - 1),
                "{topic}/{partition} offset survives"
            );
        }
        let entry = sent.get_mut(topic).unwrap();
        send_batches(&client, topic, BATCHES / 2..BATCHES, entry).await;
        let partitions = read_topic(&client, topic).await;
        check_topic(&partitions, entry);
        for (partition, expected) in partitions.iter().enumerate() {
            let rest = consume_next(&client, topic, partition as u32, &consumer, usize::MAX).await;
            let from = consumed_before[&(topic, partition as u32)];
            assert_eq!(
                offsets(&rest),
                offsets(&expected[from..]),
                "{topic}/{partition} resumes after restart"
            );
        }
    }
}
