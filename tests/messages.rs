//! What the binary says when things go wrong, as a new user meets it: output cut short by a
//! closed pipe ends quietly; an error is one headline that says what went wrong (each cause
//! once, no backtrace) and then what to do; a missing accounts.toml says how to make one;
//! `check` shows no NaN when the coefficients are missing and calls a results directory that
//! `run` would create a note, not a problem.

mod common {
    pub mod cli;
}

use std::path::Path;
use std::process::{Command, Stdio};

use common::cli::{LADDER, ladder_output, texts};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// `ladder args` in `dir` with `RUST_BACKTRACE=1` (as the sandbox had it), run to its end.
fn ladder_in(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(LADDER)
        .args(args)
        .current_dir(dir)
        .env("RUST_BACKTRACE", "1")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (_, stdout, stderr) = texts(&out);
    (out.status.code(), stdout, stderr)
}

/// The repository's accounts.toml in `dir`, with `results` as daemon.results.
fn accounts_toml(dir: &Path, results: &str) -> std::path::PathBuf {
    let text = std::fs::read_to_string(Path::new(ROOT).join("accounts.toml")).unwrap();
    let text = text.replace(
        "results = \"calibration/results.jsonl\"",
        &format!("results = \"{results}\""),
    );
    let path = dir.join("accounts.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// `ladder check --offline` in `dir` on the repository's accounts.toml written there with
/// `results` as daemon.results: its exit code and stdout.
fn check_offline(dir: &Path, results: &str) -> (Option<i32>, String) {
    let config = accounts_toml(dir, results);
    let (code, stdout, _) = ladder_in(
        dir,
        &["check", "--offline", "--config", config.to_str().unwrap()],
    );
    (code, stdout)
}

#[test]
fn every_printing_command_ends_quietly_when_its_reader_is_gone() {
    let missing = tempfile::tempdir().unwrap();
    let no_config = missing.path().join("accounts.toml");
    let no_config = no_config.to_str().unwrap();
    let commands: [&[&str]; 8] = [
        &["levels"],
        &["perft", "3"],
        &["bench", "--depth", "1"],
        &["tune", "weights"],
        &["check", "--offline", "--config", no_config],
        &["--help"],
        &["arena", "--help"],
        &["--version"],
    ];
    for args in commands {
        // A pipe whose reading end is closed before the command writes anything.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(LADDER)
            .args(args)
            .env("RUST_BACKTRACE", "1")
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "ladder {args:?} on a closed pipe:\n{stderr}"
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "ladder {args:?} on a closed pipe: {}\n{stderr}",
            out.status
        );
    }
}

#[test]
fn an_error_says_what_went_wrong_and_what_to_do_in_its_headline_each_cause_once() {
    let out = ladder_output(["perft", "2", "not a fen"], &[("RUST_BACKTRACE", "1")]);
    let (_, _, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let headline = stderr.lines().next().unwrap_or("");
    assert!(
        headline.starts_with("error: bad FEN \"not a fen\": "),
        "{stderr}"
    );
    assert!(stderr.contains("\n  fix: give the whole FEN"), "{stderr}");
    for noise in ["Caused by", "Stack backtrace", "perft position"] {
        assert!(!stderr.contains(noise), "{noise:?} in:\n{stderr}");
    }

    // The coefficients file accounts.toml names is not there.
    let dir = tempfile::tempdir().unwrap();
    let config = accounts_toml(dir.path(), "calibration/results.jsonl");
    let (code, _, stderr) = ladder_in(dir.path(), &["run", "--config", config.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{stderr}");
    let headline = stderr.lines().next().unwrap_or("");
    assert!(
        headline.starts_with("error: cannot read ")
            && headline.contains("calibration/coefficients.toml")
            && headline.contains("daemon.coefficients in"),
        "the headline does not say what is missing:\n{stderr}"
    );
    assert_eq!(
        stderr.matches("No such file").count(),
        1,
        "a cause said twice:\n{stderr}"
    );
    assert!(
        stderr.contains("  fix: copy calibration/coefficients.toml from the repository"),
        "{stderr}"
    );
    assert!(!stderr.contains("Caused by"), "{stderr}");
}

#[test]
fn a_missing_accounts_toml_says_how_to_create_one() {
    let dir = tempfile::tempdir().unwrap();
    for args in [&["run"][..], &["upgrade", "ladder-l1"][..]] {
        let (code, _, stderr) = ladder_in(dir.path(), args);
        assert_eq!(code, Some(1), "ladder {args:?}: {stderr}");
        assert!(
            stderr.starts_with("error: cannot read accounts.toml: "),
            "ladder {args:?}: {stderr}"
        );
        assert_eq!(stderr.matches("No such file").count(), 1, "{stderr}");
        for hint in [
            "fix: give the right path with --config, or create accounts.toml",
            "copy accounts.toml from the repository",
            "docs/operating.md",
            "ladder run --sandbox",
        ] {
            assert!(
                stderr.contains(hint),
                "ladder {args:?}: no {hint:?}:\n{stderr}"
            );
        }
    }
}

#[test]
fn check_without_coefficients_says_so_instead_of_printing_nan() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout) = check_offline(dir.path(), "results.jsonl");
    assert_eq!(code, Some(1), "{stdout}");
    assert!(!stdout.contains("NaN"), "{stdout}");
    assert!(
        stdout.contains("error: coefficients: cannot read")
            && stdout.contains("fix: copy calibration/coefficients.toml"),
        "{stdout}"
    );
    assert!(
        stdout.contains("no nodes, noise or hash: the coefficients file does not load"),
        "{stdout}"
    );
}

#[test]
fn check_says_run_will_create_a_missing_results_directory() {
    let dir = tempfile::tempdir().unwrap();
    let (_, stdout) = check_offline(dir.path(), "state/results.jsonl");
    assert!(
        !stdout.contains("error: results"),
        "a directory `run` creates is called an error:\n{stdout}"
    );
    assert!(
        stdout.contains("does not exist yet: `ladder run` creates it"),
        "{stdout}"
    );
    // A path through a file cannot be created: that is a problem.
    std::fs::write(dir.path().join("state"), "").unwrap();
    let (_, stdout) = check_offline(dir.path(), "state/results.jsonl");
    assert!(stdout.contains("error: results: directory"), "{stdout}");
}
