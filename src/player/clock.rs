//! Time management: how long one search may run, given our clock.
//!
//! The level's node budget decides how strong a move is; time only caps it so that a level
//! never loses on time while its budget would allow it. Every search gets at least
//! [`MIN_THINK`] (a reconnect must never hand the engine a 0 ms budget: depth 1 always
//! completes anyway), the first move gets a small fixed budget because Lichess aborts a game
//! whose first move is late, and games without a clock get a fixed cap.

use std::time::Duration;

/// The least a search is ever given.
pub const MIN_THINK: Duration = Duration::from_millis(20);
/// Budget of our first move (the clock is not running yet, but Lichess aborts a late start).
pub const FIRST_MOVE: Duration = Duration::from_millis(1000);
/// Cap per move in games without a clock (correspondence, unlimited) and in slow games.
pub const MAX_THINK: Duration = Duration::from_secs(10);
/// Moves we plan the remaining clock over.
const MOVES_TO_GO: u64 = 40;
/// Never spend more than this fraction of what is left on one move.
const MAX_FRACTION: u64 = 5;

/// What time management needs to know about our side's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockInput {
    /// Our remaining time in ms now (already reduced by the time since the server reported
    /// it, when our clock was running), or `None` for games without a clock.
    pub remaining_ms: Option<u64>,
    pub increment_ms: u64,
    /// Kept off the clock for network and server latency.
    pub overhead_ms: u64,
    /// Whether we already made a move in this game.
    pub first_move: bool,
}

/// The wall-clock cap of one search.
pub fn think_time(clock: ClockInput) -> Duration {
    let limit = match clock.remaining_ms {
        None => MAX_THINK,
        Some(_) if clock.first_move => FIRST_MOVE,
        Some(remaining) => {
            let usable = remaining.saturating_sub(clock.overhead_ms);
            // Plan over the moves to go, spend most of the increment, but never more than a
            // fifth of what is left: a long think with a short clock is how bots flag.
            let planned =
                (usable / MOVES_TO_GO).saturating_add(clock.increment_ms.saturating_mul(3) / 4);
            Duration::from_millis(planned.min(usable / MAX_FRACTION))
        }
    };
    limit.clamp(MIN_THINK, MAX_THINK.max(MIN_THINK))
}

/// Urgency of a search for the pool's priority queue: less remaining time runs first.
pub fn urgency_ms(clock: ClockInput) -> u64 {
    match clock.remaining_ms {
        None => u64::MAX,
        // A first move has no running clock but a short abort timer: treat it as urgent.
        Some(_) if clock.first_move => FIRST_MOVE.as_millis() as u64,
        Some(remaining) => remaining,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock(remaining_ms: Option<u64>, increment_ms: u64, first_move: bool) -> ClockInput {
        ClockInput {
            remaining_ms,
            increment_ms,
            overhead_ms: 300,
            first_move,
        }
    }

    #[test]
    fn never_zero_even_with_no_time_left() {
        for remaining in [0, 1, 299, 300, 301] {
            assert_eq!(think_time(clock(Some(remaining), 0, false)), MIN_THINK);
        }
    }

    #[test]
    fn first_move_is_small_and_fixed() {
        assert_eq!(think_time(clock(Some(600_000), 5_000, true)), FIRST_MOVE);
        assert_eq!(urgency_ms(clock(Some(600_000), 0, true)), 1000);
    }

    #[test]
    fn never_spends_more_than_a_fifth_of_the_usable_clock() {
        for remaining in [500u64, 2_000, 10_000, 60_000, 180_000] {
            for inc in [0u64, 1_000, 2_000, 30_000] {
                let t = think_time(clock(Some(remaining), inc, false)).as_millis() as u64;
                let usable = remaining.saturating_sub(300);
                assert!(t <= (usable / 5).max(20), "{remaining} {inc} -> {t}");
            }
        }
        // 3+2 blitz at the start: 180 s / 40 + 1.5 s.
        assert_eq!(
            think_time(clock(Some(180_000), 2_000, false)),
            Duration::from_millis(5_992)
        );
    }

    #[test]
    fn games_without_clock_are_capped() {
        assert_eq!(think_time(clock(None, 0, false)), MAX_THINK);
        assert_eq!(urgency_ms(clock(None, 0, false)), u64::MAX);
    }
}
