//! Deterministic randomness from a seed (splitmix64): every random choice the project makes — the
//! engine's noise and blindness, the book, the think-time model, the arena's movers and schedule,
//! test positions — is a pure function of a seed, so the same seed plays the same game.

/// The golden-ratio step splitmix64 adds before mixing.
const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// The splitmix64 finaliser: a cheap bijective mixer with full avalanche.
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// splitmix64 of one value: the golden step, then the finaliser.
pub fn splitmix64(z: u64) -> u64 {
    mix64(z.wrapping_add(GOLDEN))
}

/// A small seedable generator: the sequence splitmix64 draws from `seed`.
#[derive(Clone, Debug)]
pub struct SplitMix(u64);

impl SplitMix {
    pub fn new(seed: u64) -> SplitMix {
        SplitMix(seed)
    }

    /// The next number of the sequence.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GOLDEN);
        mix64(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_draws_splitmix64_of_its_running_state() {
        // The reference sequence of splitmix64 seeded with 0 (Vigna's splitmix64.c).
        let mut rng = SplitMix::new(0);
        assert_eq!(rng.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(rng.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(splitmix64(0), 0xe220_a839_7b1d_cdaf);
    }

    #[test]
    fn the_finaliser_spreads_neighbouring_inputs() {
        let (a, b) = (mix64(1), mix64(2));
        assert!((a ^ b).count_ones() > 16, "{a:x} {b:x}");
    }
}
