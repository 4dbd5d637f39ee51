//! Search limits given as data, and the observer through which the caller stops a search and
//! hears of its progress.

use shakmaty::Move;

use super::score::Score;

/// Limits the search checks itself. Time is not here: the caller's [`SearchObserver`] owns the
/// clock, so the engine never reads one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Exact node limit: the search stops when it has visited this many nodes (but never before
    /// depth 1 is complete).
    pub nodes: Option<u64>,
    /// Maximum iterative-deepening depth.
    pub depth: Option<u32>,
}

impl Limits {
    pub fn nodes(n: u64) -> Self {
        Limits {
            nodes: Some(n),
            depth: None,
        }
    }
    pub fn depth(d: u32) -> Self {
        Limits {
            nodes: None,
            depth: Some(d),
        }
    }
}

/// The caller's side of a search.
pub trait SearchObserver {
    /// Polled every 1024 nodes and before every iteration once depth 1 is complete; `true`
    /// stops the search now.
    fn should_stop(&mut self, _nodes: u64) -> bool {
        false
    }
    /// Called after every completed iteration (and when the search ends early with a result).
    fn on_iteration(&mut self, _info: &SearchInfo) {}
}

/// An observer that never stops a search and ignores progress.
pub struct NoStop;
impl SearchObserver for NoStop {}

/// Another observer's stop, without its progress: a search run on the side of a move (a
/// humane check of it) stops when the move's search must, and reports to nobody.
pub struct StopOnly<'a>(pub &'a mut dyn SearchObserver);
impl SearchObserver for StopOnly<'_> {
    fn should_stop(&mut self, nodes: u64) -> bool {
        self.0.should_stop(nodes)
    }
}

/// Progress after one completed iteration.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchInfo {
    pub depth: u32,
    pub seldepth: u32,
    pub score: Score,
    pub nodes: u64,
    pub pv: Vec<Move>,
    /// Nodes spent under the best root move in the iteration's last pass over the root, and
    /// in that whole pass: their ratio says how clearly the search prefers its move (time
    /// management spends less on a move that took almost all the effort).
    pub best_move_nodes: u64,
    pub pass_nodes: u64,
}

impl SearchInfo {
    /// The share of the last root pass spent on the best move (1 when nothing was counted).
    pub fn best_move_share(&self) -> f64 {
        if self.pass_nodes == 0 {
            1.0
        } else {
            (self.best_move_nodes as f64 / self.pass_nodes as f64).min(1.0)
        }
    }
}
