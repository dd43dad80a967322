//! The simulator's only source of chance: SplitMix64, one stream per
//! concern, each seeded from the run's seed through a fixed salt, so extra
//! draws in one stream leave the others unchanged.

#[derive(Debug, Clone)]
pub struct Prng(u64);

/// Salts of the independent streams.
pub mod salt {
    pub const NETWORK: u64 = 0x6e65_7477_6f72_6b00;
    pub const FAULTS: u64 = 0x6661_756c_7473_0000;
    pub const WORKLOAD: u64 = 0x776f_726b_6c6f_6164;
    pub const NONCES: u64 = 0x6e6f_6e63_6573_0000;
    pub const SHAPE: u64 = 0x7368_6170_6500_0000;
    pub const CHECKPOINTS: u64 = 0x6368_6563_6b70_7400;
}

impl Prng {
    pub fn new(seed: u64, salt: u64) -> Self {
        let mut prng = Prng(seed ^ salt);
        prng.next_u64();
        prng
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0);
        self.next_u64() % n
    }

    /// True with probability `per_million / 1_000_000`.
    pub fn chance(&mut self, per_million: u32) -> bool {
        self.below(1_000_000) < u64::from(per_million)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_one_seed_when_drawing_twice_should_give_the_same_stream() {
        let a: Vec<u64> = {
            let mut p = Prng::new(7, salt::NETWORK);
            (0..5).map(|_| p.next_u64()).collect()
        };
        let mut p = Prng::new(7, salt::NETWORK);
        let b: Vec<u64> = (0..5).map(|_| p.next_u64()).collect();
        assert_eq!(a, b);
        assert_ne!(
            a[0],
            Prng::new(7, salt::FAULTS).next_u64(),
            "streams differ"
        );
    }
}
