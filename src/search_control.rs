//! Observers that stop a search by wall-clock time or by a stop flag (the engine itself reads
//! no clock), and optionally hear about every completed iteration.
//!
//! Used by `ladder uci` (`go movetime`, `stop`), the daemon (a time cap per move) and the arena.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::engine::{SearchInfo, SearchObserver};

/// A per-iteration progress callback.
pub type IterationCallback<'a> = Box<dyn FnMut(&SearchInfo) + Send + 'a>;

/// Stops a search at a deadline or when a shared flag is raised; forwards iteration reports to
/// an optional callback.
#[derive(Default)]
pub struct SearchControl<'a> {
    deadline: Option<Instant>,
    stop: Option<Arc<AtomicBool>>,
    on_iteration: Option<IterationCallback<'a>>,
}

impl<'a> SearchControl<'a> {
    /// Never stops on its own and reports nothing.
    pub fn new() -> SearchControl<'a> {
        SearchControl::default()
    }

    /// Stops the search once `deadline` has passed (checked every 1024 nodes from depth 2 on).
    pub fn with_deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Stops the search once `budget` has elapsed from now.
    pub fn with_time_budget(self, budget: Duration) -> Self {
        self.with_deadline(Instant::now() + budget)
    }

    /// Stops the search once `flag` is set (by another thread: UCI `stop`, shutdown).
    pub fn with_stop_flag(mut self, flag: Arc<AtomicBool>) -> Self {
        self.stop = Some(flag);
        self
    }

    /// Calls `callback` after every completed iteration (and with the final result of a
    /// search cut short).
    pub fn with_callback(mut self, callback: impl FnMut(&SearchInfo) + Send + 'a) -> Self {
        self.on_iteration = Some(Box::new(callback));
        self
    }

    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }
}

impl SearchObserver for SearchControl<'_> {
    fn should_stop(&mut self, _nodes: u64) -> bool {
        self.stop
            .as_ref()
            .is_some_and(|flag| flag.load(Ordering::Relaxed))
            || self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    fn on_iteration(&mut self, info: &SearchInfo) {
        if let Some(callback) = self.on_iteration.as_mut() {
            callback(info);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Engine, Game, Limits, SearchParams};

    #[test]
    fn stop_flag_and_deadline_stop_after_depth_one() {
        let game = Game::startpos();
        let mut engine = Engine::new(1);
        let params = SearchParams::full_strength(Limits::default());
        // A flag raised before the search: depth 1 still completes and a move comes back.
        let flag = Arc::new(AtomicBool::new(true));
        let mut depths = Vec::new();
        let mut control = SearchControl::new()
            .with_stop_flag(flag)
            .with_callback(|info: &SearchInfo| depths.push(info.depth));
        let result = engine.search(&game, &params, &mut control);
        drop(control);
        assert!(result.best_move.is_some());
        assert_eq!(result.depth, 1);
        assert_eq!(depths.first(), Some(&1));
        // A deadline in the past behaves the same.
        let mut control = SearchControl::new().with_deadline(Instant::now());
        let result = engine.search(&game, &params, &mut control);
        assert_eq!(result.depth, 1);
        assert!(result.best_move.is_some());
    }

    #[test]
    fn unset_flag_lets_the_depth_limit_decide() {
        let mut engine = Engine::new(1);
        let params = SearchParams::full_strength(Limits::depth(4));
        let mut control = SearchControl::new().with_stop_flag(Arc::new(AtomicBool::new(false)));
        let result = engine.search(&Game::startpos(), &params, &mut control);
        assert_eq!(result.depth, 4);
    }
}
