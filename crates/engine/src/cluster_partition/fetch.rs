//! Log fetches between replicas of a partition group: what a replica
//! refilling its log asks (`LogSource`) and what a peer answers from its
//! segments (`serve_fetch`).

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use storage::{Offset, Storage};

use crate::partition::{Partition, PartitionError};

/// What a peer answered to a log fetch: its oldest retained offset, the
/// end of what it sent, and whole batch records from `max(from, first)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    pub first: Offset,
    pub end: Offset,
    pub records: Vec<u8>,
}

/// Fetches committed batches `[from, until)` of this partition from the
/// peers (the node's replica links): it picks the peer, waits, retries,
/// and fails only once it gives up.
pub type LogSource =
    Rc<dyn Fn(Offset, Offset) -> Pin<Box<dyn Future<Output = Result<Fetched, String>>>>>;

/// A peer's answer to a log fetch from this replica's segments: whole
/// committed batches from `from` (at most about `max_bytes`, at least one
/// batch), none reaching `until`. Everything in the segments is committed:
/// a replica appends only what it applies. The asker refills the log of
/// purge number `generation`: a log of another generation (offsets restart
/// at every purge) sends nothing, and the asker tries again.
pub async fn serve_fetch<S: Storage>(
    partition: &Partition<S>,
    from: Offset,
    until: Offset,
    max_bytes: u64,
    generation: u64,
) -> Result<Fetched, PartitionError> {
    if generation != partition.purge_generation() {
        return Ok(Fetched {
            first: from,
            end: from,
            records: Vec::new(),
        });
    }
    let log = partition.log();
    let end_of_log = partition.committed_end();
    let first = log.first_offset().unwrap_or(end_of_log);
    let mut fetched = Fetched {
        first,
        end: from.max(first),
        records: Vec::new(),
    };
    if fetched.end >= until.min(end_of_log) {
        return Ok(fetched);
    }
    for record in log.read(fetched.end, u32::MAX, max_bytes).await? {
        let end = record.first_offset.plus(u64::from(record.count));
        if end > until.min(end_of_log) || record.first_offset != fetched.end {
            break;
        }
        fetched.records.extend_from_slice(&record.header);
        fetched.records.extend_from_slice(record.frame_bytes());
        fetched.end = end;
    }
    Ok(fetched)
}
