//! Process and host figures for GET_STATS, read from /proc and statvfs.
//! Every reader degrades to zero or "unknown" rather than failing the request.

use std::time::{SystemTime, UNIX_EPOCH};

/// Host and process facts at one moment.
#[derive(Debug, Clone, Default)]
pub struct ProcessStats {
    pub process_id: u32,
    pub cpu_usage_percent: f32,
    pub total_cpu_usage_percent: f32,
    pub memory_usage_bytes: u64,
    pub total_memory_bytes: u64,
    pub available_memory_bytes: u64,
    pub read_bytes: u64,
    pub written_bytes: u64,
    pub threads_count: u32,
    pub hostname: String,
    pub os_name: String,
    pub os_version: String,
    pub kernel_version: String,
    pub free_disk_bytes: u64,
    pub total_disk_bytes: u64,
}

pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn kib_field(text: &str, key: &str) -> u64 {
    text.lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

fn io_field(text: &str, key: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// Collects the figures; `data_dir` chooses the filesystem for disk space.
pub fn collect(data_dir: &std::path::Path, run_time_us: u64) -> ProcessStats {
    let status = read("/proc/self/status");
    let meminfo = read("/proc/meminfo");
    let io = read("/proc/self/io");
    let (free_disk_bytes, total_disk_bytes) = disk_space(data_dir);
    ProcessStats {
        process_id: std::process::id(),
        cpu_usage_percent: process_cpu_percent(run_time_us),
        total_cpu_usage_percent: host_cpu_percent(),
        memory_usage_bytes: kib_field(&status, "VmRSS:"),
        total_memory_bytes: kib_field(&meminfo, "MemTotal:"),
        available_memory_bytes: kib_field(&meminfo, "MemAvailable:"),
        read_bytes: io_field(&io, "read_bytes:"),
        written_bytes: io_field(&io, "write_bytes:"),
        threads_count: io_field(&status, "Threads:") as u32,
        hostname: read("/proc/sys/kernel/hostname").trim().to_owned(),
        os_name: std::env::consts::OS.to_owned(),
        os_version: os_version(),
        kernel_version: read("/proc/sys/kernel/osrelease").trim().to_owned(),
        free_disk_bytes,
        total_disk_bytes,
    }
}

fn os_version() -> String {
    let release = read("/etc/os-release");
    release
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_owned())
        .unwrap_or_else(|| "unknown".to_owned())
}

/// Average CPU use of this process over its lifetime, in percent of one CPU.
fn process_cpu_percent(run_time_us: u64) -> f32 {
    let stat = read("/proc/self/stat");
    // Fields after the command name (which may contain spaces) start after ')'.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return 0.0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 of the full line: 11 and 12 here.
    let cpu_ticks = ticks(11) + ticks(12);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    if run_time_us == 0 {
        return 0.0;
    }
    (cpu_ticks as f64 / hz as f64 * 1e6 / run_time_us as f64 * 100.0) as f32
}

/// Host CPU use since boot, in percent of all CPUs.
fn host_cpu_percent() -> f32 {
    let stat = read("/proc/stat");
    let Some(line) = stat.lines().next() else {
        return 0.0;
    };
    let values: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    let total: u64 = values.iter().sum();
    let idle = values.get(3).copied().unwrap_or(0) + values.get(4).copied().unwrap_or(0);
    if total == 0 {
        0.0
    } else {
        ((total - idle) as f64 / total as f64 * 100.0) as f32
    }
}

fn disk_space(path: &std::path::Path) -> (u64, u64) {
    super::disk_space::filesystem_space(path).unwrap_or((0, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_this_process_when_collecting_should_report_plausible_figures() {
        let stats = collect(std::path::Path::new("."), 1_000_000);
        assert_eq!(stats.process_id, std::process::id());
        assert!(stats.memory_usage_bytes > 0);
        assert!(stats.total_memory_bytes >= stats.available_memory_bytes);
        assert!(stats.threads_count >= 1);
        assert!(stats.total_disk_bytes >= stats.free_disk_bytes);
    }
}
