//! A consumer: polls its partition from offset 0 (pinned) or its stream's
//! consumer group (balanced), timing each `poll_messages` call that returns
//! data, until its [`StopRule`] says it is done.
//!
//! Pinned consumers track the next offset themselves and never commit;
//! group members poll `next` with auto-commit, letting the SDK pick among the
//! partitions the group assigned them. Empty polls are not recorded: they
//! measure waiting for data, not serving it. Each is followed by a short
//! back-off and an idle check.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use iggy::prelude::{
    Consumer, ConsumerGroupClient, Identifier, IggyClient, MessageClient, PollingStrategy,
};

use super::{ActorReport, Backoff, IdleWatch, Op, Recorder, RunContext, StopRule, payload_bytes};
use crate::plan::{ActorPlan, Placement};
use crate::rate::RateLimiter;
use crate::setup::StreamHandle;

pub struct ConsumerActor {
    pub client: IggyClient,
    pub context: Arc<RunContext>,
    pub actor: ActorPlan,
    pub placement: Placement,
    pub stream: StreamHandle,
    pub stop: StopRule,
}

/// Where the next poll reads from.
struct Cursor {
    partition: Option<u32>,
    consumer: Consumer,
    next_offset: Option<u64>,
}

impl ConsumerActor {
    pub async fn run(self) -> anyhow::Result<ActorReport> {
        let mut cursor = self.open_cursor().await?;
        let workload = &self.context.workload;
        let mut limiter = RateLimiter::new(workload.rate_limit_bytes_per_sec);
        let mut recorder = Recorder::new(self.context.clone(), workload.batches_per_actor);
        let mut consumed = 0u64;
        let mut idle = IdleWatch::new(workload.idle_timeout, 0, Instant::now());
        let mut backoff = Backoff::default();
        while !self.stop.is_done(consumed) {
            let count = self.stop.poll_count(consumed, workload.messages_per_batch);
            let polled = self.poll(&mut cursor, count).await?;
            if let Some(op) = &polled {
                consumed += u64::from(op.messages);
                self.stop.on_consumed(u64::from(op.messages));
            }
            let now = Instant::now();
            idle.observe(self.stop.progress(consumed), now);
            let Some(op) = polled else {
                idle.check(self.actor.id, "polling", now)?;
                backoff.wait().await;
                continue;
            };
            backoff.reset();
            recorder.record(op);
            limiter.throttle(op.payload_bytes).await;
        }
        if let Some(group) = &self.stream.group_id {
            // Leaving is a courtesy; the server also drops members on disconnect.
            let _ = self
                .client
                .leave_consumer_group(&self.stream.stream_id, &self.stream.topic_id, group)
                .await;
        }
        Ok(recorder.finish(&self.actor, &self.stream.name))
    }

    async fn open_cursor(&self) -> anyhow::Result<Cursor> {
        match self.placement {
            Placement::Partition(partition) => Ok(Cursor {
                partition: Some(partition),
                consumer: Consumer::new(Identifier::numeric(self.actor.id.0)?),
                next_offset: Some(0),
            }),
            Placement::Balanced => {
                let group = self
                    .stream
                    .group_id
                    .clone()
                    .context("setup created no consumer group")?;
                self.client
                    .join_consumer_group(&self.stream.stream_id, &self.stream.topic_id, &group)
                    .await
                    .with_context(|| format!("actor {} cannot join the group", self.actor.id.0))?;
                Ok(Cursor {
                    partition: None,
                    consumer: Consumer::group(group),
                    next_offset: None,
                })
            }
        }
    }

    /// One poll; `None` when it returned no messages.
    async fn poll(&self, cursor: &mut Cursor, count: u32) -> anyhow::Result<Option<Op>> {
        let (strategy, auto_commit) = match cursor.next_offset {
            Some(offset) => (PollingStrategy::offset(offset), false),
            None => (PollingStrategy::next(), true),
        };
        let started = Instant::now();
        let polled = self
            .client
            .poll_messages(
                &self.stream.stream_id,
                &self.stream.topic_id,
                cursor.partition,
                &cursor.consumer,
                &strategy,
                count,
                auto_commit,
            )
            .await?;
        let latency = started.elapsed();
        let Some(last) = polled.messages.last() else {
            return Ok(None);
        };
        if let Some(offset) = cursor.next_offset.as_mut() {
            *offset = last.header.offset + 1;
        }
        Ok(Some(Op {
            started,
            latency,
            messages: polled.messages.len() as u32,
            payload_bytes: payload_bytes(&polled.messages),
        }))
    }
}
