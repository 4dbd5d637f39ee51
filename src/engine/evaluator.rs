//! Which static evaluation a search uses, and the state it keeps along the search path.
//!
//! An [`Evaluator`] is the engine's choice: the hand-crafted evaluation with a set of
//! [`Weights`], or a [`Network`]. The network keeps the hand-crafted evaluation's endgame
//! knowledge that a search cannot find in time by itself (`eval.rs`): against a lone king the
//! hand-crafted evaluation decides, mop-up included, so a won KQK or KRK is mated (the network's
//! own square preferences there drown the mop-up: measured, KRK ran into the 50-move rule), and
//! pawnless endings without a rook's worth more are quartered, as they are rarely won. A
//! [`PathEvaluation`] is one search's view of it: for the network, one accumulator per ply of
//! the current path, each its parent's after the move between them, so a node's evaluation
//! never walks the board.

use std::sync::{Arc, LazyLock};

use shakmaty::{Chess, Move, Position};

use super::eval::{evaluate, evaluate_with, is_drawish, is_mop_up_ending, seen_by};
use super::nnue::{Accumulator, MoveFeatures, Network};
use super::score::{MATE_BOUND, MAX_PLY};
use super::weights::Weights;

/// The newest network compiled into the binary.
pub const SHIPPED_NETWORK: u32 = 7;

static NETWORK_1: LazyLock<Arc<Network>> =
    LazyLock::new(|| built_in(include_bytes!("nnue/network-1.nnue")));
static NETWORK_2: LazyLock<Arc<Network>> =
    LazyLock::new(|| built_in(include_bytes!("nnue/network-2.nnue")));
static NETWORK_3: LazyLock<Arc<Network>> =
    LazyLock::new(|| built_in(include_bytes!("nnue/network-3.nnue")));
static NETWORK_4: LazyLock<Arc<Network>> =
    LazyLock::new(|| built_in(include_bytes!("nnue/network-4.nnue")));
static NETWORK_5: LazyLock<Arc<Network>> =
    LazyLock::new(|| built_in(include_bytes!("nnue/network-5.nnue")));
static NETWORK_6: LazyLock<Arc<Network>> =
    LazyLock::new(|| built_in(include_bytes!("nnue/network-6.nnue")));
static NETWORK_7: LazyLock<Arc<Network>> =
    LazyLock::new(|| built_in(include_bytes!("nnue/network-7.nnue")));

fn built_in(bytes: &[u8]) -> Arc<Network> {
    // A broken built-in file is a build mistake that the tests catch.
    Arc::new(Network::from_bytes(bytes).unwrap_or_else(|e| panic!("built-in network: {e}")))
}

/// The network of a version compiled into the binary: 1 the first (`network-1.nnue`,
/// (768→64)×2), 2 the second (`network-2.nnue`, (768→128)×2, trained with the mirror), 3 the
/// third (`network-3.nnue`, the same shape on 2.97M positions, the label mostly the search's
/// score: the first to beat the hand-crafted evaluation), 4 the fourth (`network-4.nnue`, the
/// same on 3.9M positions, net-gen2's games of network 3 among them), 5 the fifth
/// (`network-5.nnue`, (768→256)×2 on net-gen2 alone: network 3's own games), 6 the sixth
/// (`network-6.nnue`, the same shape on net-gen2 and net-gen3: network 5's games too; the
/// first whose gain over its predecessor was measured outside self-play), 7 the seventh
/// (`network-7.nnue`, the same shape and recipe on net-gen2, net-gen3 and net-gen4: network 6's
/// games too); see
/// docs/tuning/network.md for their data and training. `None` for 0 (no network) or any other.
pub fn network_of_version(version: u32) -> Option<Arc<Network>> {
    match version {
        1 => Some(NETWORK_1.clone()),
        2 => Some(NETWORK_2.clone()),
        3 => Some(NETWORK_3.clone()),
        4 => Some(NETWORK_4.clone()),
        5 => Some(NETWORK_5.clone()),
        6 => Some(NETWORK_6.clone()),
        7 => Some(NETWORK_7.clone()),
        _ => None,
    }
}

/// The static evaluation an engine searches with.
#[derive(Clone, Debug)]
pub enum Evaluator {
    /// The hand-crafted evaluation (`eval.rs`) with these weights.
    Classical(Arc<Weights>),
    /// A network (`nnue`), with the hand-crafted endgame knowledge above.
    Network(Arc<Network>),
}

impl Evaluator {
    /// The shipped hand-crafted evaluation: what an engine uses unless told otherwise.
    pub fn shipped() -> Evaluator {
        Evaluator::Classical(Weights::shipped())
    }

    /// The hand-crafted evaluation with weights `weights` (0, 1, 2, ...) when `network` is 0,
    /// otherwise network version `network`; `None` when either names nothing this build has.
    pub fn of_versions(weights: u32, network: u32) -> Option<Evaluator> {
        if network == 0 {
            Weights::of_version(weights).map(Evaluator::Classical)
        } else {
            network_of_version(network).map(Evaluator::Network)
        }
    }

    /// The evaluation of `pos` for the side to move, in centipawns, from scratch.
    pub fn evaluate(&self, pos: &Chess) -> i32 {
        match self {
            Evaluator::Classical(weights) => evaluate_with(pos, weights),
            Evaluator::Network(network) => {
                let mut accumulator = Accumulator::new(network);
                accumulator.refresh(network, pos.board());
                network_score(network, &accumulator, pos)
            }
        }
    }
}

/// The same evaluation: the same weights or network (the built-in ones are shared, so this is
/// mostly a pointer comparison).
impl PartialEq for Evaluator {
    fn eq(&self, other: &Evaluator) -> bool {
        match (self, other) {
            (Evaluator::Classical(a), Evaluator::Classical(b)) => Arc::ptr_eq(a, b) || a == b,
            (Evaluator::Network(a), Evaluator::Network(b)) => Arc::ptr_eq(a, b) || a == b,
            _ => false,
        }
    }
}

/// One search's evaluation: the evaluator, and for a network the accumulators of the path.
pub(crate) enum PathEvaluation<'a> {
    Classical(&'a Weights),
    Network {
        network: &'a Network,
        /// `path[ply]` is the accumulator of the node at `ply` of the current path.
        path: Vec<Accumulator>,
    },
}

impl<'a> PathEvaluation<'a> {
    /// A search from `root` (ply 0).
    pub fn new(evaluator: &'a Evaluator, root: &Chess) -> PathEvaluation<'a> {
        match evaluator {
            Evaluator::Classical(weights) => PathEvaluation::Classical(weights),
            Evaluator::Network(network) => {
                let mut path = vec![Accumulator::new(network); MAX_PLY + 2];
                path[0].refresh(network, root.board());
                PathEvaluation::Network { network, path }
            }
        }
    }

    /// The node at `ply + 1` is the node at `ply` (position `parent`) after `m`, or after a
    /// null move when `m` is `None`.
    #[inline]
    pub fn push(&mut self, ply: usize, parent: &Chess, m: Option<Move>) {
        if let PathEvaluation::Network { network, path } = self {
            let (done, rest) = path.split_at_mut(ply + 1);
            let child = &mut rest[0];
            match m {
                Some(m) => child.apply_from(&done[ply], network, &MoveFeatures::of(parent, m)),
                None => child.clone_from(&done[ply]),
            }
        }
    }

    /// The evaluation of `pos`, the node at `ply` of the path, for the side to move.
    #[inline]
    pub fn evaluate(&self, pos: &Chess, ply: usize) -> i32 {
        match self {
            PathEvaluation::Classical(weights) => evaluate_with(pos, weights),
            PathEvaluation::Network { network, path } => network_score(network, &path[ply], pos),
        }
    }
}

/// The network's score with the hand-crafted endgame knowledge, for the side to move.
fn network_score(network: &Network, accumulator: &Accumulator, pos: &Chess) -> i32 {
    let board = pos.board();
    if is_mop_up_ending(board) {
        return evaluate(pos);
    }
    let mut white = seen_by(
        pos.turn(),
        accumulator.evaluate(network, pos.turn(), board.occupied().count()),
    );
    if is_drawish(board, white) {
        white /= 4;
    }
    // Far from any real score, but never a mate score.
    seen_by(pos.turn(), white).clamp(-MATE_BOUND / 2, MATE_BOUND / 2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::position::position_of as position;

    #[test]
    fn every_version_the_coefficients_may_name_is_built_in() {
        assert!(network_of_version(0).is_none());
        assert!(network_of_version(SHIPPED_NETWORK + 1).is_none());
        for version in 1..=SHIPPED_NETWORK {
            let evaluator = Evaluator::of_versions(2, version).expect("built in");
            assert!(matches!(evaluator, Evaluator::Network(_)));
        }
        assert!(matches!(
            Evaluator::of_versions(2, 0),
            Some(Evaluator::Classical(_))
        ));
        assert!(Evaluator::of_versions(99, 0).is_none());
    }

    #[test]
    fn the_shipped_network_knows_material_and_whose_move_it_is() {
        let evaluator = Evaluator::of_versions(2, SHIPPED_NETWORK).unwrap();
        let start = Chess::default();
        assert!(evaluator.evaluate(&start).abs() < 100, "start position");
        // White a queen up, either side to move: the scores mirror.
        let white = position("rnb1kbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1");
        let black = position("rnb1kbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR b KQkq - 0 1");
        assert!(evaluator.evaluate(&white) > 400, "a queen up");
        assert!(evaluator.evaluate(&black) < -400, "a queen down");
    }

    #[test]
    fn the_path_follows_moves_and_null_moves_like_a_fresh_evaluation() {
        let evaluator = Evaluator::of_versions(2, SHIPPED_NETWORK).unwrap();
        let mut pos = position("r3k2r/1P4P1/8/3pP3/8/8/1p4p1/R3K2R w KQkq d6 0 1");
        let mut path = PathEvaluation::new(&evaluator, &pos);
        let mut rng = crate::seed::SplitMix::new(5);
        for ply in 0..60 {
            assert_eq!(
                path.evaluate(&pos, ply),
                evaluator.evaluate(&pos),
                "ply {ply}"
            );
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            if ply % 7 == 3 && !pos.is_check() {
                path.push(ply, &pos, None);
                pos = pos.swap_turn().unwrap();
                continue;
            }
            let m = moves[(rng.next_u64() % moves.len() as u64) as usize];
            path.push(ply, &pos, Some(m));
            pos.play_unchecked(m);
        }
    }
}
