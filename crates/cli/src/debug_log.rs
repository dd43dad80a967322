//! `-d/--debug FILE` (spec §3.2): the file is removed, then receives a
//! TRACE-level log of the whole run: the SDK's events (connecting, retries,
//! every request sent and answered) and the CLI's own (start, the output
//! lines it prints, warnings, the final error and exit code), each with a
//! timestamp, level, thread and target, without colour codes. Crates that
//! log through `log` rather than `tracing` are forwarded into it too.
//! Nothing else is written to stdout or stderr, so output is unchanged.
//! The file is created with mode 0600 (it can hold tokens the run prints).
//! A file that cannot be created is a warning, not a failure of the run.

use crate::output::{TARGET, warn};
use std::fs::{File, OpenOptions};
use std::path::Path;
use std::sync::Mutex;
use tracing::level_filters::LevelFilter;

/// Replaces `path` with a fresh log and installs it as the global
/// subscriber for the rest of the process.
pub fn start(path: &Path) {
    let _ = std::fs::remove_file(path);
    let file = match create(path) {
        Ok(file) => file,
        Err(e) => {
            warn(&format!(
                "cannot write the debug log to {}: {e}",
                path.display()
            ));
            return;
        }
    };
    let installed = tracing_subscriber::fmt()
        .with_max_level(LevelFilter::TRACE)
        .with_ansi(false)
        .with_target(true)
        .with_thread_ids(true)
        .with_writer(Mutex::new(file))
        .try_init();
    if let Err(e) = installed {
        warn(&format!("cannot start the debug log: {e}"));
        return;
    }
    tracing::debug!(
        target: TARGET,
        version = env!("CARGO_PKG_VERSION"),
        "iggy-cli started with a debug log"
    );
}

fn create(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}
