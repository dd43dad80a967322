//! Append throughput of the partition log against a plain sequential
//! `std::fs` write of the same bytes, with and without an fsync per batch.
//!
//! Run: `cargo bench -p storage --bench append`. Prints MB/s for both and
//! the ratio (target: the log reaches at least 80% of the plain write).

use std::error::Error;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use protocol::batch::build_record;
use storage::{LogOptions, PartitionLog, RealStorage};

const BATCHES: usize = 1_000;
const MESSAGE_SIZE_BYTES: usize = 1_000;
/// Messages per batch without / with an fsync per batch.
const MESSAGES_BUFFERED: usize = 100;
const MESSAGES_FSYNCED: usize = 10;
const REPETITIONS: usize = 5;

type BenchResult<T> = Result<T, Box<dyn Error>>;

fn records(messages_per_batch: usize) -> Vec<Vec<u8>> {
    let payload = vec![0xA5u8; MESSAGE_SIZE_BYTES];
    (0..BATCHES)
        .map(|batch| {
            let messages: Vec<(u128, &[u8], &[u8])> = (0..messages_per_batch)
                .map(|i| {
                    (
                        (batch * messages_per_batch + i) as u128,
                        &payload[..],
                        &b""[..],
                    )
                })
                .collect();
            build_record(batch as u64, &messages)
        })
        .collect()
}

fn plain_write(dir: &Path, records: &[Vec<u8>], fsync_each: bool) -> BenchResult<Duration> {
    let path = dir.join("plain.log");
    let started = Instant::now();
    let mut file = std::fs::File::create(&path)?;
    for record in records {
        file.write_all(record)?;
        if fsync_each {
            file.sync_data()?;
        }
    }
    file.sync_data()?;
    let elapsed = started.elapsed();
    std::fs::remove_file(&path)?;
    Ok(elapsed)
}

async fn log_append(dir: &Path, records: Vec<Vec<u8>>, fsync_each: bool) -> BenchResult<Duration> {
    let log_dir = dir.join("partition");
    let options = LogOptions {
        partition_id: 1,
        ..LogOptions::default()
    };
    let (log, _) = PartitionLog::open(RealStorage, &log_dir, options).await?;
    let total_bytes: u64 = records.iter().map(|r| r.len() as u64).sum();
    let started = Instant::now();
    for (index, record) in records.into_iter().enumerate() {
        let receipt = log.append(record, index as u64)?;
        if fsync_each {
            log.wait_durable(receipt.last_offset).await?;
        }
    }
    log.sync().await?;
    let elapsed = started.elapsed();
    let on_disk: u64 = log.segments().iter().map(|s| s.size_bytes).sum();
    let file_bytes: u64 = std::fs::read_dir(&log_dir)?
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.path().extension().is_some_and(|e| e == "log"))
        .map(|entry| entry.metadata().map(|m| m.len()).unwrap_or(0))
        .sum();
    assert_eq!(
        (on_disk, file_bytes),
        (total_bytes, total_bytes),
        "every appended byte is in the segment files"
    );
    log.delete().await?;
    Ok(elapsed)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn scenario(
    runtime: &compio::runtime::Runtime,
    dir: &Path,
    messages: usize,
    fsync_each: bool,
) -> BenchResult<()> {
    let template = records(messages);
    let total_bytes: usize = template.iter().map(Vec::len).sum();
    let (mut plain, mut log) = (Vec::new(), Vec::new());
    for _ in 0..REPETITIONS {
        plain.push(plain_write(dir, &template, fsync_each)?);
        log.push(runtime.block_on(log_append(dir, template.clone(), fsync_each))?);
    }
    let mb = total_bytes as f64 / 1e6;
    let (plain, log) = (median(plain), median(log));
    let (plain_rate, log_rate) = (mb / plain.as_secs_f64(), mb / log.as_secs_f64());
    println!(
        "{BATCHES} batches x {messages} msgs x {MESSAGE_SIZE_BYTES} B = {mb:.1} MB, fsync per batch: {fsync_each}\n  \
         plain std::fs write: {plain_rate:8.1} MB/s ({plain:?})\n  \
         partition log:       {log_rate:8.1} MB/s ({log:?})\n  ratio log/plain: {:.2}",
        log_rate / plain_rate
    );
    Ok(())
}

fn main() -> BenchResult<()> {
    let base = std::env::var_os("BENCH_DIR").map_or_else(std::env::temp_dir, Into::into);
    let dir = tempfile::tempdir_in(base)?;
    let runtime = compio::runtime::Runtime::new()?;
    scenario(&runtime, dir.path(), MESSAGES_BUFFERED, false)?;
    scenario(&runtime, dir.path(), MESSAGES_FSYNCED, true)?;
    Ok(())
}
