//! Malformed and repeated input, end to end through the real binary: a results line that is not
//! UTF-8 stops neither the daemon nor the arena (each names the file and line it skipped), and
//! `arena --pgn` appends as `--results` does.

mod common {
    pub mod cli;
    pub mod stderr;
}

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::cli::{LADDER, ladder_output, texts};
use common::stderr::read_until_line;
use ladder::results::{Outcome, ResultsLog, read_results, sample_record};

/// A results file holding one good record, then one whose opponent's name is Latin-1.
fn results_with_a_latin1_line(path: &Path) {
    let mut log = ResultsLog::open(path).unwrap();
    log.append(&sample_record("good", Outcome::Win)).unwrap();
    drop(log);
    let mut bad = serde_json::to_vec(&sample_record("latin1", Outcome::Loss)).unwrap();
    let at = bad.windows(5).position(|w| w == b"Aaron").unwrap();
    bad[at + 1] = 0xE9;
    bad.push(b'\n');
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .unwrap()
        .write_all(&bad)
        .unwrap();
}

#[test]
fn the_daemon_starts_over_a_results_line_that_is_not_utf8() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("sandbox-results.jsonl");
    results_with_a_latin1_line(&results);
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/accounts.toml");
    let mut child = Command::new(LADDER)
        .args(["run", "--sandbox", "--config", config, "--sandbox-results"])
        .arg(&results)
        .env("LADDER_LOG_STYLE", "plain")
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (started, log) = read_until_line(&mut child, Duration::from_secs(120), |line| {
        line.contains("daemon started")
    });
    assert!(started, "the daemon did not start:\n{log}");
    let skipped = format!("{}:2: not valid UTF-8", results.display());
    assert!(log.contains(&skipped), "{log}");
}

fn arena(results: &Path, pgn: &Path, seed: &str) {
    let (ok, _, stderr) = texts(&ladder_output(
        [
            "arena",
            "--level",
            "1",
            "--level",
            "2",
            "--games-per-pairing",
            "2",
            "--concurrency",
            "2",
            "--seed",
            seed,
            "--results",
            results.to_str().unwrap(),
            "--pgn",
            pgn.to_str().unwrap(),
        ],
        &[("RUST_LOG", "warn")],
    ));
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains(&format!("{}:2: not valid UTF-8", results.display())),
        "the skipped line is named: {stderr}"
    );
}

#[test]
fn the_arena_reads_over_a_bad_line_and_appends_results_and_pgn() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("arena-results.jsonl");
    let pgn = dir.path().join("games.pgn");
    results_with_a_latin1_line(&results);
    arena(&results, &pgn, "1");
    arena(&results, &pgn, "2");

    // Two runs of two games, each game logged from both levels' sides, after the good line.
    let read = read_results(std::slice::from_ref(&results)).unwrap();
    assert_eq!(read.records.len(), 1 + 2 * 2 * 2, "{:?}", read.warnings);
    assert_eq!(read.warnings.len(), 1, "{:?}", read.warnings);
    let text = std::fs::read_to_string(&pgn).unwrap();
    let events: Vec<&str> = text.lines().filter(|l| l.starts_with("[Event ")).collect();
    assert_eq!(events.len(), 4, "both runs' games are in the PGN:\n{text}");
    assert!(events.iter().any(|e| e.contains("arena-0000000000000001")));
    assert!(events.iter().any(|e| e.contains("arena-0000000000000002")));

    let (ok, stdout, stderr) = texts(&ladder_output(
        ["arena", "--from-results", results.to_str().unwrap()],
        &[("RUST_LOG", "warn")],
    ));
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.contains("4 games"), "{stdout}");
    assert!(
        stderr.contains(&format!("{}:2: not valid UTF-8", results.display())),
        "{stderr}"
    );
}

/// `ladder levels`: a step of 0 and a range that runs backwards are errors that say what to
/// give (they once printed an endless-looking 0.01 table and an empty one with exit 0), and
/// tenths print as tenths, level 2's row among them.
#[test]
fn levels_refuses_a_zero_step_and_a_backward_range_and_prints_exact_rows() {
    for (args, says) in [
        (
            ["--from", "1", "--to", "2", "--step", "0"],
            "--step must be positive",
        ),
        (
            ["--from", "5", "--to", "1", "--step", "1"],
            "--to 1 is below --from 5",
        ),
    ] {
        let (ok, out, err) = texts(&ladder_output(
            ["levels"].into_iter().chain(args),
            &[("RUST_BACKTRACE", "0")],
        ));
        assert!(!ok, "{args:?} succeeded:\n{out}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let (ok, out, err) = texts(&ladder_output(
        ["levels", "--from", "1", "--to", "3", "--step", "0.1"],
        &[],
    ));
    assert!(ok, "{err}");
    let first: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.parse::<f64>().is_ok())
        .collect();
    assert_eq!(first.len(), 21, "{out}");
    assert!(first.iter().all(|w| w.len() <= 3), "{first:?}");
    assert!(first.contains(&"1.2") && first.contains(&"2"), "{first:?}");
}

/// `ladder levels` alone prints the whole shipped ladder: a row for every level an account of
/// the committed `accounts.toml` plays (it stopped at 10 when the ladder grew to 12), and
/// `--from` past the top prints that level rather than refusing a backward range.
#[test]
fn levels_prints_every_level_of_the_ladder_by_default() {
    let config =
        ladder::config::Config::parse(include_str!("../accounts.toml"), Path::new("accounts.toml"))
            .unwrap();
    let played: Vec<String> = config
        .accounts
        .iter()
        .map(|a| a.level.to_string())
        .collect();
    assert!(played.len() >= 12, "{played:?}");
    let rows = |args: &[&str]| {
        let (ok, out, err) = texts(&ladder_output(
            ["levels"].into_iter().chain(args.iter().copied()),
            &[],
        ));
        assert!(ok, "{args:?}: {err}");
        out.lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|w| w.parse::<f64>().is_ok())
            .map(str::to_string)
            .collect::<Vec<String>>()
    };
    let printed = rows(&[]);
    for level in &played {
        assert!(
            printed.contains(level),
            "level {level} missing: {printed:?}"
        );
    }
    assert_eq!(rows(&["--from", "15"]), vec!["15".to_string()]);
}
