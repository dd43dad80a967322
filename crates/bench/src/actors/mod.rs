//! The actors: producers, consumers and end-to-end producing consumers.
//!
//! Each actor owns one client and runs one loop: an unrecorded warm-up
//! while the clock is before [`RunContext::measure_from`], then the measured
//! work. Every operation becomes an [`Op`]; the [`Recorder`] keeps the ones
//! that started at or after `measure_from` as samples and feeds the live
//! progress counters. Actors that must agree on when to stop share the
//! atomics in [`ProducerTally`] and [`StopRule`].

pub mod consumer;
pub mod e2e;
pub mod producer;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::bail;
use iggy::prelude::IggyMessage;

use crate::plan::{ActorId, ActorPlan, Workload};
use crate::progress::Progress;
use crate::stats::Sample;

/// Pause after repeated polls that returned nothing, so idle actors do not spin.
pub const EMPTY_POLL_BACKOFF: Duration = Duration::from_millis(1);
/// Empty polls retried at once before backing off: fresh data is usually
/// only a moment away, and a sleep would inflate end-to-end latency.
pub const IMMEDIATE_RETRIES: u32 = 10;

/// What every actor of one phase shares.
#[derive(Debug)]
pub struct RunContext {
    pub workload: Workload,
    pub run_start: Instant,
    pub measure_from: Instant,
    pub progress: Arc<Progress>,
    /// Distinguishes this run's message ids from earlier runs' ids.
    pub run_nonce: u64,
}

impl RunContext {
    pub fn micros_since_start(&self, instant: Instant) -> u64 {
        instant
            .saturating_duration_since(self.run_start)
            .as_micros() as u64
    }

    pub fn measure_from_us(&self) -> u64 {
        self.micros_since_start(self.measure_from)
    }

    pub fn is_warming_up(&self) -> bool {
        Instant::now() < self.measure_from
    }
}

/// One finished send, poll or round trip.
#[derive(Debug, Clone, Copy)]
pub struct Op {
    pub started: Instant,
    pub latency: Duration,
    pub messages: u32,
    pub payload_bytes: u64,
}

/// What an actor hands back when it finishes.
#[derive(Debug, Clone)]
pub struct ActorReport {
    pub actor: ActorPlan,
    pub stream_name: String,
    pub samples: Vec<Sample>,
    /// When the actor's last operation finished, microseconds since run start.
    pub finished_us: u64,
}

#[derive(Debug)]
pub struct Recorder {
    context: Arc<RunContext>,
    samples: Vec<Sample>,
    finished_us: u64,
}

impl Recorder {
    pub fn new(context: Arc<RunContext>, expected_ops: u64) -> Self {
        let capacity = usize::try_from(expected_ops).unwrap_or(0).min(1 << 24);
        Self {
            context,
            samples: Vec::with_capacity(capacity),
            finished_us: 0,
        }
    }

    /// Keeps `op` unless it started during warm-up.
    pub fn record(&mut self, op: Op) {
        if op.started < self.context.measure_from {
            return;
        }
        let finished_us = self.context.micros_since_start(op.started + op.latency);
        self.samples.push(Sample {
            finished_at_us: finished_us,
            latency_us: op.latency.as_micros() as u64,
            messages: op.messages,
            payload_bytes: op.payload_bytes,
        });
        self.finished_us = finished_us;
        self.context.progress.add(op.messages, op.payload_bytes);
    }

    pub fn finish(self, actor: &ActorPlan, stream_name: &str) -> ActorReport {
        ActorReport {
            actor: actor.clone(),
            stream_name: stream_name.to_string(),
            samples: self.samples,
            finished_us: self.finished_us,
        }
    }
}

/// How much a producer has sent, for the consumer that follows it.
#[derive(Debug, Default)]
pub struct ProducerTally {
    sent_messages: AtomicU64,
    done: AtomicBool,
}

impl ProducerTally {
    pub fn add_sent(&self, messages: u64) {
        self.sent_messages.fetch_add(messages, Ordering::Release);
    }

    pub fn mark_done(&self) {
        self.done.store(true, Ordering::Release);
    }

    /// The final count once the producer is done, `None` before.
    pub fn final_count(&self) -> Option<u64> {
        // `done` is read first: once it is set, `sent_messages` is final.
        let done = self.done.load(Ordering::Acquire);
        done.then(|| self.sent_messages.load(Ordering::Acquire))
    }
}

/// When a consumer stops, resolved from the plan's `ConsumeUntil`.
#[derive(Debug, Clone)]
pub enum StopRule {
    Messages(u64),
    FollowProducer(Arc<ProducerTally>),
    Group {
        consumed: Arc<AtomicU64>,
        target: u64,
    },
}

impl StopRule {
    pub fn is_done(&self, own_consumed: u64) -> bool {
        match self {
            Self::Messages(target) => own_consumed >= *target,
            Self::FollowProducer(tally) => {
                tally.final_count().is_some_and(|sent| own_consumed >= sent)
            }
            Self::Group { consumed, target } => consumed.load(Ordering::Acquire) >= *target,
        }
    }

    pub fn on_consumed(&self, messages: u64) {
        if let Self::Group { consumed, .. } = self {
            consumed.fetch_add(messages, Ordering::AcqRel);
        }
    }

    /// The counter that shows this consumer is not stuck: the group's total
    /// for group members, the consumer's own count otherwise.
    pub fn progress(&self, own_consumed: u64) -> u64 {
        match self {
            Self::Group { consumed, .. } => consumed.load(Ordering::Acquire),
            _ => own_consumed,
        }
    }

    /// How many messages are worth asking for: never past a fixed target.
    pub fn poll_count(&self, own_consumed: u64, messages_per_batch: u32) -> u32 {
        match self {
            Self::Messages(target) => {
                let remaining = target.saturating_sub(own_consumed);
                remaining.min(u64::from(messages_per_batch)).max(1) as u32
            }
            _ => messages_per_batch,
        }
    }
}

/// Fails an actor whose progress has stalled for longer than the limit.
///
/// Progress is whatever counter the caller passes: its own message count,
/// or for a consumer-group member the whole group's, since a member whose
/// partitions are drained must keep waiting while its peers still read.
/// Sans-IO: the caller supplies `now`.
#[derive(Debug)]
pub struct IdleWatch {
    last_progress: u64,
    since: Instant,
    limit: Duration,
}

impl IdleWatch {
    pub fn new(limit: Duration, progress: u64, now: Instant) -> Self {
        Self {
            last_progress: progress,
            since: now,
            limit,
        }
    }

    /// Notes the current progress; any change restarts the idle clock.
    pub fn observe(&mut self, progress: u64, now: Instant) {
        if progress != self.last_progress {
            self.last_progress = progress;
            self.since = now;
        }
    }

    /// How long progress has stalled, if that exceeds the limit.
    pub fn stalled_for(&self, now: Instant) -> Option<Duration> {
        let idle = now.saturating_duration_since(self.since);
        (idle > self.limit).then_some(idle)
    }

    pub fn check(&self, actor: ActorId, what: &str, now: Instant) -> anyhow::Result<()> {
        if let Some(idle) = self.stalled_for(now) {
            bail!(
                "actor {} saw no new messages for {:.1}s while {what} (see --idle-timeout)",
                actor.0,
                idle.as_secs_f64()
            );
        }
        Ok(())
    }
}

/// Paces polls that come back empty.
#[derive(Debug, Default)]
pub struct Backoff {
    empty_polls: u32,
}

impl Backoff {
    pub fn reset(&mut self) {
        self.empty_polls = 0;
    }

    pub async fn wait(&mut self) {
        self.empty_polls = self.empty_polls.saturating_add(1);
        if self.empty_polls <= IMMEDIATE_RETRIES {
            tokio::task::yield_now().await;
        } else {
            tokio::time::sleep(EMPTY_POLL_BACKOFF).await;
        }
    }
}

pub fn payload_bytes(messages: &[IggyMessage]) -> u64 {
    messages
        .iter()
        .map(|message| message.payload.len() as u64)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_progress_when_watching_idleness_should_restart_the_clock() {
        let start = Instant::now();
        let limit = Duration::from_secs(10);
        let mut watch = IdleWatch::new(limit, 0, start);
        assert_eq!(watch.stalled_for(start + limit), None);
        watch.observe(0, start + Duration::from_secs(8));
        let late = start + Duration::from_secs(11);
        assert_eq!(watch.stalled_for(late), Some(Duration::from_secs(11)));
        watch.observe(5, start + Duration::from_secs(9));
        assert_eq!(watch.stalled_for(late), None);
        assert!(watch.check(ActorId(1), "polling", late).is_ok());
        assert!(watch.check(ActorId(1), "polling", late + limit).is_err());
    }

    #[test]
    fn given_group_member_when_reading_progress_should_see_the_group_total() {
        let consumed = Arc::new(AtomicU64::new(7));
        let member = StopRule::Group {
            consumed,
            target: 10,
        };
        assert_eq!(member.progress(0), 7);
        assert_eq!(StopRule::Messages(10).progress(3), 3);
    }

    #[test]
    fn given_fixed_target_when_checking_stop_should_stop_at_the_count() {
        let rule = StopRule::Messages(10);
        assert!(!rule.is_done(9));
        assert!(rule.is_done(10));
        assert_eq!(rule.poll_count(0, 4), 4);
        assert_eq!(rule.poll_count(8, 4), 2);
    }

    #[test]
    fn given_running_producer_when_checking_follower_should_not_stop_until_it_is_done() {
        let tally = Arc::new(ProducerTally::default());
        let rule = StopRule::FollowProducer(tally.clone());
        tally.add_sent(5);
        assert!(!rule.is_done(5));
        tally.mark_done();
        assert!(!rule.is_done(4));
        assert!(rule.is_done(5));
    }

    #[test]
    fn given_group_when_members_consume_should_stop_everyone_at_the_shared_target() {
        let consumed = Arc::new(AtomicU64::new(0));
        let first = StopRule::Group {
            consumed: consumed.clone(),
            target: 10,
        };
        let second = first.clone();
        first.on_consumed(6);
        assert!(!second.is_done(0));
        second.on_consumed(4);
        assert!(first.is_done(6));
        assert!(second.is_done(4));
    }
}
