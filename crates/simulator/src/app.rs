//! The simulated service: a small model of what the server replicates
//! (metadata ops, sends, consumer-offset writes), applied by every replica
//! to committed entries in op order. Its results are what clients are
//! answered with, so the checker can compare every replica and every reply
//! with one sequential run of the same model.
//!
//! ```text
//! request body: kind u8, then
//!   1 create stream   id u8
//!   2 send            partition u8, messages u8
//!   3 store offset    partition u8, consumer u8, offset u32 LE
//! result: create 1 (created) / 0 (exists); send: base offset u64 LE;
//!         store 1 (stored) / 0 (beyond the partition's end)
//! ```

use std::collections::{BTreeMap, BTreeSet};

use crate::prng::Prng;

pub const PARTITIONS: u8 = 4;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct App {
    streams: BTreeSet<u8>,
    next_offset: [u64; PARTITIONS as usize],
    offsets: BTreeMap<(u8, u8), u32>,
}

impl App {
    /// Applies one committed request body; returns the result bytes.
    pub fn apply(&mut self, body: &[u8]) -> Vec<u8> {
        match body {
            [1, id, ..] => vec![u8::from(self.streams.insert(*id))],
            [2, partition, messages, ..] => {
                let slot = &mut self.next_offset[usize::from(*partition % PARTITIONS)];
                let base = *slot;
                *slot += u64::from(*messages);
                base.to_le_bytes().to_vec()
            }
            [3, partition, consumer, a, b, c, d, ..] => {
                let offset = u32::from_le_bytes([*a, *b, *c, *d]);
                let end = self.next_offset[usize::from(*partition % PARTITIONS)];
                if u64::from(offset) < end {
                    self.offsets.insert((*partition, *consumer), offset);
                    vec![1]
                } else {
                    vec![0]
                }
            }
            _ => vec![0xFF],
        }
    }
}

/// A random request body from the workload stream.
pub fn random_body(rng: &mut Prng) -> Vec<u8> {
    let partition = rng.below(u64::from(PARTITIONS)) as u8;
    match rng.below(10) {
        0 => vec![1, rng.below(8) as u8],
        1..=6 => vec![2, partition, 1 + rng.below(10) as u8],
        _ => {
            let mut body = vec![3, partition, rng.below(3) as u8];
            body.extend_from_slice(&(rng.below(40) as u32).to_le_bytes());
            body
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_requests_when_applied_should_give_deterministic_results() {
        let mut app = App::default();
        assert_eq!(app.apply(&[1, 5]), vec![1]);
        assert_eq!(app.apply(&[1, 5]), vec![0], "a second create finds it");
        assert_eq!(app.apply(&[2, 0, 3]), 0u64.to_le_bytes().to_vec());
        assert_eq!(app.apply(&[2, 0, 2]), 3u64.to_le_bytes().to_vec());
        assert_eq!(app.apply(&[3, 0, 1, 4, 0, 0, 0]), vec![1]);
        assert_eq!(app.apply(&[3, 0, 1, 5, 0, 0, 0]), vec![0], "beyond the end");
    }
}
