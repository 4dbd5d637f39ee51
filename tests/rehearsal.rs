//! A rehearsal of the live calibration loop (issue 9), as a benchmark: the real `ladder run`
//! plays the in-process sandbox on 127.0.0.1, where every challenger is an anchor of the rating
//! scale (calibration/anchors.toml: Stockfish `UCI_Elo`, Fairy-Stockfish emulating the Lichess AI
//! levels, the built-in movers) posing as a person rated at the anchor's fitted rating. The
//! daemon starts from deliberately wrong coefficients (the shipped file with every level's offset
//! shifted); each cycle waits until every level has its games at the current version, runs
//! `ladder calibrate --apply` as an operator would, and sends SIGHUP so new games use the new
//! version. It prints each level's estimate and distance from its target per cycle and asserts
//! only what a working loop must do: it moves off the wrong start and the mean distance falls.
//!
//! ```sh
//! cargo build --release
//! REHEARSAL_LEVELS=1,4,7,10 REHEARSAL_GAMES=40 REHEARSAL_CYCLES=3 \
//!     cargo test --release --test rehearsal -- --ignored --nocapture
//! ```
//!
//! Settings (environment): `REHEARSAL_LEVELS` (default `1,4,7,10`), `REHEARSAL_GAMES` (games per
//! level per cycle, default 40), `REHEARSAL_CYCLES` (3), `REHEARSAL_SHIFT` (added to every
//! offset, default 1.5: about 300 Elo too strong), `REHEARSAL_ANCHORS` (anchors per level,
//! nearest the level's target, default 3), `REHEARSAL_TC` (`180+0`), `REHEARSAL_CYCLE_TIMEOUT_S` (1800), `REHEARSAL_DIR`
//! (keep the files there instead of a temporary directory), `REHEARSAL_SEED` (1). Targets are
//! the offline loop's: 450 + 210 (L − 1) on the anchors' scale (calibration/arena/run.sh).
//!
//! Every challenger has a slot of its own at its bot (an account's `max_games` is the number of
//! its challengers) and challenges again a second after its game ends, so no challenge is ever
//! declined (a first version of this rehearsal, declining about one challenge a second, saw
//! declines then held to the shared pacer hold back the account's moves and a level lose on
//! time; neither holds now, but every declined challenge is a game not played).

mod common {
    pub mod collected;
    pub mod config;
    pub mod env;
    pub mod process;
}

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::collected::Daemon;
use common::config::{account_table, ladder_toml};
use common::env::env_or;
use common::process::ladder_run;
use ladder::anchors::{Anchor, AnchorsFile};
use ladder::calibration::select::{Filter, Opponents, Versions, select};
use ladder::levels::{Coefficients, level_key};
use ladder::player::seat::PlayerKind;
use ladder::results::read_results;
use ladder::sandbox::{ChallengerConfig, Sandbox, SandboxConfig};

const TARGET_FROM: f64 = 450.0;
const TARGET_STEP: f64 = 210.0;
/// Anchors rated less certainly than this are not used (the offline loop's --max-anchor-se).
const MAX_ANCHOR_SE: f64 = 150.0;

struct Settings {
    levels: Vec<u32>,
    games: usize,
    cycles: u32,
    shift: f64,
    anchors_per_level: usize,
    time_control: (u32, u32),
    cycle_timeout: Duration,
    dir: Option<PathBuf>,
    seed: u64,
}

impl Settings {
    fn from_env() -> Settings {
        let levels: Vec<u32> = std::env::var("REHEARSAL_LEVELS")
            .unwrap_or_else(|_| "1,4,7,10".to_string())
            .split(',')
            .map(|l| {
                l.trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("REHEARSAL_LEVELS: {l:?} is not a level"))
            })
            .collect();
        assert!(
            !levels.is_empty() && levels.iter().all(|&l| (1..=20).contains(&l)),
            "REHEARSAL_LEVELS: levels 1..20"
        );
        let tc = std::env::var("REHEARSAL_TC").unwrap_or_else(|_| "180+0".to_string());
        let (initial, increment) = tc
            .split_once('+')
            .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
            .unwrap_or_else(|| panic!("REHEARSAL_TC={tc:?}: initial+increment in seconds"));
        Settings {
            games: env_or("REHEARSAL_GAMES", 40),
            cycles: env_or("REHEARSAL_CYCLES", 3),
            shift: env_or("REHEARSAL_SHIFT", 1.5),
            anchors_per_level: env_or("REHEARSAL_ANCHORS", 3),
            time_control: (initial, increment),
            cycle_timeout: Duration::from_secs(env_or("REHEARSAL_CYCLE_TIMEOUT_S", 1800)),
            dir: std::env::var("REHEARSAL_DIR").ok().map(PathBuf::from),
            seed: env_or("REHEARSAL_SEED", 1),
            levels,
        }
    }
}

fn target(level: u32) -> f64 {
    TARGET_FROM + TARGET_STEP * f64::from(level - 1)
}

fn bot_name(level: u32) -> String {
    format!("rehearsal-l{level}")
}

fn token_env(level: u32) -> String {
    format!("LADDER_REHEARSAL_TOKEN_L{level}")
}

/// The `k` fitted anchors rated nearest `target`, each certain to within [`MAX_ANCHOR_SE`].
fn anchors_near(anchors: &AnchorsFile, target: f64, k: usize) -> Vec<&Anchor> {
    let mut rated: Vec<(&Anchor, f64)> = anchors
        .anchors
        .iter()
        .filter(|a| a.fitted.se.unwrap_or(0.0) <= MAX_ANCHOR_SE)
        .filter_map(|a| Some((a, a.fitted.rating?)))
        .collect();
    rated.sort_by(|a, b| (a.1 - target).abs().total_cmp(&(b.1 - target).abs()));
    rated.into_iter().take(k).map(|(a, _)| a).collect()
}

/// The shipped coefficients with every offset (and those of the rehearsal's levels) shifted by
/// `shift`, as version 1 of a fresh gain schedule, without measured ratings.
fn wrong_coefficients(levels: &[u32], shift: f64) -> Coefficients {
    let mut c = Coefficients::builtin();
    let shipped = c.version;
    for &level in levels {
        c.offsets.entry(level_key(f64::from(level))).or_insert(0.0);
    }
    for offset in c.offsets.values_mut() {
        *offset += shift;
    }
    c.version = 1;
    c.calibration_cycle = 0;
    c.ratings.clear();
    c.ratings_source = format!(
        "rehearsal start: the shipped version {shipped} with every offset shifted by {shift:+}"
    );
    c
}

fn accounts_toml(base_url: &str, s: &Settings) -> String {
    let daemon = format!(
        "results = \"results.jsonl\"\ncoefficients = \"coefficients.toml\"\nsearch_threads = 2\n\
         max_games = {all_games}\nabort_after_s = 60\nshutdown_grace_s = 30\n\
         status_interval_s = 60\n",
        all_games = s.levels.len() * s.anchors_per_level,
    );
    let challenge = format!(
        "variants = [\"standard\"]\nspeeds = [\"bullet\", \"blitz\", \"rapid\"]\n\
         min_initial_s = 60\nrated = true\ncasual = true\naccept_bots = false\n\
         max_games = {per_account}\nmax_games_per_opponent = 1\n",
        per_account = s.anchors_per_level,
    );
    let mut out = format!(
        "# The rehearsal's ladder (tests/rehearsal.rs): one account per level, moving at once.{}",
        ladder_toml(base_url, &daemon, &challenge)
    );
    for &level in &s.levels {
        out.push_str(&account_table(
            &bot_name(level),
            &token_env(level),
            level,
            "think_time = \"fast\"\n",
        ));
    }
    out
}

/// `ladder run` on `<dir>/accounts.toml` with `tokens` in its environment; everything it
/// writes to stderr is also copied to daemon.log.
fn spawn_daemon(dir: &Path, tokens: &[(String, String)]) -> Daemon {
    let mut command = ladder_run(&dir.join("accounts.toml"));
    command.envs(tokens.iter().map(|(key, value)| (key, value)));
    let file = std::fs::File::create(dir.join("daemon.log")).unwrap();
    Daemon::collect(command, Some(file))
}

/// Lines of the daemon's log so far that contain `part`.
fn count_lines(log: &str, part: &str) -> usize {
    log.lines().filter(|l| l.contains(part)).count()
}

/// Games per level key that `ladder calibrate` would use at coefficients `version` (blitz,
/// against people, no fault, not aborted).
fn usable_games(results: &Path, version: u32) -> BTreeMap<String, usize> {
    if !results.exists() {
        return BTreeMap::new();
    }
    let read = read_results(&[results.to_path_buf()]).expect("the results file reads");
    let filter = Filter::new(
        "blitz",
        Opponents::Humans,
        Versions::Range(version, version),
    );
    select(&read.records, &filter)
        .levels
        .into_iter()
        .map(|(key, games)| (key, games.observations.len()))
        .collect()
}

/// One level's row of calibrate's "Levels" table.
#[derive(Clone, Debug)]
struct Row {
    games: usize,
    wdl: String,
    estimate: Option<f64>,
    ci95: Option<f64>,
    target: f64,
    offset: String,
    status: String,
}

/// The "## Levels" table of calibrate's Markdown report, by level key.
fn parse_levels_table(report: &str) -> BTreeMap<String, Row> {
    let mut rows = BTreeMap::new();
    let mut in_levels = false;
    for line in report.lines() {
        if line.starts_with("## ") {
            in_levels = line.trim() == "## Levels";
            continue;
        }
        if !in_levels || !line.starts_with('|') {
            continue;
        }
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if cells.len() < 13 || cells[0].parse::<f64>().is_err() {
            continue;
        }
        rows.insert(
            cells[0].to_string(),
            Row {
                games: cells[2].parse().unwrap_or(0),
                wdl: cells[3].to_string(),
                estimate: cells[5].parse().ok(),
                ci95: cells[6].parse().ok(),
                target: cells[7].parse().unwrap_or(f64::NAN),
                offset: cells[9].to_string(),
                status: cells[12].to_string(),
            },
        );
    }
    rows
}

/// One cycle as measured: the version played, calibrate's table, and how long it took.
struct Cycle {
    version: u32,
    rows: BTreeMap<String, Row>,
    play_time: Duration,
    next_version: u32,
}

impl Cycle {
    /// Mean |estimate − target| over the levels with an estimate.
    fn mean_distance(&self) -> f64 {
        let d: Vec<f64> = self
            .rows
            .values()
            .filter_map(|r| Some((r.estimate? - r.target).abs()))
            .collect();
        d.iter().sum::<f64>() / d.len().max(1) as f64
    }
}

fn print_table(levels: &[u32], cycles: &[Cycle]) {
    println!(
        "\n| cycle | version | level | games | W/D/L | estimate ±95% | target | distance | offset | status |"
    );
    println!("|---:|---:|---:|---:|---|---:|---:|---:|---|---|");
    for (k, c) in cycles.iter().enumerate() {
        for &level in levels {
            let key = level_key(f64::from(level));
            let Some(r) = c.rows.get(&key) else {
                println!(
                    "| {} | {} | {key} | - | - | - | - | - | - | no row |",
                    k + 1,
                    c.version
                );
                continue;
            };
            let estimate = match (r.estimate, r.ci95) {
                (Some(e), Some(ci)) => format!("{e:.0} ± {ci:.0}"),
                _ => "-".to_string(),
            };
            let distance = r
                .estimate
                .map_or("-".to_string(), |e| format!("{:+.0}", e - r.target));
            println!(
                "| {} | {} | {key} | {} | {} | {estimate} | {:.0} | {distance} | {} | {} |",
                k + 1,
                c.version,
                r.games,
                r.wdl,
                r.target,
                r.offset,
                r.status
            );
        }
    }
    println!("\n| cycle | version played | games played in | mean abs distance | applied |");
    println!("|---:|---:|---:|---:|---|");
    for (k, c) in cycles.iter().enumerate() {
        println!(
            "| {} | {} | {:.0} s | {:.0} | v{} |",
            k + 1,
            c.version,
            c.play_time.as_secs_f64(),
            c.mean_distance(),
            c.next_version
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: a rehearsal of the live loop, minutes to an hour (see the module comment)"]
async fn rehearsal_of_the_live_loop_from_wrong_coefficients() {
    let s = Settings::from_env();
    let started = Instant::now();
    let anchors = AnchorsFile::builtin();
    let mut challengers = Vec::new();
    for &level in &s.levels {
        let near = anchors_near(&anchors, target(level), s.anchors_per_level);
        assert!(!near.is_empty(), "no fitted anchor for level {level}");
        for anchor in near {
            if let PlayerKind::Uci { command, .. } = &anchor.kind
                && !command.program.exists()
            {
                eprintln!(
                    "skipped: anchor {} needs {}, which is not installed",
                    anchor.name,
                    command.program.display()
                );
                return;
            }
            let mut c = ChallengerConfig::anchor(&format!("{}-l{level}", anchor.name), anchor)
                .expect("a fitted anchor");
            c.targets = vec![bot_name(level)];
            c.time_controls = vec![s.time_control];
            // Casual: the anchors' ratings stay where the fit put them.
            c.rated = false;
            c.interval = Some(Duration::from_secs(1));
            challengers.push(c);
        }
    }

    let bots: Vec<String> = s.levels.iter().map(|&l| bot_name(l)).collect();
    let bot_refs: Vec<&str> = bots.iter().map(String::as_str).collect();
    let mut config = SandboxConfig::with_bots(&bot_refs);
    config.seed = Some(s.seed);
    config.challengers = challengers;
    let challenger_list: Vec<String> = config
        .challengers
        .iter()
        .map(|c| format!("{} ({})", c.name, c.rating))
        .collect();
    let sb = Sandbox::start(config).await.unwrap();

    let temp = tempfile::tempdir().unwrap();
    let dir = s.dir.clone().unwrap_or_else(|| temp.path().to_path_buf());
    std::fs::create_dir_all(&dir).unwrap();
    assert!(
        !dir.join("results.jsonl").exists(),
        "{} already holds a rehearsal: give an empty REHEARSAL_DIR",
        dir.display()
    );
    let coefficients_path = dir.join("coefficients.toml");
    std::fs::write(
        &coefficients_path,
        wrong_coefficients(&s.levels, s.shift).to_toml(),
    )
    .unwrap();
    std::fs::write(dir.join("accounts.toml"), accounts_toml(sb.base_url(), &s)).unwrap();
    let tokens: Vec<(String, String)> = s
        .levels
        .iter()
        .map(|&l| {
            (
                token_env(l),
                sb.token(&bot_name(l)).unwrap().expose().to_string(),
            )
        })
        .collect();

    println!(
        "rehearsal: levels {:?}, {} games per level per cycle, {} cycles, offsets {:+} from the \
         shipped coefficients, {}+{}, files in {}",
        s.levels,
        s.games,
        s.cycles,
        s.shift,
        s.time_control.0,
        s.time_control.1,
        dir.display()
    );
    println!("challengers: {}", challenger_list.join(", "));
    let mut daemon = spawn_daemon(&dir, &tokens);
    let results = dir.join("results.jsonl");
    let mut cycles: Vec<Cycle> = Vec::new();
    for k in 1..=s.cycles {
        let version = Coefficients::load(&coefficients_path).unwrap().version;
        let cycle_start = Instant::now();
        let mut last_progress = Instant::now();
        loop {
            let counts = usable_games(&results, version);
            let have = |l: u32| counts.get(&level_key(f64::from(l))).copied().unwrap_or(0);
            if s.levels.iter().all(|&l| have(l) >= s.games) {
                break;
            }
            assert!(daemon.alive(), "the daemon exited:\n{}", daemon.log());
            assert!(
                cycle_start.elapsed() < s.cycle_timeout,
                "cycle {k}: not every level reached {} games at version {version} within \
                 {:?}: {counts:?}",
                s.games,
                s.cycle_timeout
            );
            if last_progress.elapsed() > Duration::from_secs(60) {
                last_progress = Instant::now();
                println!(
                    "  cycle {k}, v{version}, {:.0} s: {}",
                    cycle_start.elapsed().as_secs_f64(),
                    s.levels
                        .iter()
                        .map(|&l| format!("L{l} {}", have(l)))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        let play_time = cycle_start.elapsed();

        // What an operator runs (the calibration timer's command, docs/operating.md), with the
        // report kept per cycle, the rehearsal's games per level as the games a level needs
        // before it may move, and without the human-likeness pass (the people here are
        // engines, and it costs about 2 s a game).
        let report_dir = dir.join(format!("report-cycle-{k}"));
        let args: Vec<String> = vec![
            "calibrate".into(),
            "--apply".into(),
            "--accounts".into(),
            dir.join("accounts.toml").display().to_string(),
            "--results".into(),
            results.display().to_string(),
            "--coefficients".into(),
            coefficients_path.display().to_string(),
            "--report-dir".into(),
            report_dir.display().to_string(),
            "--min-games".into(),
            s.games.to_string(),
            "--likeness-games".into(),
            "0".into(),
            // The rehearsal's own targets, written into its coefficients' [targets].
            "--target-from".into(),
            TARGET_FROM.to_string(),
            "--target-step".into(),
            TARGET_STEP.to_string(),
        ];
        println!("cycle {k}: ladder {}", args.join(" "));
        let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_ladder"))
            .args(&args)
            .env("RUST_LOG", "warn")
            .output()
            .await
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout).to_string();
        assert!(
            output.status.success(),
            "calibrate failed ({}):\n{stdout}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        let rows = parse_levels_table(&stdout);
        let next_version = Coefficients::load(&coefficients_path).unwrap().version;
        if next_version != version {
            let reloaded = "reload: coefficients for new games";
            let reloads = count_lines(&daemon.log(), reloaded);
            daemon.signal("HUP");
            daemon
                .wait_for_log("no reload after SIGHUP", Duration::from_secs(30), |log| {
                    count_lines(log, reloaded) != reloads
                })
                .await;
        }
        cycles.push(Cycle {
            version,
            rows,
            play_time,
            next_version,
        });
        print_table(&s.levels, &cycles);
    }
    daemon.signal("TERM");
    let stop = Instant::now();
    while daemon.alive() && stop.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let total_games = read_results(std::slice::from_ref(&results))
        .unwrap()
        .records
        .len();
    println!(
        "\nrehearsal done in {:.0} s: {total_games} games logged, files in {}",
        started.elapsed().as_secs_f64(),
        dir.display()
    );
    sb.stop().await;

    // What a working loop must do, whatever the numbers.
    let first = &cycles[0];
    for &level in &s.levels {
        let row = first.rows.get(&level_key(f64::from(level)));
        assert!(
            row.is_some_and(|r| r.estimate.is_some()),
            "cycle 1 has no estimate for level {level}"
        );
    }
    assert!(
        first.rows.values().any(|r| r.status == "moved") && first.next_version > first.version,
        "levels {:+} off in x must move in the first cycle",
        s.shift
    );
    if let Some(last) = cycles.last().filter(|_| cycles.len() >= 2) {
        assert!(
            last.mean_distance() < first.mean_distance(),
            "the mean distance from the targets did not fall: cycle 1 {:.0}, cycle {} {:.0}",
            first.mean_distance(),
            cycles.len(),
            last.mean_distance()
        );
    }
}
