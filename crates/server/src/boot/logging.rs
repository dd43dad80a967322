//! Logging: stdout always, plus `<system.path>/<logging.path>/iggy-server.log`
//! when file logging is enabled. The level comes from `RUST_LOG` when set,
//! otherwise from `system.logging.level`.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

pub const LOG_FILE_NAME: &str = "iggy-server.log";

pub struct LoggingOptions<'a> {
    pub level: &'a str,
    pub rotation: super::log_file::RotationLimits,
    pub rust_log: Option<&'a str>,
    /// Directory for the log file, or `None` for stdout only.
    pub file_dir: Option<&'a Path>,
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
    tracing_subscriber::registry()
        .with(filter)
        .with(stdout)
        .with(file_layer)
        .init();
    Ok(path)
}
