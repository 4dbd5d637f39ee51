//! Data for the trainer's tests: positions from seeded random games, labelled with their
//! material balance, a known evaluation the network must learn.

use shakmaty::{Chess, Position, Role};

use super::data::{Data, sigmoid};
use crate::seed::SplitMix;

/// The material balance of `position` for the side to move, centipawns (P 100, N/B 300,
/// R 500, Q 900).
pub fn material_cp(position: &Chess) -> i32 {
    let value = |role: Role| match role {
        Role::Pawn => 100,
        Role::Knight | Role::Bishop => 300,
        Role::Rook => 500,
        Role::Queen => 900,
        Role::King => 0,
    };
    let us = position.turn();
    position
        .board()
        .iter()
        .map(|(_, piece)| {
            let v = value(piece.role);
            if piece.color == us { v } else { -v }
        })
        .sum()
}

/// `count` positions from random games (10 to 90 plies from the start), drawn from `seed`.
pub fn random_positions(count: usize, seed: u64) -> Vec<Chess> {
    let mut rng = SplitMix::new(seed);
    let mut positions = Vec::with_capacity(count);
    while positions.len() < count {
        let mut pos = Chess::default();
        let plies = 10 + rng.next_u64() % 80;
        for _ in 0..plies {
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            // Captures first, half of the time: material changes hands more often.
            let captures: Vec<_> = moves.iter().filter(|m| m.is_capture()).collect();
            let m = if !captures.is_empty() && rng.next_u64().is_multiple_of(2) {
                *captures[(rng.next_u64() % captures.len() as u64) as usize]
            } else {
                moves[(rng.next_u64() % moves.len() as u64) as usize]
            };
            pos.play_unchecked(m);
        }
        if !pos.legal_moves().is_empty() {
            positions.push(pos);
        }
    }
    positions
}

/// Training and validation positions labelled σ(material / 400); every fifth one held out.
pub fn material_data(count: usize, seed: u64) -> Data {
    let mut data = Data::default();
    for (i, pos) in random_positions(count, seed).iter().enumerate() {
        let label = sigmoid(material_cp(pos) as f32 / 400.0);
        let part = if i % 5 == 4 {
            &mut data.validation
        } else {
            &mut data.train
        };
        part.push(pos, label).unwrap();
    }
    data.games = count as u64;
    data
}
