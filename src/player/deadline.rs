//! The one observer that stops a search on time or on request (the engine itself reads no
//! clock): the daemon's search pool, the arena's and the sandbox's level seats and `ladder uci`
//! all stop their searches through a [`Deadline`] over a [`TimeBudget`].

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::engine::{SearchInfo, SearchObserver};

/// When a search stops, counted from its start: after `soft` no new iteration begins, at
/// `hard` the search stops mid-iteration (depth 1 always completes). `None`: no such limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeBudget {
    pub soft: Option<Duration>,
    pub hard: Option<Duration>,
}

impl TimeBudget {
    /// Only a hard limit: the daemon's and the arena's wall-clock cap of one move.
    pub fn hard(limit: Duration) -> TimeBudget {
        TimeBudget {
            soft: None,
            hard: Some(limit),
        }
    }
}

/// Stops a search once its [`TimeBudget`] is used, or once a shared flag is raised (by another
/// thread: the game ended, shutdown, UCI `stop`).
pub struct Deadline {
    started: Instant,
    budget: TimeBudget,
    stop: Option<Arc<AtomicBool>>,
    /// Set once the soft time is used: the next poll ends the search.
    stop_at_next_poll: bool,
}

impl Deadline {
    /// A search that started at `started` and may take `budget`.
    pub fn new(started: Instant, budget: TimeBudget) -> Deadline {
        Deadline {
            started,
            budget,
            stop: None,
            stop_at_next_poll: false,
        }
    }

    /// Also stops the search once `flag` is set.
    pub fn with_stop_flag(mut self, flag: Arc<AtomicBool>) -> Deadline {
        self.stop = Some(flag);
        self
    }

    /// When the search started.
    pub fn started(&self) -> Instant {
        self.started
    }
}

impl SearchObserver for Deadline {
    fn should_stop(&mut self, _nodes: u64) -> bool {
        self.stop_at_next_poll
            || self
                .stop
                .as_ref()
                .is_some_and(|flag| flag.load(Ordering::Relaxed))
            || self
                .budget
                .hard
                .is_some_and(|hard| self.started.elapsed() >= hard)
    }

    fn on_iteration(&mut self, _info: &SearchInfo) {
        if self
            .budget
            .soft
            .is_some_and(|soft| self.started.elapsed() >= soft)
        {
            self.stop_at_next_poll = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Engine, Game, Limits, SearchParams};

    fn search(deadline: &mut Deadline, depth: u32) -> u32 {
        let mut engine = Engine::new(1);
        let params = SearchParams::full_strength(Limits::depth(depth));
        let result = engine.search(&Game::startpos(), &params, deadline);
        assert!(result.best_move.is_some(), "depth 1 always completes");
        result.depth
    }

    #[test]
    fn a_raised_flag_or_a_passed_hard_limit_stop_after_depth_one() {
        let raised = Arc::new(AtomicBool::new(true));
        let mut flagged =
            Deadline::new(Instant::now(), TimeBudget::default()).with_stop_flag(raised);
        assert_eq!(search(&mut flagged, 6), 1);
        let mut late = Deadline::new(Instant::now(), TimeBudget::hard(Duration::ZERO));
        assert_eq!(search(&mut late, 6), 1);
    }

    #[test]
    fn a_used_soft_limit_lets_the_iteration_end_and_starts_no_other() {
        let budget = TimeBudget {
            soft: Some(Duration::ZERO),
            hard: None,
        };
        let mut soft = Deadline::new(Instant::now(), budget);
        assert_eq!(search(&mut soft, 6), 1);
    }

    #[test]
    fn without_limits_or_a_raised_flag_the_depth_limit_decides() {
        let lowered = Arc::new(AtomicBool::new(false));
        let mut none = Deadline::new(Instant::now(), TimeBudget::default()).with_stop_flag(lowered);
        assert_eq!(search(&mut none, 4), 4);
    }
}
