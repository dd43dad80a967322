//! An end-to-end producing consumer: sends a batch to its own partition,
//! then polls until every message of that batch has come back, and records
//! the time from the start of the send to the arrival of the last message.
//!
//! The read position starts at the partition's message count (0 for a stream
//! this run created) and follows the offsets it reads. When the server's
//! send reply carries a confirmation, its base offset re-anchors the read
//! position, so the actor never mistakes older data for its own batch; the
//! ids of the messages read back are checked against the ids just sent.

use std::sync::Arc;
use std::time::Instant;

use anyhow::bail;
use iggy::prelude::{
    Consumer, Identifier, IggyClient, MessageClient, Partitioning, PollingStrategy, TopicClient,
};

use super::{ActorReport, Backoff, IdleWatch, Op, Recorder, RunContext};
use crate::batch::BatchPool;
use crate::plan::ActorPlan;
use crate::rate::RateLimiter;
use crate::setup::StreamHandle;

pub struct EndToEnd {
    pub client: IggyClient,
    pub context: Arc<RunContext>,
    pub actor: ActorPlan,
    pub partition: u32,
    pub stream: StreamHandle,
}

/// Per-actor loop state.
struct Loop {
    pool: BatchPool,
    limiter: RateLimiter,
    consumer: Consumer,
    next_offset: u64,
}

impl EndToEnd {
    pub async fn run(self) -> anyhow::Result<ActorReport> {
        let workload = &self.context.workload;
        let mut state = Loop {
            pool: BatchPool::new(
                self.actor.id,
                workload.message_size,
                workload.messages_per_batch,
                self.context.run_nonce,
            )?,
            limiter: RateLimiter::new(workload.rate_limit_bytes_per_sec),
            consumer: Consumer::new(Identifier::numeric(self.actor.id.0)?),
            next_offset: self.initial_offset().await?,
        };
        let mut recorder = Recorder::new(self.context.clone(), workload.batches_per_actor);
        while self.context.is_warming_up() {
            recorder.record(self.round_trip(&mut state).await?);
        }
        for _ in 0..workload.batches_per_actor {
            recorder.record(self.round_trip(&mut state).await?);
        }
        Ok(recorder.finish(&self.actor, &self.stream.name))
    }

    async fn initial_offset(&self) -> anyhow::Result<u64> {
        if self.stream.created_by_us {
            return Ok(0);
        }
        let topic = self
            .client
            .get_topic(&self.stream.stream_id, &self.stream.topic_id)
            .await?
            .ok_or_else(|| anyhow::anyhow!("topic of `{}` vanished", self.stream.name))?;
        let partition = topic
            .partitions
            .iter()
            .find(|partition| partition.id == self.partition)
            .or_else(|| topic.partitions.get(self.partition as usize));
        Ok(partition.map_or(0, |partition| partition.messages_count))
    }

    async fn round_trip(&self, state: &mut Loop) -> anyhow::Result<Op> {
        let payload_bytes = state.pool.next_payload_bytes();
        state.limiter.throttle(payload_bytes).await;
        let batch = state.pool.next_batch();
        let expected = batch.len() as u32;
        let first_id = batch.first().map_or(0, |message| message.header.id);
        let started = Instant::now();
        let reply = self
            .client
            .send_messages(
                &self.stream.stream_id,
                &self.stream.topic_id,
                &Partitioning::partition_id(self.partition),
                batch,
            )
            .await?;
        if let Some(confirmation) = reply.confirmations.first() {
            state.next_offset = confirmation.base_offset;
        }
        self.receive(state, first_id, expected).await?;
        Ok(Op {
            started,
            latency: started.elapsed(),
            messages: expected,
            payload_bytes,
        })
    }

    /// Polls until `expected` messages from `next_offset` on have arrived,
    /// checking they are the batch just sent (ids `first_id`, `first_id + 1`,
    /// ...): a latency measured on someone else's messages would be
    /// meaningless.
    async fn receive(&self, state: &mut Loop, first_id: u128, expected: u32) -> anyhow::Result<()> {
        let mut idle = IdleWatch::new(self.context.workload.idle_timeout, 0, Instant::now());
        let mut backoff = Backoff::default();
        let mut received = 0u32;
        while received < expected {
            let polled = self
                .client
                .poll_messages(
                    &self.stream.stream_id,
                    &self.stream.topic_id,
                    Some(self.partition),
                    &state.consumer,
                    &PollingStrategy::offset(state.next_offset),
                    expected - received,
                    false,
                )
                .await?;
            let Some(last) = polled.messages.last() else {
                idle.check(self.actor.id, "waiting for its own batch", Instant::now())?;
                backoff.wait().await;
                continue;
            };
            backoff.reset();
            for (index, message) in polled.messages.iter().enumerate() {
                let want = first_id + u128::from(received) + index as u128;
                if message.header.id != want {
                    bail!(
                        "actor {} polled message id {:#x} at offset {}, expected its own id {want:#x}",
                        self.actor.id.0,
                        message.header.id,
                        message.header.offset
                    );
                }
            }
            state.next_offset = last.header.offset + 1;
            received += polled.messages.len() as u32;
            idle.observe(u64::from(received), Instant::now());
        }
        Ok(())
    }
}
