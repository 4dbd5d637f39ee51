//! What a match measured: scores and Elo differences with 95% intervals per pairing, every
//! player's rating by maximum likelihood (on the scale of the anchors of known rating, or
//! relative to the first player without anchors), and for our levels the monotonicity and
//! evenness of the ladder (gaps between adjacent levels).
//!
//! The joint fit is the arena's own: a logistic (Elo) model over all games (levels against
//! each other too) fitted by Newton's method, anchors held fixed, plus one virtual draw per
//! pairing so a 100% score stays finite. Beside it, each level's performance against the
//! anchors alone comes from the calibration's estimator (`crate::rating`), the number
//! `ladder calibrate` would compute from the same games.

use std::fmt::Write;

/// One finished game as the report sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scored {
    pub white: usize,
    pub black: usize,
    /// 1, ½ or 0.
    pub white_score: f64,
    /// Lost by a malfunction: counted in the table, left out of the rating fit.
    pub fault: bool,
}

/// A score with its Elo equivalent and 95% interval ([`crate::rating::elo_interval`]).
pub type EloDiff = crate::rating::EloInterval;

/// One pairing from the point of view of its first player `a`.
#[derive(Clone, Debug, PartialEq)]
pub struct PairingStats {
    pub a: usize,
    pub b: usize,
    pub wins: usize,
    pub draws: usize,
    pub losses: usize,
    pub faults: usize,
    pub diff: EloDiff,
}

impl PairingStats {
    pub fn games(&self) -> usize {
        self.wins + self.draws + self.losses
    }
    pub fn score(&self) -> f64 {
        (self.wins as f64 + 0.5 * self.draws as f64) / self.games().max(1) as f64
    }
}

/// A rating estimate with its 95% interval half-width.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rating {
    pub rating: f64,
    pub ci95: f64,
    /// Held at a known value (an anchor, or the reference player).
    pub fixed: bool,
}

/// Elo difference and 95% interval from individual game scores: the project's one interval,
/// [`crate::rating::elo_interval`] (Wilson's score interval mapped through the Elo curve), so a
/// score of 0% or 100% still gets an interval of honest width (0 of 4: [-∞, -7]).
pub fn elo_diff(scores: &[f64]) -> EloDiff {
    crate::rating::elo_interval(scores.iter().sum(), scores.len() as f64)
}

/// A signed whole number of Elo, never "-0"; ±∞ for an interval's open end.
fn signed(x: f64) -> String {
    crate::rating::signed_elo(x)
}

/// Per-pairing statistics, pairings in order of first appearance, `a` the lower index.
pub fn pairing_stats(games: &[Scored]) -> Vec<PairingStats> {
    let mut order: Vec<(usize, usize)> = Vec::new();
    let mut scores: Vec<Vec<f64>> = Vec::new();
    let mut faults: Vec<usize> = Vec::new();
    for g in games {
        let key = (g.white.min(g.black), g.white.max(g.black));
        let i = order.iter().position(|k| *k == key).unwrap_or_else(|| {
            order.push(key);
            scores.push(Vec::new());
            faults.push(0);
            order.len() - 1
        });
        let a_score = if g.white == key.0 {
            g.white_score
        } else {
            1.0 - g.white_score
        };
        scores[i].push(a_score);
        faults[i] += usize::from(g.fault);
    }
    let mut stats: Vec<PairingStats> = order
        .into_iter()
        .zip(scores)
        .zip(faults)
        .map(|(((a, b), s), faults)| PairingStats {
            a,
            b,
            wins: s.iter().filter(|&&x| x == 1.0).count(),
            draws: s.iter().filter(|&&x| x == 0.5).count(),
            losses: s.iter().filter(|&&x| x == 0.0).count(),
            faults,
            diff: elo_diff(&s),
        })
        .collect();
    stats.sort_by_key(|p| (p.a, p.b));
    stats
}

const K: f64 = std::f64::consts::LN_10 / 400.0;

fn expected(r: f64, opponent: f64) -> f64 {
    1.0 / (1.0 + 10f64.powf((opponent - r) / 400.0))
}

/// Ratings of all players by maximum likelihood. Players with `known` ratings are held fixed;
/// without any, player 0 is held at 0 (relative ratings). Players not connected by games to a
/// fixed one get `None`. Faulted games are left out.
pub fn estimate_ratings(known: &[Option<f64>], games: &[Scored]) -> Vec<Option<Rating>> {
    let n = known.len();
    let mut fixed: Vec<Option<f64>> = known.to_vec();
    if fixed.iter().all(Option::is_none) && n > 0 {
        fixed[0] = Some(0.0);
    }
    let PairTotals { played, points, .. } = PairTotals::of(n, games);
    let reached = reached_from(&played, fixed.iter().map(Option::is_some).collect());
    let start = {
        let anchors: Vec<f64> = fixed.iter().flatten().copied().collect();
        anchors.iter().sum::<f64>() / anchors.len().max(1) as f64
    };
    let mut r: Vec<f64> = fixed.iter().map(|f| f.unwrap_or(start)).collect();
    for _ in 0..500 {
        let mut biggest = 0.0f64;
        for i in (0..n).filter(|&i| fixed[i].is_none() && reached[i]) {
            let (mut grad, mut hess) = (0.0, 0.0);
            for j in (0..n).filter(|&j| played[i][j] > 0.0 && reached[j]) {
                let e = expected(r[i], r[j]);
                grad += K * (points[i][j] - played[i][j] * e);
                hess += K * K * played[i][j] * e * (1.0 - e);
            }
            if hess > 0.0 {
                // Damped so one step never jumps past the range of plausible ratings.
                let step = (grad / hess).clamp(-400.0, 400.0);
                r[i] += step;
                biggest = biggest.max(step.abs());
            }
        }
        if biggest < 1e-3 {
            break;
        }
    }
    (0..n)
        .map(|i| {
            if !reached[i] {
                return None;
            }
            if fixed[i].is_some() {
                return Some(Rating {
                    rating: r[i],
                    ci95: 0.0,
                    fixed: true,
                });
            }
            let info: f64 = (0..n)
                .filter(|&j| played[i][j] > 0.0 && reached[j])
                .map(|j| {
                    let e = expected(r[i], r[j]);
                    K * K * played[i][j] * e * (1.0 - e)
                })
                .sum();
            Some(Rating {
                rating: r[i],
                ci95: crate::rating::Z95 / info.sqrt(),
                fixed: false,
            })
        })
        .collect()
}

/// A joint maximum-likelihood fit of every player from the games alone: ratings relative to
/// player 0 (held at 0) with their covariance, from which any difference's error follows.
#[derive(Clone, Debug, PartialEq)]
pub struct JointFit {
    pub ratings: Vec<f64>,
    /// Covariance of the ratings (row and column 0 are zero: the reference).
    pub covariance: Vec<Vec<f64>>,
    /// Games and points per player (faults left out, virtual draws not counted).
    pub games: Vec<u64>,
    pub points: Vec<f64>,
}

/// Fits all `n` players jointly (the Elo model, draws as half points, one virtual draw per
/// pairing as in [`estimate_ratings`] so a clean sweep stays finite), by Newton's method on
/// the full information matrix, whose inverse is the covariance. `None` when the games do not
/// connect every player.
pub fn joint_fit(n: usize, games: &[Scored]) -> Option<JointFit> {
    if n == 0 {
        return None;
    }
    let totals = PairTotals::of(n, games);
    let mut start = vec![false; n];
    start[0] = true;
    if reached_from(&totals.played, start).iter().any(|r| !r) {
        return None;
    }
    let r = totals.joint_ratings()?;
    let inverse = invert(totals.information(&r))?;
    let mut covariance = vec![vec![0.0; n]; n];
    for i in 0..n - 1 {
        for j in 0..n - 1 {
            covariance[i + 1][j + 1] = inverse[i][j];
        }
    }
    Some(JointFit {
        ratings: r,
        covariance,
        games: totals.games,
        points: totals.player_points,
    })
}

/// What the games say about every pair of `n` players, the data of both fits: games and points
/// of i against j, plus one virtual draw per pairing that met (so a clean sweep stays finite);
/// and each player's own games and points (no virtual draws). Faulted games, and games of a
/// player against itself or out of range, are left out.
struct PairTotals {
    played: Vec<Vec<f64>>,
    points: Vec<Vec<f64>>,
    games: Vec<u64>,
    player_points: Vec<f64>,
}

impl PairTotals {
    fn of(n: usize, games: &[Scored]) -> PairTotals {
        let mut t = PairTotals {
            played: vec![vec![0.0f64; n]; n],
            points: vec![vec![0.0f64; n]; n],
            games: vec![0u64; n],
            player_points: vec![0.0f64; n],
        };
        for g in games.iter().filter(|g| !g.fault) {
            let (w, b) = (g.white, g.black);
            if w == b || w >= n || b >= n {
                continue;
            }
            t.played[w][b] += 1.0;
            t.played[b][w] += 1.0;
            t.points[w][b] += g.white_score;
            t.points[b][w] += 1.0 - g.white_score;
            t.games[w] += 1;
            t.games[b] += 1;
            t.player_points[w] += g.white_score;
            t.player_points[b] += 1.0 - g.white_score;
        }
        for i in 0..n {
            for j in 0..n {
                if t.played[i][j] > 0.0 {
                    t.played[i][j] += 1.0;
                    t.points[i][j] += 0.5;
                }
            }
        }
        t
    }

    /// The information matrix of the free ratings (players 1..n) at ratings `r`.
    fn information(&self, r: &[f64]) -> Vec<Vec<f64>> {
        let n = self.played.len();
        let mut info = vec![vec![0.0; n - 1]; n - 1];
        for i in 1..n {
            for j in 0..n {
                if self.played[i][j] > 0.0 {
                    let e = expected(r[i], r[j]);
                    let w = K * K * self.played[i][j] * e * (1.0 - e);
                    info[i - 1][i - 1] += w;
                    if j > 0 {
                        info[i - 1][j - 1] -= w;
                    }
                }
            }
        }
        info
    }

    /// The maximum-likelihood ratings with player 0 held at 0, by Newton's method on the full
    /// information matrix; `None` when that matrix is singular.
    fn joint_ratings(&self) -> Option<Vec<f64>> {
        let n = self.played.len();
        let (played, points) = (&self.played, &self.points);
        let mut r = vec![0.0f64; n];
        for _ in 0..200 {
            let grad: Vec<f64> = (1..n)
                .map(|i| {
                    (0..n)
                        .filter(|&j| played[i][j] > 0.0)
                        .map(|j| K * (points[i][j] - played[i][j] * expected(r[i], r[j])))
                        .sum()
                })
                .collect();
            let inverse = invert(self.information(&r))?;
            let mut biggest = 0.0f64;
            for i in 0..n - 1 {
                // Damped so one step never jumps past the range of plausible ratings.
                let step = (0..n - 1)
                    .map(|j| inverse[i][j] * grad[j])
                    .sum::<f64>()
                    .clamp(-400.0, 400.0);
                r[i + 1] += step;
                biggest = biggest.max(step.abs());
            }
            if biggest < 1e-4 {
                break;
            }
        }
        Some(r)
    }
}

/// Which players the games connect to those `reached` already (`played[i][j] > 0`: i met j).
fn reached_from(played: &[Vec<f64>], mut reached: Vec<bool>) -> Vec<bool> {
    let mut stack: Vec<usize> = (0..reached.len()).filter(|&i| reached[i]).collect();
    while let Some(i) = stack.pop() {
        for j in 0..reached.len() {
            if played[i][j] > 0.0 && !reached[j] {
                reached[j] = true;
                stack.push(j);
            }
        }
    }
    reached
}

/// The inverse of a symmetric positive-definite matrix (Gauss-Jordan with partial pivoting);
/// `None` when it is singular.
fn invert(mut a: Vec<Vec<f64>>) -> Option<Vec<Vec<f64>>> {
    let m = a.len();
    let mut inv: Vec<Vec<f64>> = (0..m)
        .map(|i| (0..m).map(|j| f64::from(u8::from(i == j))).collect())
        .collect();
    for col in 0..m {
        let pivot = (col..m).max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))?;
        if a[pivot][col].abs() < 1e-15 {
            return None;
        }
        a.swap(col, pivot);
        inv.swap(col, pivot);
        let d = a[col][col];
        for j in 0..m {
            a[col][j] /= d;
            inv[col][j] /= d;
        }
        for row in 0..m {
            if row != col {
                let f = a[row][col];
                if f != 0.0 {
                    for j in 0..m {
                        a[row][j] -= f * a[col][j];
                        inv[row][j] -= f * inv[col][j];
                    }
                }
            }
        }
    }
    Some(inv)
}

/// Player `i`'s performance rating from its games against anchors of known rating (faults
/// left out), by the calibration's estimator with 2 virtual draws against the mean anchor
/// faced. `None` for anchors themselves and players who met none.
pub fn anchor_performance(
    i: usize,
    known: &[Option<f64>],
    games: &[Scored],
) -> Option<crate::rating::Estimate> {
    use crate::rating::{Observation, Prior, estimate};
    if known.get(i).copied().flatten().is_some() {
        return None;
    }
    let observations: Vec<Observation> = games
        .iter()
        .filter(|g| !g.fault)
        .filter_map(|g| {
            let (opponent, score) = if g.white == i {
                (g.black, g.white_score)
            } else if g.black == i {
                (g.white, 1.0 - g.white_score)
            } else {
                return None;
            };
            Some(Observation::new(
                known.get(opponent).copied().flatten()?,
                score,
            ))
        })
        .collect();
    if observations.is_empty() {
        return None;
    }
    let center = observations.iter().map(|o| o.opponent).sum::<f64>() / observations.len() as f64;
    estimate(&observations, Prior::VirtualDraws { count: 2, center }).ok()
}

/// The shape of the ladder: our levels in order with their ratings and adjacent gaps.
#[derive(Clone, Debug, PartialEq)]
pub struct LadderShape {
    /// (level, rating) in level order.
    pub levels: Vec<(f64, f64)>,
    pub gaps: Vec<f64>,
    pub strictly_increasing: bool,
    pub mean_gap: f64,
    /// Largest |gap - mean| / mean.
    pub max_relative_deviation: f64,
}

impl LadderShape {
    /// `levels`: (level number, rating) for every rated level; `None` with fewer than two.
    pub fn new(mut levels: Vec<(f64, f64)>) -> Option<LadderShape> {
        if levels.len() < 2 {
            return None;
        }
        levels.sort_by(|a, b| a.0.total_cmp(&b.0));
        let gaps: Vec<f64> = levels.windows(2).map(|w| w[1].1 - w[0].1).collect();
        let mean_gap = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let max_relative_deviation = gaps
            .iter()
            .map(|g| ((g - mean_gap) / mean_gap).abs())
            .fold(0.0, f64::max);
        Some(LadderShape {
            strictly_increasing: gaps.iter().all(|&g| g > 0.0),
            levels,
            gaps,
            mean_gap,
            max_relative_deviation,
        })
    }

    /// The goal: strictly increasing, every adjacent gap within ±20% of the mean gap.
    pub fn meets_goal(&self) -> bool {
        self.strictly_increasing && self.max_relative_deviation <= 0.20
    }
}

/// The pairings table: W/D/L, score and Elo difference with its interval per pairing.
pub fn render_pairings(names: &[String], games: &[Scored]) -> String {
    let mut out = String::new();
    let pairings = pairing_stats(games);
    let _ = writeln!(out, "## Pairings ({} games)\n", games.len());
    let _ = writeln!(
        out,
        "| player | opponent | games | +  | =  | -  | faults | score | Elo diff | 95% interval |"
    );
    let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|---:|---|");
    for p in &pairings {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {:.1}% | {} | [{}, {}] |",
            names[p.a],
            names[p.b],
            p.games(),
            p.wins,
            p.draws,
            p.losses,
            p.faults,
            100.0 * p.score(),
            signed(p.diff.elo),
            signed(p.diff.lo),
            signed(p.diff.hi)
        );
    }
    out
}

/// The whole report as text (Markdown tables).
pub fn render(
    names: &[String],
    levels: &[Option<f64>],
    known: &[Option<f64>],
    games: &[Scored],
) -> String {
    let mut out = render_pairings(names, games);
    let ratings = estimate_ratings(known, games);
    let anchored = known.iter().any(Option::is_some);
    let _ = writeln!(
        out,
        "\n## Ratings ({})\n",
        if anchored {
            "on the anchors' scale; anchors fixed"
        } else {
            "relative to the first player"
        }
    );
    let _ = writeln!(
        out,
        "| player | rating | 95% interval | performance vs anchors (calibration estimator) |"
    );
    let _ = writeln!(out, "|---|---:|---|---|");
    for (i, r) in ratings.iter().enumerate() {
        let performance = anchor_performance(i, known, games).map_or("-".to_string(), |e| {
            format!("{:.0} ±{:.0} ({} games)", e.rating, e.ci95(), e.games)
        });
        let _ = match r {
            Some(r) if r.fixed => writeln!(out, "| {} | {:.0} | fixed | - |", names[i], r.rating),
            Some(r) => writeln!(
                out,
                "| {} | {:.0} | ±{:.0} | {performance} |",
                names[i], r.rating, r.ci95
            ),
            None => writeln!(
                out,
                "| {} | - | not connected to a rated player | {performance} |",
                names[i]
            ),
        };
    }
    let rated_levels: Vec<(f64, f64)> = levels
        .iter()
        .zip(&ratings)
        .filter_map(|(l, r)| Some(((*l)?, r.as_ref()?.rating)))
        .collect();
    if let Some(shape) = LadderShape::new(rated_levels) {
        let _ = writeln!(out, "\n## Ladder\n");
        for (w, gap) in shape.levels.windows(2).zip(&shape.gaps) {
            let _ = writeln!(
                out,
                "- level {} -> {}: {} Elo",
                w[0].0,
                w[1].0,
                signed(*gap)
            );
        }
        let _ = writeln!(
            out,
            "\nstrictly increasing: {}; mean gap {:.0} Elo; largest deviation from the mean \
             {:.0}% (goal: increasing, within ±20%: {})",
            if shape.strictly_increasing {
                "yes"
            } else {
                "NO"
            },
            shape.mean_gap,
            100.0 * shape.max_relative_deviation,
            if shape.meets_goal() { "met" } else { "not met" }
        );
    }
    out
}

/// Move quality per player: moves judged, average centipawn loss, the shares of inaccuracies,
/// mistakes and blunders (Lichess's thresholds), and the moves losing 200 cp or more per 100
/// beside how often people at the player's rating (`ratings`, when known) do that. `how` says
/// who judged.
pub fn render_quality(
    names: &[String],
    ratings: &[Option<f64>],
    quality: &[super::judge::Quality],
    how: &str,
) -> String {
    use crate::engine::people::{BIG_LOSS_CP, human_big_losses_per_100};
    let mut out = format!("## Move quality ({how})\n\n");
    if quality.iter().all(|q| q.moves == 0) {
        return out;
    }
    let _ = writeln!(
        out,
        "| player | rating | moves judged | avg centipawn loss | inaccuracies | mistakes | blunders | lose ≥{BIG_LOSS_CP:.0} cp per 100 moves | people at that rating |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for ((name, q), rating) in names.iter().zip(quality).zip(ratings) {
        if q.moves == 0 {
            continue;
        }
        let (rating, people) = match rating {
            Some(r) => (
                format!("{r:.0}"),
                format!("{:.1}", human_big_losses_per_100(*r)),
            ),
            None => ("-".to_string(), "-".to_string()),
        };
        let _ = writeln!(
            out,
            "| {name} | {rating} | {} | {:.0} | {:.1}% | {:.1}% | {:.1}% | {:.1} | {people} |",
            q.moves,
            q.acpl(),
            100.0 * q.rate(q.inaccuracies),
            100.0 * q.rate(q.mistakes),
            100.0 * q.rate(q.blunders),
            100.0 * q.rate(q.big_losses),
        );
    }
    let _ = writeln!(
        out,
        "\nPeople: moves losing {BIG_LOSS_CP:.0} cp or more per 100 in Lichess games of all speeds (11.9 under 1000, 8.8 at 1200–1400, 7.0 at 1600–1800, 5.9 at 2000–2200, 5.1 above 2200; interpolated between the bands' middles). A level's rating is its coefficients' one, an anchor's its fitted one."
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn games(a: usize, b: usize, a_points: f64, n: usize) -> Vec<Scored> {
        // n games, colours alternating, a scoring a_points in total (wins then draws).
        let mut out = Vec::new();
        let mut left = a_points;
        for k in 0..n {
            let s = if left >= 1.0 {
                1.0
            } else if left >= 0.5 {
                0.5
            } else {
                0.0
            };
            left -= s;
            let (white, black, white_score) = if k % 2 == 0 {
                (a, b, s)
            } else {
                (b, a, 1.0 - s)
            };
            out.push(Scored {
                white,
                black,
                white_score,
                fault: false,
            });
        }
        out
    }

    #[test]
    fn elo_of_known_scores() {
        assert!((crate::rating::elo_of_score(0.5)).abs() < 1e-9);
        assert!((crate::rating::elo_of_score(0.75) - 190.85).abs() < 0.1);
        let d = elo_diff(&[1.0, 1.0, 0.0, 0.5]);
        assert!(d.lo < d.elo && d.elo < d.hi);
        // A clean sweep still has an interval: it reaches down to a finite gap, and up
        // without bound (no number of wins rules out a larger one).
        let sweep = elo_diff(&[1.0; 10]);
        assert!(sweep.lo < sweep.elo && sweep.lo > 100.0, "{sweep:?}");
        assert_eq!(sweep.hi, f64::INFINITY);
        assert_eq!(signed(-0.2), "+0");
    }

    #[test]
    fn a_pairing_lost_four_times_reports_a_wide_interval() {
        // ladder arena --level 1,2 --games-per-pairing 4: 0/4 once reported [-338, -245].
        let g = games(0, 1, 0.0, 4);
        let table = render_pairings(&["level-1".into(), "level-2".into()], &g);
        let row = table.lines().find(|l| l.starts_with("| level-1")).unwrap();
        assert!(row.ends_with("| [-∞, -7] |"), "{row}");
        // The ratings table's ± for the same games is wide too.
        let r = estimate_ratings(&[None, None], &g);
        assert!(r[1].unwrap().ci95 > 300.0, "{r:?}");
    }

    #[test]
    fn anchored_fit_recovers_a_rating_between_anchors() {
        // Player 0 scores 75% against an anchor at 1000 and 25% against one at 1400: ~1200.
        let mut g = games(0, 1, 30.0, 40);
        g.extend(games(0, 2, 10.0, 40));
        let r = estimate_ratings(&[None, Some(1000.0), Some(1400.0)], &g);
        let p = r[0].unwrap();
        assert!((p.rating - 1200.0).abs() < 5.0, "{p:?}");
        assert!(p.ci95 > 30.0 && p.ci95 < 150.0, "{p:?}");
        assert!(r[1].unwrap().fixed);
        // The calibration's estimator agrees on the same games (its prior pulls a little).
        let e = anchor_performance(0, &[None, Some(1000.0), Some(1400.0)], &g).unwrap();
        assert!((e.rating - 1200.0).abs() < 5.0, "{e:?}");
        assert_eq!(e.games, 80);
    }

    #[test]
    fn perfect_scores_stay_finite_and_unconnected_players_are_none() {
        let g = games(0, 1, 10.0, 10);
        let r = estimate_ratings(&[None, Some(1500.0), None], &g);
        let p = r[0].unwrap();
        assert!(p.rating > 1800.0 && p.rating < 2500.0, "{p:?}");
        assert!(r[2].is_none());
    }

    #[test]
    fn joint_fit_recovers_a_chain_and_its_errors_grow_along_it() {
        // 0 -> 1 -> 2, each scoring 75% against the one below: +191 per step.
        let mut g = games(1, 0, 30.0, 40);
        g.extend(games(2, 1, 30.0, 40));
        let fit = joint_fit(3, &g).unwrap();
        // The virtual draw pulls each step a little toward 0 (30.5/41 = 74.4%: +185).
        assert!((fit.ratings[1] - 185.0).abs() < 3.0, "{fit:?}");
        assert!((fit.ratings[2] - 370.0).abs() < 6.0, "{fit:?}");
        let se = |i: usize| fit.covariance[i][i].sqrt();
        assert!(se(1) > 40.0 && se(1) < 70.0, "{fit:?}");
        assert!(se(2) > se(1) * 1.3, "{fit:?}");
        assert_eq!(fit.games, [40, 80, 40]);
        // The coordinate-wise estimator with player 0 fixed agrees on the ratings.
        let r = estimate_ratings(&[Some(0.0), None, None], &g);
        assert!((r[2].unwrap().rating - fit.ratings[2]).abs() < 0.5);
        // Unconnected players: no fit.
        assert!(joint_fit(4, &g).is_none());
    }

    #[test]
    fn move_quality_puts_each_players_big_losses_beside_peoples_at_its_rating() {
        use crate::arena::judge::Quality;
        let mut level = Quality::default();
        for k in 0..100 {
            // 9 of 100 moves lose 250 cp, the rest nothing.
            level.add(0.0, if k < 9 { -250.0 } else { 0.0 });
        }
        let mut engine = Quality::default();
        engine.add(0.0, -10.0);
        let names = vec![
            "level-5".to_string(),
            "engine".to_string(),
            "idle".to_string(),
        ];
        let text = render_quality(
            &names,
            &[Some(1300.0), None, Some(2000.0)],
            &[level, engine, Quality::default()],
            "test",
        );
        let row = |name: &str| {
            text.lines()
                .find(|l| l.starts_with(&format!("| {name} |")))
                .map(|l| l.split('|').map(str::trim).collect::<Vec<_>>())
        };
        let level_row = row("level-5").expect("the level's row");
        assert_eq!(level_row[2], "1300");
        assert_eq!(level_row[8], "9.0", "{text}");
        assert_eq!(level_row[9], "8.8", "{text}");
        let engine_row = row("engine").expect("the engine's row");
        assert_eq!(
            (engine_row[2], engine_row[8], engine_row[9]),
            ("-", "0.0", "-")
        );
        assert!(
            row("idle").is_none(),
            "a player without judged moves has no row"
        );
    }

    #[test]
    fn ladder_shape_checks_monotonicity_and_evenness() {
        let even = LadderShape::new(vec![(2.0, 1200.0), (1.0, 1000.0), (3.0, 1390.0)]).unwrap();
        assert!(even.strictly_increasing && even.meets_goal());
        assert_eq!(even.gaps, [200.0, 190.0]);
        let uneven = LadderShape::new(vec![(1.0, 1000.0), (2.0, 1300.0), (3.0, 1250.0)]).unwrap();
        assert!(!uneven.strictly_increasing && !uneven.meets_goal());
    }

    #[test]
    fn pairing_stats_count_from_the_lower_index() {
        let mut g = games(1, 0, 3.0, 4);
        g[0].fault = true;
        let p = &pairing_stats(&g)[0];
        assert_eq!((p.a, p.b), (0, 1));
        assert_eq!((p.wins, p.draws, p.losses, p.faults), (1, 0, 3, 1));
    }
}
