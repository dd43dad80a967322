//! Tests of the partition log: unit scenarios, a property test against an
//! in-memory model, and crash tests on the simulated filesystem.

mod arena;
mod crash;
mod model;
mod recovery;
mod truncate;
mod unit;

use std::path::{Path, PathBuf};

use protocol::batch::{BATCH_HEADER_SIZE, BatchHeader, Frames, build_record};

use super::{LogOptions, PartitionLog, PolledRecord, RecoveryReport};
use crate::offset::Offset;
use crate::seam::SimStorage;

fn dir() -> PathBuf {
    PathBuf::from("/data/streams/1/topics/1/partitions/1")
}

/// Small limits so a few batches roll segments and trigger flushes.
fn small_options() -> LogOptions {
    LogOptions {
        partition_id: 1,
        segment_size_bytes: 4096,
        messages_required_to_save: 8,
        size_of_messages_required_to_save: 2048,
        validate_checksum_on_read: true,
        cache_size_bytes: 1024,
        shared_cache: None,
        offset_reservation: 64,
        direct_io: false,
        direct_sync: false,
        max_unwritten_bytes: 1 << 20,
        follow_log_end: false,
        write_behind_bytes: 0,
    }
}

/// A producer's record of `count` messages whose payloads derive from `tag`.
fn record(tag: u64, count: usize, payload_len: usize) -> Vec<u8> {
    let payloads = payloads(tag, count, payload_len);
    let messages: Vec<(u128, &[u8], &[u8])> = payloads
        .iter()
        .enumerate()
        .map(|(i, p)| (message_id(tag, i), p.as_slice(), &b""[..]))
        .collect();
    build_record(tag, &messages)
}

/// The payloads of the messages `record(tag, count, payload_len)` holds.
fn payloads(tag: u64, count: usize, payload_len: usize) -> Vec<Vec<u8>> {
    (0..count)
        .map(|i| {
            (0..payload_len.max(1))
                .map(|j| (tag as usize * 31 + i * 7 + j) as u8)
                .collect()
        })
        .collect()
}

/// The id of message `index` of `record(tag, ..)`.
fn message_id(tag: u64, index: usize) -> u128 {
    u128::from(tag) << 32 | index as u128
}

/// Every record of the log, as whole records.
async fn all_records<S: crate::seam::Storage>(log: &PartitionLog<S>) -> Vec<Vec<u8>> {
    log.read(Offset(0), u32::MAX, u64::MAX)
        .await
        .expect("read")
        .iter()
        .map(PolledRecord::to_record)
        .collect()
}

async fn open(
    storage: &SimStorage,
    options: LogOptions,
) -> (PartitionLog<SimStorage>, RecoveryReport) {
    PartitionLog::open(storage.clone(), &dir(), options)
        .await
        .expect("open")
}

/// One message as a poll returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Message {
    offset: Offset,
    id: u128,
    timestamp: u64,
    payload: Vec<u8>,
}

/// Checks every polled record (lengths, checksums, contiguous offsets)
/// and flattens it. A sliced record keeps its base offset and the frames'
/// original offset deltas.
fn messages_of(records: &[PolledRecord]) -> Vec<Message> {
    let mut out = Vec::new();
    for polled in records {
        let record = polled.to_record();
        let header = BatchHeader::read(&record).expect("served header");
        assert_eq!(header.batch_length as usize, record.len());
        assert_eq!(header.message_count, polled.count);
        let frames: Vec<_> = Frames::new(&record[BATCH_HEADER_SIZE..])
            .map(|f| f.expect("frame").1)
            .collect();
        assert_eq!(frames.len(), polled.count as usize);
        assert_eq!(
            header.checksum_over(frames.iter().map(|f| f.checksum())),
            header.batch_checksum
        );
        for (index, frame) in frames.iter().enumerate() {
            assert_eq!(
                frame.computed_checksum(),
                frame.checksum(),
                "served frame verifies"
            );
            let offset = Offset(header.base_offset).plus(u64::from(frame.offset_delta()));
            assert_eq!(
                offset,
                polled.first_offset.plus(index as u64),
                "offsets contiguous within a record"
            );
            out.push(Message {
                offset,
                id: frame.id(),
                timestamp: header.base_timestamp,
                payload: frame.payload().to_vec(),
            });
        }
    }
    out
}

fn log_path(start: u64) -> PathBuf {
    dir().join(super::index::segment_file_name(Offset(start), "log"))
}

fn index_path(start: u64) -> PathBuf {
    dir().join(super::index::segment_file_name(Offset(start), "index"))
}

fn file(storage: &SimStorage, path: &Path) -> Vec<u8> {
    storage.file_bytes(path).expect("file exists")
}
