//! Shutdown and reload: OS signals become [`Control`] messages for the supervisor, and the
//! supervisor's [`RunState`] tells every actor how far shutdown has gone.
//!
//! SIGTERM/SIGINT: the first one drains (no new games; running games finish within the grace
//! period; when it runs out, a game Lichess still lets us abort — fewer than two plies — is
//! aborted and recorded, and every other game is left running on Lichess, never resigned for
//! the operator's sake), the second one stops now. Games left running stay in the open-games
//! file: the next start resumes them, or settles them if they ended meanwhile. SIGHUP reloads
//! accounts.toml and the coefficients. [`stopped`], [`grace_over`] and [`sleep_or_stop`] let
//! an actor wait without outliving a stop.

use std::time::Duration;

use tokio::sync::{mpsc, watch};

/// How far the daemon is from exiting; published on a `watch` channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RunState {
    Running,
    /// Decline every challenge, finish running games.
    Draining,
    /// The grace period is over: abort the games Lichess still lets us abort (and record
    /// them); leave every other game running on Lichess, after a word in the chat, for the
    /// next start to resume.
    Ending,
    /// Exit now: searches are abandoned, nothing more is sent.
    Stopped,
}

/// How long the games aborted when the grace period is over get to be recorded before the
/// daemon stops anyway.
pub const ENDING_LIMIT: Duration = Duration::from_secs(15);

/// What the supervisor is asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// First stop request drains, the next one stops.
    Shutdown,
    Reload,
}

/// Resolves once the daemon is stopped (or its supervisor is gone).
pub async fn stopped(run_state: &mut watch::Receiver<RunState>) {
    if run_state
        .wait_for(|s| *s == RunState::Stopped)
        .await
        .is_err()
    {
        // The supervisor is gone: nothing will ever stop us more clearly than that.
    }
}

/// Resolves once the grace period is over (games must end now) or the daemon is stopped.
pub async fn grace_over(run_state: &mut watch::Receiver<RunState>) {
    if run_state
        .wait_for(|s| *s >= RunState::Ending)
        .await
        .is_err()
    {
        // The supervisor is gone: `stopped` handles that.
        std::future::pending::<()>().await;
    }
}

/// Sleeps; `true` when the daemon was stopped meanwhile.
pub async fn sleep_or_stop(delay: Duration, run_state: &mut watch::Receiver<RunState>) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(delay) => {}
        _ = stopped(run_state) => return true,
    }
    *run_state.borrow() == RunState::Stopped
}

/// Forwards SIGTERM, SIGINT and SIGHUP to `tx` until the receiver is gone.
#[cfg(unix)]
pub fn listen_for_signals(tx: mpsc::Sender<Control>) -> std::io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut hup = signal(SignalKind::hangup())?;
    tokio::spawn(async move {
        loop {
            let control = tokio::select! {
                _ = term.recv() => Control::Shutdown,
                _ = int.recv() => Control::Shutdown,
                _ = hup.recv() => Control::Reload,
            };
            if tx.send(control).await.is_err() {
                break;
            }
        }
    });
    Ok(())
}

/// Forwards Ctrl-C to `tx` (no SIGHUP off Unix).
#[cfg(not(unix))]
pub fn listen_for_signals(tx: mpsc::Sender<Control>) -> std::io::Result<()> {
    tokio::spawn(async move {
        while tokio::signal::ctrl_c().await.is_ok() {
            if tx.send(Control::Shutdown).await.is_err() {
                break;
            }
        }
    });
    Ok(())
}
