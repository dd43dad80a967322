//! [`RealStorage`]: the seam on the real filesystem through compio (io_uring
//! on Linux). Directory listing and recursive removal have no io_uring
//! operation; they use blocking std calls, which only happen at recovery,
//! purge and deletion, never on the append or poll path.

use std::io;
use std::path::Path;

use compio::BufResult;
use compio::buf::{IntoInner, IoBuf, IoVectoredBuf};
use compio::fs::{File, OpenOptions};
use compio::io::{AsyncReadAt, AsyncWriteAtExt};

use super::{Storage, StorageFile};

/// The real filesystem.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealStorage;

/// A file opened through [`RealStorage`].
#[derive(Debug)]
pub struct RealFile {
    file: File,
}

impl Storage for RealStorage {
    type File = RealFile;

    async fn open(&self, path: &Path) -> io::Result<RealFile> {
        let file = OpenOptions::new().read(true).write(true).open(path).await?;
        Ok(RealFile { file })
    }

    async fn open_direct(&self, path: &Path, synchronous: bool) -> io::Result<RealFile> {
        let flags = if synchronous {
            libc::O_DIRECT | libc::O_DSYNC
        } else {
            libc::O_DIRECT
        };
        let opened = OpenOptions::new()
            .write(true)
            .custom_flags(flags)
            .open(path)
            .await;
        match opened {
            Ok(file) => Ok(RealFile { file }),
            // open(2) reports a filesystem without O_DIRECT as EINVAL.
            Err(error) if error.raw_os_error() == Some(libc::EINVAL) => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("no direct I/O on this filesystem: {error}"),
            )),
            Err(error) => Err(error),
        }
    }

    async fn create(&self, path: &Path) -> io::Result<RealFile> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .await?;
        Ok(RealFile { file })
    }

    async fn remove_file(&self, path: &Path) -> io::Result<()> {
        compio::fs::remove_file(path).await
    }

    async fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        compio::fs::rename(from, to).await
    }

    async fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        compio::fs::create_dir_all(path).await
    }

    async fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_dir_all(path)
    }

    async fn read_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(path)? {
            if let Ok(name) = entry?.file_name().into_string() {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    async fn sync_dir(&self, path: &Path) -> io::Result<()> {
        let dir = File::open(path).await?;
        dir.sync_all().await
    }

    async fn exists(&self, path: &Path) -> io::Result<bool> {
        match compio::fs::metadata(path).await {
            Ok(_) => Ok(true),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(error) => Err(error),
        }
    }
}

impl StorageFile for RealFile {
    async fn read_exact_at(&self, len: usize, pos: u64) -> io::Result<Vec<u8>> {
        let mut buf = Vec::with_capacity(len);
        while buf.len() < len {
            let start = buf.len();
            let BufResult(read, slice) = self
                .file
                .read_at(IoBuf::slice(buf, start..len), pos + start as u64)
                .await;
            buf = slice.into_inner();
            if read? == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "file ends before the requested range",
                ));
            }
        }
        Ok(buf)
    }

    async fn write_all_at<B: IoBuf>(&self, buf: B, pos: u64) -> BufResult<(), B> {
        let mut file = &self.file;
        file.write_all_at(buf, pos).await
    }

    async fn write_vectored_all_at<B: IoVectoredBuf>(&self, bufs: B, pos: u64) -> BufResult<(), B> {
        let mut file = &self.file;
        file.write_vectored_all_at(bufs, pos).await
    }

    fn write_vectored_all_at_blocking<T: AsRef<[u8]>>(
        &self,
        bufs: &[T],
        mut pos: u64,
    ) -> io::Result<()> {
        let mut slices: Vec<io::IoSlice<'_>> =
            bufs.iter().map(|b| io::IoSlice::new(b.as_ref())).collect();
        let mut remaining = &mut slices[..];
        while !remaining.is_empty() {
            let written = match rustix::io::pwritev(&self.file, remaining, pos) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(written) => written,
                Err(rustix::io::Errno::INTR) => continue,
                Err(errno) => return Err(errno.into()),
            };
            pos += written as u64;
            io::IoSlice::advance_slices(&mut remaining, written);
        }
        Ok(())
    }

    #[allow(unsafe_code)]
    fn start_writeback(&self, pos: u64, len: u64) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let (Ok(pos), Ok(len)) = (i64::try_from(pos), i64::try_from(len)) else {
            return Err(io::ErrorKind::InvalidInput.into());
        };
        // SAFETY: a plain system call on a descriptor this file owns; it
        // reads no memory of ours.
        let done = unsafe {
            libc::sync_file_range(self.file.as_raw_fd(), pos, len, libc::SYNC_FILE_RANGE_WRITE)
        };
        match done {
            0 => Ok(()),
            _ => Err(io::Error::last_os_error()),
        }
    }

    fn drop_cached(&self, pos: u64, len: u64) -> io::Result<()> {
        let Some(len) = std::num::NonZeroU64::new(len) else {
            return Ok(());
        };
        rustix::fs::fadvise(&self.file, pos, Some(len), rustix::fs::Advice::DontNeed)
            .map_err(io::Error::from)
    }

    async fn sync_data(&self) -> io::Result<()> {
        self.file.sync_data().await
    }

    async fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len).await
    }

    async fn size_bytes(&self) -> io::Result<u64> {
        Ok(self.file.metadata().await?.len())
    }
}
