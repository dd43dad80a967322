//! Durable storage: partition logs (segments + sparse indexes), metadata
//! journal, consumer offsets, and the Storage seam they all go through.
//!
//! Everything here runs on one shard's single-threaded compio runtime:
//! types are `!Send`, shared state lives in `Rc<RefCell<..>>` and no
//! `RefCell` borrow is ever held across an `.await`.

pub mod seam;
