//! The transposition table: a fixed-size array of 32-byte clusters, three packed 10-byte
//! entries each, sized in MB by the caller.
//!
//! Design: a cluster is chosen by multiply-shift on the full 64-bit key (`(key · len) >> 64`,
//! which uses the key's high bits and needs no power-of-two size); each entry keeps the low 16
//! bits of the key to tell positions apart inside the cluster. Scores are stored relative to the
//! node (mate scores normalised by ply, see [`super::score::ply_adjusted_to_tt`]) so a mate found through a
//! transposition at another ply keeps its true distance. Replacement inside a cluster: the same
//! position first, otherwise the entry with the least depth, older generations counting as
//! shallower. Everything is plain safe Rust; the table is cleared by `new_game` and resized by
//! `set_hash_mb`, so identical call sequences give identical tables (determinism).

use super::movepack::PackedMove;
use super::score::{MATE_BOUND, ply_adjusted_from_tt, ply_adjusted_to_tt};

/// What the stored score says about the true value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// The true value is at most the score (fail low).
    Upper = 1,
    /// The true value is at least the score (fail high).
    Lower = 2,
    /// The score is exact (a PV node).
    Exact = 3,
}

impl Bound {
    /// The bound of a search's best score against the window it was given.
    pub fn of(best: i32, alpha: i32, beta: i32) -> Bound {
        if best >= beta {
            Bound::Lower
        } else if best > alpha {
            Bound::Exact
        } else {
            Bound::Upper
        }
    }

    /// Whether a stored score with this bound settles a search of window (alpha, beta).
    pub fn cuts(self, score: i32, alpha: i32, beta: i32) -> bool {
        match self {
            Bound::Exact => true,
            Bound::Lower => score >= beta,
            Bound::Upper => score <= alpha,
        }
    }
}

/// One packed entry: 10 bytes.
#[derive(Clone, Copy, Default)]
#[repr(C)]
struct Entry {
    check: u16,
    mv: u16,
    score: i16,
    eval: i16,
    depth: u8,
    /// Bound in the low 2 bits (0 = empty), generation in the high 6 bits.
    flags: u8,
}

const ENTRIES: usize = 3;

#[derive(Clone, Copy, Default)]
#[repr(C, align(32))]
struct Cluster {
    entries: [Entry; ENTRIES],
}

// The layout is part of the design (10-byte entries, three to a 32-byte cluster): check it
// at compile time so a field change cannot silently bloat the table.
const _: () = assert!(std::mem::size_of::<Entry>() == 10);
const _: () = assert!(std::mem::size_of::<Cluster>() == 32);

/// Hash per game at most, MB (the coefficients' `hash` steps, the UCI `Hash` option): more would
/// abort the process allocating it.
pub const MAX_HASH_MB: usize = 4096;
/// Size of one entry in bytes (exposed for tests and documentation).
pub const ENTRY_BYTES: usize = std::mem::size_of::<Entry>();
/// Size of one cluster in bytes.
pub const CLUSTER_BYTES: usize = std::mem::size_of::<Cluster>();

/// A hit in the table, with the score already converted back to the probing node's ply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hit {
    pub mv: Option<PackedMove>,
    pub score: i32,
    pub eval: i32,
    pub depth: i32,
    pub bound: Bound,
}

/// The transposition table.
pub struct Tt {
    clusters: Vec<Cluster>,
    generation: u8,
}

impl Tt {
    /// A table of `mb` megabytes (at least one cluster).
    pub fn new(mb: usize) -> Tt {
        let len = (mb.max(1) * 1024 * 1024 / CLUSTER_BYTES).max(1);
        Tt {
            clusters: vec![Cluster::default(); len],
            generation: 0,
        }
    }

    pub fn clear(&mut self) {
        self.clusters.fill(Cluster::default());
        self.generation = 0;
    }

    /// Starts a new search: entries from earlier searches become preferred victims.
    pub fn new_search(&mut self) {
        self.generation = (self.generation + 1) & 0x3f;
    }

    fn index(&self, key: u64) -> usize {
        ((u128::from(key) * self.clusters.len() as u128) >> 64) as usize
    }

    pub fn probe(&self, key: u64, ply: usize) -> Option<Hit> {
        let check = key as u16;
        let cluster = &self.clusters[self.index(key)];
        cluster
            .entries
            .iter()
            .find(|e| e.flags & 3 != 0 && e.check == check)
            .map(|e| Hit {
                mv: PackedMove::from_raw(e.mv),
                score: ply_adjusted_from_tt(i32::from(e.score), ply),
                eval: i32::from(e.eval),
                depth: i32::from(e.depth),
                bound: match e.flags & 3 {
                    1 => Bound::Upper,
                    2 => Bound::Lower,
                    _ => Bound::Exact,
                },
            })
    }

    #[allow(clippy::too_many_arguments)]
    pub fn store(
        &mut self,
        key: u64,
        ply: usize,
        mv: Option<PackedMove>,
        score: i32,
        eval: i32,
        depth: i32,
        bound: Bound,
    ) {
        let check = key as u16;
        let generation = self.generation;
        let index = self.index(key);
        let cluster = &mut self.clusters[index];
        let age = |e: &Entry| i32::from((generation.wrapping_sub(e.flags >> 2)) & 0x3f);
        let slot = match cluster
            .entries
            .iter()
            .position(|e| e.flags & 3 != 0 && e.check == check)
        {
            Some(i) => i,
            None => (0..ENTRIES)
                .min_by_key(|&i| {
                    let e = &cluster.entries[i];
                    if e.flags & 3 == 0 {
                        i32::MIN
                    } else {
                        i32::from(e.depth) - 8 * age(e)
                    }
                })
                .unwrap_or(0),
        };
        let entry = &mut cluster.entries[slot];
        // Keep a deeper result for the same position from this search unless the new one is
        // exact; always keep a known best move when the new result has none.
        let same = entry.flags & 3 != 0 && entry.check == check;
        if same && bound != Bound::Exact && i32::from(entry.depth) > depth + 2 && age(entry) == 0 {
            return;
        }
        let mv = match mv {
            Some(m) => m.raw(),
            None if same => entry.mv,
            None => 0,
        };
        debug_assert!(score.abs() <= i32::from(i16::MAX));
        *entry = Entry {
            check,
            mv,
            score: ply_adjusted_to_tt(score, ply).clamp(-(i16::MAX as i32), i16::MAX as i32) as i16,
            eval: eval.clamp(-MATE_BOUND, MATE_BOUND) as i16,
            depth: depth.clamp(0, 255) as u8,
            flags: (generation << 2) | bound as u8,
        };
    }

    /// Permille of the first thousand clusters' entries used by this search (UCI hashfull).
    pub fn hashfull(&self) -> u32 {
        let n = self.clusters.len().min(1000);
        let used: usize = self.clusters[..n]
            .iter()
            .map(|c| {
                c.entries
                    .iter()
                    .filter(|e| e.flags & 3 != 0 && e.flags >> 2 == self.generation)
                    .count()
            })
            .sum();
        (used * 1000 / (n * ENTRIES)) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::score::{MATE, mated_in};

    #[test]
    fn entry_and_cluster_sizes() {
        assert_eq!(ENTRY_BYTES, 10);
        assert_eq!(CLUSTER_BYTES, 32);
        assert_eq!(Tt::new(1).clusters.len(), 32768);
    }

    #[test]
    fn stores_and_finds_with_mate_distance_relative_to_ply() {
        let mut tt = Tt::new(1);
        let key = 0x1234_5678_9abc_def0;
        // Found at ply 5: we mate 3 plies later, i.e. mate at ply 8 from the root.
        let score = MATE - 8;
        tt.store(key, 5, None, score, 17, 4, Bound::Exact);
        let hit = tt.probe(key, 5).unwrap();
        assert_eq!(hit.score, score);
        assert_eq!(hit.eval, 17);
        assert_eq!(hit.depth, 4);
        assert_eq!(hit.bound, Bound::Exact);
        // The same position reached at ply 2 is a mate 3 plies away: at ply 5 from the root.
        assert_eq!(tt.probe(key, 2).unwrap().score, MATE - 5);
        // Being mated works the other way round.
        tt.store(key, 6, None, mated_in(9), 0, 4, Bound::Exact);
        assert_eq!(tt.probe(key, 4).unwrap().score, mated_in(7));
        assert!(tt.probe(key ^ 1, 5).is_none());
    }
}
