//! The one observer that stops a search on time or on request (the engine itself reads no
//! clock): the daemon's search pool, the arena's and the sandbox's level seats and `ladder uci`
//! all stop their searches through a [`Deadline`] over a [`TimeBudget`].
//!
//! A soft limit (only `ladder uci` at a clock sets one) is scaled after every iteration by
//! how settled the search is, the way strong engines manage time: a best move that has held
//! for many iterations, that took almost all of the last pass's nodes, and whose score holds,
//! ends the search early; a move that just changed, a close choice or a falling score earns
//! more time. The hard limit is never moved.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::engine::{Score, SearchInfo, SearchObserver};

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

/// The first depth whose iteration scales the soft limit: shallower iterations say little
/// about the move and take no time.
const SCALE_FROM_DEPTH: u32 = 5;
/// Scores beyond this are clipped before a drop is measured (mates, decided games).
const SCORE_CLIP_CP: i32 = 1000;

/// How much of the soft limit a search at this state may use (1 = the limit as given).
///
/// - `stable`: completed iterations in a row that kept the best move (0 = it just changed):
///   1.3 down to 0.7 after ten.
/// - `best_share`: the share of the last root pass spent under the best move: a clear choice
///   (0.9) gets 0.6, a close one (0.4) 1.6.
/// - `score_drop_cp`: how far the score fell since the previous iteration (a rise counts as
///   none): up to 1.5 for a drop of a pawn or more.
pub fn soft_scale(stable: u32, best_share: f64, score_drop_cp: i32) -> f64 {
    let stability = 1.3 - 0.06 * f64::from(stable.min(10));
    let effort = (0.4 + 2.0 * (1.0 - best_share.clamp(0.0, 1.0))).clamp(0.5, 1.8);
    let falling = 1.0 + 0.5 * (f64::from(score_drop_cp.clamp(0, 100)) / 100.0);
    stability * effort * falling
}

/// What the soft limit's scaling remembers between iterations.
#[derive(Default)]
struct Settling {
    best: Option<shakmaty::Move>,
    stable: u32,
    score_cp: Option<i32>,
}

/// Stops a search once its [`TimeBudget`] is used, or once a shared flag is raised (by another
/// thread: the game ended, shutdown, UCI `stop`).
pub struct Deadline {
    started: Instant,
    budget: TimeBudget,
    stop: Option<Arc<AtomicBool>>,
    /// Set once the soft time is used: the next poll ends the search.
    stop_at_next_poll: bool,
    settling: Settling,
}

impl Deadline {
    /// A search that started at `started` and may take `budget`.
    pub fn new(started: Instant, budget: TimeBudget) -> Deadline {
        Deadline {
            started,
            budget,
            stop: None,
            stop_at_next_poll: false,
            settling: Settling::default(),
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

    /// Takes in a completed iteration; the soft limit's scale from now on.
    fn settle(&mut self, info: &SearchInfo) -> f64 {
        let s = &mut self.settling;
        let best = info.pv.first().cloned();
        s.stable = if best.is_some() && best == s.best {
            s.stable + 1
        } else {
            0
        };
        s.best = best;
        let cp = match info.score {
            Score::Cp(cp) => cp.clamp(-SCORE_CLIP_CP, SCORE_CLIP_CP),
            Score::Mate(n) if n > 0 => SCORE_CLIP_CP,
            Score::Mate(_) => -SCORE_CLIP_CP,
        };
        let drop = s.score_cp.map_or(0, |before| before - cp);
        s.score_cp = Some(cp);
        if info.depth < SCALE_FROM_DEPTH {
            return 1.0;
        }
        soft_scale(s.stable, info.best_move_share(), drop)
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

    fn on_iteration(&mut self, info: &SearchInfo) {
        let Some(soft) = self.budget.soft else {
            return;
        };
        let scale = self.settle(info);
        if self.started.elapsed().as_secs_f64() >= soft.as_secs_f64() * scale {
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
    fn a_settled_search_gets_less_of_the_soft_limit_than_an_unsettled_one() {
        let settled = soft_scale(10, 0.95, 0);
        let unsettled = soft_scale(0, 0.35, 80);
        assert!(settled < 0.5, "{settled}");
        assert!(unsettled > 2.0, "{unsettled}");
        // Each reason alone moves the scale the right way.
        assert!(soft_scale(6, 0.7, 0) < soft_scale(1, 0.7, 0));
        assert!(soft_scale(3, 0.9, 0) < soft_scale(3, 0.5, 0));
        assert!(soft_scale(3, 0.7, 60) > soft_scale(3, 0.7, 0));
        // A rising score is not a reason for more time, nor a drop beyond a pawn for more
        // than a pawn's worth.
        assert_eq!(soft_scale(3, 0.7, -300), soft_scale(3, 0.7, 0));
        assert_eq!(soft_scale(3, 0.7, 900), soft_scale(3, 0.7, 100));
    }

    fn iteration(depth: u32, best: &str, cp: i32, share_percent: u64) -> SearchInfo {
        let m = Game::startpos().play_uci(best).unwrap();
        SearchInfo {
            depth,
            seldepth: depth,
            score: crate::engine::Score::Cp(cp),
            nodes: 1000 * u64::from(depth),
            pv: vec![m],
            best_move_nodes: share_percent,
            pass_nodes: 100,
        }
    }

    #[test]
    fn the_scale_follows_the_best_moves_stability_and_ignores_shallow_iterations() {
        let mut d = Deadline::new(Instant::now(), TimeBudget::default());
        // Shallow iterations keep the limit as given, whatever they say.
        for depth in 1..SCALE_FROM_DEPTH {
            assert_eq!(d.settle(&iteration(depth, "e2e4", 30, 10)), 1.0);
        }
        let mut scales = Vec::new();
        for depth in SCALE_FROM_DEPTH..SCALE_FROM_DEPTH + 6 {
            scales.push(d.settle(&iteration(depth, "e2e4", 30, 80)));
        }
        assert!(scales.windows(2).all(|w| w[1] < w[0]), "{scales:?}");
        // The best move changes and the score falls: more time than ever before.
        let changed = d.settle(&iteration(11, "d2d4", -40, 50));
        assert!(changed > scales[0] && changed > 1.0, "{changed} {scales:?}");
    }

    #[test]
    fn without_limits_or_a_raised_flag_the_depth_limit_decides() {
        let lowered = Arc::new(AtomicBool::new(false));
        let mut none = Deadline::new(Instant::now(), TimeBudget::default()).with_stop_flag(lowered);
        assert_eq!(search(&mut none, 4), 4);
    }
}
