//! The daemon (`ladder run`): account actors, game actors, the search pool, shutdown and reload.

/// `ladder run` options.
#[derive(Debug, clap::Args)]
pub struct RunArgs {}

pub fn run(_args: RunArgs) -> anyhow::Result<()> {
    anyhow::bail!("ladder run is not built yet")
}
