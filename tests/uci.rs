//! `ladder uci` driven over pipes, as a GUI would: the conversation, exact node counts,
//! reproducibility by Seed, bad input, and UCI_LimitStrength/UCI_Elo.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use ladder::engine::Game;
use ladder::levels::{Coefficients, LevelParams};

/// Generous: a search of a few thousand nodes takes milliseconds, a hang takes forever.
const TIMEOUT: Duration = Duration::from_secs(30);

/// One `ladder uci` process; lines are read on a thread so a hang fails instead of blocking.
struct Uci {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    /// Everything read so far, for failure messages.
    transcript: Vec<String>,
}

impl Uci {
    fn spawn() -> Uci {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ladder"))
            .arg("uci")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn ladder uci");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Uci {
            child,
            stdin,
            lines,
            transcript: Vec::new(),
        }
    }

    fn send(&mut self, line: &str) {
        self.transcript.push(format!("> {line}"));
        writeln!(self.stdin, "{line}").expect("write to ladder uci");
        self.stdin.flush().unwrap();
    }

    /// The next line, or `None` if nothing arrives within `wait`.
    fn next_line(&mut self, wait: Duration) -> Option<String> {
        match self.lines.recv_timeout(wait) {
            Ok(line) => {
                self.transcript.push(format!("< {line}"));
                Some(line)
            }
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => {
                panic!(
                    "ladder uci closed its output:\n{}",
                    self.transcript.join("\n")
                )
            }
        }
    }

    /// Lines up to and including the first one starting with `prefix`.
    fn until(&mut self, prefix: &str) -> Vec<String> {
        let deadline = Instant::now() + TIMEOUT;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(line) = self.next_line(left) else {
                panic!(
                    "no line starting with {prefix:?} within {TIMEOUT:?}:\n{}",
                    self.transcript.join("\n")
                );
            };
            let done = line.starts_with(prefix);
            seen.push(line);
            if done {
                return seen;
            }
        }
    }

    /// Sends `go ...` and returns (the lines up to bestmove, the best move).
    fn go(&mut self, args: &str) -> (Vec<String>, String) {
        self.send(&format!("go {args}"));
        let lines = self.until("bestmove");
        let best = lines
            .last()
            .unwrap()
            .split_whitespace()
            .nth(1)
            .unwrap()
            .to_string();
        (lines, best)
    }

    fn ready(&mut self) {
        self.send("isready");
        self.until("readyok");
    }

    fn set(&mut self, name: &str, value: &str) {
        self.send(&format!("setoption name {name} value {value}"));
    }

    fn errors(lines: &[String]) -> Vec<&String> {
        lines
            .iter()
            .filter(|l| l.starts_with("info string error"))
            .collect()
    }

    /// Sends `quit` and checks the process exits cleanly.
    fn quit(mut self) {
        self.send("quit");
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "exit status {status}");
                return;
            }
            assert!(Instant::now() < deadline, "ladder uci did not exit on quit");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Uci {
    fn drop(&mut self) {
        // Reap a process a failed assertion left running; it may already have exited.
        if self.child.try_wait().ok().flatten().is_none() {
            drop(self.child.kill());
            drop(self.child.wait());
        }
    }
}

/// The last `info ... nodes N ...` line's N.
fn final_nodes(lines: &[String]) -> Option<u64> {
    let info = lines
        .iter()
        .rev()
        .find(|l| l.starts_with("info") && l.contains(" nodes "))?;
    let mut words = info.split_whitespace();
    words.find(|w| *w == "nodes")?;
    words.next()?.parse().ok()
}

/// Asserts `uci_move` is legal after `position` (a `position` command's arguments).
fn assert_legal(setup: &str, uci_move: &str) {
    let (fen, moves) = match setup.split_once(" moves ") {
        Some((fen, moves)) => (fen, moves.split_whitespace().collect::<Vec<_>>()),
        None => (setup, Vec::new()),
    };
    let fen = fen.strip_prefix("fen ").unwrap_or(fen);
    let mut game = Game::from_uci_moves(Some(fen), &moves, false).unwrap();
    assert!(
        game.play_uci(uci_move).is_ok(),
        "bestmove {uci_move} is not legal after position {setup}"
    );
}

/// Only legal move: the white king must take the rook (a1b2).
const ONE_MOVE_FEN: &str = "k7/8/8/8/8/8/1r6/K7 w - - 0 1";

#[test]
fn full_conversation() {
    let mut uci = Uci::spawn();
    uci.send("uci");
    let hello = uci.until("uciok");
    for option in [
        "option name Level type string default 0",
        "option name Seed type spin",
        "option name Hash type spin",
        "option name Threads type spin default 1 min 1 max 1",
        "option name UCI_Chess960 type check",
        "option name UCI_LimitStrength type check",
        "option name UCI_Elo type spin",
        "option name Coefficients type string",
        "option name Network type spin default 0 min 0",
        "option name EvalFile type string",
        "option name SearchFile type string",
    ] {
        assert!(
            hello.iter().any(|l| l.starts_with(option)),
            "missing {option:?} in {hello:?}"
        );
    }
    assert!(hello[0].starts_with("id name ladder"));
    uci.ready();
    uci.send("ucinewgame");
    uci.send("position startpos moves e2e4 e7e5");
    let (lines, best) = uci.go("nodes 2000");
    assert_legal("startpos moves e2e4 e7e5", &best);
    assert!(lines.iter().any(|l| l.starts_with("info depth")));
    assert!(Uci::errors(&lines).is_empty(), "{lines:?}");

    let (lines, best) = uci.go("depth 3");
    assert_legal("startpos moves e2e4 e7e5", &best);
    for line in lines.iter().filter(|l| l.starts_with("info depth")) {
        let depth: u32 = line.split_whitespace().nth(2).unwrap().parse().unwrap();
        assert!(depth <= 3, "went deeper than 3: {line}");
    }

    // `go infinite` answers isready while thinking and gives no bestmove before `stop`.
    uci.send("go infinite");
    uci.ready();
    let quiet_until = Instant::now() + Duration::from_millis(300);
    while let Some(line) = uci.next_line(quiet_until.saturating_duration_since(Instant::now())) {
        assert!(
            !line.starts_with("bestmove"),
            "bestmove before stop: {line}"
        );
    }
    uci.send("stop");
    let lines = uci.until("bestmove");
    assert_legal(
        "startpos moves e2e4 e7e5",
        lines.last().unwrap().split_whitespace().nth(1).unwrap(),
    );

    // A clock: it answers with a legal move well inside the time it was given.
    let (lines, best) = uci.go("wtime 2000 btime 2000 winc 0 binc 0");
    assert_legal("startpos moves e2e4 e7e5", &best);
    let time: u64 = lines
        .iter()
        .rev()
        .find_map(|l| {
            let mut w = l.split_whitespace().skip_while(|w| *w != "time");
            w.next()?;
            w.next()?.parse().ok()
        })
        .unwrap();
    assert!(time < 2000, "used {time} ms of a 2000 ms clock");

    // Checkmated: no move to make.
    uci.send("position fen 7k/6Q1/6K1/8/8/8/8/8 b - - 0 1");
    let (_, best) = uci.go("nodes 100");
    assert_eq!(best, "0000");
    uci.quit();
}

#[test]
fn go_nodes_is_exact() {
    let mut uci = Uci::spawn();
    uci.send("position startpos moves d2d4 g8f6 c2c4");
    for nodes in [1_500u64, 4_000, 10_000] {
        uci.send("ucinewgame");
        uci.send("position startpos moves d2d4 g8f6 c2c4");
        let (lines, _) = uci.go(&format!("nodes {nodes}"));
        assert_eq!(final_nodes(&lines), Some(nodes), "{lines:?}");
    }
    // With the network evaluation too.
    uci.set("Network", "1");
    let (lines, best) = uci.go("nodes 3000");
    assert_eq!(final_nodes(&lines), Some(3_000), "{lines:?}");
    assert_legal("startpos moves d2d4 g8f6 c2c4", &best);
    uci.set("Network", "0");
    // At a level the level's budget applies, capped by go nodes (out of the opening book,
    // whose moves are not searched). A level of hundreds of nodes or more: a budget of a few
    // nodes (the bottom's) ends a few nodes past it, where the first iteration completes.
    uci.set("Level", "8");
    uci.send("ucinewgame");
    uci.send("position startpos moves a2a3");
    let out_of_book = Game::from_uci_moves(None, &["a2a3"], false).unwrap();
    let level_nodes = LevelParams::new(&Coefficients::builtin(), 8.0)
        .search_params(&out_of_book, 1)
        .limits
        .nodes
        .unwrap();
    let (lines, _) = uci.go("");
    assert_eq!(final_nodes(&lines), Some(level_nodes), "{lines:?}");
    let (lines, _) = uci.go(&format!("nodes {}", level_nodes / 2));
    assert_eq!(final_nodes(&lines), Some(level_nodes / 2), "{lines:?}");
    uci.quit();
}

/// A network file set as `EvalFile` searches exactly as the same network built in, wins over
/// `Network` while set, and `<built-in>` hands the choice back to `Network`.
#[test]
fn eval_file_plays_a_network_file_as_the_built_in_one() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("candidate.nnue");
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src/engine/nnue/network-1.nnue"
        ),
        &file,
    )
    .unwrap();
    let mut uci = Uci::spawn();
    let position = "position startpos moves e2e4 c7c5 g1f3";
    let search = |uci: &mut Uci| {
        uci.send("ucinewgame");
        uci.send(position);
        let (lines, best) = uci.go("depth 7");
        (final_nodes(&lines), best)
    };
    let hand_crafted = search(&mut uci);
    uci.set("Network", "1");
    let built_in = search(&mut uci);
    assert_ne!(
        built_in, hand_crafted,
        "network 1 searches as the hand-crafted evaluation"
    );
    uci.set("Network", "0");
    uci.set("EvalFile", file.to_str().unwrap());
    assert_eq!(
        search(&mut uci),
        built_in,
        "the file and the built-in network differ"
    );
    uci.set("EvalFile", "<built-in>");
    assert_eq!(
        search(&mut uci),
        hand_crafted,
        "EvalFile still in force after <built-in>"
    );
    uci.quit();
}

/// A search constants file set as `SearchFile` plays at full strength with those constants
/// (the shipped values written out search exactly as the built-in set, another set searches
/// otherwise), and `<built-in>` hands back the shipped constants.
#[test]
fn search_file_plays_a_constants_file_at_full_strength() {
    use ladder::engine::SearchConstants;
    use ladder::engine::constants::RFP_MARGIN;
    let dir = tempfile::tempdir().unwrap();
    let same = dir.path().join("same.txt");
    std::fs::write(&same, SearchConstants::shipped().to_text("the shipped set")).unwrap();
    let mut values = SearchConstants::shipped().values();
    values[RFP_MARGIN] += 60;
    let other = dir.path().join("other.txt");
    let other_set = SearchConstants::from_values(values).unwrap();
    std::fs::write(&other, other_set.to_text("a wider margin")).unwrap();
    let mut uci = Uci::spawn();
    let search = |uci: &mut Uci| {
        uci.send("ucinewgame");
        uci.send("position startpos moves e2e4 c7c5 g1f3 d7d6");
        let (lines, best) = uci.go("depth 8");
        (final_nodes(&lines), best)
    };
    let built_in = search(&mut uci);
    uci.set("SearchFile", same.to_str().unwrap());
    assert_eq!(search(&mut uci), built_in, "the shipped set written out");
    uci.set("SearchFile", other.to_str().unwrap());
    assert_ne!(search(&mut uci), built_in, "another set searches the same");
    uci.set("SearchFile", "<built-in>");
    assert_eq!(
        search(&mut uci),
        built_in,
        "SearchFile in force after <built-in>"
    );
    uci.quit();
}

/// Plays `plies` moves of a game against itself at `level` with `seed`, returning the moves.
fn self_play(level: &str, seed: u64, start: &str, plies: usize) -> Vec<String> {
    let mut uci = Uci::spawn();
    uci.set("Seed", &seed.to_string());
    uci.set("Level", level);
    uci.send("ucinewgame");
    let mut moves: Vec<String> = Vec::new();
    for _ in 0..plies {
        let position = if moves.is_empty() {
            start.to_string()
        } else {
            format!("{start} moves {}", moves.join(" "))
        };
        uci.send(&format!("position {position}"));
        let (lines, best) = uci.go("");
        assert!(Uci::errors(&lines).is_empty(), "{lines:?}");
        if best == "0000" {
            break;
        }
        moves.push(best);
    }
    uci.quit();
    moves
}

#[test]
fn same_seed_and_level_replay_the_same_game() {
    let starts = [
        "startpos".to_string(),
        "fen r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4".to_string(),
        "fen 8/5pk1/6p1/8/3R4/6P1/5PK1/8 w - - 0 40".to_string(),
    ];
    for (level, start) in ["1", "3", "6.5"].iter().zip(&starts) {
        let first = self_play(level, 4242, start, 10);
        let second = self_play(level, 4242, start, 10);
        assert_eq!(first, second, "level {level} from {start}");
        assert!(!first.is_empty());
    }
}

#[test]
fn bad_input_is_reported_and_changes_nothing() {
    let mut uci = Uci::spawn();
    uci.set("Level", "2");
    uci.send(&format!("position fen {ONE_MOVE_FEN}"));
    let bad = [
        "position startpos moves e2e4 e7e5 e1e3",
        "position fen 8/8/8/8 w - - 0 1",
        "position fen rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1 moves e2e9",
        "position sideways",
        "setoption name Level value strong",
        "setoption name Level value -1",
        "setoption name Hash value 0",
        "setoption name Threads value 4",
        "setoption name Network value 9999",
        "setoption name UCI_Elo value 99999",
        "setoption name UCI_LimitStrength value maybe",
        "setoption name Coefficients value /nonexistent/coefficients.toml",
        "setoption name EvalFile value /nonexistent/network.nnue",
        "setoption name EvalFile value Cargo.toml",
        "setoption name SearchFile value /nonexistent/search.txt",
        "setoption name SearchFile value Cargo.toml",
        "setoption name NoSuchOption value 1",
        "flip the board",
    ];
    for command in bad {
        uci.send(command);
        let line = uci.next_line(TIMEOUT).expect("an answer to bad input");
        assert!(
            line.starts_with("info string error: "),
            "{command:?} -> {line:?}"
        );
    }
    assert_kept(uci, "the last valid");
}

/// After bad input, `what` position (one move: a1b2) and Level (2) are still in use; quits.
fn assert_kept(mut uci: Uci, what: &str) {
    uci.ready();
    let (lines, best) = uci.go("nodes 500");
    assert_eq!(best, "a1b2", "{what} position is kept: {lines:?}");
    assert!(
        lines.iter().any(|l| l.starts_with("info string level 2 ")),
        "{what} Level is kept: {lines:?}"
    );
    uci.quit();
}

/// One line of bytes that are not UTF-8 (a GUI in Latin-1, a corrupted pipe) is one bad
/// command: answered with an error, and the session goes on with its position and options.
#[test]
fn a_line_that_is_not_utf8_is_an_error_and_the_session_goes_on() {
    let mut uci = Uci::spawn();
    uci.set("Level", "2");
    uci.send(&format!("position fen {ONE_MOVE_FEN}"));
    uci.transcript
        .push("> setoption name Gr\\xfc\\xdfe value 1".to_string());
    uci.stdin
        .write_all(b"setoption name Gr\xfc\xdfe value 1\n")
        .unwrap();
    uci.stdin.flush().unwrap();
    let line = uci.next_line(TIMEOUT).expect("an answer to the bad line");
    assert!(
        line.starts_with("info string error: ") && line.contains("UTF-8"),
        "{line:?}"
    );
    assert_kept(uci, "the");
}

/// A coefficients file whose hash would take 10^14 bytes is refused by name, and the engine
/// keeps the coefficients it had instead of aborting on the allocation.
#[test]
fn a_huge_hash_in_the_coefficients_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge-hash.toml");
    let text = Coefficients::DEFAULT_TOML.replacen("mb = 1\n", "mb = 100000000\n", 1);
    assert_ne!(text, Coefficients::DEFAULT_TOML);
    std::fs::write(&path, text).unwrap();
    let mut uci = Uci::spawn();
    uci.set("Coefficients", path.to_str().unwrap());
    let line = uci.next_line(TIMEOUT).expect("an answer");
    assert!(
        line.starts_with("info string error: ") && line.contains("hash[0].mb"),
        "{line:?}"
    );
    uci.set("Level", "1");
    uci.send("position startpos");
    let (lines, _) = uci.go("nodes 200");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("info string level 1 ") && l.contains(" hash 1 ")),
        "the built-in hash is kept: {lines:?}"
    );
    uci.quit();
}

/// The level `info string` line of a `go`.
fn level_of(lines: &[String]) -> f64 {
    let line = lines
        .iter()
        .find(|l| l.starts_with("info string level "))
        .unwrap_or_else(|| panic!("no level line in {lines:?}"));
    line.split_whitespace().nth(3).unwrap().parse().unwrap()
}

#[test]
fn uci_elo_selects_the_level_with_that_rating() {
    let coefficients = Coefficients::builtin();
    let mut uci = Uci::spawn();
    uci.set("Level", "9");
    uci.set("UCI_LimitStrength", "true");
    for (level, rating) in coefficients.rated_levels() {
        uci.set("UCI_Elo", &format!("{rating}"));
        let (lines, _) = uci.go("nodes 50");
        assert_eq!(level_of(&lines), level, "UCI_Elo {rating}");
    }
    // Between two rated levels: the interpolated level, with that level's node budget
    // (levels 7 and 8: hundreds of nodes, which the search keeps to exactly).
    let (l0, r0) = coefficients.rated_levels()[6];
    let (l1, r1) = coefficients.rated_levels()[7];
    let mid = ((r0 + r1) / 2.0).round();
    uci.set("UCI_Elo", &format!("{mid}"));
    uci.send("position startpos moves a2a3");
    let (lines, _) = uci.go("");
    let level = level_of(&lines);
    assert!(
        level > l0 && level < l1,
        "{level} not between {l0} and {l1}"
    );
    let expected = coefficients.level_for_rating(mid).unwrap();
    let nodes = LevelParams::new(&coefficients, expected)
        .search_params(&Game::from_uci_moves(None, &["a2a3"], false).unwrap(), 1)
        .limits
        .nodes;
    assert_eq!(final_nodes(&lines), nodes, "{lines:?}");

    // Another coefficients file brings its own ratings table.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/uci/coefficients.toml"
    );
    let other = Coefficients::load(std::path::Path::new(path)).unwrap();
    uci.set("Coefficients", path);
    uci.set("UCI_Elo", "1500");
    let (lines, _) = uci.go("nodes 50");
    assert!(Uci::errors(&lines).is_empty(), "{lines:?}");
    assert_eq!(level_of(&lines), other.level_for_rating(1500.0).unwrap());
    assert_ne!(
        other.level_for_rating(1500.0),
        coefficients.level_for_rating(1500.0)
    );

    // Switching the limit off falls back to Level.
    uci.set("UCI_LimitStrength", "false");
    let (lines, _) = uci.go("nodes 50");
    assert_eq!(level_of(&lines), 9.0);
    uci.quit();
}

#[test]
fn chess960_castling_is_king_takes_rook() {
    let mut uci = Uci::spawn();
    uci.set("UCI_Chess960", "true");
    // King f1, rook h1: castling (king to g1, rook to f1) is the only mate in one, and in
    // Chess960 notation it is written king-takes-rook.
    uci.send("position fen 4rkr1/4p1p1/8/8/8/8/8/5K1R w H - 0 1");
    let (lines, best) = uci.go("depth 3");
    assert!(Uci::errors(&lines).is_empty(), "{lines:?}");
    assert_eq!(best, "f1h1", "{lines:?}");
    uci.quit();
}

/// The same position without `UCI_Chess960`: its castling right makes sense only under
/// Chess960 rules, so castling is written king-takes-rook there too ("f1g1" would read back as
/// a plain king step, the rook left on h1).
#[test]
fn castling_from_a_chess960_only_fen_is_king_takes_rook_without_the_option() {
    let mut uci = Uci::spawn();
    uci.send("position fen 4rkr1/4p1p1/8/8/8/8/8/5K1R w K - 0 1");
    let (lines, best) = uci.go("depth 3");
    assert!(Uci::errors(&lines).is_empty(), "{lines:?}");
    assert_eq!(best, "f1h1", "{lines:?}");
    uci.quit();
}

/// The level player is one: a game the arena played at level 3 (its seed and moves as the
/// results file records them) replays move for move through `ladder uci` with that seed.
#[test]
fn an_arena_game_replays_move_for_move_through_uci() {
    const FEN: &str = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3";
    let dir = tempfile::tempdir().unwrap();
    let openings = dir.path().join("o.epd");
    std::fs::write(&openings, format!("{FEN}\n")).unwrap();
    let results = dir.path().join("r.jsonl");
    let status = Command::new(env!("CARGO_BIN_EXE_ladder"))
        .args([
            "arena",
            "--level",
            "3",
            "--anchor",
            "random",
            "--games-per-pairing",
            "2",
        ])
        .args(["--seed", "11", "--concurrency", "1", "--judge-depth", "0"])
        .arg("--openings")
        .arg(&openings)
        .arg("--results")
        .arg(&results)
        .env("RUST_LOG", "warn")
        .status()
        .expect("the arena runs");
    assert!(status.success());
    let read = ladder::results::read_results(&[results]).unwrap();
    assert_eq!(read.records.len(), 2, "one record per game");
    for record in &read.records {
        let moves: Vec<&str> = record.moves.split_whitespace().collect();
        let ours_first = if record.color == "white" { 0 } else { 1 };
        let mut uci = Uci::spawn();
        uci.set("Level", "3");
        uci.set("GameSeed", &record.header.seed.to_string());
        uci.send("ucinewgame");
        let mut compared = 0;
        for ply in (ours_first..moves.len()).step_by(2) {
            let position = if ply == 0 {
                format!("position fen {FEN}")
            } else {
                format!("position fen {FEN} moves {}", moves[..ply].join(" "))
            };
            uci.send(&position);
            let (lines, best) = uci.go("");
            assert!(Uci::errors(&lines).is_empty(), "{lines:?}");
            assert_eq!(
                best, moves[ply],
                "game {} ply {ply}: uci chose another move",
                record.game_id
            );
            compared += 1;
        }
        uci.quit();
        assert!(compared >= 5, "{} moves of ours compared", compared);
    }
}
