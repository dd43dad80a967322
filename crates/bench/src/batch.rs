//! Message batches built once per producer and reused for every send, so the
//! measured loop does no payload allocation.
//!
//! All payloads are slices of one shared, pseudo-random buffer (`Bytes`
//! slices share storage), so a pool costs only its message headers. A fixed
//! size needs one batch; a size range gets [`RANGE_VARIANTS`] batches whose
//! sizes come from a seeded generator, cycled in order. Before each send the
//! pool stamps fresh message ids and the origin timestamp: ids must differ
//! between sends or a deduplicating server would drop the repeats.

use bytes::Bytes;
use iggy::prelude::{IggyMessage, IggyTimestamp};

use crate::plan::ActorId;
use crate::units::MessageSize;

/// Distinct batches kept for a message-size range.
pub const RANGE_VARIANTS: usize = 8;
/// Bits of a message id's low half that count messages; the actor id sits above.
const SEQUENCE_BITS: u32 = 40;

/// SplitMix64: tiny, seedable and good enough to vary sizes and fill payloads.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `low..=high` (modulo bias is irrelevant here).
    pub fn in_range(&mut self, low: u32, high: u32) -> u32 {
        let span = u64::from(high - low) + 1;
        low + (self.next_u64() % span) as u32
    }
}

/// Payload sizes for each batch variant: `variants x messages_per_batch`.
pub fn payload_sizes(size: MessageSize, messages_per_batch: u32, seed: u64) -> Vec<Vec<u32>> {
    let variants = if size.is_fixed() { 1 } else { RANGE_VARIANTS };
    let mut random = SplitMix64::new(seed);
    (0..variants)
        .map(|_| {
            (0..messages_per_batch)
                .map(|_| random.in_range(size.min_bytes, size.max_bytes))
                .collect()
        })
        .collect()
}

#[derive(Debug)]
pub struct BatchPool {
    batches: Vec<Vec<IggyMessage>>,
    payload_bytes: Vec<u64>,
    cursor: usize,
    id_high: u128,
    sequence: u64,
}

impl BatchPool {
    /// `run_nonce` keeps ids unique across runs that reuse streams.
    pub fn new(
        actor: ActorId,
        size: MessageSize,
        messages_per_batch: u32,
        run_nonce: u64,
    ) -> anyhow::Result<Self> {
        let seed = run_nonce ^ u64::from(actor.0);
        let shared = random_payload(size.max_bytes as usize, seed);
        let sizes = payload_sizes(size, messages_per_batch, seed);
        let payload_bytes = sizes
            .iter()
            .map(|batch| batch.iter().map(|&len| u64::from(len)).sum())
            .collect();
        let mut batches = Vec::with_capacity(sizes.len());
        for batch_sizes in &sizes {
            let mut batch = Vec::with_capacity(batch_sizes.len());
            for &len in batch_sizes {
                let payload = shared.slice(..len as usize);
                batch.push(IggyMessage::builder().payload(payload).build()?);
            }
            batches.push(batch);
        }
        Ok(Self {
            batches,
            payload_bytes,
            cursor: 0,
            id_high: (u128::from(run_nonce) << 64) | (u128::from(actor.0) << SEQUENCE_BITS),
            sequence: 0,
        })
    }

    /// Payload bytes of the batch the next call to [`Self::next_batch`] returns.
    pub fn next_payload_bytes(&self) -> u64 {
        self.payload_bytes[self.cursor]
    }

    /// The next batch, stamped with fresh ids and the current time.
    pub fn next_batch(&mut self) -> &mut [IggyMessage] {
        let index = self.cursor;
        self.cursor = (self.cursor + 1) % self.batches.len();
        let now_us = IggyTimestamp::now().as_micros();
        for message in self.batches[index].iter_mut() {
            self.sequence += 1;
            assert!(
                self.sequence < 1 << SEQUENCE_BITS,
                "message id space exhausted"
            );
            message.header.id = self.id_high | u128::from(self.sequence);
            message.header.origin_timestamp = now_us;
        }
        &mut self.batches[index]
    }
}

fn random_payload(len: usize, seed: u64) -> Bytes {
    let mut random = SplitMix64::new(seed);
    let mut buffer = Vec::with_capacity(len + 8);
    while buffer.len() < len {
        buffer.extend_from_slice(&random.next_u64().to_le_bytes());
    }
    buffer.truncate(len);
    Bytes::from(buffer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_fixed_size_when_sizing_should_build_one_uniform_variant() {
        let sizes = payload_sizes(MessageSize::fixed(100), 3, 7);
        assert_eq!(sizes, vec![vec![100, 100, 100]]);
    }

    #[test]
    fn given_range_when_sizing_should_stay_inside_bounds_and_vary() {
        let range = MessageSize {
            min_bytes: 10,
            max_bytes: 20,
        };
        let sizes = payload_sizes(range, 100, 7);
        assert_eq!(sizes.len(), RANGE_VARIANTS);
        let all: Vec<u32> = sizes.into_iter().flatten().collect();
        assert!(all.iter().all(|&len| (10..=20).contains(&len)));
        assert!(all.iter().any(|&len| len != all[0]));
    }

    #[test]
    fn given_pool_when_taking_batches_should_stamp_unique_ids_and_cycle() {
        let range = MessageSize {
            min_bytes: 5,
            max_bytes: 9,
        };
        let mut pool = BatchPool::new(ActorId(3), range, 4, 1).expect("pool");
        let expected_bytes = pool.next_payload_bytes();
        let first: Vec<u128> = pool.next_batch().iter().map(|m| m.header.id).collect();
        let second: Vec<u128> = pool.next_batch().iter().map(|m| m.header.id).collect();
        assert_eq!(first.len(), 4);
        assert!(first.iter().all(|id| !second.contains(id)));
        assert_eq!(first[0] >> SEQUENCE_BITS & 0xFF, 3);
        for _ in 2..RANGE_VARIANTS {
            pool.next_batch();
        }
        assert_eq!(pool.next_payload_bytes(), expected_bytes);
        let bytes: u64 = pool
            .next_batch()
            .iter()
            .map(|m| m.payload.len() as u64)
            .sum();
        assert_eq!(bytes, expected_bytes);
    }
}
