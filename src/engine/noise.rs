//! Seeded, reproducible evaluation noise: a logistic draw that is a pure function of
//! (position key, seed), so a transposition gets the same noise and the TT stays coherent.

use crate::seed::mix64;

/// Evaluation noise: every static evaluation gets a logistic draw of scale `scale_cp`
/// centipawns, a pure function of (position key, seed), clipped at ±`clip_cp`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Noise {
    pub scale_cp: f64,
    pub seed: u64,
    /// The largest draw either way ([`MAX_NOISE_CP`] unless a level asks for less): a draw
    /// clipped well under a minor piece's worth blurs a level's judgement of the position
    /// without making it give material away for a mirage.
    pub clip_cp: i32,
}

/// The largest noise magnitude added to one evaluation, in centipawns. The logistic law has
/// unbounded tails (|draw| ≈ 37·s at the extreme u = 2^-53); capping keeps a noisy evaluation
/// far below the mate band whatever the scale.
pub const MAX_NOISE_CP: i32 = 5_000;

impl Noise {
    pub const NONE: Noise = Noise {
        scale_cp: 0.0,
        seed: 0,
        clip_cp: MAX_NOISE_CP,
    };

    /// Noise of scale `scale_cp` with `seed`, clipped only at ±[`MAX_NOISE_CP`].
    pub fn new(scale_cp: f64, seed: u64) -> Noise {
        Noise {
            scale_cp,
            seed,
            clip_cp: MAX_NOISE_CP,
        }
    }

    pub fn is_active(&self) -> bool {
        self.scale_cp > 0.0
    }

    /// The noise added to the static evaluation of the position with Zobrist `key`:
    /// `s · ln(u / (1 − u))` with `u` uniform in (0, 1) drawn from a hash of (key, seed),
    /// rounded to whole centipawns and clipped at ±`clip_cp` (never beyond ±[`MAX_NOISE_CP`]).
    pub fn draw_cp(&self, key: u64) -> i32 {
        if !self.is_active() {
            return 0;
        }
        // Mixing the seed through its own finaliser first keeps seeds that differ in one bit
        // (0, 1, 2, …) from producing related draws.
        let bits = mix64(key ^ mix64(self.seed.wrapping_add(0x9e37_79b9_7f4a_7c15)));
        // 53 random bits, offset by half a step so u is never 0 or 1.
        let u = ((bits >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let draw = self.scale_cp * (u / (1.0 - u)).ln();
        let clip = f64::from(self.clip_cp.clamp(0, MAX_NOISE_CP));
        draw.round().clamp(-clip, clip) as i32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_scale_draws_nothing() {
        assert_eq!(Noise::NONE.draw_cp(12345), 0);
    }

    #[test]
    fn draws_are_pure_and_depend_on_seed() {
        let a = Noise::new(100.0, 1);
        let b = Noise { seed: 2, ..a };
        assert_eq!(a.draw_cp(42), a.draw_cp(42));
        let differ = (0..100u64)
            .filter(|&k| a.draw_cp(k) != b.draw_cp(k))
            .count();
        assert!(differ > 90, "{differ}");
    }

    #[test]
    fn draws_follow_the_logistic_law() {
        // Logistic(0, s): mean 0, standard deviation s·π/√3 ≈ 1.814·s, median |x| = s·ln 3.
        let noise = Noise::new(100.0, 7);
        let n = 20_000u64;
        let draws: Vec<f64> = (0..n)
            .map(|k| f64::from(noise.draw_cp(k.wrapping_mul(0x2545_f491_4f6c_dd1d))))
            .collect();
        let mean = draws.iter().sum::<f64>() / n as f64;
        let sd = (draws.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
        assert!(mean.abs() < 5.0, "mean {mean}");
        assert!((sd - 181.4).abs() < 10.0, "sd {sd}");
        let mut abs: Vec<f64> = draws.iter().map(|x| x.abs()).collect();
        abs.sort_by(f64::total_cmp);
        let median = abs[abs.len() / 2];
        assert!((median - 109.9).abs() < 6.0, "median |x| {median}");
    }

    #[test]
    fn clipped_draws_stay_within_the_clip_and_keep_the_small_ones() {
        let wild = Noise::new(500.0, 9);
        let clipped = Noise {
            clip_cp: 150,
            ..wild
        };
        let keys = (0..5_000u64).map(|k| k.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut beyond = 0;
        for key in keys {
            let (w, c) = (wild.draw_cp(key), clipped.draw_cp(key));
            assert!(c.abs() <= 150, "{c}");
            if w.abs() <= 150 {
                assert_eq!(w, c);
            } else {
                beyond += 1;
                assert_eq!(c, 150 * w.signum());
            }
        }
        // Scale 500: |draw| > 150 about 85% of the time (2 / (1 + e^0.3)).
        assert!((4_000..4_500).contains(&beyond), "{beyond}");
    }
}
