//! Static evaluation: tapered between middlegame and endgame by the material on the board.
//!
//! Terms: material, piece-square tables (built from a few geometric rules, not a table dump),
//! mobility, pawn structure (doubled, isolated, passed with king distance), rooks on open
//! files, king safety (attacks on the king zone, pawn shield), the bishop pair, a tempo bonus,
//! a mop-up term that drives a lone king to the edge, and scaling of pawnless endgames where
//! the extra material cannot win. The one place noise is added is [`add_noise`], which the
//! search applies to its evaluation of a position (`Engine::noisy` in `search.rs`). Every
//! weight comes from a [`Weights`] set (`weights.rs`); the walk over the board
//! ([`accumulate`]) is shared with the tuner through [`Accumulator`].

use shakmaty::attacks;
use shakmaty::{Bitboard, Board, Chess, Color, Position, Role, Square};

use super::noise::Noise;
use super::score::MATE_BOUND;
use super::weights::{self as w, KING_DANGER_MAX, Weights};

/// Game phase weights (knight, bishop, rook, queen) and the phase of the start position.
const PHASE_WEIGHT: [i32; 6] = [0, 1, 1, 2, 4, 0];
pub const MAX_PHASE: i32 = 24;

const FILE_A: u64 = 0x0101_0101_0101_0101;
const FILE_H: u64 = FILE_A << 7;

/// Where the evaluation's terms go: summed with the weights to a score ([`evaluate_with`]),
/// or recorded as counts per weight for the tuner. One walk over the board serves both, so
/// the tuner's view of the evaluation cannot drift from the evaluation.
pub trait Accumulator {
    fn weights(&self) -> &Weights;
    /// `count` times the pair at flat index `index`, for `color`'s side.
    fn add(&mut self, color: Color, index: usize, count: i32);
    /// A piece of `role` (index `Role as usize - 1`) on `relative_square` (from its own side):
    /// its material and piece-square pairs.
    fn piece(&mut self, color: Color, role: usize, relative_square: usize);
}

/// Sums the terms with the weights: (mg, eg), White minus Black.
struct Sum<'a> {
    weights: &'a Weights,
    mg: i32,
    eg: i32,
}

impl Accumulator for Sum<'_> {
    #[inline]
    fn weights(&self) -> &Weights {
        self.weights
    }
    #[inline]
    fn add(&mut self, color: Color, index: usize, count: i32) {
        let [mg, eg] = self.weights.get(index);
        let count = if color == Color::White { count } else { -count };
        self.mg += count * mg;
        self.eg += count * eg;
    }
    #[inline]
    fn piece(&mut self, color: Color, role: usize, relative_square: usize) {
        let [mg, eg] = self.weights.piece_square[role][relative_square];
        if color == Color::White {
            self.mg += mg;
            self.eg += eg;
        } else {
            self.mg -= mg;
            self.eg -= eg;
        }
    }
}

/// The files holding at least one of `pawns`, as an 8-bit set (bit i = file i).
fn file_set(pawns: u64) -> u64 {
    let mut x = pawns;
    x |= x >> 32;
    x |= x >> 16;
    x |= x >> 8;
    x & 0xff
}

/// Squares where a pawn of `color` is not passed: those on or beside the files of the enemy
/// `their_pawns` and behind them (from `color`'s point of view, strictly behind their rank).
fn stoppable(color: Color, their_pawns: u64) -> u64 {
    let mut fill = match color {
        Color::White => their_pawns >> 8,
        Color::Black => their_pawns << 8,
    };
    match color {
        Color::White => {
            fill |= fill >> 8;
            fill |= fill >> 16;
            fill |= fill >> 32;
        }
        Color::Black => {
            fill |= fill << 8;
            fill |= fill << 16;
            fill |= fill << 32;
        }
    }
    fill | ((fill << 1) & !FILE_A) | ((fill >> 1) & !FILE_H)
}

/// `pawns` and every square in front of them, from `color`'s point of view.
fn forward_fill(color: Color, pawns: u64) -> u64 {
    let mut fill = pawns;
    match color {
        Color::White => {
            fill |= fill << 8;
            fill |= fill << 16;
            fill |= fill << 32;
        }
        Color::Black => {
            fill |= fill >> 8;
            fill |= fill >> 16;
            fill |= fill >> 32;
        }
    }
    fill
}

fn pawn_attacks_of(color: Color, pawns: u64) -> u64 {
    match color {
        Color::White => ((pawns << 7) & !FILE_H) | ((pawns << 9) & !FILE_A),
        Color::Black => ((pawns >> 9) & !FILE_H) | ((pawns >> 7) & !FILE_A),
    }
}

/// Square index from the point of view of `color` (rank 0 = its own back rank).
fn relative(color: Color, sq: Square) -> usize {
    match color {
        Color::White => sq as usize,
        Color::Black => sq as usize ^ 56,
    }
}

/// Distance of a file or rank index (0..8) from the two central ones.
const fn edge_distance(i: i32) -> i32 {
    if i < 4 { 3 - i } else { i - 4 }
}

fn manhattan_center(sq: Square) -> i32 {
    edge_distance(sq.file() as i32) + edge_distance(sq.rank() as i32)
}

/// Evaluation of the position for the side to move, in centipawns, with the shipped weights
/// and without noise.
pub fn evaluate(pos: &Chess) -> i32 {
    evaluate_with(pos, &Weights::shipped())
}

/// Evaluation of the position for the side to move, in centipawns, with `weights`.
pub fn evaluate_with(pos: &Chess, weights: &Weights) -> i32 {
    let board = pos.board();
    let mut sum = Sum {
        weights,
        mg: 0,
        eg: 0,
    };
    let phase = accumulate(board, &mut sum);
    let mut score = taper([sum.mg, sum.eg], phase);
    score += mop_up(board);
    if is_drawish(board, score) {
        score /= 4;
    }
    seen_by(pos.turn(), score) + taper(weights.get(w::TEMPO), phase)
}

/// A score from White's view as `side` sees it, and back (the same sign change both ways).
#[inline]
pub fn seen_by(side: Color, score: i32) -> i32 {
    if side == Color::White { score } else { -score }
}

/// A (mg, eg) pair blended by the game phase (`MAX_PHASE` = all pieces on the board).
#[inline]
pub fn taper([mg, eg]: [i32; 2], phase: i32) -> i32 {
    (mg * phase + eg * (MAX_PHASE - phase)) / MAX_PHASE
}

/// Adds the noise draw of the position with `key` to an evaluation. With noise off this is
/// the identity: one predictable test of the scale, nothing else.
#[inline]
pub fn add_noise(eval: i32, key: u64, noise: &Noise) -> i32 {
    if noise.scale_cp > 0.0 {
        (eval + noise.draw_cp(key)).clamp(-MATE_BOUND + 1, MATE_BOUND - 1)
    } else {
        eval
    }
}

/// Walks the board and hands every weighted term of both sides to `acc`; returns the game
/// phase (0 = bare kings and pawns, [`MAX_PHASE`] = all pieces).
pub fn accumulate<A: Accumulator>(board: &Board, acc: &mut A) -> i32 {
    let phase: i32 = Color::ALL
        .into_iter()
        .map(|c| side_terms(board, c, acc))
        .sum();
    phase.min(MAX_PHASE)
}

/// The bitboards every term of one side looks at, computed once.
struct SideView {
    color: Color,
    us: Bitboard,
    them: Bitboard,
    our_pawns: u64,
    their_pawns: u64,
    our_pawn_attacks: u64,
    their_pawn_attacks: u64,
    our_king: Option<Square>,
    their_king: Option<Square>,
}

impl SideView {
    #[inline]
    fn new(board: &Board, color: Color) -> SideView {
        let us = board.by_color(color);
        let them = board.by_color(!color);
        let our_pawns = (board.pawns() & us).0;
        let their_pawns = (board.pawns() & them).0;
        SideView {
            color,
            us,
            them,
            our_pawns,
            their_pawns,
            our_pawn_attacks: pawn_attacks_of(color, our_pawns),
            their_pawn_attacks: pawn_attacks_of(!color, their_pawns),
            our_king: board.king_of(color),
            their_king: board.king_of(!color),
        }
    }
}

/// What the pieces of one side reach, for the threat terms.
struct Reach {
    minor: u64,
    rook: u64,
}

/// All terms of one side; returns its phase contribution.
#[inline]
fn side_terms<A: Accumulator>(board: &Board, color: Color, acc: &mut A) -> i32 {
    let side = SideView::new(board, color);
    let (phase, reach) = piece_terms(board, &side, acc);
    threat_terms(board, &side, &reach, acc);
    if (board.bishops() & side.us).more_than_one() {
        acc.add(color, w::BISHOP_PAIR, 1);
    }
    pawn_terms(board, &side, acc);
    king_shelter_terms(&side, acc);
    phase
}

/// Piece-square values, mobility, outposts, rooks on open files and the attack on the enemy
/// king; returns the side's phase and what its minor pieces and rooks reach.
#[inline]
fn piece_terms<A: Accumulator>(board: &Board, side: &SideView, acc: &mut A) -> (i32, Reach) {
    let color = side.color;
    let occupied = board.occupied();
    let mobility_area = !(side.us.0 | side.their_pawn_attacks);
    let king_zone = side.their_king.map_or(0, |k| {
        (attacks::king_attacks(k) | Bitboard::from_square(k)).0
    });
    // Squares enemy pawns attack now or after advancing: no outpost there.
    let their_pawn_reach = pawn_attacks_of(!color, forward_fill(!color, side.their_pawns));

    let mut phase = 0;
    let mut attack_weight = 0;
    let mut attackers = 0;
    let mut reached = Reach { minor: 0, rook: 0 };

    for (role_index, role) in Role::ALL.into_iter().enumerate() {
        let pieces = board.by_role(role) & side.us;
        phase += PHASE_WEIGHT[role_index] * pieces.count() as i32;
        for sq in pieces {
            acc.piece(color, role_index, relative(color, sq));
            if (1..=4).contains(&role_index) {
                let reach = match role {
                    Role::Knight => attacks::knight_attacks(sq),
                    Role::Bishop => attacks::bishop_attacks(sq, occupied),
                    Role::Rook => attacks::rook_attacks(sq, occupied),
                    _ => attacks::queen_attacks(sq, occupied),
                }
                .0;
                match role {
                    Role::Knight | Role::Bishop => {
                        reached.minor |= reach;
                        let bit = 1u64 << (sq as u32);
                        let rank = relative(color, sq) / 8;
                        if (3..=5).contains(&rank)
                            && bit & side.our_pawn_attacks != 0
                            && bit & their_pawn_reach == 0
                        {
                            acc.add(color, w::OUTPOST + usize::from(role == Role::Bishop), 1);
                        }
                    }
                    Role::Rook => reached.rook |= reach,
                    _ => {}
                }
                let count = (reach & mobility_area).count_ones() as usize;
                acc.add(color, w::MOBILITY[role_index - 1] + count, 1);
                let on_zone = (reach & king_zone).count_ones() as i32;
                if on_zone > 0 {
                    attackers += 1;
                    attack_weight +=
                        acc.weights().get(w::KING_ATTACK_WEIGHT + role_index - 1)[0] * on_zone;
                }
                if role == Role::Rook {
                    let file = FILE_A << (sq as u32 % 8);
                    if file & side.our_pawns == 0 {
                        let half_open = usize::from(file & side.their_pawns != 0);
                        acc.add(color, w::ROOK_FILE + half_open, 1);
                    }
                }
            }
        }
    }
    if attackers >= 2 {
        let danger = (attack_weight.max(0) as usize).min(KING_DANGER_MAX);
        acc.add(color, w::KING_DANGER + danger, 1);
    }
    (phase, reached)
}

/// Threats: enemy pieces our pawns, minor pieces and rooks attack, by the victim.
#[inline]
fn threat_terms<A: Accumulator>(board: &Board, side: &SideView, reach: &Reach, acc: &mut A) {
    for (victim, role) in Role::ALL.into_iter().enumerate().take(5) {
        let victims = (board.by_role(role) & side.them).0;
        for (term, reach) in [
            (w::THREAT_BY_PAWN, side.our_pawn_attacks),
            (w::THREAT_BY_MINOR, reach.minor),
            (w::THREAT_BY_ROOK, reach.rook),
        ] {
            let count = (victims & reach).count_ones() as i32;
            if count > 0 {
                acc.add(side.color, term + victim, count);
            }
        }
    }
}

/// Pawn structure, file by file with bit tricks (one pass instead of one per pawn): doubled,
/// isolated, connected and backward pawns, and passed pawns with the kings' distances.
#[inline]
fn pawn_terms<A: Accumulator>(board: &Board, side: &SideView, acc: &mut A) {
    let (color, our_pawns, their_pawns) = (side.color, side.our_pawns, side.their_pawns);
    let files = file_set(our_pawns);
    let pawn_count = our_pawns.count_ones() as i32;
    let doubled = pawn_count - files.count_ones() as i32;
    let isolated_files = files & !((files << 1) | (files >> 1)) & 0xff;
    let isolated = (our_pawns & (isolated_files * FILE_A)).count_ones() as i32;
    if doubled != 0 {
        acc.add(color, w::PAWN_FAULTS, doubled);
    }
    if isolated != 0 {
        acc.add(color, w::PAWN_FAULTS + 1, isolated);
    }
    let phalanx = ((our_pawns << 1) & !FILE_A) | ((our_pawns >> 1) & !FILE_H);
    for sq in Bitboard(our_pawns & (side.our_pawn_attacks | phalanx)) {
        acc.add(color, w::CONNECTED_PAWN + relative(color, sq) / 8, 1);
    }
    let step = if color == Color::White { 8 } else { -8 };
    // Backward: no pawn of ours on a neighbouring file level with it or behind it (none can
    // come to defend it), and an enemy pawn guards the square in front.
    let defensible = forward_fill(color, our_pawns);
    let defensible = ((defensible << 1) & !FILE_A) | ((defensible >> 1) & !FILE_H);
    let lonely = our_pawns & !defensible;
    let stops = match color {
        Color::White => lonely << 8,
        Color::Black => lonely >> 8,
    };
    let backward = (stops & side.their_pawn_attacks).count_ones() as i32;
    if backward > 0 {
        acc.add(color, w::BACKWARD_PAWN, backward);
    }
    for sq in Bitboard(our_pawns & !stoppable(color, their_pawns)) {
        let rank = relative(color, sq) / 8;
        acc.add(color, w::PASSED + rank, 1);
        if let Some(stop) = sq.offset(step)
            && board.occupied().contains(stop)
        {
            acc.add(color, w::PASSER_BLOCKED + rank, 1);
        }
        // A passer is worth more when the defending king is far from its path.
        if let (Some(stop), Some(ours), Some(theirs)) =
            (sq.offset(step), side.our_king, side.their_king)
        {
            acc.add(
                color,
                w::PASSER_THEIR_KING + rank,
                theirs.distance(stop) as i32,
            );
            acc.add(color, w::PASSER_OUR_KING + rank, ours.distance(stop) as i32);
        }
    }
}

/// Open files at our king (its own file and the neighbours without a pawn of ours) and the
/// pawn shield in front of a king still near its own back rank.
#[inline]
fn king_shelter_terms<A: Accumulator>(side: &SideView, acc: &mut A) {
    let (color, our_pawns) = (side.color, side.our_pawns);
    let Some(k) = side.our_king else {
        return;
    };
    let file = k as u32 % 8;
    let open = (file.saturating_sub(1)..=(file + 1).min(7))
        .filter(|&f| our_pawns & (FILE_A << f) == 0)
        .count();
    if open > 0 {
        acc.add(color, w::KING_OPEN_FILES + open, 1);
    }
    if relative(color, k) / 8 <= 1 {
        let files = (FILE_A << file)
            | ((FILE_A << file << 1) & !FILE_A)
            | ((FILE_A << file >> 1) & !FILE_H);
        let rank = k as u32 / 8;
        let ranks = match color {
            Color::White => (0xffu64 << (8 * (rank + 1))) | (0xffu64 << (8 * (rank + 2))),
            Color::Black => {
                (0xffu64 << (8 * rank.saturating_sub(1)))
                    | (0xffu64 << (8 * rank.saturating_sub(2)))
            }
        };
        let shield = (our_pawns & files & ranks).count_ones().min(3) as i32;
        if shield > 0 {
            acc.add(color, w::SHIELD_PAWN, shield);
        }
    }
}

/// Non-pawn material of a side in exchange units (N=B=3, R=5, Q=9), times 100.
fn piece_material(board: &Board, color: Color) -> i32 {
    let side = board.by_color(color);
    300 * ((board.knights() | board.bishops()) & side).count() as i32
        + 500 * (board.rooks() & side).count() as i32
        + 900 * (board.queens() & side).count() as i32
}

/// Against a lone king, reward pushing it to the edge and bringing our king close: without
/// this a won KQK/KRK ending is a flat score and the search cannot find the way to mate.
/// White's view.
pub fn mop_up(board: &Board) -> i32 {
    for strong in Color::ALL {
        let weak = !strong;
        if board.by_color(weak).count() == 1
            && piece_material(board, strong) >= 500
            && let (Some(sk), Some(wk)) = (board.king_of(strong), board.king_of(weak))
        {
            let bonus = 40 * manhattan_center(wk) + 10 * (14 - manhattan(sk, wk));
            return if strong == Color::White {
                bonus
            } else {
                -bonus
            };
        }
    }
    0
}

/// Whether one side has only its king left against at least a rook's worth: the endings
/// [`mop_up`] drives to mate.
pub fn is_mop_up_ending(board: &Board) -> bool {
    mop_up(board) != 0
}

fn manhattan(a: Square, b: Square) -> i32 {
    (a.file() as i32 - b.file() as i32).abs() + (a.rank() as i32 - b.rank() as i32).abs()
}

/// Without pawns, a side that is not at least a rook's worth ahead rarely wins: the score
/// (White's view) is shrunk to a quarter so the search prefers keeping pawns or trading into
/// winnable endings.
pub fn is_drawish(board: &Board, score: i32) -> bool {
    let strong = if score > 0 {
        Color::White
    } else {
        Color::Black
    };
    if (board.pawns() & board.by_color(strong)).any() {
        return false;
    }
    piece_material(board, strong) - piece_material(board, !strong) < 400
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::CastlingMode;
    use shakmaty::fen::Fen;

    fn eval(fen: &str) -> i32 {
        let pos: Chess = fen
            .parse::<Fen>()
            .unwrap()
            .into_position(CastlingMode::Standard)
            .unwrap();
        evaluate(&pos)
    }

    #[test]
    fn start_position_is_balanced_and_symmetric() {
        let start = eval("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1");
        assert_eq!(start, Weights::shipped().get(w::TEMPO)[0]);
        // Mirrored position with the other side to move evaluates the same.
        let a = eval("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3");
        let b = eval("rnbqkb1r/pppp1ppp/5n2/4p3/4P3/2N5/PPPP1PPP/R1BQKBNR b KQkq - 2 3");
        assert_eq!(a, b);
    }

    #[test]
    fn material_and_mop_up_point_the_right_way() {
        assert!(eval("4k3/8/8/8/8/8/8/3QK3 w - - 0 1") > 800);
        assert!(eval("4k3/8/8/8/8/8/8/3QK3 b - - 0 1") < -800);
        // A cornered lone king is worse for its side than a central one.
        assert!(eval("7k/8/8/8/8/8/8/R3K3 w - - 0 1") > eval("8/8/8/3k4/8/8/8/R3K3 w - - 0 1"));
        // Knight against bare king without pawns: scaled towards a draw.
        assert!(eval("4k3/8/8/8/8/8/8/2N1K3 w - - 0 1") < 100);
    }
}
