//! Move ordering: the hash move, then winning and equal captures by MVV-LVA, queen
//! promotions, the two killer moves of the ply, quiet moves by history (the move's own, and
//! how it did after the same two previous moves: continuation history), losing captures last.

use shakmaty::{Chess, Color, Move, MoveList, Position, Role};

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

/// A move as the continuation history keys it: the piece that moved (colour and role) and
/// where it went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PieceTo(u16);

const PIECE_TO: usize = 2 * 6 * 64;

impl PieceTo {
    pub fn of(color: Color, m: Move) -> PieceTo {
        let piece = usize::from(color.is_white()) * 6 + (m.role() as usize - 1);
        PieceTo((piece * 64 + m.to() as usize) as u16)
    }
}

/// The moves a node's quiet moves are judged after: the opponent's last move, and ours before
/// it (`None` at the root, after a null move, or before the search's first moves).
pub type Context = [Option<PieceTo>; 2];

/// Per-search memory of which quiet moves caused cutoffs.
pub struct Heuristics {
    killers: Vec<[Option<Move>; 2]>,
    /// Indexed by [color][from][to].
    history: Vec<i32>,
    /// Indexed by [previous move's PieceTo][this move's PieceTo]; one table for both moves of
    /// the context (a reply and a follow-up look alike to it).
    continuation: Vec<i16>,
}

impl Default for Heuristics {
    fn default() -> Self {
        Heuristics {
            killers: vec![[None; 2]; MAX_PLY + 2],
            history: vec![0; 2 * 64 * 64],
            continuation: vec![0; PIECE_TO * PIECE_TO],
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
        self.continuation.fill(0);
    }

    pub fn killers(&self, ply: usize) -> [Option<Move>; 2] {
        self.killers[ply]
    }

    pub fn history(&self, color: Color, m: Move) -> i32 {
        self.history[history_index(color, m)]
    }

    /// The ordering score of quiet move `m` after the moves of `context`.
    pub fn quiet_score(&self, color: Color, m: Move, context: &Context) -> i32 {
        let this = PieceTo::of(color, m);
        let mut score = self.history(color, m);
        for previous in context.iter().flatten() {
            score += i32::from(self.continuation[continuation_index(*previous, this)]);
        }
        score
    }

    /// A quiet move caused a beta cutoff at `depth` after the moves of `context`; the quiet
    /// moves tried before it did not.
    pub fn reward(
        &mut self,
        color: Color,
        ply: usize,
        depth: i32,
        best: Move,
        tried: &[Move],
        context: &Context,
    ) {
        let killers = &mut self.killers[ply];
        if killers[0] != Some(best) {
            killers[1] = killers[0];
            killers[0] = Some(best);
        }
        let bonus = (depth * depth).min(400);
        self.bump(color, best, bonus, context);
        for &m in tried {
            if m != best {
                self.bump(color, m, -bonus, context);
            }
        }
    }

    fn bump(&mut self, color: Color, m: Move, bonus: i32, context: &Context) {
        gravity(&mut self.history[history_index(color, m)], bonus);
        let this = PieceTo::of(color, m);
        for previous in context.iter().flatten() {
            let entry = &mut self.continuation[continuation_index(*previous, this)];
            let mut value = i32::from(*entry);
            gravity(&mut value, bonus);
            // Gravity keeps |value| <= HISTORY_MAX, which an i16 holds.
            *entry = value as i16;
        }
    }
}

/// Gravity: the closer to the bound, the smaller the step, so scores never leave
/// ±HISTORY_MAX and old information fades.
fn gravity(h: &mut i32, bonus: i32) {
    *h += 32 * bonus - *h * bonus.abs() / (HISTORY_MAX / 32);
}

fn continuation_index(previous: PieceTo, this: PieceTo) -> usize {
    usize::from(previous.0) * PIECE_TO + usize::from(this.0)
}

/// Is this move quiet for the purposes of killers, history and reductions?
pub fn is_quiet(m: Move) -> bool {
    !m.is_capture() && m.promotion().is_none()
}

/// Scores `moves`, the legal moves of `pos`, for ordering.
pub fn score_moves(
    moves: &MoveList,
    scores: &mut [i32],
    pos: &Chess,
    hash_move: Option<PackedMove>,
    heuristics: &Heuristics,
    ply: usize,
    context: &Context,
) {
    let (board, color) = (pos.board(), pos.turn());
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
            heuristics.quiet_score(color, m, context)
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
    // The slices of the moves not tried yet, of one length, so the loops below index them
    // without bounds checks.
    let len = moves.len();
    let (tail_moves, tail_scores) = (&mut moves[index..], &mut scores[index..len]);
    if index < SORT_AFTER {
        // The first of the highest scores (a strict comparison keeps generation order on ties).
        let mut best = 0;
        let mut best_score = tail_scores[0];
        for (j, &score) in tail_scores.iter().enumerate().skip(1) {
            if score > best_score {
                best = j;
                best_score = score;
            }
        }
        tail_moves.swap(0, best);
        tail_scores.swap(0, best);
    } else if index == SORT_AFTER {
        // Stable insertion sort, descending.
        for j in 1..tail_scores.len() {
            let (m, s) = (tail_moves[j], tail_scores[j]);
            let mut k = j;
            while k > 0 && tail_scores[k - 1] < s {
                tail_moves[k] = tail_moves[k - 1];
                tail_scores[k] = tail_scores[k - 1];
                k -= 1;
            }
            tail_moves[k] = m;
            tail_scores[k] = s;
        }
    }
    tail_moves[0]
}

/// Moves picked one at a time before the rest is sorted.
const SORT_AFTER: usize = 3;
