//! Checkpoints: the whole state of a run after an epoch (float weights, AdamW's moments and
//! steps), one file per epoch in `--checkpoint-dir`, so a killed run resumes from its latest
//! and ends with the same bytes as a run never stopped.
//!
//! File (little-endian): magic `LDRNETCK`, version u32 (1), the run's fingerprint u64 (settings
//! and data), hidden u32, epochs done u32, AdamW steps u64, parameter count u64, then the
//! parameters, the first and the second moments (f32 each), and an FNV-1a 64 checksum. The
//! number of output buckets follows from the hidden size and the parameter count.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use super::model::FloatNetwork;
use super::optimizer::AdamW;
use super::train::State;
use crate::atomic_file::write_atomically;
use crate::engine::nnue::network::fnv1a64;

const MAGIC: &[u8; 8] = b"LDRNETCK";
const VERSION: u32 = 1;
const HEADER_LEN: usize = 8 + 4 + 8 + 4 + 4 + 8 + 8;

/// The file of the checkpoint after `epoch`.
pub fn path_of(dir: &Path, epoch: usize) -> PathBuf {
    dir.join(format!("epoch-{epoch:04}.ckpt"))
}

/// Writes the state after an epoch (atomically: a kill leaves the previous checkpoint whole).
pub fn save(dir: &Path, state: &State, fingerprint: u64) -> anyhow::Result<()> {
    let params = &state.network.params;
    let mut bytes = Vec::with_capacity(HEADER_LEN + 12 * params.len() + 8);
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&VERSION.to_le_bytes());
    bytes.extend_from_slice(&fingerprint.to_le_bytes());
    bytes.extend_from_slice(&(state.network.hidden as u32).to_le_bytes());
    bytes.extend_from_slice(&(state.epochs_done as u32).to_le_bytes());
    bytes.extend_from_slice(&state.optimizer.steps.to_le_bytes());
    bytes.extend_from_slice(&(params.len() as u64).to_le_bytes());
    for values in [params, &state.optimizer.m, &state.optimizer.v] {
        for value in values {
            bytes.extend_from_slice(&value.to_le_bytes());
        }
    }
    let checksum = fnv1a64(&bytes);
    bytes.extend_from_slice(&checksum.to_le_bytes());
    write_atomically(&path_of(dir, state.epochs_done), bytes)?;
    Ok(())
}

/// The state of the latest checkpoint in `dir` (`None` when there is none); an error when it
/// belongs to another run (other settings or data) or is damaged.
pub fn latest(dir: &Path, fingerprint: u64, weight_decay: f32) -> anyhow::Result<Option<State>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", dir.display())),
    };
    let mut best: Option<(usize, PathBuf)> = None;
    for entry in entries {
        let path = entry?.path();
        let epoch = path.file_name().and_then(|n| n.to_str()).and_then(|n| {
            n.strip_prefix("epoch-")?
                .strip_suffix(".ckpt")?
                .parse()
                .ok()
        });
        if let Some(epoch) = epoch
            && best.as_ref().is_none_or(|(b, _)| epoch > *b)
        {
            best = Some((epoch, path));
        }
    }
    let Some((_, path)) = best else {
        return Ok(None);
    };
    let bytes = std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
    read(&bytes, fingerprint, weight_decay)
        .with_context(|| format!("checkpoint {}", path.display()))
        .map(Some)
}

fn read(bytes: &[u8], fingerprint: u64, weight_decay: f32) -> anyhow::Result<State> {
    if bytes.len() < HEADER_LEN + 8 || &bytes[..8] != MAGIC {
        bail!("not a trainer checkpoint");
    }
    let (body, checksum) = bytes.split_at(bytes.len() - 8);
    if fnv1a64(body).to_le_bytes() != checksum {
        bail!("damaged (checksum); delete it to resume from the one before");
    }
    let u32_at = |at: usize| u32::from_le_bytes(body[at..at + 4].try_into().unwrap_or([0; 4]));
    let u64_at = |at: usize| u64::from_le_bytes(body[at..at + 8].try_into().unwrap_or([0; 8]));
    if u32_at(8) != VERSION {
        bail!(
            "checkpoint version {}, this build reads {VERSION}",
            u32_at(8)
        );
    }
    if u64_at(12) != fingerprint {
        bail!(
            "made by a run with other settings or data; use another --checkpoint-dir, or the \
             settings and data of that run"
        );
    }
    let hidden = u32_at(20) as usize;
    let epochs_done = u32_at(24) as usize;
    let steps = u64_at(28);
    let count = u64_at(36) as usize;
    let buckets = (1..=crate::engine::nnue::network::MAX_BUCKETS)
        .find(|&b| FloatNetwork::param_count(hidden, b) == count);
    let Some(buckets) = buckets.filter(|_| body.len() == HEADER_LEN + 12 * count) else {
        bail!("its size does not match its header");
    };
    let floats: Vec<f32> = body[HEADER_LEN..]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let (params, moments) = floats.split_at(count);
    let (m, v) = moments.split_at(count);
    Ok(State {
        network: FloatNetwork {
            hidden,
            buckets,
            params: params.to_vec(),
        },
        optimizer: AdamW {
            m: m.to_vec(),
            v: v.to_vec(),
            steps,
            weight_decay,
        },
        epochs_done,
    })
}
