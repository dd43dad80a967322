//! Recycled memory for the writes of one shard's partitions that share a
//! cache budget (`shared_cache`).
//!
//! A direct write copies its records into an aligned buffer (see `direct`).
//! Planned in the arena, that buffer is a region cut from a large block,
//! and the cache then keeps slices of the region instead of the producers'
//! receive buffers (`LogState::apply_flushed_chunk`). A buffered write of
//! such a partition copies its records into a region too (a copy from
//! warm memory to warm memory), for the same reason. So the receive buffers
//! go back to the allocator at once, warm for the next request, and the
//! cache's memory is a fixed set of blocks reused in turn: a block is cut
//! again from its start once every region cut from it is dropped (evicted
//! and no longer read). Fresh memory costs a page fault and a page of
//! zeroes per 4 KiB on first touch; this keeps the shard writing into
//! memory it has touched before, instead of a new receive buffer per
//! cached batch (page faults were a quarter of the CPU with a 4 GiB cache,
//! docs/benchmarks.md, session 17). `prefault` touches every block at
//! start instead of at first use.
//!
//! Regions of direct writes are whole blocks of `DIRECT_IO_ALIGN` at
//! aligned addresses; direct writes under [`MIN_WRITE_BYTES`] are planned
//! on their own (padding a small record to a block would cost more memory
//! than it holds). A write larger than a block has no region.

use std::collections::VecDeque;

use bytes::{Buf, BufMut, Bytes, BytesMut};

use super::direct::ALIGN;
/// Bytes per block.
pub const BLOCK_BYTES: usize = 8 << 20;
/// Smaller writes are planned in a buffer of their own.
pub const MIN_WRITE_BYTES: usize = 64 << 10;
/// Blocks kept beyond the budget's worth: the partially cut block, regions
/// still being read, and each partition's floor.
const SPARE_BLOCKS: usize = 8;
/// What `prefault` writes into every block.
const PREFAULT_FILL: u8 = 0xa5;

/// The blocks of one shard (not shared between threads: the shard's
/// partitions cut regions one at a time).
#[derive(Debug)]
pub struct WriteArena {
    /// Where the next region is cut: empty, its capacity the room left.
    current: BytesMut,
    /// Blocks cut before `current`, oldest first. A block whose regions
    /// are all dropped is cut again from its start.
    cut: VecDeque<BytesMut>,
    /// At most this many blocks in `cut`; beyond it the oldest is
    /// forgotten (its memory returns to the allocator with its last
    /// region).
    max_blocks: usize,
    /// Blocks allocated so far (for tests and the arena's statistics).
    allocated: u64,
}

impl WriteArena {
    /// An arena for a shard whose cache holds `budget_bytes`.
    pub fn new(budget_bytes: u64, prefault: bool) -> Self {
        let budget_blocks = usize::try_from(budget_bytes.div_ceil(BLOCK_BYTES as u64))
            .expect("a budget fits in memory");
        let mut arena = WriteArena {
            current: BytesMut::new(),
            cut: VecDeque::new(),
            max_blocks: budget_blocks + SPARE_BLOCKS,
            allocated: 0,
        };
        if prefault {
            for _ in 0..budget_blocks {
                // Not zeroes: the compiler turns an allocation followed
                // by zeroing into `calloc`, which leaves fresh memory
                // untouched.
                let mut block = arena.allocate();
                block.put_bytes(PREFAULT_FILL, BLOCK_BYTES);
                block.clear();
                arena.cut.push_back(block);
            }
        }
        arena
    }

    pub fn allocated_blocks(&self) -> u64 {
        self.allocated
    }

    /// A region of `len` bytes (a whole number of blocks of
    /// `DIRECT_IO_ALIGN`) at an aligned address, filled by `fill`, which
    /// must append exactly `len` bytes: a direct write. `None` when `len`
    /// is outside `MIN_WRITE_BYTES..` one block.
    pub fn cut_aligned(&mut self, len: usize, fill: impl FnOnce(&mut BytesMut)) -> Option<Bytes> {
        assert!(len.is_multiple_of(ALIGN), "regions are whole blocks");
        if !(MIN_WRITE_BYTES..=BLOCK_BYTES - ALIGN).contains(&len) {
            return None;
        }
        Some(self.cut(len, ALIGN, fill))
    }

    /// `records` copied one after another into a region: a buffered
    /// write. `None` when they are larger than a block.
    pub fn copy(&mut self, records: &[Bytes]) -> Option<Bytes> {
        let len: usize = records.iter().map(Bytes::len).sum();
        if len == 0 || len > BLOCK_BYTES {
            return None;
        }
        Some(self.cut(len, 1, |bytes: &mut BytesMut| {
            records.iter().for_each(|r| bytes.extend_from_slice(r));
        }))
    }

    /// Cuts a region of `len` bytes at an address that is a multiple of
    /// `align`, moving to another block when this one has no room.
    fn cut(&mut self, len: usize, align: usize, fill: impl FnOnce(&mut BytesMut)) -> Bytes {
        if self.room_for(len, align).is_none() {
            self.next_block();
        }
        let skip = self
            .room_for(len, align)
            .expect("a fresh block holds any region");
        cut_from(&mut self.current, skip, len, align, fill)
    }

    /// The bytes to skip in `current` before a region of `len` at a
    /// multiple of `align`, if it has room for both.
    fn room_for(&self, len: usize, align: usize) -> Option<usize> {
        let skip = self.current.as_ptr().align_offset(align);
        (self.current.capacity() >= skip + len).then_some(skip)
    }

    /// Moves to a block with all its room: the oldest cut one whose regions
    /// are all dropped, else a new one.
    fn next_block(&mut self) {
        let full = std::mem::take(&mut self.current);
        if full.capacity() > 0 {
            self.cut.push_back(full);
        }
        let free = self.cut.iter_mut().position(|block| {
            block.clear();
            block.try_reclaim(BLOCK_BYTES)
        });
        self.current = match free {
            Some(at) => self.cut.remove(at).expect("found above"),
            None => {
                if self.cut.len() >= self.max_blocks {
                    self.cut.pop_front();
                }
                self.allocate()
            }
        };
        // Postcondition: the block has a whole block's room.
        assert!(self.current.is_empty() && self.current.capacity() >= BLOCK_BYTES);
    }

    fn allocate(&mut self) -> BytesMut {
        self.allocated += 1;
        BytesMut::with_capacity(BLOCK_BYTES)
    }
}

/// Cuts the region of `len` bytes that starts `skip` bytes into `buffer`
/// (an address that is a multiple of `align`), filled by `fill`. `buffer`
/// must have room for both and keeps the rest.
pub(super) fn cut_from(
    buffer: &mut BytesMut,
    skip: usize,
    len: usize,
    align: usize,
    fill: impl FnOnce(&mut BytesMut),
) -> Bytes {
    assert!(
        buffer.is_empty() && buffer.capacity() >= skip + len,
        "room for the region"
    );
    if skip > 0 {
        buffer.put_bytes(0, skip);
        buffer.advance(skip);
    }
    let start = buffer.as_ptr();
    assert_eq!(start as usize % align, 0, "the region starts aligned");
    fill(buffer);
    assert_eq!(buffer.len(), len, "filled exactly the region");
    assert_eq!(
        buffer.as_ptr(),
        start,
        "filling never reallocates, so the region stays where it was cut"
    );
    let region = buffer.split_to(len).freeze();
    // Postcondition: an aligned region of the requested length.
    assert_eq!(region.as_ptr() as usize % align, 0, "aligned region");
    assert_eq!(region.len(), len);
    region
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill_with(byte: u8, len: usize) -> impl FnOnce(&mut BytesMut) {
        move |buffer: &mut BytesMut| buffer.put_bytes(byte, len)
    }

    #[test]
    fn given_regions_when_cut_should_be_aligned_and_hold_what_was_filled() {
        let mut arena = WriteArena::new(BLOCK_BYTES as u64, false);
        let first = arena.cut_aligned(MIN_WRITE_BYTES, fill_with(1, MIN_WRITE_BYTES));
        let second = arena.cut_aligned(2 * MIN_WRITE_BYTES, fill_with(2, 2 * MIN_WRITE_BYTES));
        let (first, second) = (first.unwrap(), second.unwrap());
        assert!(first.iter().all(|&b| b == 1));
        assert!(second.iter().all(|&b| b == 2));
        assert_eq!(second.as_ptr() as usize % ALIGN, 0);
        assert_eq!(arena.allocated_blocks(), 1, "both from one block");
    }

    #[test]
    fn given_a_small_or_huge_write_when_cut_should_have_no_region() {
        let mut arena = WriteArena::new(BLOCK_BYTES as u64, false);
        assert!(arena.cut_aligned(ALIGN, fill_with(0, ALIGN)).is_none());
        assert!(
            arena
                .cut_aligned(BLOCK_BYTES, fill_with(0, BLOCK_BYTES))
                .is_none()
        );
        assert_eq!(arena.allocated_blocks(), 0);
    }

    #[test]
    fn given_dropped_regions_when_blocks_fill_should_reuse_them_and_keep_held_ones() {
        let mut arena = WriteArena::new(2 * BLOCK_BYTES as u64, false);
        let len = BLOCK_BYTES / 2;
        // Two regions per block (the second may not fit after the
        // alignment skip, so count blocks instead of assuming).
        let held = arena.cut_aligned(len, fill_with(7, len)).unwrap();
        for round in 0..20u8 {
            let region = arena.cut_aligned(len, fill_with(round, len)).unwrap();
            assert!(region.iter().all(|&b| b == round));
        }
        assert!(
            arena.allocated_blocks() <= 3,
            "dropped regions' blocks are reused: {} allocated",
            arena.allocated_blocks()
        );
        assert!(
            held.iter().all(|&b| b == 7),
            "a held region is never cut again"
        );
    }

    #[test]
    fn given_prefault_when_cutting_within_the_budget_should_allocate_nothing_more() {
        let mut arena = WriteArena::new(2 * BLOCK_BYTES as u64, true);
        assert_eq!(arena.allocated_blocks(), 2);
        let len = BLOCK_BYTES / 4;
        let held: Vec<Bytes> = (0..6)
            .map(|_| arena.cut_aligned(len, fill_with(1, len)).unwrap())
            .collect();
        assert_eq!(
            arena.allocated_blocks(),
            2,
            "{} blocks",
            arena.allocated_blocks()
        );
        drop(held);
    }

    #[test]
    fn given_every_block_held_when_over_the_limit_should_forget_the_oldest() {
        let mut arena = WriteArena::new(BLOCK_BYTES as u64, false);
        let len = BLOCK_BYTES - ALIGN;
        let held: Vec<Bytes> = (0..(SPARE_BLOCKS + 4))
            .map(|_| arena.cut_aligned(len, fill_with(3, len)).unwrap())
            .collect();
        assert!(arena.cut.len() <= arena.max_blocks);
        assert!(held.iter().all(|r| r.iter().all(|&b| b == 3)));
    }

    #[test]
    fn given_records_when_copied_should_be_one_region_back_to_back() {
        let mut arena = WriteArena::new(BLOCK_BYTES as u64, false);
        let records = [Bytes::from(vec![1u8; 3]), Bytes::from(vec![2u8; 5])];
        let first = arena.copy(&records).unwrap();
        let second = arena.copy(&records).unwrap();
        assert_eq!(&first[..], &[1, 1, 1, 2, 2, 2, 2, 2]);
        assert_eq!(
            second.as_ptr() as usize,
            first.as_ptr() as usize + 8,
            "no padding"
        );
        assert!(arena.copy(&[]).is_none());
        assert!(
            arena
                .copy(&[Bytes::from(vec![0u8; BLOCK_BYTES + 1])])
                .is_none()
        );
    }
}
