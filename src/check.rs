//! `ladder check` and `ladder upgrade`: validate a deployment without playing.

/// `ladder check` options.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {}

/// `ladder upgrade` options.
#[derive(Debug, clap::Args)]
pub struct UpgradeArgs {}

pub fn run_check(_args: CheckArgs) -> anyhow::Result<()> {
    anyhow::bail!("ladder check is not built yet")
}

pub fn run_upgrade(_args: UpgradeArgs) -> anyhow::Result<()> {
    anyhow::bail!("ladder upgrade is not built yet")
}
