//! Offline matches between our levels and external UCI engines (`ladder arena`): the command
//! line, the match loop (games on `--concurrency` workers, results written as they finish), the
//! results JSONL for calibration, the PGN and the final report.

pub mod anchors;
pub mod game;
pub mod judge;
pub mod likeness;
pub mod openings;
pub mod pgn;
pub mod report;
pub mod roster;
pub mod schedule;

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use shakmaty::Color;

use crate::levels::Coefficients;
use crate::lichess::{Clock, Perf};
use crate::logging::Progress;
use crate::player::seat::{MoveLimits, PlayerKind, Seating, Timeouts};
use crate::results::{
    ClockRecord, EngineRecord, GameRecord, Keyed, OpponentRecord, Outcome, ResultsLog,
    SCHEMA_VERSION, Source,
};
use game::{PlayedGame, Termination};
use openings::Opening;
use roster::{PlayerSpec, Roster};
use schedule::{Format, ScheduledGame, Shard};

/// `ladder arena` options (boxed: they are many, and the CLI's command enum stays small).
#[derive(Debug, Clone, clap::Args)]
pub struct ArenaArgs {
    #[command(flatten)]
    pub options: Box<ArenaOptions>,
}

/// Everything `ladder arena` takes.
#[derive(Debug, Clone, clap::Args)]
pub struct ArenaOptions {
    /// Our levels taking part: `3`, `1..5`, `1,3,5` (repeatable).
    #[arg(long = "level", value_name = "LEVELS")]
    pub levels: Vec<String>,
    /// An external UCI engine, one argument without spaces (repeatable), e.g.
    /// `name=sf1500,cmd=/usr/games/stockfish,option.UCI_LimitStrength=true,option.UCI_Elo=1500,rating=1500`;
    /// also arg=, nodes=, depth=, movetime=.
    #[arg(long = "engine", value_name = "SPEC")]
    pub engines: Vec<String>,
    /// Lichess AI levels emulated with Fairy-Stockfish: `1..8`, `1,3` (repeatable).
    #[arg(long = "lichess-ai", value_name = "LEVELS")]
    pub lichess_ai: Vec<String>,
    /// Anchors by name from the anchors file: `sf1500`, `lichess-ai-1,greedy`, `all`
    /// (repeatable); their ratings come from the file.
    #[arg(long = "anchor", alias = "anchors", value_name = "NAMES")]
    pub anchors: Vec<String>,
    /// The anchors file (default: the built-in calibration/anchors.toml).
    #[arg(long, value_name = "FILE")]
    pub anchors_file: Option<PathBuf>,
    /// Pair every player with its K nearest neighbours on each side of the scale (players
    /// ordered by rating when all have one, else as listed): the anchor tournament's schedule.
    #[arg(long, value_name = "K", conflicts_with_all = ["round_robin", "gauntlet"])]
    pub neighbours: Option<usize>,
    /// Play nothing: fit the anchors jointly from the games between anchors in the
    /// --from-results files, pin them to the anchors file's scale and print their ratings.
    #[arg(long, requires = "from_results")]
    pub fit_anchors: bool,
    /// With --fit-anchors: write the fitted ratings, SEs and games into --anchors-file.
    #[arg(long, requires_all = ["fit_anchors", "anchors_file"])]
    pub update_anchors: bool,
    /// With --update-anchors: the command line that played the games, kept in the file.
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub tournament_command: String,
    /// With --update-anchors: binary and machine the games were played with, kept in the file.
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub machine: String,
    /// The Fairy-Stockfish binary for --lichess-ai.
    #[arg(long, default_value = "/usr/games/fairy-stockfish")]
    pub fairy_stockfish: PathBuf,
    /// Everyone plays everyone (the default).
    #[arg(long, conflicts_with = "gauntlet")]
    pub round_robin: bool,
    /// Every level plays every external engine (without engines: the first level plays the
    /// others).
    #[arg(long)]
    pub gauntlet: bool,
    /// Clock for both sides, seconds+increment: `60+0.6`.
    #[arg(long, value_name = "TC")]
    pub tc: Option<Clock>,
    /// Fixed nodes per move for external engines without their own limits (no clock).
    #[arg(long, conflicts_with = "tc")]
    pub nodes: Option<u64>,
    /// Fixed milliseconds per move for external engines without their own limits (no clock).
    #[arg(long, value_name = "MS", conflicts_with = "tc")]
    pub movetime: Option<u64>,
    /// Fixed depth per move for external engines without their own limits (no clock).
    #[arg(long, conflicts_with = "tc")]
    pub depth: Option<u32>,
    /// Openings file (.epd, or .pgn); default: the built-in balanced lines.
    #[arg(long)]
    pub openings: Option<PathBuf>,
    /// Games per pairing; each opening is played with both colours.
    #[arg(long, default_value_t = 20)]
    pub games_per_pairing: usize,
    /// Games played at once (default: number of cores).
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// Play only part i of n of the schedule (for several machines): `2/4`.
    #[arg(long, default_value = "1/1")]
    pub shard: Shard,
    /// Match seed; every game's seed derives from it and the game index (default: random).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Results JSONL (appended; the schema `ladder calibrate` reads).
    #[arg(long, default_value = "arena-results.jsonl")]
    pub results: PathBuf,
    /// PGN of every game, in schedule order (appended, as --results is).
    #[arg(long)]
    pub pgn: Option<PathBuf>,
    /// Play nothing: report on these arena results files (repeatable; e.g. several shards or
    /// runs sharing a level).
    #[arg(long, value_name = "FILE")]
    pub from_results: Vec<PathBuf>,
    /// With --from-results: judge the last N games of each level in the files (their newest
    /// coefficients) at --judge-depth, for the move-quality table beside people's figures; 0:
    /// not judged. Levels' ratings there come from --coefficients.
    #[arg(long, value_name = "N", default_value_t = 0, requires = "from_results")]
    pub judge_games: usize,
    /// Also write the report (Markdown) here.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Coefficients file (default: the built-in calibration/coefficients.toml).
    #[arg(long)]
    pub coefficients: Option<PathBuf>,
    /// Prefix of the game ids in the results (default: arena-<seed in hex>).
    #[arg(long)]
    pub match_id: Option<String>,
    /// Lichess perf the results count for (default: the clock's speed, blitz without clock).
    #[arg(long)]
    pub perf: Option<Perf>,
    /// The engine that judges every game's moves after it is played (average centipawn loss,
    /// inaccuracies, mistakes, blunders); missing: the report says so and the match goes on.
    #[arg(long, value_name = "PATH", default_value = judge::Judge::STOCKFISH)]
    pub judge: PathBuf,
    /// The judge's search depth per position; 0: no judging.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub judge_depth: u32,
    /// Time allowed for an engine to start and get ready, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    pub startup_timeout: u64,
    /// Time allowed for a move without clock or movetime, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 60_000)]
    pub move_timeout: u64,
    /// Grace beyond the clock or movetime before an engine counts as hung, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 1_000)]
    pub timeout_margin: u64,
}

/// What a match produced, for callers (tests, benchmarks) besides the printed report.
#[derive(Debug, Clone)]
pub struct MatchSummary {
    pub players: Vec<PlayerSpec>,
    /// Move quality per player (all zero when the games were not judged).
    pub quality: Vec<judge::Quality>,
    pub games: Vec<report::Scored>,
    pub report: String,
    pub seed: u64,
    pub elapsed: Duration,
    /// Ctrl-C stopped the match: the games in progress finished, the rest were not played.
    pub interrupted: bool,
}

pub fn run(args: ArenaArgs) -> anyhow::Result<()> {
    let text = if args.options.fit_anchors {
        fit_anchors(&args.options)?
    } else if args.options.from_results.is_empty() {
        run_match(&args.options)?.report
    } else {
        let o = &args.options;
        let judging = if o.judge_games > 0 {
            Some(RebuiltJudging {
                program: o.judge.clone(),
                depth: o.judge_depth,
                games_per_level: o.judge_games,
                coefficients: coefficients_of(o)?,
            })
        } else {
            None
        };
        let text = report_from_results(&o.from_results, judging.as_ref())?;
        if let Some(path) = &args.options.report {
            std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?;
        }
        text
    };
    println!("{text}");
    Ok(())
}

/// The coefficients of the options: `--coefficients`, else the built-in ones.
fn coefficients_of(args: &ArenaOptions) -> anyhow::Result<Coefficients> {
    match &args.coefficients {
        Some(path) => Coefficients::load_or_explain(path, "--coefficients"),
        None => Ok(Coefficients::builtin()),
    }
}

/// The anchors file of the options: `--anchors-file`, else the built-in one.
fn anchors_file(args: &ArenaOptions) -> anyhow::Result<anchors::AnchorsFile> {
    Ok(match &args.anchors_file {
        Some(path) => anchors::AnchorsFile::load(path)?,
        None => anchors::AnchorsFile::builtin(),
    })
}

/// `--fit-anchors`: the joint fit of the games between anchors, pinned to the file's scale;
/// with `--update-anchors` the file is rewritten with the new ratings.
fn fit_anchors(args: &ArenaOptions) -> anyhow::Result<String> {
    let file = anchors_file(args)?;
    let (games, warnings) =
        anchors::read_anchor_games(&args.from_results).context("reading results")?;
    for w in &warnings {
        tracing::warn!("skipped {w}");
    }
    let (fit, scored) = anchors::fit_games(&file, &games).map_err(anyhow::Error::msg)?;
    let mut text = format!(
        "# Anchor fit from {}\n\n",
        args.from_results
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    text.push_str(&anchors::render_fit(&fit, &file.scale));
    text.push('\n');
    text.push_str(&report::render_pairings(&fit.names, &scored));
    if args.update_anchors {
        let path = args.anchors_file.as_ref().expect("required by clap");
        let provenance = anchors::FitProvenance {
            date: crate::unix_time::UtcDateTime::now().date('-'),
            games: scored.iter().filter(|g| !g.fault).count() as u64,
            tournament: args.tournament_command.clone(),
            command: command_line(),
            results: args
                .from_results
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
            machine: args.machine.clone(),
        };
        let new = anchors::updated(&file, &fit, provenance);
        let toml = new.to_toml();
        // Checked before it replaces the old file: what we write must load.
        anchors::AnchorsFile::parse(&toml, &path.display().to_string())
            .context("the rewritten anchors file does not load back")?;
        crate::atomic_file::write_atomically(path, &toml)?;
        text.push_str(&format!("\nWrote {}\n", path.display()));
    }
    Ok(text)
}

/// This process's command line as a shell would take it (`ladder` for the binary's path).
fn command_line() -> String {
    std::iter::once("ladder".to_string())
        .chain(std::env::args().skip(1).map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=,:+@".contains(c))
            {
                a
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        }))
        .collect::<Vec<_>>()
        .join(" ")
}

/// What a report rebuilt from results files judges: the last `games_per_level` games of each
/// level in the files, by `program` at `depth`, every move after the arena's opening (from the
/// first when the record does not say where the opening ended). The levels' ratings the quality
/// is read beside come from `coefficients`.
pub struct RebuiltJudging {
    pub program: PathBuf,
    pub depth: u32,
    pub games_per_level: usize,
    pub coefficients: Coefficients,
}

/// The report of games already played, read back from arena results files. A game between two
/// levels has a record for each side and counts once; players are named as in the records, an
/// opponent's rating (if any) makes it an anchor. With `judging`, the last games of each level
/// are judged (see [`RebuiltJudging`]) and the report gains its move-quality table.
pub fn report_from_results(
    paths: &[PathBuf],
    judging: Option<&RebuiltJudging>,
) -> anyhow::Result<String> {
    let read = crate::results::read_results(paths).context("reading results")?;
    for w in &read.warnings {
        tracing::warn!("skipped {w}");
    }
    let mut names: Vec<String> = Vec::new();
    let mut levels: Vec<Option<f64>> = Vec::new();
    let mut known: Vec<Option<f64>> = Vec::new();
    let mut index_of = |name: &str, level: Option<f64>, rating: Option<f64>| {
        let i = names.iter().position(|n| n == name).unwrap_or_else(|| {
            names.push(name.to_string());
            levels.push(None);
            known.push(None);
            names.len() - 1
        });
        levels[i] = levels[i].or(level);
        known[i] = known[i].or(rating);
        i
    };
    let mut seen = std::collections::HashSet::new();
    let mut scored = Vec::new();
    // The record each scored game was read from, for the judge.
    let mut played_records = Vec::new();
    for r in read.records.iter().filter(|r| r.source == Source::Arena) {
        let Some(score) = r.result.score() else {
            continue;
        };
        let me = index_of(&r.account, Some(r.level), None);
        let them = index_of(&r.opponent.name, None, r.opponent.rating);
        // "<match>-<index>-<colour>": both sides of one game share the part before the colour.
        let game = r
            .game_id
            .rsplit_once('-')
            .map_or(r.game_id.as_str(), |(g, _)| g);
        if !seen.insert(game.to_string()) {
            continue;
        }
        let (white, black, white_score) = if r.color == "white" {
            (me, them, score)
        } else {
            (them, me, 1.0 - score)
        };
        scored.push(report::Scored {
            white,
            black,
            white_score,
            fault: r.fault.is_some(),
        });
        played_records.push(r);
    }
    if scored.is_empty() {
        bail!("no arena games in the given results files");
    }
    // A level met only as an opponent still sits on the ladder.
    for (i, name) in names.iter().enumerate() {
        if levels[i].is_none() && known[i].is_none() {
            levels[i] = name.strip_prefix("level-").and_then(|l| l.parse().ok());
        }
    }
    // Records arrive in completion order, which concurrency makes arbitrary: put the players in
    // a fixed order (levels by level, then anchors by rating, then the rest by name) so the same
    // games always give the same report.
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.sort_by(|&a, &b| {
        let key = |i: usize| (levels[i].is_none(), levels[i].or(known[i]));
        let (ka, kb) = (key(a), key(b));
        ka.0.cmp(&kb.0)
            .then(
                ka.1.unwrap_or(f64::MAX)
                    .total_cmp(&kb.1.unwrap_or(f64::MAX)),
            )
            .then(names[a].cmp(&names[b]))
    });
    let mut new_index = vec![0; order.len()];
    for (new, &old) in order.iter().enumerate() {
        new_index[old] = new;
    }
    let names: Vec<String> = order.iter().map(|&i| names[i].clone()).collect();
    let levels: Vec<Option<f64>> = order.iter().map(|&i| levels[i]).collect();
    let known: Vec<Option<f64>> = order.iter().map(|&i| known[i]).collect();
    for s in &mut scored {
        s.white = new_index[s.white];
        s.black = new_index[s.black];
    }
    let mut text = format!(
        "# Arena report from {}\n\n{} games\n\n",
        paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        scored.len()
    );
    text.push_str(&report::render(&names, &levels, &known, &scored));
    text.push('\n');
    match judging {
        None => text.push_str("## Move quality\n\nnot judged: rebuilt from results files (--judge-games N judges the last N games of each level)\n"),
        Some(judging) => {
            let (jobs, unmarked) =
                judge_jobs(&scored, &played_records, &levels, judging.games_per_level);
            let mut judged = judge_rebuilt(judging, jobs, names.len())?;
            if unmarked > 0 {
                judged.describe.push_str(&format!(
                    "; {unmarked} of them from their first ply (their records do not say where the opening ended)"
                ));
            }
            let claimed: Vec<Option<f64>> = levels
                .iter()
                .zip(&known)
                .map(|(level, known)| {
                    level.map_or(*known, |l| judging.coefficients.rating_of(l))
                })
                .collect();
            text.push_str(&report::render_quality(
                &names,
                &claimed,
                &judged.quality,
                &judged.describe,
            ));
            text.push('\n');
            text.push_str(&likeness::render_likeness(
                &names,
                &claimed,
                &judged.likeness,
                &judged.describe,
            ));
        }
    }
    Ok(text)
}

/// The games to judge: going back from the last, each game that a level in it still needs
/// (fewer than `per_level` of its games chosen), in the order they were played; and how many
/// of them have records that do not mark the opening's plies (judged from the first).
fn judge_jobs(
    scored: &[report::Scored],
    records: &[&GameRecord],
    levels: &[Option<f64>],
    per_level: usize,
) -> (Vec<JudgeJob>, usize) {
    let mut chosen = vec![0usize; levels.len()];
    let mut jobs = Vec::new();
    let mut unmarked = 0;
    for (s, record) in scored.iter().zip(records).rev() {
        let sides = [s.white, s.black];
        let needed = sides
            .iter()
            .any(|&p| levels[p].is_some() && chosen[p] < per_level);
        if !needed {
            continue;
        }
        let Some(game) = record.replay() else {
            tracing::warn!(game = %record.game_id, "not judged: its moves do not replay");
            continue;
        };
        for p in sides {
            chosen[p] += 1;
        }
        if record.opening_plies.is_none() {
            unmarked += 1;
        }
        jobs.push(JudgeJob {
            game,
            first: record.opening_plies.map_or(0, |plies| plies as usize),
            // The results records keep no clock per move.
            clocks: Vec::new(),
            white: s.white,
            black: s.black,
        });
    }
    jobs.reverse();
    (jobs, unmarked)
}

/// Judges `jobs` with one judge process, showing the progress.
fn judge_rebuilt(
    judging: &RebuiltJudging,
    jobs: Vec<JudgeJob>,
    players: usize,
) -> anyhow::Result<Judged> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let progress = Arc::new(Progress::new(jobs.len() as u64, "games judged"));
    let judged = runtime.block_on(async {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<JudgeJob>();
        for job in jobs {
            let _queued = tx.send(job);
        }
        drop(tx);
        judge_games(
            judging.program.clone(),
            judging.depth,
            rx,
            players,
            Arc::new(AtomicBool::new(false)),
            Some(Arc::clone(&progress)),
        )
        .await
    });
    progress.finish();
    Ok(judged)
}

/// Plays the match described by `args` and returns its summary (also writing results, PGN
/// and report files).
pub fn run_match(args: &ArenaOptions) -> anyhow::Result<MatchSummary> {
    let (plan, mut games) = MatchPlan::new(args)?;
    let log = ResultsLog::open(&args.results)
        .with_context(|| format!("opening results file {}", args.results.display()))?;
    let resumed = skip_recorded_games(&mut games, &log, &plan.match_id, &args.results);
    let pgn = open_pgn(args.pgn.as_deref(), &games)?;
    let perf = args
        .perf
        .unwrap_or_else(|| args.tc.map_or(Perf::Blitz, |tc| Perf::from(tc.speed())))
        .to_string();
    let mut writer = GameWriter {
        log,
        results: &args.results,
        pgn,
        date: crate::unix_time::UtcDateTime::now().date('.'),
        record: RecordContext {
            match_id: &plan.match_id,
            tc: args.tc,
            perf: &perf,
            openings: &plan.openings,
        },
    };

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(plan.concurrency + 2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let started = Instant::now();
    let played = runtime.block_on(play_games(args, &plan, games, &mut writer, started))?;
    if let Some(w) = writer.pgn {
        w.finish().context("writing the PGN")?;
    }
    let elapsed = started.elapsed();
    let text = match_report(args, &plan, &played, &resumed, elapsed);
    if let Some(path) = &args.report {
        std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(MatchSummary {
        quality: played.judged.quality,
        players: plan.players,
        games: played.scored,
        report: text,
        seed: plan.seed,
        elapsed,
        interrupted: played.interrupted,
    })
}

/// Everything a match decides before its first game: who plays, with which openings and
/// seed, on how many workers, under which id.
struct MatchPlan {
    players: Vec<PlayerSpec>,
    /// The players as the games seat them.
    roster: Arc<Roster>,
    openings: Vec<Opening>,
    /// The openings as positions to start the games from.
    opening_games: Vec<crate::engine::Game>,
    seed: u64,
    concurrency: usize,
    match_id: String,
}

impl MatchPlan {
    /// The plan of `args` (checked and logged) with its games: this shard's part of the
    /// schedule, in schedule order.
    fn new(args: &ArenaOptions) -> anyhow::Result<(MatchPlan, Vec<ScheduledGame>)> {
        let coefficients = coefficients_of(args)?;
        let (players, levels_count) = players_of(args)?;
        let fixed = MoveLimits {
            nodes: args.nodes,
            depth: args.depth,
            movetime_ms: args.movetime,
        };
        check_engine_limits(args, &players, &fixed)?;
        let openings: Vec<Opening> = match &args.openings {
            Some(path) => openings::load(path)?,
            None => openings::builtin(),
        };
        let opening_games = openings
            .iter()
            .map(|o| o.game().with_context(|| format!("opening {}", o.name)))
            .collect::<anyhow::Result<Vec<_>>>()?;
        if args.games_per_pairing == 0 {
            bail!("--games-per-pairing must be at least 1");
        }
        let seed = args.seed.unwrap_or_else(rand::random);
        let pairings = pairings_of(args, &players, levels_count)?;
        let games = schedule::shard(
            schedule::schedule(&pairings, openings.len(), args.games_per_pairing, seed),
            args.shard,
        );
        let concurrency = args
            .concurrency
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .max(1);
        let match_id = args
            .match_id
            .clone()
            .unwrap_or_else(|| format!("arena-{seed:016x}"));
        tracing::info!(
            "arena {match_id}: {} players, {} pairings, {} games in shard {}/{}, seed {seed}, concurrency {concurrency}",
            players.len(),
            pairings.len(),
            games.len(),
            args.shard.index,
            args.shard.count
        );
        let timeouts = Timeouts {
            startup: Duration::from_millis(args.startup_timeout),
            move_timeout: Duration::from_millis(args.move_timeout),
            margin: Duration::from_millis(args.timeout_margin),
        };
        let seating = Seating {
            coefficients,
            fixed,
            timeouts,
        };
        let roster = Arc::new(Roster::new(players.clone(), seating));
        let plan = MatchPlan {
            players,
            roster,
            openings,
            opening_games,
            seed,
            concurrency,
            match_id,
        };
        Ok((plan, games))
    }
}

/// Every external engine has a per-move limit of its own, from `fixed` or from a clock: without
/// one it would think forever.
fn check_engine_limits(
    args: &ArenaOptions,
    players: &[PlayerSpec],
    fixed: &MoveLimits,
) -> anyhow::Result<()> {
    for p in players {
        if let PlayerKind::Uci { limits, .. } = &p.kind
            && args.tc.is_none()
            && limits.is_empty()
            && fixed.is_empty()
        {
            bail!(
                "engine {} has no per-move limit: give --tc, or --nodes/--movetime/--depth",
                p.name
            );
        }
    }
    Ok(())
}

/// Who meets whom: `--neighbours`, `--gauntlet` or (the default) a round robin.
fn pairings_of(
    args: &ArenaOptions,
    players: &[PlayerSpec],
    levels_count: usize,
) -> anyhow::Result<Vec<(usize, usize)>> {
    Ok(match args.neighbours {
        Some(0) => bail!("--neighbours must be at least 1"),
        Some(k) => anchors::neighbour_pairings(&anchors::scale_order(players), k),
        None if args.gauntlet => schedule::pairings(Format::Gauntlet, players.len(), levels_count),
        None => schedule::pairings(Format::RoundRobin, players.len(), levels_count),
    })
}

/// Resuming: the same command (same seed, so the same match id and schedule) skips the games
/// its results file already holds, and returns them as the report counts them, so a resumed
/// match reports all its games, not only those played this time.
fn skip_recorded_games(
    games: &mut Vec<ScheduledGame>,
    log: &ResultsLog,
    match_id: &str,
    results: &Path,
) -> Vec<report::Scored> {
    let scheduled = games.len();
    let (recorded, kept): (Vec<ScheduledGame>, Vec<ScheduledGame>) =
        games.drain(..).partition(|g| {
            let id = game_id(match_id, g.index);
            log.contains(&id)
                || log.contains(&format!("{id}-white"))
                || log.contains(&format!("{id}-black"))
        });
    *games = kept;
    if recorded.is_empty() {
        return Vec::new();
    }
    tracing::info!(
        "resuming {match_id}: {} of {scheduled} games already in {}, {} to play",
        recorded.len(),
        results.display(),
        games.len()
    );
    recorded_scores(&recorded, match_id, results)
}

/// The scores of `games` as recorded in `results`: from a level's record (White's, or Black's
/// turned round), or from the line of a game between anchors. A game without a result is left
/// out, as the report leaves it out when it is played.
fn recorded_scores(games: &[ScheduledGame], match_id: &str, results: &Path) -> Vec<report::Scored> {
    let paths = [results.to_path_buf()];
    let mut by_id: HashMap<String, (f64, bool)> = HashMap::new();
    match crate::results::read_results(&paths) {
        Ok(read) => {
            for r in read.records {
                let Some(score) = r.result.score() else {
                    continue;
                };
                let white_score = if r.color == "white" {
                    score
                } else {
                    1.0 - score
                };
                let id = r
                    .game_id
                    .strip_suffix("-white")
                    .or_else(|| r.game_id.strip_suffix("-black"))
                    .unwrap_or(&r.game_id)
                    .to_string();
                by_id.entry(id).or_insert((white_score, r.fault.is_some()));
            }
        }
        Err(e) => tracing::warn!(
            "cannot read the resumed games of {}: {e}",
            results.display()
        ),
    }
    if let Ok((anchor_games, _)) = anchors::read_anchor_games(&paths) {
        for g in anchor_games {
            if let Some(score) = g.white_score() {
                by_id
                    .entry(g.game_id.clone())
                    .or_insert((score, g.fault.is_some()));
            }
        }
    }
    games
        .iter()
        .filter_map(|g| {
            let &(white_score, fault) = by_id.get(&game_id(match_id, g.index))?;
            Some(report::Scored {
                white: g.white,
                black: g.black,
                white_score,
                fault,
            })
        })
        .collect()
}

/// The `--pgn` file, if any, opened to append `games` in schedule order.
fn open_pgn(
    path: Option<&Path>,
    games: &[ScheduledGame],
) -> anyhow::Result<Option<pgn::PgnWriter>> {
    let Some(path) = path else {
        return Ok(None);
    };
    let writer = pgn::PgnWriter::append(path, games.iter().map(|g| g.index).collect())
        .with_context(|| format!("opening PGN file {}", path.display()))?;
    Ok(Some(writer))
}

/// Where every game goes as it finishes: the results file (a record for each side that is one
/// of our levels, or one anchor-game record) and the PGN.
struct GameWriter<'a> {
    log: ResultsLog,
    /// The results file's path, for errors.
    results: &'a Path,
    pgn: Option<pgn::PgnWriter>,
    /// The PGN `Date` of every game: the day the match started.
    date: String,
    record: RecordContext<'a>,
}

impl GameWriter<'_> {
    /// Writes `played`'s records and its PGN.
    fn write(&mut self, played: &PlayedGame, roster: &Roster) -> anyhow::Result<()> {
        for record in records_of(played, roster, &self.record) {
            self.log
                .append(&record)
                .with_context(|| format!("writing {}", self.results.display()))?;
        }
        if let Some(record) = anchor_record_of(played, roster, &self.record) {
            self.log
                .append_line(&record.game_id, &record)
                .with_context(|| format!("writing {}", self.results.display()))?;
        }
        if let Some(w) = self.pgn.as_mut() {
            let ctx = pgn::PgnContext {
                event: self.record.match_id,
                date: &self.date,
                players: &roster.players,
                opening_name: &self.record.openings[played.scheduled.opening].name,
                tc: self.record.tc,
            };
            w.add(played.scheduled.index, pgn::format_game(played, &ctx))
                .context("writing the PGN")?;
        }
        Ok(())
    }
}

/// What the games of a match gave.
struct PlayedMatch {
    scored: Vec<report::Scored>,
    judged: Judged,
    /// Ctrl-C stopped the match.
    interrupted: bool,
}

/// Plays `games` on the plan's workers: each game is written as it finishes, shown in the
/// progress, and judged behind the match. Ctrl-C lets the games in progress finish and starts
/// no new ones.
async fn play_games(
    args: &ArenaOptions,
    plan: &MatchPlan,
    games: Vec<ScheduledGame>,
    writer: &mut GameWriter<'_>,
    started: Instant,
) -> anyhow::Result<PlayedMatch> {
    let total = games.len();
    let mut scored = Vec::with_capacity(total);
    let bar = Progress::new(total as u64, "games");
    let stop = Arc::new(AtomicBool::new(false));
    let mut rx = spawn_workers(plan, games, &stop, args.tc);
    let (judge_tx, judge_rx) = tokio::sync::mpsc::unbounded_channel::<JudgeJob>();
    let judge_task = tokio::spawn(judge_games(
        args.judge.clone(),
        args.judge_depth,
        judge_rx,
        plan.players.len(),
        stop.clone(),
        None,
    ));
    let mut interrupted = false;
    loop {
        let played = tokio::select! {
            played = rx.recv() => match played {
                Some(p) => p,
                None => break,
            },
            _ = tokio::signal::ctrl_c(), if !interrupted => {
                interrupted = true;
                stop.store(true, Ordering::Relaxed);
                tracing::warn!("interrupted: finishing the games in progress, starting no new ones");
                continue;
            }
        };
        writer.write(&played, &plan.roster)?;
        scored.push(report::Scored {
            white: played.scheduled.white,
            black: played.scheduled.black,
            white_score: played.white_score(),
            fault: matches!(played.termination, Termination::Fault { .. }),
        });
        progress(&plan.roster.players, &played, &scored, total, started, &bar);
        let _queued = judge_tx.send(JudgeJob {
            game: played.game,
            first: played.opening_plies,
            clocks: played.clocks,
            white: played.scheduled.white,
            black: played.scheduled.black,
        });
    }
    bar.finish();
    plan.roster.shutdown().await;
    drop(judge_tx);
    if bar.is_bar() && args.judge_depth > 0 {
        eprintln!("judging the last games...");
    }
    let judged = judge_task.await.context("the judge task")?;
    Ok(PlayedMatch {
        scored,
        judged,
        interrupted,
    })
}

/// Starts the plan's workers, each taking the next of `games` until none is left or `stop` is
/// set; every game played arrives on the returned channel, which closes when all have stopped.
fn spawn_workers(
    plan: &MatchPlan,
    games: Vec<ScheduledGame>,
    stop: &Arc<AtomicBool>,
    tc: Option<Clock>,
) -> tokio::sync::mpsc::UnboundedReceiver<PlayedGame> {
    let queue = Arc::new(Mutex::new(games.into_iter().collect::<VecDeque<_>>()));
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<PlayedGame>();
    for _ in 0..plan.concurrency {
        let (queue, stop, tx, roster) =
            (queue.clone(), stop.clone(), tx.clone(), plan.roster.clone());
        let opening_games = plan.opening_games.clone();
        tokio::spawn(async move {
            loop {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let Some(next) = queue.lock().expect("queue lock").pop_front() else {
                    break;
                };
                let opening = opening_games[next.opening].clone();
                let played = game::play(&roster, next, opening, tc).await;
                if tx.send(played).is_err() {
                    break;
                }
            }
        });
    }
    rx
}

/// The match's report: games, time, rate, seed and clock, then the ratings and pairings, then
/// the move quality.
fn match_report(
    args: &ArenaOptions,
    plan: &MatchPlan,
    played: &PlayedMatch,
    resumed: &[report::Scored],
    elapsed: Duration,
) -> String {
    let players = &plan.players;
    let scored: Vec<report::Scored> = resumed.iter().chain(&played.scored).copied().collect();
    let names: Vec<String> = players.iter().map(|p| p.name.clone()).collect();
    let levels: Vec<Option<f64>> = players.iter().map(PlayerSpec::level_number).collect();
    let known: Vec<Option<f64>> = players.iter().map(|p| p.rating).collect();
    let secs = elapsed.as_secs_f64();
    let timing = if resumed.is_empty() {
        format!(
            "{} games in {secs:.0} s ({:.0} games/hour)",
            scored.len(),
            scored.len() as f64 / secs.max(1e-9) * 3600.0
        )
    } else {
        format!(
            "{} games: {} resumed from {}, {} played in {secs:.0} s",
            scored.len(),
            resumed.len(),
            args.results.display(),
            played.scored.len()
        )
    };
    let mut text = format!(
        "# Arena {}\n\n{timing}, seed {}, {}\n\n",
        plan.match_id,
        plan.seed,
        args.tc
            .map_or_else(|| "fixed limits".to_string(), |tc| format!("clock {tc}"))
    );
    text.push_str(&report::render(&names, &levels, &known, &scored));
    text.push('\n');
    // The rating each player stands for: an anchor's fitted one, a level's from the
    // coefficients it plays with, so its move quality can be read beside a person's.
    let claimed: Vec<Option<f64>> = players
        .iter()
        .zip(&levels)
        .map(|(p, level)| {
            p.rating
                .or_else(|| level.and_then(|l| plan.roster.seating.coefficients.rating_of(l)))
        })
        .collect();
    text.push_str(&report::render_quality(
        &names,
        &claimed,
        &played.judged.quality,
        &played.judged.describe,
    ));
    if played.judged.likeness.iter().any(|l| l.all.moves > 0) {
        text.push('\n');
        text.push_str(&likeness::render_likeness(
            &names,
            &claimed,
            &played.judged.likeness,
            &played.judged.describe,
        ));
    }
    text
}

/// The players in order: levels first (they form the gauntlet's first group), then external
/// engines, then Lichess AI presets. Returns them with the number of levels.
fn players_of(args: &ArenaOptions) -> anyhow::Result<(Vec<PlayerSpec>, usize)> {
    let mut players = Vec::new();
    for list in &args.levels {
        for level in roster::parse_levels(list).map_err(anyhow::Error::msg)? {
            players.push(PlayerSpec::level(level));
        }
    }
    let levels = players.len();
    for spec in &args.engines {
        players.push(roster::parse_engine(spec).map_err(anyhow::Error::msg)?);
    }
    if !args.anchors.is_empty() {
        let file = anchors_file(args)?;
        for anchor in file.select(&args.anchors).map_err(anyhow::Error::msg)? {
            players.push(anchor.player());
        }
    }
    for list in &args.lichess_ai {
        for level in roster::parse_levels(list).map_err(anyhow::Error::msg)? {
            if level.fract() != 0.0 {
                bail!("Lichess AI level {level} is not a whole number");
            }
            players.push(
                roster::lichess_ai(level as u32, &args.fairy_stockfish)
                    .map_err(anyhow::Error::msg)?,
            );
        }
    }
    for (i, p) in players.iter().enumerate() {
        if players[..i].iter().any(|q| q.name == p.name) {
            bail!(
                "two players are named {}: give engines distinct name=",
                p.name
            );
        }
    }
    if players.len() < 2 {
        bail!("a match needs at least two players (--level, --engine, --anchor, --lichess-ai)");
    }
    Ok((players, levels))
}

/// A finished game for the judge.
struct JudgeJob {
    game: crate::engine::Game,
    first: usize,
    /// The mover's clock before each judged move (empty: no clock, or not recorded).
    clocks: Vec<crate::engine::humane::ClockLeft>,
    white: usize,
    black: usize,
}

/// What the judge found, and a sentence on how (or why not) it judged.
struct Judged {
    quality: Vec<judge::Quality>,
    likeness: Vec<likeness::Likeness>,
    describe: String,
}

/// Judges games as they arrive, one at a time, with one judge process (restarted after a
/// failure). A missing judge or `--judge-depth 0` only turns into a sentence in the report;
/// after Ctrl-C the games still queued are left unjudged.
async fn judge_games(
    program: PathBuf,
    depth: u32,
    mut jobs: tokio::sync::mpsc::UnboundedReceiver<JudgeJob>,
    players: usize,
    stop: Arc<AtomicBool>,
    progress: Option<Arc<Progress>>,
) -> Judged {
    let mut quality = vec![judge::Quality::default(); players];
    let mut likeness = vec![likeness::Likeness::default(); players];
    let skip = if depth == 0 {
        Some("not judged (--judge-depth 0)".to_string())
    } else if !program.exists() {
        Some(format!(
            "not judged: {} is not installed (apt-get install stockfish)",
            program.display()
        ))
    } else {
        None
    };
    if let Some(describe) = skip {
        while jobs.recv().await.is_some() {}
        return Judged {
            quality,
            likeness,
            describe,
        };
    }
    let (mut judge, mut name) = (None, None);
    let (mut games, mut failed, mut skipped) = (0usize, Vec::new(), 0usize);
    while let Some(job) = jobs.recv().await {
        if stop.load(Ordering::Relaxed) {
            skipped += 1;
            continue;
        }
        if judge.is_none() {
            match judge::Judge::start_with_lines(&program, depth, likeness::JUDGE_LINES).await {
                Ok(j) => {
                    name = name.or(j.id_name.clone());
                    judge = Some(j);
                }
                Err(e) => {
                    failed.push(e);
                    continue;
                }
            }
        }
        let j = judge.as_mut().expect("started above");
        match j.judge_game_fully(&job.game, job.first, &job.clocks).await {
            Ok(judged) => {
                quality[job.white].merge(&judged.quality.0);
                quality[job.black].merge(&judged.quality.1);
                likeness[job.white].merge(&judged.likeness.0);
                likeness[job.black].merge(&judged.likeness.1);
                games += 1;
            }
            Err(e) => {
                failed.push(e);
                judge = None;
            }
        }
        if let Some(progress) = &progress {
            progress.inc();
            if !progress.is_bar() && (games + failed.len()).is_multiple_of(10) {
                tracing::info!("{} games judged", games + failed.len());
            }
        }
    }
    if let Some(j) = judge {
        j.quit().await;
    }
    let mut describe = format!(
        "{} games judged by {} at depth {depth}",
        games,
        name.unwrap_or_else(|| program.display().to_string())
    );
    if !failed.is_empty() {
        describe.push_str(&format!(
            "; {} not judged after a judge failure (first: {})",
            failed.len(),
            failed[0]
        ));
    }
    if skipped > 0 {
        describe.push_str(&format!("; {skipped} not judged (interrupted)"));
    }
    Judged {
        quality,
        likeness,
        describe,
    }
}

struct RecordContext<'a> {
    match_id: &'a str,
    tc: Option<Clock>,
    perf: &'a str,
    openings: &'a [Opening],
}

/// The results records of a game: one for each side that is one of our levels, from its side.
fn records_of(played: &PlayedGame, roster: &Roster, ctx: &RecordContext<'_>) -> Vec<GameRecord> {
    let s = played.scheduled;
    let opening = &ctx.openings[s.opening];
    let moves: Vec<String> = played
        .game
        .moves()
        .iter()
        .map(|m| played.game.to_uci(*m))
        .collect();
    let mut out = Vec::new();
    for (color, me, them, seed) in [
        (Color::White, s.white, s.black, played.white_seed),
        (Color::Black, s.black, s.white, played.black_seed),
    ] {
        let Some(params) = roster.level_params(me) else {
            continue;
        };
        let opponent = &roster.players[them];
        let result = match played.winner {
            None => Outcome::Draw,
            Some(w) if w == color => Outcome::Win,
            Some(_) => Outcome::Loss,
        };
        let fault = match &played.termination {
            Termination::Fault { side, .. } => Some(format!(
                "{} side ({}) {}",
                if *side == color {
                    "our"
                } else {
                    "the opponent's"
                },
                roster.players[if side.is_white() { s.white } else { s.black }].name,
                played.termination.describe()
            )),
            _ => None,
        };
        out.push(GameRecord {
            schema: SCHEMA_VERSION,
            game_id: format!("{}-{}", game_id(ctx.match_id, s.index), color_name(color)),
            source: Source::Arena,
            account: roster.players[me].name.clone(),
            level: params.level,
            offset: params.offset,
            coefficients_version: params.coefficients_version,
            engine: EngineRecord {
                nodes: params.nodes,
                noise_cp: params.noise_cp,
                hash_mb: params.hash_mb,
            },
            seed,
            started_at_ms: played.started_at_ms,
            finished_at_ms: played.finished_at_ms,
            rated: true,
            speed: Keyed::parse(
                &ctx.tc
                    .map_or_else(|| ctx.perf.to_string(), |tc| tc.speed().to_string()),
            ),
            perf: Keyed::parse(ctx.perf),
            variant: "standard".to_string(),
            initial_fen: opening
                .fen
                .clone()
                .unwrap_or_else(|| "startpos".to_string()),
            clock: ctx.tc.map(|tc| ClockRecord {
                initial_ms: tc.initial_ms,
                increment_ms: tc.increment_ms,
            }),
            color: Keyed::parse(color_name(color)),
            opponent: OpponentRecord {
                id: opponent.name.clone(),
                name: opponent.name.clone(),
                title: None,
                rating: opponent.rating,
                provisional: false,
                rd: None,
                bot: true,
            },
            our_rating: None,
            result,
            status: Keyed::parse(played.termination.status()),
            winner: played.winner.map(|w| Keyed::parse(color_name(w))),
            moves: moves.join(" "),
            fault,
            after_restart: None,
            opening_plies: Some(played.opening_plies as u32),
        });
    }
    out
}

/// The id of game `index` of a match; a level's record appends its colour.
fn game_id(match_id: &str, index: usize) -> String {
    format!("{match_id}-{index:05}")
}

/// The record of a game in which neither side is one of our levels (anchor against anchor).
fn anchor_record_of(
    played: &PlayedGame,
    roster: &Roster,
    ctx: &RecordContext<'_>,
) -> Option<anchors::AnchorGameRecord> {
    let s = played.scheduled;
    if roster.level_params(s.white).is_some() || roster.level_params(s.black).is_some() {
        return None;
    }
    let opening = &ctx.openings[s.opening];
    Some(anchors::AnchorGameRecord {
        record: anchors::ANCHOR_GAME.to_string(),
        schema: SCHEMA_VERSION,
        game_id: game_id(ctx.match_id, s.index),
        white: roster.players[s.white].name.clone(),
        black: roster.players[s.black].name.clone(),
        result: played.result_str().to_string(),
        status: played.termination.status().to_string(),
        initial_fen: opening
            .fen
            .clone()
            .unwrap_or_else(|| "startpos".to_string()),
        moves: played
            .game
            .moves()
            .iter()
            .map(|m| played.game.to_uci(*m))
            .collect::<Vec<_>>()
            .join(" "),
        seed: s.seed,
        started_at_ms: played.started_at_ms,
        finished_at_ms: played.finished_at_ms,
        fault: match &played.termination {
            Termination::Fault { side, .. } => Some(format!(
                "{} {}",
                roster.players[if side.is_white() { s.white } else { s.black }].name,
                played.termination.describe()
            )),
            _ => None,
        },
    })
}

fn color_name(c: Color) -> &'static str {
    if c.is_white() { "white" } else { "black" }
}

/// After every game: the progress bar on a terminal (the first player's score beside it), a
/// log line otherwise (under systemd, in a pipe or a file).
fn progress(
    players: &[PlayerSpec],
    played: &PlayedGame,
    scored: &[report::Scored],
    total: usize,
    started: Instant,
    bar: &Progress,
) {
    // The first player's score so far (in a gauntlet: the first level's).
    let (mut w, mut d, mut l) = (0, 0, 0);
    for g in scored.iter().filter(|g| g.white == 0 || g.black == 0) {
        let s = if g.white == 0 {
            g.white_score
        } else {
            1.0 - g.white_score
        };
        match s {
            1.0 => w += 1,
            0.0 => l += 1,
            _ => d += 1,
        }
    }
    let score = format!("{} +{w} ={d} -{l}", players[0].name);
    if bar.is_bar() {
        bar.inc();
        bar.set_message(score);
        return;
    }
    let done = scored.len();
    let elapsed = started.elapsed().as_secs_f64();
    let eta = elapsed / done as f64 * (total - done) as f64;
    let line = format!(
        "{done}/{total} games, {score}, {:.0} s elapsed, ~{:.0} s left",
        elapsed, eta
    );
    let s = played.scheduled;
    tracing::info!(
        "game {} {} - {} {} ({}); {line}",
        s.index + 1,
        players[s.white].name,
        players[s.black].name,
        played.result_str(),
        played.termination.describe()
    );
}
