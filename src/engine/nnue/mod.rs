//! The network evaluation: a (768→N)×2→1 network read from the side to move's perspective.
//!
//! Two accumulators of N values each (one per perspective: the side to move's and the other
//! side's) sum the rows of the 768 inputs that are on: a piece of a colour and role on a square,
//! the board mirrored for Black ([`features`]). Both go through a squared clipped ReLU and one
//! output neuron, of one of B output buckets chosen by the number of pieces ([`network`]).
//! Inference is integer: i16 weights and accumulators, i32 sums, quantised as bullet does
//! (QA = 255 for the first layer, QB = 64 for the output, output scale 400 centipawns). The
//! [`Accumulator`] is updated incrementally by the pieces a move changes, so a search can
//! follow make and unmake without walking the board. The weights come in as
//! bytes ([`Network::from_bytes`]) with a versioned header; this module reads no files.

pub mod accumulator;
pub mod features;
pub mod network;
mod simd;

pub use accumulator::Accumulator;
pub use features::{INPUTS, MoveFeatures, PieceSquare, feature_index, flip_index};
pub use network::{Network, NetworkError, QA, QB, SCALE, WEIGHT_CLIP};
