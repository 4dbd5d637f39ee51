//! The evaluation as the tuner sees it: per position, how often each weight counts.
//!
//! The evaluation is linear in its weights apart from a few gates (the drawish scaling, the
//! king-danger index, the mop-up term). A [`Trace`] records, for one position, the signed
//! counts (White minus Black) of every weight the board walk touched, with the gates fixed at
//! the weights the trace was taken with; then the evaluation under any weights `θ` is
//! `scale · (Σ count · taper(θ) + mop_up) + side · taper(tempo)`, and its gradient is the
//! counts themselves. Taken once per position, so a pass over millions of positions is cheap.

use shakmaty::{Chess, Color, Position};

use crate::engine::eval::{self, Accumulator, MAX_PHASE};
use crate::engine::weights::{self, Weights};

/// One weight's count in one position (White's count minus Black's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Feature {
    pub index: u16,
    pub count: i16,
}

/// One position's linear form.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    /// Middlegame share of the taper: phase / MAX_PHASE.
    pub mg_share: f32,
    /// 1, or 1/4 where the drawish scaling applied.
    pub scale: f32,
    /// The mop-up term, White's view (no weight of the set).
    pub mop_up: f32,
    /// +1 with White to move, -1 with Black (the tempo bonus goes to the side to move).
    pub side: f32,
    pub features: Vec<Feature>,
}

struct Recorder<'a> {
    weights: &'a Weights,
    counts: Vec<(usize, i32)>,
}

impl Accumulator for Recorder<'_> {
    fn weights(&self) -> &Weights {
        self.weights
    }
    fn add(&mut self, color: Color, index: usize, count: i32) {
        let count = if color == Color::White { count } else { -count };
        self.counts.push((index, count));
    }
    fn piece(&mut self, color: Color, role: usize, relative_square: usize) {
        self.add(color, weights::MATERIAL + role, 1);
        self.add(color, weights::PST + 64 * role + relative_square, 1);
    }
}

impl Trace {
    /// The trace of `pos`, with the gates as `weights` set them.
    pub fn of(pos: &Chess, weights: &Weights) -> Trace {
        let board = pos.board();
        let mut recorder = Recorder {
            weights,
            counts: Vec::with_capacity(96),
        };
        let phase = eval::accumulate(board, &mut recorder);
        let mut counts = recorder.counts;
        counts.sort_unstable_by_key(|&(index, _)| index);
        let mut features: Vec<Feature> = Vec::with_capacity(counts.len());
        for (index, count) in counts {
            match features.last_mut() {
                Some(last) if usize::from(last.index) == index => {
                    last.count += count as i16;
                }
                _ => features.push(Feature {
                    index: index as u16,
                    count: count as i16,
                }),
            }
        }
        features.retain(|f| f.count != 0);
        let mg_share = phase as f32 / MAX_PHASE as f32;
        let mop_up = eval::mop_up(board);
        // The drawish gate depends on the sign of the score before it.
        let (mut mg, mut eg) = (0i32, 0i32);
        for f in &features {
            let [m, e] = weights.get(usize::from(f.index));
            mg += i32::from(f.count) * m;
            eg += i32::from(f.count) * e;
        }
        let before = eval::taper([mg, eg], phase) + mop_up;
        let scale = if eval::is_drawish(board, before) {
            0.25
        } else {
            1.0
        };
        Trace {
            mg_share,
            scale,
            mop_up: mop_up as f32,
            side: if pos.turn() == Color::White {
                1.0
            } else {
                -1.0
            },
            features,
        }
    }

    /// The evaluation from White's point of view under the weights `theta`
    /// (`theta[2 i]` the middlegame and `theta[2 i + 1]` the endgame value of pair `i`).
    #[inline]
    pub fn eval(&self, theta: &[f64]) -> f64 {
        let mg = f64::from(self.mg_share);
        let eg = 1.0 - mg;
        let mut linear = 0.0;
        for f in &self.features {
            let i = 2 * usize::from(f.index);
            linear += f64::from(f.count) * (mg * theta[i] + eg * theta[i + 1]);
        }
        let t = 2 * weights::TEMPO;
        f64::from(self.scale) * (linear + f64::from(self.mop_up))
            + f64::from(self.side) * (mg * theta[t] + eg * theta[t + 1])
    }

    /// Adds `factor` times the gradient of [`Trace::eval`] to `gradient`.
    #[inline]
    pub fn add_gradient(&self, factor: f64, gradient: &mut [f64]) {
        let mg = f64::from(self.mg_share);
        let eg = 1.0 - mg;
        let scaled = factor * f64::from(self.scale);
        for f in &self.features {
            let i = 2 * usize::from(f.index);
            let c = scaled * f64::from(f.count);
            gradient[i] += c * mg;
            gradient[i + 1] += c * eg;
        }
        let t = 2 * weights::TEMPO;
        let side = factor * f64::from(self.side);
        gradient[t] += side * mg;
        gradient[t + 1] += side * eg;
    }
}

/// The weights as the tuner's flat vector of reals.
pub fn theta_of(weights: &Weights) -> Vec<f64> {
    weights
        .pairs()
        .iter()
        .flat_map(|&[mg, eg]| [f64::from(mg), f64::from(eg)])
        .collect()
}

/// The weights nearest a vector of reals.
pub fn weights_of(theta: &[f64]) -> Weights {
    let pairs = theta
        .chunks_exact(2)
        .map(|p| [p[0].round() as i32, p[1].round() as i32])
        .collect();
    Weights::from_pairs(pairs).expect("theta has two reals per pair")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Game;

    #[test]
    fn a_trace_evaluates_as_the_engine_does() {
        let weights = Weights::handwritten();
        let theta = theta_of(&weights);
        for fen in crate::bench::POSITIONS {
            let game = Game::new(Some(fen), false).unwrap();
            let pos = game.position();
            let engine = eval::evaluate_with(pos, &weights);
            let white = if pos.turn() == Color::White {
                engine
            } else {
                -engine
            };
            let traced = Trace::of(pos, &weights).eval(&theta);
            // The engine rounds its taper to whole centipawns twice.
            assert!(
                (traced - f64::from(white)).abs() <= 2.0,
                "{fen}: traced {traced}, engine {white}"
            );
        }
    }
}
