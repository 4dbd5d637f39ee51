//! `ladder tune`: making the engine's evaluation good from its own games.
//!
//! `datagen` plays the engine against itself and writes labelled quiet positions
//! ([`sample`] is the format); `texel` fits the evaluation's weights to them by Texel's method.

pub mod datagen;
pub mod sample;

/// `ladder tune` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum TuneCommand {
    /// Play the engine against itself and write labelled quiet positions (resumable, shardable).
    Datagen(datagen::DatagenArgs),
}

pub fn run(command: TuneCommand) -> anyhow::Result<()> {
    match command {
        TuneCommand::Datagen(args) => datagen::run(args),
    }
}
