//! The real `ladder` binary as a daemon process.

use std::path::Path;
use std::process::{Command, Stdio};

/// `ladder run --config <config>`.
pub fn ladder_run(config: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ladder"));
    command.args(["run", "--config"]).arg(config);
    command
}

/// Info logging in the plain style, nothing on stdin, stdout dropped.
pub fn quiet_info(command: &mut Command) -> &mut Command {
    command
        .env("RUST_LOG", "info")
        .env("LADDER_LOG_STYLE", "plain")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
}
