//! Iterative deepening alpha-beta search. (Placeholder until the engine issue lands: picks the
//! first legal move; the public API below is the contract the rest of the crate codes against.)

use shakmaty::Move;

use super::{Game, SearchObserver, SearchParams};

/// A search score from the side to move's point of view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Score {
    /// Centipawns.
    Cp(i32),
    /// Mate in this many moves (positive: we mate; negative: we are mated).
    Mate(i32),
}

/// Progress after one completed iteration.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchInfo {
    pub depth: u32,
    pub seldepth: u32,
    pub score: Score,
    pub nodes: u64,
    pub pv: Vec<Move>,
}

/// What a search returns. `best_move` is `None` only when the side to move has no legal move.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchResult {
    pub best_move: Option<Move>,
    pub score: Score,
    pub depth: u32,
    pub nodes: u64,
    pub pv: Vec<Move>,
}

/// A single-threaded search with its own transposition table.
pub struct Engine {
    hash_mb: usize,
}

impl Engine {
    pub fn new(hash_mb: usize) -> Engine {
        Engine { hash_mb }
    }

    pub fn hash_mb(&self) -> usize {
        self.hash_mb
    }

    /// Resizes (and clears) the transposition table.
    pub fn set_hash_mb(&mut self, hash_mb: usize) {
        self.hash_mb = hash_mb;
    }

    /// Forgets everything learned (hash, history): call between games.
    pub fn new_game(&mut self) {}

    pub fn search(
        &mut self,
        game: &Game,
        _params: &SearchParams,
        observer: &mut dyn SearchObserver,
    ) -> SearchResult {
        let best_move = game.legal_moves().first().copied();
        let result = SearchResult {
            best_move,
            score: Score::Cp(0),
            depth: 1,
            nodes: 1,
            pv: best_move.into_iter().collect(),
        };
        observer.on_iteration(&SearchInfo {
            depth: 1,
            seldepth: 1,
            score: result.score,
            nodes: result.nodes,
            pv: result.pv.clone(),
        });
        result
    }
}
