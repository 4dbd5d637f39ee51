//! `ladder tune texel`: Texel's method (Österlund) over the data `datagen` writes.
//!
//! The loss is the mean squared error between `σ(K · eval)` and each position's label, a blend
//! `λ · result + (1 − λ) · σ(K · search score)` (λ = 1 is Texel's pure form). K is fitted
//! first with the starting weights fixed; then the weights move with K fixed, either by the
//! exact gradient of the linear form ([`super::trace`]; Adam, full batch, both cores) or by the
//! particle swarm of MadChess (seed 003; [`super::pso`]), which needs no gradient and so can
//! move the non-linear weights too. One game in `--holdout-every` is held out: its loss is
//! reported beside the training loss, and the gradient run keeps the weights of its best
//! held-out epoch, so overfitting shows and does not ship.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::bail;

use super::dataset::{Dataset, LoadOptions, Split, label, load, sigmoid};
use super::pso::SwarmSettings;
use super::sets::start_weights;
use super::trace::{theta_of, weights_of};
use crate::atomic_file::write_atomically;
use crate::engine::weights::{self, LEN, Weights, name_of};

/// Splits `0..len` into `threads` ranges and sums `f` over them on that many threads.
fn par_sum<T: Send>(
    len: usize,
    threads: usize,
    f: impl Fn(std::ops::Range<usize>) -> T + Sync,
    mut combine: impl FnMut(T),
) {
    let threads = threads.max(1);
    let chunk = len.div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let f = &f;
                let range = (t * chunk).min(len)..((t + 1) * chunk).min(len);
                scope.spawn(move || f(range))
            })
            .collect();
        for handle in handles {
            combine(handle.join().expect("a tuner thread panicked"));
        }
    });
}

/// Mean squared error of the linear form under `theta`.
pub fn loss(data: &Dataset, theta: &[f64], k: f64, lambda: f64, threads: usize) -> f64 {
    if data.is_empty() {
        return f64::NAN;
    }
    let mut total = 0.0;
    par_sum(
        data.len(),
        threads,
        |range| {
            range
                .map(|i| {
                    let e = sigmoid(k, data.traces[i].eval(theta)) - label(data, i, k, lambda);
                    e * e
                })
                .sum::<f64>()
        },
        |part| total += part,
    );
    total / data.len() as f64
}

/// The gradient of [`loss`] with respect to `theta`.
pub fn gradient(data: &Dataset, theta: &[f64], k: f64, lambda: f64, threads: usize) -> Vec<f64> {
    let mut total = vec![0.0; theta.len()];
    par_sum(
        data.len(),
        threads,
        |range| {
            let mut g = vec![0.0; theta.len()];
            for i in range {
                let s = sigmoid(k, data.traces[i].eval(theta));
                let factor = (s - label(data, i, k, lambda)) * s * (1.0 - s) * k;
                data.traces[i].add_gradient(factor, &mut g);
            }
            g
        },
        |part| {
            for (t, p) in total.iter_mut().zip(part) {
                *t += p;
            }
        },
    );
    let n = data.len().max(1) as f64;
    total.iter_mut().for_each(|g| *g *= 2.0 / n);
    total
}

/// The K that best fits the results (λ = 1) with `theta` fixed: golden-section search on
/// log K.
pub fn fit_k(data: &Dataset, theta: &[f64], threads: usize) -> f64 {
    let f = |log_k: f64| loss(data, theta, log_k.exp(), 1.0, threads);
    let (mut a, mut b) = (1e-4f64.ln(), 0.1f64.ln());
    let ratio = (5f64.sqrt() - 1.0) / 2.0;
    let mut c = b - ratio * (b - a);
    let mut d = a + ratio * (b - a);
    let (mut fc, mut fd) = (f(c), f(d));
    for _ in 0..40 {
        if fc < fd {
            b = d;
            d = c;
            fd = fc;
            c = b - ratio * (b - a);
            fc = f(c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + ratio * (b - a);
            fd = f(d);
        }
    }
    ((a + b) / 2.0).exp()
}

/// Which scalars of `theta` may move: the linear terms, less the king's material, and only
/// weights that count in at least `min_positions` training positions (a weight seen a few
/// times fits those few games, not chess).
pub fn movable_linear(data: &Dataset, min_positions: usize) -> Vec<bool> {
    let mut seen = vec![0usize; LEN];
    for trace in &data.traces {
        for f in &trace.features {
            seen[usize::from(f.index)] += 1;
        }
    }
    seen[weights::TEMPO] = data.len();
    let mut movable = vec![false; 2 * LEN];
    for (index, m) in movable.iter_mut().enumerate() {
        let pair = index / 2;
        let Some((term, _)) = weights::term_of(pair) else {
            continue;
        };
        *m = term.linear && pair != weights::MATERIAL + 5 && seen[pair] >= min_positions;
    }
    movable
}

/// Settings of a gradient run.
#[derive(Clone, Copy, Debug)]
pub struct GradientSettings {
    pub epochs: usize,
    /// Adam's step size, centipawns.
    pub learning_rate: f64,
    pub lambda: f64,
    pub threads: usize,
    /// Weights counted in fewer training positions stay as they are.
    pub min_positions: usize,
}

/// One line of a run's progress.
#[derive(Clone, Debug, PartialEq)]
pub struct EpochLoss {
    pub epoch: usize,
    pub train: f64,
    pub held_out: f64,
}

/// Adam on the full batch from `theta`; returns the weights of the epoch with the lowest
/// held-out loss (the last epoch's without held-out data) and the progress.
pub fn descend(
    split: &Split,
    mut theta: Vec<f64>,
    k: f64,
    settings: GradientSettings,
    mut on_epoch: impl FnMut(&EpochLoss),
) -> (Vec<f64>, Vec<EpochLoss>) {
    let movable = movable_linear(&split.train, settings.min_positions);
    let (beta1, beta2, eps) = (0.9, 0.999, 1e-8);
    let mut m = vec![0.0; theta.len()];
    let mut v = vec![0.0; theta.len()];
    let mut best = (f64::INFINITY, theta.clone());
    let mut history = Vec::new();
    let measure = |theta: &[f64], epoch: usize| EpochLoss {
        epoch,
        train: loss(&split.train, theta, k, settings.lambda, settings.threads),
        held_out: loss(&split.held_out, theta, k, settings.lambda, settings.threads),
    };
    for epoch in 1..=settings.epochs {
        let g = gradient(&split.train, &theta, k, settings.lambda, settings.threads);
        let t = epoch as f64;
        for i in 0..theta.len() {
            if !movable[i] {
                continue;
            }
            m[i] = beta1 * m[i] + (1.0 - beta1) * g[i];
            v[i] = beta2 * v[i] + (1.0 - beta2) * g[i] * g[i];
            let m_hat = m[i] / (1.0 - beta1.powf(t));
            let v_hat = v[i] / (1.0 - beta2.powf(t));
            theta[i] -= settings.learning_rate * m_hat / (v_hat.sqrt() + eps);
        }
        if epoch % 25 == 0 || epoch == settings.epochs {
            let point = measure(&theta, epoch);
            let judged = if split.held_out.is_empty() {
                point.train
            } else {
                point.held_out
            };
            if judged < best.0 {
                best = (judged, theta.clone());
            }
            on_epoch(&point);
            history.push(point);
        }
    }
    (best.1, history)
}

/// `ladder tune texel` options.
#[derive(Debug, clap::Args)]
pub struct TexelArgs {
    /// Data files written by `ladder tune datagen` (read in order).
    #[arg(long, required = true, num_args = 1..)]
    pub data: Vec<PathBuf>,
    /// Where to write the tuned weights (text form, as src/engine/weights.txt).
    #[arg(long)]
    pub out: PathBuf,
    /// Where to write the report (Markdown): losses, K, the weights that moved most.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Start from these weights: `handwritten`, `shipped`, or a weights file.
    #[arg(long, default_value = "shipped")]
    pub start: String,
    /// `gradient` (Adam on the exact gradient, linear weights) or `pso` (particle swarm).
    #[arg(long, default_value = "gradient")]
    pub method: String,
    /// Label blend: 1 = the game's result only (Texel), 0 = the search score only.
    #[arg(long, default_value_t = 1.0)]
    pub lambda: f64,
    /// Gradient epochs (full passes over the training data).
    #[arg(long, default_value_t = 1000)]
    pub epochs: usize,
    /// Adam's step size in centipawns.
    #[arg(long, default_value_t = 1.0)]
    pub learning_rate: f64,
    /// Weights that count in fewer training positions than this stay as they are (1000 was
    /// tried on the version 1 data and measured -19 +- 23 Elo against 1).
    #[arg(long, default_value_t = 1)]
    pub min_positions: usize,
    /// One game in this many is held out to watch for overfitting (0: none).
    #[arg(long, default_value_t = 10)]
    pub holdout_every: u64,
    /// Read at most this many positions.
    #[arg(long, default_value_t = usize::MAX)]
    pub max_positions: usize,
    /// Threads for the loss and the gradient.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Swarm: the terms to move, comma-separated names (e.g. king_attack_weight,king_danger).
    #[arg(long, default_value = "king_attack_weight")]
    pub terms: String,
    /// Swarm: iterations.
    #[arg(long, default_value_t = 60)]
    pub iterations: usize,
    /// Swarm: swarms and particles per swarm.
    #[arg(long, default_value_t = 2)]
    pub swarms: usize,
    #[arg(long, default_value_t = 8)]
    pub particles: usize,
    /// Swarm: how far each weight may move from its start, centipawns (or weight units).
    #[arg(long, default_value_t = 10)]
    pub range: i32,
    /// Swarm: the seed of its random moves.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

pub fn run(args: TexelArgs) -> anyhow::Result<()> {
    if !(0.0..=1.0).contains(&args.lambda) {
        bail!("--lambda must lie between 0 and 1");
    }
    let start = start_weights(&args.start)?;
    let pso = match args.method.as_str() {
        "gradient" => false,
        "pso" => true,
        other => bail!("--method {other:?}: expected gradient or pso"),
    };
    let began = Instant::now();
    let split = load(
        &args.data,
        &start,
        LoadOptions {
            holdout_every: args.holdout_every,
            max_positions: args.max_positions,
            keep_positions: pso,
        },
    )?;
    if split.train.is_empty() {
        bail!("no positions in {:?}", args.data);
    }
    tracing::info!(
        "{} training and {} held-out positions from {} games in {:.1} s ({} broken lines skipped)",
        split.train.len(),
        split.held_out.len(),
        split.games,
        began.elapsed().as_secs_f64(),
        split.skipped_lines
    );
    let theta0 = theta_of(&start);
    let k = fit_k(&split.train, &theta0, args.threads);
    tracing::info!("K = {k:.6} (fitted to the results with the starting weights)");
    let before = (
        loss(&split.train, &theta0, k, args.lambda, args.threads),
        loss(&split.held_out, &theta0, k, args.lambda, args.threads),
    );
    let tuned_at = Instant::now();
    let (theta, history) = if pso {
        let swarm = SwarmSettings {
            terms: args.terms.clone(),
            iterations: args.iterations,
            swarms: args.swarms,
            particles: args.particles,
            range: args.range,
            seed: args.seed,
            lambda: args.lambda,
            threads: args.threads,
        };
        let tuned = super::pso::tune(&split, &start, k, &swarm)?;
        (theta_of(&tuned), Vec::new())
    } else {
        let settings = GradientSettings {
            epochs: args.epochs,
            learning_rate: args.learning_rate,
            lambda: args.lambda,
            threads: args.threads,
            min_positions: args.min_positions,
        };
        descend(&split, theta0.clone(), k, settings, |p| {
            tracing::info!(
                "epoch {}: training loss {:.6}, held-out {:.6}",
                p.epoch,
                p.train,
                p.held_out
            );
        })
    };
    let tuned = weights_of(&theta);
    let theta_rounded = theta_of(&tuned);
    let after = (
        loss(&split.train, &theta_rounded, k, args.lambda, args.threads),
        loss(
            &split.held_out,
            &theta_rounded,
            k,
            args.lambda,
            args.threads,
        ),
    );
    let seconds = tuned_at.elapsed().as_secs_f64();
    let report = Report {
        args: &args,
        positions: (split.train.len(), split.held_out.len()),
        games: split.games,
        k,
        before,
        after,
        history: &history,
        start: &start,
        tuned: &tuned,
        seconds,
    };
    let header = report.header();
    write_atomically(&args.out, tuned.to_text(&header))?;
    let markdown = report.markdown();
    if let Some(path) = &args.report {
        write_atomically(path, &markdown)?;
    }
    println!("{markdown}");
    Ok(())
}

struct Report<'a> {
    args: &'a TexelArgs,
    positions: (usize, usize),
    games: u64,
    k: f64,
    before: (f64, f64),
    after: (f64, f64),
    history: &'a [EpochLoss],
    start: &'a Weights,
    tuned: &'a Weights,
    seconds: f64,
}

impl Report<'_> {
    fn header(&self) -> String {
        let data: Vec<String> = self
            .args
            .data
            .iter()
            .map(|p| {
                p.file_name()
                    .map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into())
            })
            .collect();
        format!(
            "The evaluation's weights, tuned by `ladder tune texel --method {}` from {}.\n\
             Data: {} ({} training + {} held-out positions, {} games); lambda {}, K {:.6}.\n\
             Loss (training / held-out): {:.6} / {:.6} before, {:.6} / {:.6} after.",
            self.args.method,
            self.args.start,
            data.join(", "),
            self.positions.0,
            self.positions.1,
            self.games,
            self.args.lambda,
            self.k,
            self.before.0,
            self.before.1,
            self.after.0,
            self.after.1,
        )
    }

    fn markdown(&self) -> String {
        let mut out = String::new();
        out.push_str("# Texel tuning report\n\n");
        for line in self.header().lines() {
            out.push_str(line);
            out.push_str("\n\n");
        }
        out.push_str(&format!(
            "Settings: {} epochs, learning rate {}, weights seen in fewer than {} training \
             positions kept, one game in {} held out. Tuning took {:.1} s ({} threads).\n\n",
            self.args.epochs,
            self.args.learning_rate,
            self.args.min_positions,
            self.args.holdout_every,
            self.seconds,
            self.args.threads
        ));
        out.push_str("| | training loss | held-out loss |\n|---|---:|---:|\n");
        out.push_str(&format!(
            "| before | {:.6} | {:.6} |\n| after | {:.6} | {:.6} |\n\n",
            self.before.0, self.before.1, self.after.0, self.after.1
        ));
        if !self.history.is_empty() {
            out.push_str("| epoch | training loss | held-out loss |\n|---:|---:|---:|\n");
            let step = (self.history.len() / 10).max(1);
            for p in self.history.iter().step_by(step) {
                out.push_str(&format!(
                    "| {} | {:.6} | {:.6} |\n",
                    p.epoch, p.train, p.held_out
                ));
            }
            out.push('\n');
        }
        out.push_str("Weights that moved most (middlegame / endgame, before -> after):\n\n");
        out.push_str("| weight | before | after |\n|---|---:|---:|\n");
        let mut moved: Vec<(i32, usize)> = (0..LEN)
            .map(|i| {
                let (a, b) = (self.start.get(i), self.tuned.get(i));
                ((a[0] - b[0]).abs().max((a[1] - b[1]).abs()), i)
            })
            .filter(|&(d, _)| d > 0)
            .collect();
        moved.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        for &(_, i) in moved.iter().take(25) {
            let (a, b) = (self.start.get(i), self.tuned.get(i));
            out.push_str(&format!(
                "| {} | {} / {} | {} / {} |\n",
                name_of(i),
                a[0],
                a[1],
                b[0],
                b[1]
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Game;
    use crate::tune::sample::Sample;
    use crate::tune::trace::Trace;
    use shakmaty::Position;

    /// Positions labelled by a known evaluation: the material balance under known piece
    /// values, through the sigmoid. Texel's loss must fall as the tuner moves towards them.
    fn synthetic(values: [f64; 5], k: f64) -> Dataset {
        let weights = Weights::handwritten();
        let mut data = Dataset::default();
        let fens = [
            "4k3/8/8/8/8/8/PPP5/4K3 w - - 0 1",
            "4k3/pp6/8/8/8/8/PPP5/4K3 w - - 0 1",
            "4k3/8/8/8/8/8/8/1N2K3 w - - 0 1",
            "4k3/p7/8/8/8/8/8/1N2K3 w - - 0 1",
            "1n2k3/8/8/8/8/8/PPP5/4K3 w - - 0 1",
            "3rk3/8/8/8/8/8/PP6/2B1K3 w - - 0 1",
            "3qk3/8/8/8/8/8/8/R2RK3 w - - 0 1",
            "3qk3/pp6/8/8/8/8/8/R2RK3 w - - 0 1",
            "r3k3/ppp5/8/8/8/8/8/2B1K1N1 w - - 0 1",
            "4k3/pppp4/8/8/8/8/8/2B1K3 w - - 0 1",
        ];
        for fen in fens {
            let game = Game::new(Some(fen), false).unwrap();
            let pos = game.position().clone();
            let board = pos.board();
            let balance: f64 = [
                shakmaty::Role::Pawn,
                shakmaty::Role::Knight,
                shakmaty::Role::Bishop,
                shakmaty::Role::Rook,
                shakmaty::Role::Queen,
            ]
            .iter()
            .enumerate()
            .map(|(i, &role)| {
                let white = (board.by_role(role) & board.white()).count() as f64;
                let black = (board.by_role(role) & board.black()).count() as f64;
                values[i] * (white - black)
            })
            .sum();
            let sample = Sample {
                fen: fen.into(),
                score_cp: 0,
                result: 0.0,
            };
            data.push(Trace::of(&pos, &weights), &sample, None);
            *data.results.last_mut().unwrap() = sigmoid(k, balance) as f32;
        }
        data
    }

    #[test]
    fn the_loss_falls_towards_the_evaluation_that_made_the_labels() {
        let k = 0.006;
        let train = synthetic([100.0, 400.0, 350.0, 550.0, 1000.0], k);
        let split = Split {
            train,
            held_out: Dataset::default(),
            skipped_lines: 0,
            games: 0,
        };
        let theta0 = theta_of(&Weights::handwritten());
        let before = loss(&split.train, &theta0, k, 1.0, 1);
        let settings = GradientSettings {
            epochs: 300,
            learning_rate: 2.0,
            lambda: 1.0,
            threads: 2,
            min_positions: 1,
        };
        let (theta, history) = descend(&split, theta0.clone(), k, settings, |_| {});
        let after = loss(&split.train, &theta, k, 1.0, 1);
        assert!(after < before / 4.0, "loss {before} -> {after}");
        assert!(history.last().unwrap().train < history.first().unwrap().train);
        // The knight, 320 by hand, is pulled towards the 400 that made the labels.
        let knight = 2 * weights::MATERIAL + 2;
        assert!(theta[knight] > theta0[knight] + 20.0, "{}", theta[knight]);
    }

    #[test]
    fn the_gradient_matches_finite_differences() {
        let data = synthetic([90.0, 300.0, 320.0, 500.0, 900.0], 0.005);
        let theta = theta_of(&Weights::handwritten());
        let g = gradient(&data, &theta, 0.005, 1.0, 2);
        for index in [2 * weights::MATERIAL, 2 * weights::MATERIAL + 3] {
            let mut up = theta.clone();
            up[index] += 0.5;
            let mut down = theta.clone();
            down[index] -= 0.5;
            let numeric = loss(&data, &up, 0.005, 1.0, 1) - loss(&data, &down, 0.005, 1.0, 1);
            assert!(
                (numeric - g[index]).abs() <= 1e-3 * numeric.abs().max(1e-9) + 1e-12,
                "index {index}: analytic {}, numeric {numeric}",
                g[index]
            );
        }
    }

    #[test]
    fn a_fitted_k_recovers_the_k_of_the_labels() {
        // Labels made with the hand-written evaluation itself and K = 0.004.
        let weights = Weights::handwritten();
        let theta = theta_of(&weights);
        let mut data = Dataset::default();
        for fen in crate::bench::POSITIONS {
            let game = Game::new(Some(fen), false).unwrap();
            let trace = Trace::of(game.position(), &weights);
            let result = sigmoid(0.004, trace.eval(&theta)) as f32;
            let sample = Sample {
                fen: fen.to_string(),
                score_cp: 0,
                result: 0.0,
            };
            data.push(trace, &sample, None);
            *data.results.last_mut().unwrap() = result;
        }
        let k = fit_k(&data, &theta, 1);
        assert!((k - 0.004).abs() < 0.0002, "K = {k}");
    }
}
