//! The rating estimator: maximum-likelihood performance rating of one level from its games,
//! with draws as ½, a stated prior, Glicko down-weighting of uncertain opponents and a reduced
//! share for far-off opponents.
//!
//! Model: with weight g_j = g(RD_j), E_j(R) = 1 / (1 + 10^(−g_j (R − r_j)/400)), and each game
//! counting as c_j games in the likelihood (1, less for a far-off opponent: [`FarOff`]). The
//! log-likelihood gradient is q Σ c_j g_j (s_j − E_j) and the Fisher information
//! q² Σ c_j g_j² E_j (1 − E_j), q = ln 10 / 400; with every g_j = c_j = 1 the root is
//! Σ E(R, r_j) = Σ s_j. The prior adds virtual
//! games (BayesElo's 2 virtual draws against a chosen centre, here the level's target) so that
//! all-win and all-loss samples stay finite.

use std::f64::consts::{LN_10, PI};

/// q = ln 10 / 400: the logistic scale of the Elo model in natural units.
pub const Q: f64 = LN_10 / 400.0;

/// Below this RD an opponent's rating counts as certain (g = 1): Lichess's provisional threshold.
pub const PROVISIONAL_RD: f64 = 110.0;

/// The two-sided 95% quantile of the normal distribution.
pub const Z95: f64 = 1.959_963_984_540_054;

/// A mean score (draws ½) with its 95% interval, in [0, 1].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScoreInterval {
    /// points / games.
    pub score: f64,
    pub lo: f64,
    pub hi: f64,
}

/// The project's one interval of a score or a rate: the Wilson score interval (Wilson 1927) of
/// `points` out of `games` at 95%. Every score, rate and Elo difference the project prints
/// with an interval comes from here (through [`elo_interval`] for Elo).
///
/// Unlike the normal ("Wald") interval p ± z·sqrt(p(1 − p)/n) it does not collapse to a point
/// at 0% or 100%: 0 of 4 gives [0, 49%]. `games` is the number of independent units (games,
/// or game pairs for paired openings, whose mean score is the unit's score); its variance
/// bound p(1 − p) is the largest a score in [0, 1] can have, so with draws (or pairs that
/// split) the interval is conservative — a little wider than the truth, never narrower.
/// No games: the whole range.
pub fn score_interval(points: f64, games: f64) -> ScoreInterval {
    if !(games.is_finite() && games > 0.0 && points.is_finite()) {
        return ScoreInterval {
            score: 0.5,
            lo: 0.0,
            hi: 1.0,
        };
    }
    let p = (points / games).clamp(0.0, 1.0);
    let z2 = Z95 * Z95;
    let denominator = 1.0 + z2 / games;
    let centre = (p + z2 / (2.0 * games)) / denominator;
    let half = Z95 * (p * (1.0 - p) / games + z2 / (4.0 * games * games)).sqrt() / denominator;
    // At 0% and 100% the ends are exactly 0 and 1 (rounding would leave 1e-17 inside).
    ScoreInterval {
        score: p,
        lo: if p == 0.0 {
            0.0
        } else {
            (centre - half).max(0.0)
        },
        hi: if p == 1.0 {
            1.0
        } else {
            (centre + half).min(1.0)
        },
    }
}

/// An Elo difference with its 95% interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EloInterval {
    /// The Elo of the score, the score held half a game from 0% and 100% so that it is finite
    /// (a perfect score's maximum-likelihood Elo is infinite).
    pub elo: f64,
    /// The Elo of the interval's ends: −∞ when the interval reaches 0%, +∞ at 100% (the
    /// games cannot rule out any difference on that side).
    pub lo: f64,
    pub hi: f64,
}

/// The Elo difference of `points` out of `games` (draws ½) and its 95% interval: the
/// [`score_interval`] mapped through the Elo curve.
pub fn elo_interval(points: f64, games: f64) -> EloInterval {
    let s = score_interval(points, games);
    let half_game = 0.5 / games.max(1.0);
    EloInterval {
        elo: elo_of_score(s.score.clamp(half_game, 1.0 - half_game)),
        lo: elo_of_score(s.lo),
        hi: elo_of_score(s.hi),
    }
}

/// The Elo difference whose expected score is `s`: −∞ at 0, +∞ at 1.
pub fn elo_of_score(s: f64) -> f64 {
    if s <= 0.0 {
        f64::NEG_INFINITY
    } else if s >= 1.0 {
        f64::INFINITY
    } else {
        -400.0 * (1.0 / s - 1.0).log10()
    }
}

/// A signed whole number of Elo as the reports print it: "+12", "-338", "+0", "-∞", "+∞".
pub fn signed_elo(x: f64) -> String {
    if x == f64::INFINITY {
        return "+∞".to_string();
    }
    if x == f64::NEG_INFINITY {
        return "-∞".to_string();
    }
    let r = x.round();
    if r == 0.0 {
        "+0".to_string()
    } else {
        format!("{r:+.0}")
    }
}

/// Expected score of a player rated `rating` against `opponent`.
pub fn expected(rating: f64, opponent: f64) -> f64 {
    1.0 / (1.0 + 10f64.powf((opponent - rating) / 400.0))
}

/// The Glicko factor g(RD) = 1 / sqrt(1 + 3 q² RD² / π²): how much an opponent whose rating is
/// uncertain by `rd` tells about ours (1 for a certain rating, → 0 as RD grows).
pub fn glicko_g(rd: f64) -> f64 {
    1.0 / (1.0 + 3.0 * Q * Q * rd * rd / (PI * PI)).sqrt()
}

/// One game as the estimator sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Observation {
    /// The opponent's rating.
    pub opponent: f64,
    /// The Glicko weight g(RD) of the opponent's rating, 1 when it is established.
    pub weight: f64,
    /// 1, ½ or 0 from the level's side.
    pub score: f64,
    /// How many games this one counts as in the likelihood: 1, or [`FarOff::share`] for an
    /// opponent far from the level. Unlike `weight` it does not flatten the expected-score
    /// curve: it scales the game's whole say, expected result or upset alike.
    pub counts_as: f64,
}

impl Observation {
    pub fn new(opponent: f64, score: f64) -> Observation {
        Observation {
            opponent,
            weight: 1.0,
            score,
            counts_as: 1.0,
        }
    }
}

/// How much a game against a far-off opponent counts.
///
/// Why: a game against an opponent `gap` or more Elo away from the level tells little (the
/// expected score is near 0 or 1: at 400 the information per game is a third of an even
/// game's) and rests on the least trustworthy part of the Elo model, its tails: upsets at large
/// gaps are more common than the logistic curve says (FIDE caps a rating difference at 400 for
/// the same reason), and on Lichess a far-off opponent is often a casual game or a sandbagger.
/// Such a game counts as `share` of a game, so a handful of them cannot drag a level, while
/// many still do.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FarOff {
    /// The rating gap (Elo) from which an opponent counts as far off.
    pub gap: f64,
    /// The share of a game such a game counts as, in (0, 1]; 1 turns the reduction off.
    pub share: f64,
}

impl Default for FarOff {
    fn default() -> FarOff {
        FarOff {
            gap: 400.0,
            share: 0.5,
        }
    }
}

impl FarOff {
    /// Whether an opponent rated `opponent` is far off a level rated `center`.
    pub fn is_far(&self, center: f64, opponent: f64) -> bool {
        (opponent - center).abs() >= self.gap
    }

    /// Gives the games whose opponent is far off `center` their reduced share (and the others
    /// a full one); returns how many are far off.
    pub fn weigh(&self, games: &mut [Observation], center: f64) -> usize {
        let mut far = 0;
        for g in games.iter_mut() {
            if self.is_far(center, g.opponent) {
                g.counts_as = self.share;
                far += 1;
            } else {
                g.counts_as = 1.0;
            }
        }
        far
    }
}

/// A level's estimate with far-off opponents counting less, and how many there were.
///
/// "Far off" is measured from the level's own estimate with every game at full share (the best
/// guess of its strength: a level far from its target learns most from the opponents near where
/// it really plays), or from `fallback` (the target) when that has no finite value. One pass: a
/// game is not re-judged against the reduced estimate.
pub fn estimate_far_off(
    games: &mut [Observation],
    prior: Prior,
    far_off: FarOff,
    fallback: f64,
) -> (Result<Estimate, EstimateError>, usize) {
    for g in games.iter_mut() {
        g.counts_as = 1.0;
    }
    let center = estimate(games, prior).map_or(fallback, |e| e.rating);
    let far = far_off.weigh(games, center);
    (estimate(games, prior), far)
}

/// What keeps the estimate finite when the games alone do not.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Prior {
    /// Pure maximum likelihood: all wins or all losses have no finite estimate.
    None,
    /// `count` virtual draws against an opponent rated `center` (BayesElo uses 2).
    VirtualDraws { count: u32, center: f64 },
}

impl Prior {
    pub fn describe(&self) -> String {
        match self {
            Prior::None => "none (pure maximum likelihood)".to_string(),
            Prior::VirtualDraws { count, .. } => format!(
                "{count} virtual draws against the level's target rating (BayesElo-style), \
                 included in the estimate and its standard error"
            ),
        }
    }
}

/// A level's performance rating.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    pub rating: f64,
    /// Standard error: 1 / sqrt(information), prior included.
    pub se: f64,
    pub games: usize,
    pub wins: usize,
    pub draws: usize,
    pub losses: usize,
    /// Mean score over the real games.
    pub score: f64,
    /// Mean opponent rating over the real games.
    pub mean_opponent: f64,
}

impl Estimate {
    /// The 95% interval half-width: [`Z95`] standard errors of the maximum-likelihood (or,
    /// with the prior, maximum a posteriori) estimate. The prior's virtual draws keep it
    /// finite and wide where the games alone say little (4 losses: about ±450), so it does not
    /// collapse at 0% or 100% as a normal interval of the score would.
    pub fn ci95(&self) -> f64 {
        Z95 * self.se
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum EstimateError {
    #[error("no games to estimate from")]
    NoGames,
    #[error("all {0} games have the same result and no prior was given: no finite estimate")]
    Unbounded(usize),
    #[error("a game has a non-finite rating, weight or a score outside [0, 1]")]
    BadInput,
}

/// The maximum-likelihood (or maximum a posteriori, with a prior) rating from `games`.
///
/// Solves the score equation with Newton's method safeguarded by bisection: the gradient is
/// strictly decreasing in R, so a bracket always holds the root.
pub fn estimate(games: &[Observation], prior: Prior) -> Result<Estimate, EstimateError> {
    if games.is_empty() {
        return Err(EstimateError::NoGames);
    }
    if games.iter().any(|g| {
        !(g.opponent.is_finite()
            && g.weight.is_finite()
            && g.weight > 0.0
            && g.counts_as.is_finite()
            && g.counts_as > 0.0
            && (0.0..=1.0).contains(&g.score))
    }) {
        return Err(EstimateError::BadInput);
    }
    let mut all: Vec<Observation> = games.to_vec();
    if let Prior::VirtualDraws { count, center } = prior {
        all.extend((0..count).map(|_| Observation::new(center, 0.5)));
    }
    let total: f64 = all.iter().map(|g| g.counts_as * g.weight).sum();
    let won: f64 = all.iter().map(|g| g.counts_as * g.weight * g.score).sum();
    if won <= 0.0 || won >= total {
        return Err(EstimateError::Unbounded(games.len()));
    }

    // gradient(R) = Σ c g (s − E), decreasing in R; information = q Σ c g² E (1 − E) (per Elo
    // unit).
    let eval = |r: f64| {
        let mut grad = 0.0;
        let mut info = 0.0;
        for g in &all {
            let e = 1.0 / (1.0 + 10f64.powf(-g.weight * (r - g.opponent) / 400.0));
            grad += g.counts_as * g.weight * (g.score - e);
            info += g.counts_as * g.weight * g.weight * e * (1.0 - e);
        }
        (grad, info * Q)
    };
    let min = all.iter().map(|g| g.opponent).fold(f64::INFINITY, f64::min);
    let max = all
        .iter()
        .map(|g| g.opponent)
        .fold(f64::NEG_INFINITY, f64::max);
    // Widen until the bracket holds the root (finite because 0 < won < total).
    let (mut lo, mut hi) = (min - 400.0, max + 400.0);
    while eval(lo).0 < 0.0 {
        lo -= 800.0;
    }
    while eval(hi).0 > 0.0 {
        hi += 800.0;
    }
    let mut r = all.iter().map(|g| g.opponent).sum::<f64>() / all.len() as f64;
    r = r.clamp(lo, hi);
    for _ in 0..200 {
        let (grad, slope) = eval(r);
        if grad > 0.0 {
            lo = r;
        } else {
            hi = r;
        }
        let newton = r + grad / slope;
        let next = if slope > 0.0 && newton > lo && newton < hi {
            newton
        } else {
            0.5 * (lo + hi)
        };
        if (next - r).abs() < 1e-9 || hi - lo < 1e-9 {
            r = next;
            break;
        }
        r = next;
    }
    let (_, slope) = eval(r);
    let information = Q * slope;
    let wins = games.iter().filter(|g| g.score > 0.75).count();
    let losses = games.iter().filter(|g| g.score < 0.25).count();
    let n = games.len();
    Ok(Estimate {
        rating: r,
        se: 1.0 / information.sqrt(),
        games: n,
        wins,
        draws: n - wins - losses,
        losses,
        score: games.iter().map(|g| g.score).sum::<f64>() / n as f64,
        mean_opponent: games.iter().map(|g| g.opponent).sum::<f64>() / n as f64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn games(opponent: f64, w: usize, d: usize, l: usize) -> Vec<Observation> {
        let mut v = vec![Observation::new(opponent, 1.0); w];
        v.extend(vec![Observation::new(opponent, 0.5); d]);
        v.extend(vec![Observation::new(opponent, 0.0); l]);
        v
    }

    /// The prior the tests estimate with: two virtual draws against 1500.
    const TWO_DRAWS: Prior = Prior::VirtualDraws {
        count: 2,
        center: 1500.0,
    };

    #[test]
    fn the_score_interval_is_wilsons_and_never_collapses() {
        // Newcombe (1998), Statistics in Medicine 17, 857-872, table I, method 3 (Wilson
        // score without continuity correction): 81/263 -> 0.2553-0.3662, 15/148 ->
        // 0.0624-0.1605, 0/20 -> 0.0000-0.1611, 1/29 -> 0.0061-0.1718.
        for (x, n, lo, hi) in [
            (81.0, 263.0, 0.2553, 0.3662),
            (15.0, 148.0, 0.0624, 0.1605),
            (0.0, 20.0, 0.0, 0.1611),
            (1.0, 29.0, 0.0061, 0.1718),
        ] {
            let s = score_interval(x, n);
            assert!(
                (s.lo - lo).abs() < 5e-5 && (s.hi - hi).abs() < 5e-5,
                "{x}/{n}: {s:?}"
            );
        }
        // 0 of 4: wide, and it holds the plausible values: an even match (−7 Elo at its top)
        // is not ruled out by four games, and no difference below is either.
        let zero = elo_interval(0.0, 4.0);
        assert_eq!(zero.lo, f64::NEG_INFINITY);
        assert!(zero.hi > -50.0 && zero.hi < 0.0, "{zero:?}");
        assert!(zero.elo > zero.lo && zero.elo < zero.hi, "{zero:?}");
        let all = elo_interval(4.0, 4.0);
        assert_eq!(all.hi, f64::INFINITY);
        assert!((all.lo + zero.hi).abs() < 1e-9 && (all.elo + zero.elo).abs() < 1e-9);
        // 50%: symmetric around 0.
        for n in [2.0, 10.0, 101.0] {
            let e = elo_interval(n / 2.0, n);
            assert!(
                e.elo.abs() < 1e-9 && (e.lo + e.hi).abs() < 1e-9,
                "{n}: {e:?}"
            );
        }
        // More games, a narrower interval at the same score, and it holds the score.
        let mut width = f64::INFINITY;
        for n in [4.0, 16.0, 64.0, 256.0, 1024.0] {
            let s = score_interval(0.75 * n, n);
            assert!(s.lo < 0.75 && 0.75 < s.hi);
            assert!(s.hi - s.lo < width, "{n}: {s:?}");
            width = s.hi - s.lo;
        }
        // At many games it meets the normal interval.
        let s = score_interval(5000.0, 10000.0);
        assert!((s.hi - 0.5 - Z95 * (0.25f64 / 10000.0).sqrt()).abs() < 1e-4);
        assert_eq!(signed_elo(zero.lo), "-∞");
        assert_eq!(signed_elo(-0.2), "+0");
    }

    #[test]
    fn an_estimate_from_four_losses_has_a_wide_interval() {
        let e = estimate(&games(1500.0, 0, 0, 4), TWO_DRAWS).unwrap();
        assert!(e.ci95() > 300.0, "{e:?}");
        assert!(e.rating < 1500.0 && e.rating + e.ci95() > 1400.0, "{e:?}");
    }

    #[test]
    fn glicko_g_is_one_for_certain_and_shrinks_with_rd() {
        assert!((glicko_g(0.0) - 1.0).abs() < 1e-12);
        assert!(glicko_g(110.0) < 1.0 && glicko_g(350.0) < glicko_g(110.0));
        // Glickman's table: g(RD = 30) ≈ 0.9955, g(350) ≈ 0.6690 on the 400/ln10 scale.
        assert!((glicko_g(30.0) - 0.9955).abs() < 1e-3);
        assert!((glicko_g(350.0) - 0.6690).abs() < 1e-3);
    }

    #[test]
    fn all_losses_with_prior_is_finite_and_below() {
        let e = estimate(&games(1500.0, 0, 0, 20), TWO_DRAWS).unwrap();
        assert!(e.rating < 1500.0 && e.rating > 500.0, "{e:?}");
        assert_eq!((e.wins, e.draws, e.losses), (0, 0, 20));
    }

    #[test]
    fn a_far_off_game_moves_the_estimate_less_than_a_near_one() {
        // 20 draws against 1500; then one loss, against an opponent 50 below or 450 below.
        let prior = TWO_DRAWS;
        let base = games(1500.0, 0, 20, 0);
        let shift = |opponent: f64, far_off: FarOff| {
            let mut g = base.clone();
            g.push(Observation::new(opponent, 0.0));
            let (e, far) = estimate_far_off(&mut g, prior, far_off, 1500.0);
            (1500.0 - e.unwrap().rating, far)
        };
        let (near, near_far) = shift(1450.0, FarOff::default());
        let (far, far_far) = shift(1050.0, FarOff::default());
        assert_eq!((near_far, far_far), (0, 1));
        assert!(near > 0.0 && far > 0.0, "a loss lowers the estimate");
        assert!(
            far < near,
            "far-off loss moved {far:.1}, near loss {near:.1}"
        );
        // Without the reduction the upset against the far-off opponent would move it more:
        // the reduction, not the Elo curve, is what makes the difference.
        let off = FarOff {
            gap: 400.0,
            share: 1.0,
        };
        let (far_full, _) = shift(1050.0, off);
        assert!(far_full > near, "{far_full:.1} vs {near:.1}");
        // A reduced game counts as exactly its share: two half-games are one whole game.
        let mut halves = base.clone();
        halves.extend(
            [Observation {
                counts_as: 0.5,
                ..Observation::new(1050.0, 0.0)
            }; 2],
        );
        let mut whole = base.clone();
        whole.push(Observation::new(1050.0, 0.0));
        let (h, w) = (
            estimate(&halves, prior).unwrap(),
            estimate(&whole, prior).unwrap(),
        );
        assert!((h.rating - w.rating).abs() < 1e-6 && (h.se - w.se).abs() < 1e-6);
    }

    #[test]
    fn bad_inputs_are_refused() {
        assert_eq!(estimate(&[], Prior::None), Err(EstimateError::NoGames));
        assert_eq!(
            estimate(&[Observation::new(f64::NAN, 1.0)], Prior::None),
            Err(EstimateError::BadInput)
        );
        assert_eq!(
            estimate(&games(1000.0, 3, 0, 0), Prior::None),
            Err(EstimateError::Unbounded(3))
        );
    }
}
