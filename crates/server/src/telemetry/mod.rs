//! OpenTelemetry export (configuration §7.9, docs/telemetry.md): traces and
//! logs over OTLP, by gRPC or HTTP/protobuf, with `service.name` from
//! `telemetry.service_name`.
//!
//! Order of events: boot calls [`start`] before logging is installed; it
//! builds the two exporter threads ([`export_queue`]) and the SDK providers,
//! and sets [`enabled`]. Logging then adds the `tracing` bridges. Each
//! request (binary command or HTTP route) runs inside the span
//! [`request_span`] or [`http_span`] make; with telemetry off they return
//! `Span::none()`, so the per-request cost is one relaxed atomic load.
//! HTTP requests continue the caller's trace from a W3C `traceparent`.

pub mod export_queue;

use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::KeyValue;
use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::logs::SdkLoggerProvider;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use server::config::{TelemetryConfig, TelemetryExportConfig, TelemetryTransport};
use tracing::Span;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use export_queue::{QueuedLogs, QueuedSpans};

/// The instrumentation scope of everything this server exports.
pub const SCOPE: &str = "iggy-server";
/// The `tracing` target of request spans.
pub const REQUEST_TARGET: &str = "iggy::request";

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Whether spans and logs are exported (set once at start-up).
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// The running providers; [`Telemetry::shutdown`] flushes them.
pub struct Telemetry {
    pub tracer_provider: SdkTracerProvider,
    pub logger_provider: SdkLoggerProvider,
}

#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("telemetry.{signal}: cannot start the OTLP exporter for {endpoint:?}: {reason}")]
    Exporter {
        signal: &'static str,
        endpoint: String,
        reason: String,
    },
}

/// Starts export when `telemetry.enabled`; `None` otherwise.
pub fn start(config: &TelemetryConfig) -> Result<Option<Telemetry>, TelemetryError> {
    if !config.enabled {
        return Ok(None);
    }
    let resource = Resource::builder_empty()
        .with_service_name(config.service_name.clone())
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
        .build();
    let spans = {
        let (settings, resource) = (config.traces.clone(), resource.clone());
        QueuedSpans::start(move || span_exporter(&settings, &resource))
    }
    .map_err(|reason| exporter_error("traces", &config.traces, reason))?;
    let logs = {
        let (settings, resource) = (config.logs.clone(), resource.clone());
        QueuedLogs::start(move || log_exporter(&settings, &resource))
    }
    .map_err(|reason| exporter_error("logs", &config.logs, reason))?;
    let tracer_provider = SdkTracerProvider::builder()
        .with_span_processor(spans)
        .with_resource(resource.clone())
        .build();
    let logger_provider = SdkLoggerProvider::builder()
        .with_log_processor(logs)
        .with_resource(resource)
        .build();
    ENABLED.store(true, Ordering::Relaxed);
    Ok(Some(Telemetry {
        tracer_provider,
        logger_provider,
    }))
}

impl Telemetry {
    /// Exports what is queued and stops the exporter threads.
    pub fn shutdown(&self) {
        ENABLED.store(false, Ordering::Relaxed);
        if let Err(e) = self.tracer_provider.shutdown() {
            eprintln!("telemetry: traces did not shut down cleanly: {e}");
        }
        if let Err(e) = self.logger_provider.shutdown() {
            eprintln!("telemetry: logs did not shut down cleanly: {e}");
        }
    }
}

fn exporter_error(
    signal: &'static str,
    settings: &TelemetryExportConfig,
    reason: String,
) -> TelemetryError {
    TelemetryError::Exporter {
        signal,
        endpoint: settings.endpoint.clone(),
        reason,
    }
}

fn span_exporter(
    settings: &TelemetryExportConfig,
    resource: &Resource,
) -> Result<opentelemetry_otlp::SpanExporter, String> {
    use opentelemetry_sdk::trace::SpanExporter as _;
    let builder = opentelemetry_otlp::SpanExporter::builder();
    let built = match settings.transport {
        TelemetryTransport::Grpc => builder
            .with_tonic()
            .with_endpoint(&settings.endpoint)
            .build(),
        TelemetryTransport::Http => builder
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(&settings.endpoint)
            .build(),
    };
    let mut exporter = built.map_err(|e| e.to_string())?;
    exporter.set_resource(resource);
    Ok(exporter)
}

fn log_exporter(
    settings: &TelemetryExportConfig,
    resource: &Resource,
) -> Result<opentelemetry_otlp::LogExporter, String> {
    use opentelemetry_sdk::logs::LogExporter as _;
    let builder = opentelemetry_otlp::LogExporter::builder();
    let built = match settings.transport {
        TelemetryTransport::Grpc => builder
            .with_tonic()
            .with_endpoint(&settings.endpoint)
            .build(),
        TelemetryTransport::Http => builder
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(&settings.endpoint)
            .build(),
    };
    let mut exporter = built.map_err(|e| e.to_string())?;
    exporter.set_resource(resource);
    Ok(exporter)
}

/// Whether a `tracing` target belongs to the exporters' own stack; such
/// events are never exported, or exporting would feed itself.
pub fn is_exporter_internal(target: &str) -> bool {
    const PREFIXES: [&str; 8] = [
        "opentelemetry",
        "tonic",
        "h2",
        "hyper",
        "tower",
        "reqwest",
        "rustls",
        "tokio",
    ];
    PREFIXES.iter().any(|prefix| target.starts_with(prefix))
}

/// The span of one binary-protocol command.
pub fn request_span(transport: &'static str, command: &'static str) -> Span {
    if !enabled() {
        return Span::none();
    }
    tracing::info_span!(
        target: REQUEST_TARGET,
        "request",
        otel.name = command,
        otel.kind = "server",
        otel.status_code = Empty,
        command,
        transport,
        stream = Empty,
        topic = Empty,
        partition = Empty,
        outcome = Empty,
    )
}

/// The span of one HTTP request: the command is recorded once routed
/// ([`record_command`]); the stream, topic and partition come from the path
/// and the `partition_id` query parameter; the parent from `traceparent`.
pub fn http_span(method: &hyper::Method, uri: &hyper::Uri, headers: &hyper::HeaderMap) -> Span {
    if !enabled() {
        return Span::none();
    }
    let span = request_span("http", "http");
    span.record("otel.name", format!("HTTP {method}"));
    let parent = TraceContextPropagator::new().extract(&HeaderExtractor(headers));
    // A missing or malformed traceparent leaves the span a root.
    let _ = span.set_parent(parent);
    let scope = PathScope::of(uri.path(), uri.query().unwrap_or_default());
    record_scope(&span, scope.stream, scope.topic, scope.partition);
    span
}

/// Names the command a request turned out to be.
pub fn record_command(span: &Span, command: &'static str) {
    if !span.is_none() {
        span.record("command", command);
        span.record("otel.name", command);
    }
}

/// The stream, topic and partition a request acted on, where known.
pub fn record_scope(
    span: &Span,
    stream: Option<impl tracing::Value>,
    topic: Option<impl tracing::Value>,
    partition: Option<impl tracing::Value>,
) {
    if span.is_none() {
        return;
    }
    if let Some(stream) = stream {
        span.record("stream", stream);
    }
    if let Some(topic) = topic {
        span.record("topic", topic);
    }
    if let Some(partition) = partition {
        span.record("partition", partition);
    }
}

/// The partition the current request resolved to (binary handlers).
pub fn record_partition(stream: u32, topic: u32, partition: u32) {
    if enabled() {
        record_scope(&Span::current(), Some(stream), Some(topic), Some(partition));
    }
}

/// How a request ended: `ok`, or the error it was answered with.
pub fn record_outcome(span: &Span, ok: bool, outcome: &dyn std::fmt::Display) {
    if span.is_none() {
        return;
    }
    span.record("outcome", tracing::field::display(outcome));
    if !ok {
        span.record("otel.status_code", "error");
    }
}

/// The `{stream}`, `{topic}` and `{partition}` segments of an HTTP path
/// (`/streams/{s}/topics/{t}/partitions/{p}/...`), else the `partition_id`
/// query parameter.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct PathScope<'a> {
    pub stream: Option<&'a str>,
    pub topic: Option<&'a str>,
    pub partition: Option<&'a str>,
}

impl<'a> PathScope<'a> {
    pub fn of(path: &'a str, query: &'a str) -> Self {
        let mut scope = Self::default();
        let mut segments = path.split('/').filter(|s| !s.is_empty());
        while let Some(segment) = segments.next() {
            let slot = match segment {
                "streams" => &mut scope.stream,
                "topics" => &mut scope.topic,
                "partitions" => &mut scope.partition,
                _ => continue,
            };
            *slot = segments.next();
        }
        if scope.partition.is_none() {
            scope.partition = query
                .split('&')
                .find_map(|pair| pair.strip_prefix("partition_id="));
        }
        scope
    }
}

struct HeaderExtractor<'a>(&'a hyper::HeaderMap);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|name| name.as_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_message_paths_when_scoping_should_find_stream_topic_and_partition() {
        let scope = PathScope::of(
            "/streams/orders/topics/eu/messages",
            "partition_id=3&count=1",
        );
        assert_eq!(
            scope,
            PathScope {
                stream: Some("orders"),
                topic: Some("eu"),
                partition: Some("3"),
            }
        );
        let scope = PathScope::of("/streams/1/topics/2/partitions/0/segments", "");
        assert_eq!(scope.partition, Some("0"));
        assert_eq!(PathScope::of("/stats", ""), PathScope::default());
        assert_eq!(PathScope::of("/streams", "").stream, None);
    }

    #[test]
    fn given_disabled_telemetry_when_making_spans_should_make_none() {
        assert!(!enabled());
        assert!(request_span("tcp", "ping").is_none());
        let span = http_span(
            &hyper::Method::GET,
            &"/streams/1".parse().unwrap(),
            &hyper::HeaderMap::new(),
        );
        assert!(span.is_none());
    }

    #[test]
    fn given_exporter_targets_when_filtering_should_keep_them_out() {
        assert!(is_exporter_internal("h2::codec"));
        assert!(is_exporter_internal("opentelemetry_sdk"));
        assert!(!is_exporter_internal("server::boot"));
        assert!(!is_exporter_internal(REQUEST_TARGET));
    }
}
