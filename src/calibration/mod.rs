//! Calibration: rating estimation from the results log, coefficient fit, report, simulation.

/// `ladder calibrate` options.
#[derive(Debug, clap::Args)]
pub struct CalibrateArgs {}

pub fn run(_args: CalibrateArgs) -> anyhow::Result<()> {
    anyhow::bail!("ladder calibrate is not built yet")
}
