//! `ladder run`: the command-line entry of the daemon, against Lichess or against the
//! in-process sandbox (`--sandbox`: no account needed, results in their own file).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;

use crate::config::Config;
use crate::levels::Coefficients;
use crate::lichess::{ClientConfig, Token};
use crate::results::Source;
use crate::sandbox::{Sandbox, SandboxConfig};

use super::shutdown::listen_for_signals;
use super::supervisor::{self, ClientFactory, DaemonSpec};

/// `ladder run` options.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The accounts and daemon settings.
    #[arg(long, default_value = "accounts.toml")]
    pub config: PathBuf,
    /// Play against a local Lichess emulator with simulated challengers instead of Lichess.
    #[arg(long)]
    pub sandbox: bool,
    /// Results file of a sandbox run (never the real results log).
    #[arg(long, default_value = "sandbox-results.jsonl")]
    pub sandbox_results: PathBuf,
}

/// Tokens from each account's `token_env` / `token_file`.
pub fn token_clients() -> ClientFactory {
    Arc::new(|account, base_url| {
        let token = account.load_token().map_err(|e| e.to_string())?;
        Ok(ClientConfig::new(base_url, token))
    })
}

pub fn run(args: RunArgs) -> anyhow::Result<()> {
    let config = Config::load(&args.config)?;
    let coefficients = Coefficients::load(&config.daemon.coefficients)
        .with_context(|| "the coefficients file named by daemon.coefficients")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let mut config = config;
        // The sandbox lives as long as this block: it stops when the daemon has exited.
        let mut _sandbox = None;
        let (results_path, source, clients) = if args.sandbox {
            let names: Vec<String> = config.accounts.iter().map(|a| a.username.clone()).collect();
            let sandbox = Sandbox::start(SandboxConfig::demo(&names))
                .await
                .context("cannot start the sandbox")?;
            tracing::info!(url = %sandbox.base_url(), results = %args.sandbox_results.display(), "sandbox started: simulated challengers will play the accounts");
            config.lichess.base_url = sandbox.base_url().to_string();
            let tokens: std::collections::HashMap<String, Token> = names
                .iter()
                .filter_map(|n| Some((n.to_lowercase(), sandbox.token(n)?)))
                .collect();
            _sandbox = Some(sandbox);
            let clients: ClientFactory = Arc::new(move |account, base_url| {
                let token = tokens
                    .get(&account.username.to_lowercase())
                    .cloned()
                    .ok_or_else(|| format!("account {}: unknown to the sandbox", account.username))?;
                Ok(ClientConfig::new(base_url, token))
            });
            (args.sandbox_results.clone(), Source::Sandbox, clients)
        } else {
            (config.daemon.results.clone(), Source::Lichess, token_clients())
        };
        let handle = supervisor::start(DaemonSpec {
            config,
            coefficients,
            results_path,
            source,
            clients,
            reload_from_disk: !args.sandbox,
            latency: None,
        })
        .await?;
        listen_for_signals(handle.control()).context("cannot install signal handlers")?;
        let summary = handle.join().await?;
        tracing::info!(
            searches = summary.pool.completed,
            peak_parallel_searches = summary.pool.peak_running,
            "exited"
        );
        Ok(())
    })
}
