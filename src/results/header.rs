//! The header of a game: what it was played with and for whom (source, account, level, offset,
//! coefficients version, engine parameters, seed) — everything a record needs that Lichess
//! cannot tell. Made once when a game is set up, carried whole by the daemon's game setup and
//! open-games entry, and flattened into the [`GameRecord`](super::GameRecord), so a results
//! line reads exactly as before the header had a type of its own.

use serde::{Deserialize, Serialize};

/// Who played a game and with what; flattened (`#[serde(flatten)]`) wherever it is written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GameHeader {
    pub source: Source,
    /// The bot account (or arena player) whose game this is.
    pub account: String,
    pub level: f64,
    pub offset: f64,
    pub coefficients_version: u32,
    pub engine: EngineRecord,
    pub seed: u64,
}

impl GameHeader {
    /// The header of a game exported by Lichess that no log remembers: its engine parameters
    /// and seed are unknown (`engine.nodes == 0` marks it, see
    /// [`from_lichess`](super::from_lichess)); `coefficients_version` is the inferred one, 0
    /// when none can be.
    pub fn fetched(account: &str, level: f64, coefficients_version: u32) -> GameHeader {
        GameHeader {
            source: Source::Lichess,
            account: account.to_string(),
            level,
            offset: 0.0,
            coefficients_version,
            engine: EngineRecord {
                nodes: 0,
                noise_cp: 0.0,
                hash_mb: 0,
            },
            seed: 0,
        }
    }
}

/// Where a game was played.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Lichess,
    Sandbox,
    Arena,
}

/// The engine parameters a game was played with (at full material; the endgame scaling is
/// recomputed from the coefficients version).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EngineRecord {
    pub nodes: u64,
    pub noise_cp: f64,
    pub hash_mb: usize,
}
