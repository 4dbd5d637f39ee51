//! Human think time: how long a person of the level's rating would take over a move, given the
//! clock and a few facts about the position, and therefore how long the bot waits after its
//! search before it moves. A pure model (no I/O, no clock of its own): the game actor sleeps
//! for [`wait_after_search`] outside the search pool, so waiting costs no CPU.
//!
//! What the model follows (published facts about human move times):
//! - Move times are long-tailed, with distinct shapes at different stages of the game and
//!   strongly correlated with the clock: Sigman, Etchemendy, Slezak & Cecchi, "Response time
//!   distributions in rapid chess: a large-scale decision making experiment", Frontiers in
//!   Neuroscience 4:60 (2010). We draw each move's time from a log-normal (the usual fit of a
//!   long-tailed, strictly positive response time) around a per-move budget.
//! - The opening is played fast (known moves), most of the clock goes into the middlegame,
//!   and play speeds up as the clock runs down (same paper: response times rise after the
//!   opening and fall under time pressure). Here: a phase factor by move number, and a budget
//!   that is the remaining time spread over the moves still to come plus most of the
//!   increment — less time left, faster moves.
//! - A game is planned around 40 moves: Lichess classifies a clock by its estimated duration
//!   `initial + 40 × increment` (lichess.org/faq#time-controls); so a 3+2 player has about
//!   (180 + 40·2) / 40 = 6.5 s per move on average if the clock is used up.
//! - Recaptures and forced replies (one legal move, or a check with few answers) are made at
//!   once by people of every strength; Lichess's 2025 local bots likewise model think time
//!   from its game database by initial clock and rating and always recapture at once.
//! - Weaker players are less consistent: the spread (log-normal sigma) grows as the level
//!   falls.
//!
//! Not modelled: how sharp the position is (the gap between the best and the second-best
//! move) — our search does not compute a second-best score, and computing one would change the
//! search; the number of legal moves stands in for complexity.
//!
//! Safety (never the cause of a loss on time): a wait is at most an eighth of what is left
//! above a reserve ([`reserve_ms`]: a tenth of the initial clock within 5–20 s, more in very
//! short games), plus half the
//! increment, and nothing at all once the clock is under the reserve; the first moves (before
//! the clock runs, but under Lichess's abort timer) wait at most [`FIRST_MOVES_CAP`]. The same
//! seed gives the same waits.

use std::time::Duration;

use shakmaty::{Move, Position, Role, Square};

use crate::engine::Game;
use crate::seed::splitmix64;

/// How an account paces its moves (`think_time` in accounts.toml).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ThinkMode {
    /// Move as soon as the search is done.
    #[default]
    Fast,
    /// Take about as long as a person of the level's rating.
    Human,
}

impl ThinkMode {
    pub fn parse(text: &str) -> Option<ThinkMode> {
        match text {
            "fast" => Some(ThinkMode::Fast),
            "human" => Some(ThinkMode::Human),
            _ => None,
        }
    }
}

/// An account's think-time settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThinkSettings {
    pub mode: ThinkMode,
    /// No move takes longer than this (search included).
    pub max_think: Duration,
}

/// Default ceiling of one move's think time.
pub const DEFAULT_MAX_THINK: Duration = Duration::from_secs(30);
/// The first two plies wait at most this (Lichess aborts a game whose first move is late).
pub const FIRST_MOVES_CAP: Duration = Duration::from_millis(1500);
/// Nobody moves faster than this (seeing the move, moving the mouse).
const HAND_MS: f64 = 350.0;

impl Default for ThinkSettings {
    fn default() -> Self {
        ThinkSettings {
            // The ladder's levels exist to be played by people.
            mode: ThinkMode::Human,
            max_think: DEFAULT_MAX_THINK,
        }
    }
}

/// Our clock as the think-time model needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThinkClock {
    /// Our remaining time in ms when the opponent's move arrived, `None` without a clock.
    pub remaining_ms: Option<u64>,
    pub increment_ms: u64,
    /// The game's initial clock in ms, `None` without a clock.
    pub initial_ms: Option<u64>,
    /// Kept off the clock for network latency.
    pub overhead_ms: u64,
}

/// What the model knows about the position and the chosen move (all cheap to get).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MoveFacts {
    /// Plies played before this move.
    pub ply: usize,
    pub legal_moves: usize,
    pub in_check: bool,
    /// The move takes back on the square where the opponent just captured.
    pub recapture: bool,
}

/// The facts of the position, before the search (the move is not known yet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PositionFacts {
    pub ply: usize,
    pub legal_moves: usize,
    pub in_check: bool,
    /// The square of the opponent's last move, if it captured.
    pub captured_on: Option<Square>,
}

impl PositionFacts {
    pub fn of(game: &Game) -> PositionFacts {
        let position = game.position();
        let captured_on = game.moves().last().and_then(|m| {
            // A capture, or a promotion onto an occupied square: what matters is that
            // material just came off at that square.
            (m.is_capture() && m.role() != Role::King).then(|| m.to())
        });
        PositionFacts {
            ply: game.moves().len(),
            legal_moves: game.legal_moves().len(),
            in_check: position.is_check(),
            captured_on,
        }
    }

    /// The facts once the search chose `best`.
    pub fn with_move(self, best: Option<&Move>) -> MoveFacts {
        MoveFacts {
            ply: self.ply,
            legal_moves: self.legal_moves,
            in_check: self.in_check,
            recapture: best.is_some_and(|m| m.is_capture() && Some(m.to()) == self.captured_on),
        }
    }
}

/// The level's model: who is thinking.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Thinker {
    pub level: f64,
    /// The game's seed (the waits derive from it).
    pub seed: u64,
    pub max_think: Duration,
}

/// Log-normal sigma of a level: the spread of its move times. Level 1 ≈ 0.95, level 10 ≈ 0.5.
pub fn spread(level: f64) -> f64 {
    let l = if level.is_finite() {
        level.clamp(1.0, 10.0)
    } else {
        5.0
    };
    0.95 - 0.05 * (l - 1.0)
}

/// Share of the per-move budget by game phase (move number): quick known moves in the opening,
/// the most thought in the middlegame.
fn phase_factor(ply: usize) -> f64 {
    let fullmove = (ply / 2 + 1) as f64;
    if fullmove <= 6.0 {
        0.3
    } else if fullmove <= 20.0 {
        0.3 + (fullmove - 6.0) / 14.0 * 1.0
    } else if fullmove <= 35.0 {
        1.3 - (fullmove - 20.0) / 15.0 * 0.3
    } else {
        1.0
    }
}

/// Moves a player still plans for at this ply (a 40-move game, never fewer than 20 to go).
fn moves_to_go(ply: usize) -> f64 {
    let fullmove = (ply / 2 + 1) as f64;
    (45.0 - fullmove).max(20.0)
}

/// Moves still to come that the reserve keeps time for (a sudden-death game of up to this
/// many more moves never loses on time by waiting).
pub const PLAN_MOVES: u64 = 80;
/// The worst a search (queue included) is assumed to take when planning the reserve: the
/// levels' node budgets search in tens of milliseconds.
pub const WORST_SEARCH_MS: u64 = 250;

/// The reserve under which the bot never waits: a tenth of the initial clock (5–20 s), at
/// least 10 s or half the initial clock, whichever is less, and at least what
/// [`PLAN_MOVES`] more moves cost (worst-case search and network overhead, less the
/// increment) — so in sudden death short games hardly wait.
pub fn reserve_ms(clock: &ThinkClock) -> u64 {
    let base = clock.initial_ms.map_or(10_000, |initial| {
        (initial / 10)
            .clamp(5_000, 20_000)
            .max((initial / 2).min(10_000))
    });
    let per_move = (WORST_SEARCH_MS + clock.overhead_ms).saturating_sub(clock.increment_ms);
    base.max(PLAN_MOVES * per_move)
}

/// The most a wait may last with this clock (see the module comment).
pub fn safe_cap(clock: &ThinkClock, ply: usize) -> Duration {
    let Some(remaining) = clock.remaining_ms else {
        return Duration::MAX;
    };
    let usable = remaining.saturating_sub(clock.overhead_ms);
    let reserve = reserve_ms(clock);
    let cap = if usable <= reserve {
        0
    } else {
        (usable - reserve) / 8 + clock.increment_ms / 2
    };
    let cap = Duration::from_millis(cap);
    if ply < 2 {
        cap.min(FIRST_MOVES_CAP)
    } else {
        cap
    }
}

/// A standard normal draw from (seed, ply) (Box–Muller).
fn normal(seed: u64, ply: usize) -> f64 {
    let a =
        splitmix64(seed ^ 0x7468_696E_6B00_0000 ^ (ply as u64).wrapping_mul(0xA24B_AED4_963E_E407));
    let b = splitmix64(a);
    let u1 = ((a >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
    let u2 = (b >> 11) as f64 / (1u64 << 53) as f64;
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// How long a person of the level would take over this move (search included), before the
/// safety cap; at most `max_think`.
pub fn human_think(thinker: &Thinker, clock: &ThinkClock, facts: &MoveFacts) -> Duration {
    // Without a clock (correspondence, unlimited): the pace of a 5+0 game.
    let remaining = clock.remaining_ms.unwrap_or(300_000) as f64;
    let increment = clock.increment_ms as f64;
    let z = normal(thinker.seed, facts.ply);
    let ms = if facts.legal_moves <= 1 || facts.recapture {
        // Forced or obvious: at once, a little variation.
        HAND_MS + 250.0 * (0.4 * z).exp()
    } else {
        let budget = remaining / moves_to_go(facts.ply) + 0.8 * increment;
        let complexity = (facts.legal_moves as f64 / 30.0).powf(0.4).clamp(0.6, 1.4);
        let check = if facts.in_check { 0.6 } else { 1.0 };
        let mean = budget * phase_factor(facts.ply) * complexity * check;
        let sigma = spread(thinker.level);
        // The median of a log-normal with this mean.
        let median = mean * (-sigma * sigma / 2.0).exp();
        (median * (sigma * z).exp()).max(HAND_MS)
    };
    Duration::from_secs_f64(ms / 1000.0).min(thinker.max_think)
}

/// How long to wait after a search that took `elapsed` (since the opponent's move arrived),
/// never below zero, never above [`safe_cap`]; `Fast` never waits.
pub fn wait_after_search(
    mode: ThinkMode,
    thinker: &Thinker,
    clock: &ThinkClock,
    facts: &MoveFacts,
    elapsed: Duration,
) -> Duration {
    match mode {
        ThinkMode::Fast => Duration::ZERO,
        ThinkMode::Human => {
            let want = human_think(thinker, clock, facts).saturating_sub(elapsed);
            let now = ThinkClock {
                remaining_ms: clock
                    .remaining_ms
                    .map(|r| r.saturating_sub(elapsed.as_millis() as u64)),
                ..*clock
            };
            want.min(safe_cap(&now, facts.ply))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::player::clock::{ClockInput, think_time};

    fn thinker(level: f64, seed: u64) -> Thinker {
        Thinker {
            level,
            seed,
            max_think: DEFAULT_MAX_THINK,
        }
    }

    fn facts(ply: usize, legal_moves: usize) -> MoveFacts {
        MoveFacts {
            ply,
            legal_moves,
            in_check: false,
            recapture: false,
        }
    }

    /// One game's clock for our side with worst-case searches (every search runs to the
    /// time policy's cap) and the given waits; returns the least time left after a move, or
    /// `None` if the clock ran out.
    fn play_out(
        mode: ThinkMode,
        level: f64,
        seed: u64,
        initial_ms: u64,
        increment_ms: u64,
        our_moves: usize,
    ) -> Option<u64> {
        let overhead_ms = 300;
        let mut remaining = initial_ms;
        let mut least = u64::MAX;
        let t = thinker(level, seed);
        for i in 0..our_moves {
            let ply = 2 * i;
            let clock_running = ply >= 2;
            // The worst case: the search runs to the time policy's cap or to the planned
            // worst search time, whichever is less (the levels' node budgets search in tens
            // of milliseconds).
            let search = think_time(ClockInput {
                remaining_ms: Some(remaining),
                increment_ms,
                overhead_ms,
                first_move: !clock_running,
            })
            .min(Duration::from_millis(WORST_SEARCH_MS));
            let clock = ThinkClock {
                remaining_ms: Some(remaining),
                increment_ms,
                initial_ms: Some(initial_ms),
                overhead_ms,
            };
            let legal = 1 + (splitmix64(seed ^ i as u64) % 45) as usize;
            let wait = wait_after_search(mode, &t, &clock, &facts(ply, legal), search);
            if clock_running {
                // The server also charges the network lag, at most the overhead.
                let spent = (search + wait).as_millis() as u64 + overhead_ms;
                remaining = remaining.checked_sub(spent)?;
                least = least.min(remaining);
                remaining += increment_ms;
            } else {
                assert!(wait <= FIRST_MOVES_CAP);
            }
        }
        Some(least)
    }

    /// Over many simulated clocks (initial 15 s – 30 min, increment 0–30 s, five levels, eight
    /// seeds, games of 40–200 moves) with worst-case searches, the waits never make the bot
    /// lose on time where moving at once would not.
    #[test]
    fn waiting_never_loses_on_time_where_moving_at_once_would_not() {
        let mut checked = 0;
        for initial_s in [15u64, 30, 60, 120, 180, 300, 600, 900, 1800] {
            for inc_s in [0u64, 1, 2, 3, 5, 10, 30] {
                for level in [1.0, 3.0, 5.5, 8.0, 10.0] {
                    for seed in 0..8u64 {
                        // Sudden death: games up to the planning horizon; with an
                        // increment, any length.
                        let lengths: &[usize] = if inc_s == 0 {
                            &[40, 80]
                        } else {
                            &[40, 80, 200]
                        };
                        for &moves in lengths {
                            let (i, n) = (initial_s * 1000, inc_s * 1000);
                            let Some(fast) = play_out(ThinkMode::Fast, level, seed, i, n, moves)
                            else {
                                continue; // the time policy alone flags here
                            };
                            let human = play_out(ThinkMode::Human, level, seed, i, n, moves);
                            assert!(
                                human.is_some(),
                                "flagged by waiting: {initial_s}+{inc_s} level {level} seed {seed} {moves} moves ({fast} ms left moving at once)"
                            );
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert!(checked > 4000, "{checked}");
    }

    #[test]
    fn fast_waits_nothing() {
        let clock = ThinkClock {
            remaining_ms: Some(180_000),
            increment_ms: 2_000,
            initial_ms: Some(180_000),
            overhead_ms: 300,
        };
        for ply in 0..120 {
            let w = wait_after_search(
                ThinkMode::Fast,
                &thinker(1.0, ply as u64),
                &clock,
                &facts(ply, 30),
                Duration::ZERO,
            );
            assert_eq!(w, Duration::ZERO);
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_waits_and_another_seed_others() {
        let clock = ThinkClock {
            remaining_ms: Some(150_000),
            increment_ms: 2_000,
            initial_ms: Some(180_000),
            overhead_ms: 300,
        };
        let waits = |seed: u64| -> Vec<Duration> {
            (0..80)
                .map(|ply| {
                    wait_after_search(
                        ThinkMode::Human,
                        &thinker(4.0, seed),
                        &clock,
                        &facts(ply, 25),
                        Duration::from_millis(5),
                    )
                })
                .collect()
        };
        assert_eq!(waits(11), waits(11));
        assert_ne!(waits(11), waits(12));
    }

    /// Standard deviation of ln(think time) over many middlegame moves with one clock.
    fn log_spread(level: f64) -> f64 {
        let clock = ThinkClock {
            remaining_ms: Some(150_000),
            increment_ms: 2_000,
            initial_ms: Some(180_000),
            overhead_ms: 300,
        };
        let logs: Vec<f64> = (0..2000u64)
            .map(|seed| {
                human_think(&thinker(level, seed), &clock, &facts(40, 30))
                    .as_secs_f64()
                    .ln()
            })
            .collect();
        let mean = logs.iter().sum::<f64>() / logs.len() as f64;
        (logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / logs.len() as f64).sqrt()
    }

    #[test]
    fn weaker_levels_vary_more() {
        let spreads: Vec<f64> = [1.0, 4.0, 7.0, 10.0].map(log_spread).to_vec();
        for pair in spreads.windows(2) {
            assert!(pair[0] > pair[1] + 0.05, "{spreads:?}");
        }
    }

    #[test]
    fn recaptures_and_forced_moves_are_quick_and_the_middlegame_slowest() {
        let clock = ThinkClock {
            remaining_ms: Some(170_000),
            increment_ms: 2_000,
            initial_ms: Some(180_000),
            overhead_ms: 300,
        };
        let median = |f: MoveFacts| {
            let mut t: Vec<Duration> = (0..501u64)
                .map(|seed| human_think(&thinker(5.0, seed), &clock, &f))
                .collect();
            t.sort();
            t[250]
        };
        let opening = median(facts(4, 30));
        let middlegame = median(facts(40, 30));
        let mut recapture = facts(40, 30);
        recapture.recapture = true;
        let forced = facts(40, 1);
        assert!(middlegame > opening * 2, "{middlegame:?} {opening:?}");
        assert!(median(recapture) < Duration::from_secs(1));
        assert!(median(forced) < Duration::from_secs(1));
        // Less time left, faster moves.
        let low = ThinkClock {
            remaining_ms: Some(20_000),
            ..clock
        };
        let hurried = human_think(&thinker(5.0, 1), &low, &facts(40, 30));
        assert!(hurried < human_think(&thinker(5.0, 1), &clock, &facts(40, 30)));
    }

    #[test]
    fn the_ceiling_and_the_first_moves_are_respected() {
        let clock = ThinkClock {
            remaining_ms: Some(3_600_000),
            increment_ms: 30_000,
            initial_ms: Some(3_600_000),
            overhead_ms: 300,
        };
        let t = Thinker {
            max_think: Duration::from_secs(4),
            ..thinker(1.0, 3)
        };
        for ply in 0..100 {
            let w = wait_after_search(
                ThinkMode::Human,
                &t,
                &clock,
                &facts(ply, 35),
                Duration::ZERO,
            );
            assert!(w <= Duration::from_secs(4));
            if ply < 2 {
                assert!(w <= FIRST_MOVES_CAP);
            }
        }
        // Nothing once the clock is under the reserve.
        let low = ThinkClock {
            remaining_ms: Some(15_000),
            increment_ms: 0,
            initial_ms: Some(180_000),
            overhead_ms: 300,
        };
        assert_eq!(safe_cap(&low, 40), Duration::ZERO);
    }

    /// Benchmark: the think-time distribution per level at 3+2, over self-play games of each
    /// level (real positions, so recaptures, checks and forced moves come as they do), with
    /// the clock run down by the waits. `cargo test --lib -- --ignored --nocapture
    /// think_time_distribution`.
    #[test]
    #[ignore]
    fn think_time_distribution_at_3_plus_2() {
        use crate::engine::{Game, NoStop};
        use crate::levels::{Coefficients, LevelParams};
        use crate::player::LevelPlayer;
        println!("level  moves  median_s  p90_s  mean_s  game_s(one side)");
        for level in 1..=10 {
            let mut times: Vec<f64> = Vec::new();
            let mut game_totals = Vec::new();
            for seed in 0..8u64 {
                let params = LevelParams::new(&Coefficients::builtin(), f64::from(level));
                let mut players = [
                    LevelPlayer::new(params.clone(), seed * 2 + 1),
                    LevelPlayer::new(params, seed * 2 + 2),
                ];
                let mut clocks = [180_000u64; 2];
                let mut spent = [0u64; 2];
                let mut game = Game::startpos();
                for ply in 0..160 {
                    if game.outcome().is_some() {
                        break;
                    }
                    let side = ply % 2;
                    let facts = PositionFacts::of(&game);
                    let Some(best) = players[side].choose(&game, &mut NoStop).best_move else {
                        break;
                    };
                    let clock = ThinkClock {
                        remaining_ms: Some(clocks[side]),
                        increment_ms: 2_000,
                        initial_ms: Some(180_000),
                        overhead_ms: 300,
                    };
                    let t = Thinker {
                        level: f64::from(level),
                        seed: seed * 2 + 1 + side as u64,
                        max_think: DEFAULT_MAX_THINK,
                    };
                    let wait = wait_after_search(
                        ThinkMode::Human,
                        &t,
                        &clock,
                        &facts.with_move(Some(&best)),
                        Duration::ZERO,
                    );
                    let ms = wait.as_millis() as u64;
                    if ply >= 2 {
                        clocks[side] = clocks[side].saturating_sub(ms) + 2_000;
                        spent[side] += ms;
                    }
                    times.push(wait.as_secs_f64());
                    game.play(best);
                }
                game_totals.extend(spent.map(|s| s as f64 / 1000.0));
            }
            times.sort_by(f64::total_cmp);
            let q = |f: f64| times[((times.len() - 1) as f64 * f) as usize];
            let mean = times.iter().sum::<f64>() / times.len() as f64;
            let game_mean = game_totals.iter().sum::<f64>() / game_totals.len() as f64;
            println!(
                "{level:>5} {:>6} {:>9.2} {:>6.2} {:>7.2} {:>8.0}",
                times.len(),
                q(0.5),
                q(0.9),
                mean,
                game_mean
            );
        }
    }
}
