//! Who sits at the board in one game, whatever plays it: one of our levels (the daemon's own
//! [`LevelPlayer`], lent to a blocking thread by [`choose_blocking`] for each search), an
//! external UCI engine ([`super::uci_engine`]) from a command line, options and optional per-move
//! limits (Stockfish `UCI_Elo`, the Lichess AI levels on Fairy-Stockfish), or a built-in mover
//! for the bottom of the rating scale (a random mover and a capture-greedy mover, seeded by the
//! game so a game replays exactly).
//!
//! [`PlayerKind`] is the one description of such a player: the arena's match players, the
//! anchors of the rating scale (never a level) and the sandbox's simulated challengers all hold
//! it, so each plays the same moves wherever it sits. [`Seating::seat`] turns a kind into a
//! [`Seat`] for one game. An external engine that crashes, hangs or plays an illegal move is a
//! [`Fault`] of its player; its process is dropped (killed on drop) and never reused.
//!
//! A level can be paced as the daemon paces it live ([`Seating::think`]): its clock is then
//! charged, beyond the search, the wait a person of its rating would take
//! ([`super::think::wait_after_search`]), without waiting, so an offline match shows how the
//! levels play in time trouble at no cost in wall time.

use std::time::{Duration, Instant};

use shakmaty::fen::Fen;
use shakmaty::{Chess, EnPassantMode, Move, Position, Role};

use super::clock::{ClockInput, think_time};
use super::deadline::TimeBudget;
use super::think::{PositionFacts, ThinkClock, ThinkMode, Thinker, wait_after_search};
use super::uci_engine::{EngineCommand, UciEngine, UciError};
use super::{LevelPlayer, choose_blocking};
use crate::engine::Game;
use crate::engine::humane::ClockLeft;
use crate::levels::{Coefficients, LevelParams};
use crate::seed::SplitMix;

/// Who plays: what a seat is made from.
#[derive(Clone, Debug, PartialEq)]
pub enum PlayerKind {
    /// One of our levels (may be fractional).
    Level(f64),
    /// An external UCI engine with its own per-move limits (empty: the seating's).
    Uci {
        command: EngineCommand,
        limits: MoveLimits,
    },
    /// A built-in mover that needs no engine (the bottom of the anchor scale).
    Mover(MoverStyle),
}

/// Per-move limits for an external engine (a preset's own, or the match's `--nodes` etc.).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MoveLimits {
    pub nodes: Option<u64>,
    pub depth: Option<u32>,
    pub movetime_ms: Option<u64>,
}

impl MoveLimits {
    pub fn is_empty(&self) -> bool {
        self.nodes.is_none() && self.depth.is_none() && self.movetime_ms.is_none()
    }

    /// These limits, or `fallback` when there are none.
    pub fn or(self, fallback: MoveLimits) -> MoveLimits {
        if self.is_empty() { fallback } else { self }
    }

    fn go_args(&self) -> String {
        let mut out = String::new();
        if let Some(n) = self.nodes {
            out.push_str(&format!(" nodes {n}"));
        }
        if let Some(d) = self.depth {
            out.push_str(&format!(" depth {d}"));
        }
        if let Some(ms) = self.movetime_ms {
            out.push_str(&format!(" movetime {ms}"));
        }
        out
    }
}

/// The built-in movers: rules-only players weaker than any engine setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MoverStyle {
    /// A uniformly random legal move.
    Random,
    /// Mates in one when it can, else takes the most valuable piece it can capture (the
    /// cheapest capturer first), else a random move: a beginner who knows the rules and grabs
    /// material, with no idea of defence.
    Greedy,
}

impl MoverStyle {
    /// The name used in anchors files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            MoverStyle::Random => "random",
            MoverStyle::Greedy => "greedy",
        }
    }

    /// The move this mover plays in `position`, drawing from `rng`; `None` without legal moves.
    pub fn choose(self, position: &Chess, rng: &mut SplitMix) -> Option<Move> {
        let moves = position.legal_moves();
        if moves.is_empty() {
            return None;
        }
        let candidates: Vec<&Move> = match self {
            MoverStyle::Random => moves.iter().collect(),
            MoverStyle::Greedy => {
                let mates: Vec<&Move> = moves
                    .iter()
                    .filter(|m| {
                        let mut after = position.clone();
                        after.play_unchecked(**m);
                        after.is_checkmate()
                    })
                    .collect();
                if !mates.is_empty() {
                    mates
                } else {
                    // Victim value first, then the cheapest attacker (MVV-LVA).
                    let key = |m: &Move| {
                        m.capture().map(|victim| {
                            (
                                piece_value(victim),
                                std::cmp::Reverse(piece_value(m.role())),
                            )
                        })
                    };
                    match moves.iter().filter_map(key).max() {
                        Some(best) => moves.iter().filter(|m| key(m) == Some(best)).collect(),
                        None => moves.iter().collect(),
                    }
                }
            }
        };
        let pick = (rng.next_u64() % candidates.len() as u64) as usize;
        Some(*candidates[pick])
    }
}

fn piece_value(role: Role) -> u32 {
    match role {
        Role::Pawn => 1,
        Role::Knight | Role::Bishop => 3,
        Role::Rook => 5,
        Role::Queen => 9,
        Role::King => 100,
    }
}

/// Why a player lost a game by malfunction rather than by chess.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Could not start, exited, or broke the pipe.
    Crash(String),
    /// Answered with a move that is not legal (or not a move).
    Illegal(String),
    /// Did not answer in time (beyond its clock plus the margin, or the move timeout).
    Hang(String),
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::Crash(m) => write!(f, "crashed: {m}"),
            Fault::Illegal(m) => write!(f, "illegal move: {m}"),
            Fault::Hang(m) => write!(f, "hung: {m}"),
        }
    }
}

fn fault_of(error: UciError) -> Fault {
    match error {
        UciError::Timeout { .. } => Fault::Hang(error.to_string()),
        _ => Fault::Crash(error.to_string()),
    }
}

/// The clocks when a game is played with a time control.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clocks {
    pub white_ms: u64,
    pub black_ms: u64,
    pub increment_ms: u64,
    /// The game's initial time (where Lichess's low-time alarm sounds depends on it).
    pub initial_ms: u64,
}

impl Clocks {
    /// The clock of the side to move in `game`, for the humane error model.
    pub fn left_for(&self, game: &Game) -> ClockLeft {
        ClockLeft {
            remaining_ms: if game.turn().is_white() {
                self.white_ms
            } else {
                self.black_ms
            },
            initial_ms: self.initial_ms,
        }
    }
}

/// How long the arena waits for engines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// Start-up handshake and `isready` before a game.
    pub startup: Duration,
    /// A move without a clock or movetime (nodes or depth limits).
    pub move_timeout: Duration,
    /// Grace beyond the clock or movetime before an engine counts as hung.
    pub margin: Duration,
}

/// How players are seated: the coefficients our levels play with, the per-move limits of an
/// external engine without its own, and how long to wait for one.
#[derive(Clone, Debug)]
pub struct Seating {
    pub coefficients: Coefficients,
    /// Per-move limits for an external engine without its own (the arena's `--nodes` etc.).
    pub fixed: MoveLimits,
    pub timeouts: Timeouts,
    /// How our levels pace their moves on a clock: `Fast` as the search ends; `Human` also
    /// charges each move the wait the daemon would take live (`think_time = "human"`, its
    /// default `max_think`), without waiting.
    pub think: ThinkMode,
}

impl Seating {
    /// Seats `kind` for a game whose own seed (this side's) is `seed`: a fresh level player, a
    /// mover drawing from the seed, or an external engine (`idle`, a process of the same player
    /// kept from an earlier game, or a newly started one) told that a new game starts. A
    /// process that fails to start or to get ready is a fault of that player for this game.
    pub async fn seat(
        &self,
        kind: &PlayerKind,
        seed: u64,
        idle: Option<UciEngine>,
    ) -> Result<Seat, Fault> {
        match kind {
            PlayerKind::Level(level) => Ok(Seat::Level {
                player: Some(Box::new(LevelPlayer::new(
                    LevelParams::new(&self.coefficients, *level),
                    seed,
                ))),
                think: self.think,
            }),
            PlayerKind::Uci { command, limits } => {
                let mut engine = match idle {
                    Some(engine) => Box::new(engine),
                    None => Box::new(
                        UciEngine::start(command, self.timeouts.startup)
                            .await
                            .map_err(fault_of)?,
                    ),
                };
                engine
                    .new_game(self.timeouts.startup)
                    .await
                    .map_err(fault_of)?;
                Ok(Seat::Uci {
                    engine: Some(engine),
                    limits: limits.or(self.fixed),
                    timeouts: self.timeouts,
                })
            }
            PlayerKind::Mover(style) => Ok(Seat::Mover {
                style: *style,
                rng: SplitMix::new(seed),
            }),
        }
    }
}

/// One player's seat in one game.
pub enum Seat {
    Level {
        /// The level player the daemon would use; `None` only while a search runs on the
        /// blocking pool.
        player: Option<Box<LevelPlayer>>,
        think: ThinkMode,
    },
    Uci {
        /// `None` after a fault: the process was dropped (killed).
        engine: Option<Box<UciEngine>>,
        limits: MoveLimits,
        timeouts: Timeouts,
    },
    Mover {
        style: MoverStyle,
        /// The generator's state, starting at this side's seed.
        rng: SplitMix,
    },
}

/// A player's move and what its clock pays beyond the time it took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    /// UCI notation, not yet checked for legality.
    pub uci: String,
    /// A human-paced level's wait after its search (charged to its clock, never waited);
    /// zero for every other player.
    pub pace: Duration,
}

impl Choice {
    fn at_once(uci: String) -> Choice {
        Choice {
            uci,
            pace: Duration::ZERO,
        }
    }
}

impl Seat {
    /// The move this player chooses, and its pace.
    pub async fn choose(&mut self, game: &Game, clocks: Option<Clocks>) -> Result<Choice, Fault> {
        match self {
            Seat::Level { player, think } => {
                let mut taken = player
                    .take()
                    .expect("the player is back after every search");
                taken.set_clock(clocks.map(|c| c.left_for(game)));
                let budget = TimeBudget {
                    soft: None,
                    hard: clocks.map(|c| level_time_budget(c, game)),
                };
                let started = Instant::now();
                let (returned, result) = choose_blocking(taken, game.clone(), budget)
                    .await
                    .map_err(|e| Fault::Crash(format!("our search panicked: {e}")))?;
                let best = result
                    .best_move
                    .ok_or_else(|| Fault::Illegal("our search returned no move".to_string()))?;
                let pace = match clocks {
                    Some(clocks) => human_pace(*think, &returned, game, &best, clocks, started),
                    None => Duration::ZERO,
                };
                *player = Some(returned);
                Ok(Choice {
                    uci: game.to_uci(best),
                    pace,
                })
            }
            Seat::Mover { style, rng } => style
                .choose(game.position(), rng)
                .map(|m| Choice::at_once(game.to_uci(m)))
                .ok_or_else(|| Fault::Illegal("no legal move to play".to_string())),
            Seat::Uci {
                engine: slot,
                limits,
                timeouts,
                ..
            } => {
                let engine = slot
                    .as_mut()
                    .ok_or_else(|| Fault::Crash("the engine is gone".to_string()))?;
                let (go, wait) = go_command(*limits, clocks, *timeouts, game.turn());
                let answer = engine
                    .analyse(&position_command(game), &go, wait)
                    .await
                    .map(|analysis| Choice::at_once(analysis.best));
                match answer {
                    Ok(uci) => Ok(uci),
                    Err(e) => {
                        // Killed on drop; the pool starts a fresh process next game.
                        *slot = None;
                        Err(fault_of(e))
                    }
                }
            }
        }
    }

    /// The external engine's process after the game, unless a fault dropped it: the same
    /// player's next game may reuse it.
    pub fn into_engine(self) -> Option<UciEngine> {
        match self {
            Seat::Uci {
                engine: Some(engine),
                ..
            } => Some(*engine),
            _ => None,
        }
    }

    /// Drops a misbehaving external process so it is not reused.
    pub fn discard(&mut self) {
        if let Seat::Uci { engine, .. } = self {
            *engine = None;
        }
    }
}

/// The wait a level paced by `think` would take live after choosing `best` in `game` with
/// `clocks`, its search having started at `started` (the daemon's own model and safety cap:
/// the wait never flags the player).
fn human_pace(
    think: ThinkMode,
    player: &LevelPlayer,
    game: &Game,
    best: &Move,
    clocks: Clocks,
    started: Instant,
) -> Duration {
    let left = clocks.left_for(game);
    let thinker = Thinker {
        level: player.params().level,
        seed: player.seed(),
        max_think: super::think::DEFAULT_MAX_THINK,
    };
    let clock = ThinkClock {
        remaining_ms: Some(left.remaining_ms),
        increment_ms: clocks.increment_ms,
        initial_ms: Some(left.initial_ms),
        overhead_ms: 0,
    };
    let facts = PositionFacts::of(game).with_move(Some(best));
    wait_after_search(think, &thinker, &clock, &facts, started.elapsed())
}

/// `go` for an external engine and how long to wait for its answer.
fn go_command(
    limits: MoveLimits,
    clocks: Option<Clocks>,
    timeouts: Timeouts,
    turn: shakmaty::Color,
) -> (String, Duration) {
    match clocks {
        Some(c) => {
            let own = if turn.is_white() {
                c.white_ms
            } else {
                c.black_ms
            };
            let go = format!(
                "go wtime {} btime {} winc {} binc {}{}",
                c.white_ms,
                c.black_ms,
                c.increment_ms,
                c.increment_ms,
                limits.go_args()
            );
            (go, Duration::from_millis(own) + timeouts.margin)
        }
        None => {
            let wait = match limits.movetime_ms {
                Some(ms) => Duration::from_millis(ms) + timeouts.margin,
                None => timeouts.move_timeout,
            };
            (format!("go{}", limits.go_args()), wait)
        }
    }
}

/// `position startpos moves ...` or `position fen ... moves ...`.
pub fn position_command(game: &Game) -> String {
    let mut out = if *game.initial_position() == Chess::default() {
        "position startpos".to_string()
    } else {
        format!(
            "position fen {}",
            Fen::from_position(game.initial_position(), EnPassantMode::Legal)
        )
    };
    if !game.moves().is_empty() {
        out.push_str(" moves");
        for m in game.moves() {
            out.push(' ');
            out.push_str(&game.to_uci(*m));
        }
    }
    out
}

/// Wall time a level may spend on this move with a clock: the daemon's own time policy
/// ([`crate::player::clock`]), with no network overhead. The node budget is the real limit;
/// this only stops a level from losing on time.
fn level_time_budget(clocks: Clocks, game: &Game) -> Duration {
    think_time(ClockInput {
        remaining_ms: Some(clocks.left_for(game).remaining_ms),
        increment_ms: clocks.increment_ms,
        overhead_ms: 0,
        // The arena's clock runs from the first move: no abort timer to beat.
        first_move: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn movers_are_reproducible_and_greedy_grabs_and_mates() {
        let start = Chess::default();
        let play = |style: MoverStyle, seed: u64| {
            let mut rng = SplitMix::new(seed);
            let mut position = start.clone();
            let mut moves = Vec::new();
            for _ in 0..20 {
                let Some(m) = style.choose(&position, &mut rng) else {
                    break;
                };
                moves.push(m.to_string());
                position.play_unchecked(m);
            }
            moves
        };
        assert_eq!(play(MoverStyle::Random, 7), play(MoverStyle::Random, 7));
        assert_ne!(play(MoverStyle::Random, 7), play(MoverStyle::Random, 8));
        // The queen on d5 hangs to the pawn and the knight: the pawn (cheapest) takes it.
        let game = Game::new(Some("4k3/8/8/3q4/4P3/2N5/8/4K3 w - - 0 1"), false).unwrap();
        for seed in 0..10 {
            let mut rng = SplitMix::new(seed);
            let m = MoverStyle::Greedy
                .choose(game.position(), &mut rng)
                .unwrap();
            assert_eq!(game.to_uci(m), "e4d5");
        }
        // A mate in one beats any capture (Rxd1 wins a knight, Ra8 mates).
        let game = Game::new(Some("6k1/5ppp/8/8/8/8/8/R2n2K1 w - - 0 1"), false).unwrap();
        let mut rng = SplitMix::new(3);
        let m = MoverStyle::Greedy
            .choose(game.position(), &mut rng)
            .unwrap();
        assert_eq!(game.to_uci(m), "a1a8");
        // No legal move, no choice.
        let mated = Game::new(Some("R5k1/5ppp/8/8/8/8/8/6K1 b - - 0 1"), false).unwrap();
        assert!(
            MoverStyle::Random
                .choose(mated.position(), &mut rng)
                .is_none()
        );
    }

    #[test]
    fn go_commands_carry_clock_or_limits() {
        let t = Timeouts {
            startup: Duration::from_secs(1),
            move_timeout: Duration::from_secs(7),
            margin: Duration::from_millis(500),
        };
        let clocks = Clocks {
            white_ms: 1000,
            black_ms: 2000,
            increment_ms: 100,
            initial_ms: 3000,
        };
        let (go, wait) = go_command(
            MoveLimits::default(),
            Some(clocks),
            t,
            shakmaty::Color::Black,
        );
        assert_eq!(go, "go wtime 1000 btime 2000 winc 100 binc 100");
        assert_eq!(wait, Duration::from_millis(2500));
        let nodes = MoveLimits {
            nodes: Some(500),
            ..MoveLimits::default()
        };
        assert_eq!(
            go_command(nodes, None, t, shakmaty::Color::White),
            ("go nodes 500".to_string(), Duration::from_secs(7))
        );
    }

    #[test]
    fn position_command_lists_moves_from_the_initial_position() {
        let game = Game::from_uci_moves(None, &["e2e4", "e7e5"], false).unwrap();
        assert_eq!(position_command(&game), "position startpos moves e2e4 e7e5");
        let fen = "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1";
        let game = Game::new(Some(fen), false).unwrap();
        assert_eq!(position_command(&game), format!("position fen {fen}"));
    }
}
