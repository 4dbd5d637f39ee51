//! The lowest level must still win won endgames: K+Q vs K and K+R vs K from random legal
//! positions, mated within the 50-move rule against a full-strength defender. This is what the
//! endgame scaling in the coefficients (more nodes, less noise as material comes off) is for.

use ladder::engine::position::GameEnd;
use ladder::engine::{Engine, Game, Limits, NoStop, SearchParams};
use ladder::levels::{Coefficients, LevelParams};
use shakmaty::{CastlingMode, Chess, Color, FromSetup, Role, Square};

/// The defender searches at full strength (no noise) with this many nodes per move: plenty
/// to find the longest resistance a few moves deep in a bare-king ending.
const DEFENDER_NODES: u64 = 2_000;

/// A small, fixed pseudo-random generator (splitmix64) so the positions never change.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn square(&mut self) -> Square {
        Square::new((self.next() % 64) as u32)
    }
}

fn king_distance(a: Square, b: Square) -> u32 {
    a.distance(b)
}

/// A random legal position: the stronger side (alternating colours) has king + `piece` and is
/// to move, the game is not over, and the bare king does not attack an undefended piece.
fn random_position(rng: &mut Rng, piece: Role, strong: Color) -> Game {
    loop {
        let (sk, sp, wk) = (rng.square(), rng.square(), rng.square());
        if sk == sp || sk == wk || sp == wk || king_distance(sk, wk) < 2 {
            continue;
        }
        // The bare king may not take the piece: it either stands away from it or the strong
        // king guards it.
        if king_distance(wk, sp) == 1 && king_distance(sk, sp) != 1 {
            continue;
        }
        let mut board = shakmaty::Board::empty();
        board.set_piece_at(sk, strong.king());
        board.set_piece_at(sp, piece.of(strong));
        board.set_piece_at(wk, (!strong).king());
        let setup = shakmaty::Setup {
            board,
            turn: strong,
            ..shakmaty::Setup::empty()
        };
        // Invalid setups (the side not to move in check) are rejected here.
        let Ok(position) = Chess::from_setup(setup, CastlingMode::Standard) else {
            continue;
        };
        let game = Game::from_position(position, CastlingMode::Standard);
        if game.outcome().is_none() {
            return game;
        }
    }
}

/// Plays the position out: the strong side at `level` under `coefficients`, the bare king at
/// full strength. Returns the number of moves the strong side needed, or `None` if it did not
/// mate (50-move rule, repetition, stalemate or lost piece).
fn play_out(coefficients: &Coefficients, level: f64, mut game: Game, seed: u64) -> Option<u32> {
    let strong = game.turn();
    let level_params = LevelParams::new(coefficients, level);
    let mut attacker = Engine::new(level_params.hash_mb);
    let mut defender = Engine::new(1);
    let defence = SearchParams::full_strength(Limits::nodes(DEFENDER_NODES));
    let mut moves = 0;
    loop {
        if let Some(end) = game.outcome() {
            return match end {
                GameEnd::Checkmate { winner } if winner == strong => Some(moves),
                _ => None,
            };
        }
        let result = if game.turn() == strong {
            moves += 1;
            let params = level_params.search_params(&game, seed);
            attacker.search(&game, &params, &mut NoStop)
        } else {
            defender.search(&game, &defence, &mut NoStop)
        };
        game.play(
            result
                .best_move
                .expect("a legal move when the game is not over"),
        );
    }
}

/// Mates found out of `count` random positions of king + `piece` vs king.
pub fn conversions(
    coefficients: &Coefficients,
    level: f64,
    piece: Role,
    count: u32,
    seed: u64,
) -> u32 {
    let mut rng = Rng(seed);
    let mut won = 0;
    for i in 0..count {
        let strong = if i % 2 == 0 {
            Color::White
        } else {
            Color::Black
        };
        let game = random_position(&mut rng, piece, strong);
        let fen = game.fen();
        match play_out(coefficients, level, game, rng.next()) {
            Some(_) => won += 1,
            None => eprintln!("level {level} failed to mate from {fen}"),
        }
    }
    won
}

fn check_lowest_level(piece: Role, count: u32) {
    let coefficients = Coefficients::builtin();
    let lowest = 1.0;
    let won = conversions(&coefficients, lowest, piece, count, 0x1ad_de7);
    let share = f64::from(won) / f64::from(count);
    println!(
        "level {lowest}: K+{piece:?} vs K mated in {won}/{count} = {:.1}%",
        share * 100.0
    );
    assert!(
        share >= 0.95,
        "level {lowest} mated with K+{piece:?} vs K in only {won} of {count} positions"
    );
}

#[test]
fn lowest_level_mates_with_queen() {
    check_lowest_level(Role::Queen, 40);
}

#[test]
fn lowest_level_mates_with_rook() {
    check_lowest_level(Role::Rook, 40);
}

/// The larger version: `cargo test --release --test endgame -- --ignored --nocapture`.
#[test]
#[ignore]
fn lowest_level_mates_many_positions() {
    check_lowest_level(Role::Queen, 200);
    check_lowest_level(Role::Rook, 200);
}

/// What the endgame scaling buys: the share at level 1 with and without it, and with other
/// floors r_min. Prints a table; asserts only that scaling does not make things worse.
/// `cargo test --release --test endgame -- --ignored --nocapture endgame_scaling_table`
#[test]
#[ignore]
fn endgame_scaling_table() {
    let base = Coefficients::builtin();
    let count = 60;
    let mut variants = Vec::new();
    let mut off = base.clone();
    off.endgame_nodes = false;
    off.endgame_noise = false;
    variants.push(("no endgame scaling".to_string(), off));
    for r_min in [0.25, 0.125, 0.0625, 0.03125] {
        let mut c = base.clone();
        c.endgame_nodes = true;
        c.endgame_noise = true;
        c.r_min = r_min;
        variants.push((format!("nodes+noise, r_min {r_min}"), c));
    }
    let mut shares = Vec::new();
    for (name, c) in &variants {
        let q = conversions(c, 1.0, Role::Queen, count, 7);
        let r = conversions(c, 1.0, Role::Rook, count, 7);
        println!(
            "{name:<28} KQK {q:>3}/{count}  KRK {r:>3}/{count}  (level 1 nodes at KQK {}, KRK {})",
            LevelParams::new(c, 1.0).nodes_at(9.0 / 62.0),
            LevelParams::new(c, 1.0).nodes_at(5.0 / 62.0)
        );
        shares.push(q + r);
    }
    assert!(shares[1..].iter().all(|&s| s >= shares[0]));
}
