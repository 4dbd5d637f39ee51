//! The chess engine as a library: no I/O, no async, no clock it was not handed.
//!
//! A [`Game`] (initial position + moves, with repetition history) goes in together with
//! [`SearchParams`] (node/depth limits and evaluation noise) and a [`SearchObserver`] that may
//! stop the search (time, `stop`) and hears about every completed iteration. Same inputs, same
//! output, bit for bit.

pub mod aim;
pub mod blindness;
pub mod constants;
pub mod eval;
pub mod evaluator;
pub mod humane;
pub mod limits;
pub mod look;
pub mod movegen;
pub mod movepack;
pub mod nnue;
pub mod noise;
mod ordering;
pub mod params;
pub mod people;
pub mod position;
pub mod ramp;
pub mod score;
pub mod search;
pub mod see;
pub mod stumble;
pub mod tt;
pub mod weights;

pub use blindness::Blindness;
pub use constants::SearchConstants;
pub use evaluator::Evaluator;
pub use limits::{Limits, NoStop, SearchInfo, SearchObserver, StopOnly};
pub use noise::Noise;
pub use params::SearchParams;
pub use position::{Game, GameError};
pub use score::Score;
pub use search::{Engine, SearchResult};
pub use weights::Weights;
