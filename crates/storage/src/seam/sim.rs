//! [`SimStorage`]: an in-memory filesystem for crash and fault tests.
//!
//! Each file (inode) keeps two contents: `durable`, as of its last
//! `sync_data`, and `volatile`, what reads see now. The namespace is kept
//! twice the same way: an entry created, renamed or removed becomes durable
//! only when its parent directory is synced. Directories themselves are
//! durable as soon as they are created or removed (a simplification: the
//! engine creates partition directories once, before any data).
//!
//! [`SimStorage::crash`] returns a fresh filesystem holding only the durable
//! state, optionally with a torn tail: a random prefix of each file's
//! unsynced appended bytes and a random subset of unsynced directory changes
//! survive. [`SimFaults`] injects failed syncs, short writes and "crash after
//! the N-th sync", after which every operation fails.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use compio::BufResult;
use compio::buf::{IoBuf, IoVectoredBuf};

use super::{Storage, StorageFile};

/// Faults to inject; set them with [`SimStorage::set_faults`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimFaults {
    /// The next sync (file or directory) fails; the flag then clears.
    pub fail_next_sync: bool,
    /// Every sync fails.
    pub fail_all_syncs: bool,
    /// Every write fails with ENOSPC and stores nothing (a full disk).
    pub no_space: bool,
    /// The next write stores only this many bytes and then fails.
    pub short_next_write: Option<usize>,
    /// Direct writes fail with EINVAL, as on a device whose block size
    /// exceeds the engine's alignment.
    pub refuse_direct_writes: bool,
    /// After this many successful syncs (counted from creation) the machine
    /// "crashes": every later operation fails until [`SimStorage::crash`].
    pub crash_after_syncs: Option<u64>,
    /// Likewise after this many writes: the crash then lands between a
    /// write and the sync that would have made it durable.
    pub crash_after_writes: Option<u64>,
}

/// How much unsynced state survives [`SimStorage::crash`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashMode {
    /// Only synced state survives (power loss).
    Clean,
    /// Every completed write survives, synced or not: the process died but
    /// the kernel's page cache did not (kill -9).
    Process,
    /// Random parts of unsynced state survive, chosen from this seed.
    Torn { seed: u64 },
}

type InodeId = u64;

#[derive(Debug, Clone, Default)]
struct Inode {
    durable: Vec<u8>,
    volatile: Vec<u8>,
}

#[derive(Debug, Default)]
struct SimFs {
    volatile_names: BTreeMap<PathBuf, InodeId>,
    durable_names: BTreeMap<PathBuf, InodeId>,
    dirs: BTreeSet<PathBuf>,
    inodes: BTreeMap<InodeId, Inode>,
    next_inode: InodeId,
    faults: SimFaults,
    syncs_done: u64,
    /// `start_writeback` calls, by inode: (position, length).
    writebacks: BTreeMap<InodeId, Vec<(u64, u64)>>,
    /// `drop_cached` calls, by inode: (position, length).
    dropped: BTreeMap<InodeId, Vec<(u64, u64)>>,
    writes_done: u64,
    bytes_read: u64,
    crashed: bool,
}

/// The simulated filesystem; clones share state.
#[derive(Debug, Clone, Default)]
pub struct SimStorage {
    fs: Rc<RefCell<SimFs>>,
}

/// A file opened through [`SimStorage`]; it keeps its inode across renames
/// and removals, like a real file descriptor.
#[derive(Debug)]
pub struct SimFile {
    fs: Rc<RefCell<SimFs>>,
    inode: InodeId,
    /// Opened with [`Storage::open_direct`]: writes must be aligned, as
    /// `O_DIRECT` demands (a misaligned one panics: it is a bug).
    direct: bool,
    /// Opened with `O_DSYNC`: every write is synced.
    dsync: bool,
}

fn crashed_error() -> io::Error {
    io::Error::other("simulated machine crashed")
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{} does not exist", path.display()),
    )
}

/// Gives other tasks a turn, as a real I/O completion would: without it
/// every simulated operation completes inline and tasks never interleave.
async fn yield_now() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            return std::task::Poll::Ready(());
        }
        yielded = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    })
    .await;
}

/// splitmix64: a tiny deterministic generator so the library needs no rand.
fn next_random(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl SimFs {
    fn check_alive(&self) -> io::Result<()> {
        if self.crashed {
            Err(crashed_error())
        } else {
            Ok(())
        }
    }

    fn check_parent(&self, path: &Path) -> io::Result<()> {
        match path.parent() {
            Some(parent) if parent.as_os_str().is_empty() || self.dirs.contains(parent) => Ok(()),
            _ => Err(not_found(path.parent().unwrap_or(path))),
        }
    }

    /// Counts one sync attempt and applies the sync faults.
    fn before_sync(&mut self) -> io::Result<()> {
        self.check_alive()?;
        if self.faults.fail_all_syncs {
            return Err(io::Error::other("simulated fsync failure (always)"));
        }
        if std::mem::take(&mut self.faults.fail_next_sync) {
            return Err(io::Error::other("simulated fsync failure (once)"));
        }
        Ok(())
    }

    fn after_sync(&mut self) {
        self.syncs_done += 1;
        if self
            .faults
            .crash_after_syncs
            .is_some_and(|n| self.syncs_done >= n)
        {
            self.crashed = true;
        }
    }

    fn write(&mut self, inode: InodeId, bytes: &[u8], pos: u64) -> io::Result<()> {
        self.check_alive()?;
        if self.faults.no_space {
            return Err(io::Error::from_raw_os_error(28));
        }
        let short = self.faults.short_next_write.take();
        let keep = short.map_or(bytes.len(), |n| n.min(bytes.len()));
        let content = &mut self
            .inodes
            .get_mut(&inode)
            .ok_or_else(crashed_error)?
            .volatile;
        let start = usize::try_from(pos).map_err(io::Error::other)?;
        let end = start + keep;
        if content.len() < end {
            content.resize(end, 0);
        }
        content[start..end].copy_from_slice(&bytes[..keep]);
        self.writes_done += 1;
        if self
            .faults
            .crash_after_writes
            .is_some_and(|n| self.writes_done >= n)
        {
            self.crashed = true;
        }
        match short {
            Some(_) => Err(io::Error::other(format!(
                "simulated short write: {keep} of {} bytes",
                bytes.len()
            ))),
            None => Ok(()),
        }
    }

    fn crash_image(&self, mode: CrashMode) -> SimFs {
        if mode == CrashMode::Process {
            return self.process_crash_image();
        }
        let mut rng = match mode {
            CrashMode::Clean | CrashMode::Process => 0,
            CrashMode::Torn { seed } => seed,
        };
        let torn = matches!(mode, CrashMode::Torn { .. });
        let mut names = self.durable_names.clone();
        if torn {
            self.apply_random_namespace_changes(&mut names, &mut rng);
        }
        let mut inodes = BTreeMap::new();
        for &id in names.values() {
            let inode = &self.inodes[&id];
            let content = if torn {
                torn_content(inode, &mut rng)
            } else {
                inode.durable.clone()
            };
            inodes.insert(
                id,
                Inode {
                    durable: content.clone(),
                    volatile: content,
                },
            );
        }
        SimFs {
            volatile_names: names.clone(),
            durable_names: names,
            dirs: self.dirs.clone(),
            inodes,
            next_inode: self.next_inode,
            ..SimFs::default()
        }
    }

    /// After a process kill the files hold exactly what was written, and
    /// the kernel will still write it all back: volatile becomes durable.
    fn process_crash_image(&self) -> SimFs {
        let names = self.volatile_names.clone();
        let inodes = names
            .values()
            .map(|id| {
                let content = self.inodes[id].volatile.clone();
                let inode = Inode {
                    durable: content.clone(),
                    volatile: content,
                };
                (*id, inode)
            })
            .collect();
        SimFs {
            volatile_names: names.clone(),
            durable_names: names,
            dirs: self.dirs.clone(),
            inodes,
            next_inode: self.next_inode,
            ..SimFs::default()
        }
    }

    fn apply_random_namespace_changes(
        &self,
        names: &mut BTreeMap<PathBuf, InodeId>,
        rng: &mut u64,
    ) {
        let paths: BTreeSet<&PathBuf> = self
            .durable_names
            .keys()
            .chain(self.volatile_names.keys())
            .collect();
        for path in paths {
            let (durable, volatile) = (self.durable_names.get(path), self.volatile_names.get(path));
            if durable != volatile && next_random(rng).is_multiple_of(2) {
                match volatile {
                    Some(&id) => names.insert(path.clone(), id),
                    None => names.remove(path),
                };
            }
        }
    }
}

/// The durable bytes plus a random prefix of any unsynced appended bytes.
fn torn_content(inode: &Inode, rng: &mut u64) -> Vec<u8> {
    let (durable, volatile) = (&inode.durable, &inode.volatile);
    if volatile.len() <= durable.len() {
        return if next_random(rng).is_multiple_of(2) {
            durable.clone()
        } else {
            volatile.clone()
        };
    }
    let extra = volatile.len() - durable.len();
    let keep = (next_random(rng) % (extra as u64 + 1)) as usize;
    let mut content = durable.clone();
    content.extend_from_slice(&volatile[durable.len()..durable.len() + keep]);
    content
}

impl SimStorage {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn set_faults(&self, faults: SimFaults) {
        self.fs.borrow_mut().faults = faults;
    }

    /// Successful syncs (file and directory) so far.
    pub fn syncs_done(&self) -> u64 {
        self.fs.borrow().syncs_done
    }

    /// The write-backs started on the file at `path`, in order: (position,
    /// length).
    pub fn writebacks(&self, path: &Path) -> Vec<(u64, u64)> {
        let fs = self.fs.borrow();
        Self::ranges_of(&fs, &fs.writebacks, path)
    }

    /// The `drop_cached` calls on the file now at `path`, in order.
    pub fn dropped(&self, path: &Path) -> Vec<(u64, u64)> {
        let fs = self.fs.borrow();
        Self::ranges_of(&fs, &fs.dropped, path)
    }

    fn ranges_of(
        fs: &SimFs,
        calls: &BTreeMap<InodeId, Vec<(u64, u64)>>,
        path: &Path,
    ) -> Vec<(u64, u64)> {
        fs.volatile_names
            .get(path)
            .and_then(|inode| calls.get(inode))
            .cloned()
            .unwrap_or_default()
    }

    /// Bytes `read_exact_at` returned so far, over every file.
    pub fn bytes_read(&self) -> u64 {
        self.fs.borrow().bytes_read
    }

    pub fn is_crashed(&self) -> bool {
        self.fs.borrow().crashed
    }

    /// The filesystem a reboot would find: durable state only, or with a
    /// torn tail. The old handle and its files stay crashed.
    pub fn crash(&self, mode: CrashMode) -> SimStorage {
        let image = {
            let mut fs = self.fs.borrow_mut();
            fs.crashed = true;
            fs.crash_image(mode)
        };
        SimStorage {
            fs: Rc::new(RefCell::new(image)),
        }
    }

    /// What a reboot would find if the machine crashed now, while this
    /// handle goes on running (a crash at every step of one run).
    pub fn peek_crash(&self, mode: CrashMode) -> SimStorage {
        let image = self.fs.borrow().crash_image(mode);
        SimStorage {
            fs: Rc::new(RefCell::new(image)),
        }
    }

    /// Every file's path (the current names), for test assertions.
    pub fn files(&self) -> Vec<PathBuf> {
        self.fs.borrow().volatile_names.keys().cloned().collect()
    }

    /// The current (volatile) content of a file, for test assertions.
    pub fn file_bytes(&self, path: &Path) -> Option<Vec<u8>> {
        let fs = self.fs.borrow();
        let id = fs.volatile_names.get(path)?;
        Some(fs.inodes[id].volatile.clone())
    }

    /// Replaces a file's content, durably, as if the disk changed under us
    /// (bit rot, a foreign writer). For corruption tests.
    pub fn overwrite_durably(&self, path: &Path, bytes: Vec<u8>) -> io::Result<()> {
        let mut fs = self.fs.borrow_mut();
        let id = *fs.volatile_names.get(path).ok_or_else(|| not_found(path))?;
        let inode = fs.inodes.get_mut(&id).ok_or_else(|| not_found(path))?;
        inode.durable = bytes.clone();
        inode.volatile = bytes;
        Ok(())
    }

    fn file(&self, inode: InodeId) -> SimFile {
        SimFile {
            fs: Rc::clone(&self.fs),
            inode,
            direct: false,
            dsync: false,
        }
    }
}

impl Storage for SimStorage {
    type File = SimFile;

    async fn open(&self, path: &Path) -> io::Result<SimFile> {
        let fs = self.fs.borrow();
        fs.check_alive()?;
        let id = *fs.volatile_names.get(path).ok_or_else(|| not_found(path))?;
        Ok(self.file(id))
    }

    async fn open_direct(&self, path: &Path, synchronous: bool) -> io::Result<SimFile> {
        let mut file = self.open(path).await?;
        file.direct = true;
        file.dsync = synchronous;
        Ok(file)
    }

    async fn create(&self, path: &Path) -> io::Result<SimFile> {
        let mut fs = self.fs.borrow_mut();
        fs.check_alive()?;
        fs.check_parent(path)?;
        if let Some(&id) = fs.volatile_names.get(path) {
            fs.inodes
                .get_mut(&id)
                .ok_or_else(crashed_error)?
                .volatile
                .clear();
            return Ok(self.file(id));
        }
        let id = fs.next_inode;
        fs.next_inode += 1;
        fs.inodes.insert(id, Inode::default());
        fs.volatile_names.insert(path.to_path_buf(), id);
        Ok(self.file(id))
    }

    async fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut fs = self.fs.borrow_mut();
        fs.check_alive()?;
        fs.volatile_names
            .remove(path)
            .map(|_| ())
            .ok_or_else(|| not_found(path))
    }

    async fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut fs = self.fs.borrow_mut();
        fs.check_alive()?;
        fs.check_parent(to)?;
        let id = fs
            .volatile_names
            .remove(from)
            .ok_or_else(|| not_found(from))?;
        fs.volatile_names.insert(to.to_path_buf(), id);
        Ok(())
    }

    async fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        let mut fs = self.fs.borrow_mut();
        fs.check_alive()?;
        for ancestor in path.ancestors().filter(|a| !a.as_os_str().is_empty()) {
            fs.dirs.insert(ancestor.to_path_buf());
        }
        Ok(())
    }

    async fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        let mut fs = self.fs.borrow_mut();
        fs.check_alive()?;
        if !fs.dirs.contains(path) {
            return Err(not_found(path));
        }
        fs.dirs.retain(|d| !d.starts_with(path));
        fs.volatile_names.retain(|p, _| !p.starts_with(path));
        fs.durable_names.retain(|p, _| !p.starts_with(path));
        Ok(())
    }

    async fn read_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        let fs = self.fs.borrow();
        fs.check_alive()?;
        if !fs.dirs.contains(path) {
            return Err(not_found(path));
        }
        let children = fs
            .volatile_names
            .keys()
            .chain(fs.dirs.iter())
            .filter(|p| p.parent() == Some(path));
        let mut names: Vec<String> = children
            .filter_map(|p| p.file_name().and_then(|n| n.to_str()).map(str::to_owned))
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    async fn sync_dir(&self, path: &Path) -> io::Result<()> {
        yield_now().await;
        let mut fs = self.fs.borrow_mut();
        fs.before_sync()?;
        if !fs.dirs.contains(path) {
            return Err(not_found(path));
        }
        let SimFs {
            volatile_names,
            durable_names,
            ..
        } = &mut *fs;
        durable_names.retain(|p, _| p.parent() != Some(path) || volatile_names.contains_key(p));
        for (p, &id) in volatile_names
            .iter()
            .filter(|(p, _)| p.parent() == Some(path))
        {
            durable_names.insert(p.clone(), id);
        }
        fs.after_sync();
        Ok(())
    }

    async fn exists(&self, path: &Path) -> io::Result<bool> {
        let fs = self.fs.borrow();
        fs.check_alive()?;
        Ok(fs.volatile_names.contains_key(path) || fs.dirs.contains(path))
    }
}

impl SimFile {
    fn sync_inode(&self) -> io::Result<()> {
        let mut fs = self.fs.borrow_mut();
        fs.before_sync()?;
        let inode = fs.inodes.get_mut(&self.inode).ok_or_else(crashed_error)?;
        inode.durable = inode.volatile.clone();
        fs.after_sync();
        Ok(())
    }

    fn check_direct_alignment(&self, bytes: &[u8], pos: u64) {
        let align = super::DIRECT_IO_ALIGN;
        if self.direct {
            assert!(
                pos.is_multiple_of(align)
                    && (bytes.len() as u64).is_multiple_of(align)
                    && (bytes.as_ptr() as u64).is_multiple_of(align),
                "misaligned direct write: {} bytes at {pos}",
                bytes.len()
            );
        }
    }
}

impl StorageFile for SimFile {
    async fn read_exact_at(&self, len: usize, pos: u64) -> io::Result<Vec<u8>> {
        let mut fs = self.fs.borrow_mut();
        fs.check_alive()?;
        let content = &fs
            .inodes
            .get(&self.inode)
            .ok_or_else(crashed_error)?
            .volatile;
        let start = usize::try_from(pos).map_err(io::Error::other)?;
        let bytes = content
            .get(start..start + len)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "file ends before the requested range",
                )
            })?;
        fs.bytes_read += len as u64;
        Ok(bytes)
    }

    async fn write_all_at<B: IoBuf>(&self, buf: B, pos: u64) -> BufResult<(), B> {
        self.check_direct_alignment(buf.as_init(), pos);
        yield_now().await;
        if self.direct && self.fs.borrow().faults.refuse_direct_writes {
            return BufResult(Err(io::Error::from_raw_os_error(libc::EINVAL)), buf);
        }
        let result = self.fs.borrow_mut().write(self.inode, buf.as_init(), pos);
        if result.is_err() || !self.dsync {
            return BufResult(result, buf);
        }
        // O_DSYNC: the completed write is durable.
        BufResult(self.sync_inode(), buf)
    }

    async fn write_vectored_all_at<B: IoVectoredBuf>(&self, bufs: B, pos: u64) -> BufResult<(), B> {
        yield_now().await;
        assert!(
            !self.direct,
            "direct writes are single aligned buffers in this engine"
        );
        let joined: Vec<u8> = bufs.iter_slice().flatten().copied().collect();
        let result = self.fs.borrow_mut().write(self.inode, &joined, pos);
        BufResult(result, bufs)
    }

    fn write_vectored_all_at_blocking<T: AsRef<[u8]>>(
        &self,
        bufs: &[T],
        pos: u64,
    ) -> io::Result<()> {
        assert!(!self.direct, "blocking writes go through the page cache");
        let joined: Vec<u8> = bufs.iter().flat_map(|b| b.as_ref()).copied().collect();
        self.fs.borrow_mut().write(self.inode, &joined, pos)
    }

    /// The simulated disk has no write-back timing: the call is only
    /// recorded (`SimStorage::writebacks`).
    fn start_writeback(&self, pos: u64, len: u64) -> io::Result<()> {
        let mut fs = self.fs.borrow_mut();
        fs.writebacks
            .entry(self.inode)
            .or_default()
            .push((pos, len));
        Ok(())
    }

    /// The simulated disk has no page cache: the call is only recorded
    /// (`SimStorage::dropped`).
    fn drop_cached(&self, pos: u64, len: u64) -> io::Result<()> {
        let mut fs = self.fs.borrow_mut();
        fs.dropped.entry(self.inode).or_default().push((pos, len));
        Ok(())
    }

    async fn sync_data(&self) -> io::Result<()> {
        yield_now().await;
        self.sync_inode()
    }

    async fn set_len(&self, len: u64) -> io::Result<()> {
        let mut fs = self.fs.borrow_mut();
        fs.check_alive()?;
        let len = usize::try_from(len).map_err(io::Error::other)?;
        fs.inodes
            .get_mut(&self.inode)
            .ok_or_else(crashed_error)?
            .volatile
            .resize(len, 0);
        Ok(())
    }

    async fn size_bytes(&self) -> io::Result<u64> {
        let fs = self.fs.borrow();
        fs.check_alive()?;
        Ok(fs
            .inodes
            .get(&self.inode)
            .ok_or_else(crashed_error)?
            .volatile
            .len() as u64)
    }
}
