//! Files a test deployment needs beside its accounts.toml.

use std::path::{Path, PathBuf};

use ladder::levels::Coefficients;

/// Writes the shipped coefficients to `<dir>/calibration/coefficients.toml`; returns the path.
pub fn shipped_coefficients(dir: &Path) -> PathBuf {
    let path = dir.join("calibration/coefficients.toml");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, Coefficients::DEFAULT_TOML).unwrap();
    path
}
