//! A written-batch cache budget shared by the partitions of one shard.
//!
//! A partition written with direct I/O leaves nothing in the page cache, so
//! a consumer behind its own small cache would read from the disk. With a
//! shared budget each such partition keeps its newest written batches in
//! memory (the very buffers the producers sent, no copy) up to its
//! `cache_size_bytes`, evicting its oldest ones while the shard's total is
//! over the budget, down to its floor (`FLOOR_BYTES` unless set). A
//! partition that stops writing keeps what it holds until the next of its
//! own writes, or its log is dropped. The budget counts written
//! batches only: unwritten ones are bounded by `max_unwritten_bytes`.
//! The budget also owns the shard's write arena (`arena`): large direct
//! writes are planned there, and the cache keeps slices of them.

use std::cell::{Cell, RefCell, RefMut};
use std::fmt;
use std::rc::Rc;

use super::arena::WriteArena;

/// What a partition keeps whatever the shard's total, by default (the
/// cache every partition has without a shared budget).
pub const FLOOR_BYTES: u64 = super::DEFAULT_CACHE_SIZE_BYTES;

/// A handle to one shard's budget; clones share it.
#[derive(Clone)]
pub struct SharedCache(Rc<Budget>);

struct Budget {
    limit: u64,
    floor: u64,
    used: Cell<u64>,
    arena: RefCell<WriteArena>,
}

impl SharedCache {
    /// A budget of `limit` bytes; with `prefault` its arena's memory is
    /// touched now rather than at first use.
    pub fn new(limit: u64, prefault: bool) -> Self {
        Self::build(limit, FLOOR_BYTES, prefault)
    }

    /// A budget whose partitions each keep `floor` bytes whatever the
    /// total.
    pub fn with_floor(limit: u64, floor: u64) -> Self {
        Self::build(limit, floor, false)
    }

    fn build(limit: u64, floor: u64, prefault: bool) -> Self {
        SharedCache(Rc::new(Budget {
            limit,
            floor,
            used: Cell::new(0),
            arena: RefCell::new(WriteArena::new(limit, prefault)),
        }))
    }

    /// The shard's write arena; borrowed only while a write is planned.
    pub(super) fn arena(&self) -> RefMut<'_, WriteArena> {
        self.0.arena.borrow_mut()
    }

    /// Arena blocks allocated so far (each `arena::BLOCK_BYTES`).
    pub fn arena_blocks(&self) -> u64 {
        self.0.arena.borrow().allocated_blocks()
    }

    pub fn floor(&self) -> u64 {
        self.0.floor
    }

    pub fn limit(&self) -> u64 {
        self.0.limit
    }

    /// Written bytes cached now, by every partition of the shard.
    pub fn used(&self) -> u64 {
        self.0.used.get()
    }

    pub fn over(&self) -> bool {
        self.used() > self.0.limit
    }

    pub(super) fn charge(&self, bytes: u64) {
        self.0.used.set(self.used() + bytes);
    }

    pub(super) fn release(&self, bytes: u64) {
        assert!(bytes <= self.used(), "released more than was charged");
        self.0.used.set(self.used() - bytes);
    }
}

impl fmt::Debug for SharedCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedCache")
            .field("limit", &self.0.limit)
            .field("used", &self.used())
            .finish()
    }
}

/// Equal when they are the same budget.
impl PartialEq for SharedCache {
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for SharedCache {}
