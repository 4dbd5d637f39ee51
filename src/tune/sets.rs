//! What the tuners' command lines name: weight sets (`shipped`, `handwritten`, or a file) and
//! sets of search constants (`shipped` or a file).

use anyhow::Context;

use crate::engine::{SearchConstants, Weights};

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

/// The search constants a command-line value names: `shipped`, or a file `ladder tune search`
/// wrote.
pub fn start_constants(start: &str) -> anyhow::Result<SearchConstants> {
    match start {
        "shipped" => Ok(SearchConstants::shipped()),
        path => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the search constants file {path}"))?;
            SearchConstants::parse(&text).map_err(|e| anyhow::anyhow!("{path}: {e}"))
        }
    }
}
