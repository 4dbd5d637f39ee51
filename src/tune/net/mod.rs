//! `ladder tune net`: trains the engine's network evaluation ([`crate::engine::nnue`]) on the
//! positions `datagen` writes, on the CPU, and writes it in the engine's network format.
//!
//! [`data`] reads the files into packed inputs and labels, [`model`] is the float network and
//! its gradient, [`optimizer`] AdamW and the learning-rate schedule, [`train`] the epochs and
//! threads, [`checkpoint`] the state a killed run resumes from; [`speed`] measures the
//! engine's inference (`ladder tune net-speed`).

pub mod checkpoint;
pub mod data;
pub mod model;
pub mod optimizer;
pub mod speed;
#[cfg(test)]
mod test_data;
pub mod train;

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use self::data::{Data, LoadOptions};
use self::optimizer::Schedule;
use self::train::{EpochReport, Settings, State};
use crate::atomic_file::write_atomically;

/// `ladder tune net` options.
#[derive(Debug, clap::Args)]
pub struct NetArgs {
    /// Data files written by `ladder tune datagen` (read in order; games numbered across them).
    #[arg(long, required = true, num_args = 1..)]
    pub data: Vec<PathBuf>,
    /// Where to write the quantised network (the engine's network file format).
    #[arg(long)]
    pub out: PathBuf,
    /// Units per accumulator: the network is (768 -> N) x 2 -> 1.
    #[arg(long, default_value_t = 128)]
    pub hidden: usize,
    /// Output buckets by the number of pieces on the board, (pieces - 2) * B / 32 (bullet's
    /// MaterialCount): each bucket its own output layer over the shared accumulators.
    /// 1: none (the networks up to 5).
    #[arg(long, default_value_t = 1)]
    pub output_buckets: usize,
    /// Passes over the training positions.
    #[arg(long, default_value_t = 10)]
    pub epochs: usize,
    /// Positions per AdamW step.
    #[arg(long, default_value_t = 16384)]
    pub batch_size: usize,
    /// AdamW's starting learning rate.
    #[arg(long, default_value_t = 0.001)]
    pub lr: f32,
    /// The learning rate's schedule: `cosine` (down to --lr-final of it) or `step`
    /// (times --lr-gamma every --lr-step epochs).
    #[arg(long, default_value = "cosine")]
    pub lr_schedule: String,
    /// cosine: the last epoch's rate as a fraction of --lr.
    #[arg(long, default_value_t = 0.01)]
    pub lr_final: f32,
    /// step: epochs between drops.
    #[arg(long, default_value_t = 4)]
    pub lr_step: usize,
    /// step: the factor of each drop.
    #[arg(long, default_value_t = 0.3)]
    pub lr_gamma: f32,
    /// AdamW's decoupled weight decay.
    #[arg(long, default_value_t = 0.01)]
    pub weight_decay: f32,
    /// The game result's weight in the label (marlinflow's --wdl): wdl * result +
    /// (1 - wdl) * sigmoid(score / 400), from the side to move's view. 0.1 measured best on
    /// net-gen1 (+53 Elo at fixed nodes against 0.3's -76; 0 as good as 0.1).
    #[arg(long, default_value_t = 0.1)]
    pub wdl: f32,
    /// One game in this many is held out for the validation loss (0: none).
    #[arg(long, default_value_t = 20)]
    pub holdout_every: u64,
    /// Read at most this many positions.
    #[arg(long, default_value_t = usize::MAX)]
    pub max_positions: usize,
    /// Also train on the file-mirror (a↔h) of every training position without castling
    /// rights: nearly twice the samples from the same games.
    #[arg(long)]
    pub mirror: bool,
    /// Threads for the gradient (the result does not depend on them).
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// The seed of the starting weights and of each epoch's shuffle.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write a checkpoint after every epoch here, and resume from the latest one found.
    #[arg(long)]
    pub checkpoint_dir: Option<PathBuf>,
}

impl NetArgs {
    fn settings(&self) -> anyhow::Result<Settings> {
        let schedule = match self.lr_schedule.as_str() {
            "cosine" => Schedule::Cosine {
                final_fraction: self.lr_final,
            },
            "step" => Schedule::Step {
                every: self.lr_step.max(1),
                gamma: self.lr_gamma,
            },
            other => bail!("--lr-schedule {other:?}: expected `cosine` or `step`"),
        };
        let max_hidden = crate::engine::nnue::network::MAX_HIDDEN;
        if self.hidden == 0 || self.hidden > max_hidden {
            bail!("--hidden {} is not within 1..={max_hidden}", self.hidden);
        }
        let max_buckets = crate::engine::nnue::network::MAX_BUCKETS;
        if self.output_buckets == 0 || self.output_buckets > max_buckets {
            bail!(
                "--output-buckets {} is not within 1..={max_buckets}",
                self.output_buckets
            );
        }
        if self.epochs == 0 || self.batch_size == 0 {
            bail!("--epochs and --batch-size must be at least 1");
        }
        if !(self.lr > 0.0 && self.lr.is_finite()) {
            bail!("--lr {} is not a positive number", self.lr);
        }
        Ok(Settings {
            hidden: self.hidden,
            buckets: self.output_buckets,
            epochs: self.epochs,
            batch_size: self.batch_size,
            learning_rate: self.lr,
            schedule,
            weight_decay: self.weight_decay,
            seed: self.seed,
            threads: self.threads.clamp(1, train::SLICES),
        })
    }
}

/// Trains from the start or from the latest checkpoint in `checkpoints`, saving one after
/// every epoch; `report` hears each epoch and may stop the run (as a kill would, after the
/// epoch's checkpoint).
pub fn run_training(
    data: &Data,
    settings: &Settings,
    checkpoints: Option<&Path>,
    mut report: impl FnMut(&EpochReport) -> ControlFlow<()>,
) -> anyhow::Result<State> {
    let fingerprint = settings.fingerprint() ^ data.train.fingerprint().rotate_left(1);
    let start = match checkpoints {
        Some(dir) => checkpoint::latest(dir, fingerprint, settings.weight_decay)?,
        None => None,
    };
    let start = match start {
        Some(state) => {
            tracing::info!("resuming after epoch {}", state.epochs_done);
            state
        }
        None => State::start(settings),
    };
    let mut saved = Ok(());
    let state = train::train(data, settings, start, |state, epoch| {
        if let Some(dir) = checkpoints
            && let Err(e) = checkpoint::save(dir, state, fingerprint)
        {
            saved = Err(e);
            return ControlFlow::Break(());
        }
        report(epoch)
    });
    saved?;
    Ok(state)
}

pub fn run(args: NetArgs) -> anyhow::Result<()> {
    let settings = args.settings()?;
    let started = std::time::Instant::now();
    let data = data::load(
        &args.data,
        LoadOptions {
            wdl: args.wdl,
            holdout_every: args.holdout_every,
            max_positions: args.max_positions,
            mirror: args.mirror,
        },
    )?;
    let bytes = data.train.bytes() + data.validation.bytes();
    println!(
        "data: {} training and {} held-out positions from {} games ({} broken lines skipped), \
         {:.1} MB in memory ({:.1} bytes a position), read in {:.1} s",
        data.train.len(),
        data.validation.len(),
        data.games,
        data.skipped_lines,
        bytes as f64 / 1e6,
        bytes as f64 / (data.train.len() + data.validation.len()) as f64,
        started.elapsed().as_secs_f64()
    );
    println!(
        "network: (768 -> {}) x 2 -> 1, SCReLU, {} output bucket(s); {} epochs of batches of \
         {}, lr {} ({}), weight decay {}, wdl {}, seed {}, {} threads",
        settings.hidden,
        settings.buckets,
        settings.epochs,
        settings.batch_size,
        settings.learning_rate,
        settings.schedule.describe(),
        settings.weight_decay,
        args.wdl,
        settings.seed,
        settings.threads
    );
    let state = run_training(&data, &settings, args.checkpoint_dir.as_deref(), |epoch| {
        let validation = epoch
            .validation_loss
            .map_or("-".to_string(), |v| format!("{v:.6}"));
        println!(
            "epoch {:>3}  lr {:.6}  train loss {:.6}  validation loss {validation}  \
             {:.0} positions/s",
            epoch.epoch, epoch.learning_rate, epoch.train_loss, epoch.positions_per_second
        );
        ControlFlow::Continue(())
    })?;
    let network = state
        .network
        .quantise()
        .context("the trained weights do not quantise")?;
    write_atomically(&args.out, network.to_bytes())?;
    println!("network written to {}", args.out.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings {
            hidden: 8,
            buckets: 1,
            epochs: 3,
            batch_size: 64,
            learning_rate: 0.01,
            schedule: Schedule::Cosine {
                final_fraction: 0.1,
            },
            weight_decay: 0.01,
            seed: 3,
            threads: 2,
        }
    }

    #[test]
    fn a_killed_and_resumed_run_ends_as_an_uninterrupted_one() {
        // Without output buckets and with three (the checkpoint tells them by its size).
        for buckets in [1, 3] {
            killed_and_resumed(Settings {
                buckets,
                ..settings()
            });
        }
    }

    fn killed_and_resumed(settings: Settings) {
        let data = test_data::material_data(400, 5);
        let whole = run_training(&data, &settings, None, |_| ControlFlow::Continue(())).unwrap();
        let dir = tempfile::tempdir().unwrap();
        // Killed after the first epoch's checkpoint...
        let killed = run_training(&data, &settings, Some(dir.path()), |_| {
            ControlFlow::Break(())
        })
        .unwrap();
        assert_eq!(killed.epochs_done, 1);
        assert!(checkpoint::path_of(dir.path(), 1).exists());
        // ...and started again: it goes on from epoch 2.
        let mut epochs = Vec::new();
        let resumed = run_training(&data, &settings, Some(dir.path()), |report| {
            epochs.push(report.epoch);
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(epochs, [2, 3]);
        assert_eq!(resumed, whole);
        assert_eq!(
            resumed.network.quantise().unwrap().to_bytes(),
            whole.network.quantise().unwrap().to_bytes()
        );
    }

    #[test]
    fn a_checkpoint_of_another_run_or_a_damaged_one_is_an_error() {
        let data = test_data::material_data(200, 6);
        let dir = tempfile::tempdir().unwrap();
        run_training(&data, &settings(), Some(dir.path()), |_| {
            ControlFlow::Break(())
        })
        .unwrap();
        for other in [
            Settings {
                seed: 4,
                ..settings()
            },
            Settings {
                buckets: 2,
                ..settings()
            },
        ] {
            let e = run_training(&data, &other, Some(dir.path()), |_| {
                ControlFlow::Continue(())
            })
            .unwrap_err();
            assert!(format!("{e:#}").contains("other settings or data"), "{e:#}");
        }
        let path = checkpoint::path_of(dir.path(), 1);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[100] ^= 1;
        std::fs::write(&path, bytes).unwrap();
        let e = run_training(&data, &settings(), Some(dir.path()), |_| {
            ControlFlow::Continue(())
        })
        .unwrap_err();
        assert!(format!("{e:#}").contains("damaged"), "{e:#}");
    }
}
