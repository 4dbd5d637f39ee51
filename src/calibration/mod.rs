//! Calibration: rating estimation from the results log, coefficient fit, report, simulation.
//! This file is the `ladder calibrate` command line; each step lives in its own module.

pub mod estimate;
pub mod fit;
pub mod pipeline;
pub mod select;
pub mod simulate;
pub mod update;

use std::path::PathBuf;

use anyhow::{Context, bail};

use crate::levels::Coefficients;
use crate::results::{Source, read_results};
use pipeline::{Settings, Targets};
use select::{Filter, Versions};
use update::UpdateConfig;

/// `ladder calibrate` options.
#[derive(Debug, clap::Args)]
pub struct CalibrateArgs {
    /// Results files (JSONL), several hosts allowed; a game id is counted once.
    #[arg(long = "results", value_name = "FILE")]
    pub results: Vec<PathBuf>,
    /// The coefficients to start from and, with --apply, to replace.
    #[arg(long, default_value = "calibration/coefficients.toml")]
    pub coefficients: PathBuf,
    /// The perf (rating pool) to calibrate.
    #[arg(long, default_value = "blitz")]
    pub perf: String,
    /// Coefficients versions to use: "4" or "3..5" (default: the current version only).
    #[arg(long, conflicts_with = "window")]
    pub versions: Option<String>,
    /// Use the N most recent versions up to the current one.
    #[arg(long)]
    pub window: Option<u32>,
    /// Sources to use (lichess, arena, sandbox); default: all.
    #[arg(long = "source", value_parser = parse_source)]
    pub sources: Vec<Source>,
    /// Targets as "1=600,2=800,…".
    #[arg(long, conflicts_with_all = ["target_from", "target_step"])]
    pub targets: Option<String>,
    /// Linear targets: level 1's target …
    #[arg(long, requires = "target_step")]
    pub target_from: Option<f64>,
    /// … and the step per level.
    #[arg(long, requires = "target_from")]
    pub target_step: Option<f64>,
    /// Levels with fewer games are left alone.
    #[arg(long, default_value_t = 30)]
    pub min_games: usize,
    /// Virtual draws against the target in each estimate (0: pure maximum likelihood).
    #[arg(long, default_value_t = 2)]
    pub prior_draws: u32,
    /// RD assumed for an opponent flagged provisional whose RD is unknown.
    #[arg(long, default_value_t = 150.0)]
    pub provisional_rd: f64,
    /// Floor of the Robbins–Monro gain.
    #[arg(long, default_value_t = 0.2)]
    pub gain_floor: f64,
    /// Largest predicted rating change of a level per cycle (Elo).
    #[arg(long, default_value_t = 600.0)]
    pub max_step: f64,
    /// Restart the gain schedule at 1 (after an engine or target change).
    #[arg(long)]
    pub restart_schedule: bool,
    /// Print the proposal and write nothing but the report (the default).
    #[arg(long, conflicts_with = "apply")]
    pub dry_run: bool,
    /// Write the new coefficients (version + 1) and keep the old file in the history.
    #[arg(long)]
    pub apply: bool,
    /// Where the previous versions go (default: history/ beside the coefficients file).
    #[arg(long)]
    pub history_dir: Option<PathBuf>,
    /// Where the Markdown report and the SVG plot go.
    #[arg(long, default_value = "calibration/report")]
    pub report_dir: PathBuf,
    /// Run the simulator instead of reading results.
    #[arg(long)]
    pub simulate: bool,
    /// Simulation: cycles.
    #[arg(long, default_value_t = 4)]
    pub cycles: u32,
    /// Simulation: games per level per cycle.
    #[arg(long, default_value_t = 200)]
    pub games: usize,
    /// Simulation: random seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Simulation: the start's b is the reference's times this factor.
    #[arg(long, default_value_t = 1.3)]
    pub b_factor: f64,
    /// Simulation: the start's d is the reference's times this factor.
    #[arg(long, default_value_t = 0.7)]
    pub d_factor: f64,
    /// Simulation: also write the first cycle's games as a results file (for benchmarks).
    #[arg(long, value_name = "FILE")]
    pub write_results: Option<PathBuf>,
}

fn parse_source(text: &str) -> Result<Source, String> {
    match text {
        "lichess" => Ok(Source::Lichess),
        "arena" => Ok(Source::Arena),
        "sandbox" => Ok(Source::Sandbox),
        _ => Err(format!(
            "unknown source `{text}` (lichess, arena or sandbox)"
        )),
    }
}

impl CalibrateArgs {
    fn settings(&self, current: &Coefficients) -> anyhow::Result<Settings> {
        let versions = match (&self.versions, self.window) {
            (Some(v), _) => Versions::parse_range(v).map_err(anyhow::Error::msg)?,
            (None, Some(0)) => bail!("--window must be at least 1"),
            (None, Some(n)) => Versions::Window {
                current: current.version,
                n,
            },
            (None, None) => Versions::Range(current.version, current.version),
        };
        if !(self.gain_floor > 0.0 && self.gain_floor <= 1.0) {
            bail!("--gain-floor must be in (0, 1]");
        }
        if !(self.max_step > 0.0) {
            bail!("--max-step must be positive");
        }
        Ok(Settings {
            filter: Filter {
                perf: self.perf.clone(),
                versions,
                sources: self.sources.clone(),
                provisional_rd: self.provisional_rd,
            },
            prior_draws: self.prior_draws,
            update: UpdateConfig {
                min_games: self.min_games,
                gain_floor: self.gain_floor,
                restart_schedule: self.restart_schedule,
                max_step_elo: self.max_step,
                ..UpdateConfig::default()
            },
        })
    }

    fn targets(&self) -> anyhow::Result<Targets> {
        if let Some(t) = &self.targets {
            return Targets::parse_table(t).map_err(|e| anyhow::anyhow!("--targets: {e}"));
        }
        if let (Some(from), Some(step)) = (self.target_from, self.target_step) {
            return Ok(Targets::Linear { from, step });
        }
        bail!("no targets: give --targets \"1=600,2=800,…\" or --target-from 600 --target-step 200")
    }
}

pub fn run(args: CalibrateArgs) -> anyhow::Result<()> {
    if args.simulate {
        return run_simulation(&args);
    }
    let current = Coefficients::load(&args.coefficients)?;
    let settings = args.settings(&current)?;
    let targets = args.targets()?;
    if args.results.is_empty() {
        bail!("no results: give --results FILE (repeatable)");
    }
    let read = read_results(&args.results).context("reading results")?;
    for w in &read.warnings {
        tracing::warn!("skipped {w}");
    }
    let source = format!(
        "calibrated from {} on {}",
        args.results
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        settings.filter.perf
    );
    let result = pipeline::calibrate(&read.records, &current, &targets, &settings, &source)?;
    for u in &result.proposal.levels {
        println!(
            "level {} {:?} {:?} -> x {:.3} -> {:.3}",
            u.level, u.status, u.estimate, u.exponent_old, u.exponent_new
        );
    }
    Ok(())
}

fn run_simulation(args: &CalibrateArgs) -> anyhow::Result<()> {
    let current = Coefficients::builtin();
    let mut settings = args.settings(&current)?;
    settings.update.restart_schedule = false;
    let config = simulate::SimConfig {
        truth: simulate::Truth::default(),
        levels: 10,
        target_from: 600.0,
        target_step: 200.0,
        games: args.games,
        cycles: args.cycles,
        seed: args.seed,
        b_factor: args.b_factor,
        d_factor: args.d_factor,
        opponent_sd: 200.0,
        draw_rate: 0.3,
        provisional_share: 0.1,
        aborted_share: 0.01,
        settings,
    };
    println!("cycle  gain  rms_before  floor  rms_after  games");
    config.run(|s| {
        println!(
            "{:>5} {:>5.2} {:>11.1} {:>6.1} {:>10.1} {:>6}",
            s.cycle, s.gain, s.rms_before, s.floor, s.rms_after, s.games
        )
    })?;
    Ok(())
}
