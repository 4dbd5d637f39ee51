//! What counts as a big loss, and how often people make one: the threshold and the published
//! figures that the judge's move-quality table and the human-likeness table both read beside a
//! level's own rate, and that the aimed errors ([`super::aim`]) draw their big losses by.

/// Evaluations are capped here (and a mate counts as this), as lila does.
pub const CP_CEILING: f64 = 1000.0;

/// A move that loses this many capped centipawns or more is counted as a big loss: the
/// threshold of the published figures for people.
pub const BIG_LOSS_CP: f64 = 200.0;

/// How often people lose [`BIG_LOSS_CP`] or more in one move, per 100 moves, by rating: the
/// published figures from Lichess games of all speeds (11.9 under 1000, 8.8 at 1200–1400, 7.0 at
/// 1600–1800, 5.9 at 2000–2200, 5.1 above 2200), each band read at its middle and the open ends
/// flat.
const HUMAN_BIG_LOSSES: [(f64, f64); 5] = [
    (1000.0, 11.9),
    (1300.0, 8.8),
    (1700.0, 7.0),
    (2100.0, 5.9),
    (2300.0, 5.1),
];

/// People's moves losing [`BIG_LOSS_CP`] or more per 100 moves at `rating`, interpolated
/// linearly between the published bands' middles and flat beyond the outer ones.
pub fn human_big_losses_per_100(rating: f64) -> f64 {
    super::ramp::interpolate(&HUMAN_BIG_LOSSES, rating).expect("the published figures")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn people_blunder_less_as_they_rate_higher_as_published() {
        // The published bands at their middles, the open ends flat.
        assert_eq!(human_big_losses_per_100(600.0), 11.9);
        assert_eq!(human_big_losses_per_100(1300.0), 8.8);
        assert_eq!(human_big_losses_per_100(1700.0), 7.0);
        assert_eq!(human_big_losses_per_100(2100.0), 5.9);
        assert_eq!(human_big_losses_per_100(2800.0), 5.1);
        // Halfway between 1300 and 1700: halfway between 8.8 and 7.0.
        assert!((human_big_losses_per_100(1500.0) - 7.9).abs() < 1e-9);
        // Never rising with the rating.
        let mut last = f64::INFINITY;
        for r in (0..3000).step_by(25) {
            let v = human_big_losses_per_100(r as f64);
            assert!(v <= last, "{r}: {v} > {last}");
            last = v;
        }
    }
}
