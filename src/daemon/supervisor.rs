//! The supervisor: starts the shared search pool, the results writer and one account actor per
//! account, and runs the daemon's life: drain on the first stop request; when the grace period
//! is over, abort the games Lichess still lets us abort and leave the others running on Lichess
//! for the next start (named in the log); stop on the second request (naming the games it
//! leaves open) or when the aborts take too long; reload accounts and coefficients on request (new games get the new parameters;
//! running games keep theirs), the periodic status line, and while draining a line saying how
//! many games are still running and how much of the grace period is left. It also speaks to
//! systemd from its own loop (notify.rs): READY=1 once every account has made its first
//! connection attempt, STATUS=, STOPPING=1, and the watchdog pings that stop if the loop hangs.
//!
//! It starts every account whatever Lichess says about it: an account checks itself and is
//! retried while it cannot play (health.rs), so one bad account never stops the others and an
//! outage at start-up is waited out; an account whose actor fails (a panic) starts again after
//! a pause, and one removed and added back by reloads starts again. It owns what the accounts
//! share: the global game cap (slots.rs, changed on reload), the pacer of challenge calls (one
//! IP address for all), and today's counts from the results log.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tracing::Instrument;

use crate::config::{Account, Config};
use crate::levels::Coefficients;
use crate::lichess::{ClientConfig, Pacer, user_agent};
use crate::logging::account_span;
use crate::results::Source;

use super::account::{self, AccountContext, AccountSettings, MakeClient};
use super::bot_limit::TodayFromResults;
use super::daemon_lock::DaemonLock;
use super::notify::{Notifier, READY_LIMIT};
use super::open_games::OpenGame;
use super::pool::{PoolHandle, PoolStats, SearchPool};
use super::results_writer::{self, ResultsStub};
use super::shutdown::{Control, ENDING_LIMIT, RunState};
use super::slots::GameSlots;
use super::status::{AccountStatus, Status, status_line};
use crate::logging::show_wait;

/// Builds the client configuration of an account (its token from the environment or a file,
/// or the sandbox's). Errors are shown to the user: they must never contain the token.
pub type ClientFactory = Arc<dyn Fn(&Account, &str) -> Result<ClientConfig, String> + Send + Sync>;

/// Everything the daemon needs to start.
pub struct DaemonSpec {
    pub config: Config,
    pub coefficients: Coefficients,
    /// Where the results go (the sandbox writes to its own file, never the real one).
    pub results_path: PathBuf,
    pub source: Source,
    pub clients: ClientFactory,
    /// Re-read the config file from `config.path` (and the coefficients it names) on reload.
    pub reload_from_disk: bool,
    /// Benchmarks: per-move latency of the game actors, search excluded.
    pub latency: Option<mpsc::UnboundedSender<Duration>>,
}

/// A running daemon.
pub struct DaemonHandle {
    control: mpsc::Sender<Control>,
    pool: PoolHandle,
    task: tokio::task::JoinHandle<anyhow::Result<Summary>>,
}

/// What a run did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    pub accounts: usize,
    pub pool: PoolStats,
}

/// One account as the supervisor tracks it.
struct AccountSlot {
    settings: watch::Sender<Arc<AccountSettings>>,
    run_state: watch::Sender<RunState>,
    status: watch::Receiver<AccountStatus>,
}

fn settings_of(config: &Config, account: &Account) -> Arc<AccountSettings> {
    Arc::new(AccountSettings {
        account: account.clone(),
        move_overhead_ms: config.daemon.move_overhead_ms,
        abort_after: Duration::from_secs(config.daemon.abort_after_s),
    })
}

/// Shared by the supervisor loop to start account actors (at start and on reload).
struct Starter {
    clients: ClientFactory,
    base_url: String,
    /// The pacer of every account's challenge calls, made from the first account's policy.
    pacer: Arc<OnceLock<Pacer>>,
    pool: PoolHandle,
    results: ResultsStub,
    results_path: PathBuf,
    slots: GameSlots,
    coefficients: watch::Receiver<Arc<Coefficients>>,
    source: Source,
    latency: Option<mpsc::UnboundedSender<Duration>>,
}

impl Starter {
    /// How an account actor configures its client: the factory's configuration, plus the
    /// shared pacer and a User-Agent naming the account.
    fn make_client(&self) -> MakeClient {
        let clients = Arc::clone(&self.clients);
        let base_url = self.base_url.clone();
        let pacer = Arc::clone(&self.pacer);
        Arc::new(move |account: &Account| {
            let mut config = clients(account, &base_url)?;
            config.user_agent = user_agent(Some(&account.username));
            let pacing = config.pacing;
            config.pacer = Some(pacer.get_or_init(|| Pacer::new(pacing)).clone());
            Ok(config)
        })
    }

    /// Starts an account's actor in `set` (after `delay`: an account whose actor failed waits
    /// before it plays again); its task id names it when it ends.
    fn spawn(
        &self,
        set: &mut JoinSet<String>,
        settings: Arc<AccountSettings>,
        state: RunState,
        today: &TodayFromResults,
        delay: Duration,
    ) -> (AccountSlot, tokio::task::Id) {
        let username = settings.account.username.clone();
        let key = username.to_lowercase();
        let (settings_tx, settings_rx) = watch::channel(settings);
        let (state_tx, state_rx) = watch::channel(state);
        let (status_tx, status_rx) = watch::channel(AccountStatus {
            account: username.clone(),
            games_running: 0,
            queued: 0,
            games_today: 0,
            problem: None,
            checked: false,
        });
        let ctx = AccountContext {
            make_client: self.make_client(),
            settings: settings_rx,
            coefficients: self.coefficients.clone(),
            pool: self.pool.clone(),
            results: self.results.clone(),
            slots: self.slots.clone(),
            run_state: state_rx,
            source: self.source,
            latency: self.latency.clone(),
            status: status_tx,
            games_today: today.games.get(&key).copied().unwrap_or(0),
            bot_games: today.bot_games.get(&key).cloned().unwrap_or_default(),
        };
        let span = account_span(&username);
        let task = set.spawn(
            async move {
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                account::run(ctx).await;
                username
            }
            .instrument(span),
        );
        let slot = AccountSlot {
            settings: settings_tx,
            run_state: state_tx,
            status: status_rx,
        };
        (slot, task.id())
    }
}

/// Starts the daemon on the current runtime. Fails only on what a restart cannot fix (the
/// results log cannot be opened, another daemon holds it); accounts Lichess refuses or cannot be reached for are
/// retried while the others play.
pub async fn start(spec: DaemonSpec) -> anyhow::Result<DaemonHandle> {
    let DaemonSpec {
        config,
        coefficients,
        results_path,
        source,
        clients,
        reload_from_disk,
        latency,
    } = spec;
    // Before anything is read or written: one daemon per results log and tokens.
    let lock = DaemonLock::take(&results_path)?;
    // Before the writer opens the log: today's games, for the daily bot-game limit.
    let today = TodayFromResults::read(&results_path, SystemTime::now());
    let (results, writer) = results_writer::start(&results_path, &config.lichess.base_url)
        .with_context(|| format!("cannot open the results log {}", results_path.display()))?;
    let pool = SearchPool::new(config.daemon.search_threads).context("daemon.search_threads")?;
    let (coefficients_tx, coefficients_rx) = watch::channel(Arc::new(coefficients));
    let starter = Starter {
        clients,
        base_url: config.lichess.base_url.clone(),
        pacer: Arc::new(OnceLock::new()),
        pool: pool.handle(),
        results,
        results_path: results_path.clone(),
        slots: GameSlots::new(config.daemon.max_games),
        coefficients: coefficients_rx,
        source,
        latency,
    };

    let (control, control_rx) = mpsc::channel(8);
    let pool_handle = pool.handle();
    let mut life = Life {
        config,
        reload_from_disk,
        starter,
        coefficients_tx,
        accounts: JoinSet::new(),
        slots: HashMap::new(),
        tasks: HashMap::new(),
        state: RunState::Running,
        notifier: Notifier::from_env(),
        ready: false,
    };
    let every: Vec<_> = (life.config.accounts.iter())
        .map(|account| settings_of(&life.config, account))
        .collect();
    for settings in every {
        life.start_account(settings, &today, Duration::ZERO);
    }
    tracing::info!(
        accounts = life.slots.len(),
        search_threads = life.config.daemon.search_threads,
        max_games = life.config.daemon.max_games,
        results = %results_path.display(),
        "daemon started"
    );
    let task = tokio::spawn(async move {
        let summary = life.run(control_rx).await;
        // Searches end (after depth 1 at most), queued records are written, then we exit.
        let stats = pool.handle().stats();
        tokio::task::spawn_blocking(move || {
            pool.shutdown();
            writer.close();
        })
        .await
        .ok();
        // Held until the log is closed.
        drop(lock);
        summary.map(|mut s| {
            s.pool = stats;
            s
        })
    });
    Ok(DaemonHandle {
        control,
        pool: pool_handle,
        task,
    })
}

struct Life {
    config: Config,
    reload_from_disk: bool,
    starter: Starter,
    coefficients_tx: watch::Sender<Arc<Coefficients>>,
    accounts: JoinSet<String>,
    slots: HashMap<String, AccountSlot>,
    /// Which account each task of `accounts` runs (a failed task names only its id).
    tasks: HashMap<tokio::task::Id, String>,
    state: RunState,
    notifier: Notifier,
    /// READY=1 was sent (every account made its first connection attempt, or READY_LIMIT).
    ready: bool,
}

/// How long an account whose actor failed (a panic) waits before it starts again: a failure
/// that repeats does not spin, and the other accounts play on meanwhile.
const RESTART_AFTER_FAILURE: Duration = Duration::from_secs(30);

/// How often the readiness condition is looked at until it holds.
const READY_POLL: Duration = Duration::from_millis(100);

/// How often the draining line is repeated: ten times over the grace period, every 5 to 30 s.
fn drain_report_every(grace: Duration) -> Duration {
    (grace / 10).clamp(Duration::from_secs(5), Duration::from_secs(30))
}

/// `: abcd1234 (ladder-l3), efgh5678 (ladder-l5)`, or nothing for no game.
fn named(open: &[OpenGame]) -> String {
    if open.is_empty() {
        return String::new();
    }
    let names: Vec<String> = open
        .iter()
        .map(|g| format!("{} ({})", g.game_id, g.header.account))
        .collect();
    format!(": {}", names.join(", "))
}

/// `1 game`, `3 games`.
fn games(n: usize) -> String {
    format!("{n} game{}", if n == 1 { "" } else { "s" })
}

impl Life {
    /// The accounts' own statuses, by name.
    fn account_statuses(&self) -> Vec<AccountStatus> {
        let mut accounts: Vec<AccountStatus> = self
            .slots
            .values()
            .map(|slot| slot.status.borrow().clone())
            .collect();
        accounts.sort_by(|a, b| a.account.cmp(&b.account));
        accounts
    }

    /// The periodic one-line status: games running and queued, searches waiting, games today,
    /// the accounts that cannot play.
    fn status_line(&self) -> String {
        status_line(
            &Status {
                accounts: self.account_statuses(),
                search_queue: self.starter.pool.stats().queued,
                draining: matches!(self.state, RunState::Draining | RunState::Ending),
            },
            Instant::now(),
        )
    }

    /// The games open now (by the results writer, which owns the open-games file).
    async fn open_games(&self) -> Vec<OpenGame> {
        self.starter.results.open_games().await.unwrap_or_default()
    }

    /// What a stop leaves behind: `N games left open: id (account), …; ` and what becomes of
    /// them.
    async fn left_open(&self) -> String {
        let open = self.open_games().await;
        format!(
            "{} left open{}; {}",
            games(open.len()),
            named(&open),
            self.after_leaving()
        )
    }

    /// What becomes of the games left open, in this daemon's world.
    fn after_leaving(&self) -> &'static str {
        match self.starter.source {
            Source::Sandbox => "the sandbox's games end with it, so they are not recorded",
            _ => "the next start resumes them, or records them if they ended meanwhile",
        }
    }

    fn games_running(&self) -> usize {
        self.slots
            .values()
            .map(|slot| slot.status.borrow().games_running)
            .sum()
    }

    /// Readiness: once every account has made its first connection attempt (whatever came of
    /// it), or at `READY_LIMIT` after the start with a word about the accounts still trying.
    fn check_ready(&mut self, since_start: Duration) {
        let accounts = self.account_statuses();
        let waiting: Vec<&str> = accounts
            .iter()
            .filter(|a| !a.checked)
            .map(|a| a.account.as_str())
            .collect();
        if !waiting.is_empty() && since_start < READY_LIMIT {
            return;
        }
        self.ready = true;
        let troubled: Vec<String> = accounts
            .iter()
            .filter_map(|a| Some(format!("{} ({})", a.account, a.problem.as_ref()?.reason)))
            .collect();
        let playing = accounts.len() - troubled.len() - waiting.len();
        let mut line = format!("ready: {playing} of {} accounts connected", accounts.len());
        if !troubled.is_empty() {
            line.push_str(&format!("; cannot play yet: {}", troubled.join(", ")));
        }
        if waiting.is_empty() {
            tracing::info!("{line}");
        } else {
            line.push_str(&format!(
                "; still on their first check after {}: {}",
                show_wait(READY_LIMIT),
                waiting.join(", ")
            ));
            tracing::warn!("{line}");
        }
        self.notifier.ready(&line);
    }

    /// The draining line: the games still running and the grace left.
    fn draining_line(&self, grace_left: Duration) -> String {
        format!(
            "draining: {} still running, {} of grace left; no new games (signal again to stop now)",
            games(self.games_running()),
            show_wait(grace_left)
        )
    }

    async fn run(mut self, mut control: mpsc::Receiver<Control>) -> anyhow::Result<Summary> {
        let accounts = self.slots.len();
        let started = tokio::time::Instant::now();
        let mut grace_end: Option<tokio::time::Instant> = None;
        let mut control_open = true;
        let every = Duration::from_secs(self.config.daemon.status_interval_s);
        let mut status_tick = tokio::time::interval_at(started + every, every);
        let mut ready_poll = tokio::time::interval(READY_POLL);
        // The systemd tick (watchdog pings, status refresh) runs in this loop on purpose: a
        // supervisor that hangs must stop pinging.
        let systemd_every = self.notifier.tick_every();
        // (Never polled without a socket: the period is only a placeholder.)
        let mut systemd_tick =
            tokio::time::interval(systemd_every.unwrap_or(Duration::from_secs(86_400)));
        systemd_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut drain_tick = tokio::time::interval(Duration::from_secs(3600));
        if self.notifier.enabled() {
            self.notifier
                .status("starting: the accounts make their first connection");
        }
        loop {
            tokio::select! {
                _ = status_tick.tick() => {
                    let line = self.status_line();
                    tracing::info!("{line}");
                    self.notifier.status(&line);
                }
                _ = ready_poll.tick(), if !self.ready => self.check_ready(started.elapsed()),
                _ = systemd_tick.tick(), if systemd_every.is_some() => {
                    let line = match grace_end {
                        Some(end) if self.state == RunState::Draining => self.draining_line(
                            end.saturating_duration_since(tokio::time::Instant::now()),
                        ),
                        _ => self.status_line(),
                    };
                    self.notifier.tick(&line);
                }
                _ = drain_tick.tick(), if grace_end.is_some() && self.state == RunState::Draining => {
                    let left = grace_end.expect("guarded").saturating_duration_since(tokio::time::Instant::now());
                    // At the very end of the grace the next line says what happens instead.
                    if left >= Duration::from_secs(1) {
                        let line = self.draining_line(left);
                        tracing::info!("{line}");
                        self.notifier.status(&line);
                    }
                }
                message = control.recv(), if control_open => match message {
                    Some(Control::Shutdown) | None => {
                        // Every handle dropped: nobody can ask again, so stop.
                        control_open = message.is_some();
                        if !control_open {
                            self.set_state(RunState::Stopped);
                        }
                        if self.state == RunState::Running {
                            let grace = Duration::from_secs(self.config.daemon.shutdown_grace_s);
                            let running = self.games_running();
                            tracing::info!(
                                "shutting down: no new games; {} still running may finish within {} (signal again to stop now)",
                                games(running),
                                show_wait(grace)
                            );
                            let line = self.draining_line(grace);
                            self.notifier.stopping(&line);
                            self.set_state(RunState::Draining);
                            grace_end = Some(tokio::time::Instant::now() + grace);
                            let report = drain_report_every(grace);
                            drain_tick = tokio::time::interval_at(tokio::time::Instant::now() + report, report);
                        } else {
                            let left = self.left_open().await;
                            tracing::warn!("stopping now: {left}");
                            self.notifier.stopping("stopping now");
                            self.set_state(RunState::Stopped);
                        }
                    }
                    Some(Control::Reload) => self.reload().await,
                },
                _ = async { tokio::time::sleep_until(grace_end.expect("guarded")).await }, if grace_end.is_some() && self.state == RunState::Draining => {
                    let open = self.open_games().await;
                    tracing::warn!(
                        "grace period over with {} open{}: a game before both sides moved is aborted, every other one is left running (not resigned); {}",
                        games(open.len()),
                        named(&open),
                        self.after_leaving()
                    );
                    self.notifier.status("grace period over: aborting what Lichess allows, leaving the other games running");
                    self.set_state(RunState::Ending);
                    grace_end = Some(tokio::time::Instant::now() + ENDING_LIMIT);
                }
                _ = async { tokio::time::sleep_until(grace_end.expect("guarded")).await }, if grace_end.is_some() && self.state == RunState::Ending => {
                    let left = self.left_open().await;
                    tracing::warn!(
                        "aborts not confirmed within {}: stopping now; {left}",
                        show_wait(ENDING_LIMIT)
                    );
                    self.set_state(RunState::Stopped);
                }
                joined = self.accounts.join_next_with_id() => match joined {
                    None => break,
                    Some(Ok((task, name))) => {
                        tracing::info!(account = %name, "account stopped");
                        self.ended(task, false);
                    }
                    Some(Err(e)) => {
                        let account = self.tasks.get(&e.id()).cloned().unwrap_or_default();
                        tracing::error!(account = %account, "account actor failed: {e}");
                        self.ended(e.id(), true);
                    }
                },
            }
        }
        tracing::info!("daemon stopped");
        Ok(Summary {
            accounts,
            pool: PoolStats::default(),
        })
    }

    /// An account's actor has ended: while the daemon runs and the account is in the
    /// configuration it starts again (after a failure, or when it was removed and added back
    /// by reloads while it finished its games), otherwise it is forgotten.
    fn ended(&mut self, task: tokio::task::Id, failed: bool) {
        let Some(key) = self.tasks.remove(&task) else {
            return;
        };
        let settings = match self.config.account(&key) {
            Some(account) if self.state == RunState::Running => settings_of(&self.config, account),
            listed => {
                if listed.is_none() {
                    // Removed by a reload: an accepted challenge of its that never became a
                    // game has nobody to settle it now.
                    self.starter.results.forget_unplayed(&key);
                }
                self.slots.remove(&key);
                return;
            }
        };
        let username = &settings.account.username;
        let delay = if failed {
            tracing::warn!(account = %username, "starting the account again in {}", show_wait(RESTART_AFTER_FAILURE));
            RESTART_AFTER_FAILURE
        } else {
            tracing::info!(account = %username, "the account was added back: starting it again");
            Duration::ZERO
        };
        let today = TodayFromResults::read(&self.starter.results_path, SystemTime::now());
        self.start_account(settings, &today, delay);
    }

    /// Starts an account's actor (after `delay`) and keeps its slot and task id.
    fn start_account(
        &mut self,
        settings: Arc<AccountSettings>,
        today: &TodayFromResults,
        delay: Duration,
    ) {
        let key = settings.account.username.to_lowercase();
        let (slot, task) = self.starter.spawn(
            &mut self.accounts,
            settings,
            RunState::Running,
            today,
            delay,
        );
        self.tasks.insert(task, key.clone());
        self.slots.insert(key, slot);
    }

    fn set_state(&mut self, state: RunState) {
        self.state = state;
        for slot in self.slots.values() {
            slot.run_state.send_if_modified(|s| {
                let changed = *s < state;
                if changed {
                    *s = state;
                }
                changed
            });
        }
    }

    /// Re-reads accounts.toml and the coefficients. A file that does not load changes nothing.
    async fn reload(&mut self) {
        if self.state != RunState::Running {
            return;
        }
        let (config, coefficients) = if self.reload_from_disk {
            let config = match Config::load(&self.config.path) {
                Ok(c) => c,
                Err(e) => {
                    tracing::error!("reload: {e}; keeping the running configuration");
                    return;
                }
            };
            match Coefficients::load(&config.daemon.coefficients) {
                Ok(k) => (config, Some(k)),
                Err(e) => {
                    tracing::error!("reload: {e}; keeping the running configuration");
                    return;
                }
            }
        } else {
            (self.config.clone(), None)
        };
        if let Some(k) = coefficients {
            tracing::info!(version = k.version, "reload: coefficients for new games");
            self.coefficients_tx.send_replace(Arc::new(k));
        }
        if config.lichess.base_url != self.config.lichess.base_url
            || config.daemon.search_threads != self.config.daemon.search_threads
            || config.daemon.results != self.config.daemon.results
        {
            tracing::warn!("reload: base_url, search_threads and results apply after a restart");
        }
        let (old, new) = (self.config.daemon.max_games, config.daemon.max_games);
        if new != old {
            self.starter.slots.set_cap(new);
            let running = self.starter.slots.used();
            if running > new {
                tracing::info!(
                    "reload: max_games {old} -> {new}; {running} games running finish, no new game until fewer than {new} run"
                );
            } else {
                tracing::info!("reload: max_games {old} -> {new}");
            }
        }
        for account in &config.accounts {
            let key = account.username.to_lowercase();
            let settings = settings_of(&config, account);
            if let Some(slot) = self.slots.get(&key) {
                slot.settings.send_if_modified(|s| {
                    let changed = **s != *settings;
                    if changed {
                        *s = Arc::clone(&settings);
                    }
                    changed
                });
                continue;
            }
            tracing::info!(account = %account.username, "reload: new account started");
            let today = TodayFromResults::read(&self.starter.results_path, SystemTime::now());
            self.start_account(settings, &today, Duration::ZERO);
        }
        for (key, slot) in &self.slots {
            if config.account(key).is_none() {
                tracing::info!(account = %key, "reload: account removed; it finishes its games and stops");
                slot.run_state.send_replace(RunState::Draining);
            }
        }
        self.config = config;
    }
}

impl DaemonHandle {
    /// A sender for shutdown and reload requests (the signal listener uses one).
    pub fn control(&self) -> mpsc::Sender<Control> {
        self.control.clone()
    }

    /// First call drains, second stops.
    pub async fn shutdown(&self) {
        self.control.send(Control::Shutdown).await.ok();
    }

    pub async fn reload(&self) {
        self.control.send(Control::Reload).await.ok();
    }

    pub fn pool_stats(&self) -> PoolStats {
        self.pool.stats()
    }

    /// Waits for the daemon to exit.
    pub async fn join(self) -> anyhow::Result<Summary> {
        self.task.await.context("the supervisor panicked")?
    }
}
