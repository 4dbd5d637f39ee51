//! The training loop: epochs of shuffled mini-batches, each batch's gradient computed on up to
//! [`SLICES`] threads and summed in a fixed order, one AdamW step per batch, the validation loss
//! after each epoch.
//!
//! Deterministic by seed whatever the thread count: a batch is always cut into the same
//! [`SLICES`] parts, each part's gradient is summed in its own buffer in position order, and
//! the parts are added in part order; the shuffle of epoch e is a function of (seed, e) only,
//! so a run resumed after epoch e goes on exactly as one that was never stopped.

use std::ops::ControlFlow;
use std::time::Instant;

use super::data::{Data, Positions, sigmoid};
use super::model::{FloatNetwork, Scratch};
use super::optimizer::{AdamW, Schedule};
use crate::seed::{SplitMix, mix64};

/// The parts a batch's gradient is cut into (and so the most threads a batch uses).
pub const SLICES: usize = 8;

/// What decides a run's result.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub hidden: usize,
    /// Output buckets by the number of pieces (1: none).
    pub buckets: usize,
    pub epochs: usize,
    pub batch_size: usize,
    pub learning_rate: f32,
    pub schedule: Schedule,
    pub weight_decay: f32,
    pub seed: u64,
    /// Threads for the gradient and the validation loss (1..=SLICES; not part of the result).
    pub threads: usize,
}

impl Settings {
    /// A hash of every setting that changes the result (not the threads).
    pub fn fingerprint(&self) -> u64 {
        let mut text = format!(
            "hidden {} epochs {} batch {} lr {} schedule {} decay {} seed {}",
            self.hidden,
            self.epochs,
            self.batch_size,
            self.learning_rate.to_bits(),
            self.schedule.describe(),
            self.weight_decay.to_bits(),
            self.seed
        );
        // (Said only when there are buckets: the runs before them keep their fingerprints.)
        if self.buckets != 1 {
            text.push_str(&format!(" buckets {}", self.buckets));
        }
        crate::engine::nnue::network::fnv1a64(text.as_bytes())
    }
}

/// Where a run stands: the network, the optimiser's state and the epochs done.
#[derive(Clone, Debug, PartialEq)]
pub struct State {
    pub network: FloatNetwork,
    pub optimizer: AdamW,
    pub epochs_done: usize,
}

impl State {
    /// The start of a run: random weights from the seed.
    pub fn start(settings: &Settings) -> State {
        let network = FloatNetwork::random(settings.hidden, settings.buckets, settings.seed);
        let optimizer = AdamW::new(network.params.len(), settings.weight_decay);
        State {
            network,
            optimizer,
            epochs_done: 0,
        }
    }
}

/// One epoch's line of progress.
#[derive(Clone, Debug, PartialEq)]
pub struct EpochReport {
    pub epoch: usize,
    pub learning_rate: f32,
    /// The mean loss over the epoch's batches, each measured before its step.
    pub train_loss: f64,
    /// The loss on the held-out games after the epoch (`None` without any).
    pub validation_loss: Option<f64>,
    pub positions_per_second: f64,
}

/// Trains from `state` to `settings.epochs`; `after_epoch` hears each epoch's report with the
/// state after it (to save a checkpoint) and may stop the run early.
pub fn train(
    data: &Data,
    settings: &Settings,
    mut state: State,
    mut after_epoch: impl FnMut(&State, &EpochReport) -> ControlFlow<()>,
) -> State {
    let threads = settings.threads.clamp(1, SLICES);
    let len = state.network.params.len();
    let mut slices: Vec<Vec<f32>> = vec![vec![0.0; len]; SLICES];
    let mut gradient = vec![0.0f32; len];
    let n = data.train.len();
    while state.epochs_done < settings.epochs {
        let epoch = state.epochs_done + 1;
        let started = Instant::now();
        let rate = settings
            .schedule
            .rate(settings.learning_rate, epoch, settings.epochs);
        let order = shuffled(n, settings.seed, epoch);
        let mut loss_sum = 0.0f64;
        for batch in order.chunks(settings.batch_size.max(1)) {
            let weight = 1.0 / batch.len() as f32;
            let losses = batch_gradient(
                &state.network,
                &data.train,
                batch,
                weight,
                threads,
                &mut slices,
            );
            loss_sum += losses;
            gradient.iter_mut().for_each(|g| *g = 0.0);
            for slice in &slices {
                for (g, s) in gradient.iter_mut().zip(slice) {
                    *g += s;
                }
            }
            state
                .optimizer
                .step(&mut state.network.params, &gradient, rate);
        }
        state.epochs_done = epoch;
        let seconds = started.elapsed().as_secs_f64();
        let report = EpochReport {
            epoch,
            learning_rate: rate,
            train_loss: loss_sum / n.max(1) as f64,
            validation_loss: (!data.validation.is_empty())
                .then(|| loss(&state.network, &data.validation, threads)),
            positions_per_second: n as f64 / seconds.max(1e-9),
        };
        if after_epoch(&state, &report).is_break() {
            break;
        }
    }
    state
}

/// The order of epoch `epoch`'s positions: a Fisher–Yates shuffle drawn from (seed, epoch).
fn shuffled(n: usize, seed: u64, epoch: usize) -> Vec<u32> {
    let mut order: Vec<u32> = (0..n as u32).collect();
    let mut rng = SplitMix::new(mix64(seed ^ mix64(epoch as u64)));
    for i in (1..n).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

/// The batch's gradient, each of the [`SLICES`] parts into its own buffer; returns the sum of
/// the positions' losses.
fn batch_gradient(
    network: &FloatNetwork,
    positions: &Positions,
    batch: &[u32],
    weight: f32,
    threads: usize,
    slices: &mut [Vec<f32>],
) -> f64 {
    let part = batch.len().div_ceil(SLICES).max(1);
    let work = |index: usize, gradient: &mut Vec<f32>| -> f64 {
        gradient.iter_mut().for_each(|g| *g = 0.0);
        let mut scratch = Scratch::new(network.hidden);
        let start = (index * part).min(batch.len());
        let end = ((index + 1) * part).min(batch.len());
        let mut sum = 0.0f64;
        for &i in &batch[start..end] {
            let i = i as usize;
            sum += f64::from(network.backward(
                positions.features(i),
                positions.label(i),
                weight,
                &mut scratch,
                gradient,
            ));
        }
        sum
    };
    let mut losses = [0.0f64; SLICES];
    if threads == 1 {
        for (index, gradient) in slices.iter_mut().enumerate() {
            losses[index] = work(index, gradient);
        }
    } else {
        std::thread::scope(|scope| {
            // Thread t takes parts t, t + threads, …; each part keeps its own buffer.
            let mut by_thread: Vec<Vec<(usize, &mut Vec<f32>)>> =
                (0..threads).map(|_| Vec::new()).collect();
            for (index, gradient) in slices.iter_mut().enumerate() {
                by_thread[index % threads].push((index, gradient));
            }
            let handles: Vec<_> = by_thread
                .into_iter()
                .map(|parts| {
                    let work = &work;
                    scope.spawn(move || {
                        parts
                            .into_iter()
                            .map(|(index, gradient)| (index, work(index, gradient)))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            for handle in handles {
                for (index, loss) in handle.join().expect("a trainer thread panicked") {
                    losses[index] = loss;
                }
            }
        });
    }
    losses.iter().sum()
}

/// The mean loss (σ(output) − label)² over `positions`, in [`SLICES`] parts summed in order.
pub fn loss(network: &FloatNetwork, positions: &Positions, threads: usize) -> f64 {
    let n = positions.len();
    if n == 0 {
        return f64::NAN;
    }
    let part = n.div_ceil(SLICES);
    let work = |index: usize| -> f64 {
        let mut scratch = Scratch::new(network.hidden);
        let range = (index * part).min(n)..((index + 1) * part).min(n);
        range
            .map(|i| {
                let s = sigmoid(network.forward(positions.features(i), &mut scratch));
                f64::from((s - positions.label(i)).powi(2))
            })
            .sum()
    };
    let threads = threads.clamp(1, SLICES);
    let mut losses = [0.0f64; SLICES];
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let work = &work;
                scope.spawn(move || {
                    (t..SLICES)
                        .step_by(threads)
                        .map(|index| (index, work(index)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for handle in handles {
            for (index, loss) in handle.join().expect("a trainer thread panicked") {
                losses[index] = loss;
            }
        }
    });
    losses.iter().sum::<f64>() / n as f64
}

#[cfg(test)]
mod tests {
    use super::super::test_data::{material_cp, material_data, random_positions};
    use super::*;
    use crate::engine::nnue::accumulator::evaluate_board;
    use shakmaty::Position as _;

    fn settings(threads: usize, epochs: usize) -> Settings {
        Settings {
            hidden: 16,
            buckets: 1,
            epochs,
            batch_size: 128,
            learning_rate: 0.01,
            schedule: Schedule::Cosine {
                final_fraction: 0.05,
            },
            weight_decay: 0.0,
            seed: 7,
            threads,
        }
    }

    fn correlation(a: &[f64], b: &[f64]) -> f64 {
        let n = a.len() as f64;
        let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
        let cov: f64 = a.iter().zip(b).map(|(x, y)| (x - ma) * (y - mb)).sum();
        let va: f64 = a.iter().map(|x| (x - ma).powi(2)).sum();
        let vb: f64 = b.iter().map(|y| (y - mb).powi(2)).sum();
        cov / (va * vb).sqrt()
    }

    #[test]
    fn a_network_learns_a_material_evaluation() {
        // Without output buckets, and with four (the positions' piece counts spread over them).
        for buckets in [1, 4] {
            learns_a_material_evaluation(buckets);
        }
    }

    fn learns_a_material_evaluation(buckets: usize) {
        let data = material_data(3000, 1);
        let run = Settings {
            buckets,
            ..settings(2, 30)
        };
        let mut reports = Vec::new();
        let state = train(&data, &run, State::start(&run), |_, r| {
            reports.push(r.clone());
            ControlFlow::Continue(())
        });
        let first = reports[0].validation_loss.unwrap();
        let last = reports.last().unwrap().validation_loss.unwrap();
        assert!(last < first / 4.0, "validation loss {first} -> {last}");
        // On positions it never saw, its centipawns follow the material count.
        let quantised = state.network.quantise().unwrap();
        let mut scratch = Scratch::new(16);
        let (mut predicted, mut integer, mut truth) = (Vec::new(), Vec::new(), Vec::new());
        for pos in random_positions(500, 99) {
            let mut seen = Positions::default();
            seen.push(&pos, 0.0).unwrap();
            let float = f64::from(state.network.forward(seen.features(0), &mut scratch)) * 400.0;
            predicted.push(float);
            integer.push(f64::from(evaluate_board(
                &quantised,
                pos.board(),
                pos.turn(),
            )));
            truth.push(f64::from(material_cp(&pos)));
        }
        let r = correlation(&predicted, &truth);
        assert!(r > 0.9, "correlation with material {r} ({buckets} buckets)");
        let mut used: Vec<usize> = random_positions(500, 99)
            .iter()
            .map(|pos| {
                crate::engine::nnue::network::output_bucket(pos.board().occupied().count(), buckets)
            })
            .collect();
        used.sort_unstable();
        used.dedup();
        assert_eq!(used.len(), buckets, "the positions fill every bucket");
        let mean_error = predicted
            .iter()
            .zip(&truth)
            .map(|(p, t)| (p - t).abs())
            .sum::<f64>()
            / truth.len() as f64;
        assert!(mean_error < 150.0, "mean error {mean_error} cp");
        // The integer pass computes the quantised weights exactly (to the centipawn its
        // divisions truncate)...
        let dequantised = dequantise(&quantised);
        let exact = random_positions(200, 98).into_iter().map(|pos| {
            let mut seen = Positions::default();
            seen.push(&pos, 0.0).unwrap();
            let float = f64::from(dequantised.forward(seen.features(0), &mut scratch)) * 400.0;
            let integer = f64::from(evaluate_board(&quantised, pos.board(), pos.turn()));
            (float - integer).abs()
        });
        let worst = exact.fold(0.0, f64::max);
        assert!(
            worst <= 2.0,
            "integer pass vs its own weights in float: {worst} cp"
        );
        // ...and rounding to QA = 255 and QB = 64 costs a few centipawns against the float net.
        let differences: Vec<f64> = predicted
            .iter()
            .zip(&integer)
            .map(|(f, i)| (f - i).abs())
            .collect();
        let worst = differences.iter().copied().fold(0.0, f64::max);
        let mean = differences.iter().sum::<f64>() / differences.len() as f64;
        assert!(
            worst < 30.0 && mean < 6.0,
            "quantised vs float: worst {worst} cp, mean {mean} cp"
        );
    }

    /// The float network of a quantised one's weights.
    fn dequantise(network: &crate::engine::nnue::Network) -> FloatNetwork {
        use crate::engine::nnue::{INPUTS, QA, QB};
        let h = network.hidden();
        let buckets = network.buckets();
        let mut params = Vec::with_capacity(FloatNetwork::param_count(h, buckets));
        let scaled = |values: &[i16], q: i32| -> Vec<f32> {
            values.iter().map(|&w| f32::from(w) / q as f32).collect()
        };
        for input in 0..INPUTS {
            params.extend(scaled(network.feature_row(input), QA));
        }
        params.extend(scaled(network.feature_bias(), QA));
        for bucket in 0..buckets {
            params.extend(scaled(network.output_weights(bucket), QB));
        }
        for bucket in 0..buckets {
            params.push(network.output_bias(bucket) as f32 / (QA * QB) as f32);
        }
        FloatNetwork {
            hidden: h,
            buckets,
            params,
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_bytes_on_one_thread_or_two() {
        let data = material_data(600, 2);
        let run = |threads: usize| {
            let s = settings(threads, 3);
            train(
                &data,
                &s,
                State::start(&s),
                |_, _| ControlFlow::Continue(()),
            )
            .network
            .quantise()
            .unwrap()
            .to_bytes()
        };
        let one = run(1);
        assert_eq!(one, run(2));
        assert_eq!(one, run(3));
        // And another seed gives another network.
        let mut other = settings(2, 3);
        other.seed = 8;
        let different = train(&data, &other, State::start(&other), |_, _| {
            ControlFlow::Continue(())
        });
        assert_ne!(one, different.network.quantise().unwrap().to_bytes());
    }
}
