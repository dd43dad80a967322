//! The machine's memory, for the settings that claim it at start.

use anyhow::ensure;
use server::config::{ByteSize, SystemPartitionConfig};

/// A partition cache touched at start (`system.partition.cache_prefault`)
/// must leave a quarter of the memory the server may use (the machine's,
/// or its cgroup's limit when lower) to everything else: past that the
/// kernel would kill the server while it starts.
pub fn check_cache_prefault(partition: &SystemPartitionConfig) -> anyhow::Result<()> {
    if !partition.cache_prefault {
        return Ok(());
    }
    let Some(available) = usable_memory_bytes() else {
        return Ok(());
    };
    let wanted = partition.cache_size.as_bytes();
    ensure!(
        wanted <= available / 4 * 3,
        "system.partition.cache_size = {} with system.partition.cache_prefault = true is more \
         than three quarters of the memory this server may use ({}); lower cache_size or set \
         cache_prefault = false",
        partition.cache_size,
        ByteSize::new(available)
    );
    Ok(())
}

/// The machine's memory (`MemTotal`), or the cgroup's limit when lower;
/// `None` when neither can be read.
fn usable_memory_bytes() -> Option<u64> {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| mem_total(&text));
    let limit = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok());
    match (total, limit) {
        (Some(total), Some(limit)) => Some(total.min(limit)),
        (total, limit) => total.or(limit),
    }
}

/// `MemTotal` of a `/proc/meminfo` text, in bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_meminfo_when_reading_mem_total_should_give_bytes() {
        let text = "MemTotal:       24576000 kB\nMemFree:        1000 kB\n";
        assert_eq!(mem_total(text), Some(24_576_000 * 1024));
        assert_eq!(mem_total("MemFree: 1 kB\n"), None);
    }
}
