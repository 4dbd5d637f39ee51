//! `ladder calibrate --arena` end to end, with the built-in movers (random, greedy) as anchors so
//! no external engine is needed: the loop moves levels toward their targets by writing new
//! coefficients versions (old ones kept), stops at its budget, and the same command continues a
//! stopped run without playing a game twice.

use std::collections::HashSet;
use std::path::Path;
use std::process::Command;

use ladder::levels::{Coefficients, LevelParams};
use ladder::results::read_results;

const ANCHORS: &str = r#"
scale = "test"
scale_sd = 100.0

[[pin]]
anchor = "greedy"
rating = 700.0
sd = 100.0
source = "test"

[[anchor]]
name = "random"
kind = "random"
rating = 100.0
se = 20.0

[[anchor]]
name = "greedy"
kind = "greedy"
rating = 700.0
se = 0.0
"#;

fn ladder(dir: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "calibrate",
        "--arena",
        "--coefficients",
        "c.toml",
        "--results",
        "games.jsonl",
        "--anchors-file",
        "anchors.toml",
        "--level",
        "1..2",
        "--min-games",
        "8",
        "--final-games",
        "8",
        "--batch",
        "4",
        "--anchors-per-level",
        "2",
        "--concurrency",
        "2",
        "--seed",
        "5",
    ];
    args.extend_from_slice(extra);
    Command::new(env!("CARGO_BIN_EXE_ladder"))
        .args(&args)
        .current_dir(dir)
        .env("RUST_LOG", "warn")
        .output()
        .expect("ladder runs")
}

/// A weak bottom of the ladder (level 1 at x = −3.3, level 2 at x = −0.6), fixed here so the test
/// does not depend on where calibration has taken the shipped file.
const START: &str = r#"
version = 1
n0 = 16.0
b = 2.0
s0 = 288.0
d = 0.694
r_min = 0.0625
endgame_nodes = true
endgame_noise = true
endgame_levels_per_halving = 2.0
max_nodes = 50000000
max_noise_cp = 600.0
ratings_source = "test"

[[hash]]
from_level = 0.0
mb = 1

[blindness]
max = 0.6
mid = 0.5
width = 0.7

[offsets]
"1" = -4.3
"2" = -2.6

[ratings]
"1" = 300.0
"2" = 525.0
"#;

fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("anchors.toml"), ANCHORS).unwrap();
    std::fs::write(dir.path().join("c.toml"), START).unwrap();
    dir
}

fn game_ids(dir: &Path) -> Vec<String> {
    let read = read_results(&[dir.join("games.jsonl")]).unwrap();
    assert!(read.warnings.is_empty(), "{:?}", read.warnings);
    read.records
        .into_iter()
        .map(|r| r.game_id.to_string())
        .collect()
}

#[test]
#[ignore = "minutes on a loaded machine and not yet robust at this sample size; run with --ignored"]
fn levels_far_below_their_targets_get_stronger_version_by_version() {
    let dir = setup();
    let start = Coefficients::parse(START, "start").unwrap();
    // Targets far above what these weak levels score against the anchors: both must move up.
    let out = ladder(
        dir.path(),
        &[
            "--target-from",
            "1000",
            "--target-step",
            "200",
            "--budget",
            "32",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let now = Coefficients::load(&dir.path().join("c.toml")).unwrap();
    assert!(
        now.version > start.version,
        "no new version written: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The targets it was calibrated toward are the new version's [targets].
    assert_eq!((now.targets().from, now.targets().step), (1000.0, 200.0));
    // The old version is kept, unchanged.
    let kept = dir
        .path()
        .join(format!("history/coefficients-v{}.toml", start.version));
    assert_eq!(
        Coefficients::load(&kept).unwrap().version,
        start.version,
        "history"
    );
    for level in [1.0, 2.0] {
        let (old, new) = (
            LevelParams::new(&start, level),
            LevelParams::new(&now, level),
        );
        assert!(
            new.exponent > old.exponent || new.nodes > old.nodes,
            "level {level} did not get stronger: {old:?} → {new:?}"
        );
    }
    // The budget is a ceiling on the games played.
    let ids = game_ids(dir.path());
    assert!(ids.len() <= 32 && ids.len() >= 16, "{} games", ids.len());
    let report = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(report.contains("| 1 | 1000 |"), "{report}");
    let svg = std::fs::read_to_string(dir.path().join("calibration.svg")).unwrap();
    assert!(svg.contains(r#"data-anchor="greedy""#), "{svg}");
}

#[test]
fn a_stopped_run_continues_without_playing_a_game_twice() {
    let dir = setup();
    let targets = ["--target-from", "400", "--target-step", "300"];
    let first = ladder(dir.path(), &[&targets[..], &["--budget", "6"]].concat());
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert!(String::from_utf8_lossy(&first.stderr).contains("budget"));
    let after_first = game_ids(dir.path());
    assert!((4..=6).contains(&after_first.len()), "{after_first:?}");
    // The same command with a larger budget picks up from the results file.
    let second = ladder(dir.path(), &[&targets[..], &["--budget", "20"]].concat());
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    let ids = game_ids(dir.path());
    assert!(ids.len() > after_first.len() && ids.len() <= 20, "{ids:?}");
    assert_eq!(ids[..after_first.len()], after_first[..]);
    let unique: HashSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "a game was played twice: {ids:?}");
    // Both levels got their games before anything else happened.
    let read = read_results(&[dir.path().join("games.jsonl")]).unwrap();
    for level in [1.0, 2.0] {
        assert!(
            read.records
                .iter()
                .filter(|r| r.header.level == level)
                .count()
                >= 8,
            "level {level}"
        );
    }
}

#[test]
fn levels_side_by_side_play_the_same_cycle_as_one_after_the_other() {
    let games = |dir: &Path| {
        let read = read_results(&[dir.join("games.jsonl")]).unwrap();
        assert!(read.warnings.is_empty(), "{:?}", read.warnings);
        let mut games: Vec<(String, String)> = read
            .records
            .into_iter()
            .map(|r| (r.game_id.to_string(), r.moves.clone()))
            .collect();
        games.sort();
        games
    };
    let targets = ["--target-from", "400", "--target-step", "300"];
    // The budget is one cycle: each level's 8 games in two batches of 4.
    let (alone, side_by_side) = (setup(), setup());
    let one_at_a_time = ladder(alone.path(), &[&targets[..], &["--budget", "16"]].concat());
    assert!(
        one_at_a_time.status.success(),
        "{}",
        String::from_utf8_lossy(&one_at_a_time.stderr)
    );
    let parallel = ladder(
        side_by_side.path(),
        &[&targets[..], &["--budget", "16", "--parallel-levels", "2"]].concat(),
    );
    let log = String::from_utf8_lossy(&parallel.stderr);
    assert!(parallel.status.success(), "{log}");
    assert!(log.contains("other batches in flight"), "{log}");
    let expected = games(alone.path());
    assert_eq!(expected.len(), 16);
    assert_eq!(games(side_by_side.path()), expected);
}

#[test]
fn an_anchor_engine_that_cannot_start_stops_the_loop_before_any_game() {
    let dir = setup();
    // The anchors of the test with a Stockfish anchor between them, on a machine where
    // Stockfish is not installed (a path that does not exist).
    let stockfish = dir.path().join("games/stockfish");
    let anchors = format!(
        "{ANCHORS}\n[[anchor]]\nname = \"sf-missing\"\nkind = \"uci\"\ncommand = \"{}\"\n\
         nodes = 100\nrating = 400.0\nse = 10.0\n",
        stockfish.display()
    );
    std::fs::write(dir.path().join("anchors.toml"), anchors).unwrap();
    let coefficients = std::fs::read_to_string(dir.path().join("c.toml")).unwrap();
    // Two anchors per level, the nearest: every batch meets the missing one, rated between the
    // levels' targets (400, 700).
    let out = ladder(
        dir.path(),
        &[
            "--target-from",
            "400",
            "--target-step",
            "300",
            "--budget",
            "6",
            "--parallel-levels",
            "2",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("error: batch cal-v1-l"), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "external engine cannot start, no game was played: sf-missing ({}): No such file",
            stockfish.display()
        )),
        "{stderr}"
    );
    assert!(stderr.contains("apt-get install stockfish"), "{stderr}");
    // Not one game was written, and nothing moved.
    assert!(!dir.path().join("games.jsonl").exists(), "{stderr}");
    assert!(!stderr.contains("played no game"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("c.toml")).unwrap(),
        coefficients
    );
}
