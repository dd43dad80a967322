//! Direct I/O for segment writes: bytes go from an aligned user buffer to
//! the device without the page cache.
//!
//! Used for partitions that fsync every batch (synchronous writes), and
//! optionally for every partition (plain `O_DIRECT`, synced as usual). Why: with a buffered write
//! the kernel copies every batch into the page cache and an fsync then
//! writes it back; with `O_DIRECT` the device reads the buffer itself, and
//! with `O_DSYNC` the write completes only once durable, so no separate
//! fsync round trip follows. On the development machine a 1 MB write plus
//! fdatasync took 0.73 ms buffered, 0.42 ms direct, and a direct `O_DSYNC`
//! write 0.31 ms (docs/benchmarks.md). Partitions that do not fsync every
//! batch stay buffered: there the page cache absorbs bursts better.
//!
//! Rule: a direct write's file position, length and buffer address are
//! multiples of [`DIRECT_IO_ALIGN`]. The log is append-only with records of
//! any length, so each write starts at the block holding the segment's
//! logical end: the partial block already on disk (the *tail*, kept in
//! memory) is written again, followed by the new records and zero padding
//! up to the next block boundary. The old bytes are rewritten unchanged, so
//! a torn rewrite cannot alter acknowledged data.
//!
//! On disk: a segment written this way may end with fewer than
//! `DIRECT_IO_ALIGN` zero bytes after its last record. Sealing a segment and
//! a clean close cut them off (`set_len`); after a crash recovery drops
//! them as padding. Reads go through a separate buffered handle, which the
//! kernel keeps coherent with direct writes.

use std::io;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::{BufMut, Bytes, BytesMut};

use super::arena::{self, WriteArena};

use super::state::Segment;
use crate::error::{Result, io_error};
use crate::seam::{Storage, StorageFile};

/// Alignment of a direct write: the largest logical block size of common
/// devices, so one value works everywhere.
pub use crate::seam::DIRECT_IO_ALIGN;
pub(super) const ALIGN: usize = DIRECT_IO_ALIGN as usize;

/// The write handle of an active segment opened for direct I/O.
#[derive(Debug)]
pub struct DirectWriter<F> {
    pub file: Rc<F>,
    /// The segment's bytes from the last block boundary to its logical end
    /// (fewer than `DIRECT_IO_ALIGN`).
    pub tail: Vec<u8>,
}

/// Opens the direct write handle of `segment` (the active one) and loads
/// its tail. `None` where the filesystem has no direct I/O: the segment is
/// then written through the page cache.
pub(super) async fn open_writer<S: Storage>(
    storage: &S,
    segment: &Segment<S::File>,
    synchronous: bool,
) -> Result<Option<DirectWriter<S::File>>> {
    let path = &segment.log_path;
    let file = match storage.open_direct(path, synchronous).await {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::Unsupported => {
            // Once per process: every partition on that filesystem would
            // say the same.
            static WARNED: AtomicBool = AtomicBool::new(false);
            if WARNED.swap(true, Ordering::Relaxed) {
                tracing::debug!(file = %path.display(), %error, "writing through the page cache");
            } else {
                tracing::warn!(file = %path.display(), %error, "no direct I/O here; segments are written through the page cache");
            }
            return Ok(None);
        }
        Err(error) => return Err(io_error("open segment for direct I/O", path)(error)),
    };
    let tail_len = segment.size_bytes % DIRECT_IO_ALIGN;
    let tail = if tail_len == 0 {
        Vec::new()
    } else {
        segment
            .log
            .read_exact_at(tail_len as usize, segment.size_bytes - tail_len)
            .await
            .map_err(io_error("read segment tail", path))?
    };
    Ok(Some(DirectWriter {
        file: Rc::new(file),
        tail,
    }))
}

/// One direct write: `buffer` (aligned in memory, a whole number of
/// blocks) goes to `position`.
pub struct AlignedWrite {
    pub position: u64,
    pub buffer: Bytes,
    /// Bytes of `buffer` that are data; the rest is padding.
    pub data_len: usize,
    /// `buffer` was cut from the shard's arena, so the cache keeps slices
    /// of it instead of the records (see `arena`).
    pub in_arena: bool,
}

/// Lays out the write that appends `records` at logical position `end`,
/// given the `tail` of the block holding `end`: in a region of `arena`
/// when it has one for this size, else in a buffer of its own.
pub fn plan_write(
    end: u64,
    tail: &[u8],
    records: &[Bytes],
    arena: Option<&mut WriteArena>,
) -> AlignedWrite {
    assert_eq!(
        end % DIRECT_IO_ALIGN,
        tail.len() as u64,
        "the tail is the partial block before the logical end"
    );
    let data_len = tail.len() + records.iter().map(Bytes::len).sum::<usize>();
    let padded = data_len.next_multiple_of(ALIGN);
    let fill = |bytes: &mut BytesMut| {
        bytes.extend_from_slice(tail);
        records.iter().for_each(|r| bytes.extend_from_slice(r));
        bytes.put_bytes(0, padded - data_len);
    };
    let in_arena = arena.and_then(|arena| arena.cut_aligned(padded, fill));
    let (buffer, in_arena) = match in_arena {
        Some(region) => (region, true),
        None => {
            let mut own = BytesMut::with_capacity(padded + ALIGN);
            let skip = own.as_ptr().align_offset(ALIGN);
            (arena::cut_from(&mut own, skip, padded, ALIGN, fill), false)
        }
    };
    AlignedWrite {
        position: end - tail.len() as u64,
        buffer,
        data_len,
        in_arena,
    }
}

/// The tail after `records` were appended (by a buffered write) to a
/// segment whose tail was `tail`: the last partial block of `tail`
/// followed by `records`.
pub fn tail_after(tail: &[u8], records: &[Bytes]) -> Vec<u8> {
    let appended: usize = records.iter().map(Bytes::len).sum();
    let keep = (tail.len() + appended) % ALIGN;
    let mut parts: Vec<&[u8]> = Vec::new();
    let mut need = keep;
    for part in records.iter().map(|r| &r[..]).rev().chain([tail]) {
        if need == 0 {
            break;
        }
        let take = need.min(part.len());
        parts.push(&part[part.len() - take..]);
        need -= take;
    }
    let next: Vec<u8> = parts.into_iter().rev().flatten().copied().collect();
    // Postcondition: the partial block at the new end.
    assert_eq!(next.len(), keep, "the tail is the last partial block");
    next
}

impl AlignedWrite {
    /// The tail after this write succeeded.
    pub fn next_tail(buffer: &[u8], data_len: usize) -> Vec<u8> {
        buffer[data_len - data_len % ALIGN..data_len].to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(sizes: &[usize]) -> Vec<Bytes> {
        sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| Bytes::from(vec![i as u8 + 1; n]))
            .collect()
    }

    #[test]
    fn given_an_empty_segment_when_planning_should_pad_to_a_block() {
        let write = plan_write(0, &[], &records(&[100]), None);
        assert_eq!(write.position, 0);
        assert_eq!(write.data_len, 100);
        assert_eq!(write.buffer.len(), ALIGN);
        assert_eq!(write.buffer.as_ptr() as usize % ALIGN, 0);
        assert!(write.buffer[..100].iter().all(|&b| b == 1));
        assert!(write.buffer[100..].iter().all(|&b| b == 0));
        assert_eq!(
            AlignedWrite::next_tail(&write.buffer, write.data_len),
            vec![1; 100]
        );
    }

    #[test]
    fn given_a_partial_block_when_planning_should_rewrite_it_first() {
        let end = 2 * DIRECT_IO_ALIGN + 10;
        let tail = vec![9u8; 10];
        let write = plan_write(end, &tail, &records(&[5000, 3]), None);
        assert_eq!(write.position, 2 * DIRECT_IO_ALIGN);
        assert_eq!(write.data_len, 5013);
        let bytes = &write.buffer;
        assert_eq!(bytes.len(), 2 * ALIGN);
        assert_eq!(bytes.as_ptr() as usize % ALIGN, 0);
        assert_eq!(&bytes[..10], &[9; 10]);
        assert!(bytes[10..5010].iter().all(|&b| b == 1));
        assert_eq!(&bytes[5010..5013], &[2, 2, 2]);
        assert!(bytes[5013..].iter().all(|&b| b == 0));
        let next = AlignedWrite::next_tail(&write.buffer, write.data_len);
        assert_eq!(next.len(), 5013 - ALIGN);
        assert_eq!(&next[next.len() - 3..], &[2, 2, 2]);
    }

    #[test]
    fn given_data_ending_on_a_boundary_when_planning_should_leave_no_tail() {
        let write = plan_write(0, &[], &records(&[ALIGN - 1, 1]), None);
        assert_eq!(write.buffer.len(), ALIGN);
        assert!(AlignedWrite::next_tail(&write.buffer, write.data_len).is_empty());
    }

    #[test]
    fn given_an_arena_when_planning_a_large_write_should_cut_it_there_and_small_ones_not() {
        let mut arena = WriteArena::new(1 << 20, false);
        let tail = vec![9u8; 10];
        let large = plan_write(
            DIRECT_IO_ALIGN + 10,
            &tail,
            &records(&[100_000]),
            Some(&mut arena),
        );
        assert!(large.in_arena);
        assert_eq!(large.buffer.as_ptr() as usize % ALIGN, 0);
        assert_eq!(large.data_len, 100_010);
        assert_eq!(&large.buffer[..10], &[9; 10]);
        assert!(large.buffer[10..100_010].iter().all(|&b| b == 1));
        assert!(large.buffer[100_010..].iter().all(|&b| b == 0));
        let small = plan_write(0, &[], &records(&[100]), Some(&mut arena));
        assert!(!small.in_arena);
        assert_eq!(arena.allocated_blocks(), 1);
    }

    #[test]
    fn given_buffered_appends_when_taking_the_tail_should_keep_the_last_partial_block() {
        let tail = vec![9u8; 10];
        // Still inside the first block: the old tail and both records.
        let next = tail_after(&tail, &records(&[5, 3]));
        assert_eq!(next, [&[9u8; 10][..], &[1; 5], &[2; 3]].concat());
        // Past a boundary: only what follows it.
        let next = tail_after(&tail, &records(&[ALIGN - 20, 30]));
        assert_eq!(next, vec![2; 20]);
        // Exactly on a boundary: no tail.
        assert!(tail_after(&tail, &records(&[ALIGN - 10])).is_empty());
    }
}
