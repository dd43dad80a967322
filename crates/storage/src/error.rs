//! The storage error type shared by every module of the crate.

use std::io;
use std::path::{Path, PathBuf};

use protocol::batch::BatchError;

use crate::offset::Offset;

/// Why a storage operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("{operation} failed on {path}: {source}")]
    Io {
        operation: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A write or fsync failed earlier; the log refuses every later write
    /// rather than retry and pretend the lost bytes are safe.
    #[error(
        "no space left for partition log {dir}: new messages are refused until space is \
         freed; messages already accepted are kept and written then"
    )]
    NoSpace { dir: PathBuf },
    #[error("partition log {dir} is poisoned by an earlier failure and refuses writes: {cause}")]
    Poisoned { dir: PathBuf, cause: String },
    #[error("partition log {dir} was deleted")]
    Deleted { dir: PathBuf },
    #[error("partition log {dir} was closed")]
    Closed { dir: PathBuf },
    /// The log was purged while the caller waited; its offsets are gone.
    #[error("partition log {dir} was purged")]
    Purged { dir: PathBuf },
    #[error("batch record rejected: {source}")]
    InvalidRecord {
        #[source]
        source: BatchError,
    },
    /// Stored bytes fail verification; they are never served.
    #[error("corrupt data in {file} at byte {position}: {reason}")]
    Corrupt {
        file: PathBuf,
        position: u64,
        reason: String,
    },
    /// The durable offset reservation is used up; a renewal is in flight.
    /// Await `PartitionLog::reserve_offsets` and retry.
    #[error("offsets from {frontier} on are not reserved yet (next offset {next_offset})")]
    OffsetsNotReserved {
        next_offset: Offset,
        frontier: Offset,
    },
    #[error("invalid storage options: {reason}")]
    InvalidOptions { reason: String },
}

pub type Result<T> = std::result::Result<T, StorageError>;

/// Wraps an `io::Error` with the operation and the path it concerned.
pub fn io_error(operation: &'static str, path: &Path) -> impl FnOnce(io::Error) -> StorageError {
    let path = path.to_path_buf();
    move |source| StorageError::Io {
        operation,
        path,
        source,
    }
}

/// Whether an I/O error means the disk (or the quota) is full: such a write
/// can be retried once space is freed, unlike other write failures.
pub fn is_disk_full(error: &std::io::Error) -> bool {
    const ENOSPC: i32 = 28;
    const EDQUOT: i32 = 122;
    matches!(error.raw_os_error(), Some(ENOSPC | EDQUOT))
}
