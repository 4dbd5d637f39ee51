//! Offline matches between levels and external UCI engines (`ladder arena`).

/// `ladder arena` options.
#[derive(Debug, clap::Args)]
pub struct ArenaArgs {}

pub fn run(_args: ArenaArgs) -> anyhow::Result<()> {
    anyhow::bail!("ladder arena is not built yet")
}
