//! The two hash functions the protocol uses (XXH3-64 and XXH32, both seed 0).
//!
//! `twox-hash` picks AVX2 or SSE2 for XXH3 at run time, so a build for
//! plain x86-64 still hashes with AVX2 where the CPU has it: every batch is
//! hashed twice on admission (each message's checksum, then the op's
//! identity), and this halved that cost against a crate that uses only the
//! features the build targets (docs/benchmarks.md, session 17).

use std::hash::Hasher;

use twox_hash::{XxHash3_64, XxHash32};

/// XXH3-64 (seed 0, default secret) over `bytes`.
pub fn xxh3_64(bytes: &[u8]) -> u64 {
    XxHash3_64::oneshot(bytes)
}

/// XXH32 with seed 0: used for message-key partitioning and named consumers.
pub fn xxh32(bytes: &[u8]) -> u32 {
    XxHash32::oneshot(0, bytes)
}

/// Streaming XXH3-64; equal to the one-shot hash of the concatenated input.
pub struct Xxh3Stream(XxHash3_64);

impl Xxh3Stream {
    pub fn new() -> Self {
        Self(XxHash3_64::with_seed(0))
    }

    pub fn update(&mut self, bytes: &[u8]) {
        self.0.write(bytes);
    }

    pub fn finish(&self) -> u64 {
        self.0.finish()
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
