//! Static exchange evaluation: the material balance of the capture sequence on one square,
//! each side recapturing with its least valuable attacker and free to stop.

use shakmaty::{Bitboard, Board, Color, Move, Role};

/// Exchange values (centipawns); the king is worth more than any exchange can win.
pub const fn see_value(role: Role) -> i32 {
    match role {
        Role::Pawn => 100,
        Role::Knight => 320,
        Role::Bishop => 330,
        Role::Rook => 500,
        Role::Queen => 950,
        Role::King => 20_000,
    }
}

/// The material the side making `m` expects to gain (negative: lose) by the exchange on the
/// target square. Castling scores 0; en passant counts the pawn taken.
pub fn see(board: &Board, us: Color, m: Move) -> i32 {
    let (from, to, role) = match m {
        Move::Normal { from, to, role, .. } => (from, to, role),
        Move::EnPassant { .. } => return 0,
        _ => return 0,
    };
    let mut gain = [0i32; 34];
    gain[0] = m.capture().map_or(0, see_value);
    let mut on_square = match m.promotion() {
        Some(p) => {
            gain[0] += see_value(p) - see_value(Role::Pawn);
            see_value(p)
        }
        None => see_value(role),
    };
    let mut occupied = board.occupied().without(from);
    let mut side = !us;
    let mut depth = 0;
    loop {
        let attackers = board.attacks_to(to, side, occupied) & occupied;
        let Some((square, value)) = least_valuable(board, attackers) else {
            break;
        };
        depth += 1;
        gain[depth] = on_square - gain[depth - 1];
        // Neither side can improve by continuing: stop early.
        if (-gain[depth - 1]).max(gain[depth]) < 0 || depth == gain.len() - 1 {
            break;
        }
        occupied = occupied.without(square);
        on_square = value;
        side = !side;
    }
    // Unwind: each side takes the better of standing pat and continuing the exchange.
    while depth > 0 {
        gain[depth - 1] = -(-gain[depth - 1]).max(gain[depth]);
        depth -= 1;
    }
    gain[0]
}

/// Whether `m` does not lose material by the exchange (SEE ≥ 0).
#[inline]
pub fn see_non_negative(board: &Board, us: Color, m: Move) -> bool {
    see_at_least(board, us, m, 0)
}

/// Whether the exchange `m` starts gains at least `threshold` (a negative threshold: loses at
/// most that much). Taking a piece worth at least the capturer never loses, which settles most
/// captures against a threshold at or below zero without the exchange loop.
#[inline]
pub fn see_at_least(board: &Board, us: Color, m: Move, threshold: i32) -> bool {
    if threshold <= 0
        && let Move::Normal {
            role,
            capture: Some(victim),
            ..
        } = m
        && see_value(victim) >= see_value(role)
    {
        return true;
    }
    see(board, us, m) >= threshold
}

fn least_valuable(board: &Board, attackers: Bitboard) -> Option<(shakmaty::Square, i32)> {
    if attackers.is_empty() {
        return None;
    }
    for role in Role::ALL {
        if let Some(square) = (attackers & board.by_role(role)).first() {
            return Some((square, see_value(role)));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::fen::Fen;
    use shakmaty::uci::UciMove;
    use shakmaty::{CastlingMode, Chess, Position};

    fn see_of(fen: &str, uci: &str) -> i32 {
        let pos: Chess = fen
            .parse::<Fen>()
            .unwrap()
            .into_position(CastlingMode::Standard)
            .unwrap();
        let m = uci.parse::<UciMove>().unwrap().to_move(&pos).unwrap();
        see(pos.board(), pos.turn(), m)
    }

    #[test]
    fn exchanges() {
        // Pawn takes an undefended knight.
        assert_eq!(see_of("4k3/8/8/3n4/4P3/8/8/4K3 w - - 0 1", "e4d5"), 320);
        // Queen takes a pawn defended by a pawn: loses the queen for a pawn.
        assert_eq!(
            see_of("4k3/8/2p5/3p4/8/8/3Q4/4K3 w - - 0 1", "d2d5"),
            100 - 950
        );
        // Rook takes a rook defended by a rook, backed by our second rook (x-ray): rook for rook.
        assert_eq!(see_of("3rk3/8/8/3r4/8/8/3R4/3RK3 w - - 0 1", "d2d5"), 500);
        // Knight takes a pawn defended by a bishop: loses the knight for a pawn.
        assert_eq!(
            see_of("4k3/8/5b2/4p3/8/3N4/8/4K3 w - - 0 1", "d3e5"),
            100 - 320
        );
    }

    #[test]
    fn a_threshold_test_agrees_with_the_exchange_it_stands_for() {
        // Every legal move of a few busy positions, against thresholds around its exchange:
        // the shortcut for captures of bigger pieces must never answer differently.
        for fen in [
            "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4",
            "3rk3/8/2p5/3r4/4P3/3N4/3R4/3RK3 w - - 0 1",
            "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
        ] {
            let pos: Chess = fen
                .parse::<Fen>()
                .unwrap()
                .into_position(CastlingMode::Standard)
                .unwrap();
            for m in pos.legal_moves() {
                let exact = see(pos.board(), pos.turn(), m);
                for threshold in [-500, -100, -1, 0, 1, 100, exact - 1, exact, exact + 1] {
                    assert_eq!(
                        see_at_least(pos.board(), pos.turn(), m, threshold),
                        exact >= threshold,
                        "{fen} {m:?} threshold {threshold}"
                    );
                }
            }
        }
    }
}
