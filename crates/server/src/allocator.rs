//! The C allocator's tuning, set once before any thread starts. Batches are
//! allocated and freed by the megabyte (request frames, replica frames,
//! journal records); glibc serves such blocks with fresh `mmap`s and hands
//! freed heap back to the kernel, so every batch faulted in and zeroed new
//! pages (a quarter of a cluster node's CPU under perf). Keeping blocks up
//! to 64 MiB in the heap and freed memory up to 512 MiB in the process lets
//! them be reused.

/// Blocks below this come from the heap, not from their own `mmap`.
const MMAP_THRESHOLD: i32 = 64 << 20;
/// Free memory at the top of the heap kept rather than returned.
const TRIM_THRESHOLD: i32 = 512 << 20;

pub fn tune() {
    // SAFETY: mallopt only sets allocator parameters; it is called before
    // any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
    }
}
