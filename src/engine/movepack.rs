//! A move packed into 16 bits for the transposition table: from, to and promotion piece.
//! Castling is stored king-square → rook-square, which is unique in every castling mode.

use shakmaty::{Move, Role};

/// A 16-bit move: `from | to << 6 | promotion << 12`. Never zero (from ≠ to).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PackedMove(std::num::NonZeroU16);

impl PackedMove {
    pub fn new(m: Move) -> PackedMove {
        let (from, to) = match m {
            Move::Castle { king, rook } => (king, rook),
            Move::Normal { from, to, .. } | Move::EnPassant { from, to } => (from, to),
            Move::Put { to, .. } => (to, to),
        };
        let promotion = m.promotion().map_or(0, |r| r as u16);
        let raw = from as u16 | (to as u16) << 6 | promotion << 12;
        // from == to only for drops, which standard chess never has.
        PackedMove(std::num::NonZeroU16::new(raw).unwrap_or(std::num::NonZeroU16::MIN))
    }

    pub fn from_raw(raw: u16) -> Option<PackedMove> {
        std::num::NonZeroU16::new(raw).map(PackedMove)
    }

    pub fn raw(self) -> u16 {
        self.0.get()
    }

    /// Whether `m` is the move this was packed from.
    pub fn matches(self, m: Move) -> bool {
        PackedMove::new(m) == self
    }
}

/// Promotion role codes must fit three bits.
const _: () = assert!((Role::King as u16) < 8);

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::{Chess, Position};

    #[test]
    fn packs_every_legal_move_uniquely() {
        let pos: Chess = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
            .parse::<shakmaty::fen::Fen>()
            .unwrap()
            .into_position(shakmaty::CastlingMode::Standard)
            .unwrap();
        let moves = pos.legal_moves();
        let packed: Vec<_> = moves.iter().map(|&m| PackedMove::new(m)).collect();
        for (i, p) in packed.iter().enumerate() {
            assert!(p.matches(moves[i]));
            assert_eq!(packed.iter().filter(|q| *q == p).count(), 1);
            assert_eq!(PackedMove::from_raw(p.raw()), Some(*p));
        }
    }
}
