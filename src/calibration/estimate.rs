//! The rating estimator: maximum-likelihood performance rating of one level from its games,
//! with draws as ½, a stated prior and Glicko down-weighting of uncertain opponents.
//!
//! Model: with weight g_j = g(RD_j), E_j(R) = 1 / (1 + 10^(−g_j (R − r_j)/400)). The
//! log-likelihood gradient is q Σ g_j (s_j − E_j) and the Fisher information q² Σ g_j² E_j (1 − E_j),
//! q = ln 10 / 400; with every g_j = 1 the root is Σ E(R, r_j) = Σ s_j. The prior adds virtual
//! games (BayesElo's 2 virtual draws against a chosen centre, here the level's target) so that
//! all-win and all-loss samples stay finite.

use std::f64::consts::{LN_10, PI};

/// q = ln 10 / 400: the logistic scale of the Elo model in natural units.
pub const Q: f64 = LN_10 / 400.0;

/// Below this RD an opponent's rating counts as certain (g = 1): Lichess's provisional threshold.
pub const PROVISIONAL_RD: f64 = 110.0;

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
}

impl Observation {
    pub fn new(opponent: f64, score: f64) -> Observation {
        Observation {
            opponent,
            weight: 1.0,
            score,
        }
    }
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
    /// The 95% interval half-width.
    pub fn ci95(&self) -> f64 {
        1.96 * self.se
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
            && (0.0..=1.0).contains(&g.score))
    }) {
        return Err(EstimateError::BadInput);
    }
    let mut all: Vec<Observation> = games.to_vec();
    if let Prior::VirtualDraws { count, center } = prior {
        all.extend((0..count).map(|_| Observation::new(center, 0.5)));
    }
    let total: f64 = all.iter().map(|g| g.weight).sum();
    let won: f64 = all.iter().map(|g| g.weight * g.score).sum();
    if won <= 0.0 || won >= total {
        return Err(EstimateError::Unbounded(games.len()));
    }

    // gradient(R) = Σ g (s − E), decreasing in R; information = q Σ g² E (1 − E) (per Elo unit).
    let eval = |r: f64| {
        let mut grad = 0.0;
        let mut info = 0.0;
        for g in &all {
            let e = 1.0 / (1.0 + 10f64.powf(-g.weight * (r - g.opponent) / 400.0));
            grad += g.weight * (g.score - e);
            info += g.weight * g.weight * e * (1.0 - e);
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
        let e = estimate(
            &games(1500.0, 0, 0, 20),
            Prior::VirtualDraws {
                count: 2,
                center: 1500.0,
            },
        )
        .unwrap();
        assert!(e.rating < 1500.0 && e.rating > 500.0, "{e:?}");
        assert_eq!((e.wins, e.draws, e.losses), (0, 0, 20));
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
