//! The tuner's data in memory: labelled positions read from `datagen` files, each with its
//! trace, split into training and held-out games; the labels and the sigmoid they go through.

use std::path::PathBuf;

use anyhow::Context;
use shakmaty::Chess;

use super::sample::{Sample, is_held_out, parse_position, report_skipped, skip_line};
use super::trace::Trace;
use crate::engine::Weights;

/// Labelled positions with their traces.
#[derive(Default)]
pub struct Dataset {
    pub traces: Vec<Trace>,
    /// Game result, White's view.
    pub results: Vec<f32>,
    /// Search score, White's view, centipawns.
    pub scores: Vec<f32>,
    /// The positions themselves, kept only when a swarm needs to evaluate them afresh.
    pub positions: Vec<Chess>,
}

impl Dataset {
    pub fn len(&self) -> usize {
        self.traces.len()
    }
    pub fn is_empty(&self) -> bool {
        self.traces.is_empty()
    }
    pub fn push(&mut self, trace: Trace, sample: &Sample, pos: Option<Chess>) {
        self.traces.push(trace);
        self.results.push(sample.result as f32);
        self.scores.push(sample.score_cp as f32);
        if let Some(pos) = pos {
            self.positions.push(pos);
        }
    }
}

/// The training and held-out parts of the data, and what loading skipped.
pub struct Split {
    pub train: Dataset,
    pub held_out: Dataset,
    pub skipped_lines: usize,
    pub games: u64,
}

/// How to read the data.
#[derive(Clone, Copy, Debug)]
pub struct LoadOptions {
    /// One game in this many is held out (0: none).
    pub holdout_every: u64,
    /// Read at most this many positions.
    pub max_positions: usize,
    /// Keep the positions for the swarm.
    pub keep_positions: bool,
}

/// Reads data files; a broken line is logged with its file and line and skipped.
pub fn load(files: &[PathBuf], weights: &Weights, options: LoadOptions) -> anyhow::Result<Split> {
    let mut split = Split {
        train: Dataset::default(),
        held_out: Dataset::default(),
        skipped_lines: 0,
        games: 0,
    };
    'files: for file in files {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        for (number, line) in text.lines().enumerate() {
            if split.train.len() + split.held_out.len() >= options.max_positions {
                break 'files;
            }
            if line.starts_with("#game") {
                split.games += 1;
                continue;
            }
            match parse_position(line) {
                Ok(None) => {}
                Ok(Some((sample, pos))) => {
                    let part = if is_held_out(split.games, options.holdout_every) {
                        &mut split.held_out
                    } else {
                        &mut split.train
                    };
                    let trace = Trace::of(&pos, weights);
                    part.push(trace, &sample, options.keep_positions.then_some(pos));
                }
                Err(e) => skip_line(&mut split.skipped_lines, file, number, &e),
            }
        }
    }
    report_skipped(split.skipped_lines);
    Ok(split)
}

/// σ(K · x): the expected score of an evaluation of `x` centipawns.
#[inline]
pub fn sigmoid(k: f64, x: f64) -> f64 {
    1.0 / (1.0 + (-k * x).exp())
}

/// The label of position `i`: λ · result + (1 − λ) · σ(K · search score).
#[inline]
pub fn label(data: &Dataset, i: usize, k: f64, lambda: f64) -> f64 {
    let result = f64::from(data.results[i]);
    if lambda >= 1.0 {
        result
    } else {
        lambda * result + (1.0 - lambda) * sigmoid(k, f64::from(data.scores[i]))
    }
}
