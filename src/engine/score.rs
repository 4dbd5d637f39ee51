//! The engine's one score type: the public [`Score`] (centipawns or mate in N moves), and the
//! internal search scores behind it (centipawns, and mate scores encoded as distance from the
//! root in plies) with the conversions to and from the transposition table.

/// A search score as the engine reports it, from the side to move's point of view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Score {
    /// Centipawns.
    Cp(i32),
    /// Mate in this many moves (positive: we mate; negative: we are mated).
    Mate(i32),
}

impl Score {
    /// The score as UCI's `info ... score` writes it: `cp 35`, `mate -2`.
    pub fn to_uci(self) -> String {
        match self {
            Score::Cp(cp) => format!("cp {cp}"),
            Score::Mate(moves) => format!("mate {moves}"),
        }
    }

    /// The score of UCI's unit word (`cp`, `mate`) and value; `None` for another word.
    pub fn from_uci(unit: &str, value: i32) -> Option<Score> {
        match unit {
            "cp" => Some(Score::Cp(value)),
            "mate" => Some(Score::Mate(value)),
            _ => None,
        }
    }
}

/// As people read it in a log line: `+35 cp`, `-600 cp`, `mate in 3`, `mated in 2`.
impl std::fmt::Display for Score {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Score::Cp(cp) => write!(f, "{cp:+} cp"),
            Score::Mate(n) if n >= 0 => write!(f, "mate in {n}"),
            Score::Mate(n) => write!(f, "mated in {}", -n),
        }
    }
}

/// Deepest ply the search reaches (iterative deepening stops below it; quiescence too).
pub const MAX_PLY: usize = 128;
/// Score of mate at the root; mate in `p` plies scores `MATE - p`.
pub const MATE: i32 = 32_000;
/// Every score at or beyond this magnitude is a mate score.
pub const MATE_BOUND: i32 = MATE - 2 * MAX_PLY as i32;
/// Larger than every real score.
pub const INFINITE: i32 = MATE + 1;
/// A draw by the rules (repetition, 50 moves, insufficient material, stalemate).
pub const DRAW: i32 = 0;

/// Score of giving mate `ply` plies from the root.
pub const fn mate_in(ply: usize) -> i32 {
    MATE - ply as i32
}

/// Score of being mated `ply` plies from the root.
pub const fn mated_in(ply: usize) -> i32 {
    -MATE + ply as i32
}

pub const fn is_mate(score: i32) -> bool {
    score >= MATE_BOUND || score <= -MATE_BOUND
}

/// Converts a root-relative mate score found at `ply` into one relative to that node, so it
/// means the same wherever the position is probed again.
pub const fn ply_adjusted_to_tt(score: i32, ply: usize) -> i32 {
    if score >= MATE_BOUND {
        score + ply as i32
    } else if score <= -MATE_BOUND {
        score - ply as i32
    } else {
        score
    }
}

/// The inverse of [`ply_adjusted_to_tt`] for a node at `ply`.
pub const fn ply_adjusted_from_tt(score: i32, ply: usize) -> i32 {
    if score >= MATE_BOUND {
        score - ply as i32
    } else if score <= -MATE_BOUND {
        score + ply as i32
    } else {
        score
    }
}

/// The public form of a root score: centipawns, or mate in N moves (negative: being mated).
pub fn to_public(score: i32) -> Score {
    if score >= MATE_BOUND {
        let plies = MATE - score;
        Score::Mate((plies + 1) / 2)
    } else if score <= -MATE_BOUND {
        let plies = MATE + score;
        Score::Mate(-((plies + 1) / 2))
    } else {
        Score::Cp(score)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mate_scores_round_trip_through_the_table_at_any_ply() {
        for score in [
            mate_in(1),
            mate_in(7),
            mated_in(2),
            mated_in(10),
            0,
            250,
            -999,
        ] {
            for ply in [0, 1, 5, 40] {
                assert_eq!(
                    ply_adjusted_from_tt(ply_adjusted_to_tt(score, ply), ply),
                    score
                );
            }
        }
        // Stored at ply 3 as "mate in 4 plies from here", probed at ply 1: mate at ply 5.
        let stored = ply_adjusted_to_tt(mate_in(7), 3);
        assert_eq!(stored, MATE - 4);
        assert_eq!(ply_adjusted_from_tt(stored, 1), mate_in(5));
        let stored = ply_adjusted_to_tt(mated_in(6), 4);
        assert_eq!(ply_adjusted_from_tt(stored, 0), mated_in(2));
        // Ordinary scores are never touched.
        assert_eq!(ply_adjusted_to_tt(MATE_BOUND - 1, 9), MATE_BOUND - 1);
    }

    #[test]
    fn public_scores_count_moves_not_plies() {
        assert_eq!(to_public(mate_in(1)), Score::Mate(1));
        assert_eq!(to_public(mate_in(3)), Score::Mate(2));
        assert_eq!(to_public(mate_in(5)), Score::Mate(3));
        assert_eq!(to_public(mated_in(0)), Score::Mate(0));
        assert_eq!(to_public(mated_in(2)), Score::Mate(-1));
        assert_eq!(to_public(mated_in(4)), Score::Mate(-2));
        assert_eq!(to_public(35), Score::Cp(35));
    }
}
