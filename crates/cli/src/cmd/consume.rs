//! `message consume` (spec §9.2): polls one partition, every partition, or
//! the partitions a consumer group assigns to this connection, printing each
//! message with the §9.3 output (default `offset|timestamp|payload`) or as
//! JSON, until the end, a stop condition or a signal; offsets are stored
//! after each printed batch when `--commit auto`. A progress line on stderr
//! (§9.6) counts the messages read and, once every partition polled has
//! answered, the lag left (the partitions' current offsets past the last
//! message read).

use crate::args::OutputFormat;
use crate::args::message::{CommitMode, ConsumeArgs, StartAt};
use crate::cmd::Run;
use crate::cmd::format::MessagePrinter;
use crate::cmd::poll::{join_group, leave_group, message_json, parse_timestamp};
use crate::error::{CliError, Context};
use crate::progress::{self, Progress};
use iggy::prelude::{
    Consumer, ConsumerOffsetClient, Identifier, MessageClient, PollingStrategy, TopicClient,
};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Set once SIGINT or SIGTERM arrived: finish the batch, commit, leave.
struct Stop {
    flag: AtomicBool,
    notify: Notify,
}

impl Stop {
    fn watch() -> Arc<Stop> {
        let stop = Arc::new(Stop {
            flag: AtomicBool::new(false),
            notify: Notify::new(),
        });
        let watcher = stop.clone();
        let signalled = signal();
        tokio::spawn(async move {
            signalled.await;
            watcher.flag.store(true, Ordering::SeqCst);
            watcher.notify.notify_waiters();
        });
        stop
    }

    fn stopped(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    async fn sleep(&self, duration: Duration) {
        tokio::select! {
            () = tokio::time::sleep(duration) => {}
            () = self.notify.notified() => {}
        }
    }
}

/// SIGINT or SIGTERM. The handlers are installed when this is called, not
/// when the future is first polled, so a signal that arrives before the
/// watcher task runs is not lost to the default action (ending the process
/// without the commit).
#[cfg(unix)]
fn signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt()).ok();
    let mut terminate = signal(SignalKind::terminate()).ok();
    async move {
        tokio::select! {
            () = received(interrupt.as_mut()) => {}
            () = received(terminate.as_mut()) => {}
        }
    }
}

#[cfg(unix)]
async fn received(signal: Option<&mut tokio::signal::unix::Signal>) {
    match signal {
        Some(s) => {
            s.recv().await;
        }
        None => std::future::pending::<()>().await,
    }
}

#[cfg(not(unix))]
fn signal() -> impl std::future::Future<Output = ()> {
    let ctrl_c = tokio::signal::ctrl_c();
    async move {
        let _ = ctrl_c.await;
    }
}

pub async fn consume(a: ConsumeArgs, run: &Run<'_>) -> Result<(), CliError> {
    let (s, t) = (&a.stream_id, &a.topic_id);
    // Only messages go to stdout (§9.3).
    run.out.lines_to_stderr.set(true);
    let who = match &a.consumer_group {
        Some(g) => format!("consumer group with ID: {g}"),
        None => format!(
            "consumer with ID: {}",
            a.consumer.clone().unwrap_or_else(default_consumer)
        ),
    };
    run.out.executing(&format!(
        "consume messages from topic ID: {t} and stream with ID: {s} as {who}"
    ));
    let stop = Stop::watch();
    if let Some(group) = &a.consumer_group {
        join_group(run, s, t, group).await?;
        let mut c = Consumption::new(&a, run, stop);
        let result = c.run().await;
        leave_group(run, s, t, group).await;
        c.finish();
        result
    } else {
        let mut c = Consumption::new(&a, run, stop);
        let result = c.run().await;
        c.finish();
        result
    }
}

fn default_consumer() -> Identifier {
    Identifier::numeric(0).expect("0 is a valid identifier")
}

struct Consumption<'a, 'r> {
    a: &'a ConsumeArgs,
    run: &'a Run<'r>,
    stop: Arc<Stop>,
    consumer: Consumer,
    commit: bool,
    printer: MessagePrinter,
    start: Option<PollingStrategy>,
    /// Next strategy per partition once something was read from it.
    next: BTreeMap<u32, PollingStrategy>,
    /// Last offset printed per partition.
    read_to: BTreeMap<u32, u64>,
    printed: u64,
    collected: Vec<serde_json::Value>,
    progress: Option<Progress>,
    /// Messages left past the last one read, per partition that answered.
    lag: BTreeMap<u32, u64>,
    /// Every partition polled has answered once, so `lag` covers them all.
    lag_known: bool,
}

impl<'a, 'r> Consumption<'a, 'r> {
    fn new(a: &'a ConsumeArgs, run: &'a Run<'r>, stop: Arc<Stop>) -> Self {
        let consumer = match &a.consumer_group {
            Some(g) => Consumer::group(g.clone()),
            None => Consumer::new(a.consumer.clone().unwrap_or_else(default_consumer)),
        };
        let commit = match a.commit {
            Some(mode) => mode == CommitMode::Auto,
            None => a.consumer.is_some() || a.consumer_group.is_some(),
        };
        Self {
            a,
            run,
            stop,
            consumer,
            commit,
            printer: MessagePrinter::new(&a.format),
            start: None,
            next: BTreeMap::new(),
            read_to: BTreeMap::new(),
            printed: 0,
            collected: Vec::new(),
            progress: Progress::start(a.progress, run.out.quiet, progress::CONSUME_TEMPLATE, None),
            lag: BTreeMap::new(),
            lag_known: false,
        }
    }

    fn start_strategy(&self) -> Result<PollingStrategy, CliError> {
        Ok(match &self.a.from {
            StartAt::First => PollingStrategy::first(),
            StartAt::Last => PollingStrategy::last(),
            StartAt::Next => PollingStrategy::next(),
            StartAt::Offset(n) => PollingStrategy::offset(*n),
            StartAt::Time(t) => PollingStrategy::timestamp(parse_timestamp(t)?),
        })
    }

    async fn run(&mut self) -> Result<(), CliError> {
        let (s, t) = (&self.a.stream_id, &self.a.topic_id);
        self.start = Some(self.start_strategy()?);
        let topic = self
            .run
            .client
            .get_topic(s, t)
            .await
            .context(|| format!("Problem getting topic with ID: {t} in stream {s}"))?
            .ok_or_else(|| {
                CliError::message(format!("Topic with ID: {t} in stream {s} was not found"))
            })?;
        // The last offset of each partition when we started (None: empty).
        let ends: BTreeMap<u32, Option<u64>> = topic
            .partitions
            .iter()
            .map(|p| (p.id, (p.messages_count > 0).then_some(p.current_offset)))
            .collect();
        let deadline = self.a.timeout.map(|d| Instant::now() + d);
        let group = self.a.consumer_group.is_some();
        // A group member polls without a partition: the SDK reads the
        // member's assignment and goes round its partitions, one per poll.
        let partitions: Vec<Option<u32>> = match (group, self.a.partition) {
            (true, _) => vec![None; topic.partitions_count.max(1) as usize],
            (false, Some(p)) => vec![Some(p)],
            (false, None) => (0..topic.partitions_count).map(Some).collect(),
        };
        loop {
            if self.stop.stopped() || deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(());
            }
            let mut got_any = false;
            for &p in &partitions {
                if self.a.exit_at_end && p.is_some_and(|p| self.reached(p, &ends)) {
                    continue;
                }
                let n = self.poll_partition(p).await?;
                got_any |= n > 0;
                if self.limit_reached() || self.stop.stopped() {
                    return Ok(());
                }
            }
            if !self.lag_known {
                self.lag_known = true;
                self.report_progress(0);
            }
            if self.a.exit_at_end {
                let all = ends.keys().all(|p| self.reached(*p, &ends));
                let selected = partitions.iter().flatten().all(|p| self.reached(*p, &ends));
                // A member only sees its own partitions: a round with nothing
                // new is its end.
                if (group && (all || !got_any)) || (!group && selected) {
                    return Ok(());
                }
            }
            if !got_any {
                if !self.a.follow && !self.a.exit_at_end {
                    return Ok(());
                }
                let mut wait = self.a.poll_interval.max(Duration::from_millis(10));
                if let Some(d) = deadline {
                    wait = wait.min(d.saturating_duration_since(Instant::now()));
                }
                self.stop.sleep(wait).await;
            }
        }
    }

    fn reached(&self, p: u32, ends: &BTreeMap<u32, Option<u64>>) -> bool {
        match ends.get(&p).copied().flatten() {
            None => true,
            Some(end) => self.read_to.get(&p).is_some_and(|&last| last >= end),
        }
    }

    fn limit_reached(&self) -> bool {
        self.a.max_messages.is_some_and(|max| self.printed >= max)
    }

    /// Polls one batch from a partition, prints it and commits; returns how
    /// many messages were printed.
    async fn poll_partition(&mut self, partition: Option<u32>) -> Result<usize, CliError> {
        let (s, t) = (&self.a.stream_id, &self.a.topic_id);
        let next = self.next.clone();
        let start = self.start.unwrap_or_else(PollingStrategy::next);
        let strategy_for = move |p: u32| next.get(&p).copied().unwrap_or(start);
        let mut count = self.a.batch;
        if let Some(max) = self.a.max_messages {
            let left = max.saturating_sub(self.printed);
            count = count.min(u32::try_from(left).unwrap_or(u32::MAX));
        }
        let polled = self
            .run
            .client
            .poll_messages_with_strategy_for(
                s,
                t,
                partition,
                &self.consumer,
                &strategy_for,
                count,
                false,
            )
            .await
            .context(|| {
                format!("Problem polling messages to topic with ID: {t} and stream with ID: {s}")
            })?;
        let p = polled.partition_id;
        let Some(last) = polled.messages.last() else {
            // Nothing past what was read. A group member's empty reply may
            // name no real partition, so only an asked-for one is counted.
            if let Some(asked) = partition {
                self.lag.insert(asked, 0);
            }
            self.report_progress(0);
            return Ok(0);
        };
        let last = last.header.offset;
        self.lag
            .insert(p, polled.current_offset.saturating_sub(last));
        let (out, printer, collected) = (self.run.out, &self.printer, &mut self.collected);
        progress::suspended(self.progress.as_ref(), || {
            for m in &polled.messages {
                match out.format {
                    OutputFormat::Text => printer.print(out, p, m),
                    OutputFormat::Ndjson => out.json(&message_json(p, m)),
                    OutputFormat::Json => collected.push(message_json(p, m)),
                }
            }
        });
        self.printed += polled.messages.len() as u64;
        self.report_progress(polled.messages.len());
        self.next.insert(p, PollingStrategy::offset(last + 1));
        self.read_to.insert(p, last);
        if self.commit {
            self.run
                .client
                .store_consumer_offset(&self.consumer, s, t, Some(p), last)
                .await
                .context(|| {
                    format!(
                        "Problem storing the offset {last} of partition with ID: {p} for topic with ID: {t} and stream with ID: {s}"
                    )
                })?;
        }
        Ok(polled.messages.len())
    }

    fn report_progress(&self, read: usize) {
        let Some(progress) = &self.progress else {
            return;
        };
        progress.inc(read as u64);
        if self.lag_known {
            progress.set_message(format!(", lag {}", self.lag.values().sum::<u64>()));
        }
    }

    /// Ends the progress line; the JSON mode prints one document with every
    /// message.
    fn finish(&mut self) {
        self.progress.take();
        if self.run.out.format == OutputFormat::Json {
            self.run.out.json(&serde_json::Value::Array(std::mem::take(
                &mut self.collected,
            )));
        }
    }
}
