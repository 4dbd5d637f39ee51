//! One sandbox game as a state machine: the position (through `ladder::engine::Game`), the
//! running clocks, draw and takeback offers, and every way a game ends. No I/O: callers pass
//! the current instant, so the rules are testable without waiting.

use std::time::Duration;

use shakmaty::Position;
use tokio::time::Instant;

use crate::engine::Game;
use crate::engine::position::GameEnd;
use crate::lichess::types::{Color, Expiration, GameState, GameStatus};
use crate::lichess::{Clock, GameId, Perf, Speed, TimeControl};

/// A side as the sandbox knows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Seat {
    pub id: String,
    pub name: String,
    pub title: Option<String>,
    pub rating: i32,
    pub provisional: bool,
}

/// Why a game action was refused (the 400 body's `error` text).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ActionError {
    #[error("Not your turn, or game already over")]
    NotYourTurn,
    #[error("This game is already over")]
    GameOver,
    #[error("Illegal move {0}")]
    IllegalMove(String),
    #[error("This game can no longer be aborted")]
    CannotAbort,
    #[error("There is nothing to take back")]
    NoTakeback,
}

/// The offers a side makes and the other answers yes or no.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offer {
    Draw,
    Takeback,
}

/// A game being played (or finished) in the sandbox.
#[derive(Clone, Debug)]
pub struct SandboxGame {
    pub id: GameId,
    pub white: Seat,
    pub black: Seat,
    pub variant: String,
    pub rated: bool,
    pub speed: Speed,
    pub perf: Perf,
    /// As challenged: a real-time clock, days per move, or neither.
    pub time_control: TimeControl,
    pub initial_fen: String,
    pub created_at_ms: i64,
    pub last_move_at_ms: i64,
    pub board: Game,
    pub moves: Vec<String>,
    /// Clocks as of `turn_started` (ms).
    wtime: u64,
    btime: u64,
    /// When the side to move started thinking.
    turn_started: Instant,
    /// How long a side may take over its first move before the game is aborted (`noStart`).
    no_start: Duration,
    pub status: GameStatus,
    pub winner: Option<Color>,
    pub draw_offer: Option<Color>,
    pub takeback_offer: Option<Color>,
}

/// Games without a clock report this time, as Lichess does (`Int.MaxValue`).
const NO_CLOCK_MS: u64 = i32::MAX as u64;

#[allow(clippy::too_many_arguments)]
impl SandboxGame {
    pub fn new(
        id: GameId,
        white: Seat,
        black: Seat,
        variant: String,
        rated: bool,
        time_control: TimeControl,
        initial_fen: Option<String>,
        no_start: Duration,
        now: Instant,
        now_ms: i64,
    ) -> Result<SandboxGame, String> {
        let chess960 = variant == "chess960";
        let board = Game::new(initial_fen.as_deref(), chess960).map_err(|e| e.to_string())?;
        let initial_fen = match initial_fen {
            Some(fen) if !fen.trim().is_empty() && fen.trim() != "startpos" => fen,
            _ => "startpos".to_string(),
        };
        let clock = time_control.real_time();
        let speed = Speed::of(clock);
        let perf = Perf::of_game(&variant, speed);
        let initial = clock.map_or(NO_CLOCK_MS, |c| c.initial_ms);
        Ok(SandboxGame {
            id,
            white,
            black,
            variant,
            rated,
            speed,
            perf,
            time_control,
            initial_fen,
            created_at_ms: now_ms,
            last_move_at_ms: now_ms,
            board,
            moves: Vec::new(),
            wtime: initial,
            btime: initial,
            turn_started: now,
            no_start,
            status: GameStatus::Started,
            winner: None,
            draw_offer: None,
            takeback_offer: None,
        })
    }

    pub fn seat(&self, color: Color) -> &Seat {
        match color {
            Color::White => &self.white,
            Color::Black => &self.black,
        }
    }

    /// The color of a player id, if they play here.
    pub fn color_of(&self, id: &str) -> Option<Color> {
        if self.white.id == id {
            Some(Color::White)
        } else if self.black.id == id {
            Some(Color::Black)
        } else {
            None
        }
    }

    pub fn turn(&self) -> Color {
        self.board.turn().into()
    }

    pub fn is_over(&self) -> bool {
        !self.status.is_ongoing()
    }

    /// The real-time clock (`None` for correspondence/unlimited).
    pub fn clock(&self) -> Option<Clock> {
        self.time_control.real_time()
    }

    /// Clocks run once both sides have made a move, as on Lichess; before that the
    /// `noStart` timer applies.
    fn clock_running(&self) -> bool {
        self.clock().is_some() && self.moves.len() >= 2
    }

    fn stored(&self, color: Color) -> u64 {
        match color {
            Color::White => self.wtime,
            Color::Black => self.btime,
        }
    }

    fn set_stored(&mut self, color: Color, ms: u64) {
        match color {
            Color::White => self.wtime = ms,
            Color::Black => self.btime = ms,
        }
    }

    /// A side's remaining time at `now` (the side to move's clock runs).
    pub fn remaining(&self, color: Color, now: Instant) -> u64 {
        let stored = self.stored(color);
        if self.is_over() || !self.clock_running() || color != self.turn() {
            return stored;
        }
        let spent = now.saturating_duration_since(self.turn_started).as_millis() as u64;
        stored.saturating_sub(spent)
    }

    /// Sets `color`'s remaining time to `ms` as of `now`: a test's way of letting clock time
    /// pass (a long think, the daemon being down) without waiting for it. The ticker flags the
    /// side to move once its time is gone, as for any other flag.
    pub fn set_remaining(&mut self, color: Color, ms: u64, now: Instant) {
        if self.is_over() {
            return;
        }
        if self.clock_running() && color == self.turn() {
            self.turn_started = now;
        }
        self.set_stored(color, ms);
    }

    /// The wire `gameState` at `now`.
    pub fn state(&self, now: Instant) -> GameState {
        let increment = self.clock().map_or(0, |c| c.increment_ms);
        let expiration = (!self.is_over() && self.moves.len() < 2).then(|| Expiration {
            idle_millis: now.saturating_duration_since(self.turn_started).as_millis() as u64,
            millis_to_move: self.no_start.as_millis() as u64,
        });
        GameState {
            moves: self.moves.join(" "),
            wtime: self.remaining(Color::White, now),
            btime: self.remaining(Color::Black, now),
            winc: increment,
            binc: increment,
            status: self.status,
            winner: self.winner,
            wdraw: self.draw_offer == Some(Color::White),
            bdraw: self.draw_offer == Some(Color::Black),
            wtakeback: self.takeback_offer == Some(Color::White),
            btakeback: self.takeback_offer == Some(Color::Black),
            expiration,
            rematch: None,
        }
    }

    /// When the game would end by itself (a flag or `noStart`), if nothing happens first.
    pub fn deadline(&self) -> Option<Instant> {
        if self.is_over() {
            return None;
        }
        if self.moves.len() < 2 {
            return Some(self.turn_started + self.no_start);
        }
        self.clock_running()
            .then(|| self.turn_started + Duration::from_millis(self.stored(self.turn())))
    }

    /// Ends the game if the side to move flagged or never made its first move. Returns
    /// whether the game ended now.
    pub fn tick(&mut self, now: Instant, now_ms: i64) -> bool {
        match self.deadline() {
            Some(deadline) if now >= deadline => {}
            _ => return false,
        }
        let loser = self.turn();
        if self.moves.len() < 2 {
            // Lichess aborts a game whose first moves never come; the status is `noStart`
            // and the side that did not move is the loser of record (the game is unrated).
            self.finish(GameStatus::NoStart, Some(loser.other()), now, now_ms);
            return true;
        }
        let winner_can_mate = !self
            .board
            .position()
            .has_insufficient_material(loser.other().into());
        let winner = winner_can_mate.then_some(loser.other());
        self.finish(GameStatus::Outoftime, winner, now, now_ms);
        true
    }

    /// Plays a UCI move for `color`. `offering_draw` leaves a draw offer standing.
    pub fn play(
        &mut self,
        color: Color,
        uci: &str,
        offering_draw: bool,
        now: Instant,
        now_ms: i64,
    ) -> Result<(), ActionError> {
        self.still_running(now, now_ms)?;
        if color != self.turn() {
            return Err(ActionError::NotYourTurn);
        }
        // Read the mover's clock before the move flips the side to move.
        let left = self.remaining(color, now);
        let running = self.clock_running();
        let m = self
            .board
            .play_uci(uci)
            .map_err(|_| ActionError::IllegalMove(uci.to_string()))?;
        let canonical = self.board.to_uci(m);
        if running {
            let increment = self.clock().map_or(0, |c| c.increment_ms);
            self.set_stored(color, left + increment);
        }
        self.moves.push(canonical);
        self.turn_started = now;
        self.last_move_at_ms = now_ms;
        // Moving declines whatever the opponent offered.
        self.takeback_offer = None;
        self.draw_offer = offering_draw.then_some(color);
        if let Some(end) = self.board.outcome() {
            let (status, winner) = match end {
                GameEnd::Checkmate { winner } => (GameStatus::Mate, Some(winner.into())),
                GameEnd::Stalemate => (GameStatus::Stalemate, None),
                GameEnd::InsufficientMaterial | GameEnd::Repetition | GameEnd::FiftyMoves => {
                    (GameStatus::Draw, None)
                }
            };
            self.finish(status, winner, now, now_ms);
        }
        Ok(())
    }

    /// Runs the clock to `now`; an action on a game that is over (or just lost on time) is
    /// refused.
    fn still_running(&mut self, now: Instant, now_ms: i64) -> Result<(), ActionError> {
        if self.tick(now, now_ms) || self.is_over() {
            return Err(ActionError::GameOver);
        }
        Ok(())
    }

    pub fn resign(&mut self, color: Color, now: Instant, now_ms: i64) -> Result<(), ActionError> {
        self.still_running(now, now_ms)?;
        self.finish(GameStatus::Resign, Some(color.other()), now, now_ms);
        Ok(())
    }

    /// Aborting is allowed until both sides have moved.
    pub fn abort(&mut self, now: Instant, now_ms: i64) -> Result<(), ActionError> {
        self.still_running(now, now_ms)?;
        if self.moves.len() >= 2 {
            return Err(ActionError::CannotAbort);
        }
        self.finish(GameStatus::Aborted, None, now, now_ms);
        Ok(())
    }

    /// Whether a claim after the opponent left can end the game at all (lila's
    /// `forceResignable` and `drawable`): it has a clock and is past the plies it could still
    /// be aborted in.
    pub fn claimable(&self) -> bool {
        self.clock_running() && !self.is_over()
    }

    /// `claim-victory` after the opponent left: the claimer wins by `timeout`, or draws where
    /// the claimer has no mating material (lila's `rageQuit` with no winner).
    pub fn claim_victory(
        &mut self,
        color: Color,
        now: Instant,
        now_ms: i64,
    ) -> Result<(), ActionError> {
        self.still_running(now, now_ms)?;
        let can_mate = !self
            .board
            .position()
            .has_insufficient_material(color.into());
        self.finish(GameStatus::Timeout, can_mate.then_some(color), now, now_ms);
        Ok(())
    }

    /// `claim-draw` after the opponent left.
    pub fn claim_draw(&mut self, now: Instant, now_ms: i64) -> Result<(), ActionError> {
        self.still_running(now, now_ms)?;
        self.finish(GameStatus::Timeout, None, now, now_ms);
        Ok(())
    }

    /// `draw/yes` and `takeback/yes` offer (or accept the opponent's offer); `draw/no` and
    /// `takeback/no` decline it. An accepted draw ends the game; an accepted takeback gives
    /// the proposer the move again.
    pub fn offer(
        &mut self,
        offer: Offer,
        color: Color,
        yes: bool,
        now: Instant,
        now_ms: i64,
    ) -> Result<(), ActionError> {
        self.still_running(now, now_ms)?;
        let standing = match offer {
            Offer::Draw => &mut self.draw_offer,
            Offer::Takeback => &mut self.takeback_offer,
        };
        let theirs = *standing == Some(color.other());
        if !yes {
            if theirs {
                *standing = None;
            }
            return Ok(());
        }
        match (offer, theirs) {
            (Offer::Draw, true) => self.finish(GameStatus::Draw, None, now, now_ms),
            (Offer::Takeback, true) => return self.take_back(color.other(), now),
            (Offer::Takeback, false) if self.moves.is_empty() => {
                return Err(ActionError::NoTakeback);
            }
            (_, false) => *standing = Some(color),
        }
        Ok(())
    }

    /// The takeback `proposer` asked for, accepted.
    fn take_back(&mut self, proposer: Color, now: Instant) -> Result<(), ActionError> {
        // Undo until it is the proposer's turn, having undone at least one of their moves.
        let undo = if self.turn() == proposer { 2 } else { 1 };
        if self.moves.len() < undo {
            self.takeback_offer = None;
            return Err(ActionError::NoTakeback);
        }
        let keep = self.moves.len() - undo;
        self.moves.truncate(keep);
        let chess960 = self.variant == "chess960";
        self.board = Game::from_uci_moves(Some(&self.initial_fen), &self.moves, chess960)
            .expect("replaying moves already played");
        self.takeback_offer = None;
        self.draw_offer = None;
        self.turn_started = now;
        Ok(())
    }

    fn finish(&mut self, status: GameStatus, winner: Option<Color>, now: Instant, now_ms: i64) {
        if self.clock_running() {
            let mover = self.turn();
            let left = self.remaining(mover, now);
            self.set_stored(mover, left);
        }
        self.status = status;
        self.winner = winner;
        self.draw_offer = None;
        self.takeback_offer = None;
        self.last_move_at_ms = now_ms;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seat(id: &str) -> Seat {
        Seat {
            id: id.to_string(),
            name: id.to_string(),
            title: None,
            rating: 1500,
            provisional: false,
        }
    }

    /// A game with a clock of (initial, increment) seconds, or unlimited.
    fn game(clock: Option<(u32, u32)>, now: Instant) -> SandboxGame {
        SandboxGame::new(
            GameId::new("g"),
            seat("w"),
            seat("b"),
            "standard".into(),
            false,
            clock.map_or(TimeControl::Unlimited, |(limit, increment)| {
                TimeControl::clock(limit, increment)
            }),
            None,
            Duration::from_secs(30),
            now,
            0,
        )
        .unwrap()
    }

    #[test]
    fn fools_mate_ends_by_mate() {
        let t = Instant::now();
        let mut g = game(Some((60, 0)), t);
        for (i, m) in ["f2f3", "e7e5", "g2g4", "d8h4"].iter().enumerate() {
            let color = if i % 2 == 0 {
                Color::White
            } else {
                Color::Black
            };
            g.play(color, m, false, t, 0).unwrap();
        }
        assert_eq!(g.status, GameStatus::Mate);
        assert_eq!(g.winner, Some(Color::Black));
        assert_eq!(
            g.play(Color::White, "a2a3", false, t, 0),
            Err(ActionError::GameOver)
        );
    }

    #[test]
    fn clock_runs_after_two_moves_adds_increment_and_flags() {
        let t = Instant::now();
        let mut g = game(Some((2, 1)), t);
        g.play(Color::White, "e2e4", false, t + Duration::from_secs(5), 0)
            .unwrap();
        g.play(Color::Black, "e7e5", false, t + Duration::from_secs(6), 0)
            .unwrap();
        // The first moves did not cost clock time.
        assert_eq!(g.remaining(Color::White, t + Duration::from_secs(6)), 2_000);
        let t2 = t + Duration::from_secs(6);
        g.play(
            Color::White,
            "g1f3",
            false,
            t2 + Duration::from_millis(600),
            0,
        )
        .unwrap();
        // White's clock stands at 2.4 s (2 − 0.6 + 1) while Black, to move, runs out at 2.6 s.
        flags_between(
            &mut g,
            (Color::White, 2_400),
            t2 + Duration::from_millis(2400),
            t2 + Duration::from_millis(2800),
        );
    }

    /// The side to move still has time at `alive` and has lost on time by `flagged`, while the
    /// clock of the side waiting (`waiting.0`) stands at `waiting.1` ms; the waiting side wins.
    fn flags_between(g: &mut SandboxGame, waiting: (Color, u64), alive: Instant, flagged: Instant) {
        let (side, ms) = waiting;
        assert_eq!(g.remaining(side, flagged + Duration::from_secs(8)), ms);
        assert!(!g.tick(alive, 0));
        assert!(g.tick(flagged, 0));
        assert_eq!(g.status, GameStatus::Outoftime);
        assert_eq!(g.winner, Some(side));
    }

    #[test]
    fn set_remaining_lets_time_pass_for_the_side_to_move() {
        let t = Instant::now();
        let mut g = game(Some((60, 0)), t);
        g.play(Color::White, "e2e4", false, t, 0).unwrap();
        g.play(Color::Black, "e7e5", false, t, 0).unwrap();
        let t2 = t + Duration::from_secs(2);
        g.set_remaining(Color::White, 300, t2);
        g.set_remaining(Color::Black, 5_000, t2);
        assert_eq!(
            g.remaining(Color::White, t2 + Duration::from_millis(100)),
            200
        );
        flags_between(
            &mut g,
            (Color::Black, 5_000),
            t2 + Duration::from_millis(299),
            t2 + Duration::from_millis(300),
        );
    }

    #[test]
    fn no_first_move_is_no_start_and_abort_only_early() {
        let t = Instant::now();
        let mut g = game(Some((60, 0)), t);
        assert!(g.tick(t + Duration::from_secs(31), 0));
        assert_eq!(g.status, GameStatus::NoStart);
        let mut g = game(Some((60, 0)), t);
        g.play(Color::White, "e2e4", false, t, 0).unwrap();
        g.abort(t, 0).unwrap();
        assert_eq!(g.status, GameStatus::Aborted);
        let mut g = game(Some((60, 0)), t);
        g.play(Color::White, "e2e4", false, t, 0).unwrap();
        g.play(Color::Black, "e7e5", false, t, 0).unwrap();
        assert_eq!(g.abort(t, 0), Err(ActionError::CannotAbort));
    }

    #[test]
    fn draw_offer_accepted_and_takeback_undoes() {
        let t = Instant::now();
        let mut g = game(None, t);
        g.play(Color::White, "e2e4", true, t, 0).unwrap();
        assert!(g.state(t).wdraw);
        g.play(Color::Black, "e7e5", false, t, 0).unwrap();
        assert!(!g.state(t).wdraw, "moving declines the offer");
        g.offer(Offer::Takeback, Color::Black, true, t, 0).unwrap();
        g.offer(Offer::Takeback, Color::White, true, t, 0).unwrap();
        assert_eq!(g.moves, vec!["e2e4"]);
        assert_eq!(g.turn(), Color::Black);
        g.offer(Offer::Draw, Color::Black, true, t, 0).unwrap();
        g.offer(Offer::Draw, Color::White, true, t, 0).unwrap();
        assert_eq!(g.status, GameStatus::Draw);
        assert_eq!(g.winner, None);
    }
}
