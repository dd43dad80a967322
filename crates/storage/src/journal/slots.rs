//! `snapshot.slots`: a journal's snapshot written in place, for journals
//! that snapshot often (`Journal::use_snapshot_slots`). The file holds two
//! slots of equal capacity; each snapshot overwrites the slot that does not
//! hold the newest one and is made durable with one fdatasync: no
//! temporary file, no rename, no directory fsync. A torn write leaves the
//! other slot, the previous snapshot, whose journal records are still there
//! (compaction runs only after the fdatasync returned).
//!
//! ```text
//! snapshot.slots = slot 0 | slot 1          each `capacity` bytes,
//!                                           capacity = file length / 2
//! slot = a snapshot.bin image (format.rs), then bytes of no meaning
//! ```
//!
//! A snapshot larger than the capacity rewrites the whole file atomically
//! (temporary file, fsync, rename, directory fsync) with a capacity of the
//! next power of two, the snapshot in slot 0. `open` takes the newest valid
//! slot, and a `snapshot.bin` beside it if that is newer.

use super::Snapshot;
use super::format::{self, CHECKSUM_SIZE, SNAPSHOT_HEADER_SIZE, SNAPSHOT_MAGIC};

pub const SLOTS_FILE_NAME: &str = "snapshot.slots";
/// The smallest slot: one page.
pub const MIN_SLOT_CAPACITY: u64 = 4096;

/// What a slots file holds.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Slots {
    pub capacity: u64,
    /// The newest valid snapshot and the slot it is in.
    pub newest: Option<(u8, Snapshot)>,
}

impl Slots {
    /// The slot the next snapshot goes to: never the newest one's.
    pub fn next_slot(&self) -> u8 {
        match &self.newest {
            Some((slot, _)) => 1 - slot,
            None => 0,
        }
    }
}

/// Reads a slots file's bytes (an odd or too short length reads as no
/// slots: the file is then rewritten whole on the next snapshot).
pub fn read(bytes: &[u8]) -> Slots {
    let len = bytes.len() as u64;
    if len < 2 * MIN_SLOT_CAPACITY || !len.is_multiple_of(2) {
        return Slots::default();
    }
    let capacity = len / 2;
    let mut newest: Option<(u8, Snapshot)> = None;
    for slot in 0..2u8 {
        let start = (u64::from(slot) * capacity) as usize;
        let image = &bytes[start..start + capacity as usize];
        if let Some(snapshot) = decode_slot(image)
            && newest
                .as_ref()
                .is_none_or(|(_, n)| snapshot.sequence > n.sequence)
        {
            newest = Some((slot, snapshot));
        }
    }
    Slots { capacity, newest }
}

/// The snapshot a slot holds, if it holds a valid one.
fn decode_slot(image: &[u8]) -> Option<Snapshot> {
    if image.len() < SNAPSHOT_HEADER_SIZE + CHECKSUM_SIZE
        || u32::from_le_bytes(image[..4].try_into().expect("4 bytes")) != SNAPSHOT_MAGIC
    {
        return None;
    }
    let payload_len = usize::try_from(u64::from_le_bytes(
        image[16..24].try_into().expect("8 bytes"),
    ))
    .ok()?;
    let end = SNAPSHOT_HEADER_SIZE
        .checked_add(payload_len)?
        .checked_add(CHECKSUM_SIZE)?;
    let (sequence, payload) = format::decode_snapshot(image.get(..end)?).ok()?;
    Some(Snapshot { sequence, payload })
}

/// The capacity a file must have for a snapshot image of `len` bytes.
pub fn capacity_for(len: usize) -> u64 {
    (len as u64).next_power_of_two().max(MIN_SLOT_CAPACITY)
}

/// A whole new slots file of `capacity` with `image` in slot 0.
pub fn whole_file(capacity: u64, image: &[u8]) -> Vec<u8> {
    assert!(image.len() as u64 <= capacity, "the image fits its slot");
    let mut bytes = vec![0u8; 2 * capacity as usize];
    bytes[..image.len()].copy_from_slice(image);
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_two_slots_when_reading_should_take_the_newest_valid_one() {
        let a = format::encode_snapshot(4, b"four");
        let b = format::encode_snapshot(9, b"nine");
        let mut bytes = whole_file(MIN_SLOT_CAPACITY, &a);
        let second = MIN_SLOT_CAPACITY as usize;
        bytes[second..second + b.len()].copy_from_slice(&b);
        let slots = read(&bytes);
        assert_eq!(slots.capacity, MIN_SLOT_CAPACITY);
        let (slot, snapshot) = slots.newest.clone().unwrap();
        assert_eq!((slot, snapshot.sequence), (1, 9));
        assert_eq!(snapshot.payload, b"nine");
        assert_eq!(slots.next_slot(), 0, "the older slot is overwritten next");
        // A torn newest slot: the other one stands.
        bytes[second + SNAPSHOT_HEADER_SIZE] ^= 1;
        let slots = read(&bytes);
        assert_eq!(slots.newest.map(|(s, n)| (s, n.sequence)), Some((0, 4)));
    }

    #[test]
    fn given_no_valid_slot_or_a_bad_length_when_reading_should_find_nothing() {
        assert_eq!(read(&[]), Slots::default());
        assert_eq!(read(&vec![0; 3 * MIN_SLOT_CAPACITY as usize]).newest, None);
        assert_eq!(
            read(&vec![0; 2 * MIN_SLOT_CAPACITY as usize + 2]).newest,
            None
        );
        assert_eq!(capacity_for(10), MIN_SLOT_CAPACITY);
        assert_eq!(capacity_for(5000), 8192);
    }
}
