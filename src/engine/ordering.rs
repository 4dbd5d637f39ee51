//! Move ordering: the hash move, then winning and equal captures by MVV-LVA, queen
//! promotions, the two killer moves of the ply, quiet moves by history, losing captures last.

use shakmaty::{Color, Move, MoveList, Role};

use super::movepack::PackedMove;
use super::score::MAX_PLY;
use super::see::{see_non_negative, see_value};

const HASH_MOVE: i32 = 30_000_000;
const GOOD_CAPTURE: i32 = 20_000_000;
const KILLER: [i32; 2] = [10_000_001, 10_000_000];
const BAD_CAPTURE: i32 = -20_000_000;
const UNDER_PROMOTION: i32 = -30_000_000;
/// History scores stay within ±HISTORY_MAX (gravity formula below).
const HISTORY_MAX: i32 = 16_384;

/// Per-search memory of which quiet moves caused cutoffs.
pub struct Heuristics {
    killers: Vec<[Option<Move>; 2]>,
    /// Indexed by [color][from][to].
    history: Vec<i32>,
}

impl Default for Heuristics {
    fn default() -> Self {
        Heuristics {
            killers: vec![[None; 2]; MAX_PLY + 2],
            history: vec![0; 2 * 64 * 64],
        }
    }
}

fn history_index(color: Color, m: Move) -> usize {
    let from = m.from().map_or(0, |s| s as usize);
    let color = if color == Color::White { 0 } else { 1 };
    (color * 64 + from) * 64 + m.to() as usize
}

impl Heuristics {
    pub fn clear(&mut self) {
        self.killers.fill([None; 2]);
        self.history.fill(0);
    }

    pub fn killers(&self, ply: usize) -> [Option<Move>; 2] {
        self.killers[ply]
    }

    pub fn history(&self, color: Color, m: Move) -> i32 {
        self.history[history_index(color, m)]
    }

    /// A quiet move caused a beta cutoff at `depth`; the quiet moves tried before it did not.
    pub fn reward(&mut self, color: Color, ply: usize, depth: i32, best: Move, tried: &[Move]) {
        let killers = &mut self.killers[ply];
        if killers[0] != Some(best) {
            killers[1] = killers[0];
            killers[0] = Some(best);
        }
        let bonus = (depth * depth).min(400);
        self.bump(color, best, bonus);
        for &m in tried {
            if m != best {
                self.bump(color, m, -bonus);
            }
        }
    }

    fn bump(&mut self, color: Color, m: Move, bonus: i32) {
        let h = &mut self.history[history_index(color, m)];
        // Gravity: the closer to the bound, the smaller the step, so scores never overflow
        // and old information fades.
        *h += 32 * bonus - *h * bonus.abs() / (HISTORY_MAX / 32);
    }
}

/// Is this move quiet for the purposes of killers, history and reductions?
pub fn is_quiet(m: Move) -> bool {
    !m.is_capture() && m.promotion().is_none()
}

/// Scores `moves` for ordering at a node where `color` is to move.
pub fn score_moves(
    moves: &MoveList,
    scores: &mut [i32],
    board: &shakmaty::Board,
    color: Color,
    hash_move: Option<PackedMove>,
    heuristics: &Heuristics,
    ply: usize,
) {
    let killers = heuristics.killers(ply);
    for (i, &m) in moves.iter().enumerate() {
        scores[i] = if hash_move.is_some_and(|h| h.matches(m)) {
            HASH_MOVE
        } else if m.is_capture() || m.promotion() == Some(Role::Queen) {
            let victim = m.capture().map_or(0, see_value);
            let mvv_lva = 16 * victim - see_value(m.role()) / 10;
            if m.promotion().is_some_and(|p| p != Role::Queen) {
                UNDER_PROMOTION + mvv_lva
            } else if see_non_negative(board, color, m) {
                GOOD_CAPTURE + mvv_lva + m.promotion().map_or(0, see_value)
            } else {
                BAD_CAPTURE + mvv_lva
            }
        } else if m.promotion().is_some() {
            UNDER_PROMOTION
        } else if killers[0] == Some(m) {
            KILLER[0]
        } else if killers[1] == Some(m) {
            KILLER[1]
        } else {
            heuristics.history(color, m)
        };
    }
}

/// Captures in quiescence: most valuable victim first, least valuable attacker first.
pub fn score_captures(moves: &MoveList, scores: &mut [i32]) {
    for (i, &m) in moves.iter().enumerate() {
        let victim = m.capture().map_or(0, see_value) + m.promotion().map_or(0, see_value);
        scores[i] = 16 * victim - see_value(m.role()) / 10;
    }
}

/// Returns the move to try at position `index`. The first few are found by selection (most
/// cut-nodes cut off after one or two moves, so sorting everything would be wasted work);
/// at [`SORT_AFTER`] the rest is sorted once, as a node that got that far usually searches
/// everything. Ties keep generation order either way, so the ordering is deterministic.
pub fn pick(moves: &mut MoveList, scores: &mut [i32], index: usize) -> Move {
    if index < SORT_AFTER {
        let mut best = index;
        for j in index + 1..moves.len() {
            if scores[j] > scores[best] {
                best = j;
            }
        }
        moves.swap(index, best);
        scores.swap(index, best);
    } else if index == SORT_AFTER {
        // Stable insertion sort, descending.
        for j in index + 1..moves.len() {
            let (m, s) = (moves[j], scores[j]);
            let mut k = j;
            while k > index && scores[k - 1] < s {
                moves[k] = moves[k - 1];
                scores[k] = scores[k - 1];
                k -= 1;
            }
            moves[k] = m;
            scores[k] = s;
        }
    }
    moves[index]
}

/// Moves picked one at a time before the rest is sorted.
const SORT_AFTER: usize = 3;
