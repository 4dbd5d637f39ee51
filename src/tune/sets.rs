//! Weight sets by name on the command line (`shipped`, `handwritten`, or a file), and writing
//! a tuner's output so a kill never leaves half a file.

use anyhow::Context;

use crate::engine::Weights;

/// The weight set a command-line value names: `handwritten`, `shipped`, or a weights file.
pub fn start_weights(start: &str) -> anyhow::Result<Weights> {
    match start {
        "handwritten" => Ok(Weights::handwritten()),
        "shipped" => Ok((*Weights::shipped()).clone()),
        path => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the weights file {path}"))?;
            Weights::parse(&text).map_err(|e| anyhow::anyhow!("{path}: {e}"))
        }
    }
}
