//! Writing a new coefficients version: the previous file is kept as
//! history/coefficients-v<N>.toml, then the new one replaces it atomically (temp file, fsync,
//! rename), so a crash leaves either the old or the new file, never half of one.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::atomic_file::write_atomically;
use std::collections::BTreeMap;

use crate::levels::Coefficients;
use crate::results::GameRecord;

use super::select::Versions;

/// The header written above the generated TOML.
const HEADER: &str = "\
# The living level coefficients of the ladder (see LEVELS.md in the design notes and src/levels.rs).
# For level L with offset o(L), x = L + o(L):
#   nodes = n0 * b^x,   noise (logistic scale, centipawns) = s0 * d^x
# Written by `ladder calibrate --apply`; earlier versions are in history/.
# [targets] is the one place the ladder's targets are written: T(L) = from + step * (L - 1) on
# the named scale; accounts, `ladder check`, the sandbox and calibration all read it here.
";

pub use crate::levels::history_path;

/// Replaces `path` (which holds `current`) with `next`, keeping the old text in `history_dir`.
/// Refuses when the file on disk is no longer the version the proposal was computed from, or
/// when the history already holds a different file for that version.
pub fn apply(
    path: &Path,
    current: &Coefficients,
    next: &Coefficients,
    history_dir: &Path,
) -> anyhow::Result<PathBuf> {
    let old_text =
        fs::read_to_string(path).with_context(|| format!("re-reading {}", path.display()))?;
    let on_disk = Coefficients::parse(&old_text, &path.display().to_string())?;
    if on_disk.version != current.version {
        bail!(
            "{} changed while calibrating (now version {}, expected {}); nothing written",
            path.display(),
            on_disk.version,
            current.version
        );
    }
    if next.version != current.version + 1 {
        bail!("the proposal is not version {} + 1", current.version);
    }
    fs::create_dir_all(history_dir)
        .with_context(|| format!("creating {}", history_dir.display()))?;
    let kept = history_path(history_dir, current.version);
    match fs::read_to_string(&kept) {
        Ok(existing) if existing == old_text => {}
        Ok(_) => bail!(
            "{} already exists with different contents; nothing written",
            kept.display()
        ),
        Err(_) => write_atomically(&kept, &old_text)?,
    }
    // Belt and braces: only a file the validator accepts (finite numbers, ratings and offsets
    // in range, a sane hash) is ever written, whatever produced `next`.
    let text = format!("{HEADER}{}", next.to_toml());
    Coefficients::parse(&text, "the new coefficients").context("nothing written")?;
    write_atomically(path, &text)?;
    Ok(kept)
}

/// The older coefficients versions that games outside the window were played with, read from
/// the history directory, so that select.rs can count the games of a level that plays the same
/// now. A version whose file is missing or unreadable is left out (its games with it).
pub fn older_versions(
    records: &[GameRecord],
    window: &Versions,
    current: &Coefficients,
    history_dir: &Path,
) -> BTreeMap<u32, Coefficients> {
    let wanted: std::collections::BTreeSet<u32> = records
        .iter()
        .map(|r| r.header.coefficients_version)
        .filter(|&v| v != current.version && v != 0 && !window.contains(v))
        .collect();
    crate::levels::history_versions(history_dir, wanted, "not compared")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_files::temp_file;

    #[test]
    fn an_absurd_proposal_is_never_written() {
        let (dir, path) = temp_file("coefficients.toml");
        fs::write(&path, Coefficients::DEFAULT_TOML).unwrap();
        let current = Coefficients::builtin();
        let mut next = current.clone();
        next.version += 1;
        next.ratings.insert("3".into(), 3.1e300);
        let err = apply(&path, &current, &next, &dir.path().join("history"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("nothing written"), "{err}");
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            Coefficients::DEFAULT_TOML
        );
        next.ratings.insert("3".into(), 1010.0);
        apply(&path, &current, &next, &dir.path().join("history")).unwrap();
        assert_eq!(Coefficients::load(&path).unwrap(), next);
    }
}
