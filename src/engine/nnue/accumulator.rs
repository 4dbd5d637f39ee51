//! The first layer's output for one position: one accumulator of N i16 values per perspective,
//! the feature bias plus the rows of the inputs that are on. Built from a board ([`refresh`])
//! or kept up to date by the pieces a move changes ([`Accumulator::apply`]); both give the same
//! values, wrapping arithmetic included, so the order of updates never matters.
//!
//! [`refresh`]: Accumulator::refresh

use shakmaty::{Board, Color};

use super::features::{MoveFeatures, PieceSquare, feature_index, pieces};
use super::network::Network;

/// The accumulators of both perspectives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Accumulator {
    white: Vec<i16>,
    black: Vec<i16>,
}

impl Accumulator {
    /// An empty board's accumulators: the bias only.
    pub fn new(network: &Network) -> Accumulator {
        Accumulator {
            white: network.feature_bias().to_vec(),
            black: network.feature_bias().to_vec(),
        }
    }

    /// The accumulator `perspective` sees.
    #[inline]
    pub fn perspective(&self, perspective: Color) -> &[i16] {
        match perspective {
            Color::White => &self.white,
            Color::Black => &self.black,
        }
    }

    /// The evaluation in centipawns from `side_to_move`'s point of view.
    #[inline]
    pub fn evaluate(&self, network: &Network, side_to_move: Color) -> i32 {
        network.output(
            self.perspective(side_to_move),
            self.perspective(!side_to_move),
        )
    }

    /// Recomputes both accumulators from every piece of `board`.
    pub fn refresh(&mut self, network: &Network, board: &Board) {
        self.white.clear();
        self.white.extend_from_slice(network.feature_bias());
        self.black.clear();
        self.black.extend_from_slice(network.feature_bias());
        for piece in pieces(board) {
            self.add(network, piece);
        }
    }

    /// A piece put on the board.
    #[inline]
    pub fn add(&mut self, network: &Network, piece: PieceSquare) {
        self.update(network, piece, i16::wrapping_add);
    }

    /// A piece taken off the board.
    #[inline]
    pub fn remove(&mut self, network: &Network, piece: PieceSquare) {
        self.update(network, piece, i16::wrapping_sub);
    }

    /// Both perspectives' accumulators combined with the piece's rows by `op`.
    #[inline]
    fn update(&mut self, network: &Network, piece: PieceSquare, op: impl Fn(i16, i16) -> i16) {
        for (accumulator, perspective) in [
            (&mut self.white, Color::White),
            (&mut self.black, Color::Black),
        ] {
            let row = network.feature_row(feature_index(perspective, piece));
            for (value, &weight) in accumulator.iter_mut().zip(row) {
                *value = op(*value, weight);
            }
        }
    }

    /// Makes a move's changes (undo with [`Accumulator::revert`], or keep a copy).
    pub fn apply(&mut self, network: &Network, changes: &MoveFeatures) {
        for piece in changes.removed() {
            self.remove(network, piece);
        }
        for piece in changes.added() {
            self.add(network, piece);
        }
    }

    /// Takes a move's changes back.
    pub fn revert(&mut self, network: &Network, changes: &MoveFeatures) {
        for piece in changes.added() {
            self.remove(network, piece);
        }
        for piece in changes.removed() {
            self.add(network, piece);
        }
    }
}

/// The evaluation of a board from scratch (a fresh accumulator).
pub fn evaluate_board(network: &Network, board: &Board, side_to_move: Color) -> i32 {
    let mut accumulator = Accumulator::new(network);
    accumulator.refresh(network, board);
    accumulator.evaluate(network, side_to_move)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::nnue::network::random_network;
    use crate::engine::position::position_of as position;
    use shakmaty::{Chess, Move, Position};

    fn refreshed(network: &Network, pos: &Chess) -> Accumulator {
        let mut accumulator = Accumulator::new(network);
        accumulator.refresh(network, pos.board());
        accumulator
    }

    #[test]
    fn incremental_updates_along_real_moves_equal_a_refresh() {
        let network = random_network(24, 7);
        // Captures, both castlings, en passant, promotions with and without capture.
        let starts = [
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
            "r3k2r/1P4P1/8/3pP3/8/8/1p4p1/R3K2R w KQkq d6 0 1",
            "r3k2r/pppq1ppp/2np1n2/2b1p1B1/2B1P1b1/2NP1N2/PPPQ1PPP/R3K2R b KQkq - 0 1",
        ];
        let mut seen = [false; 4]; // capture, castle, en passant, promotion
        let mut rng = crate::seed::SplitMix::new(11);
        for fen in starts {
            let start = position(fen);
            // Every legal move of the start position, made and taken back.
            let mut accumulator = refreshed(&network, &start);
            for m in start.legal_moves() {
                let changes = MoveFeatures::of(&start, m);
                accumulator.apply(&network, &changes);
                let mut after = start.clone();
                after.play_unchecked(m);
                assert_eq!(accumulator, refreshed(&network, &after), "{fen} {m}");
                accumulator.revert(&network, &changes);
                assert_eq!(accumulator, refreshed(&network, &start), "{fen} {m} back");
            }
            // Random games, updated move by move, checked against a refresh at every ply.
            for _ in 0..20 {
                let mut pos = start.clone();
                let mut accumulator = refreshed(&network, &pos);
                for _ in 0..120 {
                    let moves = pos.legal_moves();
                    if moves.is_empty() {
                        break;
                    }
                    let m = moves[(rng.next_u64() % moves.len() as u64) as usize];
                    seen[0] |= m.is_capture();
                    seen[1] |= matches!(m, Move::Castle { .. });
                    seen[2] |= m.is_en_passant();
                    seen[3] |= m.is_promotion();
                    accumulator.apply(&network, &MoveFeatures::of(&pos, m));
                    pos.play_unchecked(m);
                    assert_eq!(
                        accumulator,
                        refreshed(&network, &pos),
                        "{m} in a game from {fen}"
                    );
                    assert_eq!(
                        accumulator.evaluate(&network, pos.turn()),
                        evaluate_board(&network, pos.board(), pos.turn())
                    );
                }
            }
        }
        assert_eq!(seen, [true; 4], "capture, castle, en passant, promotion");
    }
}
