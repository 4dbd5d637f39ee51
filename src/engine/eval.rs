//! Static evaluation: tapered between middlegame and endgame by the material on the board.
//!
//! Terms: material, piece-square tables (built from a few geometric rules, not a table dump),
//! mobility, pawn structure (doubled, isolated, passed with king distance), rooks on open
//! files, king safety (attacks on the king zone, pawn shield), the bishop pair, a tempo bonus,
//! a mop-up term that drives a lone king to the edge, and scaling of pawnless endgames where
//! the extra material cannot win. The one place noise is added is [`static_eval`].

use shakmaty::attacks;
use shakmaty::{Bitboard, Board, Chess, Color, Position, Role, Square};

use super::noise::Noise;
use super::score::MATE_BOUND;

/// (middlegame, endgame) material values, indexed by `Role as usize - 1`.
const MATERIAL: [(i32, i32); 6] = [
    (85, 105),
    (320, 300),
    (335, 320),
    (470, 530),
    (980, 980),
    (0, 0),
];

/// Game phase weights (knight, bishop, rook, queen) and the phase of the start position.
const PHASE_WEIGHT: [i32; 6] = [0, 1, 1, 2, 4, 0];
const MAX_PHASE: i32 = 24;

/// Mobility: per reachable square beyond a typical count, (mg, eg), for N, B, R, Q.
const MOBILITY: [(i32, i32, i32); 4] = [(4, 4, 4), (5, 5, 6), (2, 4, 6), (1, 2, 12)];

/// Passed pawn bonus by relative rank (mg, eg).
const PASSED_MG: [i32; 8] = [0, 5, 8, 12, 25, 45, 70, 0];
const PASSED_EG: [i32; 8] = [0, 10, 15, 25, 45, 75, 120, 0];

const DOUBLED: (i32, i32) = (-10, -20);
const ISOLATED: (i32, i32) = (-12, -12);
const ROOK_OPEN: (i32, i32) = (20, 10);
const ROOK_SEMI_OPEN: (i32, i32) = (10, 5);
const BISHOP_PAIR: (i32, i32) = (30, 50);
const SHIELD_PAWN: i32 = 12;
const TEMPO: i32 = 12;
/// King-zone attack weight per attacked square, for N, B, R, Q.
const KING_ATTACK_WEIGHT: [i32; 4] = [2, 2, 3, 5];

const FILE_A: u64 = 0x0101_0101_0101_0101;
const FILE_H: u64 = FILE_A << 7;

/// Distance of a file or rank index (0..8) from the two central ones.
const fn edge_distance(i: i32) -> i32 {
    if i < 4 { 3 - i } else { i - 4 }
}

/// Piece-square value for a white piece of `role` (index 0..6) on `sq`, (mg, eg). Black uses
/// the vertically mirrored square.
const fn pst_entry(role: usize, sq: i32) -> (i32, i32) {
    let file = sq % 8;
    let rank = sq / 8;
    let center = edge_distance(file) + edge_distance(rank); // 0 in the centre, 6 in a corner
    match role {
        // Pawns: advance, and hold the centre early.
        0 => {
            let mg_rank = [0, 0, 2, 6, 12, 25, 45, 0][rank as usize];
            let eg_rank = [0, 0, 5, 10, 20, 35, 60, 0][rank as usize];
            let central = if (file == 3 || file == 4) && (rank == 3 || rank == 4) {
                15
            } else {
                0
            };
            (mg_rank + central, eg_rank)
        }
        // Knights: strongly central, bad on the rim.
        1 => (15 - 8 * center, 10 - 6 * center),
        // Bishops: mildly central.
        2 => (10 - 4 * center, 8 - 3 * center),
        // Rooks: the seventh rank, central files in the middlegame.
        3 => {
            let seventh = if rank == 6 { 20 } else { 0 };
            let central = if file == 3 || file == 4 { 5 } else { 0 };
            (seventh + central, if rank == 6 { 15 } else { 0 })
        }
        // Queens: stay modest early, centralise late.
        4 => (-2 * center, 10 - 4 * center),
        // King: castled corner in the middlegame, the centre in the endgame.
        _ => {
            let mg = match rank {
                0 => [25, 35, 15, 0, 0, 10, 35, 25][file as usize],
                1 => [10, 10, -5, -15, -15, -5, 10, 10][file as usize],
                r => {
                    let v = -25 - 15 * (r - 2);
                    if v < -70 { -70 } else { v }
                }
            };
            (mg, 30 - 10 * center)
        }
    }
}

const fn build_pst() -> [[(i32, i32); 64]; 6] {
    let mut table = [[(0, 0); 64]; 6];
    let mut role = 0;
    while role < 6 {
        let mut sq = 0;
        while sq < 64 {
            let (mg, eg) = pst_entry(role, sq as i32);
            table[role][sq] = (mg + MATERIAL[role].0, eg + MATERIAL[role].1);
            sq += 1;
        }
        role += 1;
    }
    table
}

/// Material plus piece-square values, white's point of view, (mg, eg).
static PST: [[(i32, i32); 64]; 6] = build_pst();

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

fn manhattan_center(sq: Square) -> i32 {
    edge_distance(sq.file() as i32) + edge_distance(sq.rank() as i32)
}

/// Evaluation of the position for the side to move, in centipawns, without noise.
pub fn evaluate(pos: &Chess) -> i32 {
    let board = pos.board();
    let mut mg = 0;
    let mut eg = 0;
    let mut phase = 0;
    for color in Color::ALL {
        let sign = if color == Color::White { 1 } else { -1 };
        let (m, e, p) = side_terms(board, color);
        mg += sign * m;
        eg += sign * e;
        phase += p;
    }
    let phase = phase.min(MAX_PHASE);
    let mut score = (mg * phase + eg * (MAX_PHASE - phase)) / MAX_PHASE;
    score += mop_up(board);
    score = scale_drawish(board, score);
    let stm = if pos.turn() == Color::White {
        score
    } else {
        -score
    };
    stm + TEMPO * phase / MAX_PHASE
}

/// The static evaluation the search uses: [`evaluate`] plus this position's noise draw.
pub fn static_eval(pos: &Chess, key: u64, noise: &Noise) -> i32 {
    add_noise(evaluate(pos), key, noise)
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

/// All terms of one side, from white's point of view sign-free: (mg, eg, phase contribution).
fn side_terms(board: &Board, color: Color) -> (i32, i32, i32) {
    let us = board.by_color(color);
    let them = board.by_color(!color);
    let occupied = board.occupied();
    let our_pawns = (board.pawns() & us).0;
    let their_pawns = (board.pawns() & them).0;
    let their_pawn_attacks = pawn_attacks_of(!color, their_pawns);
    let mobility_area = !(us.0 | their_pawn_attacks);
    let their_king = board.king_of(!color);
    let king_zone = their_king.map_or(0, |k| {
        (attacks::king_attacks(k) | Bitboard::from_square(k)).0
    });

    let mut mg = 0;
    let mut eg = 0;
    let mut phase = 0;
    let mut attack_weight = 0;
    let mut attackers = 0;

    for (role_index, role) in Role::ALL.into_iter().enumerate() {
        let pieces = board.by_role(role) & us;
        phase += PHASE_WEIGHT[role_index] * pieces.count() as i32;
        for sq in pieces {
            let (m, e) = PST[role_index][relative(color, sq)];
            mg += m;
            eg += e;
            if (1..=4).contains(&role_index) {
                let reach = match role {
                    Role::Knight => attacks::knight_attacks(sq),
                    Role::Bishop => attacks::bishop_attacks(sq, occupied),
                    Role::Rook => attacks::rook_attacks(sq, occupied),
                    _ => attacks::queen_attacks(sq, occupied),
                }
                .0;
                let (wm, we, base) = MOBILITY[role_index - 1];
                let count = (reach & mobility_area).count_ones() as i32 - base;
                mg += wm * count;
                eg += we * count;
                let on_zone = (reach & king_zone).count_ones() as i32;
                if on_zone > 0 {
                    attackers += 1;
                    attack_weight += KING_ATTACK_WEIGHT[role_index - 1] * on_zone;
                }
                if role == Role::Rook {
                    let file = FILE_A << (sq as u32 % 8);
                    if file & our_pawns == 0 {
                        let (om, oe) = if file & their_pawns == 0 {
                            ROOK_OPEN
                        } else {
                            ROOK_SEMI_OPEN
                        };
                        mg += om;
                        eg += oe;
                    }
                }
            }
        }
    }

    if attackers >= 2 {
        mg += (attack_weight * attack_weight / 2).min(500);
    }

    if (board.bishops() & us).more_than_one() {
        mg += BISHOP_PAIR.0;
        eg += BISHOP_PAIR.1;
    }

    // Pawn structure, file by file with bit tricks: one pass instead of one per pawn.
    let our_king = board.king_of(color);
    let files = file_set(our_pawns);
    let pawn_count = our_pawns.count_ones() as i32;
    let doubled = pawn_count - files.count_ones() as i32;
    let isolated_files = files & !((files << 1) | (files >> 1)) & 0xff;
    let isolated = (our_pawns & (isolated_files * FILE_A)).count_ones() as i32;
    mg += DOUBLED.0 * doubled + ISOLATED.0 * isolated;
    eg += DOUBLED.1 * doubled + ISOLATED.1 * isolated;
    for sq in Bitboard(our_pawns & !stoppable(color, their_pawns)) {
        let rank = relative(color, sq) / 8;
        mg += PASSED_MG[rank];
        eg += PASSED_EG[rank];
        // A passer is worth more when the defending king is far from its path.
        let step = if color == Color::White { 8 } else { -8 };
        if let (Some(stop), Some(ours), Some(theirs)) = (sq.offset(step), our_king, their_king) {
            let weight = rank as i32 - 1;
            eg += weight * (4 * theirs.distance(stop) as i32 - 2 * ours.distance(stop) as i32);
        }
    }

    // Pawn shield in front of a king still near its own back rank.
    if let Some(k) = our_king {
        let rel = relative(color, k);
        if rel / 8 <= 1 {
            let file = k as u32 % 8;
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
            mg += SHIELD_PAWN * shield;
        }
    }

    (mg, eg, phase)
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
fn mop_up(board: &Board) -> i32 {
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

fn manhattan(a: Square, b: Square) -> i32 {
    (a.file() as i32 - b.file() as i32).abs() + (a.rank() as i32 - b.rank() as i32).abs()
}

/// Without pawns, a side that is not at least a rook's worth ahead rarely wins: shrink the
/// score so the search prefers keeping pawns or trading into winnable endings.
fn scale_drawish(board: &Board, score: i32) -> i32 {
    let strong = if score > 0 {
        Color::White
    } else {
        Color::Black
    };
    if (board.pawns() & board.by_color(strong)).any() {
        return score;
    }
    let margin = piece_material(board, strong) - piece_material(board, !strong);
    if margin < 400 { score / 4 } else { score }
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
        assert_eq!(start, TEMPO);
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
