//! The account actor: one task per bot account. It makes the account's one `lichess::Client`
//! at its first check and keeps it for the daemon's lifetime: the event stream at every
//! reconnect, the game actors, the health checks and the settling task all share it, so one
//! request at a time per token and a 429 pause hold by construction (a replaced token file is
//! swapped into the same client). It checks the account with Lichess (and keeps
//! checking, with backoff, while Lichess refuses it or cannot be reached: see health.rs), keeps
//! the account's event stream open (reconnecting when it ends or goes silent, after waits that
//! grow while streams keep closing young and start over only once one stayed up; the client
//! holds the opens under lila's 30 per 10 minutes: lichess::stream_opens), answers challenges by policy, starts one game actor per game and owns them in a
//! `JoinSet`. An account in trouble never stops the others, and its running games go on.
//!
//! Concurrency limits, and what happens over them: a challenge is only accepted when a global
//! slot (slots.rs), an account slot and an opponent slot are free, and, from a bot, while the
//! account is under Lichess's daily bot-game limit (bot_limit.rs); the slot is reserved until
//! the game starts. A person's challenge that finds no slot waits for one instead of being
//! declined (waiting.rs), up to the account's `max_waiting`, and is accepted when a game ends
//! or the one-second tick finds a slot free. A `gameStart` that arrives anyway (a game that was running before a
//! restart, one started from the website) is played at once, over the limit if need be (and
//! counted): lichess-bot queued such games behind running ones until they lost on time, and a
//! game that has started costs the same whether we like it or not. A `gameStart` for a game
//! that already has an actor (the stream reopened and Lichess re-sent it) is ignored: one game,
//! one actor. Answers to challenges are sent from their own tasks, since they may wait behind the
//! account's other calls (or its own 429 pause) and game starts must not; an answer still
//! waiting when its challenge is canceled (it expired meanwhile) is dropped, so the calls after
//! a pause go to challenges someone still waits on, not to answers Lichess refuses (404). An
//! accept Lichess refuses for the account's bot-game limit (429 `bot.vsBot.day`) closes the
//! account to bot challenges until the limit's window reopens (bot_limit.rs); its running
//! games never wait for it. An accept refused for the *challenger's* limit (lila's 400 with the
//! same key) and one refused for ours both decline the challenge (`later`) at once. While the
//! daemon drains, the actor stays until the games of accepts already sent have started and
//! ended (or their reservations lapsed): a game nobody plays would be lost on `noStart`.
//!
//! An accepted challenge is remembered as an open game before the accept is sent (its seed
//! drawn then), so a `gameStart` lost with a silent stream or a restart cannot lose the game.
//! While the account is connected, a settling task (open_games.rs) looks after the open games
//! no game actor has taken up — left by a previous run, overdue starts, games whose actor gave
//! up — recording those that ended and handing back those still running, which the actor
//! starts like a `gameStart`. The actor runs in its account's span and starts each game actor in a child
//! span, so log lines name the account and the game without repeating them.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::{mpsc, watch};
use tokio::task::{JoinHandle, JoinSet};
use tracing::Instrument;

use crate::config::Account;
use crate::levels::{Coefficients, LevelParams};
use crate::lichess::stream_opens::ReconnectPacing;
use crate::lichess::{
    ChallengeId, ChallengeJson, Client, ClientConfig, Event, GameEventInfo, GameId, LichessError,
};
use crate::logging::game_span;
use crate::player::chat_commands::LevelFacts;
use crate::results::Source;

use super::bot_limit::{BOT_GAMES_PER_DAY, BotGames, time_of_ms};
use super::game::{self, GameContext, GameExit};
use super::health::{self, RetrySchedule, Trouble};
use super::open_games::OpenGame;
use super::policy::{self, ChallengeFacts, Decision, Load};
use super::pool::PoolHandle;
use super::reader::Reader;
use super::results_writer::ResultsStub;
use super::settle::{self, News};
use super::shutdown::{RunState, sleep_or_stop};
use super::slots::{GameSlots, Slot};
use super::status::{AccountProblem, AccountStatus, DailyTally};
use super::tracker::GameSetup;
use super::waiting::Waiting;
use crate::logging::show_duration;
use crate::logging::show_wait;

/// How long an accepted challenge holds its slot while waiting for its `gameStart`, from the
/// accept's answer (an accept still on its way holds it whatever the wait).
const RESERVATION: Duration = Duration::from_secs(30);
/// How long an answered challenge is remembered (Lichess re-sends open challenges on reconnect).
const ANSWERED_MEMORY: Duration = Duration::from_secs(120);
/// A game whose actor fails this many times is no longer played (see
/// [`Actor::on_game_failed`]).
const GAME_FAILURES: u32 = 3;

/// The settings an account actor plays with; replaced on reload (new games use the new ones).
#[derive(Clone, Debug, PartialEq)]
pub struct AccountSettings {
    pub account: Account,
    pub move_overhead_ms: u64,
    pub abort_after: Duration,
}

/// Makes the configuration of the account's client: its token (from the environment, a file,
/// the sandbox), the shared pacer and its User-Agent. Called at every check: the first makes
/// the account's one client, later ones only hand it the token read again, so a token
/// replaced on disk is picked up. Errors never contain the token.
pub type MakeClient = Arc<dyn Fn(&Account) -> Result<ClientConfig, String> + Send + Sync>;

/// Everything an account actor is given.
pub struct AccountContext {
    pub make_client: MakeClient,
    pub settings: watch::Receiver<Arc<AccountSettings>>,
    pub coefficients: watch::Receiver<Arc<Coefficients>>,
    pub pool: PoolHandle,
    pub results: ResultsStub,
    /// The global game cap, shared by every account and owned by the supervisor.
    pub slots: GameSlots,
    pub run_state: watch::Receiver<RunState>,
    pub source: Source,
    pub latency: Option<mpsc::UnboundedSender<Duration>>,
    /// The account's part of the periodic status line, published every second.
    pub status: watch::Sender<AccountStatus>,
    /// Today's games from the results log: the status line's count and the bot-game limit.
    pub games_today: u32,
    pub bot_games: BotGames,
}

struct Reservation {
    opponent: String,
    /// The challenger is a bot: the game counts against the daily bot-game limit.
    bot: bool,
    at: Instant,
    _slot: Slot,
}

struct Running {
    opponent: String,
    /// Holds a place in the global count (also a game that started over the cap).
    _slot: Slot,
}

/// How a challenge answer sent from its own task went.
struct Answered {
    challenge: ChallengeId,
    /// The challenger's name as Lichess shows it (a bot-game limit answer names it).
    challenger: String,
    accepted: bool,
    result: Result<(), LichessError>,
}

/// The client and user id of an account that passed its check.
struct Connected {
    client: Client,
    user_id: String,
}

struct Actor {
    ctx: AccountContext,
    username: String,
    /// The account's one client, made at the first check and kept until the actor ends.
    client: Option<Client>,
    connected: Option<Connected>,
    /// Set while the account cannot play, for the status line.
    problem: Option<AccountProblem>,
    /// Slots of accepted challenges, under the id of the game each will become.
    reserved: HashMap<GameId, Reservation>,
    running: HashMap<GameId, Running>,
    answered: HashMap<ChallengeId, Instant>,
    answers: JoinSet<Answered>,
    /// The answers not sent yet, to drop when their challenge is canceled.
    answering: HashMap<ChallengeId, tokio::task::AbortHandle>,
    /// People's challenges, unanswered, waiting for a slot (waiting.rs).
    waiting: Waiting,
    games: JoinSet<(GameId, GameExit)>,
    /// Game id of each game task, to clean up after a panic.
    tasks: HashMap<tokio::task::Id, GameId>,
    /// Games whose stream Lichess refused for good: left to the settling task, never started
    /// again (a re-sent `gameStart` or the settling task's hand-back is ignored).
    unplayable: HashSet<GameId>,
    /// Failures of a game's actor so far (see [`Actor::on_game_failed`]).
    failures: HashMap<GameId, u32>,
    /// Settles the open games no game actor has taken up, with the client of the latest check.
    settle: Option<JoinHandle<()>>,
    /// Running games the settling task found without a game actor.
    adopt_tx: mpsc::UnboundedSender<News>,
    adopt_rx: mpsc::UnboundedReceiver<News>,
    /// Games recorded today, for the status line.
    today: DailyTally,
    bot_games: BotGames,
}

type Joined = Result<(tokio::task::Id, (GameId, GameExit)), tokio::task::JoinError>;

/// How a stretch of play ended.
enum PlayEnd {
    /// Shutdown: the actor returns.
    Exit,
    /// The event stream ended or failed: reconnect after a pause.
    Reconnect,
    /// Lichess refused the account's event stream (401/403): check the account again.
    Refused(LichessError),
}

/// Runs the account until shutdown. An account Lichess refuses, or cannot be reached for, is
/// retried until it plays again or the daemon stops.
pub async fn run(ctx: AccountContext) {
    let username = ctx.settings.borrow().account.username.clone();
    // The account's open games are settling's until this actor takes them up again.
    ctx.results.release_account(&username);
    let mut today = DailyTally::new();
    today.seed(&username, ctx.games_today, SystemTime::now());
    let bot_games = ctx.bot_games.clone();
    let (adopt_tx, adopt_rx) = mpsc::unbounded_channel();
    let mut actor = Actor {
        ctx,
        username,
        client: None,
        connected: None,
        problem: None,
        reserved: HashMap::new(),
        running: HashMap::new(),
        answered: HashMap::new(),
        answers: JoinSet::new(),
        answering: HashMap::new(),
        waiting: Waiting::default(),
        games: JoinSet::new(),
        tasks: HashMap::new(),
        unplayable: HashSet::new(),
        failures: HashMap::new(),
        settle: None,
        adopt_tx,
        adopt_rx,
        today,
        bot_games,
    };
    actor.run().await;
    if let Some(settle) = actor.settle.take() {
        settle.abort();
    }
    // Whatever ended the account (stop, drain complete): its games end with it only on a
    // hard stop; otherwise they were already finished.
    actor.answers.shutdown().await;
    actor.games.shutdown().await;
}

impl Actor {
    async fn run(&mut self) {
        // Made at the first connection, from the account's client configuration.
        let mut stream_pacing: Option<ReconnectPacing> = None;
        let mut retry: Option<RetrySchedule> = None;
        loop {
            if self.should_exit() {
                return;
            }
            let Some(checked) = self.connect_unless_stopped().await else {
                return;
            };
            let trouble = match checked {
                Ok(()) => {
                    if let Some(problem) = self.problem.take() {
                        tracing::info!("the account plays again (it was: {})", problem.reason);
                    }
                    self.settle_open_games();
                    if let Some(r) = retry.as_mut() {
                        r.reset();
                    }
                    let pacing = stream_pacing.get_or_insert_with(|| {
                        ReconnectPacing::new(self.client().config().stream_reconnect)
                    });
                    match self.play(pacing).await {
                        PlayEnd::Exit => return,
                        PlayEnd::Reconnect => {
                            let delay = pacing.next_delay(tokio::time::Instant::now());
                            if pacing.young_ends() > 1 {
                                tracing::info!(
                                    "the event stream closed soon after opening {} times in a \
                                     row: reconnecting in {}",
                                    pacing.young_ends(),
                                    show_duration(delay)
                                );
                            }
                            if self.wait_or_stop(delay).await {
                                return;
                            }
                            continue;
                        }
                        PlayEnd::Refused(e) => {
                            // Ask again what is wrong: a closed account and a revoked token
                            // look the same on the stream. A check that passes means the
                            // refusal was passing: reconnect after the usual pause.
                            self.connected = None;
                            let Some(checked) = self.connect_unless_stopped().await else {
                                return;
                            };
                            match checked {
                                Err(trouble) => trouble,
                                Ok(()) => {
                                    let delay = pacing.next_delay(tokio::time::Instant::now());
                                    tracing::warn!(
                                        "event stream: {e}; the account checks out, reconnecting in {}",
                                        show_duration(delay)
                                    );
                                    if self.wait_or_stop(delay).await {
                                        return;
                                    }
                                    continue;
                                }
                            }
                        }
                    }
                }
                Err(trouble) => trouble,
            };
            let retry = retry.get_or_insert_with(|| {
                RetrySchedule::new(
                    self.connected
                        .as_ref()
                        .map(|c| c.client.config().account_retry)
                        .unwrap_or_default(),
                )
            });
            let delay = retry.next_delay(&trouble);
            if trouble.refused {
                tracing::error!(
                    "{}; the other accounts play on; checking again in {}",
                    trouble.detail,
                    show_wait(delay)
                );
            } else {
                tracing::warn!("{}; checking again in {}", trouble.detail, show_wait(delay));
            }
            self.problem = Some(AccountProblem {
                reason: trouble.short.clone(),
                retry_at: Instant::now() + delay,
            });
            self.connected = None;
            self.publish_status();
            if self.wait_or_stop(delay).await {
                return;
            }
        }
    }

    /// Checks the account (see [`Actor::connect`]) unless the daemon stops first (`None`):
    /// in an outage the check retries for minutes, and a stop must not wait for it. With
    /// nothing in flight (no game, reservation or answer) a drain stops it too.
    async fn connect_unless_stopped(&mut self) -> Option<Result<(), Trouble>> {
        let mut run_state = self.ctx.run_state.clone();
        let idle = self.nothing_in_flight();
        tokio::select! {
            checked = self.connect() => Some(checked),
            () = halted(&mut run_state, idle) => None,
        }
    }

    /// Checks the account with Lichess, with its one client (made at the first check; later
    /// checks hand it the token read again).
    async fn connect(&mut self) -> Result<(), Trouble> {
        let account = self.ctx.settings.borrow().account.clone();
        let config =
            (self.ctx.make_client)(&account).map_err(|e| Trouble::refused("no usable token", e))?;
        let client = match &self.client {
            Some(client) => {
                client.set_token(config.token);
                client.clone()
            }
            None => {
                let client = Client::new(config).map_err(|e| {
                    Trouble::refused(
                        "no usable client",
                        format!("account {}: {e}", account.username),
                    )
                })?;
                self.client = Some(client.clone());
                client
            }
        };
        // Kept before the check, so its retry policy applies to the retries.
        self.connected = Some(Connected {
            client: client.clone(),
            user_id: account.id(),
        });
        let user_id = health::verify(&account, &client).await?;
        self.connected = Some(Connected { client, user_id });
        Ok(())
    }

    /// Starts settling the open games no game actor has taken up (open_games.rs), with the
    /// account's client, unless a settling task already runs (it shares the client, and with
    /// it any new token).
    fn settle_open_games(&mut self) {
        if self.settle.as_ref().is_some_and(|task| !task.is_finished()) {
            return;
        }
        let settle = settle::settle(
            self.client().clone(),
            self.ctx.results.clone(),
            self.username.clone(),
            self.adopt_tx.clone(),
            self.ctx.run_state.clone(),
        );
        self.settle = Some(tokio::spawn(settle.instrument(tracing::Span::current())));
    }

    fn client(&self) -> &Client {
        &self
            .connected
            .as_ref()
            .expect("connected before playing")
            .client
    }

    /// Follows the event stream until it ends, fails or the daemon stops. `pacing` hears when
    /// the stream opened: only a stream that stays up starts the reconnect waits over.
    async fn play(&mut self, pacing: &mut ReconnectPacing) -> PlayEnd {
        let mut run_state = self.ctx.run_state.clone();
        // Opening waits out the open budget and 429 pauses (minutes at worst): a stop must
        // not wait for it.
        let idle = self.nothing_in_flight();
        let client = self.client().clone();
        let opened = tokio::select! {
            opened = client.stream_events() => opened,
            () = halted(&mut run_state, idle) => return PlayEnd::Exit,
        };
        let mut stream = match opened {
            Ok(stream) => Reader::spawn(stream),
            Err(e @ (LichessError::TokenRejected { .. } | LichessError::Forbidden { .. })) => {
                return PlayEnd::Refused(e);
            }
            Err(e) => {
                tracing::warn!("event stream: {e}");
                return PlayEnd::Reconnect;
            }
        };
        pacing.opened(tokio::time::Instant::now());
        tracing::info!("event stream open");
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                event = stream.next() => match event {
                    // No reset of the reconnect waits here: a reopened stream replays the
                    // running games and open challenges at once, even one about to close.
                    Ok(event) => self.on_event(event),
                    Err(end) => {
                        tracing::warn!("event stream ended ({end}); reconnecting");
                        return PlayEnd::Reconnect;
                    }
                },
                Some(joined) = self.games.join_next_with_id(), if !self.games.is_empty() => {
                    self.on_game_exit(joined);
                    if self.should_exit() {
                        return PlayEnd::Exit;
                    }
                    self.serve_waiting();
                }
                Some(answered) = self.answers.join_next(), if !self.answers.is_empty() => {
                    self.on_answered(answered);
                }
                Some(news) = self.adopt_rx.recv() => self.on_news(news),
                _ = tick.tick() => {
                    self.purge();
                    self.serve_waiting();
                    self.publish_status();
                    if self.should_exit() {
                        return PlayEnd::Exit;
                    }
                }
                changed = run_state.changed() => {
                    if changed.is_err() || self.should_exit() {
                        return PlayEnd::Exit;
                    }
                }
            }
        }
    }

    /// Stopped, or draining with no game left — nor one about to start: an accept sent just
    /// before the stop request starts a game that must have an actor (lila would end it
    /// unplayed, as a `noStart` against the bot), so reservations and answers in flight are
    /// waited for (a reservation lapses after [`RESERVATION`]).
    fn should_exit(&self) -> bool {
        match *self.ctx.run_state.borrow() {
            RunState::Running => false,
            RunState::Draining | RunState::Ending => self.nothing_in_flight(),
            RunState::Stopped => true,
        }
    }

    /// No game running or about to start, and no answer on its way.
    fn nothing_in_flight(&self) -> bool {
        self.running.is_empty()
            && self.games.is_empty()
            && self.reserved.is_empty()
            && self.answers.is_empty()
    }

    /// Waits out a pause while still reaping finished games and publishing the status.
    /// Returns `true` when the actor should exit.
    async fn wait_or_stop(&mut self, delay: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + delay;
        let mut run_state = self.ctx.run_state.clone();
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            if self.should_exit() {
                return true;
            }
            tokio::select! {
                Some(joined) = self.games.join_next_with_id(), if !self.games.is_empty() => {
                    self.on_game_exit(joined);
                }
                Some(answered) = self.answers.join_next(), if !self.answers.is_empty() => {
                    self.on_answered(answered);
                }
                // A game settling finds running is taken up even while the event stream is
                // down (it would lose on time meanwhile); unconnected, it waits for the next
                // round of settling.
                Some(news) = self.adopt_rx.recv() => self.on_news(news),
                _ = tick.tick() => {
                    self.purge();
                    self.publish_status();
                }
                stopped = sleep_or_stop(deadline.saturating_duration_since(tokio::time::Instant::now()), &mut run_state) => {
                    return stopped || self.should_exit();
                }
            }
        }
    }

    /// What the settling task found: a running game to take up, a bot game to count.
    fn on_news(&mut self, news: News) {
        match news {
            News::Adopt(adopt) => {
                if let Some(ms) = adopt.bot_started_at_ms {
                    self.bot_games.count(&adopt.game_id, time_of_ms(ms));
                }
                self.start_game(adopt.game_id, adopt.opponent);
            }
            News::BotGameRecorded {
                game_id,
                started_at_ms,
            } => {
                self.bot_games.count(&game_id, time_of_ms(started_at_ms));
            }
        }
    }

    fn on_game_exit(&mut self, joined: Joined) {
        match joined {
            Ok((task, (id, exit))) => {
                self.tasks.remove(&task);
                self.running.remove(&id);
                match exit {
                    GameExit::Recorded { bot_started_at_ms } => {
                        self.failures.remove(&id);
                        self.today.record(&self.username, SystemTime::now());
                        // Counted at its start when we knew it was a bot (a reserved
                        // challenge); otherwise now, at the time it started.
                        if let Some(ms) = bot_started_at_ms {
                            self.bot_games.count(&id, time_of_ms(ms));
                        }
                    }
                    // Still open on Lichess and in the open-games file: the next start
                    // resumes or settles it.
                    GameExit::Stopped | GameExit::LeftRunning => {}
                    GameExit::Failed(why) => {
                        tracing::warn!(game = %id, "game abandoned: {why}; settling it instead");
                        self.on_game_failed(id);
                    }
                    GameExit::Unplayable(why) => {
                        tracing::warn!(
                            game = %id,
                            "Lichess refuses the game's stream ({why}); not playing it, it is \
                             recorded when it ends"
                        );
                        self.unplayable.insert(id.clone());
                        self.ctx.results.release(id);
                    }
                }
            }
            Err(e) => {
                // A panicking game actor must not take the account down.
                let id = self.tasks.remove(&e.id());
                tracing::error!(
                    game = id.as_ref().map_or("(unknown)", |id| id.as_str()),
                    "game actor failed: {e}"
                );
                if let Some(id) = id {
                    self.running.remove(&id);
                    self.on_game_failed(id);
                }
            }
        }
    }

    /// A game actor failed: settling takes the game up again, and hands it back while it
    /// runs. A game that fails [`GAME_FAILURES`] times is left to settling (recorded when it
    /// ends): a failure that repeats would open its stream every few seconds to its end.
    fn on_game_failed(&mut self, id: GameId) {
        let failures = self.failures.entry(id.clone()).or_insert(0);
        *failures += 1;
        if *failures >= GAME_FAILURES {
            tracing::warn!(game = %id, "the game failed {GAME_FAILURES} times: not played again, recorded when it ends");
            self.failures.remove(&id);
            self.unplayable.insert(id.clone());
        }
        self.ctx.results.release(id);
    }

    fn on_answered(&mut self, answered: Result<Answered, tokio::task::JoinError>) {
        // A dropped answer (its challenge was canceled) has nothing to report.
        let Ok(Answered {
            challenge,
            challenger,
            accepted,
            result,
        }) = answered
        else {
            return;
        };
        self.answering.remove(&challenge);
        // Remembered from the answer, not from the decision: an answer held back by 429
        // pauses must not be forgotten (and the challenge decided again when Lichess re-sends
        // it on a reconnect) before it went out.
        self.answered.insert(challenge.clone(), Instant::now());
        // The wait for the gameStart counts from the accept's answer: an accept held back by
        // a 429 pause keeps its slot all the while.
        if accepted
            && result.is_ok()
            && let Some(r) = self.reserved.get_mut(&challenge.game_id())
        {
            r.at = Instant::now();
        }
        let refused_for_limit = match &result {
            Err(LichessError::BotLimit { message, wait, .. }) if accepted => {
                // lila names the other bot when the limit is theirs ("X played 100 games …").
                let theirs = message
                    .to_lowercase()
                    .starts_with(&format!("{} played", challenger.to_lowercase()));
                if theirs {
                    tracing::info!(challenge = %challenge, "{challenger} is at its bot-game limit: {message}");
                } else {
                    let now = SystemTime::now();
                    let reopens = now.checked_add(*wait).unwrap_or(now);
                    self.bot_games.refused_until(reopens);
                    tracing::warn!(
                        challenge = %challenge,
                        "Lichess refused the accept for the bot-game limit ({message}); bot \
                         challenges are declined for {}",
                        show_wait(*wait)
                    );
                }
                true
            }
            // lila's 400 for the challenger's limit: ours is untouched.
            Err(LichessError::OpponentBotLimit { message, .. }) if accepted => {
                tracing::info!(challenge = %challenge, "{challenger} is at its bot-game limit: {message}");
                true
            }
            _ => false,
        };
        // A challenge Lichess would not let us accept stays open until it expires: the
        // challenger would wait for nothing. Decline it as `later` (the limit reopens).
        if refused_for_limit && let Some(connected) = &self.connected {
            let client = connected.client.clone();
            tracing::info!(challenge = %challenge, challenger = %challenger, reason = "later", "challenge declined after the refused accept");
            self.decline(
                client,
                challenge.clone(),
                challenger.clone(),
                policy::Reason::Later,
            );
        }
        if let Err(e) = result {
            let what = if accepted { "accept" } else { "decline" };
            tracing::warn!(challenge = %challenge, "{what} failed: {e}");
            if accepted && self.reserved.remove(&challenge.game_id()).is_some() {
                tracing::info!(challenge = %challenge, "slot released");
            }
            // Lichess said no (a 4xx): no game will come of it, and settling need not ask
            // for it every few seconds. After a timeout or a 5xx the accept may have gone
            // through: settling finds out.
            if accepted && refused_for_good(&e) {
                let results = self.ctx.results.clone();
                let id = challenge.game_id();
                tokio::spawn(async move {
                    if let Err(e) = results.forget(id).await {
                        tracing::warn!("cannot forget the refused accept: {e}");
                    }
                });
            }
        }
    }

    fn publish_status(&mut self) {
        let now = SystemTime::now();
        let status = AccountStatus {
            account: self.username.clone(),
            games_running: self.running.len(),
            queued: self.waiting.len(),
            games_today: self.today.today(&self.username, now),
            problem: self.problem.clone(),
            // Published only once the first connection attempt has an outcome.
            checked: true,
        };
        self.ctx.status.send_if_modified(|old| {
            let changed = *old != status;
            *old = status;
            changed
        });
    }

    fn purge(&mut self) {
        let now = Instant::now();
        let unanswered: HashSet<GameId> = self.answering.keys().map(ChallengeId::game_id).collect();
        self.reserved.retain(|id, r| {
            let keep = unanswered.contains(id) || now.duration_since(r.at) < RESERVATION;
            if !keep {
                tracing::info!(game = %id, "accepted challenge never started; slot released");
            }
            keep
        });
        let answering = &self.answering;
        let reserved = &self.reserved;
        self.answered.retain(|id, at| {
            answering.contains_key(id)
                || reserved.contains_key(&id.game_id())
                || now.duration_since(*at) < ANSWERED_MEMORY
        });
    }

    fn on_event(&mut self, event: Event) {
        match event {
            Event::Challenge { challenge, .. } => self.on_challenge(*challenge),
            Event::GameStart { game } => self.on_game_start(*game),
            Event::GameFinish { game } => {
                tracing::debug!(game = %game.game_id, "gameFinish");
            }
            Event::ChallengeCanceled { challenge } => {
                if let Some(answer) = self.answering.remove(&challenge.id) {
                    answer.abort();
                    tracing::info!(challenge = %challenge.id, "challenge canceled before our answer went out; answer dropped");
                }
                if self.reserved.remove(&challenge.id.game_id()).is_some() {
                    tracing::info!(challenge = %challenge.id, "challenge canceled; slot released");
                }
                if self.waiting.remove(&challenge.id) {
                    tracing::info!(challenge = %challenge.id, "challenge canceled while it waited for a slot; forgotten");
                }
            }
            Event::ChallengeDeclined { .. } | Event::Unknown { .. } => {}
        }
    }

    /// Bot games in lila's current window, started or promised.
    fn bot_games_today(&self) -> usize {
        self.bot_games.in_window(SystemTime::now())
            + self.reserved.values().filter(|r| r.bot).count()
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
            global_full: self.ctx.slots.is_full(),
            bot_games_full: self.bot_games_today() >= BOT_GAMES_PER_DAY
                || self.bot_games.is_refused(SystemTime::now()),
            draining: *self.ctx.run_state.borrow() != RunState::Running,
        }
    }

    fn on_challenge(&mut self, c: ChallengeJson) {
        let Some(connected) = &self.connected else {
            return;
        };
        // Our own outgoing challenges, challenges answered before the stream reopened, and
        // those waiting for a slot (Lichess re-sends open challenges on reconnect).
        if c.challenger.id.eq_ignore_ascii_case(&connected.user_id)
            || self.answered.contains_key(&c.id)
            || self.waiting.contains(&c.id)
        {
            return;
        }
        let client = connected.client.clone();
        let facts = facts_of(&c);
        let settings = Arc::clone(&self.ctx.settings.borrow());
        let decision = policy::decide(
            &settings.account.challenge,
            &facts,
            self.load_for(&facts.challenger_id),
        );
        let reason = match decision {
            Decision::Accept => match self.ctx.slots.try_take() {
                Some(slot) => return self.accept(client, &c, facts, slot),
                None => policy::Reason::Later,
            },
            Decision::Decline(reason) => reason,
        };
        let tc = facts.time_control.to_string();
        // Busy: a person waits for a slot (bots never do, so they never stand ahead of one).
        if reason == policy::Reason::Later
            && !facts.challenger_is_bot
            && *self.ctx.run_state.borrow() == RunState::Running
            && self.waiting.push(
                c.clone(),
                settings.account.challenge.max_waiting,
                Instant::now(),
            )
        {
            tracing::info!(
                challenge = %c.id, challenger = %c.challenger.name, variant = %facts.variant,
                tc = %tc, waiting = self.waiting.len(),
                "every slot is busy: the challenge waits for one"
            );
            return;
        }
        tracing::info!(
            challenge = %c.id, challenger = %c.challenger.name,
            variant = %facts.variant, tc = %tc, reason = reason.as_str(), "challenge declined"
        );
        self.decline(client, c.id.clone(), c.challenger.name.clone(), reason);
    }

    /// Accepts the waiting challenges that fit now, the oldest first, and declines (`later`)
    /// those that waited too long, or all of them once the daemon drains. A waiting challenge
    /// that the policy now refuses for good (a reload changed it) is declined with its reason.
    fn serve_waiting(&mut self) {
        if self.waiting.is_empty() {
            return;
        }
        let Some(connected) = &self.connected else {
            return;
        };
        let client = connected.client.clone();
        let late = if *self.ctx.run_state.borrow() == RunState::Running {
            self.waiting.take_expired(Instant::now())
        } else {
            self.waiting.take_all()
        };
        for c in late {
            tracing::info!(
                challenge = %c.id, challenger = %c.challenger.name, reason = "later",
                "challenge declined after waiting for a slot"
            );
            let (id, name) = (c.id.clone(), c.challenger.name.clone());
            self.decline(client.clone(), id, name, policy::Reason::Later);
        }
        let settings = Arc::clone(&self.ctx.settings.borrow());
        while !self.ctx.slots.is_full() {
            // The oldest challenge the policy no longer calls busy.
            let Some((index, decision)) = self.waiting.iter().enumerate().find_map(|(i, c)| {
                let facts = facts_of(c);
                let load = self.load_for(&facts.challenger_id);
                match policy::decide(&settings.account.challenge, &facts, load) {
                    Decision::Decline(policy::Reason::Later) => None,
                    decision => Some((i, decision)),
                }
            }) else {
                break;
            };
            let Some((c, since)) = self.waiting.take(index) else {
                break;
            };
            match decision {
                Decision::Accept => {
                    let Some(slot) = self.ctx.slots.try_take() else {
                        // Another account took the last global slot meanwhile: wait on.
                        self.waiting.restore(index, c, since);
                        break;
                    };
                    tracing::info!(
                        challenge = %c.id, challenger = %c.challenger.name,
                        waited = %show_duration(since.elapsed()),
                        "a slot freed: the waiting challenge goes first"
                    );
                    let facts = facts_of(&c);
                    self.accept(client.clone(), &c, facts, slot);
                }
                Decision::Decline(reason) => {
                    tracing::info!(
                        challenge = %c.id, challenger = %c.challenger.name,
                        reason = reason.as_str(), "waiting challenge declined: the policy changed"
                    );
                    let (id, name) = (c.id.clone(), c.challenger.name.clone());
                    self.decline(client.clone(), id, name, reason);
                }
            }
        }
    }

    /// Accepts a challenge the policy accepts, holding `slot` for its game.
    fn accept(&mut self, client: Client, c: &ChallengeJson, facts: ChallengeFacts, slot: Slot) {
        tracing::info!(
            challenge = %c.id, challenger = %c.challenger.name, variant = %facts.variant,
            tc = %facts.time_control.to_string(), rated = facts.rated, "challenge accepted"
        );
        // Remembered and reserved before the call: the `gameStart` may arrive before its
        // answer, or never.
        let remembered = self
            .setup(c.id.game_id(), rand::random())
            .map(|setup| OpenGame::accepted(&setup, crate::unix_time::unix_ms()));
        let results = self.ctx.results.clone();
        self.reserved.insert(
            c.id.game_id(),
            Reservation {
                opponent: facts.challenger_id,
                bot: facts.challenger_is_bot,
                at: Instant::now(),
                _slot: slot,
            },
        );
        self.answered.insert(c.id.clone(), Instant::now());
        let (id, challenger) = (c.id.clone(), c.challenger.name.clone());
        let answer = self.answers.spawn(async move {
            if let Some(game) = remembered
                && let Err(e) = results.remember_accepted(game).await
            {
                tracing::error!(
                    "cannot remember the accepted challenge ({e}); if its gameStart is lost, \
                     the game goes unrecorded"
                );
            }
            let result = client.accept_challenge(&id).await;
            Answered {
                challenge: id,
                challenger,
                accepted: true,
                result,
            }
        });
        self.answering.insert(c.id.clone(), answer);
    }

    /// Sends the decline of a challenge, as one of the account's answers.
    fn decline(
        &mut self,
        client: Client,
        challenge: ChallengeId,
        challenger: String,
        reason: policy::Reason,
    ) {
        self.answered.insert(challenge.clone(), Instant::now());
        let id = challenge.clone();
        let answer = self.answers.spawn(async move {
            let result = client.decline_challenge(&id, reason).await;
            Answered {
                challenge: id,
                challenger,
                accepted: false,
                result,
            }
        });
        self.answering.insert(challenge, answer);
    }

    fn on_game_start(&mut self, info: GameEventInfo) {
        let opponent = info
            .opponent
            .as_ref()
            .and_then(|o| o.id.clone())
            .unwrap_or_default()
            .to_lowercase();
        self.start_game(info.game_id, opponent);
    }

    /// What a game of this account starts with now: its level under the current
    /// coefficients, and `seed` (a game remembered before keeps its own: game.rs).
    fn setup(&self, game_id: GameId, seed: u64) -> Option<GameSetup> {
        let connected = self.connected.as_ref()?;
        let settings = self.ctx.settings.borrow();
        let coefficients = self.ctx.coefficients.borrow();
        Some(GameSetup::new(
            game_id,
            (&settings.account.username, &connected.user_id),
            LevelParams::new(&coefficients, settings.account.level),
            seed,
            self.ctx.source,
            settings.move_overhead_ms,
        ))
    }

    /// Starts the game actor of `id` (from its `gameStart`, or from the settling task), unless
    /// the game already has one.
    fn start_game(&mut self, id: GameId, opponent: String) {
        if self.running.contains_key(&id) {
            tracing::debug!(game = %id, "gameStart for a running game ignored");
            return;
        }
        if self.unplayable.contains(&id) {
            tracing::debug!(game = %id, "a game whose stream Lichess refuses: left to settling");
            return;
        }
        let Some(setup) = self.setup(id.clone(), rand::random()) else {
            return;
        };
        let client = self.client().clone();
        let slot = match self.reserved.remove(&id) {
            Some(r) => {
                if r.bot {
                    self.bot_games.count(&id, SystemTime::now());
                }
                r._slot
            }
            None => self.ctx.slots.try_take().unwrap_or_else(|| {
                tracing::warn!(game = %id, "game started over the global limit: playing it anyway");
                self.ctx.slots.take_over_cap()
            }),
        };
        let settings = Arc::clone(&self.ctx.settings.borrow());
        let account = &settings.account;
        let ctx = GameContext {
            client,
            pool: self.ctx.pool.clone(),
            results: self.ctx.results.clone(),
            setup,
            chat_lines: account.chat_lines.clone(),
            abort_after: settings.abort_after,
            think: account.think,
            conduct: account.conduct,
            level_facts: level_facts(&self.ctx.coefficients.borrow(), account.level),
            run_state: self.ctx.run_state.clone(),
            latency: self.ctx.latency.clone(),
        };
        self.running.insert(
            id.clone(),
            Running {
                opponent,
                _slot: slot,
            },
        );
        let span = game_span(&tracing::Span::current(), id.as_str());
        let task_id = id.clone();
        let task = self
            .games
            .spawn(async move { (task_id.clone(), game::run(ctx).await) }.instrument(span))
            .id();
        self.tasks.insert(task, id);
    }
}

/// Resolves once the daemon is stopped, or, when the account has nothing in flight
/// (`idle`), once it no longer runs (a drain).
async fn halted(run_state: &mut watch::Receiver<RunState>, idle: bool) {
    if run_state
        .wait_for(|s| *s == RunState::Stopped || (idle && *s != RunState::Running))
        .await
        .is_err()
    {
        // The supervisor is gone: nothing will stop us more clearly than that.
    }
}

/// Whether Lichess answered an accept with a refusal (a 4xx other than a bad token): no game
/// comes of it. A 429 is a refusal too: the request was not carried out.
fn refused_for_good(e: &LichessError) -> bool {
    matches!(
        e,
        LichessError::NotFound { .. }
            | LichessError::BadRequest { .. }
            | LichessError::Forbidden { .. }
            | LichessError::Status { .. }
            | LichessError::BotLimit { .. }
            | LichessError::OpponentBotLimit { .. }
            | LichessError::RateLimited { .. }
    )
}

/// What `!level` says of `level` under `coefficients`: its target, and its rating with where
/// that comes from.
fn level_facts(coefficients: &Coefficients, level: f64) -> LevelFacts {
    let targets = coefficients.targets();
    let source = if coefficients.ratings_source.is_empty() {
        "nominal".to_string()
    } else {
        coefficients.ratings_source.clone()
    };
    LevelFacts {
        level,
        target: Some((targets.target(level), targets.scale.clone())),
        rating: coefficients.rating_of(level).map(|r| (r, source)),
        interval: coefficients.rating_interval_of(level),
    }
}

/// The policy's view of a wire challenge.
pub fn facts_of(c: &ChallengeJson) -> ChallengeFacts {
    let anonymous = c.challenger.is_anonymous();
    ChallengeFacts {
        // Anonymous people are told apart by their challenge (each is someone else).
        challenger_id: if anonymous {
            format!("anonymous:{}", c.id)
        } else {
            c.challenger.id.to_lowercase()
        },
        challenger_is_bot: c.challenger.is_bot(),
        challenger_is_anonymous: anonymous,
        variant: c.variant.key.clone(),
        speed: c.speed,
        rated: c.rated,
        time_control: c.time_control.clone(),
    }
}
