//! Programs some tests need from the machine, and what such a test says without them.

use std::process::{Command, Stdio};

/// Whether `program --version` runs and succeeds; without it, says on stderr that the test
/// was `SKIPPED` and what `skipped` says.
pub fn installed(program: &str, skipped: &str) -> bool {
    let found = Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        eprintln!("SKIPPED: {skipped}");
    }
    found
}
