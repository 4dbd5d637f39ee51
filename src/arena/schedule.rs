//! Who plays whom, with which opening and colour, in which order: round robin or gauntlet,
//! every opening with both colours, each game's seed derived from the match seed and the game
//! index, and a deterministic split of the schedule over machines (`--shard i/n`, dealt in turn).

pub use crate::shard::Shard;

use crate::seed::splitmix64;

/// How players are paired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Everyone plays everyone.
    RoundRobin,
    /// Every player of the first group plays every player of the second group; with an empty
    /// second group, the first player plays all others.
    Gauntlet,
}

/// One game of the schedule. `index` is its position in the whole (unsharded) schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScheduledGame {
    pub index: usize,
    pub white: usize,
    pub black: usize,
    pub opening: usize,
    pub seed: u64,
}

/// The pairings (a, b) between player indices. `first_group` players are 0..first_group; the
/// others form the second group.
pub fn pairings(format: Format, players: usize, first_group: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    match format {
        Format::RoundRobin => {
            for a in 0..players {
                for b in a + 1..players {
                    out.push((a, b));
                }
            }
        }
        Format::Gauntlet if first_group == 0 || first_group >= players => {
            for b in 1..players {
                out.push((0, b));
            }
        }
        Format::Gauntlet => {
            for a in 0..first_group {
                for b in first_group..players {
                    out.push((a, b));
                }
            }
        }
    }
    out
}

/// The whole schedule: `games_per_pairing` games for every pairing, game k of a pairing playing
/// opening k/2 (in an order shuffled by the seed) with colours swapped between k even and odd.
/// Games are ordered round by round so an interrupted match still covers every pairing.
pub fn schedule(
    pairings: &[(usize, usize)],
    openings: usize,
    games_per_pairing: usize,
    match_seed: u64,
) -> Vec<ScheduledGame> {
    let order = shuffled(openings, match_seed);
    let mut out = Vec::with_capacity(pairings.len() * games_per_pairing);
    for k in 0..games_per_pairing {
        for &(a, b) in pairings {
            let index = out.len();
            let (white, black) = if k % 2 == 0 { (a, b) } else { (b, a) };
            out.push(ScheduledGame {
                index,
                white,
                black,
                opening: order[(k / 2) % openings.max(1)],
                seed: game_seed(match_seed, index),
            });
        }
    }
    out
}

/// The games of one shard.
pub fn shard(games: Vec<ScheduledGame>, shard: Shard) -> Vec<ScheduledGame> {
    games
        .into_iter()
        .filter(|g| shard.deals(g.index as u64))
        .collect()
}

/// The seed of game `index` of a match.
pub fn game_seed(match_seed: u64, index: usize) -> u64 {
    splitmix64(match_seed ^ splitmix64(index as u64 ^ 0xa4e7_1c0d_2b39_f58e))
}

/// A second, independent seed derived from `seed` (e.g. one per colour in a game).
pub fn derive(seed: u64, salt: u64) -> u64 {
    splitmix64(seed ^ splitmix64(salt))
}

/// 0..n in an order fixed by `seed` (Fisher-Yates).
fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut state = seed;
    for i in (1..n).rev() {
        state = splitmix64(state);
        let j = (state % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    if order.is_empty() {
        order.push(0);
    }
    order
}
