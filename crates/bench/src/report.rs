//! Turning actor samples into the three outputs: the summary table on
//! stdout, the `--json` document, and the `--csv` per-second series.
//!
//! [`BenchReport::build`] does all the arithmetic once; the renderers only
//! format. Throughput is payload bytes (message headers excluded) in
//! decimal MB/s over the measured window, which runs from the end of
//! warm-up to the actor's (or the role's) last finished operation.
//! Latencies are kept in microseconds and printed in milliseconds.

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

use crate::actors::ActorReport;
use crate::args::Transport;
use crate::plan::{Placement, Plan, Role};
use crate::run::PhaseOutcome;
use crate::stats::{LatencySummary, SecondBucket, Throughput, per_second_series};
use crate::units::MessageSize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RoleKind {
    Producer,
    Consumer,
    EndToEnd,
}

impl RoleKind {
    fn of(role: &Role) -> Self {
        match role {
            Role::Producer(_) => Self::Producer,
            Role::Consumer(..) => Self::Consumer,
            Role::EndToEnd(_) => Self::EndToEnd,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Self::Producer => "producer",
            Self::Consumer => "consumer",
            Self::EndToEnd => "end-to-end",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Params {
    pub transport: &'static str,
    pub server_address: String,
    pub actors: usize,
    pub streams: usize,
    pub partitions_per_stream: u32,
    pub messages_per_batch: u32,
    pub message_size_min_bytes: u32,
    pub message_size_max_bytes: u32,
    pub batches_per_actor: u64,
    pub rate_limit_bytes_per_sec: Option<u64>,
    pub warmup_s: f64,
    pub fsync: bool,
    pub reuse_streams: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figures {
    pub messages: u64,
    pub payload_bytes: u64,
    pub window_s: f64,
    pub mb_per_sec: f64,
    pub messages_per_sec: f64,
    pub latency: Option<LatencySummary>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ActorSummary {
    pub id: u32,
    pub role: RoleKind,
    pub stream: String,
    /// `None` for balanced producers and consumer-group members.
    pub partition: Option<u32>,
    #[serde(flatten)]
    pub figures: Figures,
}

#[derive(Debug, Clone, Serialize)]
pub struct RoleTotal {
    pub role: RoleKind,
    pub actors: usize,
    #[serde(flatten)]
    pub figures: Figures,
}

#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub benchmark: &'static str,
    pub params: Params,
    pub actors: Vec<ActorSummary>,
    pub totals: Vec<RoleTotal>,
    #[serde(skip)]
    pub series: Vec<(RoleKind, Vec<SecondBucket>)>,
}

impl BenchReport {
    pub fn build(plan: &Plan, outcome: &PhaseOutcome) -> Self {
        let origin_us = outcome.measure_from_us;
        let actors = outcome
            .reports
            .iter()
            .map(|report| ActorSummary {
                id: report.actor.id.0,
                role: RoleKind::of(&report.actor.role),
                stream: report.stream_name.clone(),
                partition: partition_of(&report.actor.role),
                figures: figures(&[report], origin_us),
            })
            .collect();
        let mut roles: Vec<RoleKind> = outcome
            .reports
            .iter()
            .map(|report| RoleKind::of(&report.actor.role))
            .collect();
        roles.sort();
        roles.dedup();
        let of_role = |role: RoleKind| -> Vec<&ActorReport> {
            outcome
                .reports
                .iter()
                .filter(|report| RoleKind::of(&report.actor.role) == role)
                .collect()
        };
        let totals = roles
            .iter()
            .map(|&role| RoleTotal {
                role,
                actors: of_role(role).len(),
                figures: figures(&of_role(role), origin_us),
            })
            .collect();
        let series = roles
            .iter()
            .map(|&role| {
                let reports = of_role(role);
                let samples = reports.iter().flat_map(|report| report.samples.iter());
                (role, per_second_series(samples, origin_us))
            })
            .collect();
        Self {
            benchmark: plan.kind.name(),
            params: params(plan),
            actors,
            totals,
            series,
        }
    }
}

fn partition_of(role: &Role) -> Option<u32> {
    match role {
        Role::Producer(Placement::Partition(partition))
        | Role::Consumer(Placement::Partition(partition), _)
        | Role::EndToEnd(partition) => Some(*partition),
        _ => None,
    }
}

/// Volume, rates and latency of some actors over their shared window.
fn figures(reports: &[&ActorReport], origin_us: u64) -> Figures {
    let samples = || reports.iter().flat_map(|report| report.samples.iter());
    let last_us = reports
        .iter()
        .map(|report| report.finished_us)
        .max()
        .unwrap_or(0);
    let window = Duration::from_micros(last_us.saturating_sub(origin_us));
    let throughput = Throughput::of_samples(samples(), window);
    Figures {
        messages: throughput.messages,
        payload_bytes: throughput.payload_bytes,
        window_s: window.as_secs_f64(),
        mb_per_sec: throughput.mb_per_sec(),
        messages_per_sec: throughput.messages_per_sec(),
        latency: LatencySummary::from_latencies(samples().map(|s| s.latency_us).collect()),
    }
}

fn params(plan: &Plan) -> Params {
    let workload = &plan.workload;
    Params {
        transport: match plan.connection.transport {
            Transport::Tcp => "tcp",
            Transport::Http => "http",
            Transport::Quic => "quic",
            Transport::WebSocket => "websocket",
        },
        server_address: plan.connection.address.clone(),
        actors: plan.actors.len(),
        streams: plan.streams.len(),
        partitions_per_stream: plan.streams.first().map_or(0, |stream| stream.partitions),
        messages_per_batch: workload.messages_per_batch,
        message_size_min_bytes: workload.message_size.min_bytes,
        message_size_max_bytes: workload.message_size.max_bytes,
        batches_per_actor: workload.batches_per_actor,
        rate_limit_bytes_per_sec: workload.rate_limit_bytes_per_sec,
        warmup_s: workload.warmup.as_secs_f64(),
        fsync: plan.persisted,
        reuse_streams: plan.reuse_streams,
    }
}

pub fn render_json(report: &BenchReport) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(report)?)
}

pub const CSV_HEADER: &str = "elapsed_s,role,mb_per_s,msgs_per_s,p50_us,p99_us";

/// One row per role per second of the measured window.
pub fn render_csv(report: &BenchReport) -> String {
    let mut out = String::from(CSV_HEADER);
    out.push('\n');
    let optional = |value: Option<u64>| value.map_or(String::new(), |v| v.to_string());
    for (role, series) in &report.series {
        for bucket in series {
            // Writing to a String cannot fail.
            let _ = writeln!(
                out,
                "{},{},{:.3},{:.0},{},{}",
                bucket.elapsed_s,
                role.label(),
                bucket.mb_per_sec,
                bucket.messages_per_sec,
                optional(bucket.p50_us),
                optional(bucket.p99_us),
            );
        }
    }
    out
}

const TABLE_HEADER: [&str; 13] = [
    "actor", "role", "stream", "part", "MB/s", "msgs/s", "p50 ms", "p90 ms", "p95 ms", "p99 ms",
    "p999 ms", "p9999 ms", "max ms",
];

const TABLE_FOOTNOTE: &str = "\nMB/s counts payload bytes (10^6 B). Latency: producers per send, \
consumers per non-empty poll, end-to-end from send start to the batch's last message polled.\n";

/// The human summary: a header line, one row per actor, one per role total.
pub fn render_table(report: &BenchReport) -> String {
    let params = &report.params;
    let mut rows = vec![TABLE_HEADER.map(String::from).to_vec()];
    for actor in &report.actors {
        let partition = actor.partition.map_or("-".to_string(), |p| p.to_string());
        let head = [
            actor.id.to_string(),
            actor.role.label().to_string(),
            actor.stream.clone(),
            partition,
        ];
        rows.push(row(head, &actor.figures));
    }
    for total in &report.totals {
        let head = [
            "total".to_string(),
            format!("{} x{}", total.role.label(), total.actors),
            "-".to_string(),
            "-".to_string(),
        ];
        rows.push(row(head, &total.figures));
    }
    let size = MessageSize {
        min_bytes: params.message_size_min_bytes,
        max_bytes: params.message_size_max_bytes,
    };
    let mut out = format!(
        "{} over {} {}: {} actors, {} streams x {} partitions, \
         {} batches x {} messages of {size} per actor\n\n",
        report.benchmark,
        params.transport,
        params.server_address,
        params.actors,
        params.streams,
        params.partitions_per_stream,
        params.batches_per_actor,
        params.messages_per_batch,
    );
    out.push_str(&align(&rows));
    out.push_str(TABLE_FOOTNOTE);
    out
}

fn row(head: [String; 4], figures: &Figures) -> Vec<String> {
    let mut cells = head.to_vec();
    cells.push(format!("{:.2}", figures.mb_per_sec));
    cells.push(format!("{:.0}", figures.messages_per_sec));
    match &figures.latency {
        Some(latency) => cells.extend(
            latency
                .labelled()
                .iter()
                .map(|&(_, micros)| format!("{:.3}", micros as f64 / 1000.0)),
        ),
        None => cells.extend(std::iter::repeat_n("-".to_string(), 7)),
    }
    cells
}

/// Left-aligns the first four columns and right-aligns the numbers.
fn align(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(String::len)
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for cells in rows {
        let line: Vec<String> = cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (cell, &width))| {
                if c < 4 {
                    format!("{cell:<width$}")
                } else {
                    format!("{cell:>width$}")
                }
            })
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests;
