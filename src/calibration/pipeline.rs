//! One calibration pass, shared by `ladder calibrate` and the simulator: select the games,
//! estimate each level, propose the next coefficients.

use std::collections::BTreeMap;

use super::select::{Filter, LevelGames, Lineage, Opponents, Selection, select_with};
use super::update::{LevelInput, Proposal, UpdateConfig, UpdateError, propose};
use crate::levels::{Coefficients, level_key};
use crate::rating::{Estimate, FarOff, Prior, estimate_far_off};
use crate::results::GameRecord;

/// The target rating of each level.
#[derive(Clone, Debug, PartialEq)]
pub enum Targets {
    /// Explicit targets by level key.
    Table(BTreeMap<String, f64>),
    /// T(L) = from + step · (L − 1), for the levels that have games or a recorded rating.
    Linear { from: f64, step: f64 },
}

impl Targets {
    /// The ladder's own targets, from the coefficients' `[targets]`.
    pub fn of(coefficients: &Coefficients) -> Targets {
        let t = coefficients.targets();
        Targets::Linear {
            from: t.from,
            step: t.step,
        }
    }

    /// What the report says of these targets: the ladder's (`current`'s [targets]) or
    /// given on the command line.
    pub fn describe(&self, current: &Coefficients) -> String {
        let ladder = current.targets();
        match self {
            Targets::Linear { from, step } if (*from, *step) == (ladder.from, ladder.step) => {
                format!(
                    "{} (the ladder's, [targets] of the coefficients)",
                    ladder.describe()
                )
            }
            Targets::Linear { from, step } => format!(
                "{from} + {step}·(L − 1) on {} (given on the command line)",
                ladder.scale
            ),
            Targets::Table(t) => format!(
                "{} (given on the command line)",
                t.iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    pub fn target(&self, level: f64) -> Option<f64> {
        match self {
            Targets::Table(t) => t.get(&level_key(level)).copied(),
            Targets::Linear { from, step } => Some(from + step * (level - 1.0)),
        }
    }

    /// Parses "1=600,2=800,…".
    pub fn parse_table(text: &str) -> Result<Targets, String> {
        let mut table = BTreeMap::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let bad = || format!("`{part}` is not LEVEL=RATING (as in 1=600)");
            let (level, rating) = part.split_once('=').ok_or_else(bad)?;
            let level: f64 = level.trim().parse().map_err(|_| bad())?;
            let rating: f64 = rating.trim().parse().map_err(|_| bad())?;
            if !(level.is_finite() && level > 0.0 && rating.is_finite()) {
                return Err(bad());
            }
            if table.insert(level_key(level), rating).is_some() {
                return Err(format!("level {level} has two targets"));
            }
        }
        if table.is_empty() {
            return Err("no targets given".to_string());
        }
        Ok(Targets::Table(table))
    }

    /// The levels these targets name (a linear rule names none by itself).
    pub fn levels(&self) -> Vec<f64> {
        match self {
            Targets::Table(t) => t.keys().filter_map(|k| k.parse().ok()).collect(),
            Targets::Linear { .. } => Vec::new(),
        }
    }
}

/// Everything one pass needs besides the games.
#[derive(Clone, Debug)]
pub struct Settings {
    pub filter: Filter,
    /// Virtual draws against the target (0: pure maximum likelihood).
    pub prior_draws: u32,
    /// How much a game against a far-off opponent counts.
    pub far_off: FarOff,
    pub update: UpdateConfig,
    /// Older coefficients versions by number (the history directory): a game of a version
    /// outside the window counts for a level that plays the same in the current version.
    pub history: BTreeMap<u32, Coefficients>,
}

impl Settings {
    /// `ladder calibrate`'s defaults around `filter`: two virtual draws, the default far-off
    /// weighing and update, no history.
    pub fn new(filter: Filter) -> Settings {
        Settings {
            filter,
            prior_draws: Settings::PRIOR_DRAWS,
            far_off: FarOff::default(),
            update: UpdateConfig::default(),
            history: BTreeMap::new(),
        }
    }

    /// Virtual draws against the target, unless `--prior-draws` says.
    pub const PRIOR_DRAWS: u32 = 2;
}

/// The outcome of one pass.
#[derive(Clone, Debug)]
pub struct Calibration {
    pub selection: Selection,
    pub proposal: Proposal,
    pub prior: String,
    /// Levels whose estimate failed, with why.
    pub estimate_errors: Vec<(f64, String)>,
    /// The estimates from the games kept apart (`selection.apart`: against bots when the
    /// estimate is from people), by level key; never used for the update.
    pub apart: BTreeMap<String, ApartEstimate>,
    /// Whose games the estimate is from (`settings.filter.opponents`).
    pub opponents: Opponents,
    /// How far-off opponents were weighed (`settings.far_off`).
    pub far_off: FarOff,
}

/// A level's rating from the games kept apart.
#[derive(Clone, Debug)]
pub struct ApartEstimate {
    pub level: f64,
    /// The estimate, or why there is none.
    pub estimate: Result<Estimate, String>,
}

impl Calibration {
    pub fn estimates(&self) -> impl Iterator<Item = (f64, &Estimate)> {
        self.proposal
            .levels
            .iter()
            .filter_map(|u| Some((u.level, u.estimate.as_ref()?)))
    }
}

/// Runs one pass over `records` against the `current` coefficients.
pub fn calibrate(
    records: &[GameRecord],
    current: &Coefficients,
    targets: &Targets,
    settings: &Settings,
    ratings_source: &str,
) -> Result<Calibration, UpdateError> {
    let lineage = Lineage {
        current,
        older: &settings.history,
    };
    let mut selection = select_with(records, &settings.filter, Some(lineage));
    let mut levels: BTreeMap<String, f64> = selection
        .levels
        .values()
        .map(|l| (level_key(l.level), l.level))
        .collect();
    for level in targets.levels() {
        levels.insert(level_key(level), level);
    }
    if matches!(targets, Targets::Linear { .. }) {
        for (level, _) in current.rated_levels() {
            levels.insert(level_key(level), level);
        }
    }
    let mut inputs = Vec::new();
    let mut estimate_errors = Vec::new();
    for (key, &level) in &levels {
        let target = targets.target(level);
        let estimate = selection.levels.get_mut(key).and_then(|games| {
            estimate_level(games, target, settings)
                .map_err(|e| estimate_errors.push((level, e)))
                .ok()
        });
        inputs.push(LevelInput {
            level,
            target,
            estimate,
        });
    }
    let apart = selection
        .apart
        .iter_mut()
        .map(|(key, games)| {
            let estimate = estimate_level(games, targets.target(games.level), settings);
            let level = games.level;
            (key.clone(), ApartEstimate { level, estimate })
        })
        .collect();
    let mut proposal = propose(current, &inputs, &settings.update, ratings_source)?;
    // The coefficients record the targets they were calibrated toward: a line given on the
    // command line that differs from the current file's becomes the proposal's [targets].
    if let Targets::Linear { from, step } = *targets {
        let now = current.targets();
        if (now.from, now.step, now.perf.as_str()) != (from, step, settings.filter.perf.as_str()) {
            proposal.coefficients.targets = Some(crate::levels::LadderTargets {
                from,
                step,
                perf: settings.filter.perf.clone(),
                ..now
            });
            proposal.changed = true;
        }
    }
    Ok(Calibration {
        selection,
        proposal,
        prior: prior(settings.prior_draws, 0.0).describe(),
        estimate_errors,
        apart,
        opponents: settings.filter.opponents,
        far_off: settings.far_off,
    })
}

/// One level's estimate from `games`, the prior centred on its target (or, without one, on its
/// opponents' mean), far-off opponents counting less; records how many were far off.
fn estimate_level(
    games: &mut LevelGames,
    target: Option<f64>,
    settings: &Settings,
) -> Result<Estimate, String> {
    let center = target.unwrap_or_else(|| {
        games.observations.iter().map(|o| o.opponent).sum::<f64>() / games.observations.len() as f64
    });
    let prior = prior(settings.prior_draws, center);
    let (estimate, far) =
        estimate_far_off(&mut games.observations, prior, settings.far_off, center);
    games.far_off = far;
    estimate.map_err(|e| e.to_string())
}

fn prior(draws: u32, center: f64) -> Prior {
    if draws == 0 {
        Prior::None
    } else {
        Prior::VirtualDraws {
            count: draws,
            center,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibration::select::Versions;
    use crate::rating::{Observation, estimate_far_off};
    use crate::results::{Outcome, sample_record};

    fn settings(opponents: Opponents) -> Settings {
        Settings::new(Filter::new("blitz", opponents, Versions::Range(1, 1)))
    }

    #[test]
    fn each_kind_of_opponent_has_its_own_estimate() {
        // Level 3 (target 1000) scores 60% against people around 1000 and 20% against bots
        // around 900, one of each far off (1500 and 100).
        let mut records = Vec::new();
        let mut people = Vec::new();
        let mut bots = Vec::new();
        for i in 0..40u32 {
            let bot = i % 2 == 1;
            let score = match (bot, i % 10) {
                (false, 0 | 4) => 0.0,
                (false, _) => 1.0,
                (true, 1) => 1.0,
                (true, _) => 0.0,
            };
            let opponent = match (bot, i) {
                (false, 0) => 1500.0,
                (true, 1) => 100.0,
                (false, _) => 950.0 + f64::from(i % 7) * 20.0,
                (true, _) => 850.0 + f64::from(i % 5) * 25.0,
            };
            let outcome = if score > 0.5 {
                Outcome::Win
            } else {
                Outcome::Loss
            };
            let mut r = sample_record(&format!("g{i}"), outcome);
            r.opponent.bot = bot;
            r.opponent.rating = Some(opponent);
            records.push(r);
            if bot { &mut bots } else { &mut people }.push(Observation::new(opponent, score));
        }
        let targets = Targets::Table(BTreeMap::from([("3".to_string(), 1000.0)]));
        let current = Coefficients::builtin();
        let prior = Prior::VirtualDraws {
            count: 2,
            center: 1000.0,
        };
        let by_hand = |games: &mut Vec<Observation>| {
            let (e, far) = estimate_far_off(games, prior, FarOff::default(), 1000.0);
            (e.unwrap(), far)
        };
        let (people_est, people_far) = by_hand(&mut people);
        let (bots_est, bots_far) = by_hand(&mut bots);
        assert_eq!((people_far, bots_far), (1, 1));
        assert!(
            people_est.rating > bots_est.rating + 100.0,
            "two different samples"
        );

        let calibrate_from =
            |opponents| calibrate(&records, &current, &targets, &settings(opponents), "t").unwrap();
        let cal = calibrate_from(Opponents::Humans);
        let (_, used) = cal.estimates().next().unwrap();
        assert_eq!(*used, people_est);
        assert_eq!(cal.apart["3"].estimate.as_ref().unwrap(), &bots_est);
        assert_eq!(cal.selection.levels["3"].far_off, 1);
        assert_eq!(cal.selection.apart["3"].far_off, 1);

        let cal = calibrate_from(Opponents::Bots);
        let (_, used) = cal.estimates().next().unwrap();
        assert_eq!(*used, bots_est);
        assert_eq!(cal.apart["3"].estimate.as_ref().unwrap(), &people_est);

        // All together is neither.
        let cal = calibrate_from(Opponents::All);
        let (_, used) = cal.estimates().next().unwrap();
        assert_eq!(used.games, 40);
        assert!(cal.apart.is_empty());
        assert!(used.rating < people_est.rating && used.rating > bots_est.rating);
    }

    #[test]
    fn the_coefficients_record_the_targets_they_were_calibrated_toward() {
        let current = Coefficients::builtin();
        let records: Vec<_> = (0..4)
            .map(|i| sample_record(&format!("g{i}"), Outcome::Draw))
            .collect();
        let settings = settings(Opponents::All);
        // The ladder's own targets: nothing new to record.
        let cal = calibrate(&records, &current, &Targets::of(&current), &settings, "t").unwrap();
        assert_eq!(cal.proposal.coefficients.targets, current.targets);
        // A line given instead becomes the proposal's [targets], the scale kept.
        let line = Targets::Linear {
            from: 600.0,
            step: 200.0,
        };
        let cal = calibrate(&records, &current, &line, &settings, "t").unwrap();
        let written = cal.proposal.coefficients.targets.clone().unwrap();
        assert_eq!((written.from, written.step), (600.0, 200.0));
        assert_eq!(written.scale, current.targets().scale);
        assert!(cal.proposal.changed);
        assert_eq!(
            line.target(3.0),
            Some(cal.proposal.coefficients.targets().target(3.0))
        );
    }

    #[test]
    fn target_tables_parse_and_refuse_nonsense() {
        let t = Targets::parse_table("1=600, 2=800,3.5=1100").unwrap();
        assert_eq!(t.target(2.0), Some(800.0));
        assert_eq!(t.target(3.5), Some(1100.0));
        assert_eq!(t.target(4.0), None);
        assert!(Targets::parse_table("1=600,1=700").is_err());
        assert!(Targets::parse_table("1:600").is_err());
        assert!(Targets::parse_table("").is_err());
        let l = Targets::Linear {
            from: 600.0,
            step: 200.0,
        };
        assert_eq!(l.target(10.0), Some(2400.0));
    }
}
