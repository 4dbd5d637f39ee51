//! `ladder perft`: move generation counts, to check the board layer.

/// `ladder perft` options.
#[derive(Debug, clap::Args)]
pub struct PerftArgs {}

pub fn run(_args: PerftArgs) -> anyhow::Result<()> {
    anyhow::bail!("ladder perft is not built yet")
}
