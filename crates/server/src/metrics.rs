//! Server counters, rendered in the Prometheus text exposition format.
//!
//! One [`Metrics`] is shared by every thread of the server (behind an `Arc`),
//! but each shard thread counts in its own cache-line-aligned slot (chosen
//! by [`bind_thread_to_shard`]; other threads share one more slot), so the
//! data path never bounces a counter's cache line between cores. Every
//! update is a relaxed atomic add on storage allocated once, at
//! construction; a scrape sums the slots.
//!
//! [`Metrics::render`] writes the text format version 0.0.4: for each metric
//! family a `# HELP` line and a `# TYPE` line, then its samples, one per line,
//! as `name value` or `name{label="value",...} value`. Label values are escaped
//! (`\` as `\\`, `"` as `\"`, newline as `\n`). The families are:
//!
//! - `iggy_requests_total{command,transport}`: requests per command and
//!   transport (only series that are above zero);
//! - `http_requests_total`: every HTTP request, whatever its route;
//! - `iggy_messages_received_total`, `iggy_bytes_received_total`,
//!   `iggy_messages_sent_total`, `iggy_bytes_sent_total`;
//! - `iggy_connections{transport}` (open now) and
//!   `iggy_connections_total{transport}` (ever opened);
//! - the gauges of [`Gauges`]: `streams`, `topics`, `partitions`, `segments`,
//!   `messages`, `users`, `clients`;
//! - the histograms `iggy_send_latency_seconds` and
//!   `iggy_poll_latency_seconds`, with `_bucket{le=...}` (cumulative), `_sum`
//!   (seconds) and `_count` samples.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

thread_local! {
    /// The metrics slot of this thread: its shard index, or none.
    static SLOT: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Makes this thread count in shard `index`'s slot (call once when a shard
/// thread starts).
pub fn bind_thread_to_shard(index: usize) {
    SLOT.set(Some(index));
}

/// Client transports, as metric label values "tcp", "quic", "http", "websocket".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Plain or TLS TCP.
    Tcp,
    /// QUIC.
    Quic,
    /// The HTTP API.
    Http,
    /// WebSocket.
    WebSocket,
}

impl Transport {
    /// Every transport, in the order they are rendered.
    const ALL: [Transport; 4] = [Self::Tcp, Self::Quic, Self::Http, Self::WebSocket];

    /// The metric label value: "tcp", "quic", "http" or "websocket".
    pub fn label(self) -> &'static str {
        match self {
            Self::Tcp => "tcp",
            Self::Quic => "quic",
            Self::Http => "http",
            Self::WebSocket => "websocket",
        }
    }

    fn index(self) -> usize {
        match self {
            Self::Tcp => 0,
            Self::Quic => 1,
            Self::Http => 2,
            Self::WebSocket => 3,
        }
    }
}

/// Figures read from the server's state at scrape time.
#[derive(Debug, Clone, Copy, Default)]
pub struct Gauges {
    /// Number of streams.
    pub streams: u64,
    /// Number of topics.
    pub topics: u64,
    /// Number of partitions.
    pub partitions: u64,
    /// Number of segments.
    pub segments: u64,
    /// Number of messages stored.
    pub messages: u64,
    /// Number of users.
    pub users: u64,
    /// Number of connected clients.
    pub clients: u64,
}

/// Upper bounds of the latency buckets in nanoseconds; a last, unbounded
/// bucket (`+Inf`) follows them.
const BUCKET_BOUNDS_NANOS: [u128; 16] = [
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
];

/// The `le` label of each bucket, in seconds, ending with `+Inf`.
const BUCKET_LABELS: [&str; 17] = [
    "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1",
    "0.25", "0.5", "1", "2.5", "5", "10", "+Inf",
];

/// A latency histogram: per-bucket (not cumulative) counts and the sum.
struct Histogram {
    buckets: [AtomicU64; 17],
    sum_micros: AtomicU64,
}

impl Histogram {
    fn new() -> Self {
        Self {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            sum_micros: AtomicU64::new(0),
        }
    }

    fn observe(&self, latency: Duration) {
        let nanos = latency.as_nanos();
        let bucket = BUCKET_BOUNDS_NANOS
            .iter()
            .position(|&bound| nanos <= bound)
            .unwrap_or(BUCKET_BOUNDS_NANOS.len());
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.sum_micros.fetch_add(micros, Ordering::Relaxed);
    }

    /// Adds `other`'s counts into this one (merging per-shard histograms).
    fn absorb(&self, other: &Histogram) {
        for (mine, theirs) in self.buckets.iter().zip(&other.buckets) {
            add(mine, theirs.load(Ordering::Relaxed));
        }
        add(&self.sum_micros, other.sum_micros.load(Ordering::Relaxed));
    }

    fn render(&self, out: &mut String, name: &str, help: &str) {
        family(out, name, "histogram", help);
        let bucket_name = format!("{name}_bucket");
        let mut cumulative = 0u64;
        for (count, le) in self.buckets.iter().zip(BUCKET_LABELS) {
            cumulative += count.load(Ordering::Relaxed);
            sample(out, &bucket_name, &[("le", le)], cumulative);
        }
        let sum_seconds = self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        sample(out, &format!("{name}_sum"), &[], sum_seconds);
        sample(out, &format!("{name}_count"), &[], cumulative);
    }
}

/// One thread's counters.
struct Counters {
    /// One counter per (command, transport), at `command * 4 + transport`.
    requests: Box<[AtomicU64]>,
    http_requests: AtomicU64,
    messages_received: AtomicU64,
    bytes_received: AtomicU64,
    messages_sent: AtomicU64,
    bytes_sent: AtomicU64,
    connections_opened: [AtomicU64; 4],
    connections_closed: [AtomicU64; 4],
    connections_moved: AtomicU64,
    send_latency: Histogram,
    poll_latency: Histogram,
}

impl Counters {
    fn new(commands: usize) -> Self {
        Self {
            requests: (0..commands * Transport::ALL.len())
                .map(|_| AtomicU64::new(0))
                .collect(),
            http_requests: AtomicU64::new(0),
            messages_received: AtomicU64::new(0),
            bytes_received: AtomicU64::new(0),
            messages_sent: AtomicU64::new(0),
            bytes_sent: AtomicU64::new(0),
            connections_opened: std::array::from_fn(|_| AtomicU64::new(0)),
            connections_closed: std::array::from_fn(|_| AtomicU64::new(0)),
            connections_moved: AtomicU64::new(0),
            send_latency: Histogram::new(),
            poll_latency: Histogram::new(),
        }
    }
}

/// A slot on its own cache lines, so two shards never share one.
#[repr(align(128))]
struct Slot(Counters);

/// The server's counters; see the module documentation for what is rendered.
pub struct Metrics {
    commands: &'static [&'static str],
    /// One slot per shard, then the slot of every other thread.
    slots: Box<[Slot]>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("commands", &self.commands.len())
            .field("slots", &self.slots.len())
            .finish_non_exhaustive()
    }
}

/// Picks one counter out of a slot's counters.
type CounterOf = fn(&Counters) -> &AtomicU64;

fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

impl Metrics {
    /// `commands`: the label values of every command, fixed at construction
    /// (e.g. "create_stream", "send_messages"); a command is referred to by
    /// its index in this slice. One slot for each of `shards` shards.
    pub fn with_shards(commands: &'static [&'static str], shards: usize) -> Self {
        let slots = (0..=shards)
            .map(|_| Slot(Counters::new(commands.len())))
            .collect();
        Self { commands, slots }
    }

    /// This thread's counters.
    fn mine(&self) -> &Counters {
        let shared = self.slots.len() - 1;
        let index = SLOT.get().filter(|&i| i < shared).unwrap_or(shared);
        &self.slots[index].0
    }

    /// The sum over every slot of one counter.
    fn total(&self, counter: impl Fn(&Counters) -> &AtomicU64) -> u64 {
        self.slots
            .iter()
            .map(|slot| counter(&slot.0).load(Ordering::Relaxed))
            .fold(0, u64::wrapping_add)
    }

    /// One request of command index `command` arrived over `transport` (an
    /// index out of range is ignored).
    pub fn request(&self, transport: Transport, command: usize) {
        if command < self.commands.len() {
            let slot = command * Transport::ALL.len() + transport.index();
            add(&self.mine().requests[slot], 1);
        }
    }

    /// One HTTP request of any kind (counted outermost, including CORS
    /// preflights and 404s).
    pub fn http_request(&self) {
        add(&self.mine().http_requests, 1);
    }

    /// `messages` messages of `bytes` bytes in all were received from clients.
    pub fn messages_in(&self, messages: u64, bytes: u64) {
        let mine = self.mine();
        add(&mine.messages_received, messages);
        add(&mine.bytes_received, bytes);
    }

    /// `messages` messages of `bytes` bytes in all were sent to clients.
    pub fn messages_out(&self, messages: u64, bytes: u64) {
        let mine = self.mine();
        add(&mine.messages_sent, messages);
        add(&mine.bytes_sent, bytes);
    }

    /// A client connection over `transport` was opened.
    pub fn connection_opened(&self, transport: Transport) {
        add(&self.mine().connections_opened[transport.index()], 1);
    }

    /// A client connection over `transport` was closed. The open count
    /// (opened minus closed, summed at scrape) never goes below zero.
    pub fn connection_closed(&self, transport: Transport) {
        add(&self.mine().connections_closed[transport.index()], 1);
    }

    /// A TCP connection moved to the shard its partition requests go to.
    pub fn connection_moved(&self) {
        add(&self.mine().connections_moved, 1);
    }

    /// Latency of one send (append acknowledged).
    pub fn observe_send(&self, latency: Duration) {
        self.mine().send_latency.observe(latency);
    }

    /// Latency of one poll.
    pub fn observe_poll(&self, latency: Duration) {
        self.mine().poll_latency.observe(latency);
    }

    /// The Prometheus text exposition format (version 0.0.4) of everything
    /// above plus the gauges given.
    pub fn render(&self, gauges: &Gauges) -> String {
        let mut out = String::with_capacity(8 * 1024);
        self.render_requests(&mut out);
        self.render_traffic(&mut out);
        self.render_connections(&mut out);
        render_gauges(&mut out, gauges);
        render_telemetry(&mut out);
        let histograms = [
            (
                "iggy_send_latency_seconds",
                "Latency of sending messages, until the append is acknowledged.",
                (|c: &Counters| &c.send_latency) as fn(&Counters) -> &Histogram,
            ),
            (
                "iggy_poll_latency_seconds",
                "Latency of polling messages.",
                |c: &Counters| &c.poll_latency,
            ),
        ];
        for (name, help, histogram) in histograms {
            let merged = Histogram::new();
            for slot in self.slots.iter() {
                merged.absorb(histogram(&slot.0));
            }
            merged.render(&mut out, name, help);
        }
        out
    }

    fn render_requests(&self, out: &mut String) {
        let name = "iggy_requests_total";
        family(out, name, "counter", "Requests by command and transport.");
        for (command_index, command) in self.commands.iter().enumerate() {
            for transport in Transport::ALL {
                let slot = command_index * Transport::ALL.len() + transport.index();
                let value = self.total(|c| &c.requests[slot]);
                if value > 0 {
                    let labels = [("command", *command), ("transport", transport.label())];
                    sample(out, name, &labels, value);
                }
            }
        }
        let http = self.total(|c| &c.http_requests);
        counter(
            out,
            "http_requests_total",
            "HTTP requests of any kind.",
            http,
        );
    }

    fn render_traffic(&self, out: &mut String) {
        let counters: [(&str, &str, CounterOf); 5] = [
            (
                "iggy_connections_moved_total",
                "TCP connections moved to the shard that owns their partition.",
                |c| &c.connections_moved,
            ),
            (
                "iggy_messages_received_total",
                "Messages received from clients.",
                |c| &c.messages_received,
            ),
            (
                "iggy_bytes_received_total",
                "Bytes of messages received from clients.",
                |c| &c.bytes_received,
            ),
            (
                "iggy_messages_sent_total",
                "Messages sent to clients.",
                |c| &c.messages_sent,
            ),
            (
                "iggy_bytes_sent_total",
                "Bytes of messages sent to clients.",
                |c| &c.bytes_sent,
            ),
        ];
        for (name, help, value) in counters {
            counter(out, name, help, self.total(value));
        }
    }

    fn render_connections(&self, out: &mut String) {
        let name = "iggy_connections";
        family(
            out,
            name,
            "gauge",
            "Client connections open now, by transport.",
        );
        for transport in Transport::ALL {
            let i = transport.index();
            let opened = self.total(|c| &c.connections_opened[i]);
            let closed = self.total(|c| &c.connections_closed[i]);
            let open = opened.saturating_sub(closed);
            sample(out, name, &[("transport", transport.label())], open);
        }
        let name = "iggy_connections_total";
        let help = "Client connections ever opened, by transport.";
        family(out, name, "counter", help);
        for transport in Transport::ALL {
            let i = transport.index();
            let opened = self.total(|c| &c.connections_opened[i]);
            sample(out, name, &[("transport", transport.label())], opened);
        }
    }
}

fn render_gauges(out: &mut String, gauges: &Gauges) {
    let figures = [
        ("streams", "Number of streams.", gauges.streams),
        ("topics", "Number of topics.", gauges.topics),
        ("partitions", "Number of partitions.", gauges.partitions),
        ("segments", "Number of segments.", gauges.segments),
        ("messages", "Number of messages stored.", gauges.messages),
        ("users", "Number of users.", gauges.users),
        ("clients", "Number of connected clients.", gauges.clients),
    ];
    for (name, help, value) in figures {
        family(out, name, "gauge", help);
        sample(out, name, &[], value);
    }
}

/// OpenTelemetry export health: items dropped by the full bounded queues
/// and failed export calls (all zero while telemetry is off).
fn render_telemetry(out: &mut String) {
    use crate::telemetry::export_queue::{DROPPED_LOGS, DROPPED_SPANS, FAILED_EXPORTS};
    let name = "iggy_telemetry_dropped_total";
    family(
        out,
        name,
        "counter",
        "Spans and log records dropped because the export queue was full.",
    );
    sample(
        out,
        name,
        &[("signal", "traces")],
        DROPPED_SPANS.load(Ordering::Relaxed),
    );
    sample(
        out,
        name,
        &[("signal", "logs")],
        DROPPED_LOGS.load(Ordering::Relaxed),
    );
    counter(
        out,
        "iggy_telemetry_export_failures_total",
        "OTLP export calls that failed (their batch is lost).",
        FAILED_EXPORTS.load(Ordering::Relaxed),
    );
}

/// A counter family with a single unlabelled sample.
fn counter(out: &mut String, name: &str, help: &str, value: u64) {
    family(out, name, "counter", help);
    sample(out, name, &[], value);
}

/// The `# HELP` and `# TYPE` lines of a family. `help` must hold no
/// backslash or newline.
fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    for line in [
        format!("# HELP {name} {help}\n"),
        format!("# TYPE {name} {kind}\n"),
    ] {
        out.push_str(&line);
    }
}

/// One sample line: `name{label="value",...} value`.
fn sample(out: &mut String, name: &str, labels: &[(&str, &str)], value: impl std::fmt::Display) {
    out.push_str(name);
    if !labels.is_empty() {
        out.push('{');
        for (i, (label, label_value)) in labels.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(label);
            out.push_str("=\"");
            push_escaped(out, label_value);
            out.push('"');
        }
        out.push('}');
    }
    out.push(' ');
    out.push_str(&value.to_string());
    out.push('\n');
}

/// Appends a label value escaped per the text format.
fn push_escaped(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            other => out.push(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, HashMap};
    use std::sync::Arc;

    const COMMANDS: &[&str] = &["ping", "create_stream", "send_messages", "poll_messages"];

    type Labels = BTreeMap<String, String>;

    /// A parsed exposition: the type of each family and every sample.
    #[derive(Debug, Default)]
    struct Exposition {
        types: HashMap<String, String>,
        samples: Vec<(String, Labels, f64)>,
    }

    impl Exposition {
        /// The value of the one sample with this name and these labels.
        fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
            let wanted: Labels = labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let mut found = self
                .samples
                .iter()
                .filter(|(n, l, _)| n == name && *l == wanted);
            let value = found.next().map(|(_, _, v)| *v);
            assert!(found.next().is_none(), "duplicate sample {name} {labels:?}");
            value
        }

        fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
            self.get(name, labels)
                .unwrap_or_else(|| panic!("no sample {name} {labels:?}"))
        }

        fn count(&self, name: &str) -> usize {
            self.samples.iter().filter(|(n, _, _)| n == name).count()
        }
    }

    /// Parses the text format strictly enough to catch mistakes: every
    /// family has HELP then TYPE before its samples, every sample line is
    /// `name{labels} value` or `name value` with a float value.
    fn parse(text: &str) -> Exposition {
        assert!(text.ends_with('\n'), "output must end with a newline");
        let mut helps = HashMap::new();
        let mut exposition = Exposition::default();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let (name, help) = rest.split_once(' ').expect("HELP has text");
                assert!(!help.is_empty());
                assert!(
                    helps.insert(name.to_string(), ()).is_none(),
                    "two HELP for {name}"
                );
            } else if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').expect("TYPE has a kind");
                assert!(helps.contains_key(name), "TYPE before HELP for {name}");
                assert!(["counter", "gauge", "histogram"].contains(&kind), "{kind}");
                let previous = exposition.types.insert(name.to_string(), kind.to_string());
                assert!(previous.is_none(), "two TYPE for {name}");
            } else {
                let (name, labels, value) = parse_sample(line);
                let family = family_of(&exposition.types, &name);
                assert!(
                    exposition.types.contains_key(&family),
                    "no TYPE before {line}"
                );
                exposition.samples.push((name, labels, value));
            }
        }
        exposition
    }

    /// The family a sample belongs to: histogram samples carry a suffix.
    fn family_of(types: &HashMap<String, String>, name: &str) -> String {
        for suffix in ["_bucket", "_sum", "_count"] {
            if let Some(base) = name.strip_suffix(suffix)
                && types.get(base).is_some_and(|kind| kind == "histogram")
            {
                return base.to_string();
            }
        }
        name.to_string()
    }

    fn parse_sample(line: &str) -> (String, Labels, f64) {
        let name_end = line.find(['{', ' ']).expect("sample has a value");
        let name = &line[..name_end];
        assert!(
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "bad metric name in {line:?}"
        );
        let mut rest = &line[name_end..];
        let mut labels = Labels::new();
        if let Some(after_brace) = rest.strip_prefix('{') {
            rest = parse_labels(after_brace, &mut labels);
        }
        let value = rest.strip_prefix(' ').expect("one space before the value");
        let value: f64 = value.parse().expect("value is a float");
        (name.to_string(), labels, value)
    }

    /// Parses `label="value",...}` and returns what follows the brace.
    fn parse_labels<'a>(mut rest: &'a str, labels: &mut Labels) -> &'a str {
        loop {
            if let Some(after) = rest.strip_prefix('}') {
                return after;
            }
            let (label, after_eq) = rest.split_once("=\"").expect("label=\"value\"");
            let mut value = String::new();
            let mut chars = after_eq.char_indices();
            let end = loop {
                match chars.next().expect("label value is closed") {
                    (i, '"') => break i,
                    (_, '\\') => match chars.next().expect("escape is complete").1 {
                        'n' => value.push('\n'),
                        c @ ('\\' | '"') => value.push(c),
                        other => panic!("bad escape \\{other}"),
                    },
                    (_, '\n') => panic!("raw newline in label value"),
                    (_, c) => value.push(c),
                }
            };
            assert!(labels.insert(label.to_string(), value).is_none());
            rest = &after_eq[end + 1..];
            rest = rest.strip_prefix(',').unwrap_or(rest);
        }
    }

    const SIMPLE_FAMILIES: [&str; 13] = [
        "http_requests_total",
        "iggy_messages_received_total",
        "iggy_bytes_received_total",
        "iggy_messages_sent_total",
        "iggy_bytes_sent_total",
        "streams",
        "topics",
        "partitions",
        "segments",
        "messages",
        "users",
        "clients",
        "iggy_connections",
    ];

    #[test]
    fn fresh_instance_renders_every_family_with_zeros() {
        let metrics = Metrics::with_shards(COMMANDS, 1);
        let exposition = parse(&metrics.render(&Gauges::default()));
        assert_eq!(exposition.types["iggy_requests_total"], "counter");
        assert_eq!(exposition.count("iggy_requests_total"), 0);
        for name in &SIMPLE_FAMILIES[..12] {
            assert!(exposition.types.contains_key(*name), "{name}");
            assert_eq!(exposition.value(name, &[]), 0.0, "{name}");
        }
        for name in ["iggy_connections", "iggy_connections_total"] {
            for transport in ["tcp", "quic", "http", "websocket"] {
                assert_eq!(exposition.value(name, &[("transport", transport)]), 0.0);
            }
        }
        for name in ["iggy_send_latency_seconds", "iggy_poll_latency_seconds"] {
            assert_eq!(exposition.types[name], "histogram");
            assert_eq!(exposition.count(&format!("{name}_bucket")), 17);
            for le in BUCKET_LABELS {
                assert_eq!(
                    exposition.value(&format!("{name}_bucket"), &[("le", le)]),
                    0.0
                );
            }
            assert_eq!(exposition.value(&format!("{name}_sum"), &[]), 0.0);
            assert_eq!(exposition.value(&format!("{name}_count"), &[]), 0.0);
        }
    }

    #[test]
    fn family_kinds() {
        let text = Metrics::with_shards(COMMANDS, 1).render(&Gauges::default());
        let exposition = parse(&text);
        for name in &SIMPLE_FAMILIES[..5] {
            assert_eq!(exposition.types[*name], "counter", "{name}");
        }
        for name in &SIMPLE_FAMILIES[5..] {
            assert_eq!(exposition.types[*name], "gauge", "{name}");
        }
        assert_eq!(exposition.types["iggy_connections_total"], "counter");
        assert_eq!(exposition.types["iggy_connections_moved_total"], "counter");
        assert_eq!(exposition.types["iggy_telemetry_dropped_total"], "counter");
        assert_eq!(
            exposition.types["iggy_telemetry_export_failures_total"],
            "counter"
        );
        assert_eq!(exposition.types.len(), 20);
    }

    #[test]
    fn counters_move_by_what_was_recorded() {
        let metrics = Metrics::with_shards(COMMANDS, 1);
        metrics.request(Transport::Tcp, 2);
        metrics.request(Transport::Tcp, 2);
        metrics.request(Transport::Quic, 2);
        metrics.request(Transport::WebSocket, 0);
        metrics.http_request();
        metrics.http_request();
        metrics.http_request();
        metrics.messages_in(10, 1_000);
        metrics.messages_in(5, 500);
        metrics.messages_out(7, 700);
        let exposition = parse(&metrics.render(&Gauges::default()));

        let requests = |command, transport| {
            exposition.get(
                "iggy_requests_total",
                &[("command", command), ("transport", transport)],
            )
        };
        assert_eq!(requests("send_messages", "tcp"), Some(2.0));
        assert_eq!(requests("send_messages", "quic"), Some(1.0));
        assert_eq!(requests("ping", "websocket"), Some(1.0));
        assert_eq!(requests("send_messages", "http"), None);
        assert_eq!(exposition.count("iggy_requests_total"), 3);
        assert_eq!(exposition.value("http_requests_total", &[]), 3.0);
        assert_eq!(exposition.value("iggy_messages_received_total", &[]), 15.0);
        assert_eq!(exposition.value("iggy_bytes_received_total", &[]), 1_500.0);
        assert_eq!(exposition.value("iggy_messages_sent_total", &[]), 7.0);
        assert_eq!(exposition.value("iggy_bytes_sent_total", &[]), 700.0);
    }

    #[test]
    fn connections_open_and_total() {
        let metrics = Metrics::with_shards(COMMANDS, 1);
        metrics.connection_opened(Transport::Tcp);
        metrics.connection_opened(Transport::Tcp);
        metrics.connection_opened(Transport::Quic);
        metrics.connection_closed(Transport::Tcp);
        metrics.connection_closed(Transport::Http); // never opened: stays at zero
        let exposition = parse(&metrics.render(&Gauges::default()));
        let open = |t| exposition.value("iggy_connections", &[("transport", t)]);
        let total = |t| exposition.value("iggy_connections_total", &[("transport", t)]);
        assert_eq!((open("tcp"), total("tcp")), (1.0, 2.0));
        assert_eq!((open("quic"), total("quic")), (1.0, 1.0));
        assert_eq!((open("http"), total("http")), (0.0, 0.0));
        assert_eq!((open("websocket"), total("websocket")), (0.0, 0.0));
    }

    #[test]
    fn gauges_are_rendered() {
        let gauges = Gauges {
            streams: 1,
            topics: 2,
            partitions: 3,
            segments: 4,
            messages: 5,
            users: 6,
            clients: 7,
        };
        let exposition = parse(&Metrics::with_shards(COMMANDS, 1).render(&gauges));
        let names = &SIMPLE_FAMILIES[5..12];
        for (expected, name) in (1..).zip(names) {
            assert_eq!(exposition.value(name, &[]), f64::from(expected), "{name}");
        }
    }

    fn buckets(exposition: &Exposition, name: &str) -> Vec<f64> {
        BUCKET_LABELS
            .iter()
            .map(|le| exposition.value(&format!("{name}_bucket"), &[("le", le)]))
            .collect()
    }

    #[test]
    fn histogram_is_cumulative() {
        let metrics = Metrics::with_shards(COMMANDS, 1);
        for micros in [50, 100, 101, 3_000, 3_000, 70_000, 20_000_000] {
            metrics.observe_send(Duration::from_micros(micros));
        }
        metrics.observe_poll(Duration::from_millis(1));
        let exposition = parse(&metrics.render(&Gauges::default()));
        let name = "iggy_send_latency_seconds";
        let send = buckets(&exposition, name);
        assert!(send.windows(2).all(|pair| pair[0] <= pair[1]), "{send:?}");
        assert_eq!(send[0], 2.0, "50 µs and exactly 100 µs");
        assert_eq!(send[1], 3.0);
        assert_eq!(send[15], 6.0, "20 s is only in +Inf");
        assert_eq!(send[16], exposition.value(&format!("{name}_count"), &[]));
        assert_eq!(send[16], 7.0);
        let sum = exposition.value(&format!("{name}_sum"), &[]);
        assert!((sum - 20.076251).abs() < 1e-9, "{sum}");

        let poll = buckets(&exposition, "iggy_poll_latency_seconds");
        assert_eq!(poll[2], 0.0);
        assert_eq!(poll[3], 1.0, "1 ms is in le=0.001");
        assert_eq!(
            exposition.value("iggy_poll_latency_seconds_count", &[]),
            1.0
        );
    }

    #[test]
    fn three_ms_lands_in_the_5ms_bucket() {
        let metrics = Metrics::with_shards(COMMANDS, 1);
        metrics.observe_send(Duration::from_millis(3));
        let exposition = parse(&metrics.render(&Gauges::default()));
        let bucket = |le| exposition.value("iggy_send_latency_seconds_bucket", &[("le", le)]);
        assert_eq!(bucket("0.0025"), 0.0);
        assert_eq!(bucket("0.005"), 1.0);
        assert_eq!(bucket("+Inf"), 1.0);
        assert_eq!(
            exposition.value("iggy_send_latency_seconds_sum", &[]),
            0.003
        );
    }

    #[test]
    fn out_of_range_command_is_ignored() {
        let metrics = Metrics::with_shards(COMMANDS, 1);
        metrics.request(Transport::Tcp, COMMANDS.len());
        metrics.request(Transport::Http, usize::MAX);
        let exposition = parse(&metrics.render(&Gauges::default()));
        assert_eq!(exposition.count("iggy_requests_total"), 0);

        let empty = Metrics::with_shards(&[], 1);
        empty.request(Transport::Tcp, 0);
        assert_eq!(
            parse(&empty.render(&Gauges::default())).count("iggy_requests_total"),
            0
        );
    }

    #[test]
    fn label_values_are_escaped() {
        const ODD: &[&str] = &["back\\slash \"quoted\"\nnext"];
        let metrics = Metrics::with_shards(ODD, 1);
        metrics.request(Transport::Tcp, 0);
        let text = metrics.render(&Gauges::default());
        assert!(
            text.contains(r#"command="back\\slash \"quoted\"\nnext""#),
            "{text}"
        );
        let exposition = parse(&text);
        let labels = [("command", ODD[0]), ("transport", "tcp")];
        assert_eq!(exposition.value("iggy_requests_total", &labels), 1.0);
    }

    #[test]
    fn concurrent_updates_add_up() {
        const THREADS: u64 = 4;
        const PER_THREAD: u64 = 10_000;
        let metrics = Arc::new(Metrics::with_shards(COMMANDS, 1));
        let workers: Vec<_> = (0..THREADS)
            .map(|_| {
                let metrics = Arc::clone(&metrics);
                std::thread::spawn(move || {
                    for _ in 0..PER_THREAD {
                        metrics.request(Transport::Tcp, 1);
                        metrics.http_request();
                        metrics.messages_in(2, 100);
                        metrics.messages_out(3, 10);
                        metrics.connection_opened(Transport::Quic);
                        metrics.observe_send(Duration::from_micros(200));
                        metrics.observe_poll(Duration::from_millis(20));
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.join().unwrap();
        }
        let total = (THREADS * PER_THREAD) as f64;
        let exposition = parse(&metrics.render(&Gauges::default()));
        let labels = [("command", "create_stream"), ("transport", "tcp")];
        assert_eq!(exposition.value("iggy_requests_total", &labels), total);
        assert_eq!(exposition.value("http_requests_total", &[]), total);
        assert_eq!(
            exposition.value("iggy_messages_received_total", &[]),
            2.0 * total
        );
        assert_eq!(
            exposition.value("iggy_bytes_received_total", &[]),
            100.0 * total
        );
        assert_eq!(
            exposition.value("iggy_messages_sent_total", &[]),
            3.0 * total
        );
        assert_eq!(exposition.value("iggy_bytes_sent_total", &[]), 10.0 * total);
        let quic = [("transport", "quic")];
        assert_eq!(exposition.value("iggy_connections", &quic), total);
        assert_eq!(exposition.value("iggy_connections_total", &quic), total);
        let send = ("iggy_send_latency_seconds_bucket", [("le", "0.00025")]);
        assert_eq!(exposition.value(send.0, &send.1), total);
        let sum = exposition.value("iggy_send_latency_seconds_sum", &[]);
        assert!((sum - 0.0002 * total).abs() < 1e-6, "{sum}");
        assert_eq!(
            exposition.value("iggy_poll_latency_seconds_count", &[]),
            total
        );
    }

    #[test]
    fn metrics_is_shareable() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Metrics>();
    }

    #[test]
    fn given_counts_on_several_shard_threads_when_rendering_should_sum_their_slots() {
        let metrics = Arc::new(Metrics::with_shards(COMMANDS, 2));
        let threads: Vec<_> = (0..3)
            .map(|i| {
                let metrics = metrics.clone();
                std::thread::spawn(move || {
                    if i < 2 {
                        bind_thread_to_shard(i);
                    }
                    for _ in 0..100 {
                        metrics.messages_in(1, 10);
                        metrics.observe_send(Duration::from_micros(50));
                    }
                    metrics.connection_opened(Transport::Tcp);
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        for slot in metrics.slots.iter() {
            let own = slot.0.messages_received.load(Ordering::Relaxed);
            assert_eq!(own, 100, "each thread counted in its own slot");
        }
        let exposition = parse(&metrics.render(&Gauges::default()));
        assert_eq!(exposition.value("iggy_messages_received_total", &[]), 300.0);
        assert_eq!(exposition.value("iggy_bytes_received_total", &[]), 3000.0);
        assert_eq!(
            exposition.value("iggy_send_latency_seconds_count", &[]),
            300.0
        );
        let tcp = [("transport", "tcp")];
        assert_eq!(exposition.value("iggy_connections", &tcp), 3.0);
        metrics.connection_closed(Transport::Tcp);
        let exposition = parse(&metrics.render(&Gauges::default()));
        assert_eq!(exposition.value("iggy_connections", &tcp), 2.0);
    }
}
