//! Aimed errors: the bottom's moves chosen by how much they lose, as people lose it, instead of
//! by a search drowned in noise. At one node and hundreds of centipawns of leaf noise the
//! bottom levels play nearly at random among the moves, and the humane model's second look
//! catches only what it sees within its plies: the rest are moves that lose to something
//! deeper, which no miss chance touches, and which made levels 1–6 err 1.3–1.8 times as often
//! as people (docs/humane.md). An aimed move is chosen the way Lichess's own local bots choose
//! (lila `ui/local`: a target loss drawn from a distribution, the move closest to it played):
//!
//! - **How often a big loss** — people's published rate at the player's rating
//!   ([`super::people::human_big_losses_per_100`]), times `big_factor` (the look sees less than
//!   a judge, so some of its small losses are a judge's big ones), times the clock's factor, and
//!   in an easy position (one clearly best move) times the humane model's `easy_factor`: people
//!   err in hard positions (Anderson, Kleinberg and Mullainathan, KDD 2016).
//! - **How big** — a big loss from [`BIG_LOSS_CP`] up, exponentially rarer the larger
//!   ([`BIG_TAIL_CP`] on average beyond it: a minor piece the typical one); an ordinary move's
//!   loss below it, exponential with a mean that halves every `ordinary_halving` rating points
//!   from `ordinary_cp` at 1000: a person "loses on average tens of centipawns a move with a
//!   long tail, not a uniform spread" (issue 33).
//! - **What is never forgotten** — the Rodent protections of the humane model guard the look's
//!   best move first, as they guard it from a missed error.
//! - **Where** — moves are aimed with a chance that falls from 1 to 0 around `below_rating`
//!   (a logistic of `width`); above it the level's own search chooses, and the humane model
//!   decides what of its errors stands.
//!
//! Pure logic: the draws are the caller's (functions of the game's seed), so a game replays.

use serde::{Deserialize, Serialize};
use shakmaty::Move;

use super::people::{BIG_LOSS_CP, human_big_losses_per_100};
use super::ramp::ramp;

/// The mean size of a big loss beyond [`BIG_LOSS_CP`] (so 350 cp on average: a minor piece,
/// now and then a rook or the queen).
pub const BIG_TAIL_CP: f64 = 150.0;

/// The `[humane.aim]` table of a coefficients file. Absent: no move is aimed.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AimCoefficients {
    /// Plies of the aimed move's own look (a clean search of every move, quiescence below): how
    /// far a player of the bottom sees, which its losses are measured by.
    pub look_depth: u32,
    /// The rating where half the moves are aimed (all of them well below).
    pub below_rating: f64,
    /// The ramp's width (rating points per e-fold).
    pub width: f64,
    /// The mean loss (centipawns, by the look) of an ordinary move at rating 1000...
    pub ordinary_cp: f64,
    /// ...halving every this many rating points up (doubling down).
    pub ordinary_halving: f64,
    /// People's big-loss rate at the rating is multiplied by this.
    pub big_factor: f64,
}

impl AimCoefficients {
    /// What is wrong with these knobs, as (key, problem), or `None`.
    pub fn problem(&self) -> Option<(&'static str, &'static str)> {
        let positive = |x: f64| x.is_finite() && x > 0.0;
        if !(1..=6).contains(&self.look_depth) {
            return Some(("humane.aim.look_depth", "must be 1 to 6"));
        }
        [
            ("humane.aim.below_rating", self.below_rating.is_finite()),
            ("humane.aim.width", positive(self.width)),
            ("humane.aim.ordinary_cp", positive(self.ordinary_cp)),
            (
                "humane.aim.ordinary_halving",
                positive(self.ordinary_halving),
            ),
            (
                "humane.aim.big_factor",
                self.big_factor.is_finite() && self.big_factor >= 0.0,
            ),
        ]
        .into_iter()
        .find(|(_, ok)| !ok)
        .map(|(key, _)| {
            (
                key,
                match key {
                    "humane.aim.below_rating" => "must be a number",
                    "humane.aim.big_factor" => "must be a number of at least 0",
                    _ => "must be a positive number",
                },
            )
        })
    }

    /// The chance that a player rated `rating` aims its move.
    pub fn share(&self, rating: f64) -> f64 {
        1.0 - ramp(rating, self.below_rating, self.width)
    }

    /// The mean loss of an ordinary move at `rating`, before the cut at [`BIG_LOSS_CP`].
    pub fn ordinary_mean_cp(&self, rating: f64) -> f64 {
        self.ordinary_cp * (-(rating - 1000.0) / self.ordinary_halving).exp2()
    }

    /// The chance that the move's aim is a big loss, for a player rated `rating`, with the
    /// clock's factor `clock_factor` and, in an easy position, `easy_factor`; at most 1.
    pub fn big_chance(&self, rating: f64, clock_factor: f64, easy_factor: Option<f64>) -> f64 {
        let people = human_big_losses_per_100(rating) / 100.0;
        (self.big_factor * people * clock_factor * easy_factor.unwrap_or(1.0)).min(1.0)
    }

    /// The loss aimed at by a player rated `rating` (centipawns), a big one or an ordinary
    /// one, for the uniform draw `u` in [0, 1).
    pub fn target_loss(&self, rating: f64, big: bool, u: f64) -> f64 {
        if big {
            return BIG_LOSS_CP - BIG_TAIL_CP * (1.0 - u).ln();
        }
        // The exponential of the rating's mean, cut at the big loss (its inverse CDF).
        let mean = self.ordinary_mean_cp(rating);
        let kept = 1.0 - (-BIG_LOSS_CP / mean).exp();
        -mean * (1.0 - u * kept).ln()
    }
}

/// The move of `scored` (best first, centipawns for the mover) whose loss against the best is
/// closest to `target`; of two as close, the one that loses less. `None` without moves.
pub fn closest(scored: &[(Move, i32)], target: f64) -> Option<Move> {
    let best = f64::from(scored.first()?.1);
    let miss = |cp: i32| (best - f64::from(cp) - target).abs();
    scored
        .iter()
        .fold(None::<(Move, f64)>, |kept, &(m, cp)| match kept {
            Some((_, d)) if d <= miss(cp) => kept,
            _ => Some((m, miss(cp))),
        })
        .map(|(m, _)| m)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use shakmaty::Square;

    pub(crate) fn knobs() -> AimCoefficients {
        AimCoefficients {
            look_depth: 2,
            below_rating: 1100.0,
            width: 60.0,
            ordinary_cp: 40.0,
            ordinary_halving: 400.0,
            big_factor: 1.0,
        }
    }

    fn quiet(from: Square, to: Square) -> Move {
        Move::Normal {
            role: shakmaty::Role::Knight,
            from,
            capture: None,
            to,
            promotion: None,
        }
    }

    #[test]
    fn the_move_played_is_the_one_whose_loss_is_closest_to_the_aim() {
        let moves = [
            quiet(Square::B1, Square::C3),
            quiet(Square::B1, Square::A3),
            quiet(Square::G1, Square::F3),
            quiet(Square::G1, Square::H3),
        ];
        let scored = vec![
            (moves[0], 40),
            (moves[1], 10),
            (moves[2], -60),
            (moves[3], -400),
        ];
        assert_eq!(closest(&scored, 0.0), Some(moves[0]));
        assert_eq!(closest(&scored, 25.0), Some(moves[1]));
        assert_eq!(closest(&scored, 90.0), Some(moves[2]));
        // 15 and 15 away: the smaller loss.
        assert_eq!(closest(&scored, 15.0), Some(moves[0]));
        assert_eq!(closest(&scored, 350.0), Some(moves[3]));
        assert_eq!(closest(&scored, 5000.0), Some(moves[3]));
        assert_eq!(closest(&[], 10.0), None);
    }

    #[test]
    fn aims_are_small_and_long_tailed_and_shrink_with_the_rating() {
        let k = knobs();
        let n = 20_000;
        let draws = |rating: f64, big: bool| -> Vec<f64> {
            (0..n)
                .map(|i| k.target_loss(rating, big, (i as f64 + 0.5) / n as f64))
                .collect()
        };
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        for rating in [400.0, 1000.0, 1600.0] {
            let ordinary = draws(rating, false);
            assert!(ordinary.iter().all(|&t| (0.0..BIG_LOSS_CP).contains(&t)));
            // Long-tailed: the mean well above the median.
            let median = ordinary[n / 2];
            assert!(mean(&ordinary) > 1.1 * median, "{rating}");
        }
        let at = |r| mean(&draws(r, false));
        assert!(at(400.0) > at(1000.0) && at(1000.0) > at(1600.0));
        // Far below the cut, the mean is the knob's.
        assert!((at(2200.0) - k.ordinary_mean_cp(2200.0)).abs() < 0.5);
        assert!((k.ordinary_mean_cp(1400.0) - 20.0).abs() < 1e-9);
        let big = draws(1000.0, true);
        assert!(big.iter().all(|&t| t >= BIG_LOSS_CP));
        assert!((mean(&big) - BIG_LOSS_CP - BIG_TAIL_CP).abs() < 2.0);
    }

    #[test]
    fn big_losses_come_at_peoples_rate_fewer_in_easy_positions_more_at_the_flag() {
        let k = knobs();
        assert!((k.big_chance(800.0, 1.0, None) - 0.119).abs() < 1e-12);
        assert!((k.big_chance(1300.0, 1.0, None) - 0.088).abs() < 1e-12);
        assert!((k.big_chance(800.0, 1.0, Some(0.1)) - 0.0119).abs() < 1e-12);
        assert!((k.big_chance(800.0, 2.5, None) - 0.2975).abs() < 1e-12);
        let doubled = AimCoefficients {
            big_factor: 20.0,
            ..k
        };
        assert_eq!(doubled.big_chance(800.0, 1.0, None), 1.0);
        // Aimed well below the ramp, not above it.
        assert!(k.share(700.0) > 0.99);
        assert_eq!(k.share(1100.0), 0.5);
        assert!(k.share(1500.0) < 0.01);
    }

    #[test]
    fn a_bad_knob_is_named() {
        assert_eq!(knobs().problem(), None);
        let bad = AimCoefficients {
            ordinary_halving: 0.0,
            ..knobs()
        };
        assert_eq!(bad.problem().unwrap().0, "humane.aim.ordinary_halving");
        let bad = AimCoefficients {
            big_factor: -1.0,
            ..knobs()
        };
        assert_eq!(bad.problem().unwrap().0, "humane.aim.big_factor");
    }
}
