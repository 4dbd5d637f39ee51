//! What decides how one search plays, apart from the position: its limits, the evaluation
//! noise and the blindness at the root (all three [`SearchParams`] carries).

use super::blindness::Blindness;
use super::limits::Limits;
use super::noise::Noise;

/// Everything that decides how one search plays, apart from the position.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchParams {
    pub limits: Limits,
    pub noise: Noise,
    /// Missed threats at the root (the weakest levels); [`Blindness::NONE`] at full strength.
    pub blindness: Blindness,
}

impl SearchParams {
    /// Full strength, bounded only by the given limits.
    pub fn full_strength(limits: Limits) -> Self {
        SearchParams {
            limits,
            noise: Noise::NONE,
            blindness: Blindness::NONE,
        }
    }
}
