//! `ladder run`: the command-line entry of the daemon, against Lichess or against the
//! in-process sandbox (`--sandbox`: no account needed, results in their own file).
//!
//! A sandbox run is most people's first look at the daemon, so it explains itself: at once
//! where the sandbox is and who plays whom (sandbox_view.rs), a short progress line with the
//! score per level early and then every 30 s, and a shorter grace period after Ctrl-C. It works
//! from any directory: without an accounts.toml there, the ladder's own (built in) is used, and
//! without the coefficients file it names, the built-in coefficients. Every run ends with a
//! summary: the games of this run per level with their score, the games left open (running on
//! Lichess for the next start; a sandbox's end with it), and the absolute paths of the results
//! and PGN files. A sandbox run starts by forgetting the games an earlier sandbox run left
//! open: that sandbox, and its games, ended with its process.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;

use crate::config::Config;
use crate::levels::Coefficients;
use crate::lichess::{ClientConfig, SharedLimits, Token};
use crate::results::Source;
use crate::sandbox::{Sandbox, SandboxConfig};

use super::open_games;
use super::pgn_log::pgn_path;
use super::sandbox_view::{accounts_line, challenger_line, progress_line};
use super::scoreboard::Scoreboard;
use super::shutdown::listen_for_signals;
use super::supervisor::{self, ClientFactory, DaemonSpec};
use crate::logging::show_elapsed;

/// The committed ladder, for a sandbox run started where there is no accounts.toml.
const BUILTIN_ACCOUNTS: &str = include_str!("../../accounts.toml");
/// Sandbox: the first progress line comes this soon, then one every `SANDBOX_PROGRESS_EVERY`.
const SANDBOX_FIRST_PROGRESS: Duration = Duration::from_secs(10);
const SANDBOX_PROGRESS_EVERY: Duration = Duration::from_secs(30);
/// Sandbox: how long running games may finish after Ctrl-C, at most (the configured
/// `shutdown_grace_s` is meant for real opponents; nobody waits ten minutes for a demo).
const SANDBOX_GRACE_S: u64 = 30;

/// `ladder run` options.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The accounts and daemon settings [default: accounts.toml; with --sandbox and no
    /// accounts.toml in the current directory, the ladder's own accounts, built in].
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Play against a local Lichess emulator with simulated challengers instead of Lichess.
    #[arg(long)]
    pub sandbox: bool,
    /// Results file of a sandbox run (never the real results log), in the current directory
    /// unless a path is given; its PGN goes beside it.
    #[arg(long, default_value = "sandbox-results.jsonl")]
    pub sandbox_results: PathBuf,
}

/// Tokens from each account's `token_env` / `token_file`; each token's turn and 429 pause are
/// shared through `shared_dir` with other processes using it (`ladder calibrate --fetch`).
pub fn token_clients(shared_dir: PathBuf) -> ClientFactory {
    Arc::new(move |account, base_url| {
        let token = account.load_token().map_err(|e| e.to_string())?;
        let mut config = ClientConfig::new(base_url, token);
        config.shared_limits = Some(SharedLimits::new(&shared_dir, &account.username));
        Ok(config)
    })
}

/// The configuration and coefficients of this run, and where the configuration came from.
fn load(args: &RunArgs) -> anyhow::Result<(Config, Coefficients, String)> {
    let default = Path::new("accounts.toml");
    let (config, origin) = match &args.config {
        Some(path) => (Config::load_or_explain(path)?, path.display().to_string()),
        None if !args.sandbox || default.exists() => (
            Config::load_or_explain(default)?,
            absolute(default).display().to_string(),
        ),
        None => (
            Config::parse(BUILTIN_ACCOUNTS, default).context("the built-in accounts.toml")?,
            "the ladder's built-in accounts.toml (no accounts.toml here)".to_string(),
        ),
    };
    let coefficients = if args.sandbox && !config.daemon.coefficients.exists() {
        tracing::info!(
            "{} not found: playing with the built-in coefficients (version {})",
            config.daemon.coefficients.display(),
            Coefficients::builtin().version
        );
        Coefficients::builtin()
    } else {
        Coefficients::load_or_explain(
            &config.daemon.coefficients,
            &format!("daemon.coefficients in {}", config.path.display()),
        )?
    };
    Ok((config, coefficients, origin))
}

/// `path` as an absolute path (from the current directory), for messages that must say where
/// a file is whatever directory the reader is in.
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

pub fn run(args: RunArgs) -> anyhow::Result<()> {
    let started_at = SystemTime::now();
    let started = Instant::now();
    let (mut config, coefficients, origin) = load(&args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        // The sandbox lives as long as this block: it stops when the daemon has exited.
        let mut sandbox = None;
        let (results_path, source, clients) = if args.sandbox {
            let names: Vec<String> = config.accounts.iter().map(|a| a.username.clone()).collect();
            let sandbox_config = SandboxConfig::demo(&names);
            let started_sandbox = Arc::new(
                Sandbox::start(sandbox_config.clone())
                    .await
                    .context("cannot start the sandbox")?,
            );
            let results_path = absolute(&args.sandbox_results);
            forget_earlier_sandbox_games(&results_path)?;
            config.daemon.shutdown_grace_s = config.daemon.shutdown_grace_s.min(SANDBOX_GRACE_S);
            introduce(
                &started_sandbox,
                &sandbox_config,
                &config,
                &coefficients,
                &origin,
                &results_path,
            );
            config.lichess.base_url = started_sandbox.base_url().to_string();
            let tokens: std::collections::HashMap<String, Token> = names
                .iter()
                .filter_map(|n| Some((n.to_lowercase(), started_sandbox.token(n)?)))
                .collect();
            sandbox = Some(started_sandbox);
            let clients: ClientFactory = Arc::new(move |account, base_url| {
                let token = tokens
                    .get(&account.username.to_lowercase())
                    .cloned()
                    .ok_or_else(|| {
                        format!("account {}: unknown to the sandbox", account.username)
                    })?;
                Ok(ClientConfig::new(base_url, token))
            });
            (results_path, Source::Sandbox, clients)
        } else {
            let results_path = absolute(&config.daemon.results);
            let shared_dir = SharedLimits::dir_for_results(&results_path);
            (results_path, Source::Lichess, token_clients(shared_dir))
        };
        let scoreboard = Scoreboard::new(&results_path, started_at);
        let handle = supervisor::start(DaemonSpec {
            config,
            coefficients,
            results_path: results_path.clone(),
            source,
            clients,
            reload_from_disk: !args.sandbox,
            latency: None,
        })
        .await?;
        listen_for_signals(handle.control()).context("cannot install signal handlers")?;
        let progress = sandbox
            .clone()
            .map(|sandbox| tokio::spawn(report_progress(sandbox, scoreboard.clone(), started)));
        let summary = handle.join().await?;
        if let Some(progress) = progress {
            progress.abort();
        }
        let tally = scoreboard
            .read()
            .inspect_err(|e| tracing::warn!("cannot read back {}: {e}", results_path.display()))
            .unwrap_or_default();
        tracing::info!(
            searches = summary.pool.completed,
            peak_parallel_searches = summary.pool.peak_running,
            "exited after {}; games this run: {} ({tally})",
            show_elapsed(started.elapsed()),
            tally.games
        );
        report_left_open(&results_path, source);
        tracing::info!("results: {}", results_path.display());
        tracing::info!("PGN: {}", pgn_path(&results_path).display());
        drop(sandbox);
        Ok(())
    })
}

/// A sandbox's games end with its process: the games an earlier sandbox run left open can
/// never be resumed or settled, so they are forgotten (said in one line) before this run.
fn forget_earlier_sandbox_games(results: &Path) -> anyhow::Result<()> {
    let left = open_games::read_open(results).unwrap_or_default();
    let path = open_games::state_path(results);
    if path.exists() {
        std::fs::remove_file(&path).with_context(|| {
            format!(
                "cannot remove {}, the open games of an earlier sandbox run (remove it by hand)",
                path.display()
            )
        })?;
    }
    if !left.is_empty() {
        tracing::info!(
            "forgot {} an earlier sandbox run left unfinished ({}): the sandbox's games end with it",
            games(left.len()),
            ids(&left)
        );
    }
    Ok(())
}

/// The exit summary's word on the games still open: left running on Lichess for the next start,
/// or, in the sandbox, unfinished and gone with it.
fn report_left_open(results: &Path, source: Source) {
    let left = match open_games::read_open(results) {
        Ok(left) => left,
        Err(e) => {
            tracing::warn!("cannot read the open games: {e}");
            return;
        }
    };
    if left.is_empty() {
        return;
    }
    if source == Source::Sandbox {
        tracing::info!(
            "left unfinished: {} ({}); the sandbox's games end with it, so they are not recorded",
            games(left.len()),
            ids(&left)
        );
    } else {
        tracing::info!(
            "left running on Lichess: {} ({}); the next start resumes them, or records them if they ended meanwhile",
            games(left.len()),
            ids(&left)
        );
    }
}

/// `1 game`, `3 games`.
fn games(n: usize) -> String {
    format!("{n} game{}", if n == 1 { "" } else { "s" })
}

/// `abcd1234 ladder-l3, efgh5678 ladder-l5`.
fn ids(open: &[open_games::OpenGame]) -> String {
    open.iter()
        .map(|g| format!("{} {}", g.game_id, g.header.account))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The sandbox's first lines: where it is, who plays whom, what comes next.
fn introduce(
    sandbox: &Sandbox,
    sandbox_config: &SandboxConfig,
    config: &Config,
    coefficients: &Coefficients,
    origin: &str,
    results: &Path,
) {
    tracing::info!(
        "sandbox up at {}: a local Lichess emulator with simulated challengers; nothing goes to lichess.org",
        sandbox.base_url()
    );
    tracing::info!("{} (from {origin})", accounts_line(config, coefficients));
    for challenger in &sandbox_config.challengers {
        tracing::info!("{}", challenger_line(challenger, config));
    }
    let first = sandbox_config
        .challengers
        .iter()
        .filter_map(|c| c.interval)
        .min();
    tracing::info!(
        "{}a progress line every {}; results go to {} and {}; Ctrl-C once lets running games finish (at most {}; then those not finished are left unfinished, never resigned), twice stops at once",
        first.map_or(String::new(), |f| format!(
            "the first challenge comes in about {}; ",
            show_elapsed(f)
        )),
        show_elapsed(SANDBOX_PROGRESS_EVERY),
        results.display(),
        pgn_path(results).display(),
        show_elapsed(Duration::from_secs(config.daemon.shutdown_grace_s)),
    );
}

/// The sandbox's progress line, early and then every `SANDBOX_PROGRESS_EVERY`, until aborted.
async fn report_progress(sandbox: Arc<Sandbox>, scoreboard: Scoreboard, started: Instant) {
    let mut tick = tokio::time::interval_at(
        tokio::time::Instant::now() + SANDBOX_FIRST_PROGRESS,
        SANDBOX_PROGRESS_EVERY,
    );
    loop {
        tick.tick().await;
        let tally = match tokio::task::spawn_blocking({
            let scoreboard = scoreboard.clone();
            move || scoreboard.read()
        })
        .await
        {
            Ok(Ok(tally)) => tally,
            Ok(Err(e)) => {
                tracing::warn!("cannot read the sandbox results: {e}");
                continue;
            }
            Err(_) => continue,
        };
        let games = sandbox.games();
        tracing::info!("{}", progress_line(started.elapsed(), &games, &tally));
    }
}
