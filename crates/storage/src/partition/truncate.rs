//! Cutting the newest batches off a log. Only a log whose offsets come
//! from a replicated group (`follow_log_end`) gives offsets back: its
//! replica writes each batch as the op is prepared, and a view change may
//! drop ops it prepared (replication spec §5.5), whose batches it then
//! holds above the group's commit point.
//!
//! Batches still in memory just go; batches in segment files are cut off
//! their files (newer segments removed whole, the last one rescanned up to
//! the cut, as recovery would, its index rebuilt if it named a cut batch),
//! and the cut is fsynced before it returns. Readers never see the cut
//! bytes: the group serves nothing above its commit point, and every batch
//! cut lies above it.

use super::PartitionLog;
use super::direct;
use super::index::{INDEX_EXTENSION, LOG_EXTENSION, segment_path};
use super::recovery::{RecoveryReport, recover_segment};
use crate::error::{Result, io_error};
use crate::offset::Offset;
use crate::seam::{Storage, StorageFile};

impl<S: Storage> PartitionLog<S> {
    /// Cuts every batch at or above `keep_end`, so that `keep_end` is the
    /// next offset. `keep_end` must fall between batches (a batch's base
    /// offset, or the log's end); nothing happens when it is at or past
    /// the end.
    pub async fn truncate_tail(&self, keep_end: Offset) -> Result<()> {
        let _io = self.inner.io.lock().await;
        self.check_writable()?;
        {
            let state = self.state();
            if keep_end >= state.next_offset {
                return Ok(());
            }
            assert!(
                self.inner.options.follow_log_end,
                "only a log that follows a replicated log gives offsets back"
            );
            assert!(
                keep_end >= state.segments[0].start_offset
                    && state.first_offset().is_none_or(|first| keep_end >= first),
                "a cut never reaches below the log's start"
            );
        }
        self.drop_cached_from(keep_end);
        let on_disk_end = {
            let state = self.state();
            let last = state.segments.iter().rev().find_map(|s| s.last_offset);
            last.map_or(state.active().start_offset, Offset::next)
        };
        if on_disk_end > keep_end {
            // Every unwritten batch lies above what is on disk: all gone.
            assert_eq!(
                self.state().unwritten_batches,
                0,
                "unwritten batches are the newest"
            );
            self.cut_files(keep_end).await?;
        }
        let mut state = self.state_mut();
        let newest_cached = state
            .cache
            .back()
            .map(|b| (b.last_offset, b.base_timestamp));
        let newest_on_disk = state
            .segments
            .iter()
            .rev()
            .find_map(|s| s.last_offset.map(|last| (last, s.max_timestamp)));
        let newest = match (newest_cached, newest_on_disk) {
            (Some(cached), Some(disk)) => Some(cached.max(disk)),
            (cached, disk) => cached.or(disk),
        };
        state.next_offset = keep_end;
        state.last_offset = newest.map(|(last, _)| last);
        state.last_timestamp = newest.map_or(0, |(_, timestamp)| timestamp);
        state.durable_end = state.durable_end.min(keep_end);
        // Postconditions: the log ends at the cut, and nothing above it is
        // held in memory or on disk.
        assert!(
            state.written_end() <= keep_end,
            "nothing above the cut is written"
        );
        assert!(
            state.last_offset.is_none_or(|last| last < keep_end),
            "the newest kept offset is below the cut"
        );
        state.check_offsets();
        Ok(())
    }

    /// Drops the cached batches at or above `keep_end` (all of them
    /// newest-first, so from the back of the cache).
    fn drop_cached_from(&self, keep_end: Offset) {
        let mut state = self.state_mut();
        while let Some(batch) = state.cache.back() {
            if batch.base_offset < keep_end {
                assert!(batch.last_offset < keep_end, "a cut falls between batches");
                break;
            }
            let batch = state.cache.pop_back().expect("checked");
            let len = batch.bytes.len() as u64;
            if batch.written {
                state.uncache_written(len);
            } else {
                let messages = batch.last_offset.messages_since(batch.base_offset) + 1;
                state.unwritten_batches -= 1;
                state.unwritten_messages -= messages;
                state.unwritten_bytes -= len;
            }
        }
    }

    /// Cuts the segment files at `keep_end`: newer segments go whole, the
    /// one that holds the cut is rescanned up to it; then fsynced.
    async fn cut_files(&self, keep_end: Offset) -> Result<()> {
        let (storage, dir) = (&self.inner.storage, &self.inner.dir);
        let mut removed = false;
        loop {
            let doomed = {
                let state = self.state();
                (state.segments.len() > 1 && state.active().start_offset >= keep_end)
                    .then(|| state.active().start_offset)
            };
            let Some(start) = doomed else { break };
            self.state_mut().segments.pop();
            for extension in [LOG_EXTENSION, INDEX_EXTENSION] {
                let path = segment_path(dir, start, extension);
                storage
                    .remove_file(&path)
                    .await
                    .map_err(|error| self.poison("segment removal", &path, error))?;
            }
            removed = true;
        }
        let (start, previous_last) = {
            let state = self.state();
            let count = state.segments.len();
            let previous = state.segments[..count - 1]
                .iter()
                .rev()
                .find_map(|s| s.last_offset);
            (state.active().start_offset, previous)
        };
        let mut report = RecoveryReport::default();
        let mut segment = recover_segment(
            storage,
            dir,
            start,
            previous_last,
            &mut report,
            Some(keep_end),
        )
        .await?;
        assert!(
            segment.last_offset.is_none_or(|last| last < keep_end),
            "the rescanned segment ends below the cut"
        );
        if self.inner.options.direct_io {
            let synchronous = self.inner.options.direct_sync;
            segment.direct = direct::open_writer(storage, &segment, synchronous).await?;
        }
        let (log, index) = (segment.log.clone(), segment.index_file.clone());
        let log_path = segment.log_path.clone();
        *self.state_mut().active_mut() = segment;
        log.sync_data()
            .await
            .map_err(|error| self.poison("fsync after a cut", &log_path, error))?;
        let index_path = log_path.with_extension(INDEX_EXTENSION);
        index
            .sync_data()
            .await
            .map_err(io_error("fsync index after a cut", &index_path))?;
        if removed {
            storage
                .sync_dir(dir)
                .await
                .map_err(|error| self.poison("directory fsync", dir, error))?;
        }
        Ok(())
    }
}
