//! Per-partition figures that any shard may read (topic and stream replies,
//! stats) while only the owning shard writes them. Each partition has one
//! shared cell of atomics; the registry maps namespaces to cells and is only
//! locked when partitions are created or removed, or when a reply lists them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use engine::metadata::{PartitionId, StreamId, TopicId};
use protocol::responses::PartitionInfo;

use super::ownership::namespace;

#[derive(Debug, Default)]
pub struct PartitionStats {
    pub size_bytes: AtomicU64,
    pub messages_count: AtomicU64,
    /// Offset of the last message; meaningful when messages were appended.
    pub current_offset: AtomicU64,
    pub segments_count: AtomicU64,
}

impl PartitionStats {
    pub fn set(
        &self,
        size_bytes: u64,
        messages_count: u64,
        current_offset: u64,
        segments_count: u64,
    ) {
        self.size_bytes.store(size_bytes, Ordering::Relaxed);
        self.messages_count.store(messages_count, Ordering::Relaxed);
        self.current_offset.store(current_offset, Ordering::Relaxed);
        self.segments_count.store(segments_count, Ordering::Relaxed);
    }
}

/// Sums over several partitions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub size_bytes: u64,
    pub messages_count: u64,
}

impl Totals {
    pub fn add(self, other: Totals) -> Totals {
        Totals {
            size_bytes: self.size_bytes + other.size_bytes,
            messages_count: self.messages_count + other.messages_count,
        }
    }
}

#[derive(Debug, Default)]
pub struct PartitionStatsRegistry {
    cells: RwLock<HashMap<u64, Arc<PartitionStats>>>,
}

impl PartitionStatsRegistry {
    /// The cell of a partition, created on first use.
    pub fn cell(&self, ns: u64) -> Arc<PartitionStats> {
        if let Some(cell) = self.read().get(&ns) {
            return cell.clone();
        }
        let mut cells = self.cells.write().unwrap_or_else(|p| p.into_inner());
        cells.entry(ns).or_default().clone()
    }

    pub fn remove(&self, ns: u64) {
        self.cells
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&ns);
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<u64, Arc<PartitionStats>>> {
        // Cells are inserted or removed whole, so a poisoned lock holds a
        // consistent map.
        self.cells.read().unwrap_or_else(|p| p.into_inner())
    }

    pub fn partition_info(
        &self,
        stream: StreamId,
        topic: TopicId,
        partition: PartitionId,
        created_at: u64,
    ) -> PartitionInfo {
        let ns = namespace(stream.0, topic.0, partition.0);
        let cells = self.read();
        let load = |f: fn(&PartitionStats) -> &AtomicU64| {
            cells.get(&ns).map_or(0, |c| f(c).load(Ordering::Relaxed))
        };
        PartitionInfo {
            id: partition.0,
            created_at,
            segments_count: load(|c| &c.segments_count) as u32,
            current_offset: load(|c| &c.current_offset),
            size_bytes: load(|c| &c.size_bytes),
            messages_count: load(|c| &c.messages_count),
        }
    }

    /// Totals over every partition (for stats).
    pub fn totals(&self) -> (Totals, u64) {
        let cells = self.read();
        cells
            .values()
            .fold((Totals::default(), 0), |(t, segments), c| {
                let cell = Totals {
                    size_bytes: c.size_bytes.load(Ordering::Relaxed),
                    messages_count: c.messages_count.load(Ordering::Relaxed),
                };
                (
                    t.add(cell),
                    segments + c.segments_count.load(Ordering::Relaxed),
                )
            })
    }
}
