//! The real `ladder` binary run as a command to its end.

use std::ffi::OsStr;
use std::process::{Command, Output};

/// The binary under test.
pub const LADDER: &str = env!("CARGO_BIN_EXE_ladder");

/// `ladder` with `args` and `env` (on top of the test's environment), run to its end.
pub fn ladder_output<I, S>(args: I, env: &[(&str, &str)]) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    Command::new(LADDER)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("the ladder binary runs")
}

/// Whether it succeeded, its stdout and its stderr.
pub fn texts(out: &Output) -> (bool, String, String) {
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
