//! Test set-up shared by the unit tests: a file path in a fresh temporary directory.

use std::path::PathBuf;

/// A path named `name` in a new temporary directory, which lives as long as the returned
/// guard.
pub fn temp_file(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    (dir, path)
}
