//! The first layer's output for one position: one accumulator of N i16 values per perspective,
//! the feature bias plus the rows of the inputs that are on. Built from a board ([`refresh`])
//! or kept up to date by the pieces a move changes ([`Accumulator::apply`] in place, or
//! [`Accumulator::apply_from`] from the parent's in one pass, as the search does); all give the
//! same values, wrapping arithmetic included, so the order of updates never matters.
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

    /// The evaluation in centipawns from `side_to_move`'s point of view, with `pieces` pieces
    /// on the board (which picks the output bucket).
    #[inline]
    pub fn evaluate(&self, network: &Network, side_to_move: Color, pieces: usize) -> i32 {
        network.output(
            self.perspective(side_to_move),
            self.perspective(!side_to_move),
            pieces,
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
            combine(accumulator, row, &op);
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

    /// Becomes `parent`'s accumulators after a move's changes: what a copy of `parent` and
    /// [`Accumulator::apply`] give (wrapping sums do not depend on their order), in one pass over
    /// each perspective instead of a copy and a pass a changed piece.
    pub fn apply_from(&mut self, parent: &Accumulator, network: &Network, changes: &MoveFeatures) {
        // Every move adds one or two pieces and removes one or two (a quiet move or promotion
        // 1 and 1, a capture or en passant 1 and 2, castling 2 and 2); anything else, or
        // accumulators of another width, take the copy and the general update.
        let shape = (changes.added().count(), changes.removed().count());
        if self.white.len() != parent.white.len() || !matches!(shape, (1, 1) | (1, 2) | (2, 2)) {
            self.clone_from(parent);
            self.apply(network, changes);
            return;
        }
        for (accumulator, parent, perspective) in [
            (&mut self.white, &parent.white, Color::White),
            (&mut self.black, &parent.black, Color::Black),
        ] {
            let row = |piece| network.feature_row(feature_index(perspective, piece));
            let mut added = changes.added().map(row);
            let mut removed = changes.removed().map(row);
            match (added.next(), added.next(), removed.next(), removed.next()) {
                (Some(a), None, Some(r), None) => derive(accumulator, parent, &[a], &[r]),
                (Some(a), None, Some(r1), Some(r2)) => {
                    derive(accumulator, parent, &[a], &[r1, r2]);
                }
                (Some(a1), Some(a2), Some(r1), Some(r2)) => {
                    derive(accumulator, parent, &[a1, a2], &[r1, r2]);
                }
                _ => unreachable!("the move's shape {shape:?} was checked above"),
            }
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

/// `values[i] = op(values[i], row[i])`: the plain loop, compiled a second time for AVX2 where
/// the processor has it ([`super::simd`]); wrapping integer arithmetic, the same values either way.
#[inline]
fn combine(values: &mut [i16], row: &[i16], op: &impl Fn(i16, i16) -> i16) {
    #[cfg(target_arch = "x86_64")]
    if super::simd::has_avx2() {
        #[allow(unsafe_code)]
        // SAFETY: the processor has AVX2 (checked just above), all that the function needs.
        return unsafe { combine_avx2(values, row, op) };
    }
    combine_plain(values, row, op);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn combine_avx2(values: &mut [i16], row: &[i16], op: &impl Fn(i16, i16) -> i16) {
    combine_plain(values, row, op);
}

#[inline(always)]
fn combine_plain(values: &mut [i16], row: &[i16], op: &impl Fn(i16, i16) -> i16) {
    for (value, &weight) in values.iter_mut().zip(row) {
        *value = op(*value, weight);
    }
}

/// `out[i] = parent[i] + Σ added[k][i] − Σ removed[k][i]` (wrapping), in one pass; compiled a
/// second time for AVX2 like [`combine`]. `A` and `R` are fixed per call site, so each loop is
/// unrolled over its rows and vectorised.
#[inline]
fn derive<const A: usize, const R: usize>(
    out: &mut [i16],
    parent: &[i16],
    added: &[&[i16]; A],
    removed: &[&[i16]; R],
) {
    #[cfg(target_arch = "x86_64")]
    if super::simd::has_avx2() {
        #[allow(unsafe_code)]
        // SAFETY: the processor has AVX2 (checked just above), all that the function needs.
        return unsafe { derive_avx2(out, parent, added, removed) };
    }
    derive_plain(out, parent, added, removed);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn derive_avx2<const A: usize, const R: usize>(
    out: &mut [i16],
    parent: &[i16],
    added: &[&[i16]; A],
    removed: &[&[i16]; R],
) {
    derive_plain(out, parent, added, removed);
}

#[inline(always)]
fn derive_plain<const A: usize, const R: usize>(
    out: &mut [i16],
    parent: &[i16],
    added: &[&[i16]; A],
    removed: &[&[i16]; R],
) {
    let n = out.len();
    let parent = &parent[..n];
    let added = added.map(|row| &row[..n]);
    let removed = removed.map(|row| &row[..n]);
    for i in 0..n {
        let mut value = parent[i];
        for row in &added {
            value = value.wrapping_add(row[i]);
        }
        for row in &removed {
            value = value.wrapping_sub(row[i]);
        }
        out[i] = value;
    }
}

/// The evaluation of a board from scratch (a fresh accumulator).
pub fn evaluate_board(network: &Network, board: &Board, side_to_move: Color) -> i32 {
    let mut accumulator = Accumulator::new(network);
    accumulator.refresh(network, board);
    accumulator.evaluate(network, side_to_move, board.occupied().count())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::nnue::network::{
        QA, QB, SCALE, output_bucket, random_bucketed_network, random_network,
    };
    use crate::engine::position::position_of as position;
    use shakmaty::{Chess, Move, Position};

    fn refreshed(network: &Network, pos: &Chess) -> Accumulator {
        let mut accumulator = Accumulator::new(network);
        accumulator.refresh(network, pos.board());
        accumulator
    }

    /// The row update the search runs (AVX2 where the processor has it) is the plain loop's,
    /// wrapping included, at every width.
    #[test]
    fn the_dispatched_row_update_is_the_plain_one() {
        let mut rng = crate::seed::SplitMix::new(23);
        for hidden in [1, 15, 16, 17, 256, 1000] {
            let values: Vec<i16> = (0..hidden).map(|_| rng.next_u64() as i16).collect();
            let row: Vec<i16> = (0..hidden).map(|_| rng.next_u64() as i16).collect();
            for op in [i16::wrapping_add, i16::wrapping_sub] {
                let (mut dispatched, mut plain) = (values.clone(), values.clone());
                combine(&mut dispatched, &row, &op);
                combine_plain(&mut plain, &row, &op);
                assert_eq!(dispatched, plain, "width {hidden}");
            }
        }
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
                // The one-pass form the search uses gives the same accumulators.
                let mut derived = Accumulator::new(&network);
                derived.apply_from(&refreshed(&network, &start), &network, &changes);
                assert_eq!(derived, accumulator, "{fen} {m} in one pass");
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
                        accumulator.evaluate(&network, pos.turn(), pos.board().occupied().count()),
                        evaluate_board(&network, pos.board(), pos.turn())
                    );
                }
            }
        }
        assert_eq!(seen, [true; 4], "capture, castle, en passant, promotion");
    }

    /// The same sum in floating point, written from the definition.
    fn reference(network: &Network, board: &Board, side_to_move: Color) -> f64 {
        let hidden = network.hidden();
        let accumulate = |perspective: Color| -> Vec<f64> {
            let mut values: Vec<f64> = network
                .feature_bias()
                .iter()
                .map(|&b| f64::from(b))
                .collect();
            for piece in pieces(board) {
                let row = network.feature_row(feature_index(perspective, piece));
                for (v, &w) in values.iter_mut().zip(row) {
                    *v += f64::from(w);
                }
            }
            values
        };
        let activation = |x: f64| (x.clamp(0.0, f64::from(QA)) / f64::from(QA)).powi(2);
        let ours = accumulate(side_to_move);
        let theirs = accumulate(!side_to_move);
        let bucket = output_bucket(board.occupied().count(), network.buckets());
        let weights = network.output_weights(bucket);
        let mut sum = f64::from(network.output_bias(bucket)) / f64::from(QA * QB);
        for i in 0..hidden {
            sum += activation(ours[i]) * f64::from(weights[i]) / f64::from(QB);
            sum += activation(theirs[i]) * f64::from(weights[hidden + i]) / f64::from(QB);
        }
        sum * f64::from(SCALE)
    }

    #[test]
    fn the_integer_pass_computes_the_network_in_centipawns() {
        for network in [random_network(32, 4), random_bucketed_network(32, 8, 4)] {
            for fen in [
                "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
                "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N1PN2/PP3PPP/R2QKB1R b KQ - 3 9",
                "8/8/4k3/8/1Q6/8/3K4/8 w - - 0 1",
            ] {
                let pos = position(fen);
                for side in [Color::White, Color::Black] {
                    let got = f64::from(evaluate_board(&network, pos.board(), side));
                    let want = reference(&network, pos.board(), side);
                    // Integer division truncates twice: at most a centipawn or two off.
                    assert!((got - want).abs() <= 2.0, "{fen} {side:?}: {got} vs {want}");
                }
            }
        }
    }

    #[test]
    fn a_mirrored_position_evaluates_the_same_for_the_other_side() {
        let network = random_network(16, 5);
        let pos = position("r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N1PN2/PP3PPP/R2QKB1R w KQ - 3 9");
        let mut mirrored = Board::empty();
        for (square, piece) in pos.board().iter() {
            mirrored.set_piece_at(
                square.flip_vertical(),
                shakmaty::Piece {
                    color: piece.color.other(),
                    role: piece.role,
                },
            );
        }
        assert_eq!(
            evaluate_board(&network, pos.board(), Color::White),
            evaluate_board(&network, &mirrored, Color::Black)
        );
    }
}
