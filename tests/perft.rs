//! Perft: legal move path counts against the published numbers (chessprogramming wiki, "Perft
//! Results" and "Chess960 Perft Results"). The deeper counts are `#[ignore]`d: run them with
//! `cargo test --release --test perft -- --ignored`.

use ladder::engine::Game;
use ladder::perft::{divide, perft};

const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
const KIWIPETE: &str = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1";
const POSITION_3: &str = "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1";
const POSITION_4: &str = "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1";
const POSITION_4_MIRRORED: &str =
    "r2q1rk1/pP1p2pp/Q4n2/bbp1p3/Np6/1B3NBn/pPPP1PPP/R3K2R b KQ - 0 1";
const POSITION_5: &str = "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8";
const POSITION_6: &str = "r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10";
/// Chess960 position 1 of the wiki's list, castling rights in Shredder notation.
const CHESS960_1: &str = "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9";

fn count(fen: &str, chess960: bool, depth: u32) -> u64 {
    let game = Game::new(Some(fen), chess960).expect("valid FEN");
    perft(game.position(), depth)
}

fn check(fen: &str, chess960: bool, expected: &[u64]) {
    for (i, &n) in expected.iter().enumerate() {
        let depth = i as u32 + 1;
        assert_eq!(count(fen, chess960, depth), n, "{fen} depth {depth}");
    }
}

/// One test per position: its perft counts at depths 1, 2, ...
macro_rules! perft_tests {
    ($($name:ident: $(($fen:expr, $chess960:expr, $counts:expr))+;)+) => {$(
        #[test]
        fn $name() {
            $(check($fen, $chess960, $counts);)+
        }
    )+};
}

perft_tests! {
    start_position: (START, false, &[20, 400, 8_902, 197_281, 4_865_609]);
    kiwipete: (KIWIPETE, false, &[48, 2_039, 97_862, 4_085_603]);
    position_3_en_passant_and_pins: (POSITION_3, false, &[14, 191, 2_812, 43_238, 674_624]);
    position_4_promotions_and_castling_both_colours:
        (POSITION_4, false, &[6, 264, 9_467, 422_333])
        (POSITION_4_MIRRORED, false, &[6, 264, 9_467, 422_333]);
    position_5: (POSITION_5, false, &[44, 1_486, 62_379, 2_103_487]);
    position_6: (POSITION_6, false, &[46, 2_079, 89_890, 3_894_594]);
    chess960_position: (CHESS960_1, true, &[21, 528, 12_189, 326_672]);
}

#[test]
fn divide_sums_to_perft_and_names_moves_in_game_notation() {
    let game = Game::new(Some(KIWIPETE), false).unwrap();
    let rows = divide(&game, 3);
    assert_eq!(rows.len(), 48);
    assert_eq!(rows.iter().map(|(_, n)| n).sum::<u64>(), 97_862);
    // Standard castling is written king-to-destination; e1g1 leads to 2,059 leaf nodes at 3.
    assert!(rows.contains(&("e1g1".to_string(), 2_059)), "{rows:?}");
    // Chess960 notation writes castling king-takes-rook.
    let game = Game::new(Some(CHESS960_1), true).unwrap();
    let rows = divide(&game, 1);
    assert_eq!(rows.len(), 21);
}

#[test]
fn perft_command_prints_divide_and_total() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_ladder"))
        .args(["perft", "3", KIWIPETE])
        .output()
        .expect("run ladder perft");
    assert!(output.status.success());
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains("e1g1: 2059"), "{stdout}");
    assert!(stdout.contains("nodes 97862"), "{stdout}");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_ladder"))
        .args(["perft", "2", "not a fen"])
        .output()
        .expect("run ladder perft");
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("bad FEN"));
}

#[test]
#[ignore = "slow: 120 million leaves"]
fn start_position_depth_6() {
    assert_eq!(count(START, false, 6), 119_060_324);
}

#[test]
#[ignore = "slow"]
fn deep_counts() {
    assert_eq!(count(KIWIPETE, false, 5), 193_690_690);
    assert_eq!(count(POSITION_3, false, 6), 11_030_083);
    assert_eq!(count(POSITION_4, false, 5), 15_833_292);
    assert_eq!(count(POSITION_5, false, 5), 89_941_194);
    assert_eq!(count(POSITION_6, false, 5), 164_075_551);
    assert_eq!(count(CHESS960_1, true, 5), 8_146_062);
}
