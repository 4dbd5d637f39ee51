//! Malformed and repeated input, end to end through the real binary: a results line that is not
//! UTF-8 stops neither the daemon nor the arena (each names the file and line it skipped), and
//! `arena --pgn` appends as `--results` does.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ladder::results::{Outcome, ResultsLog, read_results, sample_record};

const LADDER: &str = env!("CARGO_BIN_EXE_ladder");

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
    let (tx, rx) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut log = Vec::new();
    let started = loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => {
                let done = line.contains("daemon started");
                log.push(line);
                if done {
                    break true;
                }
            }
            Err(_) => break false,
        }
    };
    drop(child.kill());
    drop(child.wait());
    let log = log.join("\n");
    assert!(started, "the daemon did not start:\n{log}");
    let skipped = format!("{}:2: not valid UTF-8", results.display());
    assert!(log.contains(&skipped), "{log}");
}

fn arena(results: &Path, pgn: &Path, seed: &str) {
    let out = Command::new(LADDER)
        .args([
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
        ])
        .arg(results)
        .arg("--pgn")
        .arg(pgn)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
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

    let out = Command::new(LADDER)
        .args(["arena", "--from-results"])
        .arg(&results)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("4 games"), "{stdout}");
    assert!(
        stderr.contains(&format!("{}:2: not valid UTF-8", results.display())),
        "{stderr}"
    );
}
