//! The account actor: one task per bot account. It keeps the account's event stream open
//! (reconnecting with jittered backoff when it ends or goes silent), answers challenges by
//! policy, starts one game actor per game and owns them in a `JoinSet`.
//!
//! Concurrency limits, and what happens over them: a challenge is only accepted when a global
//! slot, an account slot and an opponent slot are free; the slot is reserved until the game
//! starts. A `gameStart` that arrives anyway (a game that was running before a restart, one
//! started from the website) is played at once, over the limit if need be: lichess-bot queued
//! such games behind running ones until they lost on time, and a game that has started costs
//! the same whether we like it or not. A `gameStart` for a game that already has an actor (the
//! stream reopened and Lichess re-sent it) is ignored: one game, one actor.
//!
//! The actor runs in its account's span and starts each game actor in a child span, so log
//! lines name the account and the game without repeating them.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};
use tokio::task::JoinSet;
use tracing::Instrument;

use crate::config::Account;
use crate::levels::{Coefficients, LevelParams};
use crate::lichess::backoff::Backoff;
use crate::lichess::{
    BackoffPolicy, ChallengeId, ChallengeJson, Client, Event, GameEventInfo, GameId, LichessError,
};
use crate::logging::game_span;
use crate::results::Source;

use super::game::{self, GameContext, GameExit};
use super::policy::{self, ChallengeFacts, Decision, Load};
use super::pool::PoolHandle;
use super::reader::Reader;
use super::results_writer::ResultsStub;
use super::shutdown::{RunState, sleep_or_stop};
use super::status::{AccountStatus, DailyTally};
use super::tracker::GameSetup;

/// How long an accepted challenge holds its slot while waiting for its `gameStart`.
const RESERVATION: Duration = Duration::from_secs(30);
/// How long an answered challenge is remembered (Lichess re-sends open challenges on reconnect).
const ANSWERED_MEMORY: Duration = Duration::from_secs(120);

/// The settings an account actor plays with; replaced on reload (new games use the new ones).
#[derive(Clone, Debug, PartialEq)]
pub struct AccountSettings {
    pub account: Account,
    pub move_overhead_ms: u64,
    pub abort_after: Duration,
}

/// Everything an account actor is given.
pub struct AccountContext {
    pub client: Client,
    /// The Lichess user id (lowercase).
    pub user_id: String,
    pub settings: watch::Receiver<Arc<AccountSettings>>,
    pub coefficients: watch::Receiver<Arc<Coefficients>>,
    pub pool: PoolHandle,
    pub results: ResultsStub,
    /// Global game slots shared by every account.
    pub global_slots: Arc<Semaphore>,
    pub run_state: watch::Receiver<RunState>,
    pub source: Source,
    pub latency: Option<mpsc::UnboundedSender<Duration>>,
    /// The account's part of the periodic status line, published every second.
    pub status: watch::Sender<AccountStatus>,
}

/// Why an account actor stopped.
#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    #[error("account {account}: {source}")]
    Lichess {
        account: String,
        source: LichessError,
    },
}

struct Reservation {
    opponent: String,
    at: Instant,
    _permit: OwnedSemaphorePermit,
}

struct Running {
    opponent: String,
    /// Holds a global slot (`None` when the game was played over the global limit).
    _permit: Option<OwnedSemaphorePermit>,
}

struct Actor {
    ctx: AccountContext,
    username: String,
    /// Slots of accepted challenges, under the id of the game each will become.
    reserved: HashMap<GameId, Reservation>,
    running: HashMap<GameId, Running>,
    answered: HashMap<ChallengeId, Instant>,
    games: JoinSet<(GameId, GameExit)>,
    /// Game id of each game task, to clean up after a panic.
    tasks: HashMap<tokio::task::Id, GameId>,
    /// Games recorded today, for the status line.
    today: DailyTally,
}

type Joined = Result<(tokio::task::Id, (GameId, GameExit)), tokio::task::JoinError>;

/// Runs the account until shutdown. Returns an error only when the account cannot play at all
/// (token rejected).
pub async fn run(ctx: AccountContext) -> Result<(), AccountError> {
    let username = ctx.settings.borrow().account.username.clone();
    let mut actor = Actor {
        ctx,
        username,
        reserved: HashMap::new(),
        running: HashMap::new(),
        answered: HashMap::new(),
        games: JoinSet::new(),
        tasks: HashMap::new(),
        today: DailyTally::new(),
    };
    // Games left open by the previous run: resumed through gameStart, or settled.
    let settle = tokio::spawn(
        super::open_games::settle(
            actor.ctx.client.clone(),
            actor.ctx.results.clone(),
            actor.username.clone(),
            actor.ctx.run_state.clone(),
        )
        .instrument(tracing::Span::current()),
    );
    let result = actor.run().await;
    settle.abort();
    // Whatever ended the account (stop, drain complete, fatal error): its games end with it
    // only on a hard stop; otherwise they were already finished.
    actor.games.shutdown().await;
    result
}

impl Actor {
    async fn run(&mut self) -> Result<(), AccountError> {
        let mut backoff = Backoff::new(BackoffPolicy {
            base: Duration::from_millis(500),
            cap: Duration::from_secs(60),
            max_attempts: u32::MAX,
        });
        let mut run_state = self.ctx.run_state.clone();
        loop {
            if self.should_exit() {
                return Ok(());
            }
            let mut stream = match self.ctx.client.stream_events().await {
                Ok(stream) => Reader::spawn(stream),
                Err(e @ (LichessError::TokenRejected { .. } | LichessError::Forbidden { .. })) => {
                    return Err(AccountError::Lichess {
                        account: self.username.clone(),
                        source: e,
                    });
                }
                Err(e) => {
                    let delay = backoff.next_delay();
                    tracing::warn!("event stream: {e}; retrying in {delay:?}");
                    if self.wait_or_stop(delay).await {
                        return Ok(());
                    }
                    continue;
                }
            };
            tracing::info!("event stream open");
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tokio::select! {
                    event = stream.next() => match event {
                        Ok(event) => {
                            backoff.reset();
                            self.on_event(event).await;
                        }
                        Err(end) => {
                            tracing::warn!("event stream ended ({end}); reconnecting");
                            break;
                        }
                    },
                    Some(joined) = self.games.join_next_with_id(), if !self.games.is_empty() => {
                        self.on_game_exit(joined);
                        if self.should_exit() {
                            return Ok(());
                        }
                    }
                    _ = tick.tick() => {
                        self.purge();
                        self.publish_status();
                        if self.should_exit() {
                            return Ok(());
                        }
                    }
                    changed = run_state.changed() => {
                        if changed.is_err() || self.should_exit() {
                            return Ok(());
                        }
                    }
                }
            }
            let delay = backoff.next_delay();
            if self.wait_or_stop(delay).await {
                return Ok(());
            }
        }
    }

    /// Stopped, or draining with no game left.
    fn should_exit(&self) -> bool {
        match *self.ctx.run_state.borrow() {
            RunState::Running => false,
            RunState::Draining | RunState::Ending => {
                self.running.is_empty() && self.games.is_empty()
            }
            RunState::Stopped => true,
        }
    }

    /// Waits out a reconnect delay while still reaping finished games.
    async fn wait_or_stop(&mut self, delay: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + delay;
        let mut run_state = self.ctx.run_state.clone();
        loop {
            tokio::select! {
                Some(joined) = self.games.join_next_with_id(), if !self.games.is_empty() => {
                    self.on_game_exit(joined);
                    if self.should_exit() {
                        return true;
                    }
                }
                stopped = sleep_or_stop(deadline.saturating_duration_since(tokio::time::Instant::now()), &mut run_state) => {
                    return stopped || self.should_exit();
                }
            }
        }
    }

    fn on_game_exit(&mut self, joined: Joined) {
        match joined {
            Ok((task, (id, exit))) => {
                self.tasks.remove(&task);
                self.running.remove(&id);
                match exit {
                    GameExit::Recorded => self.today.record(&self.username, SystemTime::now()),
                    GameExit::Stopped => {}
                    GameExit::Failed(why) => {
                        tracing::warn!(game = %id, "game abandoned: {why}")
                    }
                }
            }
            Err(e) => {
                // A panicking game actor must not take the account down.
                let id = self.tasks.remove(&e.id());
                if let Some(id) = &id {
                    self.running.remove(id);
                }
                tracing::error!(game = ?id, "game actor failed: {e}");
            }
        }
    }

    fn publish_status(&mut self) {
        let status = AccountStatus {
            account: self.username.clone(),
            games_running: self.running.len(),
            queued: self.reserved.len(),
            games_today: self.today.today(&self.username, SystemTime::now()),
        };
        self.ctx.status.send_if_modified(|old| {
            let changed = *old != status;
            *old = status;
            changed
        });
    }

    fn purge(&mut self) {
        let now = Instant::now();
        self.reserved.retain(|id, r| {
            let keep = now.duration_since(r.at) < RESERVATION;
            if !keep {
                tracing::info!(game = %id, "accepted challenge never started; slot released");
            }
            keep
        });
        self.answered
            .retain(|_, at| now.duration_since(*at) < ANSWERED_MEMORY);
    }

    async fn on_event(&mut self, event: Event) {
        match event {
            Event::Challenge { challenge, .. } => self.on_challenge(*challenge).await,
            Event::GameStart { game } => self.on_game_start(*game),
            Event::GameFinish { game } => {
                tracing::debug!(game = %game.game_id, "gameFinish");
            }
            Event::ChallengeCanceled { challenge } => {
                if self.reserved.remove(&challenge.id.game_id()).is_some() {
                    tracing::info!(challenge = %challenge.id, "challenge canceled; slot released");
                }
            }
            Event::ChallengeDeclined { .. } | Event::Unknown { .. } => {}
        }
    }

    fn load_for(&self, opponent: &str) -> Load {
        let opponent_games = self
            .running
            .values()
            .map(|r| &r.opponent)
            .chain(self.reserved.values().map(|r| &r.opponent))
            .filter(|o| o.as_str() == opponent)
            .count();
        Load {
            account_games: self.running.len() + self.reserved.len(),
            opponent_games,
            global_full: self.ctx.global_slots.available_permits() == 0,
            draining: *self.ctx.run_state.borrow() != RunState::Running,
        }
    }

    async fn on_challenge(&mut self, c: ChallengeJson) {
        // Our own outgoing challenges, and challenges answered before the stream reopened.
        if c.challenger.id.eq_ignore_ascii_case(&self.ctx.user_id)
            || self.answered.contains_key(&c.id)
        {
            return;
        }
        self.answered.insert(c.id.clone(), Instant::now());
        let facts = facts_of(&c);
        let settings = Arc::clone(&self.ctx.settings.borrow());
        let mut decision = policy::decide(
            &settings.account.challenge,
            &facts,
            self.load_for(&facts.challenger_id),
        );
        let tc = facts.time_control.to_string();
        let permit = match decision {
            Decision::Accept => match Arc::clone(&self.ctx.global_slots).try_acquire_owned() {
                Ok(p) => Some(p),
                Err(_) => {
                    decision = Decision::Decline(policy::Reason::Later);
                    None
                }
            },
            Decision::Decline(_) => None,
        };
        match (decision, permit) {
            (Decision::Accept, Some(permit)) => match self.ctx.client.accept_challenge(&c.id).await
            {
                Ok(()) => {
                    tracing::info!(
                        challenge = %c.id, challenger = %c.challenger.name,
                        variant = %facts.variant, tc = %tc, rated = facts.rated, "challenge accepted"
                    );
                    self.reserved.insert(
                        c.id.game_id(),
                        Reservation {
                            opponent: facts.challenger_id,
                            at: Instant::now(),
                            _permit: permit,
                        },
                    );
                }
                Err(e) => {
                    tracing::warn!(challenge = %c.id, "accept failed: {e}")
                }
            },
            (Decision::Decline(_), _) | (Decision::Accept, None) => {
                let reason = match decision {
                    Decision::Decline(r) => r,
                    Decision::Accept => policy::Reason::Later,
                };
                tracing::info!(
                    challenge = %c.id, challenger = %c.challenger.name,
                    variant = %facts.variant, tc = %tc, reason = reason.as_str(), "challenge declined"
                );
                if let Err(e) = self.ctx.client.decline_challenge(&c.id, reason).await {
                    tracing::warn!(challenge = %c.id, "decline failed: {e}");
                }
            }
        }
    }

    fn on_game_start(&mut self, info: GameEventInfo) {
        let id = info.game_id.clone();
        if self.running.contains_key(&id) {
            tracing::debug!(game = %id, "gameStart for a running game ignored");
            return;
        }
        let opponent = info
            .opponent
            .as_ref()
            .and_then(|o| o.id.clone())
            .unwrap_or_default()
            .to_lowercase();
        let permit = match self.reserved.remove(&id) {
            Some(r) => Some(r._permit),
            None => match Arc::clone(&self.ctx.global_slots).try_acquire_owned() {
                Ok(p) => Some(p),
                Err(_) => {
                    tracing::warn!(game = %id, "game started over the global limit: playing it anyway");
                    None
                }
            },
        };
        let settings = Arc::clone(&self.ctx.settings.borrow());
        let coefficients = Arc::clone(&self.ctx.coefficients.borrow());
        let account = &settings.account;
        let setup = GameSetup {
            game_id: id.clone(),
            username: account.username.clone(),
            user_id: self.ctx.user_id.clone(),
            params: LevelParams::new(&coefficients, account.level),
            seed: rand::random(),
            source: self.ctx.source,
            move_overhead_ms: settings.move_overhead_ms,
        };
        let ctx = GameContext {
            client: self.ctx.client.clone(),
            pool: self.ctx.pool.clone(),
            results: self.ctx.results.clone(),
            setup,
            greeting: account.greeting.clone(),
            goodbye: account.goodbye.clone(),
            abort_after: settings.abort_after,
            run_state: self.ctx.run_state.clone(),
            latency: self.ctx.latency.clone(),
        };
        self.running.insert(
            id.clone(),
            Running {
                opponent,
                _permit: permit,
            },
        );
        let span = game_span(&tracing::Span::current(), id.as_str());
        let task = self
            .games
            .spawn(async move { (id.clone(), game::run(ctx).await) }.instrument(span))
            .id();
        self.tasks.insert(task, info.game_id);
    }
}

/// The policy's view of a wire challenge.
pub fn facts_of(c: &ChallengeJson) -> ChallengeFacts {
    ChallengeFacts {
        challenger_id: c.challenger.id.to_lowercase(),
        challenger_is_bot: c.challenger.is_bot(),
        variant: c.variant.key.clone(),
        speed: c.speed,
        rated: c.rated,
        time_control: c.time_control.clone(),
    }
}
