//! Which shard owns a partition: `(murmur3_32(namespace) >> 16) % shards`,
//! where the namespace packs stream (20 bits), topic (12) and partition (20)
//! into a u64 hashed as 8 little-endian bytes. The same on every node.

/// The packed partition namespace (storage spec §1).
pub fn namespace(stream: u32, topic: u32, partition: u32) -> u64 {
    assert!(
        stream < 1 << 20 && topic < 1 << 12 && partition < 1 << 20,
        "ids within their bit widths"
    );
    (u64::from(stream) << 32) | (u64::from(topic) << 20) | u64::from(partition)
}

/// The shard that owns the partition with this namespace.
pub fn owner(namespace: u64, shard_count: usize) -> usize {
    assert!(shard_count > 0, "at least one shard");
    if shard_count == 1 {
        return 0;
    }
    (murmur3_32(&namespace.to_le_bytes(), 0) >> 16) as usize % shard_count
}

/// MurmurHash3 x86 32-bit.
pub fn murmur3_32(data: &[u8], seed: u32) -> u32 {
    const C1: u32 = 0xcc9e_2d51;
    const C2: u32 = 0x1b87_3593;
    let mut h = seed;
    let mut chunks = data.chunks_exact(4);
    for chunk in &mut chunks {
        let mut k = u32::from_le_bytes(chunk.try_into().expect("4-byte chunk"));
        k = k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
        h ^= k;
        h = h.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        let mut k = 0u32;
        for (i, &byte) in tail.iter().enumerate() {
            k |= u32::from(byte) << (8 * i);
        }
        h ^= k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
    }
    h ^= data.len() as u32;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_known_vectors_when_hashing_should_match_murmur3() {
        assert_eq!(murmur3_32(b"", 0), 0);
        assert_eq!(murmur3_32(b"", 1), 0x514e_28b7);
        assert_eq!(murmur3_32(b"test", 0), 0xba6b_d213);
        assert_eq!(
            murmur3_32(b"The quick brown fox jumps over the lazy dog", 0),
            0x2e4f_f723
        );
    }

    #[test]
    fn given_spec_examples_when_packing_should_match() {
        assert_eq!(namespace(5, 2, 7), 0x0000_0005_0020_0007);
        assert_eq!(namespace(4095, 4095, 999_999), 0x0FFF_FFFF_423F);
    }

    #[test]
    fn given_many_partitions_when_owning_should_spread_over_shards() {
        let mut counts = [0usize; 2];
        for p in 0..1000 {
            counts[owner(namespace(0, 0, p), 2)] += 1;
        }
        assert!(counts.iter().all(|&c| c > 300), "{counts:?}");
        assert_eq!(owner(namespace(1, 2, 3), 1), 0);
    }
}
