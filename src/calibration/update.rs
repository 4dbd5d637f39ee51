//! The update rule: from each level's measured rating to the next coefficients version.
//!
//! Per level, the exponent x = L + o(L) moves toward the target by a Newton step
//! (T − R̂) / slope, where the slope is local (the secant through the neighbouring levels'
//! estimates) bounded to [0.5, 2]× the global fit's slope. The step is damped by a
//! Robbins–Monro gain 1/k with a floor, capped in Elo per cycle, skipped for levels with too few
//! games, and zero for a level already within 2·SE of its target. Each level's step comes from
//! its OWN estimate: a line alone cannot hit evenly spaced targets when rating is concave in x.
//! The new exponents are then written in the closed form of CALIBRATION.md: fit x' = p + q·L,
//! n0' = n0·b^p, b' = b^q, s0' = s0·d^p, d' = d^q, k' = k/q (the endgame scaling unchanged),
//! and keep each level's residual as its offset, so every level plays exactly at its new
//! exponent and a level left alone plays exactly as before. When nothing moves, the proposal
//! keeps the parametrisation and says it changes nothing ([`Proposal::changed`]).

use std::collections::BTreeMap;

use super::fit::{LineFit, weighted_line};
use super::select::plays_alike;
use crate::engine::humane::HumaneCoefficients;
use crate::levels::{BlindnessCurve, Coefficients, LevelParams, level_key};
use crate::rating::Estimate;

/// The knobs of the update rule.
#[derive(Clone, Debug, PartialEq)]
pub struct UpdateConfig {
    /// Levels with fewer games are left alone.
    pub min_games: usize,
    /// The Robbins–Monro gain never falls below this: the truth drifts in production.
    pub gain_floor: f64,
    /// The local slope is bounded to [lo, hi] × the global slope.
    pub slope_bounds: (f64, f64),
    /// Largest predicted rating change of one level in one cycle (Elo).
    pub max_step_elo: f64,
    /// A level within this many standard errors of its target stops moving.
    pub converge_sigmas: f64,
    /// Start the gain schedule again at 1 (after an engine or target change).
    pub restart_schedule: bool,
}

impl Default for UpdateConfig {
    fn default() -> Self {
        UpdateConfig {
            min_games: 30,
            gain_floor: 0.2,
            slope_bounds: (0.5, 2.0),
            max_step_elo: 600.0,
            converge_sigmas: 2.0,
            restart_schedule: false,
        }
    }
}

/// What the calibration knows about one level.
#[derive(Clone, Debug, PartialEq)]
pub struct LevelInput {
    pub level: f64,
    pub target: Option<f64>,
    pub estimate: Option<Estimate>,
}

/// What happened to a level this cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Moved,
    Converged,
    TooFewGames,
    NoTarget,
    /// No usable global slope (fewer than two levels with enough games, or a slope ≤ 0).
    Held,
    /// Too strong, but already as weak as the engine plays: below this exponent the node
    /// count, the noise and the chance of a blind move no longer change.
    AtFloor,
    /// Too weak, but already as strong as the level plays: its nodes at the cap, its noise
    /// under a centipawn, its humane model not following x (see [`at_ceiling`]).
    AtCeiling,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Moved => "moved",
            Status::Converged => "converged",
            Status::TooFewGames => "too few games",
            Status::NoTarget => "no target",
            Status::Held => "held (no slope)",
            Status::AtFloor => "at the floor (weakest possible)",
            Status::AtCeiling => "at the ceiling (strongest possible)",
        }
    }
}

/// One level's proposed change.
#[derive(Clone, Debug, PartialEq)]
pub struct LevelUpdate {
    pub level: f64,
    pub target: Option<f64>,
    pub estimate: Option<Estimate>,
    pub status: Status,
    /// The slope (Elo per unit of x) used for the step, when one was taken.
    pub local_slope: Option<f64>,
    /// The exponent, both in the current scale.
    pub exponent: Change<f64>,
    pub offset: Change<f64>,
    pub nodes: Change<u64>,
    pub noise: Change<f64>,
}

/// A level parameter's value under the current coefficients and under the proposed ones.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Change<T> {
    pub old: T,
    pub new: T,
}

impl<T> Change<T> {
    /// "old → new", each side written by `show` (the report's way of showing a change).
    pub fn arrow(&self, show: impl Fn(&T) -> String) -> String {
        format!("{} → {}", show(&self.old), show(&self.new))
    }
}

/// The proposed next coefficients and how they were reached.
#[derive(Clone, Debug, PartialEq)]
pub struct Proposal {
    pub coefficients: Coefficients,
    /// Whether the proposal changes anything: a level's parameters or a measured rating. A
    /// proposal that does not is never written as a new version.
    pub changed: bool,
    pub levels: Vec<LevelUpdate>,
    /// Rating against x over the levels with enough games, when two or more had.
    pub fit: Option<LineFit>,
    pub schedule: GainStep,
    pub rescale: Rescale,
    pub notes: Vec<String>,
}

/// This cycle's place in the gain schedule: its number k and its Robbins–Monro gain 1/k, never
/// below the floor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GainStep {
    pub cycle: u32,
    pub gain: f64,
}

impl GainStep {
    /// The step after the one `current` was made in (or the first again, when asked).
    fn after(current: &Coefficients, config: &UpdateConfig) -> GainStep {
        let cycle = if config.restart_schedule {
            1
        } else {
            current.calibration_cycle + 1
        };
        GainStep {
            cycle,
            gain: (1.0 / cycle as f64).max(config.gain_floor).min(1.0),
        }
    }
}

/// The reparametrisation of a refit: a level's exponent in the old scale is p + q · its
/// exponent in the new one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rescale {
    pub p: f64,
    pub q: f64,
}

impl Rescale {
    /// No refit: both scales are the same.
    pub const IDENTITY: Rescale = Rescale { p: 0.0, q: 1.0 };

    /// An exponent of the new scale in the old one.
    pub fn old_scale(&self, x_new: f64) -> f64 {
        self.p + self.q * x_new
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum UpdateError {
    #[error("no levels to calibrate")]
    NoLevels,
    #[error("the new coefficients are invalid: {0}")]
    Invalid(String),
}

/// Proposes the next coefficients version from the current one and the levels' estimates.
/// `ratings_source` describes the measurements for the new file.
pub fn propose(
    current: &Coefficients,
    inputs: &[LevelInput],
    config: &UpdateConfig,
    ratings_source: &str,
) -> Result<Proposal, UpdateError> {
    if inputs.is_empty() {
        return Err(UpdateError::NoLevels);
    }
    let mut inputs = inputs.to_vec();
    inputs.sort_by(|a, b| a.level.total_cmp(&b.level));
    let schedule = GainStep::after(current, config);
    let mut notes = Vec::new();

    let measured = measured_points(current, &inputs, config);
    let fit = weighted_line(
        &measured
            .iter()
            .map(|&(x, r, se)| (x, r, 1.0 / (se * se)))
            .collect::<Vec<_>>(),
    )
    .ok();
    let stepper = Stepper {
        config,
        slope: usable_slope(fit, measured.len(), config, &mut notes),
        measured: &measured,
        gain: schedule.gain,
        floor: weakest_exponent(current),
        current,
    };
    let mut steps: Vec<Step> = inputs
        .iter()
        .map(|input| stepper.step(input, exponent(current, input.level)))
        .collect();
    keep_levels_in_order(&mut steps, &mut notes);

    let mut next = current.clone();
    next.version = current.version + 1;
    next.calibration_cycle = schedule.cycle;
    // When no exponent moves, the parametrisation stays as it is: a refit would only shuffle
    // float dust between n0, b and the offsets.
    let moved_any = steps.iter().any(|s| s.x_new != s.x_old);
    let rescale = if moved_any {
        refit(current, &steps, &mut next)
    } else {
        Rescale::IDENTITY
    };
    record_ratings(&mut next, &steps, config, ratings_source);
    // Round-trip through the validator (finite numbers, ratings and offsets in range): a
    // proposal that cannot be loaded is never written.
    let next = Coefficients::parse(&next.to_toml(), "proposed coefficients")
        .map_err(|e| UpdateError::Invalid(e.to_string()))?;
    let changed = changes_anything(current, &next, &steps);
    let levels = steps
        .into_iter()
        .map(|step| step.into_update(current, &next))
        .collect();
    Ok(Proposal {
        coefficients: next,
        changed,
        levels,
        fit,
        schedule,
        rescale,
        notes,
    })
}

/// A level's exponent x = L + o(L) under `c`: the one number its strength is a function of.
fn exponent(c: &Coefficients, level: f64) -> f64 {
    level + c.offset(level)
}

/// (x, R, SE) of the levels with at least `min_games` games, in level order: the points the
/// rating curve is read from.
fn measured_points(
    current: &Coefficients,
    inputs: &[LevelInput],
    config: &UpdateConfig,
) -> Vec<(f64, f64, f64)> {
    inputs
        .iter()
        .filter_map(|i| {
            let e = i.estimate.as_ref()?;
            (e.games >= config.min_games).then(|| (exponent(current, i.level), e.rating, e.se))
        })
        .collect()
}

/// The global slope of rating in x when the fit has a positive one; otherwise None, with a note
/// saying why no level moves.
fn usable_slope(
    fit: Option<LineFit>,
    measured_levels: usize,
    config: &UpdateConfig,
    notes: &mut Vec<String>,
) -> Option<f64> {
    match fit {
        Some(f) if f.slope > 0.0 => Some(f.slope),
        Some(f) => {
            notes.push(format!(
                "the fitted slope is {:.1} Elo per level (not positive): no level moved",
                f.slope
            ));
            None
        }
        None => {
            notes.push(format!(
                "{} level(s) with at least {} games: a slope needs two, no level moved",
                measured_levels, config.min_games
            ));
            None
        }
    }
}

/// One level's step this cycle, before the levels are kept in order.
struct Step {
    input: LevelInput,
    status: Status,
    local_slope: Option<f64>,
    /// The level's exponent now and the one wanted, both in the current scale.
    x_old: f64,
    x_new: f64,
}

impl Step {
    /// The level's report line: its status and slope, its old and new parameters.
    fn into_update(self, current: &Coefficients, next: &Coefficients) -> LevelUpdate {
        let old = LevelParams::new(current, self.input.level);
        let new = LevelParams::new(next, self.input.level);
        LevelUpdate {
            level: self.input.level,
            target: self.input.target,
            estimate: self.input.estimate,
            status: self.status,
            local_slope: self.local_slope,
            exponent: Change {
                old: self.x_old,
                new: new.exponent,
            },
            offset: Change {
                old: old.offset,
                new: new.offset,
            },
            nodes: Change {
                old: old.nodes,
                new: new.nodes,
            },
            noise: Change {
                old: old.noise_cp,
                new: new.noise_cp,
            },
        }
    }
}

/// What every level's step shares: the knobs, the measured points, the global slope, this
/// cycle's gain and the exponent below which nothing gets weaker.
struct Stepper<'a> {
    config: &'a UpdateConfig,
    measured: &'a [(f64, f64, f64)],
    slope: Option<f64>,
    gain: f64,
    floor: Option<f64>,
    current: &'a Coefficients,
}

impl Stepper<'_> {
    /// The damped, capped Newton step of one level at exponent `x` toward its target.
    fn step(&self, input: &LevelInput, x: f64) -> Step {
        let config = self.config;
        let mut status;
        let mut local_slope = None;
        let mut x_new = x;
        match (&input.estimate, input.target) {
            (_, None) => status = Status::NoTarget,
            (e, Some(_)) if e.as_ref().is_none_or(|e| e.games < config.min_games) => {
                status = Status::TooFewGames
            }
            (Some(e), Some(target)) => {
                status = Status::Held;
                if let Some(global) = self.slope {
                    let local = secant(self.measured, x, e.rating, target)
                        .unwrap_or(global)
                        .clamp(
                            config.slope_bounds.0 * global,
                            config.slope_bounds.1 * global,
                        );
                    local_slope = Some(local);
                    let miss = target - e.rating;
                    if miss.abs() < config.converge_sigmas * e.se {
                        status = Status::Converged;
                    } else {
                        let elo =
                            (self.gain * miss).clamp(-config.max_step_elo, config.max_step_elo);
                        (x_new, status) = self.stop_at_floor(x, x + elo / local);
                        if x_new > x && at_ceiling(self.current, input.level) {
                            (x_new, status) = (x, Status::AtCeiling);
                        }
                    }
                }
            }
            (None, Some(_)) => unreachable!("no estimate is too few games"),
        }
        Step {
            input: input.clone(),
            status,
            local_slope,
            x_old: x,
            x_new,
        }
    }

    /// Below the floor every exponent plays alike: a level there that is still too strong
    /// cannot be weakened, and pushing its exponent on would only drag the refit of every other
    /// level with it. Returns the exponent a move from `x` toward `wanted` ends at, and its
    /// status.
    fn stop_at_floor(&self, x: f64, wanted: f64) -> (f64, Status) {
        match self.floor.filter(|&f| wanted < f) {
            Some(floor) if x <= floor + 1e-9 => (x, Status::AtFloor),
            Some(floor) => (floor, Status::Moved),
            None => (wanted, Status::Moved),
        }
    }
}

/// Levels must stay in order: where bounded slopes would make a level overtake its neighbour,
/// the crossing exponents are pooled (isotonic regression) and the next cycle's measurements
/// separate them again.
fn keep_levels_in_order(steps: &mut [Step], notes: &mut Vec<String>) {
    let wanted: Vec<f64> = steps.iter().map(|s| s.x_new).collect();
    let ordered = isotonic(&wanted);
    if ordered == wanted {
        return;
    }
    let pooled: Vec<String> = steps
        .iter()
        .zip(&ordered)
        .filter(|(s, o)| (s.x_new - **o).abs() > 1e-12)
        .map(|(s, _)| level_key(s.input.level))
        .collect();
    notes.push(format!(
        "levels {} would have crossed a neighbour; their exponents were pooled to keep the \
         levels in order",
        pooled.join(", ")
    ));
    for (s, o) in steps.iter_mut().zip(ordered) {
        s.x_new = o;
    }
}

/// Writes the new exponents into `next` in closed form: the best line x_new ≈ p + q·L becomes
/// the new (n0, b, s0, d); what the line misses stays as the level's offset. Returns the
/// rescale from the new exponents to the old.
fn refit(current: &Coefficients, steps: &[Step], next: &mut Coefficients) -> Rescale {
    let pairs: Vec<(f64, f64, f64)> = steps
        .iter()
        .map(|s| (s.input.level, s.x_new, 1.0))
        .collect();
    let (p, q) = match weighted_line(&pairs) {
        Ok(line) if line.slope > 0.0 => (line.intercept, line.slope.clamp(0.25, 4.0)),
        _ => (
            pairs.iter().map(|(l, x, _)| x - l).sum::<f64>() / pairs.len() as f64,
            1.0,
        ),
    };
    next.n0 = current.n0 * current.b.powf(p);
    next.b = current.b.powf(q);
    next.s0 = current.s0 * current.d.powf(p);
    next.d = current.d.powf(q);
    // The endgame scaling is held in engine terms: k halvings of the old scale's levels are
    // k/q of the new one's, so b'^(k/q) = b^k and a level left alone plays exactly as before
    // (its games keep counting, see select.rs).
    next.endgame_levels_per_halving = current.endgame_levels_per_halving / q;
    // The blindness curve is a function of x too: p(x_old) = p(p + q·x_new), so its
    // midpoint and width move to the new scale and every level keeps its chance.
    next.blindness = current.blindness.map(|curve| BlindnessCurve {
        mid: (curve.mid - p) / q,
        width: curve.width / q,
        ..curve
    });
    // So is the clip by x (the clip by level names levels, not exponents).
    next.noise_clip = current.noise_clip.map(|clip| clip.rescaled(p, q));
    // So is the humane model's rating: rating(x_old) = a + s·(p + q·x_new) (a model that plays
    // the levels' targets has no line to move).
    if let (Some(h), Some((a, s))) = (current.humane, current.humane_line())
        && h.rating_from.uses_line()
    {
        next.humane = Some(HumaneCoefficients {
            rating_at_x0: Some(a + s * p),
            rating_per_x: Some(s * q),
            ..h
        });
    }
    let to_offset = |level: f64, x_old_scale: f64| round9((x_old_scale - p) / q - level);
    // Offsets of levels this run does not see keep their old exponent.
    let mut offsets: BTreeMap<String, f64> = BTreeMap::new();
    for key in current.offsets.keys() {
        if let Ok(level) = key.parse::<f64>() {
            offsets.insert(key.clone(), to_offset(level, exponent(current, level)));
        }
    }
    for s in steps {
        offsets.insert(level_key(s.input.level), to_offset(s.input.level, s.x_new));
    }
    offsets.retain(|_, o| *o != 0.0);
    next.offsets = offsets;
    Rescale { p, q }
}

/// Puts the measured rating of every level with enough games into `next`'s table, and names
/// the measurements as its source when there was one.
fn record_ratings(
    next: &mut Coefficients,
    steps: &[Step],
    config: &UpdateConfig,
    ratings_source: &str,
) {
    let mut measured_levels = 0;
    for s in steps {
        if let Some(e) = s
            .input
            .estimate
            .as_ref()
            .filter(|e| e.games >= config.min_games)
        {
            next.ratings
                .insert(level_key(s.input.level), e.rating.round());
            next.rating_intervals
                .insert(level_key(s.input.level), (1.96 * e.se).round());
            measured_levels += 1;
        }
    }
    if measured_levels > 0 {
        next.ratings_source = ratings_source.to_string();
    }
}

/// Every level the files name or this run saw: does any play differently, or has a measured
/// rating changed? If not, there is nothing to write.
fn changes_anything(current: &Coefficients, next: &Coefficients, steps: &[Step]) -> bool {
    let mut compared: Vec<f64> = steps.iter().map(|s| s.input.level).collect();
    compared.extend(
        current
            .offsets
            .keys()
            .chain(current.ratings.keys())
            .filter_map(|k| k.parse::<f64>().ok()),
    );
    next.ratings != current.ratings
        || compared
            .iter()
            .any(|&level| !plays_alike(current, next, level))
}

/// The slope of rating in x between a level at (`x`, `rating`) and its `target`, read off the
/// measured levels: the target's exponent is interpolated on the piecewise-linear curve through
/// the measured (x, R) points (extrapolated along the end segment beyond them), and the slope is
/// the secant from the level to that point. For a small miss this is the local slope around the
/// level; for a large one it follows the curve's bend, which a single tangent would overshoot.
fn secant(measured: &[(f64, f64, f64)], x: f64, rating: f64, target: f64) -> Option<f64> {
    let mut points: Vec<(f64, f64)> = measured.iter().map(|m| (m.0, m.1)).collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    points.dedup_by(|a, b| (a.0 - b.0).abs() < 1e-9);
    if points.len() < 2 {
        return None;
    }
    let segment_slope = |a: (f64, f64), b: (f64, f64)| (b.1 - a.1) / (b.0 - a.0);
    // The segment whose rating range holds the target, else the end segment on its side.
    let segment = points
        .windows(2)
        .find(|w| (w[0].1.min(w[1].1)..=w[0].1.max(w[1].1)).contains(&target))
        .map(|w| (w[0], w[1]))
        .unwrap_or_else(|| {
            let first = (points[0], points[1]);
            let last = (points[points.len() - 2], points[points.len() - 1]);
            if (target - first.0.1).abs() < (target - last.1.1).abs() {
                first
            } else {
                last
            }
        });
    let s = segment_slope(segment.0, segment.1);
    if !(s.is_finite() && s > 0.0) {
        return None;
    }
    let x_target = segment.0.0 + (target - segment.0.1) / s;
    let dx = x_target - x;
    if dx.abs() < 1e-6 {
        return Some(s);
    }
    let slope = (target - rating) / dx;
    (slope.is_finite() && slope > 0.0).then_some(slope)
}

/// The exponent below which a level plays as weakly as it can: one node, the noise at its cap,
/// the chance of a blind move within 1% of its maximum, and with the humane model on, easy
/// errors missed 99 times in 100. None when some weakening grows without bound (no noise cap,
/// easy errors never missed), so that a lower exponent always plays weaker.
pub fn weakest_exponent(c: &Coefficients) -> Option<f64> {
    let cap = c.max_noise_cp?;
    // A model that plays the levels' targets does not change with x.
    let humane = match (c.humane, c.humane_line()) {
        (Some(h), Some((a, s))) if h.rating_from.uses_line() => (h.weakest_rating()? - a) / s,
        _ => f64::INFINITY,
    };
    // Nodes round to 1 below 1.5 (and clamp there); noise s0·d^x reaches the cap (d < 1).
    if c.b <= 1.0 {
        return None;
    }
    let nodes = (1.5 / c.n0).ln() / c.b.ln();
    let noise = if c.d < 1.0 {
        (cap / c.s0).ln() / c.d.ln()
    } else {
        return None;
    };
    // p(x) = max / (1 + e^((x − mid)/width)) ≥ 0.99 max  ⇔  x ≤ mid − width · ln 99.
    let blind = c
        .blindness
        .map_or(f64::INFINITY, |b| b.mid - b.width * 99f64.ln());
    // A clip by x reaches no lower than its widening allows.
    let clip = c
        .noise_clip
        .and_then(|clip| clip.lowest_clipped_x())
        .unwrap_or(f64::INFINITY);
    // The level plays alike only where every one of them has stopped changing.
    Some(nodes.min(noise).min(blind).min(humane).min(clip))
}

/// Whether `level` already plays as strongly as more x can make it: its node count at full
/// material is at `max_nodes` (every material's is then), its noise is under a centipawn,
/// and its humane model's ratings are those it would have with more x. Pushing such a level
/// up only replays it as the same player (its games stop counting: `plays_alike` compares
/// the uncapped nodes) without ever reaching its target (version 117's level 12: 2634 at
/// 1.64M nodes, 2585 at the 2M cap).
pub fn at_ceiling(c: &Coefficients, level: f64) -> bool {
    let now = LevelParams::new(c, level);
    let mut more = c.clone();
    more.offsets.insert(level_key(level), c.offset(level) + 1.0);
    let after = LevelParams::new(&more, level);
    let ratings = |p: &LevelParams| p.humane.as_deref().map(|(_, played)| *played);
    now.nodes >= c.max_nodes && now.noise_cp < 1.0 && ratings(&now) == ratings(&after)
}

/// The non-decreasing sequence closest to `values` in least squares (pool adjacent violators).
fn isotonic(values: &[f64]) -> Vec<f64> {
    // Blocks of (mean, count).
    let mut blocks: Vec<(f64, usize)> = Vec::with_capacity(values.len());
    for &v in values {
        blocks.push((v, 1));
        while blocks.len() > 1 {
            let (m2, n2) = blocks[blocks.len() - 1];
            let (m1, n1) = blocks[blocks.len() - 2];
            if m1 <= m2 {
                break;
            }
            blocks.pop();
            let merged = (
                (m1 * n1 as f64 + m2 * n2 as f64) / (n1 + n2) as f64,
                n1 + n2,
            );
            *blocks.last_mut().expect("two blocks") = merged;
        }
    }
    blocks
        .into_iter()
        .flat_map(|(m, n)| std::iter::repeat_n(m, n))
        .collect()
}

/// Rounds away float dust (1e-9 of a level) so the file stays readable; far below a node.
fn round9(v: f64) -> f64 {
    (v * 1e9).round() / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::humane::{ModelRating, PlayedAs};
    use crate::levels::NoiseClip;

    fn est(rating: f64, se: f64, games: usize) -> Option<Estimate> {
        Some(Estimate {
            rating,
            se,
            games,
            wins: games / 2,
            draws: 0,
            losses: games - games / 2,
            score: 0.5,
            mean_opponent: rating,
        })
    }

    /// Levels 1..=`n` with target and rating linear in the level, (from, step) each, at an SE
    /// of 20 from `games` games.
    fn linear_levels(
        n: u32,
        target: (f64, f64),
        rating: (f64, f64),
        games: usize,
    ) -> Vec<LevelInput> {
        (1..=n)
            .map(|l| LevelInput {
                level: l as f64,
                target: Some(target.0 + target.1 * l as f64),
                estimate: est(rating.0 + rating.1 * l as f64, 20.0, games),
            })
            .collect()
    }

    /// Version 1 of the shipped file, as history keeps it: a fixed text, so the tests do not
    /// follow calibration.
    fn base() -> Coefficients {
        Coefficients::parse(
            include_str!("../../calibration/history/coefficients-v1.toml"),
            "coefficients-v1.toml",
        )
        .unwrap()
    }

    #[test]
    fn closed_form_keeps_each_level_at_its_new_exponent() {
        let c = base();
        // Ratings 150 per level from 500, targets 200 per level from 600: levels must spread.
        let inputs = linear_levels(5, (400.0, 200.0), (350.0, 150.0), 200);
        let p = propose(&c, &inputs, &UpdateConfig::default(), "test").unwrap();
        assert_eq!(p.coefficients.version, c.version + 1);
        assert_eq!(p.coefficients.calibration_cycle, 1);
        assert_eq!(p.schedule.gain, 1.0);
        for u in &p.levels {
            assert_eq!(u.status, Status::Moved);
            // Newton with slope 150: x moves by (T − R)/150.
            let want = u.exponent.old + (u.target.unwrap() - u.estimate.unwrap().rating) / 150.0;
            // The new file reproduces the wanted exponent in the old scale: nodes match.
            let nodes_want = c.n0 * c.b.powf(want);
            assert!(
                (u.nodes.new as f64 / nodes_want - 1.0).abs() < 0.01,
                "{u:?} {nodes_want}"
            );
            let noise_want = c.s0 * c.d.powf(want);
            assert!((u.noise.new / noise_want - 1.0).abs() < 1e-3);
        }
        // Targets grow faster than ratings: growth per level goes up.
        assert!(p.coefficients.b > c.b && p.coefficients.d < c.d);
    }

    #[test]
    fn too_few_converged_and_untargeted_levels_stay_put() {
        let c = base();
        let inputs = vec![
            LevelInput {
                level: 1.0,
                target: Some(600.0),
                estimate: est(620.0, 25.0, 200),
            },
            LevelInput {
                level: 2.0,
                target: Some(800.0),
                estimate: est(500.0, 25.0, 10),
            },
            LevelInput {
                level: 3.0,
                target: Some(1000.0),
                estimate: est(1300.0, 25.0, 200),
            },
            LevelInput {
                level: 4.0,
                target: None,
                estimate: est(1400.0, 25.0, 200),
            },
        ];
        let mut cfg = UpdateConfig::default();
        let p = propose(&c, &inputs, &cfg, "test").unwrap();
        let status: Vec<_> = p.levels.iter().map(|u| u.status).collect();
        assert_eq!(
            status,
            [
                Status::Converged,
                Status::TooFewGames,
                Status::Moved,
                Status::NoTarget
            ]
        );
        for u in &p.levels {
            if u.status != Status::Moved {
                assert_eq!(u.nodes.new, u.nodes.old, "{u:?}");
                assert!((u.noise.new - u.noise.old).abs() < 1e-6 * u.noise.old);
            }
        }
        // The cap: a 300 Elo miss with a 100 Elo cap moves 100 Elo worth of x.
        cfg.max_step_elo = 100.0;
        let p = propose(&c, &inputs, &cfg, "test").unwrap();
        let moved = &p.levels[2];
        let x_new_old_scale = (moved.nodes.new as f64 / c.n0).ln() / c.b.ln();
        let step = x_new_old_scale - moved.exponent.old;
        assert!(
            (step * moved.local_slope.unwrap() + 100.0).abs() < 5.0,
            "{step}"
        );
        // The measured ratings go into the table; the unmeasured level keeps its nominal one.
        assert_eq!(p.coefficients.ratings["3"], 1300.0);
        // Beside the rating, its 95% half-width, for `!level` to tell.
        assert!(p.coefficients.rating_intervals["3"] > 0.0);
        assert!(!p.coefficients.rating_intervals.contains_key("2"));
        assert_eq!(p.coefficients.ratings["2"], c.ratings["2"]);
    }

    #[test]
    fn gain_schedule_decreases_to_its_floor_and_restarts() {
        let mut c = base();
        let inputs = linear_levels(3, (400.0, 200.0), (400.0, 180.0), 100);
        let mut cfg = UpdateConfig::default();
        c.calibration_cycle = 1;
        assert_eq!(propose(&c, &inputs, &cfg, "t").unwrap().schedule.gain, 0.5);
        c.calibration_cycle = 20;
        assert_eq!(propose(&c, &inputs, &cfg, "t").unwrap().schedule.gain, 0.2);
        cfg.restart_schedule = true;
        let p = propose(&c, &inputs, &cfg, "t").unwrap();
        assert_eq!(
            (p.schedule.gain, p.coefficients.calibration_cycle),
            (1.0, 1)
        );
    }

    #[test]
    fn isotonic_pools_only_crossings() {
        assert_eq!(isotonic(&[1.0, 2.0, 3.0]), [1.0, 2.0, 3.0]);
        assert_eq!(isotonic(&[1.0, 3.0, 2.0, 4.0]), [1.0, 2.5, 2.5, 4.0]);
        assert_eq!(isotonic(&[3.0, 2.0, 1.0]), [2.0, 2.0, 2.0]);
    }

    #[test]
    fn a_single_measured_level_holds() {
        let c = base();
        let inputs = vec![LevelInput {
            level: 2.0,
            target: Some(800.0),
            estimate: est(1200.0, 20.0, 100),
        }];
        let p = propose(&c, &inputs, &UpdateConfig::default(), "t").unwrap();
        assert_eq!(p.levels[0].status, Status::Held);
        assert_eq!(p.levels[0].nodes.new, p.levels[0].nodes.old);
        assert!(!p.notes.is_empty());
    }

    #[test]
    fn a_level_left_alone_plays_exactly_as_before() {
        let mut c = base();
        // Offsets from an earlier cycle: the refit below is not the identity.
        c.offsets.insert("2".into(), 0.3);
        c.offsets.insert("4".into(), -0.2);
        let inputs = vec![
            LevelInput {
                level: 1.0,
                target: Some(600.0),
                estimate: est(610.0, 25.0, 200),
            },
            LevelInput {
                level: 2.0,
                target: Some(800.0),
                estimate: est(700.0, 25.0, 200),
            },
            LevelInput {
                level: 3.0,
                target: Some(1000.0),
                estimate: est(900.0, 25.0, 10),
            },
            LevelInput {
                level: 4.0,
                target: Some(1200.0),
                estimate: est(1300.0, 25.0, 200),
            },
        ];
        let p = propose(&c, &inputs, &UpdateConfig::default(), "t").unwrap();
        assert!(p.changed);
        assert_ne!(
            p.rescale.q, 1.0,
            "the test needs a refit that rescales the levels"
        );
        for u in &p.levels {
            let alike = plays_alike(&c, &p.coefficients, u.level);
            assert_eq!(alike, u.status != Status::Moved, "{u:?}");
        }
    }

    #[test]
    fn a_refit_keeps_every_levels_chance_of_a_blind_move() {
        let mut c = base();
        c.blindness = Some(BlindnessCurve {
            max: 0.6,
            mid: 0.5,
            width: 0.7,
            min: 0.02,
        });
        // Ratings flatter than the targets: the refit rescales x (q != 1) and shifts it.
        let inputs = linear_levels(4, (200.0, 300.0), (400.0, 150.0), 200);
        let p = propose(&c, &inputs, &UpdateConfig::default(), "t").unwrap();
        assert_ne!(p.rescale.q, 1.0);
        let curve = c.blindness.unwrap();
        for u in &p.levels {
            // The new file's chance for the level is the old curve read at the level's new
            // exponent in the old scale (where its nodes and noise come from too).
            let x_old_scale = p
                .rescale
                .old_scale(LevelParams::new(&p.coefficients, u.level).exponent);
            let want = curve.probability(x_old_scale);
            let got = LevelParams::new(&p.coefficients, u.level).blind_probability;
            assert!(
                (got - want).abs() < 1e-9,
                "level {}: {got} vs {want}",
                u.level
            );
        }
        // A level that did not move keeps its games: the curve is part of plays_alike.
        let mut moved_curve = p.coefficients.clone();
        moved_curve.blindness = Some(curve);
        assert!(!plays_alike(&p.coefficients, &moved_curve, 1.0));
    }

    #[test]
    fn a_refit_keeps_every_levels_noise_clip_by_x() {
        let mut c = base();
        c.noise_clip = Some(NoiseClip {
            scales: Some(1.0),
            from_x: Some(1.6),
            to_x: Some(2.4),
            widen_x: Some(0.3),
            ..NoiseClip::default()
        });
        let inputs = linear_levels(4, (200.0, 300.0), (400.0, 150.0), 200);
        let p = propose(&c, &inputs, &UpdateConfig::default(), "t").unwrap();
        assert_ne!(p.rescale.q, 1.0);
        let clip = c.noise_clip.unwrap();
        let mut clipped = 0;
        for u in &p.levels {
            let x_old_scale = p
                .rescale
                .old_scale(LevelParams::new(&p.coefficients, u.level).exponent);
            let want = clip.scales_at(x_old_scale).unwrap_or(f64::INFINITY);
            let got = LevelParams::new(&p.coefficients, u.level).noise_clip_scales;
            assert!(
                got == want || (got - want).abs() < 1e-9,
                "level {}: {got} vs {want}",
                u.level
            );
            clipped += usize::from(got.is_finite());
        }
        assert!(clipped > 0, "the test needs a clipped level");
        // A level that did not move keeps its games: the clip is part of plays_alike.
        let mut moved_clip = p.coefficients.clone();
        moved_clip.noise_clip = Some(clip);
        assert!(
            p.levels
                .iter()
                .any(|u| !plays_alike(&p.coefficients, &moved_clip, u.level))
        );
    }

    /// The candidate's humane model (the `[humane]` table of calibration/humane/).
    fn humane_model() -> HumaneCoefficients {
        Coefficients::parse(
            include_str!("../../calibration/humane/coefficients.toml"),
            "calibration/humane/coefficients.toml",
        )
        .unwrap()
        .humane
        .expect("the candidate has the model on")
    }

    #[test]
    fn a_refit_keeps_every_levels_humane_rating_and_the_model_counts_in_plays_alike() {
        let mut c = base();
        c.humane = Some(humane_model());
        let inputs = linear_levels(4, (200.0, 300.0), (400.0, 150.0), 200);
        let p = propose(&c, &inputs, &UpdateConfig::default(), "t").unwrap();
        assert_ne!(p.rescale.q, 1.0, "the test needs a refit that rescales x");
        let h = p.coefficients.humane.expect("the model stays on");
        assert!(h.rating_at_x0.is_some() && h.rating_per_x.is_some());
        for u in &p.levels {
            // The new file's model rating for the level is the old line read at the level's
            // new exponent in the old scale.
            let x_new = LevelParams::new(&p.coefficients, u.level).exponent;
            let want = c.humane_rating(p.rescale.old_scale(x_new)).unwrap();
            let got = p.coefficients.humane_rating(x_new).unwrap();
            assert!(
                (got - want).abs() < 1e-6,
                "level {}: {got} vs {want}",
                u.level
            );
        }
        // The written line survives the file.
        let again = Coefficients::parse(&p.coefficients.to_toml(), "next").unwrap();
        assert_eq!(again.humane, p.coefficients.humane);
        // Other knobs, or the model off, do not play alike; the same file does.
        assert!(plays_alike(&c, &c, 2.0));
        let mut knob = c.clone();
        knob.humane = Some(HumaneCoefficients {
            miss_mid: 600.0,
            ..humane_model()
        });
        assert!(!plays_alike(&c, &knob, 2.0));
        assert!(!plays_alike(&c, &base(), 2.0));
    }

    #[test]
    fn a_model_that_plays_the_targets_keeps_them_through_a_refit_and_sets_no_floor() {
        let mut c = base();
        let targets = HumaneCoefficients {
            rating_from: ModelRating::Target,
            rating_at_x0: None,
            rating_per_x: None,
            ..humane_model()
        };
        c.humane = Some(targets);
        let inputs = linear_levels(4, (200.0, 300.0), (400.0, 150.0), 200);
        let p = propose(&c, &inputs, &UpdateConfig::default(), "t").unwrap();
        assert_ne!(p.rescale.q, 1.0, "the test needs a refit that rescales x");
        // No line is written: the model still plays each level's target, moved or not.
        assert_eq!(p.coefficients.humane, Some(targets));
        for u in &p.levels {
            let model = LevelParams::new(&p.coefficients, u.level)
                .humane
                .unwrap()
                .1
                .errors;
            assert_eq!(model, c.targets().target(u.level), "level {}", u.level);
        }
        // The file says so and reads back the same.
        let text = p.coefficients.to_toml();
        assert!(text.contains("rating_from = \"target\""), "{text}");
        let again = Coefficients::parse(&text, "next").unwrap();
        assert_eq!(again.humane, p.coefficients.humane);
        // The model does not weaken with x, so the floor is the search's alone; and the line
        // model is another model.
        assert_eq!(weakest_exponent(&c), weakest_exponent(&base()));
        // The line model is another model where its rating differs from the target, and the
        // same where it does not (the targets' own line at a level with no offset).
        let t = c.targets();
        let mut line = c.clone();
        line.humane = Some(HumaneCoefficients {
            rating_at_x0: Some(t.from - t.step + 100.0),
            rating_per_x: Some(t.step),
            ..humane_model()
        });
        assert!(!plays_alike(&c, &line, 3.0));
        assert!(plays_alike(&c, &c, 3.0));
        line.humane = Some(humane_model());
        assert_eq!(c.offset(3.0), 0.0);
        assert!(plays_alike(&c, &line, 3.0));
    }

    #[test]
    fn a_model_that_plays_the_lower_takes_the_line_below_the_targets_and_keeps_it_through_a_refit()
    {
        let mut c = base().with_test_bottom(600.0);
        // A line twice as steep as the targets', crossing them at level 3's exponent: below
        // the targets under it, above them over it (version 58's shape).
        let t = c.targets();
        let x3 = LevelParams::new(&c, 3.0).exponent;
        let slope = 2.0 * t.step;
        let lower = HumaneCoefficients {
            rating_from: ModelRating::Lower,
            rating_at_x0: Some(t.target(3.0) - slope * x3),
            rating_per_x: Some(slope),
            ..humane_model()
        };
        c.humane = Some(lower);
        let model =
            |c: &Coefficients, level: f64| LevelParams::new(c, level).humane.unwrap().1.errors;
        let line = |c: &Coefficients, level: f64| {
            c.humane_rating(LevelParams::new(c, level).exponent)
                .unwrap()
        };
        assert!(line(&c, 1.0) < t.target(1.0) && line(&c, 5.0) > t.target(5.0));
        assert_eq!(model(&c, 1.0), line(&c, 1.0));
        assert_eq!(model(&c, 5.0), t.target(5.0));
        // From `target_from_level` up the target, even where the line is lower.
        let mut from2 = c.clone();
        from2.humane = Some(HumaneCoefficients {
            target_from_level: Some(2.0),
            ..lower
        });
        assert!(line(&c, 2.0) < t.target(2.0));
        assert_eq!(model(&from2, 1.0), line(&c, 1.0));
        assert_eq!(model(&from2, 2.0), t.target(2.0));
        let refit = propose(
            &from2,
            &linear_levels(5, (200.0, 300.0), (400.0, 150.0), 200),
            &UpdateConfig::default(),
            "t",
        )
        .unwrap();
        assert_eq!(
            refit.coefficients.humane.unwrap().target_from_level,
            Some(2.0)
        );
        // A refit that rescales x rewrites the line, so each level keeps its model rating.
        let inputs = linear_levels(5, (200.0, 300.0), (400.0, 150.0), 200);
        let p = propose(&c, &inputs, &UpdateConfig::default(), "t").unwrap();
        assert_ne!(p.rescale.q, 1.0, "the test needs a refit that rescales x");
        assert_eq!(
            p.coefficients.humane.unwrap().rating_from,
            ModelRating::Lower
        );
        for u in &p.levels {
            let x_new = LevelParams::new(&p.coefficients, u.level).exponent;
            let want = c
                .humane_rating(p.rescale.old_scale(x_new))
                .unwrap()
                .min(t.target(u.level));
            let got = model(&p.coefficients, u.level);
            assert!(
                (got - want).abs() < 1e-6,
                "level {}: {got} vs {want}",
                u.level
            );
        }
        let text = p.coefficients.to_toml();
        assert!(text.contains("rating_from = \"lower\""), "{text}");
        let again = Coefficients::parse(&text, "next").unwrap();
        assert_eq!(again.humane, p.coefficients.humane);
        // The line still sets the floor under x, as the line model's does (the bottom weakens
        // by it where the search cannot); and the two are other models at the top.
        let mut strength = c.clone();
        strength.humane = Some(HumaneCoefficients {
            rating_from: ModelRating::Strength,
            ..lower
        });
        assert_eq!(weakest_exponent(&c), weakest_exponent(&strength));
        assert!(plays_alike(&c, &c, 5.0));
        assert!(!plays_alike(&c, &strength, 5.0));
        // Where the line is the lower, the level plays as under the line model: a loop that
        // turns "lower" on keeps the bottom's games.
        assert!(plays_alike(&c, &strength, 1.0));
    }

    #[test]
    fn with_the_humane_model_the_floor_is_where_it_misses_even_easy_errors() {
        let mut c = base().with_test_bottom(600.0);
        let search_floor = weakest_exponent(&c).unwrap();
        c.humane = Some(humane_model());
        let floor = weakest_exponent(&c).unwrap();
        assert!(floor < search_floor - 1.0, "{floor} vs {search_floor}");
        let model = c.humane.unwrap();
        let at = |x: f64| {
            let rating = c.humane_rating(x).unwrap();
            model.miss_chance(PlayedAs::one(rating), true, &[], None)
        };
        assert!(at(floor) >= 0.99 - 1e-9, "{}", at(floor));
        assert!(at(floor + 1.0) < 0.99);
        // Easy errors never missed: no floor, a lower exponent always misses more.
        c.humane = Some(HumaneCoefficients {
            easy_factor: 0.0,
            ..model
        });
        assert_eq!(weakest_exponent(&c), None);
    }

    #[test]
    fn a_level_at_the_floor_that_is_too_strong_stays_put() {
        let mut c = base().with_test_bottom(600.0);
        let floor = weakest_exponent(&c).unwrap();
        // At the floor: one node, the noise at its cap, blindness at its maximum.
        c.offsets.insert("1".into(), floor - 1.0 - 0.5);
        let at_floor = LevelParams::new(&c, 1.0);
        assert_eq!(at_floor.nodes, 1);
        assert_eq!(at_floor.noise_cp, 600.0);
        assert!(at_floor.blind_probability > 0.99 * 0.6);
        let inputs: Vec<_> = (1..=3)
            .map(|l| LevelInput {
                level: l as f64,
                target: Some(300.0 + 200.0 * l as f64),
                // Level 1 far too strong for its target; the others on target.
                estimate: est(
                    if l == 1 {
                        800.0
                    } else {
                        300.0 + 200.0 * l as f64
                    },
                    20.0,
                    200,
                ),
            })
            .collect();
        let p = propose(&c, &inputs, &UpdateConfig::default(), "t").unwrap();
        assert_eq!(p.levels[0].status, Status::AtFloor);
        assert!(plays_alike(&c, &p.coefficients, 1.0));
        // Above the floor, a level is moved down to the floor and no further.
        c.offsets.insert("1".into(), floor - 1.0 + 0.3);
        let p = propose(&c, &inputs, &UpdateConfig::default(), "t").unwrap();
        assert_eq!(p.levels[0].status, Status::Moved);
        let x_old_scale = p
            .rescale
            .old_scale(LevelParams::new(&p.coefficients, 1.0).exponent);
        assert!(
            (x_old_scale - floor).abs() < 1e-6,
            "{x_old_scale} vs {floor}"
        );
        // Without a noise cap there is no floor: more noise always plays weaker.
        c.max_noise_cp = None;
        assert_eq!(weakest_exponent(&c), None);
    }

    #[test]
    fn a_level_at_the_ceiling_that_is_too_weak_stays_put() {
        let mut c = base();
        // Level 3 pushed up until its noise is under a centipawn, its nodes over the cap.
        let mut offset = 0.0;
        while LevelParams::new(&c, 3.0).noise_cp >= 1.0 {
            offset += 0.5;
            assert!(offset < 50.0, "the noise never fell under a centipawn");
            c.offsets.insert("3".into(), offset);
        }
        let inputs: Vec<_> = (1..=3)
            .map(|l| LevelInput {
                level: l as f64,
                target: Some(300.0 + 200.0 * l as f64),
                // Level 3 far too weak for its target; the others on target.
                estimate: est(
                    300.0 + 200.0 * l as f64 - if l == 3 { 300.0 } else { 0.0 },
                    20.0,
                    200,
                ),
            })
            .collect();
        // Below the cap more x buys more nodes: it moves up.
        c.max_nodes = LevelParams::new(&c, 3.0).nodes * 4;
        assert!(!at_ceiling(&c, 3.0));
        let p = propose(&c, &inputs, &UpdateConfig::default(), "t").unwrap();
        assert_eq!(p.levels[2].status, Status::Moved);
        // At the cap nothing more x changes makes it stronger: it stays, and plays as before.
        c.max_nodes = LevelParams::new(&c, 3.0).nodes / 2;
        assert!(at_ceiling(&c, 3.0));
        let p = propose(&c, &inputs, &UpdateConfig::default(), "t").unwrap();
        assert_eq!(p.levels[2].status, Status::AtCeiling);
        assert!(plays_alike(&c, &p.coefficients, 3.0));
        // Too strong there, it still moves down.
        let mut strong = inputs.clone();
        strong[2].estimate = est(1200.0, 20.0, 200);
        let p = propose(&c, &strong, &UpdateConfig::default(), "t").unwrap();
        assert_eq!(p.levels[2].status, Status::Moved);
    }

    #[test]
    fn nothing_moving_changes_nothing() {
        let mut c = base();
        c.offsets.insert("2".into(), 0.3);
        // Too few games everywhere: no level moves, no rating is measured.
        let inputs: Vec<_> = (1..=4)
            .map(|l| LevelInput {
                level: l as f64,
                target: Some(400.0 + 200.0 * l as f64),
                estimate: est(500.0 * l as f64, 40.0, 5),
            })
            .collect();
        let p = propose(&c, &inputs, &UpdateConfig::default(), "t").unwrap();
        assert!(!p.changed, "{:?}", p.notes);
        assert_eq!(p.rescale, Rescale::IDENTITY);
        assert_eq!(p.coefficients.offsets, c.offsets);
        assert_eq!((p.coefficients.n0, p.coefficients.b), (c.n0, c.b));
        // A measured rating alone is a change worth a version.
        let measured: Vec<_> = inputs
            .iter()
            .map(|i| LevelInput {
                estimate: est(i.target.unwrap() + 1.0, 40.0, 200),
                ..i.clone()
            })
            .collect();
        let p = propose(&c, &measured, &UpdateConfig::default(), "t").unwrap();
        assert!(p.levels.iter().all(|u| u.status == Status::Converged));
        assert!(p.changed);
    }
}
