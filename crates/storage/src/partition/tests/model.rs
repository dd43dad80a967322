//! Property test: random operations on the log and on a simple in-memory
//! model (a vector of messages); every read must agree. Seeds replay.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::*;
use crate::error::StorageError;

const SEEDS: u64 = 12;
const OPERATIONS_PER_SEED: usize = 250;

#[derive(Debug, Default)]
struct Model {
    messages: Vec<Message>,
    next_offset: Offset,
    last_timestamp: u64,
}

impl Model {
    fn expected_from(&self, from: Offset) -> Vec<Message> {
        self.messages
            .iter()
            .filter(|m| m.offset >= from)
            .cloned()
            .collect()
    }
}

struct Run {
    rng: StdRng,
    storage: SimStorage,
    options: LogOptions,
    log: PartitionLog<SimStorage>,
    model: Model,
    clock: u64,
    tag: u64,
}

fn random_options(rng: &mut StdRng) -> LogOptions {
    LogOptions {
        segment_size_bytes: [600, 2_000, 1 << 20][rng.random_range(0..3)],
        cache_size_bytes: [0, 1_000, 1 << 20][rng.random_range(0..3)],
        offset_reservation: [16, 1 << 20][rng.random_range(0..2)],
        direct_io: rng.random_bool(0.5),
        direct_sync: rng.random_bool(0.5),
        ..small_options()
    }
}

impl Run {
    async fn append(&mut self) {
        self.tag += 1;
        let (count, len) = (self.rng.random_range(1..=4), self.rng.random_range(1..=200));
        self.clock = (self.clock + self.rng.random_range(0..100))
            .saturating_sub(self.rng.random_range(0..40));
        let result = match self.log.append(record(self.tag, count, len), self.clock) {
            Err(StorageError::OffsetsNotReserved { .. }) => {
                self.log.reserve_offsets(count as u64).await.unwrap();
                self.log.append(record(self.tag, count, len), self.clock)
            }
            other => other,
        };
        let receipt = result.unwrap();
        assert_eq!(receipt.base_offset, self.model.next_offset);
        let timestamp = self.clock.max(self.model.last_timestamp);
        assert_eq!(receipt.base_timestamp, timestamp);
        for (index, payload) in payloads(self.tag, count, len).into_iter().enumerate() {
            let id = message_id(self.tag, index);
            self.model.messages.push(Message {
                offset: receipt.base_offset.plus(index as u64),
                id,
                timestamp,
                payload,
            });
        }
        self.model.next_offset = receipt.last_offset.next();
        self.model.last_timestamp = timestamp;
    }

    async fn read(&mut self) {
        let from = Offset(self.rng.random_range(0..=self.model.next_offset.0 + 3));
        let max_messages = self.rng.random_range(1..=30);
        let unlimited = self.rng.random_bool(0.5);
        let max_bytes = if unlimited {
            u64::MAX
        } else {
            self.rng.random_range(1..3_000)
        };
        let got = messages_of(&self.log.read(from, max_messages, max_bytes).await.unwrap());
        let expected = self.model.expected_from(from);
        assert!(got.len() <= max_messages as usize);
        assert_eq!(
            got[..],
            expected[..got.len()],
            "read({from}, {max_messages}, {max_bytes})"
        );
        assert_eq!(
            got.is_empty(),
            expected.is_empty(),
            "a read always makes progress"
        );
        if unlimited {
            assert_eq!(got.len(), expected.len().min(max_messages as usize));
        }
    }

    async fn find_by_timestamp(&mut self) {
        let timestamp = self.rng.random_range(0..=self.clock + 100);
        let expected = self
            .model
            .messages
            .iter()
            .find(|m| m.timestamp >= timestamp)
            .map(|m| m.offset);
        assert_eq!(
            self.log.find_offset_by_timestamp(timestamp).await.unwrap(),
            expected,
            "timestamp {timestamp}"
        );
    }

    async fn reopen(&mut self, crash: bool) {
        if crash {
            self.log.sync().await.unwrap();
            self.storage = self.storage.crash(crate::seam::CrashMode::Clean);
        } else {
            self.log.close().await.unwrap();
        }
        let (log, report) = open(&self.storage, self.options.clone()).await;
        assert!(
            report.truncated.is_empty(),
            "nothing synced is torn: {:?}",
            report.truncated
        );
        assert!(report.next_offset >= self.model.next_offset);
        if !crash {
            assert_eq!(
                report.next_offset, self.model.next_offset,
                "a clean close skips no offsets"
            );
        }
        self.model.next_offset = report.next_offset;
        self.log = log;
    }

    async fn delete_oldest(&mut self) {
        let oldest = self.log.segments()[0].clone();
        if self
            .log
            .delete_oldest_sealed_segments(1, None)
            .await
            .unwrap()
            == 1
        {
            let last = oldest.last_offset.unwrap_or(Offset(0));
            self.model
                .messages
                .retain(|m| oldest.last_offset.is_none() || m.offset > last);
        }
    }

    fn check_counters(&self) {
        let model = &self.model;
        assert_eq!(self.log.messages_count(), model.messages.len() as u64);
        assert_eq!(
            self.log.first_offset(),
            model.messages.first().map(|m| m.offset)
        );
        assert_eq!(self.log.next_offset(), model.next_offset);
        if let Some(last) = model.messages.last() {
            assert_eq!(self.log.last_offset(), Some(last.offset));
        }
    }

    async fn step(&mut self) {
        let op = self.rng.random_range(0..100);
        if std::env::var("MODEL_TRACE").is_ok() {
            eprintln!(
                "op {op} messages {} next {}",
                self.model.messages.len(),
                self.model.next_offset
            );
        }
        match op {
            0..45 => self.append().await,
            45..70 => self.read().await,
            70..78 => self.find_by_timestamp().await,
            78..84 => self.log.flush().await.unwrap(),
            84..88 => self.log.sync().await.unwrap(),
            88..92 => self.reopen(false).await,
            92..95 => self.reopen(true).await,
            95..98 => self.delete_oldest().await,
            _ => {
                self.log.purge().await.unwrap();
                self.model = Model::default();
            }
        }
        self.check_counters();
    }
}

#[compio::test]
async fn given_random_operations_when_compared_with_model_should_always_agree() {
    for seed in 0..SEEDS {
        let mut rng = StdRng::seed_from_u64(seed);
        let options = random_options(&mut rng);
        let storage = SimStorage::new();
        let (log, _) = open(&storage, options.clone()).await;
        let mut run = Run {
            rng,
            storage,
            options,
            log,
            model: Model::default(),
            clock: 1_000,
            tag: 0,
        };
        for _ in 0..OPERATIONS_PER_SEED {
            run.step().await;
        }
        let everything = messages_of(&run.log.read(Offset(0), u32::MAX, u64::MAX).await.unwrap());
        assert_eq!(everything, run.model.messages, "seed {seed}");
    }
}
