//! The live progress line on stderr.
//!
//! Actors bump two relaxed atomic counters per measured operation; a ticker
//! task samples them, derives the rate since its previous tick and redraws
//! one line. On a terminal the line is rewritten in place twice a second;
//! otherwise (a log file, CI) a plain line is appended every few seconds.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::units::format_bytes;

const TERMINAL_TICK: Duration = Duration::from_millis(500);
const LOG_TICK: Duration = Duration::from_secs(5);

#[derive(Debug, Default)]
pub struct Progress {
    messages: AtomicU64,
    payload_bytes: AtomicU64,
}

impl Progress {
    pub fn add(&self, messages: u32, payload_bytes: u64) {
        self.messages
            .fetch_add(u64::from(messages), Ordering::Relaxed);
        self.payload_bytes
            .fetch_add(payload_bytes, Ordering::Relaxed);
    }

    fn snapshot(&self) -> (u64, u64) {
        (
            self.messages.load(Ordering::Relaxed),
            self.payload_bytes.load(Ordering::Relaxed),
        )
    }
}

/// What one progress line shows.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgressView<'a> {
    pub label: &'a str,
    pub elapsed: Duration,
    pub warmup_left: Duration,
    pub done_bytes: u64,
    pub target_bytes: f64,
    pub bytes_per_sec: f64,
    pub messages_per_sec: f64,
}

pub fn progress_line(view: &ProgressView<'_>) -> String {
    let elapsed = view.elapsed.as_secs_f64();
    if !view.warmup_left.is_zero() {
        return format!(
            "{} {elapsed:6.1}s  warming up, {:.1}s left",
            view.label,
            view.warmup_left.as_secs_f64()
        );
    }
    let percent = if view.target_bytes > 0.0 {
        (view.done_bytes as f64 / view.target_bytes * 100.0).min(100.0)
    } else {
        0.0
    };
    format!(
        "{} {elapsed:6.1}s  {} / ~{} ({percent:5.1}%)  {}/s  {:.0} msg/s",
        view.label,
        format_bytes(view.done_bytes as f64),
        format_bytes(view.target_bytes),
        format_bytes(view.bytes_per_sec),
        view.messages_per_sec,
    )
}

/// Redraws the progress line until dropped; the drop ends the line.
pub struct Ticker {
    task: tokio::task::JoinHandle<()>,
    terminal: bool,
}

impl Ticker {
    pub fn start(
        progress: Arc<Progress>,
        label: &'static str,
        target_bytes: f64,
        measure_from: Instant,
    ) -> Self {
        let terminal = std::io::stderr().is_terminal();
        let task = tokio::spawn(tick(progress, label, target_bytes, measure_from, terminal));
        Self { task, terminal }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.task.abort();
        if self.terminal {
            eprintln!();
        }
    }
}

async fn tick(
    progress: Arc<Progress>,
    label: &'static str,
    target_bytes: f64,
    measure_from: Instant,
    terminal: bool,
) {
    let period = if terminal { TERMINAL_TICK } else { LOG_TICK };
    let started = Instant::now();
    let mut previous = (Instant::now(), 0, 0);
    let mut interval = tokio::time::interval(period);
    interval.tick().await;
    loop {
        interval.tick().await;
        let now = Instant::now();
        let (messages, bytes) = progress.snapshot();
        let seconds = now
            .duration_since(previous.0)
            .as_secs_f64()
            .max(f64::EPSILON);
        let view = ProgressView {
            label,
            elapsed: now.duration_since(started),
            warmup_left: measure_from.saturating_duration_since(now),
            done_bytes: bytes,
            target_bytes,
            bytes_per_sec: bytes.saturating_sub(previous.2) as f64 / seconds,
            messages_per_sec: messages.saturating_sub(previous.1) as f64 / seconds,
        };
        previous = (now, messages, bytes);
        let line = progress_line(&view);
        let mut stderr = std::io::stderr().lock();
        // A failed write to stderr is not worth stopping a benchmark for.
        let _ = if terminal {
            write!(stderr, "\r\x1b[2K{line}")
        } else {
            writeln!(stderr, "{line}")
        };
        let _ = stderr.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_measuring_when_formatting_progress_should_show_done_target_and_rates() {
        let view = ProgressView {
            label: "bench",
            elapsed: Duration::from_millis(2500),
            warmup_left: Duration::ZERO,
            done_bytes: 500_000_000,
            target_bytes: 1_000_000_000.0,
            bytes_per_sec: 200_000_000.0,
            messages_per_sec: 200_000.0,
        };
        assert_eq!(
            progress_line(&view),
            "bench    2.5s  500.00 MB / ~1.00 GB ( 50.0%)  200.00 MB/s  200000 msg/s"
        );
    }

    #[test]
    fn given_warmup_when_formatting_progress_should_say_so() {
        let view = ProgressView {
            label: "bench",
            elapsed: Duration::from_secs(1),
            warmup_left: Duration::from_secs(4),
            done_bytes: 0,
            target_bytes: 0.0,
            bytes_per_sec: 0.0,
            messages_per_sec: 0.0,
        };
        assert_eq!(progress_line(&view), "bench    1.0s  warming up, 4.0s left");
    }
}
