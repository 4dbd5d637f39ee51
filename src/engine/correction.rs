//! Correction history: how far the static evaluation has missed the search's own score in
//! positions with the same pawns, learnt during a search and added to later evaluations of such
//! positions. A pawn structure the evaluation misjudges (a passed pawn it underrates, a weak
//! one it overlooks) is misjudged the same way all over the tree, so its error is worth
//! remembering: the idea of Caissa and Stockfish (2023), one table per side to move, entries a
//! running average weighted by the depth that measured them.

use shakmaty::{Board, Color};

/// Entries per side to move (a power of two; the pawn key's low bits pick one).
const ENTRIES: usize = 16_384;
/// Entries are kept in 1/GRAIN centipawns, so small corrections survive the averaging.
const GRAIN: i32 = 256;
/// No single measurement moves an entry by more than this, cp: a search score far from the
/// evaluation is a tactic, not a misjudged structure.
const MEASURE_LIMIT_CP: i32 = 256;
/// The largest correction, cp.
const CORRECTION_LIMIT_CP: i32 = 128;

/// A key of the pawns alone (both colours): positions that share it share their pawn
/// structure.
pub fn pawn_key(board: &Board) -> u64 {
    let mut key = 0;
    for square in board.pawns() {
        let white = board.white().contains(square);
        key ^= PAWN_KEYS[usize::from(white) * 64 + square as usize];
    }
    key
}

/// Random keys for a pawn of each colour on each square, made at compile time (SplitMix64).
const PAWN_KEYS: [u64; 128] = {
    let mut keys = [0u64; 128];
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut i = 0;
    while i < 128 {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        keys[i] = z ^ (z >> 31);
        i += 1;
    }
    keys
};

/// The table of corrections.
pub struct Correction {
    table: Vec<i32>,
}

impl Default for Correction {
    fn default() -> Self {
        Correction {
            table: vec![0; 2 * ENTRIES],
        }
    }
}

fn index(side: Color, pawn_key: u64) -> usize {
    usize::from(side.is_white()) * ENTRIES + (pawn_key as usize & (ENTRIES - 1))
}

impl Correction {
    pub fn clear(&mut self) {
        self.table.fill(0);
    }

    /// `eval` (of the side to move, cp) corrected by what the table learnt of these pawns.
    pub fn corrected(&self, side: Color, pawn_key: u64, eval: i32) -> i32 {
        eval + self.table[index(side, pawn_key)] / GRAIN
    }

    /// Learns from a node searched to `depth` whose score came out `error` cp above its static
    /// evaluation (below when negative): the entry moves towards it by a share that grows with
    /// the depth.
    pub fn learn(&mut self, side: Color, pawn_key: u64, depth: i32, error: i32) {
        let weight = (depth + 1).clamp(1, 16);
        let target = error.clamp(-MEASURE_LIMIT_CP, MEASURE_LIMIT_CP) * GRAIN;
        let entry = &mut self.table[index(side, pawn_key)];
        let blended = (*entry * (256 - weight) + target * weight) / 256;
        *entry = blended.clamp(-CORRECTION_LIMIT_CP * GRAIN, CORRECTION_LIMIT_CP * GRAIN);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::fen::Fen;
    use shakmaty::{CastlingMode, Chess, Position};

    fn board(fen: &str) -> Board {
        let pos: Chess = fen
            .parse::<Fen>()
            .unwrap()
            .into_position(CastlingMode::Standard)
            .unwrap();
        pos.board().clone()
    }

    #[test]
    fn the_pawn_key_sees_pawns_and_nothing_else() {
        let start = board("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1");
        let knight_out = board("rnbqkbnr/pppppppp/8/8/8/5N2/PPPPPPPP/RNBQKB1R b KQkq - 1 1");
        let pawn_up = board("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1");
        assert_eq!(pawn_key(&start), pawn_key(&knight_out));
        assert_ne!(pawn_key(&start), pawn_key(&pawn_up));
        // The same square with a pawn of the other colour is another structure.
        let white_e5 = board("4k3/8/8/4P3/8/8/8/4K3 w - - 0 1");
        let black_e5 = board("4k3/8/8/4p3/8/8/8/4K3 w - - 0 1");
        assert_ne!(pawn_key(&white_e5), pawn_key(&black_e5));
    }

    #[test]
    fn repeated_errors_are_learnt_within_bounds_and_per_side() {
        let mut correction = Correction::default();
        let key = 12345;
        assert_eq!(correction.corrected(Color::White, key, 40), 40);
        for _ in 0..200 {
            correction.learn(Color::White, key, 10, 60);
        }
        let learnt = correction.corrected(Color::White, key, 40) - 40;
        assert!((55..=60).contains(&learnt), "{learnt}");
        // The other side to move has its own entry.
        assert_eq!(correction.corrected(Color::Black, key, 40), 40);
        // A huge error is a tactic: it moves the entry only as far as the limits allow.
        for _ in 0..500 {
            correction.learn(Color::Black, key, 16, -5000);
        }
        assert_eq!(
            correction.corrected(Color::Black, key, 0),
            -CORRECTION_LIMIT_CP
        );
        correction.clear();
        assert_eq!(correction.corrected(Color::Black, key, 0), 0);
    }

    #[test]
    fn a_deeper_measurement_moves_the_entry_further() {
        let (mut shallow, mut deep) = (Correction::default(), Correction::default());
        shallow.learn(Color::White, 7, 1, 100);
        deep.learn(Color::White, 7, 12, 100);
        assert!(deep.corrected(Color::White, 7, 0) > shallow.corrected(Color::White, 7, 0));
    }
}
