//! The log file writer with size-based rotation.
//!
//! Writes go to `iggy-server.log`. When a write would take it past
//! `max_file_size`, the file is renamed to `iggy-server.log.<unix-ms>` and a
//! new one is started; archived files beyond `max_total_size` (oldest first)
//! or older than `retention` are deleted. A size of 0 disables the limit.
//! Rotation is checked on write, so no timer thread is needed.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

#[derive(Debug, Clone)]
pub struct RotationLimits {
    pub max_file_bytes: u64,
    pub max_total_bytes: u64,
    pub retention: Duration,
}

pub struct RotatingFile {
    path: PathBuf,
    file: File,
    len: u64,
    limits: RotationLimits,
}

impl RotatingFile {
    pub fn open(path: PathBuf, limits: RotationLimits) -> io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        let len = file.metadata()?.len();
        let this = Self {
            path,
            file,
            len,
            limits,
        };
        this.prune();
        Ok(this)
    }

    fn rotate(&mut self) -> io::Result<()> {
        let stamp = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let archived = self
            .path
            .with_file_name(format!("{}.{stamp}", file_name(&self.path)));
        fs::rename(&self.path, archived)?;
        self.file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        self.len = 0;
        self.prune();
        Ok(())
    }

    /// Deletes archived files beyond the total size or the retention age.
    fn prune(&self) {
        let Some(dir) = self.path.parent() else {
            return;
        };
        let prefix = format!("{}.", file_name(&self.path));
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        let mut archived: Vec<(SystemTime, u64, PathBuf)> = entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .filter_map(|e| {
                let meta = e.metadata().ok()?;
                Some((meta.modified().ok()?, meta.len(), e.path()))
            })
            .collect();
        archived.sort_by_key(|entry| std::cmp::Reverse(entry.0));
        let now = SystemTime::now();
        let mut total = self.len;
        for (modified, len, path) in archived {
            total += len;
            let too_old = !self.limits.retention.is_zero()
                && now
                    .duration_since(modified)
                    .is_ok_and(|age| age > self.limits.retention);
            let too_big = self.limits.max_total_bytes > 0 && total > self.limits.max_total_bytes;
            if too_old || too_big {
                let _ = fs::remove_file(path);
            }
        }
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

impl Write for RotatingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let limit = self.limits.max_file_bytes;
        if limit > 0 && self.len > 0 && self.len + buf.len() as u64 > limit {
            self.rotate()?;
        }
        let written = self.file.write(buf)?;
        self.len += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn archived(dir: &Path) -> usize {
        fs::read_dir(dir)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name() != "app.log")
            .count()
    }

    #[test]
    fn given_small_limit_when_writing_past_it_should_rotate_and_bound_total() {
        let dir = tempfile::tempdir().unwrap();
        let limits = RotationLimits {
            max_file_bytes: 100,
            max_total_bytes: 250,
            retention: Duration::ZERO,
        };
        let mut file = RotatingFile::open(dir.path().join("app.log"), limits).unwrap();
        for _ in 0..20 {
            file.write_all(&[b'x'; 60]).unwrap();
            std::thread::sleep(Duration::from_millis(2));
        }
        assert!(fs::metadata(dir.path().join("app.log")).unwrap().len() <= 100);
        let count = archived(dir.path());
        assert!((1..=4).contains(&count), "{count} archived files");
    }

    #[test]
    fn given_zero_limit_when_writing_should_never_rotate() {
        let dir = tempfile::tempdir().unwrap();
        let limits = RotationLimits {
            max_file_bytes: 0,
            max_total_bytes: 0,
            retention: Duration::ZERO,
        };
        let mut file = RotatingFile::open(dir.path().join("app.log"), limits).unwrap();
        file.write_all(&[b'x'; 1000]).unwrap();
        assert_eq!(archived(dir.path()), 0);
    }
}
