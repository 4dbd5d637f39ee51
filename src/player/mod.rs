//! The level player: one of our levels playing one game. It owns everything that decides a
//! move — the engine with the level's hash, the level's parameters, the game's seed — and the
//! time policy ([`clock`]), so the daemon, the arena, the sandbox's simulated challengers and
//! `ladder uci` with `Level` all play the very same moves: a move measured offline is the move
//! the daemon would play on Lichess. How long a person would take over the move (the wait
//! after the search, not the search itself) is [`think`]. The first moves of a game may come
//! from the [`book`], chosen by the game's seed. How the level behaves around its moves —
//! takebacks, draw offers, resigning ([`conduct`]) and what it says ([`chat`], and its answers
//! to chat commands, [`chat_commands`]) — is the
//! player's too; the daemon carries it out on Lichess. Whoever else sits at a board — an
//! external UCI engine ([`uci_engine`]), a built-in mover — is seated beside it by [`seat`], the
//! one seat the arena, the anchors and the sandbox's challengers play through.
//!
//! Determinism: a game replays bit for bit from (coefficients, level, seed) when its moves are
//! chosen in order by one player (the table carries knowledge from move to move, and
//! [`LevelPlayer::new`] starts it empty).

pub mod book;
pub mod chat;
pub mod chat_commands;
pub mod clock;
pub mod conduct;
pub mod deadline;
pub mod humane;
pub mod seat;
pub mod think;
pub mod uci_engine;

use std::time::Instant;

use crate::engine::humane::ClockLeft;
use crate::engine::{
    Engine, Evaluator, Game, Limits, Score, SearchConstants, SearchObserver, SearchParams,
    SearchResult,
};
use crate::levels::LevelParams;
use deadline::{Deadline, TimeBudget};
use humane::{SecondLook, Verdict};

/// One level playing one game.
pub struct LevelPlayer {
    engine: Engine,
    params: LevelParams,
    seed: u64,
    /// The humane error model's second look, when the coefficients turn it on.
    second_look: Option<SecondLook>,
    /// The player's clock before the next move, when the game has one and the caller said.
    clock: Option<ClockLeft>,
    /// What the second look made of the last move chosen (`None`: a book move, or no look).
    last_verdict: Option<Verdict>,
    /// Unit tests only: the next search panics (the daemon's search pool must outlive one).
    #[cfg(test)]
    pub(crate) panic_on_choose: bool,
}

impl LevelPlayer {
    /// A player for a new game: a fresh engine sized by the level, the game's seed.
    pub fn new(params: LevelParams, seed: u64) -> LevelPlayer {
        // Validated coefficients name a known evaluation; the shipped one is the fallback.
        let evaluator = Evaluator::of_versions(params.eval_weights, params.network)
            .unwrap_or_else(Evaluator::shipped);
        // Validated coefficients name a known version; the newest is the fallback.
        let constants =
            SearchConstants::of_version(params.search).unwrap_or_else(SearchConstants::shipped);
        let mut engine = Engine::with_evaluator(params.hash_mb, evaluator.clone());
        engine.set_search_constants(constants.clone());
        let second_look = params
            .humane
            .as_deref()
            .map(|&(model, played)| SecondLook::new(model, played, evaluator, constants));
        LevelPlayer {
            engine,
            params,
            seed,
            second_look,
            clock: None,
            last_verdict: None,
            #[cfg(test)]
            panic_on_choose: false,
        }
    }

    pub fn params(&self) -> &LevelParams {
        &self.params
    }

    /// The game's seed: every random choice of this player derives from it.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The player's clock before its next move (`None`: no clock, or not known); the humane
    /// error model errs more in time trouble.
    pub fn set_clock(&mut self, clock: Option<ClockLeft>) {
        self.clock = clock;
    }

    /// The player's clock as last set ([`LevelPlayer::set_clock`]).
    pub fn clock(&self) -> Option<ClockLeft> {
        self.clock
    }

    /// The search parameters of the next move in `game`.
    pub fn search_params(&self, game: &Game) -> SearchParams {
        self.params.search_params(game, self.seed)
    }

    /// Chooses the move in `game`'s current position: the book's while the game is in it, else
    /// the search's; `observer` may stop the search (time, cancel) but depth 1 always
    /// completes, so a legal move comes back unless the game is over.
    pub fn choose(&mut self, game: &Game, observer: &mut dyn SearchObserver) -> SearchResult {
        self.choose_within(game, Limits::default(), observer)
    }

    /// [`LevelPlayer::choose`] under extra limits that may only shorten the level's own search
    /// (a UCI `go nodes` or `go depth`); with none it is exactly `choose`.
    pub fn choose_within(
        &mut self,
        game: &Game,
        cap: Limits,
        observer: &mut dyn SearchObserver,
    ) -> SearchResult {
        self.last_verdict = None;
        #[cfg(test)]
        assert!(!self.panic_on_choose, "a search that panics (test)");
        if let Some(m) = book::book_move(game, self.params.level, self.seed) {
            // A book move is one a person of the level knows by heart: no search, an even score.
            return SearchResult {
                best_move: Some(m),
                score: Score::Cp(0),
                depth: 0,
                nodes: 0,
                pv: vec![m],
            };
        }
        let mut params = self.search_params(game);
        params.limits.nodes = smaller(params.limits.nodes, cap.nodes);
        params.limits.depth = smaller(params.limits.depth, cap.depth);
        let mut result = self.engine.search(game, &params, observer);
        if let (Some(look), Some(chosen)) = (self.second_look.as_mut(), result.best_move) {
            let nodes = params.limits.nodes.unwrap_or(self.params.nodes);
            let played = look.review(game, chosen, self.seed, self.clock, nodes, observer);
            self.last_verdict = Some(look.last_verdict());
            if played != chosen {
                // The search's line and score were of the move not played.
                result.best_move = Some(played);
                result.pv = vec![played];
            }
        }
        result
    }

    /// What the humane model's second look made of the last move chosen: `None` after a book
    /// move, or for a level without the model.
    pub fn last_verdict(&self) -> Option<Verdict> {
        self.last_verdict
    }

    /// Permille of the hash table in use (UCI `hashfull`).
    pub fn hashfull(&self) -> u32 {
        self.engine.hashfull()
    }
}

/// Lends `player` to a blocking thread (searches are CPU work, never the async runtime's) for
/// the move in `game`, stopped by `budget` counted from when the thread starts, and hands it
/// back with the result; `Err` when the search panicked. Every level [`seat::Seat`] (the
/// arena's, the sandbox's challengers') searches through it, the one place a level player is
/// lent to the async runtime's blocking threads; the daemon's searches queue by urgency on its
/// own pool instead.
pub async fn choose_blocking(
    mut player: Box<LevelPlayer>,
    game: Game,
    budget: TimeBudget,
) -> Result<(Box<LevelPlayer>, SearchResult), tokio::task::JoinError> {
    tokio::task::spawn_blocking(move || {
        let mut deadline = Deadline::new(Instant::now(), budget);
        let result = player.choose(&game, &mut deadline);
        (player, result)
    })
    .await
}

fn smaller<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::NoStop;
    use crate::levels::Coefficients;

    /// The moves (UCI) of a game the level plays against itself from the start, `plies` long
    /// at most: one seed, one game.
    pub(super) fn self_play(
        coefficients: &Coefficients,
        level: f64,
        seed: u64,
        plies: usize,
    ) -> Vec<String> {
        let mut player = LevelPlayer::new(LevelParams::new(coefficients, level), seed);
        let mut game = Game::startpos();
        let mut moves = Vec::new();
        for _ in 0..plies {
            let Some(m) = player.choose(&game, &mut NoStop).best_move else {
                break;
            };
            moves.push(game.to_uci(m));
            game.play(m);
        }
        moves
    }

    #[test]
    fn same_seed_same_game_other_seed_other_game() {
        let play = |seed| self_play(&Coefficients::builtin(), 1.0, seed, 24);
        assert_eq!(play(7), play(7));
        assert_ne!(play(7), play(8));
    }
}
