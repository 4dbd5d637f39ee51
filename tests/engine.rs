//! The engine's contract: exact node limits, determinism within and across processes, noise
//! that changes choices with the seed, mates found, draws by the rules scored as draws, and
//! roots without a legal move.

use std::process::Command;

use shakmaty::Position;

use ladder::engine::evaluator::SHIPPED_NETWORK;
use ladder::engine::position::GameEnd;
use ladder::engine::weights::SHIPPED_VERSION;
use ladder::engine::{
    Engine, Evaluator, Game, Limits, NoStop, Noise, Score, SearchInfo, SearchObserver,
    SearchParams, SearchResult,
};
use ladder::levels::{Coefficients, LevelParams};

const KIWIPETE: &str = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1";

/// Positions of every kind: opening, sharp middlegames, endgames.
const POSITIONS: &[&str] = &[
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    KIWIPETE,
    "r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10",
    "rnbqkb1r/1p2pppp/p2p1n2/8/3NP3/2N5/PPP2PPP/R1BQKB1R w KQkq - 0 6",
    "r1bq1rk1/2p1bppp/p1np1n2/1p2p3/4P3/1BP2N1P/PP1P1PP1/RNBQR1K1 b - - 0 9",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
    "8/8/1p3k2/p1p1r3/P1P5/1P2R1K1/8/8 w - - 0 1",
    "8/8/8/4k3/8/8/8/3QK3 w - - 0 1",
];

fn game(fen: &str) -> Game {
    Game::new(Some(fen), false).expect("valid FEN")
}

fn search(game: &Game, params: &SearchParams) -> SearchResult {
    let mut engine = Engine::new(1);
    engine.search(game, params, &mut NoStop)
}

/// A full-strength search of `game` to `depth`.
fn to_depth(game: &Game, depth: u32) -> SearchResult {
    search(game, &SearchParams::full_strength(Limits::depth(depth)))
}

/// Searched to `depth`, the position of `game` is lost for the side to move.
fn assert_lost(game: &Game, depth: u32) {
    let result = to_depth(game, depth);
    assert!(
        matches!(result.score, Score::Cp(s) if s < -300),
        "{:?}",
        result.score
    );
}

fn nodes(n: u64) -> SearchParams {
    SearchParams::full_strength(Limits::nodes(n))
}

#[test]
fn node_limit_is_exact() {
    for fen in POSITIONS {
        let game = game(fen);
        for n in [400, 1_000, 1_023, 1_024, 2_500, 7_777, 20_000] {
            let result = search(&game, &nodes(n));
            assert_eq!(result.nodes, n, "{fen} with {n} nodes");
            let m = result.best_move.expect("a legal move");
            assert!(game.legal_moves().contains(&m));
            assert!(result.depth >= 1);
        }
    }
}

#[test]
fn depth_one_completes_even_with_a_tiny_node_budget() {
    let game = game(KIWIPETE);
    let result = search(&game, &nodes(1));
    assert_eq!(result.depth, 1);
    assert!(result.nodes > 1, "depth 1 is never cut short");
    assert!(result.best_move.is_some());
}

/// Records every iteration report, and stops after a given number of polls.
struct Recorder {
    infos: Vec<SearchInfo>,
    polls: u64,
    stop_after_polls: Option<u64>,
}

impl Recorder {
    fn stopping_after(stop_after_polls: Option<u64>) -> Recorder {
        Recorder {
            infos: Vec::new(),
            polls: 0,
            stop_after_polls,
        }
    }
}

impl SearchObserver for Recorder {
    fn should_stop(&mut self, nodes: u64) -> bool {
        self.polls += 1;
        assert!(nodes > 0);
        self.stop_after_polls.is_some_and(|n| self.polls > n)
    }
    fn on_iteration(&mut self, info: &SearchInfo) {
        self.infos.push(info.clone());
    }
}

#[test]
fn depth_limit_and_iteration_reports() {
    let game = game(KIWIPETE);
    let mut recorder = Recorder::stopping_after(None);
    let mut engine = Engine::new(4);
    let result = engine.search(
        &game,
        &SearchParams::full_strength(Limits::depth(6)),
        &mut recorder,
    );
    assert_eq!(result.depth, 6);
    let depths: Vec<u32> = recorder.infos.iter().map(|i| i.depth).collect();
    assert_eq!(depths, vec![1, 2, 3, 4, 5, 6]);
    let last = recorder.infos.last().unwrap();
    assert_eq!(last.nodes, result.nodes);
    assert_eq!(last.pv, result.pv);
    assert_eq!(result.pv.first(), result.best_move.as_ref());
    assert!(recorder.infos.windows(2).all(|w| w[0].nodes < w[1].nodes));
    // The PV is a legal line.
    let mut line = game.clone();
    for m in &result.pv {
        assert!(line.legal_moves().contains(m), "{:?}", result.pv);
        line.play(*m);
    }
}

#[test]
fn observer_stops_the_search_between_polls() {
    let game = game(KIWIPETE);
    let mut recorder = Recorder::stopping_after(Some(3));
    let mut engine = Engine::new(1);
    let result = engine.search(
        &game,
        &SearchParams::full_strength(Limits::default()),
        &mut recorder,
    );
    assert!(result.best_move.is_some());
    // Polls happen between iterations and at multiples of 1024 nodes: the search ends at the
    // poll that said stop.
    assert!(result.nodes <= 4 * 1024 + 2_000, "{}", result.nodes);
    assert_eq!(recorder.infos.last().unwrap().nodes, result.nodes);
}

#[test]
fn same_inputs_same_move_and_nodes() {
    for fen in POSITIONS {
        let game = game(fen);
        for scale in [0.0, 40.0, 150.0] {
            let params = SearchParams {
                limits: Limits::nodes(3_000),
                noise: Noise::new(scale, 99),
                blindness: ladder::engine::Blindness::NONE,
            };
            let a = search(&game, &params);
            let b = search(&game, &params);
            assert_eq!(a, b, "{fen} noise {scale}");
            // A reused engine after new_game behaves like a fresh one.
            let mut engine = Engine::new(1);
            engine.search(&game, &nodes(5_000), &mut NoStop);
            engine.new_game();
            assert_eq!(engine.search(&game, &params, &mut NoStop), a);
        }
    }
}

fn bench_lines(depth: u32) -> Vec<String> {
    let output = Command::new(env!("CARGO_BIN_EXE_ladder"))
        .args(["bench", "--depth", &depth.to_string(), "--hash", "1"])
        .output()
        .expect("run ladder bench");
    assert!(output.status.success());
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        // Drop the timing: everything else must match.
        .filter(|l| !l.starts_with("time") && !l.starts_with("nps"))
        .map(|l| {
            l.split_whitespace()
                .filter(|w| !(w.ends_with('s') && w[..w.len() - 1].parse::<f64>().is_ok()))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

#[test]
fn bench_signature_is_identical_across_processes_and_in_process() {
    let first = bench_lines(4);
    let second = bench_lines(4);
    assert_eq!(first, second);
    let signature = first
        .iter()
        .find_map(|l| l.strip_prefix("bench: "))
        .expect("signature line")
        .to_string();
    let in_process = ladder::bench::bench_with(4, 1, Noise::NONE);
    assert_eq!(signature, in_process.total_nodes.to_string());
    assert!(in_process.lines.len() >= 30);
}

#[test]
fn different_seeds_change_the_move_at_a_noisy_level() {
    let coefficients = Coefficients::builtin();
    let level = LevelParams::new(&coefficients, 3.0);
    let fens: Vec<&str> = ladder::bench::POSITIONS
        .iter()
        .copied()
        .filter(|f| !f.starts_with("8/8/8/")) // bare-king endings have few sensible moves
        .take(20)
        .collect();
    assert_eq!(fens.len(), 20);
    let changed = fens
        .iter()
        .filter(|fen| {
            let game = game(fen);
            let a = search(&game, &level.search_params(&game, 1)).best_move;
            let b = search(&game, &level.search_params(&game, 2)).best_move;
            a != b
        })
        .count();
    eprintln!("{changed} of 20 positions changed move between seeds 1 and 2");
    assert!(
        changed >= 6,
        "only {changed} of 20 positions changed move with the seed"
    );
    // At full strength the seed is irrelevant.
    let game = game(KIWIPETE);
    let a = search(&game, &nodes(4_000));
    let mut params = nodes(4_000);
    params.noise.seed = 12345;
    assert_eq!(search(&game, &params), a);
}

#[test]
fn finds_known_mates() {
    assert_finds_known_mates(|| Engine::new(1));
}

fn network() -> Evaluator {
    Evaluator::of_versions(SHIPPED_VERSION, SHIPPED_NETWORK).expect("built in")
}

/// The network evaluation keeps what the search and the endings need: known mates are found,
/// and a lone king is mated in self-play (the mop-up the hand-crafted evaluation has), the same
/// way twice.
#[test]
fn the_network_evaluation_finds_mates_and_mates_a_lone_king() {
    assert_finds_known_mates(|| Engine::with_evaluator(1, network()));
    for fen in [
        "8/8/8/4k3/8/8/8/R3K3 w - - 0 1",
        "8/8/3k4/8/8/8/8/3QK3 b - - 0 1",
    ] {
        let self_play = || {
            let mut game = game(fen);
            let mut engine = Engine::with_evaluator(1, network());
            while game.outcome().is_none() && game.moves().len() < 120 {
                let result = engine.search(&game, &nodes(4_000), &mut NoStop);
                game.play(result.best_move.expect("a legal move"));
            }
            game
        };
        let played = self_play();
        assert!(
            matches!(played.outcome(), Some(GameEnd::Checkmate { .. })),
            "{fen}: {:?} after {} plies",
            played.outcome(),
            played.moves().len()
        );
        assert_eq!(played.moves(), self_play().moves(), "{fen}");
    }
}

fn assert_finds_known_mates(new_engine: impl Fn() -> Engine) {
    let text = include_str!("fixtures/engine/mates.txt");
    let mut count = 0;
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let fields: Vec<&str> = line.split(';').map(str::trim).collect();
        let (fen, n, best) = (fields[0], fields[1].parse::<i32>().unwrap(), fields[2]);
        let game = game(fen);
        let result = new_engine().search(
            &game,
            &SearchParams::full_strength(Limits::depth(2 * n as u32 + 2)),
            &mut NoStop,
        );
        assert_eq!(result.score, Score::Mate(n), "{fen}");
        let m = result.best_move.unwrap();
        if best != "-" {
            assert_eq!(game.to_uci(m), best, "{fen}");
        }
        // The PV really ends in mate after 2n-1 plies.
        let mut line = game.clone();
        for m in &result.pv {
            line.play(*m);
        }
        assert_eq!(
            result.pv.len(),
            2 * n as usize - 1,
            "{fen}: {:?}",
            result.pv
        );
        assert!(
            line.position().is_check() && line.legal_moves().is_empty(),
            "{fen}"
        );
        count += 1;
    }
    assert_eq!(count, 7);
}

#[test]
fn threefold_repetition_against_game_history_scores_a_draw() {
    // Black (king and knight against king and queen) is lost, but the knight's return to g8
    // repeats the start position a third time.
    let moves = ["a2a3", "g8f6", "a3a2", "f6g8", "a2a3", "g8f6", "a3a2"];
    let game = Game::from_uci_moves(Some("6nk/8/8/8/8/8/Q7/4K3 w - - 0 1"), &moves, false)
        .expect("legal moves");
    assert_eq!(game.outcome(), None);
    let result = to_depth(&game, 6);
    assert_eq!(game.to_uci(result.best_move.unwrap()), "f6g8");
    assert_eq!(result.score, Score::Cp(0));
    // Without the history the same position is simply lost.
    let fresh = Game::new(Some(&game.fen()), false).unwrap();
    assert_lost(&fresh, 6);
}

#[test]
fn perpetual_check_inside_the_search_scores_a_draw() {
    // Black is two rooks and pawns up and threatens mate; only Qd8+ Kh7 Qh4+ Kg8 Qd8+ ...
    // saves White (Stockfish 15.1: 0.00, the next best move -8.54).
    let game = game("6k1/5pp1/8/ppp2P2/8/8/rr4PP/3Q3K w - - 0 1");
    let result = to_depth(&game, 8);
    assert_eq!(result.score, Score::Cp(0), "{:?}", result.pv);
    assert_eq!(game.to_uci(result.best_move.unwrap()), "d1d8");
}

#[test]
fn fifty_move_rule_scores_a_draw() {
    // Lost for black on material, but any knight move completes the 50 moves.
    let game = game("6nk/8/8/8/8/8/Q7/4K3 b - - 99 80");
    let result = to_depth(&game, 5);
    assert_eq!(result.score, Score::Cp(0));
    // With a fresh clock the same position is lost.
    assert_lost(&self::game("6nk/8/8/8/8/8/Q7/4K3 b - - 0 80"), 5);
}

#[test]
fn insufficient_material_scores_a_draw() {
    // Black is a rook down, but taking it leaves king against king.
    let game = game("8/8/4k3/3R4/8/8/8/K7 b - - 0 1");
    let result = to_depth(&game, 4);
    assert_eq!(result.score, Score::Cp(0));
    assert_eq!(game.to_uci(result.best_move.unwrap()), "e6d5");
}

#[test]
fn roots_without_a_legal_move() {
    let mated = game("R6k/6pp/8/8/8/8/8/6K1 b - - 0 1");
    let result = search(&mated, &nodes(1_000));
    assert_eq!(result.best_move, None);
    assert_eq!(result.score, Score::Mate(0));
    assert!(result.pv.is_empty());
    let stalemate = game("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1");
    let result = search(&stalemate, &nodes(1_000));
    assert_eq!(result.best_move, None);
    assert_eq!(result.score, Score::Cp(0));
}

#[test]
fn transposition_table_layout() {
    assert_eq!(ladder::engine::tt::ENTRY_BYTES, 10);
    assert_eq!(ladder::engine::tt::CLUSTER_BYTES, 32);
}

#[test]
fn chess960_castling_is_searched() {
    // White can castle king-side with the king on f1 and the rook on h1 (Chess960 rules).
    let game = Game::new(Some("5rk1/8/8/8/8/8/8/5K1R w H - 0 1"), true).unwrap();
    let result = search(&game, &nodes(2_000));
    assert!(result.best_move.is_some());
    assert_eq!(result.nodes, 2_000);
}

/// A side that is ahead never steps back into a position the game has already seen: Lichess
/// draws a threefold repetition by itself, and a noisy level used to walk in circles.
#[test]
fn a_winning_side_never_returns_to_an_earlier_position() {
    // K+Q vs K after the queen went d1-d2 and back while the black king went a8-b8 and back:
    // the start position has occurred twice, the one after Qd2 once.
    let game = Game::from_uci_moves(
        Some("k7/8/8/8/8/8/8/3Q3K w - - 0 1"),
        &["d1d2", "a8b8", "d2d1", "b8a8"],
        false,
    )
    .unwrap();
    let mut repeats = 0;
    for seed in 0..40u64 {
        for nodes in [40, 400, 4_000] {
            let params = SearchParams {
                limits: Limits::nodes(nodes),
                noise: Noise::new(150.0, seed),
                blindness: ladder::engine::Blindness::NONE,
            };
            let mut engine = Engine::new(1);
            let m = engine
                .search(&game, &params, &mut NoStop)
                .best_move
                .expect("a move");
            let mut next = game.clone();
            next.play(m);
            if game.keys().contains(&next.key()) {
                repeats += 1;
            }
        }
    }
    assert_eq!(repeats, 0, "moves back into an earlier position out of 120");
}

/// Node counts of every search version at depth 5 (1 MB table; without noise, and with 80 cp of
/// noise, seed 3), as `ladder bench --depth 5 --hash 1 [--noise-cp 80 --seed 3]` printed them
/// when each was the newest. Coefficients calibrated with `search = N` (every ladder up to
/// version 21 with 1, the recalibration from version 22 with 2) stay true only while search
/// version N searches exactly as it did: a better search is a new version.
#[test]
fn every_search_version_searches_exactly_as_when_it_was_made() {
    use ladder::engine::SearchConstants;
    use ladder::engine::constants::SHIPPED_SEARCH_VERSION;
    let noisy = Noise::new(80.0, 3);
    let classical = ladder::engine::Evaluator::shipped;
    let nodes = |noise, constants| {
        ladder::bench::bench_search(5, 1, noise, constants, classical()).total_nodes
    };
    // Node counts at depth 5 (1 MB hash), without and with noise, as the binary of the time
    // printed them: version 1 before version 2 existed, version 2 since it was made.
    let pinned = [(1, 221_412, 506_169), (2, 101_568, 217_654)];
    assert_eq!(
        pinned.len(),
        SHIPPED_SEARCH_VERSION as usize,
        "every version pinned"
    );
    for (version, plain, with_noise) in pinned {
        let constants = SearchConstants::of_version(version).expect("built in");
        assert_eq!(
            nodes(Noise::NONE, constants.clone()),
            plain,
            "version {version}"
        );
        assert_eq!(nodes(noisy, constants), with_noise, "version {version}");
    }
    // Each version is another search than the one before it (its pinned counts show it).
    for pair in pinned.windows(2) {
        assert_ne!(pair[0].1, pair[1].1, "version {}", pair[1].0);
    }
}
