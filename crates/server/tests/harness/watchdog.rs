//! A limit on how long a test may hold its servers. A server that stops
//! answering leaves an SDK call waiting for ever; past the limit the whole
//! test binary exits non-zero with each server's last output, so a hang
//! fails the suite with its story instead of running out CI's clock.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::PathBuf;
use std::sync::mpsc::{RecvTimeoutError, Sender, channel};
use std::time::Duration;

/// The default limit; `IGGY_TEST_WATCHDOG_SECS` overrides it.
const LIMIT: Duration = Duration::from_secs(420);
/// How many of each server's last output lines are printed.
const TAIL_LINES: usize = 60;

/// Armed while held; dropping it disarms.
pub struct Watchdog {
    _disarm: Sender<()>,
}

impl Watchdog {
    /// Arms the limit for the calling test over the servers working in
    /// `workdirs`. The fault soak (`IGGY_CLUSTER_FAULT_SOAK`) runs as long
    /// as it is asked to: it gets no limit.
    pub fn arm(workdirs: Vec<PathBuf>) -> Watchdog {
        let (disarm, disarmed) = channel::<()>();
        let test = std::thread::current()
            .name()
            .unwrap_or("an unnamed test")
            .to_owned();
        let limit = std::env::var("IGGY_TEST_WATCHDOG_SECS")
            .ok()
            .and_then(|secs| secs.parse().ok())
            .map_or(LIMIT, Duration::from_secs);
        let soak = std::env::var_os("IGGY_CLUSTER_FAULT_SOAK").is_some();
        std::thread::spawn(move || {
            if soak || disarmed.recv_timeout(limit) != Err(RecvTimeoutError::Timeout) {
                return;
            }
            // Straight to the process's stderr: the test's captured output
            // (which `eprintln!` would join) is never printed on exit.
            let mut report =
                format!("\n{test} still holds its servers after {limit:?}: failing the run\n");
            for dir in &workdirs {
                let output = super::output(dir);
                let lines: Vec<&str> = output.lines().collect();
                report.push_str(&format!(
                    "---- last output of the server in {}\n",
                    dir.display()
                ));
                for line in &lines[lines.len().saturating_sub(TAIL_LINES)..] {
                    report.push_str(line);
                    report.push('\n');
                }
            }
            let _ = std::io::stderr().write_all(report.as_bytes());
            kill_children();
            std::process::exit(101);
        });
        Watchdog { _disarm: disarm }
    }
}

/// Kills this process's children (its servers): an exit runs no test's
/// clean-up, and they would outlive the run.
fn kill_children() {
    let own = std::process::id().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid ...`: the name may hold spaces, not ')'.
        let parent = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1));
        if parent == Some(own.as_str()) {
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}
