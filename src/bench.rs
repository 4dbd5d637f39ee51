//! `ladder bench`: a fixed set of positions searched to a fixed depth; the node count is the signature.

/// `ladder bench` options.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {}

pub fn run(_args: BenchArgs) -> anyhow::Result<()> {
    anyhow::bail!("ladder bench is not built yet")
}
