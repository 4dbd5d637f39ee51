//! The network's inputs: which of the 768 (colour, role, square) features are on, as seen from
//! each perspective, and which a move turns on and off.

use shakmaty::{Board, Color, Move, Piece, Position, Role, Square};

/// 2 colours (own, other) × 6 roles × 64 squares.
pub const INPUTS: usize = 768;

/// A piece on a square: the unit the network's inputs count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PieceSquare {
    pub color: Color,
    pub role: Role,
    pub square: Square,
}

impl PieceSquare {
    pub fn new(color: Color, role: Role, square: Square) -> PieceSquare {
        PieceSquare {
            color,
            role,
            square,
        }
    }
}

/// The input `piece` turns on for `perspective`: that side's own pieces first (0..384), then
/// the other side's; the board mirrored top to bottom for Black, so each side sees itself
/// playing up the board.
#[inline]
pub fn feature_index(perspective: Color, piece: PieceSquare) -> usize {
    let other = usize::from(piece.color != perspective);
    let square = match perspective {
        Color::White => piece.square as usize,
        Color::Black => piece.square as usize ^ 56,
    };
    other * 384 + (piece.role as usize - 1) * 64 + square
}

/// The input of the same piece seen from the other perspective: own and other swap, the board
/// mirrors. (`flip_index(flip_index(i)) == i`.)
#[inline]
pub fn flip_index(index: usize) -> usize {
    ((index + 384) % INPUTS) ^ 56
}

/// Every piece of `board`, in square order.
pub fn pieces(board: &Board) -> impl Iterator<Item = PieceSquare> + '_ {
    board
        .iter()
        .map(|(square, Piece { color, role })| PieceSquare {
            color,
            role,
            square,
        })
}

/// The pieces a move takes off and puts on (at most two each: castling moves two pieces, a
/// capture removes two and adds one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MoveFeatures {
    removed: [Option<PieceSquare>; 2],
    added: [Option<PieceSquare>; 2],
}

impl MoveFeatures {
    /// What `m`, legal in `position`, changes.
    pub fn of(position: &impl Position, m: Move) -> MoveFeatures {
        let us = position.turn();
        let them = !us;
        let piece = PieceSquare::new;
        match m {
            Move::Normal {
                role,
                from,
                capture,
                to,
                promotion,
            } => MoveFeatures {
                removed: [
                    Some(piece(us, role, from)),
                    capture.map(|captured| piece(them, captured, to)),
                ],
                added: [Some(piece(us, promotion.unwrap_or(role), to)), None],
            },
            Move::EnPassant { from, to } => MoveFeatures {
                removed: [
                    Some(piece(us, Role::Pawn, from)),
                    Some(piece(
                        them,
                        Role::Pawn,
                        Square::from_coords(to.file(), from.rank()),
                    )),
                ],
                added: [Some(piece(us, Role::Pawn, to)), None],
            },
            Move::Castle { king, rook } => {
                let side = m
                    .castling_side()
                    .unwrap_or(shakmaty::CastlingSide::KingSide);
                MoveFeatures {
                    removed: [
                        Some(piece(us, Role::King, king)),
                        Some(piece(us, Role::Rook, rook)),
                    ],
                    added: [
                        Some(piece(us, Role::King, side.king_to(us))),
                        Some(piece(us, Role::Rook, side.rook_to(us))),
                    ],
                }
            }
            Move::Put { role, to } => MoveFeatures {
                removed: [None, None],
                added: [Some(piece(us, role, to)), None],
            },
        }
    }

    pub fn removed(&self) -> impl Iterator<Item = PieceSquare> + '_ {
        self.removed.iter().flatten().copied()
    }

    pub fn added(&self) -> impl Iterator<Item = PieceSquare> + '_ {
        self.added.iter().flatten().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_perspective_sees_its_own_pieces_first_and_itself_at_the_bottom() {
        let white_pawn_e2 = PieceSquare::new(Color::White, Role::Pawn, Square::E2);
        let black_pawn_e7 = PieceSquare::new(Color::Black, Role::Pawn, Square::E7);
        // Each side's own pawn on its second rank is the same input from its own view.
        assert_eq!(
            feature_index(Color::White, white_pawn_e2),
            Square::E2 as usize
        );
        assert_eq!(
            feature_index(Color::Black, black_pawn_e7),
            Square::E2 as usize
        );
        assert_eq!(
            feature_index(Color::White, black_pawn_e7),
            384 + Square::E7 as usize
        );
        let black_king_e8 = PieceSquare::new(Color::Black, Role::King, Square::E8);
        assert_eq!(
            feature_index(Color::Black, black_king_e8),
            5 * 64 + Square::E1 as usize
        );
    }

    #[test]
    fn flipping_an_index_is_the_other_perspective() {
        for index in 0..INPUTS {
            assert_eq!(flip_index(flip_index(index)), index);
        }
        let board = Board::default();
        for piece in pieces(&board) {
            assert_eq!(
                flip_index(feature_index(Color::White, piece)),
                feature_index(Color::Black, piece)
            );
        }
    }
}
