//! The diagnostics snapshot (command 11): a ZIP archive with the requested
//! sections, built from what the server can read about itself. Entries are
//! stored uncompressed whatever compression was asked for (ZIP readers do
//! not care); see `zip`.

mod zip;

use std::fmt::Write as _;
use std::path::Path;

use protocol::ErrorCode;

use crate::node::context::ServerContext;
use crate::node::process_stats;

/// Snapshot section codes (binary spec §8.9).
const FILESYSTEM_OVERVIEW: u8 = 1;
const PROCESS_LIST: u8 = 2;
const RESOURCE_USAGE: u8 = 3;
const TEST: u8 = 4;
const SERVER_LOGS: u8 = 5;
const SERVER_CONFIG: u8 = 6;
const ALL: u8 = 100;
/// Compression codes the protocol defines (1 Stored ..= 6 Xz).
const COMPRESSION_CODES: std::ops::RangeInclusive<u8> = 1..=6;
/// The log section keeps at most this much of the newest log.
const LOG_TAIL_BYTES: u64 = 8 * 1024 * 1024;
/// Files listed in the filesystem overview at most.
const OVERVIEW_MAX_ENTRIES: usize = 100_000;

pub fn snapshot(ctx: &ServerContext, compression: u8, types: &[u8]) -> Result<Vec<u8>, ErrorCode> {
    if !COMPRESSION_CODES.contains(&compression) || types.is_empty() {
        return Err(ErrorCode::InvalidCommand);
    }
    let all = types.contains(&ALL);
    let wanted = |code: u8| all || types.contains(&code);
    if let Some(unknown) = types
        .iter()
        .find(|t| !(FILESYSTEM_OVERVIEW..=SERVER_CONFIG).contains(*t) && **t != ALL)
    {
        tracing::debug!(unknown, "unknown snapshot section");
        return Err(ErrorCode::InvalidCommand);
    }
    let mut zip = zip::ZipWriter::default();
    if wanted(FILESYSTEM_OVERVIEW) {
        zip.add(
            "filesystem_overview.txt",
            filesystem_overview(&ctx.data_path).as_bytes(),
        );
    }
    if wanted(PROCESS_LIST) {
        zip.add("process_list.txt", process_list().as_bytes());
    }
    if wanted(RESOURCE_USAGE) {
        zip.add("resource_usage.txt", resource_usage(ctx).as_bytes());
    }
    if wanted(TEST) {
        zip.add("test.txt", b"test\n");
    }
    if wanted(SERVER_LOGS) {
        zip.add(
            "server_logs.txt",
            &log_tail(&ctx.data_path.join("logs").join("iggy-server.log")),
        );
    }
    if wanted(SERVER_CONFIG) {
        let dump = std::fs::read(ctx.data_path.join("runtime").join("current_config.toml"))
            .unwrap_or_default();
        zip.add("server_config.toml", &dump);
    }
    Ok(zip.finish())
}

fn filesystem_overview(root: &Path) -> String {
    let mut out = String::new();
    let mut stack = vec![root.to_owned()];
    let mut listed = 0;
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                stack.push(path.clone());
            }
            let shown = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .display()
                .to_string();
            let _ = writeln!(
                out,
                "{:>14} {}{}",
                meta.len(),
                shown,
                if meta.is_dir() { "/" } else { "" }
            );
            listed += 1;
            if listed >= OVERVIEW_MAX_ENTRIES {
                out.push_str("... (truncated)\n");
                return out;
            }
        }
    }
    out
}

fn process_list() -> String {
    let mut out = String::from("   pid  name\n");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    let mut pids: Vec<u32> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    pids.sort_unstable();
    for pid in pids {
        let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        let _ = writeln!(out, "{pid:>6}  {}", name.trim());
    }
    out
}

fn resource_usage(ctx: &ServerContext) -> String {
    let run_time_us = process_stats::now_us().saturating_sub(ctx.started_at_us);
    let s = process_stats::collect(&ctx.data_path, run_time_us);
    format!(
        "process_id: {}\ncpu_usage_percent: {:.2}\ntotal_cpu_usage_percent: {:.2}\nmemory_usage_bytes: {}\n\
         total_memory_bytes: {}\navailable_memory_bytes: {}\nread_bytes: {}\nwritten_bytes: {}\nthreads: {}\n\
         free_disk_bytes: {}\ntotal_disk_bytes: {}\nrun_time_us: {run_time_us}\n",
        s.process_id,
        s.cpu_usage_percent,
        s.total_cpu_usage_percent,
        s.memory_usage_bytes,
        s.total_memory_bytes,
        s.available_memory_bytes,
        s.read_bytes,
        s.written_bytes,
        s.threads_count,
        s.free_disk_bytes,
        s.total_disk_bytes,
    )
}

fn log_tail(path: &Path) -> Vec<u8> {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let start = len.saturating_sub(LOG_TAIL_BYTES);
    let mut out = Vec::new();
    if file.seek(SeekFrom::Start(start)).is_ok() {
        let _ = file.take(LOG_TAIL_BYTES).read_to_end(&mut out);
    }
    out
}
