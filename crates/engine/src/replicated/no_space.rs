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
