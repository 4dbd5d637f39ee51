//! The game actor's decisions as a pure state machine: given what the game stream says, what
//! do we do? No I/O, no clock of its own (times come in as arguments), so every failure mode
//! of PEERS.md that lives here is unit-tested without a server.
//!
//! The invariants it keeps: at most one search per ply and at most one move posted per ply
//! (a reconnect that replays `gameFull`, or a duplicate state, never produces a second move);
//! a search result for a ply that is no longer current, or for a finished game, is dropped;
//! the record is produced once, when the stream first reports the game over; a takeback (a
//! state with fewer moves) forgets what was searched or played for the plies it undid.
//!
//! It also applies the account's [`Conduct`]: takebacks granted up to the limit, draw offers
//! answered from the level's evaluation (an offer standing on our turn is answered when the
//! search for that turn is done, with its score), a lost game resigned.

use std::time::Duration;

use crate::engine::{Game, GameError, Score, SearchResult};
use crate::levels::LevelParams;
use crate::lichess::{Color, GameFull, GameId, GameState, GameStatus, Perf};
use crate::results::{
    ClockRecord, GameHeader, GameRecord, Keyed, OpponentRecord, Outcome, SCHEMA_VERSION, Source,
    fault,
};

use crate::player::clock::ClockInput;

use crate::player::conduct::{Conduct, ResignWatch, accept_draw};

/// What the actor knows before the game stream opens.
#[derive(Clone, Debug)]
pub struct GameSetup {
    pub game_id: GameId,
    /// Our account's user id (its username is the header's `account`).
    pub user_id: String,
    /// Account, level, engine parameters and seed: what the open-games entry and the record
    /// keep of the game, made once here.
    pub header: GameHeader,
    pub params: LevelParams,
    pub move_overhead_ms: u64,
}

impl GameSetup {
    /// The game `game_id` of account `username` (id `user_id`), played at `params` with `seed`.
    pub fn new(
        game_id: GameId,
        (username, user_id): (&str, &str),
        params: LevelParams,
        seed: u64,
        source: Source,
        move_overhead_ms: u64,
    ) -> GameSetup {
        GameSetup {
            game_id,
            user_id: user_id.to_string(),
            header: params.game_header(source, username, seed),
            params,
            move_overhead_ms,
        }
    }
}

/// Something the actor should do.
#[derive(Clone, Debug)]
pub enum Action {
    /// Start a search for the position after `ply` moves.
    Search {
        ply: usize,
        game: Box<Game>,
        clock: ClockInput,
    },
    /// Post this move for `ply`.
    Move { ply: usize, uci: String },
    /// Accept (`true`) or decline the opponent's draw offer.
    AnswerDraw(bool),
    /// Accept (`true`) or decline the opponent's takeback proposal.
    AnswerTakeback(bool),
    /// Resign the game (it is lost).
    Resign,
    /// The game ended: write this record, say goodbye, stop.
    Finished(Box<GameRecord>),
}

/// Why the stream's data could not be followed.
#[derive(Debug, thiserror::Error)]
pub enum TrackerError {
    #[error("game {game_id}: we ({user}) do not play in it")]
    NotOurGame { game_id: GameId, user: String },
    #[error("game {game_id}: {source}")]
    Moves { game_id: GameId, source: GameError },
    #[error("game {game_id}: a gameState came before any gameFull")]
    NoGameFull { game_id: GameId },
}

/// The game as the tracker follows it.
pub struct Tracker {
    setup: GameSetup,
    full: Option<Box<GameFull>>,
    color: Color,
    /// The latest state and its position.
    state: Option<GameState>,
    game: Option<Game>,
    /// The ply a search is running for.
    searching: Option<usize>,
    /// The last ply we posted a move for (successfully).
    moved: Option<usize>,
    /// Our remaining clock when we last moved (for the fault note).
    clock_at_last_move: Option<u64>,
    /// Offers already answered (or to be answered), by ply, so one offer gets one answer.
    draw_answered_at: Option<usize>,
    takeback_answered_at: Option<usize>,
    /// The ply at which we granted a takeback: until the server's next position, nothing
    /// searched for this ply may be played (it would be a move for a ply that is undone).
    takeback_granted_at: Option<usize>,
    conduct: Conduct,
    takebacks_granted: u32,
    /// A draw offer standing on our turn, answered when the search for it is done.
    draw_pending: bool,
    /// Our latest search's evaluation (our point of view).
    last_score: Option<Score>,
    resign_watch: ResignWatch,
    finished: bool,
}

impl Tracker {
    /// A tracker that declines every offer and never resigns.
    pub fn new(setup: GameSetup) -> Tracker {
        Tracker::with_conduct(setup, Conduct::reserved())
    }

    /// A tracker applying the account's conduct.
    pub fn with_conduct(setup: GameSetup, conduct: Conduct) -> Tracker {
        Tracker {
            setup,
            full: None,
            color: Color::White,
            state: None,
            game: None,
            searching: None,
            moved: None,
            clock_at_last_move: None,
            draw_answered_at: None,
            takeback_answered_at: None,
            takeback_granted_at: None,
            conduct,
            takebacks_granted: 0,
            draw_pending: false,
            last_score: None,
            resign_watch: ResignWatch::default(),
            finished: false,
        }
    }

    pub fn setup(&self) -> &GameSetup {
        &self.setup
    }

    pub fn color(&self) -> Color {
        self.color
    }

    pub fn full(&self) -> Option<&GameFull> {
        self.full.as_deref()
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Number of moves played so far.
    pub fn ply(&self) -> usize {
        self.game.as_ref().map_or(0, |g| g.moves().len())
    }

    pub fn searching(&self) -> Option<usize> {
        self.searching
    }

    /// Whether the game is on and it is our move.
    pub fn is_our_turn(&self) -> bool {
        match (&self.game, &self.state) {
            (Some(game), Some(state)) => {
                !self.finished
                    && state.status.is_ongoing()
                    && Color::from(game.turn()) == self.color
            }
            _ => false,
        }
    }

    /// Whether the opponent still owes the game its first move (abort territory).
    pub fn awaiting_opponent_first_move(&self) -> bool {
        match (&self.game, &self.state) {
            (Some(game), Some(state)) if state.status.is_ongoing() => {
                let opponents_turn = Color::from(game.turn()) != self.color;
                opponents_turn && game.moves().len() < 2
            }
            _ => false,
        }
    }

    /// The opponent's display name.
    pub fn opponent_name(&self) -> String {
        self.full
            .as_ref()
            .map(|f| f.player(self.color.other()).display_name())
            .unwrap_or_default()
    }

    /// The first line of every (re)opened stream. `now_ms` is Unix time.
    pub fn on_game_full(
        &mut self,
        full: Box<GameFull>,
        now_ms: i64,
    ) -> Result<Vec<Action>, TrackerError> {
        self.color =
            full.color_of(&self.setup.user_id)
                .ok_or_else(|| TrackerError::NotOurGame {
                    game_id: self.setup.game_id.clone(),
                    user: self.setup.header.account.clone(),
                })?;
        let state = full.state.clone();
        self.full = Some(full);
        // A replayed gameFull is a state like any other: the ply bookkeeping makes it safe.
        self.on_game_state(state, now_ms)
    }

    /// A state: after every move, offer, and at the end.
    pub fn on_game_state(
        &mut self,
        state: GameState,
        now_ms: i64,
    ) -> Result<Vec<Action>, TrackerError> {
        let full = self.full.as_ref().ok_or_else(|| TrackerError::NoGameFull {
            game_id: self.setup.game_id.clone(),
        })?;
        if self.finished {
            return Ok(Vec::new());
        }
        let fen = (full.initial_fen != "startpos").then_some(full.initial_fen.as_str());
        let chess960 = full.variant.key == "chess960";
        let game = Game::from_uci_moves(fen, &state.move_list(), chess960).map_err(|source| {
            TrackerError::Moves {
                game_id: self.setup.game_id.clone(),
                source,
            }
        })?;
        let ply = game.moves().len();
        if self.takeback_granted_at.is_some_and(|p| p != ply) {
            self.takeback_granted_at = None;
        }
        // A takeback we granted that the server never carried out (the proposal withdrawn
        // before our answer landed; lila answers 200 either way): the position is ours to
        // play again, or our clock runs out waiting.
        if self.takeback_granted_at == Some(ply) && !state.takeback_of(self.color.other()) {
            self.takeback_granted_at = None;
        }
        if ply < self.ply() {
            // A takeback: what was searched, played or answered for the undone plies is void.
            self.searching = None;
            self.moved = self.moved.filter(|&m| m < ply);
            self.draw_answered_at = None;
            self.takeback_answered_at = None;
            self.draw_pending = false;
        }
        self.game = Some(game);
        self.state = Some(state);
        let state = self.state.as_ref().expect("just set");
        let mut actions = Vec::new();

        if !state.status.is_ongoing() {
            self.finished = true;
            self.searching = None;
            actions.push(Action::Finished(Box::new(self.record(now_ms))));
            return Ok(actions);
        }
        let opponent = self.color.other();
        let draw_offered = state.draw_offer_of(opponent) && self.draw_answered_at != Some(ply);
        let takeback_asked = state.takeback_of(opponent) && self.takeback_answered_at != Some(ply);
        if takeback_asked {
            self.takeback_answered_at = Some(ply);
            let grant = self.takebacks_granted < self.conduct.takebacks;
            self.takebacks_granted += u32::from(grant);
            if grant {
                // The search running for this ply is void: once the server takes the move
                // back, it is a move out of turn (or for a position that is gone).
                self.takeback_granted_at = Some(ply);
                self.searching = None;
                self.draw_pending = false;
            }
            actions.push(Action::AnswerTakeback(grant));
        }
        let search = self.maybe_search(Duration::ZERO);
        if draw_offered {
            self.draw_answered_at = Some(ply);
            if self.searching == Some(ply) {
                // Judged by the search of this very position.
                self.draw_pending = true;
            } else {
                actions.push(Action::AnswerDraw(self.accepts_draw(self.last_score)));
            }
        }
        actions.extend(search);
        Ok(actions)
    }

    /// A search for the current ply if it is our turn and none ran or is running for it.
    /// `since_state` is the time since the current state arrived (it is off our clock).
    pub fn maybe_search(&mut self, since_state: Duration) -> Option<Action> {
        let game = self.game.as_ref()?;
        let state = self.state.as_ref()?;
        let ply = game.moves().len();
        let our_turn = Color::from(game.turn()) == self.color;
        if self.finished
            || !our_turn
            || self.searching == Some(ply)
            || self.takeback_granted_at == Some(ply)
            || self.moved.is_some_and(|m| m >= ply)
            || game.legal_moves().is_empty()
        {
            return None;
        }
        self.searching = Some(ply);
        let has_clock = self.full.as_ref().is_some_and(|f| f.clock.is_some());
        let remaining_ms = has_clock.then(|| {
            state
                .time_of(self.color)
                .saturating_sub(since_state.as_millis() as u64)
        });
        Some(Action::Search {
            ply,
            game: Box::new(game.clone()),
            clock: ClockInput {
                remaining_ms,
                increment_ms: state.increment_of(self.color),
                overhead_ms: self.setup.move_overhead_ms,
                // Our first move: white at ply 0, black at ply 1 (from the start position).
                first_move: ply < 2,
            },
        })
    }

    /// After the opponent left, whether a draw is claimed instead of the win: where the
    /// level's conduct would take a draw here (it would accept a draw offer, by its latest
    /// search), and where we have no mating material (lila draws such a victory claim and
    /// answers it as refused).
    pub fn prefers_draw(&self) -> bool {
        let cannot_mate = self.game.as_ref().is_some_and(|g| {
            shakmaty::Position::has_insufficient_material(g.position(), self.color.into())
        });
        cannot_mate || self.accepts_draw(self.last_score)
    }

    fn accepts_draw(&self, score: Option<Score>) -> bool {
        let fullmove = self
            .game
            .as_ref()
            .map_or(1, |g| shakmaty::Position::fullmoves(g.position()).get());
        accept_draw(&self.conduct, self.setup.params.level, fullmove, score)
    }

    /// Our answer granting a takeback did not reach the server: the position stands, and we
    /// may search and play it again.
    pub fn on_takeback_failed(&mut self) {
        self.takeback_granted_at = None;
    }

    /// A search finished: what to do with it under the account's conduct — resign, answer a
    /// standing draw offer, post the move — or nothing if the game moved on or ended.
    pub fn on_search_result(&mut self, ply: usize, result: &SearchResult) -> Vec<Action> {
        let current = self.searching == Some(ply)
            && !self.finished
            && self.ply() == ply
            && self.moved.is_none_or(|m| m < ply);
        if !current {
            return self
                .on_search_done(ply, result.best_move)
                .into_iter()
                .collect();
        }
        self.last_score = Some(result.score);
        if self.resign_watch.on_score(&self.conduct, result.score) {
            self.searching = None;
            return vec![Action::Resign];
        }
        let mut actions = Vec::new();
        if std::mem::take(&mut self.draw_pending)
            && self
                .state
                .as_ref()
                .is_some_and(|s| s.draw_offer_of(self.color.other()))
        {
            let accept = self.accepts_draw(Some(result.score));
            actions.push(Action::AnswerDraw(accept));
            if accept {
                self.searching = None;
                return actions;
            }
        }
        actions.extend(self.on_search_done(ply, result.best_move));
        actions
    }

    /// A search finished. Returns the move to post, unless the game moved on or ended (or
    /// the search is not the one running for this ply: a takeback voided it).
    pub fn on_search_done(&mut self, ply: usize, best: Option<shakmaty::Move>) -> Option<Action> {
        if self.searching != Some(ply) {
            return None;
        }
        self.searching = None;
        let game = self.game.as_ref()?;
        let current = game.moves().len();
        if self.finished || current != ply || self.moved.is_some_and(|m| m >= ply) {
            return None;
        }
        let uci = game.to_uci(best?);
        Some(Action::Move { ply, uci })
    }

    /// The move for `ply` was accepted by the server.
    pub fn on_move_posted(&mut self, ply: usize) {
        self.moved = Some(self.moved.map_or(ply, |m| m.max(ply)));
        self.clock_at_last_move = self.state.as_ref().map(|s| s.time_of(self.color));
    }

    /// The move for `ply` could not be posted: allow a new search when the state is replayed.
    pub fn on_move_failed(&mut self, ply: usize) {
        if self.searching == Some(ply) {
            self.searching = None;
        }
    }

    /// The record of the finished game, from the latest state.
    fn record(&self, now_ms: i64) -> GameRecord {
        let full = self.full.as_ref().expect("record after gameFull");
        let state = self.state.as_ref().expect("record after a state");
        let us = full.player(self.color);
        let them = full.player(self.color.other());
        let result = outcome(state.status, state.winner, self.color);
        let fault = (state.status == GameStatus::Outoftime
            && state.winner == Some(self.color.other()))
        .then(|| {
            fault::text(
                fault::FLAGGED,
                &format!(
                    "lost on time with a node budget of {} per move ({} ms on our clock at our last move)",
                    self.setup.params.nodes,
                    self.clock_at_last_move
                        .map_or_else(|| "?".to_string(), |ms| ms.to_string())
                ),
            )
        });
        GameRecord {
            schema: SCHEMA_VERSION,
            game_id: self.setup.game_id.clone(),
            header: self.setup.header.clone(),
            started_at_ms: full.created_at,
            finished_at_ms: now_ms,
            rated: full.rated,
            speed: Keyed::parse(full.speed.key()),
            // From the keys: `perf.name` is translated into the account's language.
            perf: Keyed::parse(Perf::of_game(&full.variant.key, full.speed).key()),
            variant: full.variant.key.clone(),
            initial_fen: full.initial_fen.clone(),
            clock: full.clock.map(|c| ClockRecord {
                initial_ms: c.initial,
                increment_ms: c.increment,
            }),
            color: self.color.into(),
            opponent: OpponentRecord {
                id: them.id.clone(),
                name: them.name.clone(),
                title: them.title.clone(),
                rating: them.rating.map(f64::from),
                provisional: them.provisional,
                rd: None,
                bot: them.is_bot(),
            },
            our_rating: us.rating.map(f64::from),
            result,
            status: state.status.into(),
            winner: state.winner.map(Keyed::from),
            moves: state.moves.trim().to_string(),
            fault,
            after_restart: None,
            opening_plies: None,
        }
    }
}

/// The result from our side.
pub fn outcome(status: GameStatus, winner: Option<Color>, us: Color) -> Outcome {
    match (status, winner) {
        (_, Some(w)) if w == us => Outcome::Win,
        (_, Some(_)) => Outcome::Loss,
        (
            GameStatus::Aborted
            | GameStatus::NoStart
            | GameStatus::Created
            | GameStatus::Started
            | GameStatus::Cheat
            | GameStatus::UnknownFinish
            | GameStatus::Unknown,
            None,
        ) => Outcome::None,
        // Draw, stalemate, insufficient material (claimed or after a flag), variant end.
        _ => Outcome::Draw,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::levels::Coefficients;

    fn setup() -> GameSetup {
        GameSetup::new(
            GameId::new("g1"),
            ("Ladder-L1", "ladder-l1"),
            LevelParams::new(&Coefficients::builtin(), 1.0),
            7,
            Source::Sandbox,
            100,
        )
    }

    fn full(moves: &str, we_are_white: bool) -> Box<GameFull> {
        full_from("startpos", moves, we_are_white)
    }

    /// A game from `fen` (`startpos` for the standard start).
    fn full_from(fen: &str, moves: &str, we_are_white: bool) -> Box<GameFull> {
        let variant = if fen == "startpos" {
            r#"{"key":"standard","name":"Standard"}"#
        } else {
            r#"{"key":"fromPosition","name":"From Position"}"#
        };
        let (w, b) = if we_are_white {
            ("ladder-l1", "alice")
        } else {
            ("alice", "ladder-l1")
        };
        let json = format!(
            r#"{{"id":"g1","variant":{variant},"speed":"blitz",
            "perf":{{"name":"Blitz"}},"rated":true,"createdAt":1000,
            "white":{{"id":"{w}","name":"{w}","title":null,"rating":1500,"provisional":true}},
            "black":{{"id":"{b}","name":"{b}","title":"BOT","rating":1600}},
            "initialFen":"{fen}","clock":{{"initial":180000,"increment":2000}},"type":"gameFull",
            "state":{{"type":"gameState","moves":"{moves}","wtime":170000,"btime":160000,
            "winc":2000,"binc":2000,"status":"started"}}}}"#
        );
        Box::new(serde_json::from_str(&json).unwrap())
    }

    fn state(moves: &str, status: &str, winner: Option<&str>) -> GameState {
        let winner = winner.map_or(String::new(), |w| format!(r#","winner":"{w}""#));
        serde_json::from_str(&format!(
            r#"{{"type":"gameState","moves":"{moves}","wtime":150000,"btime":150000,"winc":2000,"binc":2000,"status":"{status}"{winner}}}"#
        ))
        .unwrap()
    }

    fn search_ply(actions: &[Action]) -> Option<usize> {
        actions.iter().find_map(|a| match a {
            Action::Search { ply, .. } => Some(*ply),
            _ => None,
        })
    }

    #[test]
    fn replayed_game_full_never_searches_or_moves_twice_for_one_ply() {
        let mut t = Tracker::new(setup());
        let a = t.on_game_full(full("e2e4 e7e5", true), 0).unwrap();
        assert_eq!(search_ply(&a), Some(2));
        // The stream reconnects while the search runs: no second search.
        let a = t.on_game_full(full("e2e4 e7e5", true), 0).unwrap();
        assert_eq!(search_ply(&a), None);
        let m = t.on_search_done(2, t.game.as_ref().unwrap().legal_moves().first().copied());
        assert!(matches!(m, Some(Action::Move { ply: 2, .. })));
        t.on_move_posted(2);
        // A stale replay of the same ply after our move: nothing to do.
        let a = t.on_game_full(full("e2e4 e7e5", true), 0).unwrap();
        assert!(a.is_empty(), "{a:?}");
        // The server never saw the move (post failed): a replay searches again.
        let mut t = Tracker::new(setup());
        t.on_game_full(full("e2e4 e7e5", true), 0).unwrap();
        t.on_move_failed(2);
        let a = t.on_game_full(full("e2e4 e7e5", true), 0).unwrap();
        assert_eq!(search_ply(&a), Some(2));
    }

    #[test]
    fn clock_after_reconnect_is_the_servers_not_zero() {
        let mut t = Tracker::new(setup());
        let a = t.on_game_full(full("e2e4 e7e5", true), 0).unwrap();
        let Some(Action::Search { clock, .. }) =
            a.into_iter().find(|a| matches!(a, Action::Search { .. }))
        else {
            panic!("no search")
        };
        assert_eq!(clock.remaining_ms, Some(170_000));
        assert!(!clock.first_move);
        assert!(crate::player::clock::think_time(clock) > Duration::from_millis(1000));
    }

    #[test]
    fn result_of_a_search_for_a_finished_game_is_dropped_and_recorded_once() {
        let mut t = Tracker::new(setup());
        t.on_game_full(full("", true), 0).unwrap();
        assert_eq!(t.searching(), Some(0));
        let a = t.on_game_state(state("", "aborted", None), 5).unwrap();
        let Some(Action::Finished(record)) = a.into_iter().next() else {
            panic!("no record")
        };
        assert_eq!(record.result, Outcome::None);
        assert_eq!(record.status, "aborted");
        let best = Game::startpos().legal_moves().first().copied();
        assert!(t.on_search_done(0, best).is_none());
        assert!(
            t.on_game_state(state("", "aborted", None), 6)
                .unwrap()
                .is_empty()
        );
    }

    /// The record's perf comes from the keys (variant, speed), not from `perf.name`, which
    /// Lichess translates into the account's language; an unknown speed records `other`.
    #[test]
    fn record_perf_comes_from_the_keys_not_the_translated_name() {
        let finished = |f: Box<GameFull>| {
            let mut t = Tracker::new(setup());
            t.on_game_full(f, 0).unwrap();
            let a = t
                .on_game_state(state("f2f3 e7e5 g2g4 d8h4", "mate", Some("black")), 9)
                .unwrap();
            let Some(Action::Finished(r)) = a.into_iter().last() else {
                panic!("no record")
            };
            r
        };
        let mut f = full("", false);
        f.variant = crate::lichess::Variant::from_key("chess960");
        f.perf.name = "Échecs960".into();
        assert_eq!(finished(f).perf, "chess960");
        let mut f = full("", false);
        f.perf.name = "Partie éclair".into();
        assert_eq!(finished(f).perf, "blitz");
        let mut f = full("", false);
        f.speed = crate::lichess::Speed::Other;
        let r = finished(f);
        assert_eq!((r.perf.as_str(), r.speed.as_str()), ("other", "other"));
    }

    #[test]
    fn record_has_the_bots_side_and_opponent() {
        let mut t = Tracker::new(setup());
        t.on_game_full(full("", false), 0).unwrap();
        let a = t
            .on_game_state(state("f2f3 e7e5 g2g4 d8h4", "mate", Some("black")), 9)
            .unwrap();
        let Some(Action::Finished(r)) = a.into_iter().last() else {
            panic!("no record")
        };
        assert_eq!(r.result, Outcome::Win);
        assert_eq!(r.color, "black");
        assert_eq!(r.opponent.id, "alice");
        assert!(r.opponent.provisional);
        assert!(!r.opponent.bot);
        assert_eq!(r.our_rating, Some(1600.0));
        assert_eq!(r.perf, "blitz");
        assert_eq!(r.header.seed, 7);
        assert_eq!(r.clock.unwrap().increment_ms, 2000);
        assert_eq!(r.fault, None);
        assert_eq!(
            outcome(GameStatus::Outoftime, Some(Color::White), Color::Black),
            Outcome::Loss
        );
        assert_eq!(
            outcome(GameStatus::Stalemate, None, Color::Black),
            Outcome::Draw
        );
    }

    #[test]
    fn offers_are_declined_once_and_first_move_abort_is_tracked() {
        let mut t = Tracker::new(setup());
        t.on_game_full(full("e2e4", true), 0).unwrap();
        assert!(t.awaiting_opponent_first_move());
        let mut s = state("e2e4 e7e5", "started", None);
        s.bdraw = true;
        s.btakeback = true;
        let a = t.on_game_state(s.clone(), 1).unwrap();
        // The draw offer stands on our turn: answered with the search's result (declined by
        // the reserved conduct).
        assert!(t.draw_pending);
        assert!(a.iter().any(|x| matches!(x, Action::AnswerTakeback(false))));
        assert!(!t.awaiting_opponent_first_move());
        let a = t.on_game_state(s, 2).unwrap();
        assert!(!a.iter().any(|x| matches!(x, Action::AnswerTakeback(_))));
        let best = t.game.as_ref().unwrap().legal_moves().first().copied();
        let a = t.on_search_result(2, &result(best, Score::Cp(-900)));
        assert!(
            matches!(
                a[..],
                [Action::AnswerDraw(false), Action::Move { ply: 2, .. }]
            ),
            "{a:?}"
        );
    }

    fn result(best: Option<shakmaty::Move>, score: Score) -> SearchResult {
        SearchResult {
            best_move: best,
            score,
            depth: 1,
            nodes: 1,
            pv: Vec::new(),
        }
    }

    #[test]
    fn an_abandoned_game_is_claimed_as_a_draw_without_mating_material() {
        // The reserved conduct takes no draw: the win is claimed wherever we can mate.
        let rook_against_bare_king = "4k3/8/8/8/8/8/8/R3K3 w - - 0 1";
        for (we_are_white, draw) in [(true, false), (false, true)] {
            let mut t = Tracker::new(setup());
            let full = full_from(rook_against_bare_king, "a1a2 e8d8", we_are_white);
            t.on_game_full(full, 0).unwrap();
            assert_eq!(t.prefers_draw(), draw, "we are white: {we_are_white}");
        }
    }

    fn conduct(takebacks: u32, resign: bool) -> Conduct {
        Conduct {
            takebacks,
            accept_draws: true,
            resign,
        }
    }

    /// Black (the opponent) asks for a takeback after `moves` (at `now_ms`): what the tracker
    /// does.
    fn black_asks_takeback(t: &mut Tracker, moves: &str, now_ms: i64) -> Vec<Action> {
        let mut s = state(moves, "started", None);
        s.btakeback = true;
        t.on_game_state(s, now_ms).unwrap()
    }

    /// The answer to a takeback among `actions`, if one was given.
    fn takeback_answer(actions: &[Action]) -> Option<bool> {
        actions.iter().find_map(|a| match a {
            Action::AnswerTakeback(yes) => Some(*yes),
            _ => None,
        })
    }

    #[test]
    fn takebacks_are_granted_up_to_the_limit_and_undone_plies_are_played_again() {
        let mut t = Tracker::with_conduct(setup(), conduct(1, false));
        t.on_game_full(full("e2e4 e7e5", true), 0).unwrap();
        let best = t.game.as_ref().unwrap().legal_moves().first().copied();
        let a = t.on_search_result(2, &result(best, Score::Cp(0)));
        assert!(matches!(a[..], [Action::Move { ply: 2, .. }]));
        t.on_move_posted(2);
        // They move and ask to take it back: granted; the server undoes their move.
        let a = black_asks_takeback(&mut t, "e2e4 e7e5 g1f3 b8c6", 1);
        assert_eq!(takeback_answer(&a), Some(true), "{a:?}");
        let a = t
            .on_game_state(state("e2e4 e7e5 g1f3", "started", None), 2)
            .unwrap();
        assert!(a.is_empty(), "{a:?}");
        // Another move at the same ply, and a second takeback: the limit is reached.
        let a = black_asks_takeback(&mut t, "e2e4 e7e5 g1f3 g8f6", 3);
        assert_eq!(takeback_answer(&a), Some(false), "{a:?}");
        assert_eq!(search_ply(&a), Some(4));
        // Our own move undone (two plies back, their turn): searched again when it is ours.
        let mut t = Tracker::with_conduct(setup(), conduct(2, false));
        t.on_game_full(full("e2e4 e7e5", true), 0).unwrap();
        t.on_search_result(2, &result(best, Score::Cp(0)));
        t.on_move_posted(2);
        t.on_game_state(state("e2e4 e7e5 g1f3 b8c6", "started", None), 1)
            .unwrap();
        let a = t
            .on_game_state(state("e2e4 e7e5", "started", None), 2)
            .unwrap();
        assert_eq!(search_ply(&a), Some(2), "{a:?}");
    }

    #[test]
    fn a_granted_takeback_voids_the_search_of_our_turn_until_the_server_undoes_the_move() {
        let mut t = Tracker::with_conduct(setup(), conduct(1, false));
        t.on_game_full(full("e2e4 e7e5 g1f3", true), 0).unwrap();
        let a = t
            .on_game_state(state("e2e4 e7e5 g1f3 b8c6", "started", None), 1)
            .unwrap();
        assert_eq!(search_ply(&a), Some(4));
        // They ask to take their move back while we search: granted, and the search's move
        // is not played (the soak saw it refused as "not your turn" once the move was undone).
        let mut s = state("e2e4 e7e5 g1f3 b8c6", "started", None);
        s.btakeback = true;
        let a = t.on_game_state(s.clone(), 2).unwrap();
        assert!(matches!(a[..], [Action::AnswerTakeback(true)]), "{a:?}");
        let best = t.game.as_ref().unwrap().legal_moves().first().copied();
        assert!(
            t.on_search_result(4, &result(best, Score::Cp(0)))
                .is_empty()
        );
        assert!(t.maybe_search(Duration::ZERO).is_none());
        // The server undoes their move: nothing to do until they move again.
        let a = t
            .on_game_state(state("e2e4 e7e5 g1f3", "started", None), 3)
            .unwrap();
        assert!(a.is_empty(), "{a:?}");
        let a = t
            .on_game_state(state("e2e4 e7e5 g1f3 g8f6", "started", None), 4)
            .unwrap();
        assert_eq!(search_ply(&a), Some(4));

        // Our answer failed: the position stands and is searched again.
        let mut t = Tracker::with_conduct(setup(), conduct(1, false));
        t.on_game_full(full("e2e4 e7e5 g1f3 b8c6", true), 0)
            .unwrap();
        t.on_game_state(s, 1).unwrap();
        assert!(t.maybe_search(Duration::ZERO).is_none());
        t.on_takeback_failed();
        assert!(t.maybe_search(Duration::ZERO).is_some());
    }

    #[test]
    fn a_granted_takeback_the_server_never_carries_out_leaves_the_position_to_us() {
        let mut t = Tracker::with_conduct(setup(), conduct(1, false));
        t.on_game_full(full("e2e4 e7e5 g1f3 b8c6", true), 0)
            .unwrap();
        let a = black_asks_takeback(&mut t, "e2e4 e7e5 g1f3 b8c6", 1);
        assert_eq!(takeback_answer(&a), Some(true), "{a:?}");
        // They withdrew the proposal before our answer landed: the same moves, no proposal.
        let a = t
            .on_game_state(state("e2e4 e7e5 g1f3 b8c6", "started", None), 2)
            .unwrap();
        assert_eq!(search_ply(&a), Some(4), "{a:?}");
    }

    #[test]
    fn a_lost_game_is_resigned_only_when_the_conduct_allows() {
        for resign in [true, false] {
            let mut t = Tracker::with_conduct(setup(), conduct(0, resign));
            let mut moves = vec!["e2e4", "e7e5"];
            let more = ["g1f3", "b8c6", "f1c4", "g8f6", "b1c3", "f8c5"];
            let mut resigned = false;
            for pair in 0..3 {
                let a = t
                    .on_game_full(full(&moves.join(" "), true), pair as i64)
                    .unwrap();
                let ply = search_ply(&a).unwrap();
                let best = t.game.as_ref().unwrap().legal_moves().first().copied();
                let a = t.on_search_result(ply, &result(best, Score::Cp(-900)));
                resigned |= a.iter().any(|x| matches!(x, Action::Resign));
                if a.iter().any(|x| matches!(x, Action::Move { .. })) {
                    t.on_move_posted(ply);
                }
                moves.extend(&more[2 * pair..2 * pair + 2]);
            }
            assert_eq!(resigned, resign);
        }
    }
}
