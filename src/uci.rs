//! `ladder uci`: the engine over the UCI protocol on stdin/stdout.

/// `ladder uci` options.
#[derive(Debug, clap::Args)]
pub struct UciArgs {}

pub fn run(_args: UciArgs) -> anyhow::Result<()> {
    anyhow::bail!("ladder uci is not built yet")
}
