//! The levels' opening book: the first few moves of a game come from main lines people play
//! (`book.txt`), chosen by the game's seed with the lines' weights, so a game opens the way
//! people's games do (1.e4, 1.d4 and their main replies, never 1.a3 or 1...f6, which a level's
//! noise alone may choose).
//!
//! The book sets the first moves; variety after it comes from the level's own noise (and, at
//! the top levels, whose noise is a few centipawns, from the noise floor of the first moves,
//! `levels::OPENING_NOISE_CP`). How deep a level follows the book grows with the level (a
//! beginner knows 1.e4 e5 2.Nf3, a strong player a few moves of the Najdorf): the band's
//! knowledge of theory, not its strength, which the search decides as soon as the line ends or
//! the opponent leaves it. Positions are looked up by their key, so transpositions count, and
//! only in standard chess.

use std::collections::HashMap;
use std::sync::OnceLock;

use shakmaty::{CastlingMode, Move, Position};

use crate::engine::Game;
use crate::seed::splitmix64;

/// The book's lines, one per row (see the file's header).
const LINES: &str = include_str!("book.txt");

/// Own moves a level plays from the book at most: two up to level 2, three at levels 3–5,
/// four at 6–8, five from 9. Short on purpose: the book gives the first moves people play,
/// and the level's own noise varies the game from there (a longer book would replay its 41
/// lines: at level 5 it cut the distinct games after 10 plies from 100 to 76 of 100).
pub fn book_moves(level: f64) -> u32 {
    let level = if level.is_finite() {
        level.floor()
    } else {
        1.0
    };
    (level / 3.0 + 2.0).floor().clamp(2.0, 5.0) as u32
}

/// The moves played from a position in the book, with how many lines play each.
type Tree = HashMap<u64, Vec<(Move, u32)>>;

fn tree() -> &'static Tree {
    static TREE: OnceLock<Tree> = OnceLock::new();
    TREE.get_or_init(|| build(LINES).unwrap_or_else(|e| panic!("the built-in book: {e}")))
}

/// Reads book rows into the tree; an illegal move names its row.
fn build(text: &str) -> Result<Tree, String> {
    let mut tree = Tree::new();
    for (index, row) in text.lines().enumerate() {
        let row = row.trim();
        if row.is_empty() || row.starts_with('#') {
            continue;
        }
        let mut game = Game::startpos();
        for uci in row.split_whitespace() {
            let key = game.key();
            let m = game
                .play_uci(uci)
                .map_err(|e| format!("row {}: {e}", index + 1))?;
            let moves = tree.entry(key).or_default();
            match moves.iter_mut().find(|(known, _)| *known == m) {
                Some((_, weight)) => *weight += 1,
                None => moves.push((m, 1)),
            }
        }
    }
    Ok(tree)
}

/// The book's move for `level` in `game`'s current position, chosen by `seed` with the
/// weight of the lines through each move; `None` out of book, past the level's book depth,
/// or in Chess960.
pub fn book_move(game: &Game, level: f64, seed: u64) -> Option<Move> {
    if game.castling_mode() != CastlingMode::Standard {
        return None;
    }
    let played = game.position().fullmoves().get().saturating_sub(1);
    if played >= book_moves(level) {
        return None;
    }
    let key = game.key();
    let moves = tree().get(&key)?;
    let total: u64 = moves.iter().map(|&(_, w)| u64::from(w)).sum();
    let mut pick = splitmix64(seed ^ key.rotate_left(23)) % total.max(1);
    for &(m, weight) in moves {
        if pick < u64::from(weight) {
            return Some(m);
        }
        pick -= u64::from(weight);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_row_of_the_book_is_legal_and_the_start_has_several_moves() {
        let tree = build(LINES).expect("the book is legal");
        let start = tree
            .get(&Game::startpos().key())
            .expect("the start is in the book");
        assert!(start.len() >= 4, "first moves: {}", start.len());
        // Every row adds at least its last position: no row repeats another.
        let rows = LINES
            .lines()
            .filter(|r| !r.trim().is_empty() && !r.starts_with('#'))
            .count();
        let distinct: HashSet<&str> = LINES
            .lines()
            .filter(|r| !r.trim().is_empty() && !r.starts_with('#'))
            .collect();
        assert_eq!(rows, distinct.len());
    }

    #[test]
    fn an_illegal_row_is_named() {
        let err = build("# header\ne2e4 e7e5\ne2e4 e2e4\n").unwrap_err();
        assert!(err.starts_with("row 3:"), "{err}");
    }

    /// Plays both sides from the book while it answers.
    fn book_game(level: f64, seed: u64) -> Vec<String> {
        let mut game = Game::startpos();
        let mut moves = Vec::new();
        while let Some(m) = book_move(&game, level, seed) {
            moves.push(game.to_uci(m));
            game.play(m);
        }
        moves
    }

    #[test]
    fn the_seed_chooses_the_line_and_the_same_seed_the_same_line() {
        assert_eq!(book_game(10.0, 5), book_game(10.0, 5));
        let openings: HashSet<Vec<String>> = (0..50).map(|seed| book_game(10.0, seed)).collect();
        assert!(
            openings.len() >= 15,
            "50 seeds gave {} lines",
            openings.len()
        );
    }

    #[test]
    fn weaker_levels_leave_the_book_sooner() {
        for seed in 0..20 {
            let low = book_game(1.0, seed);
            let high = book_game(10.0, seed);
            assert!(low.len() <= 4, "level 1 played {low:?}");
            assert!(
                high.len() >= low.len() && high.len() <= 10,
                "level 10 played {high:?}"
            );
        }
        assert!((0..20).any(|seed| book_game(10.0, seed).len() >= 9));
    }

    #[test]
    fn no_book_in_chess960_or_out_of_the_lines() {
        let fen = "bqnbrkrn/pppppppp/8/8/8/8/PPPPPPPP/BQNBRKRN w GEge - 0 1";
        let game = Game::new(Some(fen), true).unwrap();
        assert_eq!(book_move(&game, 10.0, 1), None);
        let odd = Game::from_uci_moves(None, &["a2a3"], false).unwrap();
        assert_eq!(book_move(&odd, 10.0, 1), None);
    }
}
