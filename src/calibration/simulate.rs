//! The simulator: a known truth (rating as a function of nodes and noise), opponents drawn around
//! each level, outcomes drawn from the Elo model with draws, run through the same selection,
//! estimation and update code as real games, from deliberately wrong coefficients.

use std::collections::BTreeMap;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::pipeline::{Settings, Targets, calibrate};
use super::update::UpdateError;
use crate::levels::{Coefficients, LevelParams, level_key};
use crate::lichess::{Color, GameId, GameStatus};
use crate::rating::expected;
use crate::results::{
    GameRecord, Keyed, OpponentRecord, Outcome, SCHEMA_VERSION, Source, sample_record,
};

/// The true strength of an engine setting: `per_doubling` Elo per node doubling at one node,
/// flattening exponentially toward `ceiling`, minus `per_cp` Elo per centipawn of noise.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Truth {
    pub ceiling: f64,
    /// Rating at one node without noise.
    pub base: f64,
    pub per_doubling: f64,
    pub per_cp: f64,
}

impl Default for Truth {
    fn default() -> Self {
        Truth {
            ceiling: 3100.0,
            base: 1000.0,
            per_doubling: 120.0,
            per_cp: 4.0,
        }
    }
}

impl Truth {
    pub fn rating(&self, nodes: f64, noise_cp: f64) -> f64 {
        let doublings = nodes.max(1.0).log2();
        let room = self.ceiling - self.base;
        self.ceiling - room * (-self.per_doubling * doublings / room).exp() - self.per_cp * noise_cp
    }

    /// The true rating of `level` under `coefficients` (nodes rounded as the engine uses them).
    pub fn level_rating(&self, coefficients: &Coefficients, level: f64) -> f64 {
        let p = LevelParams::new(coefficients, level);
        self.rating(p.nodes as f64, p.noise_cp)
    }
}

/// A simulation's setup.
#[derive(Clone, Debug)]
pub struct SimConfig {
    pub truth: Truth,
    pub levels: u32,
    pub target_from: f64,
    pub target_step: f64,
    /// Games per level per cycle.
    pub games: usize,
    pub cycles: u32,
    pub seed: u64,
    /// The start is the reference with b multiplied by `b_factor` and d by `d_factor`.
    pub b_factor: f64,
    pub d_factor: f64,
    /// Opponents' true ratings: normal around the level's true rating with this spread.
    pub opponent_sd: f64,
    /// Draw share between equal players.
    pub draw_rate: f64,
    /// Share of provisional opponents, whose shown rating is off by up to RD.
    pub provisional_share: f64,
    /// Share of aborted games (logged, then left out).
    pub aborted_share: f64,
    pub settings: Settings,
}

/// One cycle of a simulation.
#[derive(Clone, Debug, PartialEq)]
pub struct CycleStats {
    pub cycle: u32,
    pub gain: f64,
    /// RMS of (true rating − target) over the levels with the coefficients the games used.
    pub rms_before: f64,
    /// RMS of the estimates' standard errors this cycle: the statistical floor.
    pub floor: f64,
    /// RMS of (true rating − target) with the proposed coefficients.
    pub rms_after: f64,
    pub games: usize,
}

impl SimConfig {
    pub fn targets(&self) -> BTreeMap<String, f64> {
        (1..=self.levels)
            .map(|l| {
                (
                    level_key(l as f64),
                    self.target_from + self.target_step * (l as f64 - 1.0),
                )
            })
            .collect()
    }

    /// Coefficients whose line x = L best hits the targets under the truth (no offsets): the
    /// exact exponent of each level is found on the built-in curve by bisection, then written
    /// in closed form.
    pub fn reference(&self) -> Coefficients {
        let mut c = Coefficients::builtin();
        c.offsets.clear();
        c.calibration_cycle = 0;
        let exact: Vec<(f64, f64)> = (1..=self.levels)
            .map(|l| {
                let target = self.target_from + self.target_step * (l as f64 - 1.0);
                let (mut lo, mut hi) = (-30.0, 60.0);
                for _ in 0..100 {
                    let mid = 0.5 * (lo + hi);
                    let r = self
                        .truth
                        .rating(c.n0 * c.b.powf(mid), c.s0 * c.d.powf(mid));
                    if r < target {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                (l as f64, 0.5 * (lo + hi))
            })
            .collect();
        let n = exact.len() as f64;
        let ml = exact.iter().map(|e| e.0).sum::<f64>() / n;
        let mx = exact.iter().map(|e| e.1).sum::<f64>() / n;
        let sll: f64 = exact.iter().map(|e| (e.0 - ml).powi(2)).sum();
        let q = if sll > 0.0 {
            exact.iter().map(|e| (e.0 - ml) * (e.1 - mx)).sum::<f64>() / sll
        } else {
            1.0
        };
        let p = mx - q * ml;
        let (n0, b, s0, d) = (c.n0, c.b, c.s0, c.d);
        c.n0 = n0 * b.powf(p);
        c.b = b.powf(q);
        c.s0 = s0 * d.powf(p);
        c.d = d.powf(q);
        c.ratings = self.targets();
        c.ratings_source = "simulation targets".to_string();
        c.targets = Some(crate::levels::LadderTargets {
            scale: "simulation".to_string(),
            perf: "blitz".to_string(),
            from: self.target_from,
            step: self.target_step,
        });
        c
    }

    /// The deliberately wrong start: the reference with b and d off by the configured factors.
    pub fn start(&self) -> Coefficients {
        let mut c = self.reference();
        c.b = (c.b * self.b_factor).max(1.01);
        c.d = (c.d * self.d_factor).clamp(0.01, 1.0);
        c
    }

    /// The RMS distance of the true level ratings from the targets under `coefficients`.
    pub fn rms_error(&self, coefficients: &Coefficients) -> f64 {
        let targets = self.targets();
        let sum: f64 = targets
            .iter()
            .map(|(k, t)| {
                let level: f64 = k.parse().expect("level key");
                (self.truth.level_rating(coefficients, level) - t).powi(2)
            })
            .sum();
        (sum / targets.len() as f64).sqrt()
    }

    /// Plays `games` games per level under `coefficients`, as the daemon would log them.
    pub fn play(
        &self,
        coefficients: &Coefficients,
        cycle: u32,
        rng: &mut StdRng,
    ) -> Vec<GameRecord> {
        let mut out = Vec::with_capacity(self.games * self.levels as usize);
        let template = sample_record("template", Outcome::Draw);
        for l in 1..=self.levels {
            let level = l as f64;
            let params = LevelParams::new(coefficients, level);
            let strength = self.truth.rating(params.nodes as f64, params.noise_cp);
            for i in 0..self.games {
                let opponent = strength + self.opponent_sd * normal(rng);
                let (shown, provisional, rd) = if rng.r#gen::<f64>() < self.provisional_share {
                    let rd = rng.gen_range(110.0..350.0);
                    (opponent + 0.5 * rd * normal(rng), true, Some(rd))
                } else {
                    (opponent, false, Some(60.0))
                };
                let e = expected(strength, opponent);
                let draw = self.draw_rate * (1.0 - (2.0 * e - 1.0).abs());
                let u: f64 = rng.r#gen();
                let aborted = rng.r#gen::<f64>() < self.aborted_share;
                let result = if aborted {
                    Outcome::None
                } else if u < e - draw / 2.0 {
                    Outcome::Win
                } else if u < e + draw / 2.0 {
                    Outcome::Draw
                } else {
                    Outcome::Loss
                };
                let mut r = template.clone();
                r.schema = SCHEMA_VERSION;
                r.game_id = GameId::new(format!("sim{}c{cycle}l{l}g{i}", self.seed));
                r.header.source = Source::Lichess;
                r.header.account = format!("sim-l{l}");
                r.header.level = level;
                r.header.offset = params.offset;
                r.header.coefficients_version = coefficients.version;
                r.header.engine.nodes = params.nodes;
                r.header.engine.noise_cp = params.noise_cp;
                r.header.engine.hash_mb = params.hash_mb;
                r.header.seed = rng.r#gen();
                r.perf = Keyed::parse(&self.settings.filter.perf);
                r.speed = Keyed::parse(&self.settings.filter.perf);
                r.color = if i % 2 == 0 {
                    Color::White
                } else {
                    Color::Black
                }
                .into();
                r.opponent = OpponentRecord {
                    id: format!("opp{i}"),
                    name: format!("Opp{i}"),
                    title: None,
                    rating: Some(shown.round()),
                    provisional,
                    rd,
                    bot: false,
                };
                r.our_rating = Some(strength.round());
                r.result = result;
                let status = if aborted {
                    GameStatus::Aborted
                } else {
                    GameStatus::Resign
                };
                r.status = status.into();
                r.moves = if aborted { "" } else { "e2e4 e7e5 g1f3" }.to_string();
                r.winner = None;
                out.push(r);
            }
        }
        out
    }

    /// Runs the loop for `cycles` cycles from the wrong start; calls `each` after every cycle.
    pub fn run(&self, mut each: impl FnMut(&CycleStats)) -> Result<Vec<CycleStats>, UpdateError> {
        let mut rng = StdRng::seed_from_u64(self.seed);
        let targets = Targets::Table(self.targets());
        let mut coefficients = self.start();
        let mut stats = Vec::new();
        for cycle in 1..=self.cycles {
            let records = self.play(&coefficients, cycle, &mut rng);
            let mut settings = self.settings.clone();
            settings.filter.versions =
                super::select::Versions::Range(coefficients.version, coefficients.version);
            let result = calibrate(&records, &coefficients, &targets, &settings, "simulation")?;
            let ses: Vec<f64> = result.estimates().map(|(_, e)| e.se).collect();
            let floor = if ses.is_empty() {
                f64::NAN
            } else {
                (ses.iter().map(|s| s * s).sum::<f64>() / ses.len() as f64).sqrt()
            };
            let next = result.proposal.coefficients;
            let s = CycleStats {
                cycle,
                gain: result.proposal.schedule.gain,
                rms_before: self.rms_error(&coefficients),
                floor,
                rms_after: self.rms_error(&next),
                games: result.selection.used,
            };
            each(&s);
            stats.push(s);
            coefficients = next;
        }
        Ok(stats)
    }
}

/// A standard normal draw (Box–Muller; `rand` 0.8 has no normal law without rand_distr).
fn normal(rng: &mut StdRng) -> f64 {
    let u1: f64 = rng.r#gen::<f64>().max(f64::MIN_POSITIVE);
    let u2: f64 = rng.r#gen();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truth_grows_with_nodes_and_falls_with_noise_and_flattens() {
        let t = Truth::default();
        assert!((t.rating(1.0, 0.0) - 1000.0).abs() < 1e-9);
        let first = t.rating(2.0, 0.0) - t.rating(1.0, 0.0);
        let late = t.rating(2f64.powi(21), 0.0) - t.rating(2f64.powi(20), 0.0);
        assert!(first > 100.0 && late < first / 2.0 && t.rating(1e15, 0.0) < 3100.0);
        assert!((t.rating(64.0, 0.0) - t.rating(64.0, 10.0) - 40.0).abs() < 1e-9);
    }
}
