//! How the parameters move: AdamW with every weight clipped to ±1.98 after each step (as bullet
//! does, so the quantised network fits its integer limits), and the learning rate's schedule
//! over the epochs.

use super::model::CLIP;

/// AdamW's state: first and second moments per parameter and the steps taken.
#[derive(Clone, Debug, PartialEq)]
pub struct AdamW {
    pub m: Vec<f32>,
    pub v: Vec<f32>,
    pub steps: u64,
    pub weight_decay: f32,
}

const BETA1: f32 = 0.9;
const BETA2: f32 = 0.999;
const EPSILON: f32 = 1e-8;

impl AdamW {
    pub fn new(len: usize, weight_decay: f32) -> AdamW {
        AdamW {
            m: vec![0.0; len],
            v: vec![0.0; len],
            steps: 0,
            weight_decay,
        }
    }

    /// One step of `rate` along `gradient`, with decoupled weight decay, then the clip.
    pub fn step(&mut self, params: &mut [f32], gradient: &[f32], rate: f32) {
        self.steps += 1;
        let t = self.steps as f64;
        let m_correction = (1.0 / (1.0 - f64::from(BETA1).powf(t))) as f32;
        let v_correction = (1.0 / (1.0 - f64::from(BETA2).powf(t))) as f32;
        let decay = 1.0 - rate * self.weight_decay;
        for (((p, g), m), v) in params
            .iter_mut()
            .zip(gradient)
            .zip(&mut self.m)
            .zip(&mut self.v)
        {
            *m = BETA1 * *m + (1.0 - BETA1) * g;
            *v = BETA2 * *v + (1.0 - BETA2) * g * g;
            let update = (*m * m_correction) / ((*v * v_correction).sqrt() + EPSILON);
            *p = (*p * decay - rate * update).clamp(-CLIP, CLIP);
        }
    }
}

/// The learning rate by epoch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Schedule {
    /// The rate times `gamma` after every `every` epochs.
    Step { every: usize, gamma: f32 },
    /// From the rate down to `final_fraction` of it along half a cosine over the run.
    Cosine { final_fraction: f32 },
}

impl Schedule {
    /// The rate of epoch `epoch` (1-based) of `epochs`.
    pub fn rate(&self, base: f32, epoch: usize, epochs: usize) -> f32 {
        match *self {
            Schedule::Step { every, gamma } => {
                base * gamma.powi(((epoch - 1) / every.max(1)) as i32)
            }
            Schedule::Cosine { final_fraction } => {
                let progress = if epochs <= 1 {
                    0.0
                } else {
                    (epoch - 1) as f64 / (epochs - 1) as f64
                };
                let cosine = (1.0 + (std::f64::consts::PI * progress).cos()) / 2.0;
                let low = f64::from(base * final_fraction);
                (low + (f64::from(base) - low) * cosine) as f32
            }
        }
    }

    /// A line for the log and the fingerprint of checkpoints.
    pub fn describe(&self) -> String {
        match self {
            Schedule::Step { every, gamma } => format!("step every {every} epochs x{gamma}"),
            Schedule::Cosine { final_fraction } => format!("cosine to x{final_fraction}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_fall_as_described() {
        let step = Schedule::Step {
            every: 2,
            gamma: 0.1,
        };
        let rates: Vec<f32> = (1..=5).map(|e| step.rate(1.0, e, 5)).collect();
        assert_eq!(rates[0], 1.0);
        assert_eq!(rates[1], 1.0);
        assert!((rates[2] - 0.1).abs() < 1e-6 && (rates[4] - 0.01).abs() < 1e-6);
        let cosine = Schedule::Cosine {
            final_fraction: 0.01,
        };
        assert_eq!(cosine.rate(1.0, 1, 11), 1.0);
        assert!((cosine.rate(1.0, 6, 11) - 0.505).abs() < 1e-6);
        assert!((cosine.rate(1.0, 11, 11) - 0.01).abs() < 1e-6);
    }

    #[test]
    fn a_step_goes_down_the_gradient_and_stays_within_the_clip() {
        let mut adam = AdamW::new(2, 0.0);
        let mut params = [0.5f32, 1.97];
        adam.step(&mut params, &[1.0, -1.0], 0.1);
        // Adam's first step is the rate times the gradient's sign.
        assert!((params[0] - 0.4).abs() < 1e-5, "{params:?}");
        assert_eq!(params[1], CLIP);
    }
}
