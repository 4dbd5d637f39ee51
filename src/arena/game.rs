//! One arena game: seat both players, play from the opening under a clock or fixed per-move
//! limits, and end it by the rules of chess only (mate, stalemate, repetition, 50 moves,
//! insufficient material), by the clock, or by a player's malfunction (crash, hang, illegal
//! move), which loses that game for the broken side.

use std::time::Instant;

use crate::unix_time::unix_ms;

use shakmaty::{ByColor, Color, Position};

use super::roster::Roster;
use super::schedule::{ScheduledGame, derive};
use crate::engine::Game;
use crate::engine::humane::ClockLeft;
use crate::engine::position::GameEnd;
use crate::lichess::Clock;
use crate::player::seat::{Clocks, Fault, Seat};

/// How a game ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Termination {
    Rules(GameEnd),
    /// `loser` ran out of time; a draw when the other side cannot mate.
    Time {
        loser: Color,
    },
    /// `side` malfunctioned and loses.
    Fault {
        side: Color,
        fault: Fault,
    },
}

impl Termination {
    /// The Lichess status name, or the arena's own for malfunctions.
    pub fn status(&self) -> &'static str {
        match self {
            Termination::Rules(GameEnd::Checkmate { .. }) => "mate",
            Termination::Rules(GameEnd::Stalemate) => "stalemate",
            Termination::Rules(_) => "draw",
            Termination::Time { .. } => "outoftime",
            Termination::Fault {
                fault: Fault::Crash(_),
                ..
            } => "crash",
            Termination::Fault {
                fault: Fault::Illegal(_),
                ..
            } => "illegalmove",
            Termination::Fault {
                fault: Fault::Hang(_),
                ..
            } => "hang",
        }
    }

    /// A sentence for logs and the PGN.
    pub fn describe(&self) -> String {
        let side = |c: Color| if c.is_white() { "White" } else { "Black" };
        match self {
            Termination::Rules(GameEnd::Checkmate { winner }) => {
                format!("{} mates", side(*winner))
            }
            Termination::Rules(GameEnd::Stalemate) => "stalemate".to_string(),
            Termination::Rules(GameEnd::InsufficientMaterial) => {
                "insufficient material".to_string()
            }
            Termination::Rules(GameEnd::Repetition) => "threefold repetition".to_string(),
            Termination::Rules(GameEnd::FiftyMoves) => "fifty-move rule".to_string(),
            Termination::Time { loser } => format!("{} ran out of time", side(*loser)),
            Termination::Fault { side: s, fault } => format!("{} {fault}", side(*s)),
        }
    }
}

/// A finished game.
#[derive(Clone, Debug)]
pub struct PlayedGame {
    pub scheduled: ScheduledGame,
    /// From the opening's initial position: the opening moves, then the players' moves.
    pub game: Game,
    pub opening_plies: usize,
    /// The mover's clock before each of the players' moves (from `opening_plies` on), with the
    /// game's initial time; empty without a clock.
    pub clocks: Vec<ClockLeft>,
    /// The mover's clock after each of the players' moves, increment added (Lichess's
    /// `[%clk]`); empty without a clock.
    pub clocks_after_ms: Vec<u64>,
    /// `None`: a draw.
    pub winner: Option<Color>,
    pub termination: Termination,
    /// Each side's own seed (the level's noise seed when it is a level).
    pub seeds: ByColor<u64>,
    pub started_at_ms: i64,
    pub finished_at_ms: i64,
}

impl PlayedGame {
    /// White's score: 1, ½ or 0.
    pub fn white_score(&self) -> f64 {
        match self.winner {
            Some(Color::White) => 1.0,
            Some(Color::Black) => 0.0,
            None => 0.5,
        }
    }

    /// The PGN result string.
    pub fn result_str(&self) -> &'static str {
        match self.winner {
            Some(Color::White) => "1-0",
            Some(Color::Black) => "0-1",
            None => "1/2-1/2",
        }
    }
}

/// Plays `scheduled` from `opening` (a game already at the players' first move).
pub async fn play(
    roster: &Roster,
    scheduled: ScheduledGame,
    opening: Game,
    tc: Option<Clock>,
) -> PlayedGame {
    let seeds = ByColor {
        white: derive(scheduled.seed, 1),
        black: derive(scheduled.seed, 2),
    };
    let started_at_ms = unix_ms();
    let opening_plies = opening.moves().len();
    let mut game = opening;
    let mut clocks = Vec::new();
    let mut clocks_after_ms = Vec::new();
    let (termination, seats) = match seat_both(roster, scheduled, seeds).await {
        Ok(mut seats) => (
            play_moves(&mut game, &mut seats, tc, &mut clocks, &mut clocks_after_ms).await,
            Some(seats),
        ),
        Err(termination) => (termination, None),
    };
    if let Some([white, black]) = seats {
        roster.release(scheduled.white, white);
        roster.release(scheduled.black, black);
    }
    let winner = match &termination {
        Termination::Rules(end) => end.winner(),
        Termination::Time { loser } => {
            // Lichess: the flag loses unless the other side has no way to mate.
            (!game.position().has_insufficient_material(!*loser)).then_some(!*loser)
        }
        Termination::Fault { side, .. } => Some(!*side),
    };
    PlayedGame {
        scheduled,
        game,
        opening_plies,
        clocks,
        clocks_after_ms,
        winner,
        termination,
        seeds,
        started_at_ms,
        finished_at_ms: unix_ms(),
    }
}

async fn seat_both(
    roster: &Roster,
    scheduled: ScheduledGame,
    seeds: ByColor<u64>,
) -> Result<[Seat; 2], Termination> {
    let white = roster
        .seat(scheduled.white, seeds.white)
        .await
        .map_err(|fault| Termination::Fault {
            side: Color::White,
            fault,
        })?;
    match roster.seat(scheduled.black, seeds.black).await {
        Ok(black) => Ok([white, black]),
        Err(fault) => {
            roster.release(scheduled.white, white);
            Err(Termination::Fault {
                side: Color::Black,
                fault,
            })
        }
    }
}

/// Plays the game out; with a clock, `clock_log` gets the mover's clock before each move and
/// `after_log` after it.
async fn play_moves(
    game: &mut Game,
    seats: &mut [Seat; 2],
    tc: Option<Clock>,
    clock_log: &mut Vec<ClockLeft>,
    after_log: &mut Vec<u64>,
) -> Termination {
    let mut clocks = tc.map(|tc| Clocks {
        white_ms: tc.initial_ms,
        black_ms: tc.initial_ms,
        increment_ms: tc.increment_ms,
        initial_ms: tc.initial_ms,
    });
    loop {
        if let Some(end) = game.outcome() {
            return Termination::Rules(end);
        }
        let side = game.turn();
        let seat = &mut seats[if side.is_white() { 0 } else { 1 }];
        if let Some(c) = &clocks {
            clock_log.push(c.left_for(game));
        }
        let started = Instant::now();
        let answer = seat.choose(game, clocks).await;
        let choice = match answer {
            Ok(choice) => choice,
            Err(fault) => return Termination::Fault { side, fault },
        };
        // A human-paced level pays its wait on the clock without the match waiting for it.
        let elapsed_ms = (started.elapsed() + choice.pace).as_millis() as u64;
        let uci = choice.uci;
        if let Some(c) = clocks.as_mut() {
            let own = if side.is_white() {
                &mut c.white_ms
            } else {
                &mut c.black_ms
            };
            if elapsed_ms > *own {
                return Termination::Time { loser: side };
            }
            *own = *own - elapsed_ms + c.increment_ms;
            after_log.push(*own);
        }
        if let Err(e) = game.play_uci(&uci) {
            seat.discard();
            return Termination::Fault {
                side,
                fault: Fault::Illegal(e.to_string()),
            };
        }
    }
}
