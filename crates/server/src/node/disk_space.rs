//! Free space of the data directory's filesystem, checked as appends are
//! admitted: a partition's primary refuses a batch that would leave less
//! than `APPEND_RESERVE` free (4006, the single node's full-disk answer),
//! so the disk fills with room left for the journals and the metadata.
//! The figure is an estimate: each admitted batch takes its size off it,
//! and it is read again from the filesystem (statvfs) once a second, or at
//! every admission while it is below `LOW_WATER`. A write that still finds
//! the disk full stalls its group until space is freed (`engine::replicated::wait_for_space`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Free bytes an append must leave.
pub const APPEND_RESERVE: u64 = 1 << 20;
/// Below this estimate every admission reads the filesystem's figure.
const LOW_WATER: u64 = 256 << 20;
/// How old the filesystem's figure may get otherwise.
const REFRESH_MS: u64 = 1_000;

pub struct DiskSpace {
    path: PathBuf,
    started: Instant,
    free: AtomicU64,
    /// When `free` was read from the filesystem (ms since `started`), plus one.
    read_at_ms: AtomicU64,
}

impl DiskSpace {
    pub fn new(path: &Path) -> Self {
        DiskSpace {
            path: path.to_path_buf(),
            started: Instant::now(),
            free: AtomicU64::new(0),
            read_at_ms: AtomicU64::new(0),
        }
    }

    /// Whether `bytes` more fit and leave `APPEND_RESERVE` free; if they
    /// do, the estimate takes them off. A filesystem whose figure cannot
    /// be read admits everything.
    pub fn admit(&self, bytes: u64) -> bool {
        let needed = bytes.saturating_add(APPEND_RESERVE);
        let now = self.started.elapsed().as_millis() as u64 + 1;
        let read_at = self.read_at_ms.load(Ordering::Relaxed);
        let mut free = self.free.load(Ordering::Relaxed);
        if read_at == 0 || now - read_at >= REFRESH_MS || free < needed.saturating_add(LOW_WATER) {
            let Some(read) = available_bytes(&self.path) else {
                return true;
            };
            free = read;
            self.free.store(read, Ordering::Relaxed);
            self.read_at_ms.store(now, Ordering::Relaxed);
        }
        if free < needed {
            return false;
        }
        let _ = self
            .free
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |f| {
                Some(f.saturating_sub(bytes))
            });
        true
    }
}

/// Bytes an unprivileged writer may still take on `path`'s filesystem.
pub fn available_bytes(path: &Path) -> Option<u64> {
    filesystem_space(path).map(|(available, _)| available)
}

/// `path`'s filesystem: the bytes an unprivileged writer may still take,
/// and its size (statvfs).
pub fn filesystem_space(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: `stat` is fully written by statvfs on success; c_path is a
    // valid NUL-terminated string.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c_path.as_ptr(), &mut stat) } != 0 {
        return None;
    }
    let block = stat.f_frsize as u64;
    Some((stat.f_bavail as u64 * block, stat.f_blocks as u64 * block))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_a_filesystem_when_admitting_should_refuse_what_would_eat_the_reserve() {
        let dir = tempfile::tempdir().unwrap();
        let space = DiskSpace::new(dir.path());
        let free = available_bytes(dir.path()).expect("statvfs works here");
        assert!(space.admit(1));
        assert!(!space.admit(free), "a batch as large as the free space");
        assert!(!space.admit(u64::MAX));
    }

    #[test]
    fn given_an_unreadable_path_when_admitting_should_admit() {
        let space = DiskSpace::new(Path::new("/no/such/dir/anywhere"));
        assert!(space.admit(u64::MAX / 2));
    }
}
