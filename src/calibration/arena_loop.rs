//! `ladder calibrate --arena`: the calibration loop played offline, against the anchors.
//!
//! Each level plays batches of games against the anchors that say most about it (expected score
//! nearest ½, discounted by the anchor's own uncertainty). Once every level has `per_cycle`
//! games at its current parameters, the live loop's own pass (pipeline.rs: select, estimate,
//! update.rs) proposes the next coefficients version and it is applied; a level that does not
//! move keeps its games (select.rs carries them over). When nothing moves, the levels with fewer
//! than `final_games` games get more, until every level has them or the game budget is spent;
//! more games shrink the intervals, and a level found off target moves again. Then, while a gap
//! between adjacent levels is more than 20% off the mean gap, the likelier culprit of the worst
//! such gap plays on (up to `gap_games`): a gap's own interval at 200 games a level (±75) is
//! wider than the ±20% asked (±43), so it takes more games to tell an uneven step from noise.
//!
//! Everything the loop knows lives in its results file and the coefficients file (with its
//! history/), so after Ctrl-C or a crash the same command continues where it stopped: a batch's
//! match id and seed follow from the version, the level and the games it already has.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, bail};
use clap::Parser;

use super::pipeline::{self, Calibration, Settings, Targets};
use super::{apply, report, svg};
use crate::anchors::AnchorsFile;
use crate::arena::options::ArenaOptions;
use crate::arena::run_match;
use crate::levels::{Coefficients, level_key};
use crate::rating::{Estimate, expected, glicko_g};
use crate::results::{GameRecord, Source, read_results};

/// What the loop is asked to do besides the live pass's own settings.
#[derive(Clone, Debug)]
pub struct LoopSettings {
    /// The levels calibrated.
    pub levels: Vec<f64>,
    /// Games a level needs at its current parameters before it may move.
    pub per_cycle: usize,
    /// Games every level gets at the parameters that no longer move.
    pub final_games: usize,
    /// Games a level at an uneven gap may get (≥ `final_games`; equal: no gap phase).
    pub gap_games: usize,
    /// Games the loop may play in all (the results file's arena games count).
    pub budget: usize,
    /// Games per batch (one level against its anchors).
    pub batch: usize,
    /// Anchors each batch plays.
    pub anchors_per_level: usize,
    /// Anchors whose rating is less certain than this (standard error, Elo) are not used.
    pub max_anchor_se: f64,
    /// Games played at once in one batch.
    pub concurrency: usize,
    /// Levels whose batches may play at once (each with `concurrency` games at once): a
    /// level's games depend only on its own earlier games, so in a cycle the levels play side
    /// by side the same games as one after the other.
    pub parallel_levels: usize,
    /// Base of every batch's seed.
    pub seed: u64,
    pub anchors_file: Option<PathBuf>,
    pub results: PathBuf,
    pub coefficients: PathBuf,
    pub history_dir: PathBuf,
    pub report_dir: PathBuf,
}

/// The loop's next move, decided from the games at the current parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Play `games` games of `level` against its anchors.
    Play {
        level: f64,
        games: usize,
        why: &'static str,
    },
    /// Every level has its cycle's games and at least one would move: write the proposal.
    Apply,
    /// What comes next depends on the batches in flight: wait for one to end.
    Wait,
    /// Stop, saying why.
    Done(String),
}

/// Decides the next step. `games` holds each calibrated level's games at its current
/// parameters, `busy` the levels with a batch in flight and the games it has still to play
/// (they count against the budget), `moves`
/// whether the pass would move a level, `played` the loop's games so far, `gap_level` the
/// level to look at closer for an uneven gap ([`gap_culprit`]). A level in flight never plays
/// another batch, and what needs every level's games settled (a proposal, the next phase, the
/// end) waits for the batches in flight.
pub fn next_step(
    levels: &[f64],
    games: &BTreeMap<String, usize>,
    busy: &BTreeMap<String, usize>,
    moves: bool,
    played: usize,
    gap_level: Option<f64>,
    cfg: &LoopSettings,
) -> Step {
    let settled = busy.is_empty();
    let played = played + busy.values().sum::<usize>();
    if played >= cfg.budget {
        if !settled {
            return Step::Wait;
        }
        return Step::Done(format!("the budget of {} games is spent", cfg.budget));
    }
    let left = cfg.budget - played;
    let have = |level: f64| games.get(&level_key(level)).copied().unwrap_or(0);
    let free = |level: f64| !busy.contains_key(&level_key(level));
    // The free level furthest from `need` plays first; ties go to the lower level.
    let neediest = |need: usize| {
        levels
            .iter()
            .copied()
            .filter(|&l| free(l) && have(l) < need)
            .min_by(|&a, &b| have(a).cmp(&have(b)).then(a.total_cmp(&b)))
    };
    if let Some(level) = neediest(cfg.per_cycle) {
        return Step::Play {
            level,
            games: (cfg.per_cycle - have(level)).min(cfg.batch).min(left),
            why: "cycle",
        };
    }
    if levels.iter().any(|&l| !free(l) && have(l) < cfg.per_cycle) {
        return Step::Wait;
    }
    if moves {
        return if settled { Step::Apply } else { Step::Wait };
    }
    if let Some(level) = neediest(cfg.final_games) {
        return Step::Play {
            level,
            games: (cfg.final_games - have(level)).min(cfg.batch).min(left),
            why: "final",
        };
    }
    if !settled {
        return Step::Wait;
    }
    if let Some(level) = gap_level.filter(|&l| have(l) < cfg.gap_games) {
        return Step::Play {
            level,
            games: (cfg.gap_games - have(level)).min(cfg.batch).min(left),
            why: "gap",
        };
    }
    if cfg.gap_games > cfg.final_games {
        return Step::Done(format!(
            "every level has {} games at parameters that no longer move, and no uneven gap \
             has a level that may play more (up to {})",
            cfg.final_games, cfg.gap_games
        ));
    }
    Step::Done(format!(
        "every level has {} games at parameters that no longer move",
        cfg.final_games
    ))
}

/// The largest relative deviation of a gap from the mean gap that is still even.
pub const GAP_TOLERANCE: f64 = 0.20;

/// The level to give more games for an uneven gap: of the gaps more than [`GAP_TOLERANCE`]
/// off the mean gap, worst first, the level of the pair further from its target relative to
/// its interval, leaving out levels at the floor or the ceiling (more games cannot move them)
/// and those that already have `cap` games. `None` when the gaps are even or nobody may play.
pub fn gap_culprit(levels: &[LevelResult], pinned: &[f64], cap: usize) -> Option<f64> {
    if levels.len() < 3 {
        return None;
    }
    let (gaps, mean) = gaps(levels);
    if mean <= 0.0 {
        return None;
    }
    let mut uneven: Vec<(f64, usize)> = gaps
        .iter()
        .enumerate()
        .map(|(i, g)| (((g - mean) / mean).abs(), i))
        .filter(|&(dev, _)| dev > GAP_TOLERANCE)
        .collect();
    uneven.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    for (_, i) in uneven {
        let mut pair = [&levels[i], &levels[i + 1]];
        let z = |l: &LevelResult| (l.rating - l.target).abs() / l.se.max(1.0);
        pair.sort_by(|a, b| z(b).total_cmp(&z(a)));
        if let Some(l) = pair
            .iter()
            .find(|l| !pinned.contains(&l.level) && l.games < cap)
        {
            return Some(l.level);
        }
    }
    None
}

/// An anchor as the loop sees it: name, rating, standard error.
#[derive(Clone, Debug, PartialEq)]
pub struct RatedAnchor {
    pub name: String,
    pub rating: f64,
    pub se: f64,
}

/// The `k` anchors that tell most about a player rated about `rating`: the Fisher information
/// of one game, p(1 − p) with p the expected score, times g(SE)² for the anchor's own
/// uncertainty. Ties go to the name, so the choice is reproducible.
pub fn choose_anchors(anchors: &[RatedAnchor], rating: f64, k: usize) -> Vec<String> {
    let mut scored: Vec<(f64, &RatedAnchor)> = anchors
        .iter()
        .map(|a| {
            let p = expected(rating, a.rating);
            (p * (1.0 - p) * glicko_g(a.se).powi(2), a)
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.name.cmp(&b.1.name)));
    scored
        .into_iter()
        .take(k)
        .map(|(_, a)| a.name.clone())
        .collect()
}

/// One level against its target, for the shape check.
#[derive(Clone, Debug, PartialEq)]
pub struct LevelResult {
    pub level: f64,
    pub target: f64,
    pub rating: f64,
    pub se: f64,
    pub games: usize,
}

/// The ladder's shape as issue 9 asks for it, each criterion with what it found.
#[derive(Clone, Debug, PartialEq)]
pub struct Shape {
    pub increasing: bool,
    /// The mean gap between adjacent levels and the largest relative deviation from it.
    pub mean_gap: f64,
    pub worst_gap_deviation: f64,
    /// The largest distance of a level from its target.
    pub worst_miss: f64,
    pub fewest_games: usize,
}

impl Shape {
    /// Strictly increasing, gaps within ±20% of their mean, each level within ±75 of its target.
    pub fn met(&self, min_games: usize) -> bool {
        self.increasing
            && self.worst_gap_deviation <= 0.20
            && self.worst_miss <= 75.0
            && self.fewest_games >= min_games
    }
}

/// The rating gaps between adjacent levels (in level order) and their mean.
fn gaps(levels: &[LevelResult]) -> (Vec<f64>, f64) {
    let gaps: Vec<f64> = levels
        .windows(2)
        .map(|w| w[1].rating - w[0].rating)
        .collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    (gaps, mean)
}

/// Checks the ladder's shape from the levels' estimates (in level order).
pub fn shape(levels: &[LevelResult]) -> Option<Shape> {
    if levels.len() < 2 {
        return None;
    }
    let (gaps, mean_gap) = gaps(levels);
    Some(Shape {
        increasing: gaps.iter().all(|&g| g > 0.0),
        mean_gap,
        worst_gap_deviation: gaps
            .iter()
            .map(|g| ((g - mean_gap) / mean_gap).abs())
            .fold(0.0, f64::max),
        worst_miss: levels
            .iter()
            .map(|l| (l.rating - l.target).abs())
            .fold(0.0, f64::max),
        fewest_games: levels.iter().map(|l| l.games).min().unwrap_or(0),
    })
}

/// The seed of a batch: FNV-1a of its match id, mixed with the loop's seed.
fn batch_seed(base: u64, match_id: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in match_id.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^ base.wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

#[derive(Parser)]
struct ArenaCommand {
    #[command(flatten)]
    options: ArenaOptions,
}

/// Runs the loop until it is done, the budget is spent or Ctrl-C stops a batch.
pub fn run(
    cfg: &LoopSettings,
    targets: &Targets,
    settings_of: impl Fn(&Coefficients) -> anyhow::Result<Settings>,
) -> anyhow::Result<()> {
    if cfg.levels.is_empty() {
        bail!("--arena needs levels to calibrate (--level)");
    }
    for &level in &cfg.levels {
        if targets.target(level).is_none() {
            bail!("level {level} has no target");
        }
    }
    let anchors_file = match &cfg.anchors_file {
        Some(path) => AnchorsFile::load(path)?,
        None => AnchorsFile::builtin(),
    };
    let mut run = LoopRun {
        cfg,
        targets,
        settings_of: &settings_of,
        anchors: usable_anchors(cfg, &anchors_file)?,
        anchors_file: &anchors_file,
        started: Instant::now(),
        played_here: 0,
    };
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        // Level key → games of its batch in flight.
        // Level key → the match id and games of its batch in flight.
        let mut busy: BTreeMap<String, (String, usize)> = BTreeMap::new();
        let mut interrupted = false;
        loop {
            let turn = run.turn(loop_records(&cfg.results)?)?;
            let step = if interrupted {
                Step::Wait
            } else {
                turn.next_step(cfg, targets, &busy)
            };
            match step {
                Step::Play {
                    level,
                    games: n,
                    why,
                } if busy.len() < cfg.parallel_levels.max(1) => {
                    let (match_id, options) = run.plan_batch(&turn, level, n, why, busy.len())?;
                    busy.insert(level_key(level), (match_id.clone(), n));
                    let done = done_tx.clone();
                    scope.spawn(move || {
                        let _sent = done.send((level, match_id, run_match(&options)));
                    });
                }
                Step::Play { .. } | Step::Wait => {
                    if busy.is_empty() {
                        if !interrupted {
                            bail!("the loop waits with no batch in flight");
                        }
                        run.report(&turn, "interrupted")?;
                        eprintln!(
                            "Interrupted: the games played are in {}; the same command continues.",
                            cfg.results.display()
                        );
                        return Ok(());
                    }
                    let (level, match_id, summary) =
                        done_rx.recv().context("a batch ended without a word")?;
                    busy.remove(&level_key(level));
                    let summary = summary.with_context(|| format!("batch {match_id}"))?;
                    run.played_here += summary.games.len();
                    if summary.interrupted {
                        interrupted = true;
                    } else if summary.games.is_empty() {
                        bail!("batch {match_id} played no game");
                    }
                }
                Step::Apply => run.apply(&turn)?,
                Step::Done(why) => return run.finish(turn, &why),
            }
        }
    })
}

/// The anchors of `file` with a rating and a standard error of at most `max_anchor_se`; an
/// error when they are too few for a batch.
fn usable_anchors(cfg: &LoopSettings, file: &AnchorsFile) -> anyhow::Result<Vec<RatedAnchor>> {
    let anchors: Vec<RatedAnchor> = file
        .anchors
        .iter()
        .filter_map(|a| {
            Some(RatedAnchor {
                name: a.name.clone(),
                rating: a.fitted.rating?,
                se: a.fitted.se.unwrap_or(0.0),
            })
        })
        .filter(|a| a.se <= cfg.max_anchor_se)
        .collect();
    if anchors.len() < cfg.anchors_per_level.max(1) {
        bail!(
            "{} anchors with a rating and a standard error ≤ {}: too few for {} per level",
            anchors.len(),
            cfg.max_anchor_se,
            cfg.anchors_per_level
        );
    }
    Ok(anchors)
}

/// What the loop's turns share: its settings, targets and anchors, and its clock.
struct LoopRun<'a> {
    cfg: &'a LoopSettings,
    targets: &'a Targets,
    settings_of: &'a dyn Fn(&Coefficients) -> anyhow::Result<Settings>,
    anchors_file: &'a AnchorsFile,
    anchors: Vec<RatedAnchor>,
    started: Instant,
    /// Games played by this run (not the ones it resumed from), for the time estimate.
    played_here: usize,
}

/// One turn of the loop: the loop's games so far and the live pass over them against the
/// coefficients file as it is now.
struct Turn {
    records: Vec<GameRecord>,
    current: Coefficients,
    /// The pass's settings, with the older versions from the history.
    settings: Settings,
    cal: Calibration,
    /// Games per level at the current parameters.
    games: BTreeMap<String, usize>,
}

impl Turn {
    /// The loop's next step: play a batch, apply the proposal, wait for a batch in flight
    /// (`busy`: level key → its match id and games) or stop.
    fn next_step(
        &self,
        cfg: &LoopSettings,
        targets: &Targets,
        busy: &BTreeMap<String, (String, usize)>,
    ) -> Step {
        let levels = &self.cal.proposal.levels;
        let moves = levels
            .iter()
            .any(|u| cfg.levels.contains(&u.level) && u.status == super::update::Status::Moved);
        // Levels that cannot move the way they miss (at the floor or the ceiling).
        let pinned: Vec<f64> = levels
            .iter()
            .filter(|u| {
                matches!(
                    u.status,
                    super::update::Status::AtFloor | super::update::Status::AtCeiling
                )
            })
            .map(|u| u.level)
            .collect();
        let results = level_results(cfg, &self.cal, targets);
        let gap_level = gap_culprit(&results, &pinned, cfg.gap_games);
        let played = self.records.len();
        // The batches in flight have written some of their games already: what counts
        // against the budget is what they have still to play.
        let to_play: BTreeMap<String, usize> = busy
            .iter()
            .map(|(level, (match_id, games))| {
                let prefix = format!("{match_id}-");
                let written = self
                    .records
                    .iter()
                    .filter(|r| r.game_id.as_str().starts_with(&prefix))
                    .count();
                (level.clone(), games.saturating_sub(written))
            })
            .collect();
        next_step(
            &cfg.levels,
            &self.games,
            &to_play,
            moves,
            played,
            gap_level,
            cfg,
        )
    }

    /// The games `level` has at its current parameters.
    fn have(&self, level: f64) -> usize {
        self.games.get(&level_key(level)).copied().unwrap_or(0)
    }
}

impl LoopRun<'_> {
    /// One pass of the live loop over `records` against the coefficients file as it is now.
    fn turn(&self, records: Vec<GameRecord>) -> anyhow::Result<Turn> {
        let current = Coefficients::load(&self.cfg.coefficients)?;
        let mut settings = (self.settings_of)(&current)?;
        settings.history = apply::older_versions(
            &records,
            &settings.filter.versions,
            &current,
            &self.cfg.history_dir,
        );
        let cal = pipeline::calibrate(&records, &current, self.targets, &settings, "calibrated")?;
        Ok(Turn {
            games: level_games(&cal),
            records,
            current,
            settings,
            cal,
        })
    }

    /// The batch of `n` games of `level` against the anchors that tell most about it (its
    /// match id and arena options), said on stderr; `in_flight` batches already play.
    fn plan_batch(
        &self,
        turn: &Turn,
        level: f64,
        n: usize,
        why: &str,
        in_flight: usize,
    ) -> anyhow::Result<(String, ArenaOptions)> {
        let cfg = self.cfg;
        let have = turn.have(level);
        let guess = turn
            .cal
            .proposal
            .levels
            .iter()
            .find(|u| u.level == level)
            .and_then(|u| u.estimate.filter(|e| e.games >= 10))
            .map_or_else(
                || self.targets.target(level).expect("checked above"),
                |e| e.rating,
            );
        let chosen = choose_anchors(&self.anchors, guess, cfg.anchors_per_level);
        let match_id = format!(
            "cal-v{}-l{}-g{have}",
            turn.current.version,
            level_key(level)
        );
        let per_pairing = n.div_ceil(chosen.len()).max(1);
        let remaining = remaining_games(&cfg.levels, &turn.games, cfg);
        let rate = (self.played_here > 0)
            .then(|| self.started.elapsed().as_secs_f64() / self.played_here as f64);
        eprintln!(
            "[{}] v{} level {} ({why}, {have} games, ~{:.0}): {} games against {}; \
             {}/{} games of the budget played{}{}",
            elapsed_text(self.started.elapsed().as_secs_f64()),
            turn.current.version,
            level_key(level),
            guess,
            per_pairing * chosen.len(),
            chosen.join(", "),
            turn.records.len(),
            cfg.budget,
            rate.map_or_else(String::new, |r| format!(
                ", this phase ~{remaining} games ≈ {} left",
                elapsed_text(r * remaining as f64)
            )),
            if in_flight > 0 {
                format!(" ({in_flight} other batches in flight)")
            } else {
                String::new()
            }
        );
        let options = batch_options(cfg, level, &chosen, per_pairing, &match_id)?;
        Ok((match_id, options))
    }

    /// Writes the turn's proposal as the next coefficients version, says which levels moved
    /// and writes the report.
    fn apply(&self, turn: &Turn) -> anyhow::Result<()> {
        let (cfg, cal, current) = (self.cfg, &turn.cal, &turn.current);
        let mut next = cal.proposal.coefficients.clone();
        next.ratings_source = format!(
            "calibrated against the anchors ({}) from {} arena games, version {}",
            self.anchors_file.scale, cal.selection.used, current.version
        );
        let kept = apply::apply(&cfg.coefficients, current, &next, &cfg.history_dir)?;
        let moved: Vec<String> = cal
            .proposal
            .levels
            .iter()
            .filter(|u| u.status == super::update::Status::Moved)
            .map(|u| {
                format!(
                    "{} ({:+.0})",
                    level_key(u.level),
                    u.estimate.map_or(0.0, |e| e.rating) - u.target.unwrap_or(0.0)
                )
            })
            .collect();
        eprintln!(
            "[{}] version {} written (version {} kept as {}); moved: {}",
            elapsed_text(self.started.elapsed().as_secs_f64()),
            next.version,
            current.version,
            kept.display(),
            moved.join(", ")
        );
        self.report(turn, "cycle")?;
        Ok(())
    }

    /// The end: the final ratings go into the file (the parameters stay: nothing moves), and
    /// the report of a fresh pass is written and printed.
    fn finish(&self, turn: Turn, why: &str) -> anyhow::Result<()> {
        let cal = &turn.cal;
        if cal.proposal.changed {
            let mut next = cal.proposal.coefficients.clone();
            next.ratings_source = format!(
                "calibrated against the anchors ({}) from {} arena games at version {}",
                self.anchors_file.scale, cal.selection.used, turn.current.version
            );
            apply::apply(
                &self.cfg.coefficients,
                &turn.current,
                &next,
                &self.cfg.history_dir,
            )?;
        }
        let now = self.turn(turn.records)?;
        let text = self.report(&now, why)?;
        println!("{text}");
        eprintln!("Done: {why}.");
        Ok(())
    }

    /// Writes the loop's report of `turn` in `state` and returns its Markdown.
    fn report(&self, turn: &Turn, state: &str) -> anyhow::Result<String> {
        write_report(
            self.cfg,
            &turn.cal,
            (&turn.current, &turn.settings.history),
            self.targets,
            &turn.records,
            self.anchors_file,
            state,
        )
    }
}

/// Games still wanted in the current phase (for the time estimate).
fn remaining_games(levels: &[f64], games: &BTreeMap<String, usize>, cfg: &LoopSettings) -> usize {
    let have = |l: f64| games.get(&level_key(l)).copied().unwrap_or(0);
    let short: usize = levels
        .iter()
        .map(|&l| cfg.per_cycle.saturating_sub(have(l)))
        .sum();
    if short > 0 {
        short
    } else {
        levels
            .iter()
            .map(|&l| cfg.final_games.saturating_sub(have(l)))
            .sum()
    }
}

fn elapsed_text(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// The arena games of the loop's results file (a missing file is an empty start).
fn loop_records(path: &Path) -> anyhow::Result<Vec<GameRecord>> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    let read = read_results(&[path.to_path_buf()]).context("reading the loop's results")?;
    for w in &read.warnings {
        tracing::warn!("skipped {w}");
    }
    Ok(read
        .records
        .into_iter()
        .filter(|r| r.header.source == Source::Arena)
        .collect())
}

/// Games per level at the current parameters, from the pass's selection.
fn level_games(cal: &Calibration) -> BTreeMap<String, usize> {
    cal.selection
        .levels
        .iter()
        .map(|(k, l)| (k.clone(), l.observations.len()))
        .collect()
}

/// The arena options of one batch: one level against its anchors, not judged (speed).
fn batch_options(
    cfg: &LoopSettings,
    level: f64,
    anchors: &[String],
    per_pairing: usize,
    match_id: &str,
) -> anyhow::Result<ArenaOptions> {
    let mut argv: Vec<String> = vec![
        "arena".into(),
        "--level".into(),
        level_key(level),
        "--anchor".into(),
        anchors.join(","),
        "--gauntlet".into(),
        "--games-per-pairing".into(),
        per_pairing.to_string(),
        "--concurrency".into(),
        cfg.concurrency.to_string(),
        "--seed".into(),
        batch_seed(cfg.seed, match_id).to_string(),
        "--match-id".into(),
        match_id.into(),
        "--results".into(),
        cfg.results.display().to_string(),
        "--coefficients".into(),
        cfg.coefficients.display().to_string(),
        "--judge-depth".into(),
        "0".into(),
        "--perf".into(),
        "blitz".into(),
    ];
    if let Some(path) = &cfg.anchors_file {
        argv.push("--anchors-file".into());
        argv.push(path.display().to_string());
    }
    Ok(ArenaCommand::try_parse_from(argv)
        .context("building the batch's arena options")?
        .options)
}

/// Each calibrated level's estimate at the current parameters against its target.
fn level_results(cfg: &LoopSettings, cal: &Calibration, targets: &Targets) -> Vec<LevelResult> {
    cfg.levels
        .iter()
        .filter_map(|&level| {
            let e: &Estimate = cal
                .proposal
                .levels
                .iter()
                .find(|u| u.level == level)?
                .estimate
                .as_ref()?;
            Some(LevelResult {
                level,
                target: targets.target(level)?,
                rating: e.rating,
                se: e.se,
                games: e.games,
            })
        })
        .collect()
}

/// Writes the loop's report (Markdown and SVG) and returns the Markdown.
fn write_report(
    cfg: &LoopSettings,
    cal: &Calibration,
    (current, history): (&Coefficients, &BTreeMap<u32, Coefficients>),
    targets: &Targets,
    records: &[GameRecord],
    anchors: &AnchorsFile,
    state: &str,
) -> anyhow::Result<String> {
    let mut text = String::new();
    let current_version = current.version;
    let _ = writeln!(
        text,
        "# Arena calibration against the anchors\n\nState: {state}. Coefficients {} at version \
         {current_version}; {} arena games in {}.\n",
        cfg.coefficients.display(),
        records.len(),
        cfg.results.display()
    );
    ladder_section(
        &mut text,
        cfg,
        &level_results(cfg, cal, targets),
        current_version,
    );
    // The games that count now: this version's, and older ones where the level plays the same.
    let counts = |r: &GameRecord| {
        r.header.coefficients_version == current.version
            || history
                .get(&r.header.coefficients_version)
                .is_some_and(|old| super::select::plays_alike(old, current, r.header.level))
    };
    text.push_str(&per_anchor_table(records, &cfg.levels, counts));
    text.push_str(&history_table(cfg, targets, records));
    let _ = writeln!(
        text,
        "\nRatings are on the anchors' scale ({}: the anchors' common offset is uncertain by ±{:.0}, \
         shared by every level and not in the intervals above).\n",
        anchors.scale,
        anchors.scale_sd.unwrap_or(0.0)
    );
    let ctx = report::ReportContext {
        perf: "blitz".to_string(),
        versions: format!("{current_version}"),
        reading: report::Reading {
            inputs: vec![cfg.results.display().to_string()],
            ..report::Reading::default()
        },
        lichess: BTreeMap::new(),
        outcome: state.to_string(),
        targets: targets.describe(current),
        svg_name: Some("calibration.svg".to_string()),
    };
    text.push_str("\n# The last pass in detail\n\n");
    text.push_str(&report::markdown(cal, &ctx));
    write_report_files(cfg, cal, anchors, &text)?;
    Ok(text)
}

/// The ladder at the current version: each level's rating, miss and gap to the level below
/// with their intervals, then the shape check when every level has an estimate.
fn ladder_section(
    text: &mut String,
    cfg: &LoopSettings,
    results: &[LevelResult],
    current_version: u32,
) {
    let _ = writeln!(
        text,
        "## The ladder at version {current_version}\n\n| level | target | rating | ±95% | miss | gap | gap ±95% | games |\n|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let mut previous: Option<&LevelResult> = None;
    for r in results {
        // A gap's interval: the two levels' estimates are independent (different games).
        let gap = previous.map_or_else(
            || (String::new(), String::new()),
            |p| {
                (
                    format!("{:.0}", r.rating - p.rating),
                    format!("{:.0}", 1.96 * r.se.hypot(p.se)),
                )
            },
        );
        let _ = writeln!(
            text,
            "| {} | {:.0} | {:.0} | {:.0} | {:+.0} | {} | {} | {} |",
            level_key(r.level),
            r.target,
            r.rating,
            1.96 * r.se,
            r.rating - r.target,
            gap.0,
            gap.1,
            r.games
        );
        previous = Some(r);
    }
    if results.len() == cfg.levels.len()
        && let Some(s) = shape(results)
    {
        let _ = writeln!(
            text,
            "\nShape: strictly increasing: {}; mean gap {:.0}, worst gap {:.0}% off it (≤ 20% asked); \
             worst miss {:.0} Elo (≤ 75 asked); fewest games {} (≥ {} asked): {}.",
            if s.increasing { "yes" } else { "no" },
            s.mean_gap,
            100.0 * s.worst_gap_deviation,
            s.worst_miss,
            s.fewest_games,
            cfg.final_games,
            if s.met(cfg.final_games) {
                "met"
            } else {
                "not met"
            }
        );
    }
}

/// Writes the report's Markdown `text` and its plot, with the anchors marked, to the report
/// directory.
fn write_report_files(
    cfg: &LoopSettings,
    cal: &Calibration,
    anchors: &AnchorsFile,
    text: &str,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(&cfg.report_dir)
        .with_context(|| format!("creating {}", cfg.report_dir.display()))?;
    crate::atomic_file::write_atomically(&cfg.report_dir.join("report.md"), text)?;
    let marks: Vec<(String, f64)> = anchors
        .anchors
        .iter()
        .filter_map(|a| Some((a.name.clone(), a.fitted.rating?)))
        .collect();
    crate::atomic_file::write_atomically(
        &cfg.report_dir.join("calibration.svg"),
        svg::plot_with_anchors(cal, "blitz", &marks),
    )?;
    Ok(())
}

/// Per level, over the games that count at the current parameters: games and score against
/// each anchor.
fn per_anchor_table(
    records: &[GameRecord],
    levels: &[f64],
    counts: impl Fn(&GameRecord) -> bool,
) -> String {
    let mut table: BTreeMap<String, BTreeMap<String, (usize, f64)>> = BTreeMap::new();
    for r in records.iter().filter(|r| counts(r)) {
        if !levels.contains(&r.header.level) || r.fault.is_some() {
            continue;
        }
        let Some(score) = r.result.score() else {
            continue;
        };
        let e = table
            .entry(level_key(r.header.level))
            .or_default()
            .entry(r.opponent.name.clone())
            .or_default();
        e.0 += 1;
        e.1 += score;
    }
    let mut text = String::from(
        "\n## Scores against each anchor (the games that count now)\n\n| level | anchor: score (games) |\n|---:|---|\n",
    );
    for &level in levels {
        let Some(row) = table.get(&level_key(level)) else {
            continue;
        };
        let cells: Vec<String> = row
            .iter()
            .map(|(name, (n, s))| format!("{name}: {:.0}% ({n})", 100.0 * s / *n as f64))
            .collect();
        let _ = writeln!(text, "| {} | {} |", level_key(level), cells.join(", "));
    }
    text
}

/// Per version: each level's distance from its target, from that version's own games.
fn history_table(cfg: &LoopSettings, targets: &Targets, records: &[GameRecord]) -> String {
    let mut by_version: BTreeMap<u32, BTreeMap<String, Vec<crate::rating::Observation>>> =
        BTreeMap::new();
    for r in records {
        let (Some(score), Some(opponent)) = (r.result.score(), r.opponent.rating) else {
            continue;
        };
        if r.fault.is_some() || !cfg.levels.contains(&r.header.level) {
            continue;
        }
        by_version
            .entry(r.header.coefficients_version)
            .or_default()
            .entry(level_key(r.header.level))
            .or_default()
            .push(crate::rating::Observation::new(opponent, score));
    }
    let mut text = String::from(
        "\n## The loop so far: each version's games, each level's rating − target (games)\n\n| version | games |",
    );
    for &l in &cfg.levels {
        let _ = write!(text, " L{} |", level_key(l));
    }
    text.push_str("\n|---:|---:|");
    for _ in &cfg.levels {
        text.push_str("---:|");
    }
    text.push('\n');
    for (version, levels) in &by_version {
        let total: usize = levels.values().map(Vec::len).sum();
        let _ = write!(text, "| {version} | {total} |");
        for &l in &cfg.levels {
            let cell = levels
                .get(&level_key(l))
                .and_then(|obs| {
                    let target = targets.target(l)?;
                    let e = crate::rating::estimate(
                        obs,
                        crate::rating::Prior::VirtualDraws {
                            count: 2,
                            center: target,
                        },
                    )
                    .ok()?;
                    Some(format!("{:+.0} ({})", e.rating - target, obs.len()))
                })
                .unwrap_or_default();
            let _ = write!(text, " {cell} |");
        }
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> LoopSettings {
        LoopSettings {
            levels: vec![1.0, 2.0, 3.0],
            per_cycle: 40,
            final_games: 200,
            gap_games: 200,
            budget: 1000,
            batch: 12,
            anchors_per_level: 3,
            max_anchor_se: 150.0,
            concurrency: 1,
            parallel_levels: 1,
            seed: 1,
            anchors_file: None,
            results: PathBuf::from("r.jsonl"),
            coefficients: PathBuf::from("c.toml"),
            history_dir: PathBuf::from("history"),
            report_dir: PathBuf::from("report"),
        }
    }

    fn play(level: f64, games: usize, why: &'static str) -> Step {
        Step::Play { level, games, why }
    }

    fn games(list: &[(f64, usize)]) -> BTreeMap<String, usize> {
        list.iter().map(|&(l, n)| (level_key(l), n)).collect()
    }

    #[test]
    fn a_level_short_of_its_cycle_plays_before_anything_moves() {
        let c = cfg();
        // Level 2 has fewest games: it plays, a batch at most, and only what it lacks.
        let g = games(&[(1.0, 30), (2.0, 4), (3.0, 40)]);
        assert_eq!(
            next_step(&c.levels, &g, &BTreeMap::new(), true, 100, None, &c),
            play(2.0, 12, "cycle")
        );
        let g = games(&[(1.0, 35), (2.0, 40), (3.0, 40)]);
        assert_eq!(
            next_step(&c.levels, &g, &BTreeMap::new(), true, 100, None, &c),
            play(1.0, 5, "cycle")
        );
        // A level never seen has no games at all.
        let g = games(&[(1.0, 40), (3.0, 40)]);
        assert!(matches!(
            next_step(&c.levels, &g, &BTreeMap::new(), false, 80, None, &c),
            Step::Play { level: 2.0, .. }
        ));
    }

    #[test]
    fn a_full_cycle_applies_when_a_level_moves_and_else_plays_on_to_the_final_count() {
        let c = cfg();
        let g = games(&[(1.0, 40), (2.0, 52), (3.0, 200)]);
        assert_eq!(
            next_step(&c.levels, &g, &BTreeMap::new(), true, 292, None, &c),
            Step::Apply
        );
        assert_eq!(
            next_step(&c.levels, &g, &BTreeMap::new(), false, 292, None, &c),
            play(1.0, 12, "final")
        );
        let g = games(&[(1.0, 200), (2.0, 210), (3.0, 200)]);
        assert!(matches!(
            next_step(&c.levels, &g, &BTreeMap::new(), false, 610, None, &c),
            Step::Done(_)
        ));
    }

    fn result(level: f64, rating: f64, se: f64, games: usize) -> LevelResult {
        LevelResult {
            level,
            target: 200.0 * level,
            rating,
            se,
            games,
        }
    }

    #[test]
    fn an_uneven_gap_gives_more_games_to_the_level_further_off_target() {
        // Gaps 150, 250, 200: mean 200; the 150 and the 250 are 25% off it, level 2 (−50
        // at SE 25, 2σ) is the likelier culprit of both.
        let ladder = [
            result(1.0, 200.0, 25.0, 200),
            result(2.0, 350.0, 25.0, 200),
            result(3.0, 600.0, 25.0, 200),
            result(4.0, 800.0, 25.0, 200),
        ];
        assert_eq!(gap_culprit(&ladder, &[], 400), Some(2.0));
        // Level 2 has its cap: the other level of the worst gap plays.
        let mut capped = ladder.clone();
        capped[1].games = 400;
        assert_eq!(gap_culprit(&capped, &[], 400), Some(1.0));
        // At the floor more games cannot move it either.
        assert_eq!(gap_culprit(&capped, &[1.0], 400), Some(3.0));
        // Even gaps (within 20% of the mean): nobody plays on.
        let even = [
            result(1.0, 200.0, 25.0, 200),
            result(2.0, 390.0, 25.0, 200),
            result(3.0, 600.0, 25.0, 200),
            result(4.0, 800.0, 25.0, 200),
        ];
        assert_eq!(gap_culprit(&even, &[], 400), None);
    }

    #[test]
    fn the_gap_phase_comes_after_the_final_games_and_stops_at_its_cap() {
        let mut c = cfg();
        c.gap_games = 400;
        // Final games first, whatever the gaps.
        let g = games(&[(1.0, 200), (2.0, 150), (3.0, 200)]);
        assert!(matches!(
            next_step(&c.levels, &g, &BTreeMap::new(), false, 550, Some(1.0), &c),
            Step::Play {
                level: 2.0,
                why: "final",
                ..
            }
        ));
        let g = games(&[(1.0, 200), (2.0, 390), (3.0, 200)]);
        assert_eq!(
            next_step(&c.levels, &g, &BTreeMap::new(), false, 790, Some(2.0), &c),
            play(2.0, 10, "gap")
        );
        // A move found meanwhile is applied first.
        assert_eq!(
            next_step(&c.levels, &g, &BTreeMap::new(), true, 790, Some(2.0), &c),
            Step::Apply
        );
        assert!(matches!(
            next_step(&c.levels, &g, &BTreeMap::new(), false, 790, None, &c),
            Step::Done(why) if why.contains("uneven gap")
        ));
    }

    #[test]
    fn the_budget_stops_the_loop_and_caps_the_last_batch() {
        let c = cfg();
        let g = games(&[(1.0, 0), (2.0, 0), (3.0, 0)]);
        assert!(matches!(
            next_step(&c.levels, &g, &BTreeMap::new(), false, 1000, None, &c),
            Step::Done(why) if why.contains("budget")
        ));
        assert_eq!(
            next_step(&c.levels, &g, &BTreeMap::new(), false, 995, None, &c),
            play(1.0, 5, "cycle")
        );
    }

    #[test]
    fn levels_play_side_by_side_but_settle_before_anything_moves_or_ends() {
        let c = cfg();
        let g = games(&[(1.0, 24), (2.0, 12), (3.0, 36)]);
        let busy = games(&[(2.0, 12)]);
        // Level 2 is in flight: the neediest free level plays its cycle beside it.
        assert_eq!(
            next_step(&c.levels, &g, &busy, false, 72, None, &c),
            play(1.0, 12, "cycle")
        );
        // Every free level has its cycle but level 2 is still short: nothing else starts.
        let g = games(&[(1.0, 40), (2.0, 30), (3.0, 40)]);
        assert_eq!(
            next_step(&c.levels, &g, &busy, true, 110, None, &c),
            Step::Wait
        );
        assert_eq!(
            next_step(&c.levels, &g, &busy, false, 110, None, &c),
            Step::Wait
        );
        // Final games play side by side, but a move found meanwhile waits for them to end.
        let g = games(&[(1.0, 40), (2.0, 60), (3.0, 200)]);
        assert_eq!(
            next_step(&c.levels, &g, &busy, false, 300, None, &c),
            play(1.0, 12, "final")
        );
        assert_eq!(
            next_step(&c.levels, &g, &busy, true, 300, None, &c),
            Step::Wait
        );
        // No free level needs games: the end (or the gaps) waits for the batch in flight.
        let g = games(&[(1.0, 200), (2.0, 190), (3.0, 200)]);
        assert_eq!(
            next_step(&c.levels, &g, &busy, false, 590, Some(1.0), &c),
            Step::Wait
        );
        // The games in flight count against the budget.
        let g = games(&[(1.0, 0), (2.0, 0), (3.0, 0)]);
        assert_eq!(
            next_step(&c.levels, &g, &busy, false, 983, None, &c),
            play(1.0, 5, "cycle")
        );
        assert_eq!(
            next_step(&c.levels, &g, &busy, false, 988, None, &c),
            Step::Wait
        );
    }

    #[test]
    fn anchors_near_the_rating_and_certain_are_chosen() {
        let a = |name: &str, rating: f64, se: f64| RatedAnchor {
            name: name.into(),
            rating,
            se,
        };
        let anchors = vec![
            a("far-below", 100.0, 50.0),
            a("below", 450.0, 60.0),
            a("level", 520.0, 60.0),
            a("above", 600.0, 60.0),
            a("far-above", 1500.0, 50.0),
        ];
        let mut got = choose_anchors(&anchors, 500.0, 3);
        got.sort();
        assert_eq!(got, ["above", "below", "level"]);
        // An anchor as close but far less certain tells less than a slightly farther one.
        let anchors = vec![a("close-unsure", 500.0, 400.0), a("near-sure", 580.0, 30.0)];
        assert_eq!(choose_anchors(&anchors, 500.0, 1), ["near-sure"]);
    }

    #[test]
    fn the_shape_check_finds_each_failure() {
        let ladder = |ratings: &[f64]| -> Vec<LevelResult> {
            ratings
                .iter()
                .enumerate()
                .map(|(i, &r)| LevelResult {
                    level: i as f64 + 1.0,
                    target: 300.0 + 200.0 * i as f64,
                    rating: r,
                    se: 30.0,
                    games: 200,
                })
                .collect()
        };
        let good = shape(&ladder(&[310.0, 495.0, 700.0, 905.0])).unwrap();
        assert!(good.met(200), "{good:?}");
        assert!(!good.met(201));
        // One level 100 off its target: the miss and the two gaps around it fail.
        let off = shape(&ladder(&[300.0, 600.0, 700.0, 900.0])).unwrap();
        assert!(!off.met(200));
        assert!((off.worst_miss - 100.0).abs() < 1e-9);
        assert!(off.worst_gap_deviation > 0.2);
        // Two levels as one player: not strictly increasing.
        let flat = shape(&ladder(&[300.0, 500.0, 500.0, 900.0])).unwrap();
        assert!(!flat.increasing && !flat.met(0));
    }

    #[test]
    fn batch_seeds_differ_by_match_and_repeat_for_the_same_one() {
        assert_eq!(batch_seed(1, "cal-v2-l1-g0"), batch_seed(1, "cal-v2-l1-g0"));
        assert_ne!(
            batch_seed(1, "cal-v2-l1-g0"),
            batch_seed(1, "cal-v2-l1-g12")
        );
        assert_ne!(batch_seed(1, "cal-v2-l1-g0"), batch_seed(2, "cal-v2-l1-g0"));
    }
}
