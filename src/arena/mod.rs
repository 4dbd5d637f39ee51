//! Offline matches between our levels and external UCI engines: the match loop (games on
//! `--concurrency` workers, each written as it finishes, judged behind the match) and its final
//! report. The command line is `cli.rs`; what a match is asked to be, `options.rs`.

pub mod anchor_fit;
pub mod cli;
pub mod game;
pub mod judge;
pub mod judging;
pub mod likeness;
pub mod openings;
pub mod options;
pub mod pgn;
pub mod rebuild;
pub mod records;
pub mod report;
pub mod roster;
pub mod schedule;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::lichess::{Clock, Perf};
use crate::logging::Progress;
use crate::player::seat::{MoveLimits, PlayerKind, Seating, Timeouts};
use crate::results::ResultsLog;
use game::{PlayedGame, Termination};
use judging::{JudgeJob, Judged, judge_games};
use openings::Opening;
use options::ArenaOptions;
use records::{GameWriter, RecordContext, open_pgn, skip_recorded_games};
use roster::{PlayerSpec, Roster};
use schedule::{Format, ScheduledGame};

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

/// Plays the match described by `args` and returns its summary (also writing results, PGN
/// and report files).
pub fn run_match(args: &ArenaOptions) -> anyhow::Result<MatchSummary> {
    let (plan, mut games) = MatchPlan::new(args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(plan.concurrency + 2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    // Every external engine of this shard's games starts before the results file is opened:
    // one that cannot start ends the match here, with nothing written (else each of its games
    // would be recorded as lost by a crash). The schedule is already drawn, so the games and
    // their seeds are the same whether this passes or not.
    let needed = games.iter().flat_map(|g| [g.white, g.black]);
    runtime.block_on(plan.roster.start_engines(needed))?;
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
        let coefficients = args.coefficients()?;
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
        let shard = args
            .shard
            .resolve_from_process()
            .map_err(|e| anyhow::anyhow!("--shard: {e}"))?;
        let games = schedule::shard(
            schedule::schedule(&pairings, openings.len(), args.games_per_pairing, seed),
            shard,
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
            "arena {match_id}: {} players, {} pairings, {} games in shard {shard}, seed {seed}, concurrency {concurrency}",
            players.len(),
            pairings.len(),
            games.len(),
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
            think: args.think,
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
        Some(k) => anchor_fit::neighbour_pairings(&anchor_fit::scale_order(players), k),
        None if args.gauntlet => schedule::pairings(Format::Gauntlet, players.len(), levels_count),
        None => schedule::pairings(Format::RoundRobin, players.len(), levels_count),
    })
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
        text.push_str(&likeness::render_by_opponent(
            &names,
            &claimed,
            &played.judged.likeness,
            &played.judged.by_opponent,
        ));
    }
    text
}

/// The players in order: levels first (they form the gauntlet's first group), then external
/// engines, then Lichess AI presets. Returns them with the number of levels.
fn players_of(args: &ArenaOptions) -> anyhow::Result<(Vec<PlayerSpec>, usize)> {
    let mut players = Vec::new();
    for list in &args.levels {
        for level in crate::levels::parse_levels(list).map_err(anyhow::Error::msg)? {
            players.push(PlayerSpec::level(level));
        }
    }
    let levels = players.len();
    for spec in &args.engines {
        players.push(roster::parse_engine(spec).map_err(anyhow::Error::msg)?);
    }
    if !args.anchors.is_empty() {
        let file = args.anchors()?;
        for anchor in file.select(&args.anchors).map_err(anyhow::Error::msg)? {
            players.push(PlayerSpec::from(anchor));
        }
    }
    for list in &args.lichess_ai {
        for level in crate::levels::parse_levels(list).map_err(anyhow::Error::msg)? {
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
