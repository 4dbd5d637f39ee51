//! The search pool's observer: stops a search at its move's wall-clock deadline or when the
//! game actor cancels it (the engine itself reads no clock). The UCI front end and the arena
//! have their own.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::engine::SearchObserver;

/// Stops a search at a deadline or when a shared flag is raised.
#[derive(Default)]
pub struct SearchControl {
    deadline: Option<Instant>,
    stop: Option<Arc<AtomicBool>>,
}

impl SearchControl {
    /// Never stops on its own.
    pub fn new() -> SearchControl {
        SearchControl::default()
    }

    /// Stops the search once `deadline` has passed (checked every 1024 nodes from depth 2 on).
    pub fn with_deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Stops the search once `flag` is set (by another thread: the game ended, shutdown).
    pub fn with_stop_flag(mut self, flag: Arc<AtomicBool>) -> Self {
        self.stop = Some(flag);
        self
    }
}

impl SearchObserver for SearchControl {
    fn should_stop(&mut self, _nodes: u64) -> bool {
        self.stop
            .as_ref()
            .is_some_and(|flag| flag.load(Ordering::Relaxed))
            || self.deadline.is_some_and(|d| Instant::now() >= d)
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
        let mut control = SearchControl::new().with_stop_flag(flag);
        let result = engine.search(&game, &params, &mut control);
        assert!(result.best_move.is_some());
        assert_eq!(result.depth, 1);
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
