//! Bounded export queues between the threads that finish spans and emit
//! logs (shards among them) and one exporter thread per signal.
//!
//! A finished span or log record is offered to a queue of
//! [`QUEUE_CAPACITY`] items with `try_send`: when the queue is full the item
//! is dropped and counted ([`DROPPED_SPANS`], [`DROPPED_LOGS`], shown in
//! `/metrics`), so a slow or absent collector never blocks a shard. The
//! exporter thread owns a current-thread tokio runtime (the OTLP gRPC and
//! HTTP clients need one) and exports a batch when it holds
//! [`BATCH_SIZE_MAX`] items or [`BATCH_INTERVAL`] has passed.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::time::{Duration, Instant};

use opentelemetry::InstrumentationScope;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::logs::{LogBatch, LogExporter, LogProcessor, SdkLogRecord};
use opentelemetry_sdk::trace::{SpanData, SpanExporter, SpanProcessor};

/// Items waiting for export, per signal.
pub const QUEUE_CAPACITY: usize = 4096;
/// Items sent in one export call.
pub const BATCH_SIZE_MAX: usize = 512;
/// A partial batch is sent after this long.
pub const BATCH_INTERVAL: Duration = Duration::from_secs(1);
/// How long a flush or shutdown waits for the exporter thread.
pub const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// Spans dropped because the queue was full.
pub static DROPPED_SPANS: AtomicU64 = AtomicU64::new(0);
/// Log records dropped because the queue was full.
pub static DROPPED_LOGS: AtomicU64 = AtomicU64::new(0);
/// Export calls that failed (the batch is lost).
pub static FAILED_EXPORTS: AtomicU64 = AtomicU64::new(0);

enum Item<T> {
    Data(T),
    /// Export what is queued, then answer.
    Flush(SyncSender<()>),
    /// Export what is queued, answer and stop.
    Stop(SyncSender<()>),
}

/// The producer side: cheap to offer to, never blocks.
struct Queue<T> {
    sender: SyncSender<Item<T>>,
    dropped: &'static AtomicU64,
}

impl<T> Queue<T> {
    fn offer(&self, item: T) {
        match self.sender.try_send(Item::Data(item)) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Sends a control item and waits for its answer (bounded).
    fn control(&self, make: fn(SyncSender<()>) -> Item<T>) -> OTelSdkResult {
        let (answer, answered) = mpsc::sync_channel(1);
        self.sender
            .send(make(answer))
            .map_err(|_| OTelSdkError::AlreadyShutdown)?;
        answered
            .recv_timeout(FLUSH_TIMEOUT)
            .map_err(|_| OTelSdkError::Timeout(FLUSH_TIMEOUT))
    }
}

/// Starts the exporter thread `name`: `build` makes the exporter inside the
/// thread's runtime, `export` sends one batch.
fn spawn<T, E>(
    name: &str,
    dropped: &'static AtomicU64,
    build: impl FnOnce() -> Result<E, String> + Send + 'static,
    export: fn(&tokio::runtime::Runtime, &E, Vec<T>) -> OTelSdkResult,
) -> Result<Queue<T>, String>
where
    T: Send + 'static,
    E: 'static,
{
    let (sender, receiver) = mpsc::sync_channel(QUEUE_CAPACITY);
    let (built, ready) = mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(e) => {
                    let _ = built.send(Err(format!("cannot start a runtime: {e}")));
                    return;
                }
            };
            let exporter = {
                let _inside = runtime.enter();
                build()
            };
            match exporter {
                Ok(exporter) => {
                    let _ = built.send(Ok(()));
                    drain(&runtime, &exporter, &receiver, export);
                }
                Err(e) => {
                    let _ = built.send(Err(e));
                }
            }
        })
        .map_err(|e| format!("cannot start the {name} thread: {e}"))?;
    ready
        .recv()
        .map_err(|_| format!("the {name} thread stopped"))??;
    Ok(Queue { sender, dropped })
}

fn drain<T, E>(
    runtime: &tokio::runtime::Runtime,
    exporter: &E,
    receiver: &Receiver<Item<T>>,
    export: fn(&tokio::runtime::Runtime, &E, Vec<T>) -> OTelSdkResult,
) {
    let mut batch = Vec::with_capacity(BATCH_SIZE_MAX);
    let mut deadline = Instant::now() + BATCH_INTERVAL;
    let send = |batch: &mut Vec<T>| {
        if !batch.is_empty() && export(runtime, exporter, std::mem::take(batch)).is_err() {
            FAILED_EXPORTS.fetch_add(1, Ordering::Relaxed);
        }
    };
    loop {
        let wait = deadline.saturating_duration_since(Instant::now());
        match receiver.recv_timeout(wait) {
            Ok(Item::Data(item)) => {
                batch.push(item);
                if batch.len() >= BATCH_SIZE_MAX {
                    send(&mut batch);
                }
            }
            Ok(Item::Flush(answer)) => {
                send(&mut batch);
                let _ = answer.send(());
            }
            Ok(Item::Stop(answer)) => {
                send(&mut batch);
                let _ = answer.send(());
                return;
            }
            Err(RecvTimeoutError::Timeout) => {
                send(&mut batch);
                deadline = Instant::now() + BATCH_INTERVAL;
            }
            Err(RecvTimeoutError::Disconnected) => {
                send(&mut batch);
                return;
            }
        }
    }
}

/// Finished spans into the bounded queue.
pub struct QueuedSpans(Queue<SpanData>);

impl QueuedSpans {
    pub fn start<E: SpanExporter + 'static>(
        build: impl FnOnce() -> Result<E, String> + Send + 'static,
    ) -> Result<Self, String> {
        spawn(
            "otel-spans",
            &DROPPED_SPANS,
            build,
            |runtime, exporter: &E, batch| runtime.block_on(exporter.export(batch)),
        )
        .map(Self)
    }
}

impl fmt::Debug for QueuedSpans {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("QueuedSpans")
    }
}

impl SpanProcessor for QueuedSpans {
    fn on_start(&self, _span: &mut opentelemetry_sdk::trace::Span, _cx: &opentelemetry::Context) {}

    fn on_end(&self, span: SpanData) {
        if span.span_context.is_sampled() {
            self.0.offer(span);
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.control(Item::Flush)
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        self.0.control(Item::Stop)
    }
}

/// Emitted log records into the bounded queue.
pub struct QueuedLogs(Queue<(SdkLogRecord, InstrumentationScope)>);

impl QueuedLogs {
    pub fn start<E: LogExporter + 'static>(
        build: impl FnOnce() -> Result<E, String> + Send + 'static,
    ) -> Result<Self, String> {
        spawn(
            "otel-logs",
            &DROPPED_LOGS,
            build,
            |runtime, exporter: &E, batch| {
                let refs: Vec<(&SdkLogRecord, &InstrumentationScope)> = batch
                    .iter()
                    .map(|(record, scope)| (record, scope))
                    .collect();
                runtime.block_on(exporter.export(LogBatch::new(&refs)))
            },
        )
        .map(Self)
    }
}

impl fmt::Debug for QueuedLogs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("QueuedLogs")
    }
}

impl LogProcessor for QueuedLogs {
    fn emit(&self, record: &mut SdkLogRecord, scope: &InstrumentationScope) {
        self.0.offer((record.clone(), scope.clone()));
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.control(Item::Flush)
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        self.0.control(Item::Stop)
    }
}
