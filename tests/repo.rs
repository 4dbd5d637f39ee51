//! The repository as a clone has it: what the commands write by default stays out of git (an
//! arena or sandbox run, the daemon's PGN log, the calibration report never change or add a
//! tracked file), and CI names the external engines whose tests skip, failing where it could
//! have installed them.

mod common {
    pub mod cli;
}

use std::path::Path;
use std::process::Command;

use common::cli::{ladder_output, texts};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The default of `--results` in `ladder arena --help`.
fn arena_results_default() -> String {
    let (ok, help, _) = texts(&ladder_output(["arena", "--help"], &[]));
    assert!(ok);
    let after = help.split_once("--results").expect("arena has --results").1;
    let default = after
        .split_once("[default: ")
        .expect("--results has a default")
        .1;
    default.split(']').next().unwrap().to_string()
}

/// Whether git ignores `path` (relative to the repository): a path git ignores is not tracked.
/// `None` without git.
fn ignored(path: &str) -> Option<bool> {
    let status = Command::new("git")
        .args(["check-ignore", "-q", path])
        .current_dir(ROOT)
        .status()
        .ok()?;
    // 0: ignored, 1: not ignored (or tracked), 128: not a git checkout.
    (status.code() != Some(128)).then(|| status.success())
}

#[test]
fn what_the_commands_write_by_default_is_ignored_by_git_wherever_they_run() {
    let arena = arena_results_default();
    assert_eq!(arena, "arena-results.jsonl");
    let outputs = [
        arena.clone(),
        "arena-results.pgn".into(),
        "arena-report.md".into(),
        // `ladder arena` run from a subdirectory writes there.
        format!("calibration/{arena}"),
        format!("scripts/{arena}"),
        "sandbox-results.jsonl".into(),
        "sandbox-results.pgn".into(),
        "sandbox-results.open-games.json".into(),
        "calibration/results.jsonl".into(),
        "calibration/results.pgn".into(),
        "calibration/results.open-games.json".into(),
        "calibration/report/calibration.md".into(),
        "calibration/report/calibration.svg".into(),
    ];
    let mut not_ignored = Vec::new();
    for path in &outputs {
        match ignored(path) {
            None => {
                eprintln!("SKIPPED: git or a git checkout is missing");
                return;
            }
            Some(true) => {}
            Some(false) => not_ignored.push(path.as_str()),
        }
    }
    assert!(
        not_ignored.is_empty(),
        "written by default and not ignored by git (or tracked): {not_ignored:?}"
    );
    // What is committed on purpose stays visible to git.
    for tracked in ["calibration/coefficients.toml", "accounts.toml"] {
        assert_eq!(ignored(tracked), Some(false), "{tracked}");
    }
}

/// `.ci/engines` with the engines looked for in `dir`: whether it succeeded and its stdout
/// and stderr.
fn engines(dir: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new("bash")
        .arg(Path::new(ROOT).join(".ci/engines"))
        .args(args)
        .env("LADDER_ENGINE_DIR", dir)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn fake_engine(dir: &Path, name: &str) {
    let path = dir.join(name);
    std::fs::write(&path, "#!/bin/sh\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

#[test]
fn ci_names_the_missing_engines_in_one_line_and_fails_when_it_requires_them() {
    let dir = tempfile::tempdir().unwrap();
    fake_engine(dir.path(), "stockfish");

    let (ok, out, _) = engines(dir.path(), &[]);
    assert!(ok, "without --require a missing engine is said, not fatal");
    assert_eq!(out.lines().count(), 1, "{out}");
    let listed = out
        .split_once(": ")
        .and_then(|(_, rest)| rest.split(';').next())
        .unwrap_or_else(|| panic!("no list of missing engines: {out}"));
    assert!(out.contains("MISSING"), "{out}");
    assert_eq!(listed, "fairy-stockfish ethereal-chess", "{out}");
    assert!(out.contains("SKIPPED"), "{out}");

    let (ok, out, err) = engines(dir.path(), &["--require"]);
    assert!(!ok, "CI passed with engines missing:\n{out}{err}");

    fake_engine(dir.path(), "fairy-stockfish");
    fake_engine(dir.path(), "ethereal-chess");
    let (ok, out, _) = engines(dir.path(), &["--require"]);
    assert!(ok, "{out}");
    assert!(out.contains("all installed"), "{out}");
}

#[test]
fn ci_requires_the_engines_it_installs_and_runs_the_readme_test_command() {
    let run = std::fs::read_to_string(Path::new(ROOT).join(".ci/run")).unwrap();
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    assert!(
        readme.contains("cargo test --locked"),
        "the README's test command"
    );
    assert!(
        run.lines().any(|l| l.trim() == "cargo test --locked"),
        ".ci/run does not run the README's test command"
    );
    assert!(run.contains("require=\"--require\""), "{run}");
    assert!(run.contains("bash .ci/engines $require"), "{run}");
    assert!(
        run.contains("WARNING") && run.contains("apt-get is not available"),
        "no loud word when the engines cannot be installed"
    );
}
