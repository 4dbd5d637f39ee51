//! `ladder tune`: making the engine's evaluation good from its own games.
//!
//! `datagen` plays the engine against itself and writes labelled quiet positions
//! ([`sample`] is the format), `merge` joins the shards of one run; `texel` fits the evaluation's weights to them by Texel's method;
//! `search` tunes the search's constants by a genetic search judged by games ([`genetic`]);
//! `match` is the judge of both. `errors` counts what the humane error model does at a level
//! on the positions of its recorded games ([`errors`]).

pub mod datagen;
pub mod dataset;
pub mod errors;
pub mod genetic;
pub mod matches;
pub mod merge;
pub mod net;
pub mod pso;
pub mod sample;
pub mod sets;
pub mod texel;
pub mod trace;

/// `ladder tune` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum TuneCommand {
    /// Play the engine against itself and write labelled quiet positions (resumable, shardable).
    Datagen(datagen::DatagenArgs),
    /// Join the shard files of one datagen run, refusing a set that is incomplete, overlapping
    /// or made by different settings, weights or binaries.
    Merge(merge::MergeArgs),
    /// Fit the evaluation's weights to the data by Texel's method (gradient or particle swarm).
    Texel(Box<texel::TexelArgs>),
    /// Two players (weights and search constants) against each other at fixed nodes.
    Match(matches::MatchArgs),
    /// Tune the search's constants by a genetic search judged by games (resumable).
    Search(Box<genetic::SearchArgs>),
    /// Train the network evaluation on datagen's data (CPU, deterministic by seed, resumable).
    Net(Box<net::NetArgs>),
    /// Measure the network evaluation's speed: refreshed from the board or updated by moves.
    NetSpeed(net::speed::SpeedArgs),
    /// Print an evaluation weight set in its text form (the shipped one by default).
    Weights(WeightsArgs),
    /// Count the humane error model's verdicts (noticed, stumbled, aimed) at a level on the
    /// positions of its recorded games, for one or more coefficients files.
    Errors(errors::ErrorsArgs),
}

/// `ladder tune weights` options.
#[derive(Debug, clap::Args)]
pub struct WeightsArgs {
    /// Print the hand-written, untuned weights instead of the shipped ones.
    #[arg(long)]
    pub handwritten: bool,
}

fn print_weights(args: WeightsArgs) -> anyhow::Result<()> {
    use std::io::Write as _;
    let (weights, header) = if args.handwritten {
        (
            crate::engine::Weights::handwritten(),
            "The evaluation's hand-written weights (geometric rules, never tuned).",
        )
    } else {
        (
            (*crate::engine::Weights::shipped()).clone(),
            "The evaluation's shipped weights.",
        )
    };
    let text = weights.to_text(header);
    // A closed pipe (`| head`) ends the output quietly.
    let _ = std::io::stdout().write_all(text.as_bytes());
    Ok(())
}

pub fn run(command: TuneCommand) -> anyhow::Result<()> {
    match command {
        TuneCommand::Datagen(args) => datagen::run(args),
        TuneCommand::Merge(args) => merge::run(args),
        TuneCommand::Weights(args) => print_weights(args),
        TuneCommand::Texel(args) => texel::run(*args),
        TuneCommand::Match(args) => matches::run(args),
        TuneCommand::Search(args) => genetic::run(*args),
        TuneCommand::Net(args) => net::run(*args),
        TuneCommand::NetSpeed(args) => net::speed::run(args),
        TuneCommand::Errors(args) => errors::run(args),
    }
}
