//! `ladder calibrate`: its options and what it prints and writes — the command line over the
//! calibration steps (selection, estimate, update, report, the arena loop, the simulator),
//! each of which lives in its own module.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::config::Config;
use crate::levels::{Coefficients, level_key};
use crate::lichess::Perf;
use crate::rating::FarOff;
use crate::results::from_lichess::{AccountRef, VersionTimeline};
use crate::results::{GameRecord, ResultsLog, Source, read_results};

use super::apply::{self, older_versions};
use super::fetch::{self, merge};
use super::pipeline::{self, Settings, Targets};
use super::select::{Filter, Opponents, Versions};
use super::update::UpdateConfig;
use super::{arena_loop, likeness, report, simulate, svg};

/// `ladder calibrate` options.
#[derive(Debug, clap::Args)]
pub struct CalibrateArgs {
    /// Results files (JSONL), several hosts allowed; a game id is counted once. Default: the
    /// daemon's results file named in --accounts.
    #[arg(long = "results", value_name = "FILE")]
    pub results: Vec<PathBuf>,
    /// The coefficients to start from and, with --apply or --arena, to replace. Default: the
    /// file daemon.coefficients of --accounts names (relative to that file, as `ladder run`
    /// reads it); without --accounts, the built-in coefficients (a dry run only).
    #[arg(long)]
    pub coefficients: Option<PathBuf>,
    /// The perf (rating pool) to calibrate.
    #[arg(long, default_value = "blitz")]
    pub perf: Perf,
    /// Coefficients versions to use: "4" or "3..5" (default: the current version only).
    #[arg(long, conflicts_with = "window")]
    pub versions: Option<String>,
    /// Use the N most recent versions up to the current one.
    #[arg(long)]
    pub window: Option<u32>,
    /// Sources to use (lichess, arena, sandbox); default: all.
    #[arg(long = "source", value_parser = parse_source)]
    pub sources: Vec<Source>,
    /// accounts.toml: the daemon's results and coefficients files (the defaults of --results
    /// and --coefficients), and the accounts, tokens and Lichess URL for --fetch and
    /// --lichess-ratings.
    #[arg(long)]
    pub accounts: Option<PathBuf>,
    /// Targets as "1=600,2=800,…" for a dry run (default: the coefficients' [targets], the
    /// ladder's one set of targets). Cannot be written: with --apply or --arena give a line.
    #[arg(long, conflicts_with_all = ["target_from", "target_step", "apply", "arena"])]
    pub targets: Option<String>,
    /// Linear targets instead of the coefficients' [targets]: level 1's target … (with
    /// --apply or --arena they become the written coefficients' [targets])
    #[arg(long, requires = "target_step")]
    pub target_from: Option<f64>,
    /// … and the step per level.
    #[arg(long, requires = "target_from")]
    pub target_step: Option<f64>,
    /// Levels with fewer games are left alone.
    #[arg(long, default_value_t = 30)]
    pub min_games: usize,
    /// Virtual draws against the target in each estimate (0: pure maximum likelihood).
    #[arg(long, default_value_t = Settings::PRIOR_DRAWS)]
    pub prior_draws: u32,
    /// Whose games estimate a level: people (the live loop's scale; games against bots are
    /// estimated and reported apart), bots (people's games apart) or all together. --arena
    /// always uses all its games (every anchor is an engine).
    #[arg(long, value_enum, default_value_t = Opponents::Humans)]
    pub opponents: Opponents,
    /// A game against an opponent rated this far (Elo) or more from the level's estimate counts
    /// as --far-share of a game: it tells little and rests on the Elo model's tails.
    #[arg(long, default_value_t = FarOff::default().gap)]
    pub far_gap: f64,
    /// The share of a game a far-off game counts as, in (0, 1] (1: no reduction).
    #[arg(long, default_value_t = FarOff::default().share)]
    pub far_share: f64,
    /// RD assumed for an opponent flagged provisional whose RD is unknown.
    #[arg(long, default_value_t = Filter::UNKNOWN_PROVISIONAL_RD)]
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
    /// Where the Markdown report and the SVG plot go (with --apply: report/ beside the
    /// coefficients file by default; a dry run prints the report and writes files only when
    /// this is given).
    #[arg(long)]
    pub report_dir: Option<PathBuf>,
    /// Pull the accounts' finished games from Lichess (since the newest logged game) and merge
    /// them with the results, each game id once. Needs --accounts.
    #[arg(long, requires = "accounts")]
    pub fetch: bool,
    /// With --fetch: also append the fetched games to this results file.
    #[arg(long, requires = "fetch", value_name = "FILE")]
    pub save_fetched: Option<PathBuf>,
    /// Show each account's current Lichess rating beside the estimate. Needs --accounts.
    #[arg(long, requires = "accounts")]
    pub lichess_ratings: bool,
    /// Calibrate offline: play the levels against the anchors in the arena, cycle after
    /// cycle, applying each proposal to --coefficients, until every level has --final-games
    /// games at parameters that no longer move or --budget is spent. Needs one --results file
    /// (the loop's own, appended) and targets; the same command resumes a stopped run.
    #[arg(long, conflicts_with_all = ["simulate", "fetch", "dry_run", "apply"])]
    pub arena: bool,
    /// --arena: the levels to calibrate (`1..12`, `1,3,5`; repeatable; default 1 to the top
    /// calibrated level of the coefficients, 1..10 without one).
    #[arg(long = "level", value_name = "LEVELS", requires = "arena")]
    pub levels: Vec<String>,
    /// --arena: games every level gets at its final parameters (--min-games is the count a
    /// level needs before it may move).
    #[arg(long, default_value_t = 200, requires = "arena")]
    pub final_games: usize,
    /// --arena: once every level has its final games, a gap between adjacent levels more than
    /// 20% off the mean gap is looked at closer: one of its two levels (the one further from
    /// its target for its interval, not at the floor) plays on, up to this many games, until
    /// it moves or the gaps are even (default: --final-games, no such games).
    #[arg(long, requires = "arena", value_name = "GAMES")]
    pub gap_games: Option<usize>,
    /// --arena: games the loop may play in all (its results file's games count).
    #[arg(long, default_value_t = 5000, requires = "arena")]
    pub budget: usize,
    /// --arena: games per batch (one level against its anchors).
    #[arg(long, default_value_t = 12, requires = "arena")]
    pub batch: usize,
    /// --arena: anchors each batch plays, chosen by how much a game against them tells.
    #[arg(long, default_value_t = 3, requires = "arena")]
    pub anchors_per_level: usize,
    /// --arena: anchors rated less certainly than this (standard error, Elo) are left out.
    #[arg(long, default_value_t = 150.0, requires = "arena")]
    pub max_anchor_se: f64,
    /// --arena: the anchors file (default: the built-in calibration/anchors.toml).
    #[arg(long, value_name = "FILE", requires = "arena")]
    pub anchors_file: Option<PathBuf>,
    /// --arena: games played at once in one batch (default: number of cores).
    #[arg(long, requires = "arena")]
    pub concurrency: Option<usize>,
    /// --arena: levels whose batches play at once, each with --concurrency games at once (a
    /// machine with many cores: the cheap levels need not wait for the dear ones).
    #[arg(long, value_name = "N", default_value_t = 1, requires = "arena")]
    pub parallel_levels: usize,
    /// Run the simulator instead of reading results.
    #[arg(long)]
    pub simulate: bool,
    /// Simulation: cycles.
    #[arg(long, default_value_t = 4)]
    pub cycles: u32,
    /// Simulation: games per level per cycle.
    #[arg(long, default_value_t = 200)]
    pub games: usize,
    /// Simulation: random seed; --arena: the seed every batch's seed derives from; the
    /// human-likeness players' seed.
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
    /// Human-likeness: replay the moves of the people in the N most recent games against them
    /// and report, per rating band, how often the band's level would have played their move
    /// (0: off). Cost: about 2 s a game with the Stockfish judge on a 2-core machine, a
    /// fraction of that without.
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub likeness_games: usize,
    /// Human-likeness: do not judge the people's moves with Stockfish (centipawn loss).
    #[arg(long)]
    pub no_likeness_judge: bool,
    /// Human-likeness: the fixed depth Stockfish judges the people's moves at.
    #[arg(long, default_value_t = 10)]
    pub likeness_depth: u32,
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
    /// Where the previous versions are kept (default: history/ beside the coefficients file;
    /// none for the built-in coefficients).
    fn history_dir(&self, coefficients: Option<&Path>) -> Option<PathBuf> {
        self.history_dir
            .clone()
            .or_else(|| coefficients.map(|c| c.parent().unwrap_or(Path::new(".")).join("history")))
    }

    /// The coefficients file: --coefficients, or the one daemon.coefficients of --accounts
    /// names (relative to the accounts file, as `ladder run` and `ladder check` read it), or
    /// none (the built-in coefficients). `writes`: the run replaces it, so one is needed.
    fn coefficients_path(
        &self,
        config: Option<&Config>,
        writes: Option<&str>,
    ) -> anyhow::Result<Option<PathBuf>> {
        let path = self
            .coefficients
            .clone()
            .or_else(|| config.map(|c| c.daemon.coefficients.clone()));
        if path.is_none()
            && let Some(what) = writes
        {
            bail!(
                "{what} writes the coefficients: give --coefficients FILE, or --accounts \
                 accounts.toml to use the file its daemon.coefficients names"
            );
        }
        Ok(path)
    }

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
        if self.max_step.is_nan() || self.max_step <= 0.0 {
            bail!("--max-step must be positive");
        }
        if !(self.far_gap.is_finite() && self.far_gap > 0.0) {
            bail!("--far-gap must be a positive number of Elo");
        }
        if !(self.far_share > 0.0 && self.far_share <= 1.0) {
            bail!("--far-share must be in (0, 1]");
        }
        Ok(Settings {
            filter: Filter {
                perf: self.perf.key().to_string(),
                opponents: self.opponents,
                versions,
                sources: self.sources.clone(),
                provisional_rd: self.provisional_rd,
            },
            prior_draws: self.prior_draws,
            far_off: FarOff {
                gap: self.far_gap,
                share: self.far_share,
            },
            update: UpdateConfig {
                min_games: self.min_games,
                gain_floor: self.gain_floor,
                restart_schedule: self.restart_schedule,
                max_step_elo: self.max_step,
                ..UpdateConfig::default()
            },
            history: BTreeMap::new(),
        })
    }

    /// accounts.toml when --accounts names it (loading it reads no token).
    fn accounts_config(&self) -> anyhow::Result<Option<Config>> {
        Ok(match &self.accounts {
            Some(path) => Some(Config::load(path)?),
            None => None,
        })
    }

    /// The targets: the ladder's, from the current coefficients' `[targets]`, unless the
    /// command line gives others (--targets, --target-from/--target-step).
    fn targets(&self, current: &Coefficients) -> anyhow::Result<Targets> {
        if let Some(t) = &self.targets {
            return Targets::parse_table(t).map_err(|e| anyhow::anyhow!("--targets: {e}"));
        }
        if let (Some(from), Some(step)) = (self.target_from, self.target_step) {
            if !(from.is_finite() && step.is_finite() && step > 0.0) {
                bail!("--target-from must be a number and --target-step a positive one");
            }
            return Ok(Targets::Linear { from, step });
        }
        let ladder = current.targets();
        if ladder.perf != self.perf.key() {
            bail!(
                "the ladder's targets are on {} ({} ratings): calibrate with --perf {}, or give \
                 --target-from/--target-step for --perf {}",
                ladder.scale,
                ladder.perf,
                ladder.perf,
                self.perf
            );
        }
        Ok(Targets::of(current))
    }
}

pub fn run(args: CalibrateArgs) -> anyhow::Result<()> {
    if args.simulate {
        return run_simulation(&args);
    }
    if args.arena {
        return run_arena_loop(&args);
    }
    // Loading accounts.toml reads no token: calibrating from the local results needs none, so
    // the timer's unit runs without the daemon's credentials. --fetch and --lichess-ratings
    // read each account's token below, and a missing one names the account and its setting.
    let config = args.accounts_config()?;
    let path = args.coefficients_path(config.as_ref(), args.apply.then_some("--apply"))?;
    let current = match &path {
        Some(path) => Coefficients::load(path)?,
        None => Coefficients::builtin(),
    };
    let mut settings = args.settings(&current)?;
    let targets = args.targets(&current)?;
    let mut games = Games::read(&args, config.as_ref())?;
    let lichess = match config.as_ref() {
        Some(config) if args.fetch || args.lichess_ratings => {
            games.ask_lichess(&args, config, &current)?
        }
        _ => BTreeMap::new(),
    };

    if let Some(dir) = args.history_dir(path.as_deref()) {
        settings.history =
            older_versions(&games.records, &settings.filter.versions, &current, &dir);
    }
    let result = calibrate_and_describe(&games.records, &current, &targets, &settings)?;
    let next = result.proposal.coefficients.clone();
    let outcome = outcome(
        &args,
        path.as_deref(),
        &current,
        &next,
        result.proposal.changed,
    )?;
    tracing::info!("{outcome}");
    let ctx = report::ReportContext {
        perf: args.perf.to_string(),
        versions: settings.filter.versions.describe(),
        reading: games.reading,
        lichess,
        outcome,
        targets: targets.describe(&current),
        // The plots are written only beside a written report: a printed one links none.
        svg_name: report_dir(&args, path.as_deref()).map(|_| "calibration.svg".to_string()),
    };
    let mut markdown = report::markdown(&result, &ctx);
    let likeness = (args.likeness_games > 0)
        .then(|| measure_likeness(&args, &targets, &games.records, &current));
    if let Some(l) = &likeness {
        let plot = report_dir(&args, path.as_deref()).map(|_| "likeness.svg");
        markdown.push_str(&report::likeness_section(l, plot));
    }
    write_report(
        &args,
        path.as_deref(),
        &result,
        &markdown,
        likeness.as_ref(),
    )?;
    if !args.apply && result.proposal.changed {
        println!(
            "\n## Proposed coefficients (not written)\n\n```toml\n{}```",
            next.to_toml()
        );
    }
    Ok(())
}

/// The games a pass reads, and what the report says about reading them.
struct Games {
    records: Vec<GameRecord>,
    reading: report::Reading,
}

impl Games {
    /// Reads the --results files, or without them the daemon's own log (from accounts.toml)
    /// when it exists; no file is an error unless --fetch brings the games.
    fn read(args: &CalibrateArgs, config: Option<&Config>) -> anyhow::Result<Games> {
        let mut paths = args.results.clone();
        if paths.is_empty()
            && let Some(c) = config
            && c.daemon.results.exists()
        {
            paths.push(c.daemon.results.clone());
        }
        if paths.is_empty() && !args.fetch {
            bail!("no games: give --results FILE (repeatable) and/or --fetch");
        }
        let read = read_results(&paths).context("reading results")?;
        for w in &read.warnings {
            tracing::warn!("skipped {w}");
        }
        Ok(Games {
            records: read.records,
            reading: report::Reading {
                inputs: paths.iter().map(|p| p.display().to_string()).collect(),
                warnings: read.warnings.iter().map(|w| w.to_string()).collect(),
                duplicates: read.duplicates,
                fetched: None,
            },
        })
    }

    /// --fetch and --lichess-ratings: per account, pulls its new games of the perf (merged in)
    /// and its current Lichess rating (returned by level key, with the account's name).
    fn ask_lichess(
        &mut self,
        args: &CalibrateArgs,
        config: &Config,
        current: &Coefficients,
    ) -> anyhow::Result<BTreeMap<String, (String, fetch::LichessRating)>> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the HTTP runtime")?;
        let accounts: Vec<_> = config.accounts.iter().collect();
        let timeline = VersionTimeline::new(&self.records, current.version);
        let mut fetched = fetch::Fetched::default();
        let mut lichess = BTreeMap::new();
        let mut progress = fetch::FetchProgress::start(if args.fetch { accounts.len() } else { 0 });
        for account in &accounts {
            let token = account.load_token().map_err(|e| anyhow::anyhow!("{e}"))?;
            // Named like the daemon's client of the account, as Lichess asks of bots.
            let mut client_config =
                crate::lichess::ClientConfig::new(config.lichess.base_url.clone(), token);
            client_config.user_agent = crate::lichess::user_agent(Some(&account.username));
            // The daemon may be using the same token now: take turns with it and keep its
            // 429 pauses (the directory both derive from the configuration's results log).
            client_config.shared_limits = Some(crate::lichess::SharedLimits::new(
                crate::lichess::SharedLimits::dir_for_results(&std::path::absolute(
                    &config.daemon.results,
                )?),
                &account.username,
            ));
            let client = crate::lichess::Client::new(client_config)?;
            let who = AccountRef {
                username: account.username.clone(),
                level: account.level,
            };
            if args.fetch {
                progress.fetching(&account.username);
                let got = runtime.block_on(fetch::fetch_games(
                    &client,
                    std::slice::from_ref(&who),
                    args.perf,
                    &timeline,
                ));
                progress.done(&account.username, &got);
                fetched.records.extend(got.records);
                fetched.per_account.extend(got.per_account);
                fetched.failures.extend(got.failures);
            }
            if args.lichess_ratings {
                match runtime.block_on(fetch::lichess_rating(&client, &account.username, args.perf))
                {
                    Ok(Some(r)) => {
                        lichess.insert(level_key(account.level), (account.username.clone(), r));
                    }
                    Ok(None) => {}
                    Err(e) => tracing::warn!("{}: no Lichess rating: {e}", account.username),
                }
            }
        }
        progress.finish();
        if args.fetch {
            self.add_fetched(args, config, fetched)?;
        }
        Ok(lichess)
    }

    /// Merges the fetched games that pass the results file's value checks (each game id once),
    /// appends the new ones to --save-fetched, and notes what was fetched for the report.
    fn add_fetched(
        &mut self,
        args: &CalibrateArgs,
        config: &Config,
        fetched: fetch::Fetched,
    ) -> anyhow::Result<()> {
        for (who, why) in &fetched.failures {
            tracing::warn!("{who}: fetch failed: {why}");
        }
        // Fetched games pass the same value checks as the lines of a results file.
        let checked: Vec<GameRecord> = fetched
            .records
            .iter()
            .filter(|r| match crate::results::check_record(r) {
                Ok(()) => true,
                Err(problem) => {
                    tracing::warn!("skipped fetched game {}: {problem}", r.game_id);
                    false
                }
            })
            .cloned()
            .collect();
        let (added, dup) = merge(&mut self.records, checked);
        self.reading.duplicates += dup;
        if let Some(path) = &args.save_fetched {
            let mut log =
                ResultsLog::open(path).with_context(|| format!("opening {}", path.display()))?;
            for r in &self.records[self.records.len() - added..] {
                log.append(r)
                    .with_context(|| format!("appending to {}", path.display()))?;
            }
        }
        self.reading.fetched = Some(format!(
            "{} games downloaded from {} accounts, {} new after deduplication by game id{}",
            fetched.per_account.values().sum::<usize>(),
            fetched.per_account.len(),
            added,
            if fetched.failures.is_empty() {
                String::new()
            } else {
                format!("; {} accounts failed", fetched.failures.len())
            }
        ));
        self.reading
            .inputs
            .push(format!("Lichess export ({})", config.lichess.base_url));
        Ok(())
    }
}

/// The live pass (pipeline.rs) over `records`, its measured ratings described with the date,
/// the number of games used (known only after selection), the perf and the versions.
fn calibrate_and_describe(
    records: &[GameRecord],
    current: &Coefficients,
    targets: &Targets,
    settings: &Settings,
) -> anyhow::Result<pipeline::Calibration> {
    const MEASURED: &str = "calibrated";
    let mut result = pipeline::calibrate(records, current, targets, settings, MEASURED)?;
    if result.proposal.coefficients.ratings_source == MEASURED {
        result.proposal.coefficients.ratings_source = format!(
            "calibrated {} from {} {} games ({})",
            crate::unix_time::UtcDateTime::now().date('-'),
            result.selection.used,
            settings.filter.perf,
            settings.filter.versions.describe()
        );
    }
    Ok(result)
}

/// Applies `next` with --apply when it changes anything, and says what happened: no change,
/// applied (and where the old version went) or a dry run.
fn outcome(
    args: &CalibrateArgs,
    path: Option<&Path>,
    current: &Coefficients,
    next: &Coefficients,
    changed: bool,
) -> anyhow::Result<String> {
    let name = path.map_or("the built-in coefficients".to_string(), |p| {
        p.display().to_string()
    });
    Ok(if !changed {
        format!(
            "No change: no level's parameters and no measured rating would change, so no new \
             version is written; {name} stays version {}.",
            current.version
        )
    } else if let (true, Some(path), Some(history)) = (args.apply, path, args.history_dir(path)) {
        let kept = apply::apply(path, current, next, &history)?;
        format!(
            "Applied: {} is now version {}; version {} kept as {}.",
            path.display(),
            next.version,
            current.version,
            kept.display()
        )
    } else {
        "Dry run: nothing written; `--apply` writes this proposal.".to_string()
    })
}

/// Replays the people's moves in the most recent games and measures how often the level of
/// their band would have played them (likeness.rs).
fn measure_likeness(
    args: &CalibrateArgs,
    targets: &Targets,
    records: &[GameRecord],
    current: &Coefficients,
) -> likeness::Likeness {
    let settings = likeness::LikenessSettings {
        max_games: args.likeness_games,
        seed: args.seed,
        perf: args.perf.key().to_string(),
        sources: args.sources.clone(),
        judge: (!args.no_likeness_judge).then(|| {
            (
                PathBuf::from(crate::arena::judge::Judge::STOCKFISH),
                args.likeness_depth,
            )
        }),
        ..likeness::LikenessSettings::default()
    };
    let levels = ladder_levels(targets, records, current, &settings.perf);
    likeness::measure(records, current, &levels, &settings)
}

/// Where the report and its plots are written: --report-dir, or with --apply report/ beside
/// the coefficients file (calibration/report for the repository's); `None` for a dry run that
/// only prints the report.
fn report_dir(args: &CalibrateArgs, coefficients: Option<&Path>) -> Option<PathBuf> {
    args.report_dir.clone().or_else(|| {
        let beside = coefficients?.parent().unwrap_or(Path::new("."));
        args.apply.then(|| beside.join("report"))
    })
}

/// Prints the report and, with --report-dir (or --apply: report/ beside the coefficients file),
/// writes it with its plots.
fn write_report(
    args: &CalibrateArgs,
    coefficients: Option<&Path>,
    result: &pipeline::Calibration,
    markdown: &str,
    likeness: Option<&likeness::Likeness>,
) -> anyhow::Result<()> {
    let Some(dir) = report_dir(args, coefficients) else {
        print!("{markdown}");
        return Ok(());
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    crate::atomic_file::write_atomically(&dir.join("calibration.md"), markdown)?;
    crate::atomic_file::write_atomically(
        &dir.join("calibration.svg"),
        svg::plot(result, args.perf.key()),
    )?;
    if let Some(l) = likeness.filter(|l| !l.bands.is_empty()) {
        crate::atomic_file::write_atomically(
            &dir.join("likeness.svg"),
            svg::plot_likeness(l, args.perf.key()),
        )?;
    }
    print!("{markdown}");
    println!(
        "\nReport written to {}",
        dir.join("calibration.md").display()
    );
    Ok(())
}

/// The ladder's levels with their targets, for the human-likeness bands: the levels the
/// targets name, or with a linear rule those with games of `perf` or a recorded rating.
fn ladder_levels(
    targets: &Targets,
    records: &[GameRecord],
    current: &Coefficients,
    perf: &str,
) -> Vec<(f64, f64)> {
    let mut levels: BTreeMap<String, f64> = targets
        .levels()
        .into_iter()
        .map(|l| (level_key(l), l))
        .collect();
    if matches!(targets, Targets::Linear { .. }) {
        let played = records
            .iter()
            .filter(|r| r.perf == perf)
            .map(|r| r.header.level);
        let rated = current.rated_levels().into_iter().map(|(l, _)| l);
        levels.extend(played.chain(rated).map(|l| (level_key(l), l)));
    }
    levels
        .into_values()
        .filter_map(|l| Some((l, targets.target(l)?)))
        .collect()
}

/// The levels `--arena` calibrates without `--level`: the whole ladder the coefficients
/// describe, 1 to its top level (a file calibrated to 12 would otherwise lose its master
/// levels from the loop).
fn default_arena_levels(coefficients: &Coefficients) -> String {
    let top = coefficients.top_level().floor().max(1.0);
    format!("1..{top}")
}

/// `--arena`: the offline loop against the anchors (arena_loop.rs), with this command's
/// targets and update settings; only arena games count, every one of them (bots included).
fn run_arena_loop(args: &CalibrateArgs) -> anyhow::Result<()> {
    let [results] = args.results.as_slice() else {
        bail!("--arena needs exactly one --results FILE: the loop's own games, appended");
    };
    let config = args.accounts_config()?;
    let Some(coefficients) = args.coefficients_path(config.as_ref(), Some("--arena"))? else {
        bail!("--arena needs a coefficients file");
    };
    let current = Coefficients::load(&coefficients)?;
    let targets = args.targets(&current)?;
    let mut levels = Vec::new();
    let lists = if args.levels.is_empty() {
        vec![default_arena_levels(&current)]
    } else {
        args.levels.clone()
    };
    for list in &lists {
        levels.extend(crate::levels::parse_levels(list).map_err(anyhow::Error::msg)?);
    }
    levels.sort_by(f64::total_cmp);
    levels.dedup();
    if args.min_games == 0 || args.batch == 0 || args.anchors_per_level == 0 {
        bail!("--min-games, --batch and --anchors-per-level must be at least 1");
    }
    let cfg = arena_loop::LoopSettings {
        levels,
        per_cycle: args.min_games,
        final_games: args.final_games.max(args.min_games),
        gap_games: args
            .gap_games
            .unwrap_or(args.final_games)
            .max(args.final_games.max(args.min_games)),
        budget: args.budget,
        batch: args.batch,
        anchors_per_level: args.anchors_per_level,
        max_anchor_se: args.max_anchor_se,
        concurrency: args
            .concurrency
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .max(1),
        parallel_levels: args.parallel_levels.max(1),
        seed: args.seed,
        anchors_file: args.anchors_file.clone(),
        results: results.clone(),
        history_dir: args
            .history_dir(Some(&coefficients))
            .unwrap_or_else(|| PathBuf::from("history")),
        coefficients,
        report_dir: args.report_dir.clone().unwrap_or_else(|| {
            results
                .parent()
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
        }),
    };
    arena_loop::run(&cfg, &targets, |current| {
        let mut settings = args.settings(current)?;
        settings.filter.sources = vec![Source::Arena];
        // The anchors are engines (flagged bots): the loop's estimate is from all of them,
        // whatever --opponents says for the live loop.
        settings.filter.opponents = Opponents::All;
        Ok(settings)
    })
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
    if let Some(path) = &args.write_results {
        let start = config.start();
        let mut rng = rand::SeedableRng::seed_from_u64(args.seed);
        let records = config.play(&start, 1, &mut rng);
        let mut text = String::with_capacity(records.len() * 700);
        for r in &records {
            text.push_str(&serde_json::to_string(r)?);
            text.push('\n');
        }
        crate::atomic_file::write_atomically(path, &text)?;
        let coefficients = path.with_extension("coefficients.toml");
        crate::atomic_file::write_atomically(&coefficients, start.to_toml())?;
        println!(
            "wrote {} simulated games to {} and their coefficients to {} (with their targets, 600 + 200·(L − 1))",
            records.len(),
            path.display(),
            coefficients.display()
        );
        return Ok(());
    }
    let truth = &config.truth;
    println!(
        "truth: {:.0} Elo at one node without noise, +{:.0} a node doubling, ceiling {:.0}, \
         -{:.1} per centipawn of noise; start: reference with b x{}, d x{}; {} games per level \
         per cycle",
        truth.base,
        truth.per_doubling,
        truth.ceiling,
        truth.per_cp,
        config.b_factor,
        config.d_factor,
        config.games
    );
    println!("cycle  gain  rms_before  floor  rms_after  games");
    config.run(|s| {
        println!(
            "{:>5} {:>5.2} {:>11.1} {:>6.1} {:>10.1} {:>6}",
            s.cycle, s.gain, s.rms_before, s.floor, s.rms_after, s.games
        )
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::levels::parse_levels;

    #[test]
    fn the_arena_loop_calibrates_the_whole_ladder_of_its_file_by_default() {
        let shipped = Coefficients::builtin();
        let top = shipped.top_calibrated_level().unwrap();
        assert!(
            top > 10.0,
            "the shipped ladder has master levels (top {top})"
        );
        let levels = parse_levels(&default_arena_levels(&shipped)).unwrap();
        let whole: Vec<f64> = (1..=top as u32).map(f64::from).collect();
        assert_eq!(levels, whole);
        let mut uncalibrated = shipped.clone();
        uncalibrated.offsets.clear();
        let levels = parse_levels(&default_arena_levels(&uncalibrated)).unwrap();
        assert_eq!(levels.len(), 10);
    }
}
