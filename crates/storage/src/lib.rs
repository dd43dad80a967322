//! Durable storage: partition logs (segments + sparse indexes), metadata
//! journal, consumer offsets, and the Storage seam they all go through.
//!
//! Everything here runs on one shard's single-threaded compio runtime:
//! types are `!Send`, shared state lives in `Rc<RefCell<..>>` and no
//! `RefCell` borrow is ever held across an `.await`.
//!
//! No unsafe code, but for the one system call no safe binding offers
//! (`sync_file_range`, in `seam::real`).
#![deny(unsafe_code)]

pub mod counter_file;
pub mod error;
pub mod journal;
pub mod lock;
pub mod offset;
pub mod offsets;
pub mod partition;
pub mod purge_gen;
pub mod seam;
pub mod superblock;

pub use error::{Result, StorageError};
pub use offset::Offset;
pub use partition::{
    AppendReceipt, FlushObserver, LogOptions, PartitionLog, PolledRecord, RecoveryReport,
    SegmentInfo,
};
pub use seam::{RealStorage, SimStorage, Storage, StorageFile};
