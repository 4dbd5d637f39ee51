//! Missed threats: the weakest levels sometimes judge a candidate move without looking at the
//! opponent's replies, as a beginner who moves a piece without asking what it now leaves
//! attacked. The decision is a pure function of (seed, game ply, move), so a game replays
//! exactly from its seed, while a position reached again later in the game gets fresh draws
//! (a repeated misjudgement is what makes a weak side walk in circles).

use shakmaty::Move;

use super::movepack::PackedMove;

use crate::seed::mix64;

/// Per-move chance that a root move is judged "blind": by the static evaluation of the
/// position it leads to, with no look at the opponent's answers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Blindness {
    /// Probability in [0, 1]; 0 disables it (the search is then exactly the sighted one).
    pub probability: f64,
    pub seed: u64,
}

impl Blindness {
    pub const NONE: Blindness = Blindness {
        probability: 0.0,
        seed: 0,
    };

    pub fn is_active(&self) -> bool {
        self.probability > 0.0
    }

    /// Whether root move `m` at game ply `ply` (moves played so far) is judged blind.
    pub fn is_blind(&self, ply: usize, m: Move) -> bool {
        if !self.is_active() {
            return false;
        }
        let packed = u64::from(PackedMove::new(m).raw());
        let bits = mix64(
            mix64(self.seed ^ 0x6a09_e667_f3bc_c908)
                ^ mix64((ply as u64) << 16 | packed).wrapping_add(0xbb67_ae85_84ca_a73b),
        );
        let u = (bits >> 11) as f64 / (1u64 << 53) as f64;
        u < self.probability
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Game;

    #[test]
    fn rate_follows_the_probability_and_draws_are_reproducible() {
        let game = Game::startpos();
        let moves: Vec<Move> = game.legal_moves().into_iter().collect();
        for p in [0.0, 0.1, 0.5, 0.9] {
            let blind = Blindness {
                probability: p,
                seed: 42,
            };
            let n = 200 * moves.len();
            let hits = (0..200)
                .flat_map(|ply| moves.iter().map(move |&m| (ply, m)))
                .filter(|&(ply, m)| blind.is_blind(ply, m))
                .count();
            let rate = hits as f64 / n as f64;
            assert!((rate - p).abs() < 0.03, "p {p}: rate {rate}");
            assert!(
                moves
                    .iter()
                    .all(|&m| blind.is_blind(7, m) == blind.is_blind(7, m))
            );
        }
        // Another ply or another seed gives other draws.
        let a = Blindness {
            probability: 0.5,
            seed: 1,
        };
        let b = Blindness { seed: 2, ..a };
        let differ = |f: &dyn Fn(&Move) -> bool| moves.iter().filter(|m| f(m)).count();
        assert!(differ(&|&m| a.is_blind(3, m) != b.is_blind(3, m)) > 2);
        assert!(differ(&|&m| a.is_blind(3, m) != a.is_blind(5, m)) > 2);
    }
}
