//! Retention and lifecycle: removal of whole sealed segments from the front
//! of the log (never the active one, never past the consumer barrier),
//! selection by expiry or size, purge and deletion.
//!
//! All of it runs under the `io` lock, so it never interleaves with a flush
//! or an fsync. Each pass ends with a directory fsync so that a crash cannot
//! bring removed segments back in front of the log.

use std::path::Path;

use super::index::{INDEX_EXTENSION, LOG_EXTENSION, segment_path};
use super::state::LogState;
use super::{PartitionLog, frontier};
use crate::error::{Result, StorageError, io_error};
use crate::offset::Offset;
use crate::seam::Storage;

impl<S: Storage> PartitionLog<S> {
    /// Deletes up to `count` of the oldest sealed segments. A segment whose
    /// last offset is above `barrier` (the lowest stored consumer offset) is
    /// kept, and so is everything after it. Returns how many were deleted.
    pub async fn delete_oldest_sealed_segments(
        &self,
        count: usize,
        barrier: Option<Offset>,
    ) -> Result<usize> {
        let _io = self.inner.io.lock().await;
        self.check_writable()?;
        let mut deleted = 0;
        while deleted < count {
            let segment = {
                let mut state = self.state_mut();
                let first = &state.segments[0];
                if !first.sealed {
                    break;
                }
                if let (Some(barrier), Some(last)) = (barrier, first.last_offset)
                    && last > barrier
                {
                    tracing::info!(dir = %self.dir().display(), last = last.0, barrier = barrier.0, "segment deletion blocked by committed consumer offset");
                    break;
                }
                let segment = state.segments.remove(0);
                if let Some(last) = segment.last_offset {
                    state.drop_cached_up_to(last);
                }
                state.dir_dirty = true;
                segment
            };
            let index_path = segment.log_path.with_extension(INDEX_EXTENSION);
            let storage = &self.inner.storage;
            storage
                .remove_file(&segment.log_path)
                .await
                .map_err(io_error("remove segment", &segment.log_path))?;
            storage
                .remove_file(&index_path)
                .await
                .map_err(io_error("remove index", &index_path))?;
            deleted += 1;
        }
        if deleted > 0 {
            let dir = &self.inner.dir;
            self.inner
                .storage
                .sync_dir(dir)
                .await
                .map_err(|error| self.poison("directory fsync", dir, error))?;
            self.state_mut().dir_dirty = false;
        }
        Ok(deleted)
    }

    /// How many of the oldest sealed segments are expired: their newest
    /// timestamp plus `expiry_us` is at or before `now_us`. The scan stops
    /// at the first unexpired segment; an unknown (0) timestamp never
    /// expires.
    pub fn expired_sealed_segments(&self, now_us: u64, expiry_us: u64) -> usize {
        let state = self.state();
        let expired = |s: &&super::state::Segment<S::File>| {
            s.sealed && s.max_timestamp != 0 && s.max_timestamp.saturating_add(expiry_us) <= now_us
        };
        state.segments.iter().take_while(expired).count()
    }

    /// How many of the oldest sealed segments must go for the sealed bytes
    /// to fit `budget_bytes` (the active segment is not counted).
    pub fn sealed_segments_over_budget(&self, budget_bytes: u64) -> usize {
        let state = self.state();
        let mut sealed_bytes: u64 = state
            .segments
            .iter()
            .filter(|s| s.sealed)
            .map(|s| s.size_bytes)
            .sum();
        let mut count = 0;
        for segment in state.segments.iter().filter(|s| s.sealed) {
            if sealed_bytes <= budget_bytes {
                break;
            }
            sealed_bytes -= segment.size_bytes;
            count += 1;
        }
        count
    }

    /// Resets the log to one empty segment starting at offset 0. Batches
    /// appended while the purge runs are discarded with the rest.
    pub async fn purge(&self) -> Result<()> {
        self.restart_at(Offset::ZERO).await
    }

    /// Resets the log to one empty segment starting at `start`, dropping
    /// every segment it had (cluster mode: a replica refilling from peers
    /// whose retention already removed what lies below `start`).
    pub async fn restart_at(&self, start: Offset) -> Result<()> {
        self.restart_with(start, None).await
    }

    /// `restart_at`, keeping every batch the log had, written out, as a
    /// log of its own in the new directory `aside` (cluster mode: a purge,
    /// whose purged batches a replica's journal may still name until its
    /// next checkpoint).
    pub async fn restart_at_aside(&self, start: Offset, aside: &Path) -> Result<()> {
        self.restart_with(start, Some(aside)).await
    }

    async fn restart_with(&self, start: Offset, aside: Option<&Path>) -> Result<()> {
        let _io = self.inner.io.lock().await;
        let _frontier = self.inner.frontier_io.lock().await;
        self.check_writable()?;
        let (storage, dir) = (&self.inner.storage, &self.inner.dir);
        if let Some(aside) = aside {
            self.flush_locked().await?;
            self.sync_locked().await?;
            storage
                .create_dir_all(aside)
                .await
                .map_err(io_error("create a directory for purged segments", aside))?;
        }
        let old: Vec<_> = self
            .state()
            .segments
            .iter()
            .map(|s| s.start_offset)
            .collect();
        for old_start in old {
            for extension in [LOG_EXTENSION, INDEX_EXTENSION] {
                let path = segment_path(dir, old_start, extension);
                match aside {
                    // A file the directory already holds was moved there
                    // by this same restart before a crash: the one here is
                    // the empty segment that restart began with, not a
                    // purged batch, so it goes.
                    Some(aside)
                        if storage
                            .exists(&segment_path(aside, old_start, extension))
                            .await
                            .map_err(io_error("look for a purged segment file", aside))? =>
                    {
                        storage
                            .remove_file(&path)
                            .await
                            .map_err(io_error("remove a restarted segment file", &path))?;
                    }
                    Some(aside) => {
                        let to = segment_path(aside, old_start, extension);
                        storage
                            .rename(&path, &to)
                            .await
                            .map_err(io_error("move a purged segment file", &path))?;
                    }
                    None => storage
                        .remove_file(&path)
                        .await
                        .map_err(io_error("remove segment file", &path))?,
                }
            }
        }
        if let Some(aside) = aside {
            storage
                .sync_dir(aside)
                .await
                .map_err(io_error("fsync the purged segments' directory", aside))?;
        }
        let segment = self.create_segment(start).await?;
        let reserved = start.plus(self.inner.options.offset_reservation);
        frontier::store(storage, dir, reserved).await?;
        storage
            .sync_dir(dir)
            .await
            .map_err(|error| self.poison("directory fsync", dir, error))?;
        let mut state = LogState::new(vec![segment], start, None, 0);
        state.frontier = reserved;
        state.shared_cache = self.inner.options.shared_cache.clone();
        state.generation = self.state().generation + 1;
        state.check_offsets();
        *self.state_mut() = state;
        // Postcondition: an empty log whose next message is `start`.
        assert_eq!(self.state().next_offset, start, "restarted at its start");
        Ok(())
    }

    /// Removes the partition directory; every later write fails.
    pub async fn delete(&self) -> Result<()> {
        let _io = self.inner.io.lock().await;
        self.state_mut().deleted = true;
        let dir = &self.inner.dir;
        self.inner
            .storage
            .remove_dir_all(dir)
            .await
            .map_err(io_error("remove partition directory", dir))
    }

    /// Fails with `Purged` when the log was purged since `generation`.
    pub(super) fn check_generation(&self, generation: u64) -> Result<()> {
        if self.state().generation == generation {
            Ok(())
        } else {
            Err(StorageError::Purged {
                dir: self.inner.dir.clone(),
            })
        }
    }
}
