//! The daemon (`ladder run`): account actors, game actors, the search pool, shutdown and reload.

pub mod clock;
pub mod game;
pub mod policy;
pub mod pool;
pub mod results_writer;
pub mod shutdown;
pub mod tracker;

/// `ladder run` options.
#[derive(Debug, clap::Args)]
pub struct RunArgs {}

pub fn run(_args: RunArgs) -> anyhow::Result<()> {
    anyhow::bail!("ladder run is not built yet")
}
