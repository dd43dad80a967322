//! The direct write handle of a journal whose every record is synced
//! before it is acknowledged (`O_DIRECT | O_DSYNC`, `use_direct_io`).

use std::io;
use std::rc::Rc;

use compio::BufResult;

use super::*;

impl<S: Storage> Journal<S> {
    /// Writes the pending `bytes` through the direct handle: from the
    /// block holding `end`, its `tail` rewritten first, padded with zeros
    /// to a block. Durable when it returns (`O_DSYNC`).
    pub(super) async fn write_direct_locked(
        &self,
        direct_file: &S::File,
        tail: &[u8],
        bytes: Vec<u8>,
        end: u64,
        last: u64,
    ) -> Result<()> {
        let len = bytes.len() as u64;
        let records = [bytes::Bytes::from(bytes)];
        let plan = plan_write(end, tail, &records, None);
        let data_len = plan.data_len;
        let BufResult(written, buffer) = direct_file.write_all_at(plan.buffer, plan.position).await;
        if let Err(error) = written {
            if !crate::error::is_disk_full(&error) {
                return Err(self.poison("direct write", error));
            }
            let mut state = self.inner.state.borrow_mut();
            let mut kept = records[0].to_vec();
            kept.extend_from_slice(&state.pending);
            state.pending = kept;
            return Err(StorageError::NoSpace {
                dir: self.inner.dir.clone(),
            });
        }
        let mut state = self.inner.state.borrow_mut();
        state.end = end + len;
        state.written_sequence = last;
        state.durable_sequence = state.durable_sequence.max(last);
        if let Some(direct) = &mut state.direct {
            direct.tail = AlignedWrite::next_tail(&buffer, data_len);
            assert_eq!(
                direct.tail.len() as u64,
                state.end % DIRECT_IO_ALIGN,
                "the tail is the last partial block"
            );
        }
        Ok(())
    }

    /// Writes from now on go straight to the device, each durable when it
    /// completes (`O_DIRECT | O_DSYNC`): for a journal whose every record
    /// is synced before it is acknowledged, this saves the page-cache copy
    /// and the separate fsync. Returns false where the filesystem has no
    /// direct I/O (the journal stays buffered). The file may then end with
    /// fewer than `DIRECT_IO_ALIGN` zero bytes of padding after its last
    /// record, which `open` cuts off.
    pub async fn use_direct_io(&self) -> Result<bool> {
        let _io = self.inner.io.lock().await;
        self.write_pending_locked().await?;
        self.check_writable()?;
        self.open_direct_locked().await
    }

    /// (Re)opens the direct handle on the current file and loads its tail;
    /// the caller holds the `io` lock and has written every pending record.
    pub(super) async fn open_direct_locked(&self) -> Result<bool> {
        let path = self.path();
        let direct_file = match self.inner.storage.open_direct(&path, true).await {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::Unsupported => {
                tracing::debug!(file = %path.display(), %error, "journal stays buffered");
                self.inner.state.borrow_mut().direct = None;
                return Ok(false);
            }
            Err(error) => return Err(self.poison("open for direct I/O", error)),
        };
        let (file, end, unsynced) = {
            let state = self.inner.state.borrow();
            (
                Rc::clone(&state.file),
                state.end,
                state.written_sequence > state.durable_sequence,
            )
        };
        if unsynced {
            // Records written through the page cache so far become durable
            // before direct writes follow them.
            file.sync_data()
                .await
                .map_err(|error| self.poison("fsync", error))?;
        }
        let tail_len = end % DIRECT_IO_ALIGN;
        let tail = if tail_len == 0 {
            Vec::new()
        } else {
            file.read_exact_at(tail_len as usize, end - tail_len)
                .await
                .map_err(|error| self.poison("read journal tail", error))?
        };
        let mut state = self.inner.state.borrow_mut();
        state.durable_sequence = state.durable_sequence.max(state.written_sequence);
        state.direct = Some(DirectJournal {
            file: Rc::new(direct_file),
            tail,
        });
        Ok(true)
    }
}
