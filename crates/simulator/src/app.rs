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

impl App {
    /// The state as bytes (a checkpoint's): equal states give equal bytes.
    ///
    /// ```text
    /// streams: count u8, ids u8 each; next offsets: 4 x u64 LE;
    /// stored offsets: count u16 LE, then (partition u8, consumer u8, offset u32 LE)
    /// ```
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(u8::try_from(self.streams.len()).expect("stream ids are u8"));
        out.extend(self.streams.iter());
        for next in self.next_offset {
            out.extend_from_slice(&next.to_le_bytes());
        }
        let count = u16::try_from(self.offsets.len()).expect("256 x 256 at most");
        out.extend_from_slice(&count.to_le_bytes());
        for (&(partition, consumer), &offset) in &self.offsets {
            out.extend_from_slice(&[partition, consumer]);
            out.extend_from_slice(&offset.to_le_bytes());
        }
    }

    /// Reads what `encode` wrote from the front of `bytes`; returns the
    /// state and the bytes after it.
    pub fn decode(bytes: &[u8]) -> Option<(App, &[u8])> {
        let (&count, mut rest) = bytes.split_first()?;
        let mut app = App::default();
        for _ in 0..count {
            let (&id, tail) = rest.split_first()?;
            app.streams.insert(id);
            rest = tail;
        }
        for slot in &mut app.next_offset {
            let (word, tail) = rest.split_at_checked(8)?;
            *slot = u64::from_le_bytes(word.try_into().ok()?);
            rest = tail;
        }
        let (count, tail) = rest.split_at_checked(2)?;
        rest = tail;
        for _ in 0..u16::from_le_bytes(count.try_into().ok()?) {
            let (item, tail) = rest.split_at_checked(6)?;
            let offset = u32::from_le_bytes(item[2..6].try_into().ok()?);
            app.offsets.insert((item[0], item[1]), offset);
            rest = tail;
        }
        Some((app, rest))
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

    #[test]
    fn given_a_state_when_encoded_should_decode_to_the_same_state() {
        let mut app = App::default();
        app.apply(&[1, 5]);
        app.apply(&[2, 3, 7]);
        app.apply(&[3, 3, 2, 4, 0, 0, 0]);
        let mut bytes = Vec::new();
        app.encode(&mut bytes);
        bytes.push(0xEE);
        let (decoded, rest) = App::decode(&bytes).expect("decodes");
        assert_eq!(decoded, app);
        assert_eq!(rest, [0xEE], "only its own bytes are read");
        assert_eq!(
            bytes[..14],
            [1, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            "golden: one stream (5), partition 0's next offset 0"
        );
    }
}
