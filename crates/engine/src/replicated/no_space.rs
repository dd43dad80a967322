//! A full disk stalls a group instead of stopping it: a journal write or a
//! held batch's write that finds no space is tried again until space is
//! freed (the storage keeps what it buffered), as the single node's
//! metadata journal waits. Every other storage error still fail-stops.

use std::path::Path;
use std::time::Duration;

use storage::StorageError;

/// How long a group waits before it tries a write the disk refused again.
pub const NO_SPACE_RETRY: Duration = Duration::from_millis(200);

/// Runs `step` until it succeeds or fails for anything but a full disk,
/// logging the stall once (and its end).
pub async fn wait_for_space<T>(
    dir: &Path,
    mut step: impl AsyncFnMut() -> Result<T, StorageError>,
) -> Result<T, StorageError> {
    let mut stalled = false;
    loop {
        match step().await {
            Err(StorageError::NoSpace { .. }) => {
                if !stalled {
                    tracing::error!(dir = %dir.display(), "the disk is full: this group's writes wait until space is freed");
                    stalled = true;
                }
                compio::time::sleep(NO_SPACE_RETRY).await;
            }
            done => {
                if stalled {
                    tracing::info!(dir = %dir.display(), "space is available again; the group's writes resume");
                }
                return done;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use consensus::vsr::Limits;
    use consensus::vsr::message::Entry;
    use storage::seam::SimFaults;
    use storage::{SimStorage, Storage};

    use super::super::net::placement;
    use super::super::{
        Effect, Group, Placement, Restore, StateMachine, Submitted, Submitter, Work,
    };

    /// Counts what it applied.
    #[derive(Default)]
    struct Count(u64);

    impl StateMachine for Count {
        async fn apply(&mut self, _entry: &Entry) -> Vec<u8> {
            self.0 += 1;
            Vec::new()
        }
        fn persist_beside(&mut self) -> Option<Work> {
            Some(Box::pin(async { Ok(()) }))
        }
        fn snapshot(&self) -> Vec<u8> {
            self.0.to_le_bytes().to_vec()
        }
        async fn restore(&mut self, bytes: &[u8], _: Restore) -> Result<(), String> {
            self.0 = u64::from_le_bytes(bytes.try_into().map_err(|_| "not 8 bytes")?);
            Ok(())
        }
    }

    /// A group of one whose disk is full as an op is journaled: the op
    /// waits (nothing fails, nothing is answered), and commits, and its
    /// checkpoint completes, once space is back.
    #[compio::test]
    async fn given_a_full_disk_when_a_group_journals_should_wait_then_commit() {
        let storage = SimStorage::new();
        let dir = std::path::Path::new("/data/group");
        storage.create_dir_all(dir).await.expect("dir");
        let limits = Limits {
            checkpoint_interval: 1,
            ..Limits::default()
        };
        let placement = Placement {
            replicas: 1,
            ..placement(0, limits)
        };
        let mut group = Group::open(storage.clone(), dir, placement, 7, Count::default())
            .await
            .expect("opens");
        for _ in 0..20 {
            group.on_tick().await.expect("ticks");
        }
        assert!(group.replica().is_primary(), "a group of one leads");
        let mut submitter = Submitter::new(7, 0);
        storage.set_faults(SimFaults {
            no_space: true,
            ..SimFaults::default()
        });
        let task = compio::runtime::spawn(async move {
            let submitted = submitter
                .submit(&mut group, Bytes::from_static(b"op"), 1_000)
                .await;
            (group, submitted)
        });
        compio::time::sleep(std::time::Duration::from_millis(700)).await;
        assert!(!task.is_finished(), "the op waits for space");
        storage.set_faults(SimFaults::default());
        let (mut group, submitted) = task.await.expect("the task ran");
        let Ok(Submitted::Prepared { effects, .. }) = submitted else {
            panic!("prepared once space is back: {submitted:?}");
        };
        assert!(
            effects.iter().any(|e| matches!(e, Effect::Reply { .. })),
            "committed and answered: {effects:?}"
        );
        assert_eq!(group.machine().0, 1);
        group
            .complete_checkpoint()
            .await
            .expect("the checkpoint completes");
    }
}
