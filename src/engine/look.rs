//! The second look: every legal move of a position scored by a clean, shallow, full-strength
//! search, and one move scored by a search of a given size. The humane model reads its errors
//! off the first ([`super::humane`]); the top's stumbles find their traps with both
//! ([`super::stumble`]). Pure functions of the game when the engine is cleared as each says.

use shakmaty::Move;

use super::position::GameEnd;
use super::{Engine, Game, Limits, NoStop, Score, SearchObserver, SearchParams};

/// Centipawns of a search score, mates far beyond any material.
fn cp_of(score: Score) -> i32 {
    match score {
        Score::Cp(cp) => cp,
        Score::Mate(n) if n > 0 => 30_000 - n,
        Score::Mate(n) => -30_000 - n,
    }
}

/// The most nodes one move of the look may take (a bound on its cost in wild positions).
const LOOK_NODES_PER_MOVE: u64 = 20_000;

/// Every legal move of `game` scored by a clean search `depth` plies deep (each move played,
/// then `depth - 1` plies, at least one, and quiescence), best first (ties: the legal-move
/// order). `engine` is cleared first, so the scores are a pure function of the game.
pub fn score_moves(engine: &mut Engine, game: &Game, depth: u32) -> Vec<(Move, i32)> {
    engine.new_game();
    let limits = Limits {
        nodes: Some(LOOK_NODES_PER_MOVE),
        depth: Some(depth.saturating_sub(1).max(1)),
    };
    let mut scored: Vec<(Move, i32)> = game
        .legal_moves()
        .into_iter()
        .map(|m| (m, score_after(engine, game, m, limits)))
        .collect();
    scored.sort_by_key(|&(_, cp)| std::cmp::Reverse(cp));
    scored
}

/// The score of `m` in `game` (centipawns, the mover's view, mates far beyond any material):
/// the game after it, searched at full strength within `limits` by `engine` as it stands (its
/// table kept: the caller clears it where the score must be a function of the game alone).
pub fn score_after(engine: &mut Engine, game: &Game, m: Move, limits: Limits) -> i32 {
    score_after_within(engine, game, m, limits, &mut NoStop)
}

/// [`score_after`] under `observer`, which may stop the search (depth 1 always completes).
pub fn score_after_within(
    engine: &mut Engine,
    game: &Game,
    m: Move,
    limits: Limits,
    observer: &mut dyn SearchObserver,
) -> i32 {
    let mut child = game.clone();
    child.play(m);
    match child.outcome() {
        Some(GameEnd::Checkmate { .. }) => 30_000,
        Some(_) => 0,
        None => {
            let params = SearchParams::full_strength(limits);
            -cp_of(engine.search(&child, &params, observer).score)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_look_is_a_pure_function_of_the_game() {
        let g = Game::new(
            Some("r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R b KQkq - 3 3"),
            false,
        )
        .unwrap();
        let mut engine = Engine::new(1);
        let first = score_moves(&mut engine, &g, 3);
        // Another position in between leaves nothing behind.
        score_moves(&mut engine, &Game::startpos(), 3);
        assert_eq!(score_moves(&mut engine, &g, 3), first);
        assert_eq!(first.len(), g.legal_moves().len());
        assert!(first.windows(2).all(|w| w[0].1 >= w[1].1));
    }
}
