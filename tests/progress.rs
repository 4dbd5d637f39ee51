//! Long work shows its progress the way people expect: `ladder arena` and `ladder calibrate
//! --fetch` draw a progress bar with the ETA when stderr is a terminal (a pseudo-terminal from
//! util-linux's `script`) and write a plain line per game or per account when stderr is a pipe,
//! as under systemd.

mod common {
    pub mod fetch;
    pub mod quick_match;
    pub mod tools;
}

use std::path::Path;
use std::process::{Command, Stdio};

use common::fetch::fetch_args;
use common::quick_match::QUICK_MATCH;
use common::tools::installed;

const LADDER: &str = env!("CARGO_BIN_EXE_ladder");

/// Four quick games between levels 1 and 2, not judged (no Stockfish needed).
fn arena_args(dir: &Path) -> Vec<String> {
    let mut args: Vec<String> = ["arena"]
        .into_iter()
        .chain(QUICK_MATCH)
        .chain(["--judge-depth", "0", "--results"])
        .map(str::to_string)
        .collect();
    args.push(dir.join("r.jsonl").display().to_string());
    args
}

#[test]
fn arena_writes_a_plain_line_per_game_into_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(LADDER)
        .args(arena_args(dir.path()))
        .env("RUST_LOG", "info")
        .env_remove("LADDER_LOG_STYLE")
        .env_remove("JOURNAL_STREAM")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("/4 games, level-1 +") && l.contains(" s left"))
        .collect();
    assert_eq!(lines.len(), 4, "one line per game:\n{stderr}");
    assert!(lines.iter().all(|l| l.contains(" game ")), "{stderr}");
    assert!(
        !stderr.contains('\r') && !stderr.contains('\u{1b}') && !stderr.contains("ETA"),
        "terminal drawing in a pipe:\n{stderr:?}"
    );
}

/// `ladder` with `args` on a pseudo-terminal (util-linux `script`), with `env`: what the
/// terminal showed, or `None` (and a message) without `script`.
fn on_a_terminal(args: &[String], env: &[(&str, &str)]) -> Option<(bool, String)> {
    if !installed(
        "script",
        "util-linux `script` is not installed; no pseudo-terminal to test in",
    ) {
        return None;
    }
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let command_line: Vec<String> = std::iter::once(LADDER.to_string())
        .chain(args.iter().cloned())
        .map(|a| quote(&a))
        .collect();
    // `script` runs the command on a pseudo-terminal and copies what it shows to stdout.
    let out = Command::new("script")
        .args(["-q", "-e", "-c", &command_line.join(" "), "/dev/null"])
        .env("RUST_LOG", "info")
        .env("TERM", "xterm")
        .env_remove("LADDER_LOG_STYLE")
        .env_remove("JOURNAL_STREAM")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    Some((
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    ))
}

#[test]
fn arena_draws_a_bar_with_the_eta_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let Some((ok, shown)) = on_a_terminal(&arena_args(dir.path()), &[]) else {
        return;
    };
    assert!(ok, "{shown}");
    assert!(
        shown.contains("4/4 games, ETA") && shown.contains("level-1 +"),
        "no finished bar with the ETA and the score:\n{shown:?}"
    );
    assert!(
        !shown.contains(" s left"),
        "per-game lines under the bar:\n{shown:?}"
    );
    // The log lines before the bar are still there, whole.
    assert!(
        shown.contains("arena arena-") && shown.contains("4 games in shard"),
        "{shown:?}"
    );
}

/// `calibrate --fetch` over two accounts of the sandbox: a line per account into a pipe, a bar
/// over the accounts on a terminal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_says_how_far_it_is_account_by_account() {
    use ladder::results::{Outcome, ResultsLog, sample_record};
    use ladder::sandbox::{Sandbox, SandboxConfig};

    let bots = ["ladder-l3", "ladder-l4"];
    let sb = Sandbox::start(SandboxConfig::with_bots(&bots))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let accounts = dir.path().join("accounts.toml");
    let mut config = format!("[lichess]\nbase_url = \"{}\"\n", sb.base_url());
    for (i, bot) in bots.iter().enumerate() {
        config.push_str(&format!(
            "\n[[accounts]]\nusername = \"{bot}\"\ntoken_env = \"PROGRESS_TEST_TOKEN_{i}\"\n\
             level = {}\nthink_time = \"fast\"\n",
            i + 3,
        ));
    }
    std::fs::write(&accounts, config).unwrap();
    let coefficients = dir.path().join("coefficients.toml");
    std::fs::write(&coefficients, ladder::levels::Coefficients::DEFAULT_TOML).unwrap();
    // One logged game per account: the export resumes after it.
    let results = dir.path().join("results.jsonl");
    let mut log = ResultsLog::open(&results).unwrap();
    for bot in bots {
        let mut r = sample_record(&format!("{bot}-1"), Outcome::Win);
        r.header.account = bot.to_string();
        log.append(&r).unwrap();
    }
    drop(log);
    let args = fetch_args(&accounts, &coefficients, &results);
    let tokens: Vec<String> = bots
        .iter()
        .map(|b| sb.token(b).unwrap().expose().to_string())
        .collect();
    let env = [
        ("PROGRESS_TEST_TOKEN_0", tokens[0].as_str()),
        ("PROGRESS_TEST_TOKEN_1", tokens[1].as_str()),
    ];

    let piped = tokio::task::spawn_blocking({
        let (args, env) = (
            args.clone(),
            env.map(|(k, v)| (k.to_string(), v.to_string())),
        );
        move || {
            Command::new(LADDER)
                .args(&args)
                .envs(env)
                .env("RUST_LOG", "info")
                .env_remove("LADDER_LOG_STYLE")
                .env_remove("JOURNAL_STREAM")
                .stdin(Stdio::null())
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&piped.stderr);
    assert!(piped.status.success(), "{stderr}");
    assert!(
        stderr.contains("fetch 1/2: ladder-l3: 0 games downloaded")
            && stderr.contains("fetch 2/2: ladder-l4: 0 games downloaded"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("ETA") && !stderr.contains('\r'),
        "{stderr:?}"
    );

    let env = env.map(|(k, v)| (k.to_string(), v.to_string()));
    let shown = tokio::task::spawn_blocking(move || {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        on_a_terminal(&args, &env)
    })
    .await
    .unwrap();
    let Some((ok, shown)) = shown else {
        return;
    };
    assert!(ok, "{shown}");
    assert!(shown.contains("2/2 accounts, ETA"), "{shown:?}");
    assert!(
        !shown.contains("fetch 1/2:"),
        "per-account lines under the bar: {shown:?}"
    );
}
