//! The storage seam: the narrow set of file and directory operations the
//! storage engine performs, so that crash tests can swap the real
//! filesystem for a simulated one and stop durability after the N-th sync.
//!
//! Everything runs on one shard's single-threaded compio runtime, so the
//! traits use `async fn` without `Send` bounds and every method takes
//! `&self`: several tasks of the same thread may share one file handle.
//! Buffers follow compio's owned-buffer style: a write takes ownership of
//! the buffer and hands it back in a [`BufResult`].
//!
//! Durability contract (what [`sim::SimStorage`] models and the engine must
//! respect): file contents are durable only up to the last `sync_data` of
//! that file; a created, renamed or removed directory entry is durable only
//! after `sync_dir` of its parent directory.

pub mod real;
pub mod sim;

use std::io;
use std::path::Path;

use compio::BufResult;
use compio::buf::{IoBuf, IoVectoredBuf};

pub use real::RealStorage;
pub use sim::{CrashMode, SimFaults, SimStorage};

/// A filesystem as seen by the storage engine.
// `async fn` in a public trait cannot promise `Send` futures; that is
// intended: storage futures never leave their shard's thread.
#[allow(async_fn_in_trait)]
pub trait Storage: Clone + 'static {
    type File: StorageFile;

    /// Opens an existing file for reading and writing.
    async fn open(&self, path: &Path) -> io::Result<Self::File>;
    /// Creates a file (truncating an existing one) for reading and writing.
    async fn create(&self, path: &Path) -> io::Result<Self::File>;
    /// Opens an existing file for direct writes (`O_DIRECT`), which bypass
    /// the page cache; with `synchronous` also `O_DSYNC`: a completed write
    /// is durable, as if followed by `sync_data`. Each write's position,
    /// length and buffer address must be multiples of
    /// [`DIRECT_IO_ALIGN`]. Fails with `Unsupported` where the
    /// filesystem has no direct I/O.
    async fn open_direct(&self, path: &Path, synchronous: bool) -> io::Result<Self::File>;
    async fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Atomically replaces `to` with `from`.
    async fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    async fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    async fn remove_dir_all(&self, path: &Path) -> io::Result<()>;
    /// The names of the entries directly inside `path`, sorted.
    async fn read_dir(&self, path: &Path) -> io::Result<Vec<String>>;
    /// Makes the entries of directory `path` (creations, renames, removals)
    /// durable.
    async fn sync_dir(&self, path: &Path) -> io::Result<()>;
    async fn exists(&self, path: &Path) -> io::Result<bool>;
}

/// The alignment of direct (`O_DIRECT`) writes: offsets, lengths and
/// buffers are multiples of it.
pub const DIRECT_IO_ALIGN: u64 = 4096;

/// An open file with positional I/O.
#[allow(async_fn_in_trait)]
pub trait StorageFile: 'static {
    /// Reads exactly `len` bytes at `pos`; fails with `UnexpectedEof` when
    /// the file is shorter.
    async fn read_exact_at(&self, len: usize, pos: u64) -> io::Result<Vec<u8>>;
    /// Writes the whole buffer at `pos`.
    async fn write_all_at<B: IoBuf>(&self, buf: B, pos: u64) -> BufResult<(), B>;
    /// Writes every buffer, in order, starting at `pos`. The caller keeps
    /// the number of buffers at or below [`MAX_IOVECS`].
    async fn write_vectored_all_at<B: IoVectoredBuf>(&self, bufs: B, pos: u64) -> BufResult<(), B>;
    /// The same, with blocking system calls on the calling thread. For
    /// buffered writes into the page cache, whose whole cost is the copy:
    /// a trip through the ring (and its kernel workers) costs more than
    /// the copy for small writes. Never for direct I/O.
    fn write_vectored_all_at_blocking<T: AsRef<[u8]>>(
        &self,
        bufs: &[T],
        pos: u64,
    ) -> io::Result<()>;
    /// Starts writing `len` bytes at `pos` back from the page cache to the
    /// device without waiting for it (`sync_file_range` with
    /// `SYNC_FILE_RANGE_WRITE`): durability still comes from `sync_data`.
    /// Advisory; a blocking call, but one that only queues the pages.
    fn start_writeback(&self, pos: u64, len: u64) -> io::Result<()>;
    /// Asks the kernel to drop the cached pages of `len` bytes at `pos`
    /// (`posix_fadvise` with `POSIX_FADV_DONTNEED`); dirty pages and pages
    /// under write-back stay. Advisory: for a range whose write-back was
    /// started earlier and whose bytes the caller keeps elsewhere.
    fn drop_cached(&self, pos: u64, len: u64) -> io::Result<()>;
    /// Makes the file's contents durable (fdatasync).
    async fn sync_data(&self) -> io::Result<()>;
    async fn set_len(&self, len: u64) -> io::Result<()>;
    async fn size_bytes(&self) -> io::Result<u64>;
}

/// Buffered writes of at least this many bytes go through the ring;
/// smaller ones are a blocking call on the shard's thread, whose whole
/// cost is the copy into the page cache (segments: `flush_locked`;
/// journals: `write_pending_locked`).
pub const RING_WRITE_BYTES: u64 = 256 << 10;

/// The most buffers one vectored write may carry (Linux `IOV_MAX`).
pub const MAX_IOVECS: usize = 1024;

/// Writes `bytes` to `path` atomically: a temporary sibling is written and
/// synced, renamed over `path`, and the directory is synced. A crash leaves
/// either the old or the new content, never a mix.
pub async fn write_atomically<S: Storage>(
    storage: &S,
    path: &Path,
    bytes: Vec<u8>,
) -> io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::other("atomic write target has no parent directory"))?;
    let tmp = write_sibling(storage, path, bytes, true).await?;
    storage.rename(&tmp, path).await?;
    storage.sync_dir(dir).await
}

/// Replaces `path` with `bytes` by a rename of a temporary sibling, with no
/// fsync: a process kill leaves the old or the new content; a power loss
/// may leave either, the new one possibly cut short.
pub async fn replace_unsynced<S: Storage>(
    storage: &S,
    path: &Path,
    bytes: Vec<u8>,
) -> io::Result<()> {
    let tmp = write_sibling(storage, path, bytes, false).await?;
    storage.rename(&tmp, path).await
}

/// Writes `bytes` to `path`'s `.tmp` sibling (synced if `sync`) and
/// returns that path; on failure no partial sibling is left behind (it
/// would hold space on a full disk) and `path` is untouched.
async fn write_sibling<S: Storage>(
    storage: &S,
    path: &Path,
    bytes: Vec<u8>,
    sync: bool,
) -> io::Result<std::path::PathBuf> {
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp_name);
    let file = storage.create(&tmp).await?;
    let BufResult(written, _) = file.write_all_at(bytes, 0).await;
    if let Err(error) = written {
        drop(file);
        let _ = storage.remove_file(&tmp).await;
        return Err(error);
    }
    if sync {
        file.sync_data().await?;
    }
    Ok(tmp)
}

/// Reads a whole file, or `None` when it does not exist.
pub async fn read_whole<S: Storage>(storage: &S, path: &Path) -> io::Result<Option<Vec<u8>>> {
    if !storage.exists(path).await? {
        return Ok(None);
    }
    let file = storage.open(path).await?;
    let len = usize::try_from(file.size_bytes().await?).map_err(io::Error::other)?;
    file.read_exact_at(len, 0).await.map(Some)
}

#[cfg(test)]
mod tests;
