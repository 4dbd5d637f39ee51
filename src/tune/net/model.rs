//! The network in floating point, as the trainer moves it: the same (768→N)×2→1 architecture
//! with squared clipped ReLU and B output buckets as the engine's [`Network`], its forward pass
//! and exact gradient over the sparse inputs (only the rows of the pieces on the board are read
//! or written), and the quantisation to the engine's integer network.
//!
//! The parameters are one flat vector, so the optimiser, the gradient buffers and the
//! checkpoints treat them alike: feature weights (768 rows of N), feature bias (N), output
//! weights (per bucket: the side to move's N, the other side's N), output biases (B). A
//! position's bucket is its number of pieces ([`output_bucket`]): the number of its inputs.

use crate::engine::nnue::{
    INPUTS, Network, NetworkError, QA, QB, WEIGHT_CLIP, flip_index,
    network::{FEATURE_WEIGHT_LIMIT, OUTPUT_WEIGHT_LIMIT, output_bucket},
};
use crate::seed::SplitMix;

use super::data::sigmoid;

/// The float network: its hidden size, its output buckets and its flat parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct FloatNetwork {
    pub hidden: usize,
    pub buckets: usize,
    pub params: Vec<f32>,
}

/// Per-thread work space of a forward and backward pass.
pub struct Scratch {
    ours: Vec<f32>,
    theirs: Vec<f32>,
}

impl Scratch {
    pub fn new(hidden: usize) -> Scratch {
        Scratch {
            ours: vec![0.0; hidden],
            theirs: vec![0.0; hidden],
        }
    }
}

/// Clipped to 0..=1 and squared.
#[inline]
fn screlu(x: f32) -> f32 {
    let c = x.clamp(0.0, 1.0);
    c * c
}

/// The derivative of [`screlu`].
#[inline]
fn screlu_slope(x: f32) -> f32 {
    if x > 0.0 && x < 1.0 { 2.0 * x } else { 0.0 }
}

impl FloatNetwork {
    /// The number of parameters of a network with `hidden` units per accumulator and
    /// `buckets` output buckets.
    pub fn param_count(hidden: usize, buckets: usize) -> usize {
        INPUTS * hidden + hidden + buckets * (2 * hidden + 1)
    }

    /// Random starting weights drawn from `seed`: uniform within ±1/√fan-in (768 for the
    /// feature weights, 2N for the output), biases 0. (One bucket draws what the trainer drew
    /// before buckets, so its runs are remade byte for byte.)
    pub fn random(hidden: usize, buckets: usize, seed: u64) -> FloatNetwork {
        let mut rng = SplitMix::new(seed);
        let mut uniform = |bound: f32| {
            let unit = (rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
            (2.0 * unit - 1.0) * bound
        };
        let mut params = vec![0.0; Self::param_count(hidden, buckets)];
        let feature_bound = 1.0 / (INPUTS as f32).sqrt();
        for p in &mut params[..INPUTS * hidden] {
            *p = uniform(feature_bound);
        }
        let output_bound = 1.0 / ((2 * hidden) as f32).sqrt();
        let output = INPUTS * hidden + hidden;
        for p in &mut params[output..output + buckets * 2 * hidden] {
            *p = uniform(output_bound);
        }
        FloatNetwork {
            hidden,
            buckets,
            params,
        }
    }

    fn bias_start(&self) -> usize {
        INPUTS * self.hidden
    }

    /// Where bucket `bucket`'s output weights start (its 2N weights).
    fn output_start(&self, bucket: usize) -> usize {
        INPUTS * self.hidden + self.hidden + bucket * 2 * self.hidden
    }

    /// Where bucket `bucket`'s output bias is.
    fn output_bias_at(&self, bucket: usize) -> usize {
        INPUTS * self.hidden + self.hidden + self.buckets * 2 * self.hidden + bucket
    }

    fn bucket_of(&self, features: &[u16]) -> usize {
        output_bucket(features.len(), self.buckets)
    }

    /// Fills both accumulators for a position's side-to-move inputs.
    fn accumulate(&self, features: &[u16], scratch: &mut Scratch) {
        let h = self.hidden;
        let bias = &self.params[self.bias_start()..self.bias_start() + h];
        scratch.ours.copy_from_slice(bias);
        scratch.theirs.copy_from_slice(bias);
        for &feature in features {
            let ours = usize::from(feature) * h;
            let theirs = flip_index(usize::from(feature)) * h;
            for (a, w) in scratch.ours.iter_mut().zip(&self.params[ours..ours + h]) {
                *a += w;
            }
            for (a, w) in scratch
                .theirs
                .iter_mut()
                .zip(&self.params[theirs..theirs + h])
            {
                *a += w;
            }
        }
    }

    /// The raw output (centipawns / 400) for the side to move.
    pub fn forward(&self, features: &[u16], scratch: &mut Scratch) -> f32 {
        self.accumulate(features, scratch);
        self.output(scratch, self.bucket_of(features))
    }

    fn output(&self, scratch: &Scratch, bucket: usize) -> f32 {
        let h = self.hidden;
        let out = &self.params[self.output_start(bucket)..];
        let mut sum = self.params[self.output_bias_at(bucket)];
        for (a, w) in scratch.ours.iter().zip(&out[..h]) {
            sum += screlu(*a) * w;
        }
        for (a, w) in scratch.theirs.iter().zip(&out[h..2 * h]) {
            sum += screlu(*a) * w;
        }
        sum
    }

    /// The loss (σ(output) − label)² of one position; adds `weight` times its gradient to
    /// `gradient` (laid out as the parameters). Only the rows of the position's inputs move.
    pub fn backward(
        &self,
        features: &[u16],
        label: f32,
        weight: f32,
        scratch: &mut Scratch,
        gradient: &mut [f32],
    ) -> f32 {
        let h = self.hidden;
        let bucket = self.bucket_of(features);
        self.accumulate(features, scratch);
        let s = sigmoid(self.output(scratch, bucket));
        let error = s - label;
        let d_out = weight * 2.0 * error * s * (1.0 - s);
        let out_start = self.output_start(bucket);
        let out = &self.params[out_start..out_start + 2 * h];
        {
            let grad_out = &mut gradient[out_start..out_start + 2 * h];
            for i in 0..h {
                grad_out[i] += d_out * screlu(scratch.ours[i]);
                grad_out[h + i] += d_out * screlu(scratch.theirs[i]);
            }
            gradient[self.output_bias_at(bucket)] += d_out;
        }
        // The accumulators' gradients overwrite the activations: they are not needed again.
        for i in 0..h {
            scratch.ours[i] = d_out * out[i] * screlu_slope(scratch.ours[i]);
            scratch.theirs[i] = d_out * out[h + i] * screlu_slope(scratch.theirs[i]);
        }
        let bias = self.bias_start();
        for i in 0..h {
            gradient[bias + i] += scratch.ours[i] + scratch.theirs[i];
        }
        for &feature in features {
            let ours = usize::from(feature) * h;
            for (g, d) in gradient[ours..ours + h].iter_mut().zip(&scratch.ours) {
                *g += d;
            }
            let theirs = flip_index(usize::from(feature)) * h;
            for (g, d) in gradient[theirs..theirs + h].iter_mut().zip(&scratch.theirs) {
                *g += d;
            }
        }
        error * error
    }

    /// The engine's integer network: weights times QA (first layer) and QB (output), the output
    /// bias times QA · QB, rounded; clipped to the integer pass's limits (training keeps them
    /// within ±[`WEIGHT_CLIP`], which those limits contain).
    pub fn quantise(&self) -> Result<Network, NetworkError> {
        let h = self.hidden;
        let quantise = |values: &[f32], scale: i32, limit: i16| -> Vec<i16> {
            values
                .iter()
                .map(|&w| {
                    (w * scale as f32)
                        .round()
                        .clamp(-f32::from(limit), f32::from(limit)) as i16
                })
                .collect()
        };
        let out = self.output_start(0);
        let biases = self.output_bias_at(0);
        Network::from_parts(
            h,
            self.buckets,
            quantise(&self.params[..INPUTS * h], QA, FEATURE_WEIGHT_LIMIT),
            quantise(&self.params[INPUTS * h..out], QA, FEATURE_WEIGHT_LIMIT),
            quantise(&self.params[out..biases], QB, OUTPUT_WEIGHT_LIMIT),
            self.params[biases..]
                .iter()
                .map(|&b| {
                    (b * (QA * QB) as f32)
                        .round()
                        .clamp(i32::MIN as f32, i32::MAX as f32) as i32
                })
                .collect(),
        )
    }
}

/// The bound training keeps every weight within.
pub const CLIP: f32 = WEIGHT_CLIP;

#[cfg(test)]
mod tests {
    use super::*;

    /// A network with random weights, biases included, to exercise every gradient.
    fn busy_network(hidden: usize, buckets: usize) -> FloatNetwork {
        let mut network = FloatNetwork::random(hidden, buckets, 3);
        let mut rng = SplitMix::new(5);
        for p in &mut network.params {
            *p += ((rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.6;
        }
        network
    }

    #[test]
    fn the_gradient_matches_finite_differences() {
        // One bucket, and 16 of which the position's five pieces pick bucket 1.
        for buckets in [1, 16] {
            gradient_matches_finite_differences(buckets);
        }
    }

    fn gradient_matches_finite_differences(buckets: usize) {
        let hidden = 4;
        let network = busy_network(hidden, buckets);
        // White: king e1, queen d1, pawn e4; Black: king e8, rook a8 (the side to move's view).
        let features = [
            5 * 64 + 4,
            4 * 64 + 3,
            28,
            384 + 5 * 64 + 60,
            384 + 3 * 64 + 56,
        ];
        let label = 0.7;
        let mut scratch = Scratch::new(hidden);
        let mut gradient = vec![0.0; network.params.len()];
        network.backward(&features, label, 1.0, &mut scratch, &mut gradient);
        let loss = |params: &[f32]| -> f64 {
            let net = FloatNetwork {
                hidden,
                buckets,
                params: params.to_vec(),
            };
            let mut scratch = Scratch::new(hidden);
            let s = f64::from(sigmoid(net.forward(&features, &mut scratch)));
            (s - f64::from(label)).powi(2)
        };
        // (White's king from Black's view is the same input as Black's king from White's.)
        let mut rows_on: Vec<usize> = features
            .iter()
            .flat_map(|&f| [usize::from(f), flip_index(usize::from(f))])
            .collect();
        rows_on.sort_unstable();
        rows_on.dedup();
        let bucket = output_bucket(features.len(), buckets);
        assert_eq!(bucket, if buckets == 1 { 0 } else { 1 });
        let in_bucket = network.output_start(bucket)..network.output_start(bucket) + 2 * hidden;
        let mut checked = 0;
        let mut params = network.params.clone();
        for (i, &g) in gradient.iter().enumerate() {
            if i < INPUTS * hidden && !rows_on.contains(&(i / hidden)) {
                assert_eq!(g, 0.0, "an input that is off has no gradient ({i})");
                continue;
            }
            let output_weight = i >= network.output_start(0) && i < network.output_bias_at(0);
            let output_bias = i >= network.output_bias_at(0);
            if (output_weight && !in_bucket.contains(&i))
                || (output_bias && i != network.output_bias_at(bucket))
            {
                assert_eq!(g, 0.0, "another bucket's output has no gradient ({i})");
                continue;
            }
            let h = 1e-3;
            let original = params[i];
            params[i] = original + h;
            let up = loss(&params);
            params[i] = original - h;
            let down = loss(&params);
            params[i] = original;
            let numeric = (up - down) / (2.0 * f64::from(h));
            assert!(
                (numeric - f64::from(g)).abs() <= 2e-4 + 0.02 * numeric.abs(),
                "parameter {i}: numeric {numeric}, analytic {g}"
            );
            checked += 1;
        }
        // Every row that is on, the biases and the output weights were compared.
        assert_eq!(checked, rows_on.len() * hidden + 3 * hidden + 1);
        assert!(gradient.iter().filter(|g| **g != 0.0).count() > hidden);
    }

    #[test]
    fn quantisation_keeps_weights_within_the_integer_limits() {
        let mut network = FloatNetwork::random(8, 3, 1);
        network.params.iter_mut().for_each(|p| *p *= 100.0);
        let quantised = network.quantise().unwrap();
        assert_eq!((quantised.hidden(), quantised.buckets()), (8, 3));
    }

    /// With one bucket the start is what the trainer drew before buckets: the first output
    /// weights of a bucketed start are the same draws, the other buckets' follow them.
    #[test]
    fn one_bucket_starts_where_the_trainer_always_started() {
        let one = FloatNetwork::random(8, 1, 7);
        let four = FloatNetwork::random(8, 4, 7);
        assert_eq!(one.params.len(), FloatNetwork::param_count(8, 1));
        assert_eq!(four.params.len(), FloatNetwork::param_count(8, 4));
        let shared = INPUTS * 8 + 8 + 2 * 8;
        assert_eq!(one.params[..shared], four.params[..shared]);
        assert_eq!(
            *one.params.last().unwrap(),
            0.0,
            "the output bias starts at 0"
        );
    }
}
