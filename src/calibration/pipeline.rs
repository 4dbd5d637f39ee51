//! One calibration pass, shared by `ladder calibrate` and the simulator: select the games,
//! estimate each level, propose the next coefficients.

use std::collections::BTreeMap;

use super::estimate::{Estimate, Prior, estimate};
use super::select::{Filter, Lineage, Selection, select_with};
use super::update::{LevelInput, Proposal, UpdateConfig, UpdateError, propose};
use crate::levels::{Coefficients, level_key};
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
    fn levels(&self) -> Vec<f64> {
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
    pub update: UpdateConfig,
    /// Older coefficients versions by number (the history directory): a game of a version
    /// outside the window counts for a level that plays the same in the current version.
    pub history: BTreeMap<u32, Coefficients>,
}

/// The outcome of one pass.
#[derive(Clone, Debug)]
pub struct Calibration {
    pub selection: Selection,
    pub proposal: Proposal,
    pub prior: String,
    /// Levels whose estimate failed, with why.
    pub estimate_errors: Vec<(f64, String)>,
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
    let selection = select_with(records, &settings.filter, Some(lineage));
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
        let estimate = selection.levels.get(key).and_then(|games| {
            let center = target.unwrap_or_else(|| {
                games.observations.iter().map(|o| o.opponent).sum::<f64>()
                    / games.observations.len() as f64
            });
            let prior = prior(settings.prior_draws, center);
            estimate(&games.observations, prior)
                .map_err(|e| estimate_errors.push((level, e.to_string())))
                .ok()
        });
        inputs.push(LevelInput {
            level,
            target,
            estimate,
        });
    }
    let proposal = propose(current, &inputs, &settings.update, ratings_source)?;
    Ok(Calibration {
        selection,
        proposal,
        prior: prior(settings.prior_draws, 0.0).describe(),
        estimate_errors,
    })
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
