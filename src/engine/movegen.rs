//! Captures and queen promotions for quiescence, generated straight from bitboards.
//!
//! shakmaty's `capture_moves` generates every legal move and filters; quiescence visits most
//! of the search's nodes, so it gets its own generator. Only for positions NOT in check (the
//! search generates full evasions there). Legality is settled cheaply: a pinned piece must stay
//! on the line through its king, the king may not capture onto an attacked square, and the rare
//! en passant capture is left to shakmaty (which checks its discovered-check cases).

use shakmaty::attacks;
use shakmaty::{Bitboard, Chess, Color, Move, MoveList, Position, Role};

/// Our pieces that are the only piece between our king and an enemy slider.
pub fn pinned(pos: &Chess, us: Color, king: shakmaty::Square) -> Bitboard {
    let board = pos.board();
    let occupied = board.occupied();
    let them = board.by_color(!us);
    let snipers = ((attacks::rook_attacks(king, Bitboard::EMPTY) & board.rooks_and_queens())
        | (attacks::bishop_attacks(king, Bitboard::EMPTY) & board.bishops_and_queens()))
        & them;
    let mut pinned = Bitboard::EMPTY;
    for sniper in snipers {
        let between = attacks::between(king, sniper) & occupied;
        if !between.more_than_one() {
            pinned |= between & board.by_color(us);
        }
    }
    pinned
}

/// Appends the legal captures (including en passant) and queen promotions (capturing or not)
/// of a position whose side to move is not in check. Under-promotions are left out:
/// quiescence only needs the moves that change the material most.
pub fn captures_and_promotions(pos: &Chess, out: &mut MoveList) {
    let board = pos.board();
    let us = pos.turn();
    let Some(king) = board.king_of(us) else {
        return;
    };
    debug_assert!(
        !pos.is_check(),
        "captures_and_promotions needs a position not in check"
    );
    let occupied = board.occupied();
    let ours = board.by_color(us);
    let theirs = board.by_color(!us);
    let pinned = pinned(pos, us, king);
    let legal = |from, to| !pinned.contains(from) || attacks::aligned(from, to, king);
    let backrank = Bitboard::BACKRANKS;

    // Pawns: captures (promoting to a queen on the last rank) and pushes onto the last rank.
    for from in board.pawns() & ours {
        for to in attacks::pawn_attacks(us, from) & theirs {
            if legal(from, to) {
                out.push(Move::Normal {
                    role: Role::Pawn,
                    from,
                    capture: board.role_at(to),
                    to,
                    promotion: backrank.contains(to).then_some(Role::Queen),
                });
            }
        }
        let push = if us == Color::White {
            from.offset(8)
        } else {
            from.offset(-8)
        };
        if let Some(to) = push
            && backrank.contains(to)
            && !occupied.contains(to)
            && legal(from, to)
        {
            out.push(Move::Normal {
                role: Role::Pawn,
                from,
                capture: None,
                to,
                promotion: Some(Role::Queen),
            });
        }
    }

    for role in [Role::Knight, Role::Bishop, Role::Rook, Role::Queen] {
        for from in board.by_role(role) & ours {
            let targets = match role {
                Role::Knight => attacks::knight_attacks(from),
                Role::Bishop => attacks::bishop_attacks(from, occupied),
                Role::Rook => attacks::rook_attacks(from, occupied),
                _ => attacks::queen_attacks(from, occupied),
            } & theirs;
            for to in targets {
                if legal(from, to) {
                    out.push(Move::Normal {
                        role,
                        from,
                        capture: board.role_at(to),
                        to,
                        promotion: None,
                    });
                }
            }
        }
    }

    for to in attacks::king_attacks(king) & theirs {
        // The king's own square is vacated so a slider behind it still sees the target.
        if board.attacks_to(to, !us, occupied.without(king)).is_empty() {
            out.push(Move::Normal {
                role: Role::King,
                from: king,
                capture: board.role_at(to),
                to,
                promotion: None,
            });
        }
    }

    if pos.maybe_ep_square().is_some() {
        for m in pos.en_passant_moves() {
            out.push(m);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::fen::Fen;

    fn position(fen: &str) -> Chess {
        let game = crate::engine::Game::new(Some(fen), true).expect("a valid FEN");
        game.position().clone()
    }

    fn sorted(moves: impl IntoIterator<Item = Move>) -> Vec<String> {
        let mut v: Vec<String> = moves.into_iter().map(|m| format!("{m:?}")).collect();
        v.sort();
        v
    }

    /// Compares with shakmaty's legal move list over every position two plies deep from
    /// positions rich in pins, promotions and en passant.
    #[test]
    fn agrees_with_filtered_legal_moves() {
        let fens = [
            "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
            "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
            "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",
            "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8",
            "r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10",
            "8/8/8/2k5/3Pp3/8/8/4K2Q b - d3 0 1",
            "4k3/8/8/K2pP2r/8/8/8/8 w - d6 0 1",
        ];
        let mut checked = 0;
        for fen in fens {
            let root = position(fen);
            let mut todo = vec![root.clone()];
            for m in root.legal_moves() {
                let mut child = root.clone();
                child.play_unchecked(m);
                for m2 in child.legal_moves() {
                    let mut grandchild = child.clone();
                    grandchild.play_unchecked(m2);
                    todo.push(grandchild);
                }
                todo.push(child);
            }
            for pos in todo.into_iter().filter(|p| !p.is_check()) {
                let mut ours = MoveList::new();
                captures_and_promotions(&pos, &mut ours);
                let expected = pos.legal_moves().into_iter().filter(|m| {
                    matches!(m.promotion(), None | Some(Role::Queen))
                        && (m.is_capture() || m.is_promotion())
                });
                assert_eq!(
                    sorted(ours),
                    sorted(expected),
                    "{}",
                    Fen::from_position(&pos, shakmaty::EnPassantMode::Legal)
                );
                checked += 1;
            }
        }
        assert!(checked > 1000, "{checked}");
    }
}
