//! ladder: a ladder of leveled Lichess bots.
//!
//! One crate, one binary. The engine (`engine`) is a library with no I/O; `levels` turns the
//! calibrated coefficients into per-game search parameters; the daemon, the UCI front end, the
//! arena and the calibration loop are all built on those two.
#![deny(unsafe_code)]

pub mod anchors;
pub mod append_file;
pub mod arena;
pub mod atomic_file;
pub mod bench;
pub mod calibration;
pub mod check;
pub mod config;
pub mod credentials;
pub mod daemon;
pub mod engine;
pub mod exit;
pub mod levels;
pub mod lichess;
pub mod logging;
pub mod perft;
pub mod pgn;
pub mod player;
pub mod rating;
pub mod results;
pub mod sandbox;
pub mod seed;
pub mod shard;
#[cfg(test)]
mod test_files;
pub mod toml_file;
pub mod tune;
pub mod uci;
pub mod unix_time;
