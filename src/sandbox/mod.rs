//! A local Lichess emulator (the bot API subset) with simulated challengers and fault injection.
//!
//! [`Sandbox::start`] binds real HTTP on 127.0.0.1 (port chosen by the OS) and returns the
//! in-process control handle the daemon's tests drive: create challenges, list games, wait for
//! results, and inject faults (dropped or silent streams, 429/5xx answers, delays, raw lines,
//! duplicate events, revoked tokens, closed accounts, the whole of Lichess down, a 429 asking
//! for a longer wait, lila's 429 on accept for the bot-game limit, a game stream answering 400,
//! an anonymous challenger, an opponent leaving). It records what a test checks about the
//! clients: User-Agents, challenge calls and every request over time.
//!
//! - [`config`]: accounts, challengers, timings, `SandboxConfig::demo`,
//! - [`game`]: one game's rules and clocks,
//! - [`world`]: all state and the operations on it,
//! - [`export`]: game summaries and `GameJson` export,
//! - [`server`]: the axum routes and the HTTP fault layer,
//! - [`streams`]: NDJSON bodies with keep-alives,
//! - [`challengers`]: the simulated opponents and the seats that play their moves.

pub mod challengers;
pub mod config;
pub mod export;
pub mod game;
pub mod server;
pub mod streams;
pub mod world;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

pub use config::{AccountConfig, ChallengerConfig, SandboxConfig, sandbox_token};
pub use export::GameSummary;
pub use world::{
    Action, ApiError, ChallengeFate, ChallengeOutcome, ChallengeSpec, RefusedMove, RequestStats,
    ServedFault, World,
};

use crate::lichess::types::{ChallengeJson, GameStatus};
use crate::lichess::{Client, ClientConfig, GameId, Token};

/// How often the clock ticker looks for flags, `noStart` and expired challenges.
const TICK: Duration = Duration::from_millis(20);

/// A running sandbox. Dropping it stops the server and every task.
pub struct Sandbox {
    world: server::Shared,
    base_url: String,
    finished: watch::Receiver<usize>,
    tasks: Vec<JoinHandle<()>>,
}

/// `wait_*` gave up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("sandbox: {what} not reached within {timeout:?}")]
pub struct WaitTimeout {
    pub what: String,
    pub timeout: Duration,
}

impl Sandbox {
    /// Starts the sandbox on 127.0.0.1 with an OS-chosen port.
    pub async fn start(config: SandboxConfig) -> std::io::Result<Sandbox> {
        Sandbox::start_on(0, config).await
    }

    /// Starts the sandbox on 127.0.0.1:`port` (0: chosen by the OS) — a test of a daemon that
    /// started while "Lichess" was not listening yet brings it up on the port it was given.
    pub async fn start_on(port: u16, config: SandboxConfig) -> std::io::Result<Sandbox> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        let base_url = format!("http://{}", listener.local_addr()?);
        let (notice_tx, notice_rx) = mpsc::unbounded_channel();
        let (finished_tx, finished) = watch::channel(0usize);
        let seed = config.seed.unwrap_or_else(rand::random);
        let challengers = config.challengers.len();
        let world = Arc::new(Mutex::new(World::new(
            config,
            base_url.clone(),
            notice_tx,
            finished_tx,
        )));
        let app = server::router(world.clone());
        let mut tasks = vec![tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!("sandbox server stopped: {e}");
            }
        })];
        let ticker = world.clone();
        tasks.push(tokio::spawn(async move {
            let mut interval = tokio::time::interval(TICK);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                interval.tick().await;
                ticker.lock().expect("sandbox world lock").tick();
            }
        }));
        tasks.push(tokio::spawn(challengers::supervise(
            world.clone(),
            notice_rx,
            seed,
        )));
        for index in 0..challengers {
            tasks.push(tokio::spawn(challengers::challenge_loop(
                world.clone(),
                index,
                seed.wrapping_add(index as u64 + 1),
            )));
        }
        tracing::info!(%base_url, "sandbox listening");
        Ok(Sandbox {
            world,
            base_url,
            finished,
            tasks,
        })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, World> {
        self.world.lock().expect("sandbox world lock")
    }

    /// Runs `f` on the world (for checks the other methods do not cover).
    pub fn with_world<T>(&self, f: impl FnOnce(&mut World) -> T) -> T {
        f(&mut self.lock())
    }

    /// The token of an account.
    pub fn token(&self, username: &str) -> Option<Token> {
        let world = self.lock();
        let account = world.account(username)?;
        Token::new(&account.token, "sandbox").ok()
    }

    /// A client configuration for an account, pointed at this sandbox.
    pub fn client_config(&self, username: &str) -> Option<ClientConfig> {
        Some(ClientConfig::new(
            self.base_url.clone(),
            self.token(username)?,
        ))
    }

    /// A client for an account (default policies).
    pub fn client(&self, username: &str) -> Option<Client> {
        Client::new(self.client_config(username)?).ok()
    }

    // ------------------------------------------------------------ control

    /// Creates a challenge from `from` (a challenger or any account) to `to`.
    pub fn challenge(
        &self,
        from: &str,
        to: &str,
        spec: &ChallengeSpec,
    ) -> Result<ChallengeJson, ApiError> {
        self.challenge_as(from, to, spec, false)
    }

    /// Challenges waiting for an answer.
    pub fn pending_challenges(&self) -> Vec<ChallengeJson> {
        self.lock()
            .challenges
            .values()
            .map(|c| c.json.clone())
            .collect()
    }

    /// Challenges declined so far (with `declineReasonKey`).
    pub fn declined(&self) -> Vec<ChallengeJson> {
        self.lock().declined.clone()
    }

    /// Every game, running or finished, oldest id first.
    pub fn games(&self) -> Vec<GameSummary> {
        let world = self.lock();
        world
            .games
            .keys()
            .filter_map(|id| world.summary(id))
            .collect()
    }

    pub fn game(&self, id: &GameId) -> Option<GameSummary> {
        self.lock().summary(id)
    }

    /// Plays an action as a player (e.g. a test scripting a human side).
    pub fn act(&self, player: &str, game_id: &GameId, action: Action) -> Result<(), ApiError> {
        let player = player.to_ascii_lowercase();
        self.lock().game_action(&player, game_id, action)
    }

    /// Plays the move `uci` as a player, offering no draw.
    pub fn play_move(&self, player: &str, game_id: &GameId, uci: &str) -> Result<(), ApiError> {
        let action = Action::Move {
            uci: uci.to_string(),
            offering_draw: false,
        };
        self.act(player, game_id, action)
    }

    /// Waits until at least `n` games have finished (ended in any way, aborts included).
    pub async fn wait_finished(
        &self,
        n: usize,
        timeout: Duration,
    ) -> Result<Vec<GameSummary>, WaitTimeout> {
        let mut finished = self.finished.clone();
        let reached = tokio::time::timeout(timeout, finished.wait_for(|&count| count >= n)).await;
        match reached {
            Ok(Ok(_)) => Ok(self.games().into_iter().filter(|g| g.is_over()).collect()),
            _ => Err(WaitTimeout {
                what: format!("{n} finished games"),
                timeout,
            }),
        }
    }

    /// Polls `f` on the world every 20 ms until it returns `Some`.
    pub async fn wait_until<T>(
        &self,
        what: &str,
        timeout: Duration,
        mut f: impl FnMut(&World) -> Option<T>,
    ) -> Result<T, WaitTimeout> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(value) = f(&self.lock()) {
                return Ok(value);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(WaitTimeout {
                    what: what.to_string(),
                    timeout,
                });
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until `username`'s event stream is open (the daemon is listening for its
    /// challenges).
    pub async fn wait_event_stream(
        &self,
        username: &str,
        timeout: Duration,
    ) -> Result<(), WaitTimeout> {
        let id = username.to_ascii_lowercase();
        self.wait_until(&format!("{username}'s event stream"), timeout, |w| {
            w.event_streams.contains_key(&id).then_some(())
        })
        .await
    }

    /// Waits for a running game of `username` and returns its id.
    pub async fn wait_game_started(
        &self,
        username: &str,
        timeout: Duration,
    ) -> Result<GameId, WaitTimeout> {
        let id = username.to_ascii_lowercase();
        self.wait_until(&format!("a game of {username}"), timeout, |w| {
            w.games
                .values()
                .find(|e| e.game.status == GameStatus::Started && e.game.color_of(&id).is_some())
                .map(|e| e.game.id.clone())
        })
        .await
    }

    /// Stops (or resumes) the simulated challengers' new challenges; their running games go
    /// on. A soak pauses them to let the last games finish.
    pub fn pause_challengers(&self, paused: bool) {
        self.lock().challengers_paused = paused;
    }

    /// Moves refused while their game was running (out of turn, or illegal there).
    pub fn refused_moves(&self) -> Vec<RefusedMove> {
        self.lock().refused_moves.clone()
    }

    /// Every challenge no longer open, with how it closed.
    pub fn challenge_log(&self) -> Vec<ChallengeOutcome> {
        self.lock().challenge_log.clone()
    }

    // ------------------------------------------------------------ faults

    /// Closes the account's event stream now (the client sees a clean end).
    pub fn drop_event_stream(&self, username: &str) -> bool {
        self.lock()
            .event_streams
            .remove(&username.to_ascii_lowercase())
            .is_some()
    }

    /// Closes every open stream of a game now.
    pub fn drop_game_streams(&self, game_id: &GameId) -> usize {
        let mut world = self.lock();
        world
            .games
            .get_mut(game_id)
            .map_or(0, |e| e.streams.drain().count())
    }

    /// The account's open streams (event stream and game streams) send nothing, not even
    /// keep-alives, for `duration`; what they should have sent is lost, like on a stuck
    /// connection. Streams opened afterwards are healthy.
    pub fn silence(&self, username: &str, duration: Duration) {
        let id = username.to_ascii_lowercase();
        let world = self.lock();
        if let Some(slot) = world.event_streams.get(&id) {
            slot.control.silence(duration);
        }
        for entry in world.games.values() {
            if let Some(slot) = entry.streams.get(&id) {
                slot.control.silence(duration);
            }
        }
    }

    /// Answers the account's next `n` requests with `status` (429, 500, 502, ...).
    pub fn fail_next(&self, username: &str, n: u32, status: u16) {
        self.fail_next_with(username, n, status, None);
    }

    /// Answers the account's next `n` requests with a 429 that asks for `wait` (a
    /// `Retry-After` header and lila's `ratelimit.seconds`).
    pub fn rate_limit_next(&self, username: &str, n: u32, wait: Duration) {
        self.fail_next_with(username, n, 429, Some(wait));
    }

    fn fail_next_with(&self, username: &str, n: u32, status: u16, retry_after: Option<Duration>) {
        self.with_faults(username, |faults| {
            faults.fail_next = n;
            faults.fail_status = status;
            faults.retry_after = retry_after;
        });
    }

    /// For `duration`, the account's accepts of bots' challenges are answered as lila answers
    /// a bot at its bot-game limit: 429 `bot.vsBot.day` with the seconds left.
    pub fn bot_limit_reached(&self, username: &str, duration: Duration) {
        self.with_faults(username, |faults| {
            faults.bot_limit_until = Some(tokio::time::Instant::now() + duration);
        });
    }

    /// For `duration`, the account's event stream closes right after it opens, having replayed
    /// the open challenges and running games (a second process on the token, a proxy).
    pub fn flap_event_stream(&self, username: &str, duration: Duration) {
        self.with_faults(username, |faults| {
            faults.flap_event_stream_until = Some(tokio::time::Instant::now() + duration);
        });
        self.drop_event_stream(username);
    }

    /// For `duration`, opening the account's event stream is answered with `status`; the
    /// open stream is dropped, so the account tries to open it again.
    pub fn fail_event_stream(&self, username: &str, duration: Duration, status: u16) {
        self.with_faults(username, |faults| {
            faults.fail_event_stream_until = Some(tokio::time::Instant::now() + duration);
            faults.fail_status = status;
        });
        self.drop_event_stream(username);
    }

    /// When `username` opened its event stream, oldest first.
    pub fn event_stream_opens(&self, username: &str) -> Vec<tokio::time::Instant> {
        let id = username.to_ascii_lowercase();
        self.lock()
            .event_stream_opens
            .iter()
            .filter(|(_, account)| *account == id)
            .map(|(at, _)| *at)
            .collect()
    }

    /// For `duration`, the account's accepts are answered as lila answers when the
    /// *challenger* (a bot) is at its daily bot-game limit: HTTP 400 with `ratelimit.key`
    /// `bot.vsBot.day` and a message naming the challenger.
    pub fn challenger_bot_limit_reached(&self, username: &str, duration: Duration) {
        self.with_faults(username, |faults| {
            faults.challenger_bot_limit_until = Some(tokio::time::Instant::now() + duration);
        });
    }

    /// The game's stream answers `status` (400: a game the bot API cannot play) to every
    /// player from now on.
    pub fn refuse_game_stream(&self, game_id: &GameId, status: u16) {
        self.lock()
            .refused_game_streams
            .insert(game_id.clone(), status);
    }

    /// The game's next `n` claims (victory or draw, after the opponent left) are refused
    /// with a 400, as lila refuses a claim it does not allow yet.
    pub fn refuse_next_claims(&self, game_id: &GameId, n: u32) {
        self.lock().refused_claims.insert(game_id.clone(), n);
    }

    /// The game's next abort is overtaken by the opponent's move `uci`: the move is played
    /// first and the abort, answered 200, finds the game past the point of an abort.
    pub fn overtake_next_abort(&self, game_id: &GameId, uci: &str) {
        self.lock()
            .aborts_overtaken_by
            .insert(game_id.clone(), uci.to_string());
    }

    /// Every request of the account (streams included): when it arrived, and its path.
    pub fn requests_of(&self, username: &str) -> Vec<(tokio::time::Instant, String)> {
        let id = username.to_ascii_lowercase();
        self.lock()
            .request_log
            .iter()
            .filter(|(_, account, _)| *account == id)
            .map(|(at, _, path)| (*at, path.clone()))
            .collect()
    }

    /// Creates a challenge `from` plays; with `anonymous` it shows `challenger: null`, as
    /// Lichess shows a person who is not logged in.
    pub fn challenge_as(
        &self,
        from: &str,
        to: &str,
        spec: &ChallengeSpec,
        anonymous: bool,
    ) -> Result<ChallengeJson, ApiError> {
        let from = from.to_ascii_lowercase();
        self.lock().create_challenge_as(&from, to, spec, anonymous)
    }

    /// Answers every request of the account with `status` for `duration`.
    pub fn fail_for(&self, username: &str, duration: Duration, status: u16) {
        self.with_faults(username, |faults| {
            faults.fail_until = Some(tokio::time::Instant::now() + duration);
            faults.fail_status = status;
            faults.retry_after = None;
        });
    }

    /// Delays every response to the account by `delay`, for `duration` (`None`: until
    /// cleared).
    pub fn delay_responses(&self, username: &str, delay: Duration, duration: Option<Duration>) {
        self.with_faults(username, |faults| {
            faults.delay = delay;
            faults.delay_until = duration.map(|d| tokio::time::Instant::now() + d);
        });
    }

    /// What the account asked of the sandbox so far (total, and the most ordinary requests
    /// served at once).
    pub fn request_stats(&self, username: &str) -> RequestStats {
        self.lock()
            .requests
            .get(&username.to_ascii_lowercase())
            .copied()
            .unwrap_or_default()
    }

    /// Makes `username` leave (or return to) a game: the opponent's stream gets
    /// `opponentGone` and may claim victory or a draw once `claim_after` has passed.
    pub fn set_gone(
        &self,
        game_id: &GameId,
        username: &str,
        gone: bool,
        claim_after: Duration,
    ) -> Result<(), ApiError> {
        self.lock()
            .set_gone(game_id, &username.to_ascii_lowercase(), gone, claim_after)
    }

    /// Revokes the account's token (401 for everything, open streams end) until
    /// [`Sandbox::restore_token`].
    pub fn revoke_token(&self, username: &str) -> bool {
        self.lock().revoke_token(username)
    }

    /// Accepts the account's token again (and reopens a closed account).
    pub fn restore_token(&self, username: &str) -> bool {
        self.lock().restore_token(username)
    }

    /// Closes the account: 401 for its token, `disabled: true` in its public data.
    pub fn close_account(&self, username: &str) -> bool {
        self.lock().close_account(username)
    }

    /// Takes the whole sandbox down (`Some(503)`: every request gets that status, streams
    /// end) or brings it back (`None`).
    pub fn set_outage(&self, status: Option<u16>) {
        self.lock().set_outage(status);
    }

    /// The last User-Agent the account sent.
    pub fn user_agent(&self, username: &str) -> Option<String> {
        self.lock()
            .user_agents
            .get(&username.to_ascii_lowercase())
            .cloned()
    }

    /// When each challenge call (accept, decline, create, cancel) arrived, with its account.
    pub fn challenge_calls(&self) -> Vec<(tokio::time::Instant, String)> {
        self.lock().challenge_calls.clone()
    }

    /// The account's next `gameStart` event is lost (the game starts; its event stream never
    /// says so; a stream opened later sends it like Lichess does for running games).
    pub fn lose_next_game_start(&self, username: &str) {
        *self
            .lock()
            .lost_game_starts
            .entry(username.to_ascii_lowercase())
            .or_default() += 1;
    }

    /// Changes the account's armed faults (created unarmed when it has none).
    fn with_faults(&self, username: &str, change: impl FnOnce(&mut world::AccountFaults)) {
        let mut world = self.lock();
        change(
            world
                .faults
                .entry(username.to_ascii_lowercase())
                .or_default(),
        );
    }

    /// Disarms every HTTP fault of the account.
    pub fn clear_faults(&self, username: &str) {
        self.lock().faults.remove(&username.to_ascii_lowercase());
    }

    /// Writes a raw line (malformed JSON, an unknown type, extra fields) into the account's
    /// event stream. Returns whether a stream was open.
    pub fn inject_event_line(&self, username: &str, raw: &str) -> bool {
        let world = self.lock();
        world
            .event_streams
            .get(&username.to_ascii_lowercase())
            .is_some_and(|slot| slot.tx.send(raw.to_string()).is_ok())
    }

    /// Writes a raw line into every open stream of a game. Returns how many got it.
    pub fn inject_game_line(&self, game_id: &GameId, raw: &str) -> usize {
        let world = self.lock();
        world.games.get(game_id).map_or(0, |e| {
            e.streams
                .values()
                .filter(|slot| slot.tx.send(raw.to_string()).is_ok())
                .count()
        })
    }

    /// Sends the account's current challenges and games again (duplicate `challenge` and
    /// `gameStart` events).
    pub fn resend_events(&self, username: &str) {
        self.lock().resend_events(&username.to_ascii_lowercase());
    }

    /// Stops the server and every task.
    pub async fn stop(mut self) {
        for task in self.tasks.drain(..) {
            task.abort();
            let _cancelled = task.await;
        }
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}
