//! `ladder arena` end to end: matches between our levels run to the end and their results read
//! back; broken external engines lose their games without stopping the match, but one that
//! cannot start stops it before anything is written; same seed, same games; shards partition the
//! schedule; Stockfish and Fairy-Stockfish anchors when installed.

mod common {
    pub mod quick_match;
}

use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Parser;
use common::quick_match::QUICK_MATCH;
use ladder::arena::options::ArenaOptions;
use ladder::arena::rebuild::report_from_results;
use ladder::arena::schedule::{self, Format, Shard};
use ladder::arena::{MatchSummary, run_match};
use ladder::calibration::select::{Filter, Versions, select};
use ladder::engine::Game;
use ladder::results::{Outcome, Source, read_results};

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: ArenaOptions,
}

/// Arena options; the moves are not judged (tests/anchors.rs covers the judge), which keeps
/// these matches fast.
fn args(list: &[&str]) -> ArenaOptions {
    let argv = ["arena", "--judge-depth", "0"]
        .into_iter()
        .chain(list.iter().copied());
    Cli::try_parse_from(argv)
        .expect("valid arena arguments")
        .args
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/arena")
        .join(name)
}

fn fake(mode: &str) -> String {
    format!(
        "name=fake-{mode},cmd={},arg={mode}",
        fixture("fake_engine.sh").display()
    )
}

fn run(list: &[&str]) -> MatchSummary {
    run_match(&args(list)).expect("the match runs")
}

#[test]
fn level_match_runs_to_the_end_and_its_results_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("r.jsonl");
    let pgn = dir.path().join("g.pgn");
    let mut list = QUICK_MATCH.to_vec();
    list.extend(["--results", results.to_str().unwrap()]);
    list.extend(["--pgn", pgn.to_str().unwrap()]);
    let summary = run(&list);
    assert_eq!(summary.games.len(), 4);
    assert!(
        summary.report.contains("| level-1 | level-2 | 4 |"),
        "{}",
        summary.report
    );

    let read = read_results(std::slice::from_ref(&results)).unwrap();
    assert!(read.warnings.is_empty(), "{:?}", read.warnings);
    // Both sides are levels: one record per side, eight in all, each game seen from both.
    assert_eq!(read.records.len(), 8);
    for r in &read.records {
        assert_eq!(r.header.source, Source::Arena);
        assert!(r.header.account == "level-1" || r.header.account == "level-2");
        assert_ne!(r.header.account, r.opponent.name);
        assert!(r.fault.is_none());
        // The moves replay legally from the initial position and end the game by the rules.
        let moves: Vec<&str> = r.moves.split_whitespace().collect();
        let fen = (r.initial_fen != "startpos").then_some(r.initial_fen.as_str());
        let game = Game::from_uci_moves(fen, &moves, false).unwrap();
        assert!(
            game.outcome().is_some(),
            "{} did not end by the rules",
            r.game_id
        );
        let other = read
            .records
            .iter()
            .find(|o| o.game_id != r.game_id && o.moves == r.moves && o.color != r.color)
            .expect("the other side's record");
        let mirrored = match r.result {
            Outcome::Win => Outcome::Loss,
            Outcome::Loss => Outcome::Win,
            x => x,
        };
        assert_eq!(other.result, mirrored);
    }
    let text = std::fs::read_to_string(&pgn).unwrap();
    assert_eq!(text.matches("[Event ").count(), 4);
    // The same command again resumes: every game is in the results file, none is played, and
    // the report counts the four it resumed with their scores (it once said "0 games").
    let pairing_row = |report: &str| {
        report
            .lines()
            .find(|l| l.starts_with("| level-1 | level-2 |"))
            .map(str::to_string)
    };
    let resumed = run(&list);
    assert!(resumed.games.is_empty(), "{}", resumed.report);
    assert!(
        resumed.report.contains("4 games: 4 resumed from"),
        "{}",
        resumed.report
    );
    assert!(pairing_row(&summary.report).is_some());
    assert_eq!(pairing_row(&resumed.report), pairing_row(&summary.report));
    // The report rebuilt from the results counts each game once, with the same scores.
    let again = report_from_results(&[results], None).unwrap();
    let row = |report: &str| {
        report
            .lines()
            .find(|l| l.starts_with("| level-1 | level-2 |"))
            .map(str::to_string)
    };
    assert!(row(&again).is_some(), "{again}");
    assert_eq!(row(&again), row(&summary.report));
}

#[test]
fn results_against_a_rated_uci_engine_feed_calibration() {
    // Our own binary's UCI front end at level 3 stands in for an anchor of known rating.
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("r.jsonl");
    let anchor = format!(
        "name=uci-l3,cmd={},arg=uci,option.Level=3,rating=1000,nodes=300",
        env!("CARGO_BIN_EXE_ladder")
    );
    let summary = run(&[
        "--level",
        "1",
        "--engine",
        &anchor,
        "--games-per-pairing",
        "4",
        "--seed",
        "11",
        "--results",
        results.to_str().unwrap(),
    ]);
    assert!(summary.games.iter().all(|g| !g.fault), "{}", summary.report);
    let read = read_results(&[results]).unwrap();
    assert_eq!(read.records.len(), 4);
    // The games were played with the shipped coefficients, whatever version calibration has
    // brought them to.
    let shipped = ladder::levels::Coefficients::builtin().version;
    let filter = Filter {
        sources: vec![Source::Arena],
        ..Filter::new(
            "blitz",
            ladder::calibration::select::Opponents::All,
            Versions::Range(shipped, shipped),
        )
    };
    let selection = select(&read.records, &filter);
    assert_eq!(selection.excluded.total(), 0, "{:?}", selection.excluded);
    assert_eq!(selection.used, 4);
    let level = &selection.levels["1"];
    assert_eq!(level.observations.len(), 4);
    assert!(level.observations.iter().all(|o| o.opponent == 1000.0));
    assert!(summary.report.contains("performance vs anchors"));
}

#[test]
fn broken_engines_lose_their_games_and_the_match_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("r.jsonl");
    // fake-once starts for the check before the match and crashes in its first game; the
    // process started for its second game never finishes the handshake.
    let once = format!(
        "{},arg={}",
        fake("once"),
        dir.path().join("once-started").display()
    );
    let (crash, illegal, hang) = (fake("crash"), fake("illegal"), fake("hang"));
    let summary = run(&[
        "--level",
        "1",
        "--engine",
        &crash,
        "--engine",
        &illegal,
        "--engine",
        &hang,
        "--engine",
        &once,
        "--gauntlet",
        "--nodes",
        "100",
        "--games-per-pairing",
        "2",
        "--move-timeout",
        "300",
        "--startup-timeout",
        "300",
        "--seed",
        "3",
        "--results",
        results.to_str().unwrap(),
    ]);
    // Every game was played, each engine twice (so a crashed one was restarted).
    assert_eq!(summary.games.len(), 8);
    let read = read_results(&[results]).unwrap();
    assert_eq!(read.records.len(), 8);
    let mut once_statuses = Vec::new();
    for r in &read.records {
        assert_eq!(r.result, Outcome::Win, "{} {}", r.opponent.name, r.status);
        let expected = match r.opponent.name.as_str() {
            "fake-crash" => "crash",
            "fake-illegal" => "illegalmove",
            "fake-hang" => "hang",
            "fake-once" => {
                once_statuses.push(r.status.as_str());
                continue;
            }
            other => panic!("unexpected opponent {other}"),
        };
        assert_eq!(r.status, expected);
        let fault = r.fault.as_deref().expect("a malfunction is marked");
        assert!(fault.contains("the opponent's side"), "{fault}");
    }
    // An engine that started for the match and then failed is a fault of its games, however
    // it fails, and never stops the match: one crash in a game, one start that hung.
    once_statuses.sort_unstable();
    assert_eq!(once_statuses, ["crash", "hang"]);
    assert!(
        summary
            .report
            .contains("| level-1 | fake-crash | 2 | 2 | 0 | 0 | 2 |")
    );
}

#[test]
fn engines_that_cannot_start_stop_the_match_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("bin");
    let stockfish = missing.join("stockfish");
    let fairy = missing.join("fairy-stockfish");
    let not_executable = dir.path().join("engine.txt");
    std::fs::write(&not_executable, "not a program\n").unwrap();
    let ghost = format!("name=ghost,cmd={},nodes=100", stockfish.display());
    let plain = format!("name=plain,cmd={},nodes=100", not_executable.display());
    let mute = format!("{},nodes=100", fake("startup"));
    let arena = |results: &Path| {
        Command::new(env!("CARGO_BIN_EXE_ladder"))
            .args(["arena", "--judge-depth", "0", "--level", "1", "--gauntlet"])
            .args(["--engine", &ghost, "--engine", &plain, "--engine", &mute])
            .args([
                "--lichess-ai",
                "1",
                "--fairy-stockfish",
                fairy.to_str().unwrap(),
            ])
            .args(["--engine", &format!("{},nodes=100", fake("crash"))])
            .args(["--games-per-pairing", "2", "--seed", "3"])
            .args(["--startup-timeout", "500"])
            .arg("--results")
            .arg(results)
            .env("RUST_LOG", "warn")
            .output()
            .expect("ladder runs")
    };

    // A new results file is not even created.
    let results = dir.path().join("r.jsonl");
    let out = arena(&results);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(!results.exists(), "{stderr}");
    // Each engine that cannot start is named with its program and why, once; the healthy one
    // is not.
    for named in [
        format!("ghost ({})", stockfish.display()),
        format!("lichess-ai-1 ({})", fairy.display()),
        format!("plain ({})", not_executable.display()),
        "fake-startup (".to_string(),
    ] {
        assert_eq!(stderr.matches(&named).count(), 1, "{named}: {stderr}");
    }
    assert!(!stderr.contains("fake-crash"), "{stderr}");
    assert!(
        stderr.contains("4 external engines cannot start"),
        "{stderr}"
    );
    assert!(stderr.contains("No such file or directory"), "{stderr}");
    assert!(stderr.contains("no answer to `uci`"), "{stderr}");
    // What to do: the Debian packages of the known engines in one command, the others' fixes.
    assert!(
        stderr.contains("fix: install Debian's package (it puts the engine in /usr/games): apt-get install stockfish fairy-stockfish\n"),
        "{stderr}"
    );
    assert!(stderr.contains("chmod +x"), "{stderr}");
    assert!(stderr.contains("--startup-timeout"), "{stderr}");
    assert!(!stderr.contains("crashed"), "no game was played: {stderr}");

    // An existing results file is left as it was, byte for byte (even a torn last line, which
    // opening it for the match would close with a newline).
    let kept = "{\"game_id\":\"earlier\"}\n{\"game_id\":\"torn";
    std::fs::write(&results, kept).unwrap();
    let out = arena(&results);
    assert!(!out.status.success());
    assert_eq!(std::fs::read_to_string(&results).unwrap(), kept);
}

#[test]
fn same_seed_reproduces_the_pgn_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let play = |name: &str| {
        let pgn = dir.path().join(format!("{name}.pgn"));
        let results = dir.path().join(format!("{name}.jsonl"));
        run(&[
            "--level",
            "1,3",
            "--openings",
            fixture("openings.epd").to_str().unwrap(),
            "--games-per-pairing",
            "4",
            "--concurrency",
            "3",
            "--seed",
            "42",
            "--results",
            results.to_str().unwrap(),
            "--pgn",
            pgn.to_str().unwrap(),
        ]);
        // The date is the only header that may differ between two runs.
        std::fs::read_to_string(pgn)
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with("[Date "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let first = play("a");
    assert_eq!(first.matches("[Event ").count(), 4);
    assert!(first.contains("[FEN "), "EPD openings are set up");
    assert_eq!(first, play("b"));
}

#[test]
fn shards_partition_the_schedule() {
    let pairings = schedule::pairings(Format::RoundRobin, 5, 5);
    assert_eq!(pairings.len(), 10);
    let all = schedule::schedule(&pairings, 7, 6, 99);
    assert_eq!(all.len(), 60);
    let mut seen = vec![0; all.len()];
    for i in 1..=4 {
        let shard: Shard = format!("{i}/4").parse().unwrap();
        for g in schedule::shard(all.clone(), shard) {
            assert_eq!(
                g, all[g.index],
                "a shard plays the game of the full schedule"
            );
            seen[g.index] += 1;
        }
    }
    assert!(
        seen.iter().all(|&n| n == 1),
        "every game in exactly one shard"
    );
    assert!("0/4".parse::<Shard>().is_err() && "5/4".parse::<Shard>().is_err());
    // Every pairing plays each opening with both colours.
    for &(a, b) in &pairings {
        let games: Vec<_> = all
            .iter()
            .filter(|g| (g.white, g.black) == (a, b) || (g.white, g.black) == (b, a))
            .collect();
        for pair in games.chunks(2) {
            assert_eq!(pair[0].opening, pair[1].opening);
            assert_eq!(pair[0].white, pair[1].black);
        }
    }
    let gauntlet = schedule::pairings(Format::Gauntlet, 5, 2);
    assert_eq!(gauntlet, [(0, 2), (0, 3), (0, 4), (1, 2), (1, 3), (1, 4)]);
}

#[test]
fn bad_arguments_are_refused_with_a_reason() {
    let err = run_match(&args(&[
        "--level",
        "1",
        "--engine",
        "cmd=/bin/true,colour=red",
    ]))
    .unwrap_err()
    .to_string();
    assert!(err.contains("colour"), "{err}");
    let err = run_match(&args(&["--level", "1", "--engine", &fake("hang")]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("--nodes"), "{err}");
    let err = run_match(&args(&["--level", "1"])).unwrap_err().to_string();
    assert!(err.contains("two players"), "{err}");
    // Pacing is paid on a clock: without one it is refused, and so is an unknown pace.
    let parse = |list: &[&str]| {
        Cli::try_parse_from(["arena"].into_iter().chain(list.iter().copied()))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    let err = parse(&["--level", "1..2", "--think", "human"]);
    assert!(err.contains("--tc"), "{err}");
    let err = parse(&["--level", "1..2", "--tc", "60+0", "--think", "slow"]);
    assert!(err.contains("fast or human"), "{err}");
}

/// `--think human` paces the levels as the daemon paces them live: each move costs the level's
/// clock what a person of its rating would take, and the match does not wait for it. So the
/// levels come into time trouble as people do (the human-likeness report's clock columns)
/// while the games take the wall time of fixed-node ones. The PGN shows each move's clock as
/// Lichess writes it.
#[test]
fn human_paced_levels_spend_their_clock_without_the_match_waiting() {
    let largest_drop = |pace: &str| {
        let dir = tempfile::tempdir().unwrap();
        let results = dir.path().join("r.jsonl");
        let pgn = dir.path().join("g.pgn");
        let started = std::time::Instant::now();
        let summary = run(&[
            "--level",
            "1..2",
            "--tc",
            "180+0",
            "--think",
            pace,
            "--games-per-pairing",
            "2",
            "--seed",
            "5",
            "--concurrency",
            "2",
            "--results",
            results.to_str().unwrap(),
            "--pgn",
            pgn.to_str().unwrap(),
        ]);
        let wall = started.elapsed();
        assert_eq!(summary.games.len(), 2);
        let text = std::fs::read_to_string(&pgn).unwrap();
        let left: Vec<u64> = text
            .split("[%clk ")
            .skip(1)
            .map(|rest| {
                let hms: Vec<u64> = rest[..rest.find(']').unwrap()]
                    .split(':')
                    .map(|n| n.parse().unwrap())
                    .collect();
                hms[0] * 3600 + hms[1] * 60 + hms[2]
            })
            .collect();
        assert!(left.len() > 40, "a clock after every move:\n{text}");
        let drop = std::time::Duration::from_secs(180 - left.iter().min().unwrap());
        (drop, wall)
    };
    let (human, wall) = largest_drop("human");
    assert!(
        human > std::time::Duration::from_secs(60),
        "a person spends a third of a 3-minute clock over a game: {human:?}"
    );
    assert!(
        wall < human,
        "the match waited for the pace: {wall:?} of wall time for {human:?} on the clock"
    );
    // Paced fast, a clock pays only the time its searches really took (within the second the
    // PGN's clock is rounded to), however busy the machine.
    let (fast, wall) = largest_drop("fast");
    assert!(
        fast <= wall + std::time::Duration::from_secs(1),
        "paced fast, the clock pays only the searches: {fast:?} in {wall:?}"
    );
    assert!(fast < human / 4, "{fast:?} against {human:?}");
}

#[test]
fn stockfish_and_lichess_ai_anchors_put_a_level_on_their_scale() {
    for bin in ["/usr/games/stockfish", "/usr/games/fairy-stockfish"] {
        if !Path::new(bin).exists() {
            eprintln!(
                "SKIPPED: {bin} is not installed (apt-get install stockfish fairy-stockfish)"
            );
            return;
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("r.jsonl");
    let summary = run(&[
        "--level",
        "1",
        "--engine",
        "name=sf1350,cmd=/usr/games/stockfish,option.UCI_LimitStrength=true,option.UCI_Elo=1350,rating=1350,movetime=20",
        "--lichess-ai",
        "1",
        "--gauntlet",
        "--games-per-pairing",
        "2",
        "--seed",
        "5",
        "--results",
        results.to_str().unwrap(),
    ]);
    assert_eq!(summary.games.len(), 4);
    assert!(summary.games.iter().all(|g| !g.fault), "{}", summary.report);
    let read = read_results(&[results]).unwrap();
    let mut anchors: Vec<f64> = read
        .records
        .iter()
        .map(|r| r.opponent.rating.expect("anchors carry their rating"))
        .collect();
    anchors.sort_by(f64::total_cmp);
    assert_eq!(anchors, [800.0, 800.0, 1350.0, 1350.0]);
    assert!(summary.report.contains("on the anchors' scale"));
    assert!(summary.report.contains("| level-1 |"));
}
