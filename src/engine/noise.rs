//! Seeded, reproducible evaluation noise.

/// Evaluation noise: every static evaluation gets a logistic draw of scale `scale_cp`
/// centipawns, a pure function of (position key, seed).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Noise {
    pub scale_cp: f64,
    pub seed: u64,
}

impl Noise {
    pub const NONE: Noise = Noise {
        scale_cp: 0.0,
        seed: 0,
    };

    pub fn is_active(&self) -> bool {
        self.scale_cp > 0.0
    }
}
