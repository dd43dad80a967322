//! A producer: sends pre-built batches to its partition (pinned) or across
//! the topic's partitions (balanced), timing each `send_messages` call.
//!
//! Order per batch: wait for the rate limiter, stamp ids, start the clock,
//! send, stop the clock. The limiter wait is outside the measured latency.
//! A producer that a consumer follows publishes its running count in a
//! [`ProducerTally`] and marks it done after the last batch.

use std::sync::Arc;
use std::time::Instant;

use iggy::prelude::{IggyClient, MessageClient, Partitioning};

use super::{ActorReport, Op, ProducerTally, Recorder, RunContext};
use crate::batch::BatchPool;
use crate::plan::{ActorPlan, Placement};
use crate::rate::RateLimiter;
use crate::setup::StreamHandle;

pub struct Producer {
    pub client: IggyClient,
    pub context: Arc<RunContext>,
    pub actor: ActorPlan,
    pub placement: Placement,
    pub stream: StreamHandle,
    pub tally: Option<Arc<ProducerTally>>,
}

impl Producer {
    pub async fn run(self) -> anyhow::Result<ActorReport> {
        let workload = &self.context.workload;
        let mut pool = BatchPool::new(
            self.actor.id,
            workload.message_size,
            workload.messages_per_batch,
            self.context.run_nonce,
        )?;
        let mut limiter = RateLimiter::new(workload.rate_limit_bytes_per_sec);
        let mut recorder = Recorder::new(self.context.clone(), workload.batches_per_actor);
        let partitioning = match self.placement {
            Placement::Partition(partition) => Partitioning::partition_id(partition),
            Placement::Balanced => Partitioning::balanced(),
        };
        while self.context.is_warming_up() {
            let op = self.send(&mut pool, &mut limiter, &partitioning).await?;
            recorder.record(op);
        }
        for _ in 0..workload.batches_per_actor {
            let op = self.send(&mut pool, &mut limiter, &partitioning).await?;
            recorder.record(op);
        }
        if let Some(tally) = &self.tally {
            tally.mark_done();
        }
        Ok(recorder.finish(&self.actor, &self.stream.name))
    }

    async fn send(
        &self,
        pool: &mut BatchPool,
        limiter: &mut RateLimiter,
        partitioning: &Partitioning,
    ) -> anyhow::Result<Op> {
        let payload_bytes = pool.next_payload_bytes();
        limiter.throttle(payload_bytes).await;
        let batch = pool.next_batch();
        let messages = batch.len() as u32;
        let started = Instant::now();
        self.client
            .send_messages(
                &self.stream.stream_id,
                &self.stream.topic_id,
                partitioning,
                batch,
            )
            .await?;
        let latency = started.elapsed();
        if let Some(tally) = &self.tally {
            tally.add_sent(u64::from(messages));
        }
        Ok(Op {
            started,
            latency,
            messages,
            payload_bytes,
        })
    }
}
