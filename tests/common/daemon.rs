//! The daemon in process, against the sandbox: its start with the usual test settings, and the
//! bound on every test's time.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ladder::config::Config;
use ladder::daemon::supervisor::ClientFactory;
use ladder::daemon::{DaemonHandle, DaemonSpec, start};
use ladder::levels::Coefficients;
use ladder::results::Source;

/// A running daemon and the results file it writes.
pub struct Running {
    pub daemon: DaemonHandle,
    pub results: PathBuf,
}

/// What a test daemon starts with: `config`, the shipped coefficients, results in
/// `<dir>/results.jsonl`, the sandbox as the source, no reloading from disk, no latency probe.
pub fn spec(config: Config, clients: ClientFactory, dir: &Path) -> DaemonSpec {
    DaemonSpec {
        config,
        coefficients: Coefficients::builtin(),
        results_path: dir.join("results.jsonl"),
        source: Source::Sandbox,
        clients,
        reload_from_disk: false,
        latency: None,
    }
}

/// Starts the daemon of `spec`.
pub async fn launch(spec: DaemonSpec) -> anyhow::Result<Running> {
    let results = spec.results_path.clone();
    let daemon = start(spec).await?;
    Ok(Running { daemon, results })
}

/// Runs the test `f`, failing it when it takes longer than `limit`.
pub async fn bounded_by<F: Future<Output = ()>>(limit: Duration, f: F) {
    tokio::time::timeout(limit, f)
        .await
        .expect("test took too long");
}
