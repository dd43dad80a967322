//! Logging: stdout always, plus `<system.path>/<logging.path>/iggy-server.log`
//! when file logging is enabled. The level comes from `RUST_LOG` when set,
//! otherwise from `system.logging.level`. With telemetry on, spans and log
//! events are also bridged to the OpenTelemetry providers (never those of
//! the exporters' own stack, which would feed themselves).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use opentelemetry::trace::TracerProvider as _;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer as _;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

pub const LOG_FILE_NAME: &str = "iggy-server.log";

pub struct LoggingOptions<'a> {
    pub level: &'a str,
    pub rotation: super::log_file::RotationLimits,
    pub rust_log: Option<&'a str>,
    /// Directory for the log file, or `None` for stdout only.
    pub file_dir: Option<&'a Path>,
    /// The OpenTelemetry providers when `telemetry.enabled`.
    pub telemetry: Option<&'a crate::telemetry::Telemetry>,
}

#[derive(Debug, thiserror::Error)]
pub enum LoggingError {
    #[error(
        "system.logging.level: {value:?} is not a valid filter ({reason}); use e.g. \"info\" or \"warn,server=debug\""
    )]
    BadLevel { value: String, reason: String },
    #[error("cannot open log file {path}: {source}")]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Installs the global subscriber. Returns the log file path if any.
pub fn init(options: &LoggingOptions<'_>) -> Result<Option<PathBuf>, LoggingError> {
    let directive = options
        .rust_log
        .filter(|v| !v.trim().is_empty())
        .unwrap_or(options.level);
    let filter = EnvFilter::try_new(directive).map_err(|e| LoggingError::BadLevel {
        value: directive.to_owned(),
        reason: e.to_string(),
    })?;
    let stdout = tracing_subscriber::fmt::layer().with_target(false);
    let (file_layer, path) = match options.file_dir {
        Some(dir) => {
            let path = dir.join(LOG_FILE_NAME);
            let file = fs::create_dir_all(dir)
                .and_then(|()| {
                    super::log_file::RotatingFile::open(path.clone(), options.rotation.clone())
                })
                .map_err(|source| LoggingError::File {
                    path: path.clone(),
                    source,
                })?;
            let layer = tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .with_writer(Mutex::new(file));
            (Some(layer), Some(path))
        }
        None => (None, None),
    };
    let not_internal = || filter_fn(|meta| !crate::telemetry::is_exporter_internal(meta.target()));
    let otel_traces = options.telemetry.map(|t| {
        tracing_opentelemetry::layer()
            .with_tracer(t.tracer_provider.tracer(crate::telemetry::SCOPE))
            .with_filter(not_internal())
    });
    let otel_logs = options.telemetry.map(|t| {
        opentelemetry_appender_tracing::layer::OpenTelemetryTracingBridge::new(&t.logger_provider)
            .with_filter(not_internal())
    });
    tracing_subscriber::registry()
        .with(filter)
        .with(stdout)
        .with(file_layer)
        .with(otel_traces)
        .with(otel_logs)
        .init();
    Ok(path)
}
