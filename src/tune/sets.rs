//! What the tuners' command lines name: weight sets (`shipped`, `handwritten`, or a file),
//! networks (`net:VERSION` built in, `net:FILE`) and sets of search constants (`shipped` or a
//! file).

use std::sync::Arc;

use anyhow::Context;

use crate::engine::evaluator::network_of_version;
use crate::engine::nnue::Network;
use crate::engine::{Evaluator, SearchConstants, Weights};

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

/// The evaluation a command-line value names: `net:VERSION` a built-in network, `net:FILE` a
/// network file, anything else a weight set as [`start_weights`] reads it.
pub fn start_evaluator(start: &str) -> anyhow::Result<Evaluator> {
    let Some(network) = start.strip_prefix("net:") else {
        return Ok(Evaluator::Classical(Arc::new(start_weights(start)?)));
    };
    if let Ok(version) = network.parse::<u32>() {
        return network_of_version(version)
            .map(Evaluator::Network)
            .ok_or_else(|| anyhow::anyhow!("{start}: no built-in network of version {version}"));
    }
    let bytes = std::fs::read(network)
        .with_context(|| format!("cannot read the network file {network}"))?;
    let network = Network::from_bytes(&bytes).map_err(|e| anyhow::anyhow!("{network}: {e}"))?;
    Ok(Evaluator::Network(Arc::new(network)))
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
