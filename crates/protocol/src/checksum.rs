//! The two hash functions the protocol uses (XXH3-64 and XXH32, both seed 0).

/// XXH3-64 (seed 0, default secret) over `bytes`.
pub fn xxh3_64(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// XXH32 with seed 0: used for message-key partitioning and named consumers.
pub fn xxh32(bytes: &[u8]) -> u32 {
    xxhash_rust::xxh32::xxh32(bytes, 0)
}

/// Streaming XXH3-64; equal to the one-shot hash of the concatenated input.
pub struct Xxh3Stream(xxhash_rust::xxh3::Xxh3);

impl Xxh3Stream {
    pub fn new() -> Self {
        Self(xxhash_rust::xxh3::Xxh3::new())
    }

    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    pub fn finish(&self) -> u64 {
        self.0.digest()
    }
}

impl Default for Xxh3Stream {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_spec_test_vectors_when_hashing_should_match() {
        assert_eq!(xxh3_64(b""), 0x2D06_8005_38D3_94C2);
        assert_eq!(xxh3_64(b"abc"), 0x78AF_5F94_892F_3950);
        assert_eq!(xxh32(b"key"), 0xB3D9_3AE0);
    }

    #[test]
    fn given_split_input_when_streaming_should_equal_one_shot() {
        let mut s = Xxh3Stream::new();
        s.update(b"ab");
        s.update(b"c");
        assert_eq!(s.finish(), xxh3_64(b"abc"));
    }
}
