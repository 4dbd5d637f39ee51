//! The game actor: one task per running game. It remembers the game as open (a game left open
//! by the previous run keeps its seed), follows the game stream (reconnecting and resuming
//! from `gameFull`), lets the [`Tracker`] decide, runs searches through the shared pool with
//! the game's [`LevelPlayer`] (level and seed fixed at game start), posts moves, chats, aborts
//! a game whose opponent never moves, answers offers and resigns lost games under the
//! account's conduct, waits out human think time after a search, and when the shutdown grace
//! period runs out aborts a game Lichess still lets us abort (fewer than two plies) and leaves
//! any other running on Lichess for the next start to resume (never resigning a game for the
//! operator's sake), claims the win (or, where the level's conduct would take a
//! draw, the draw) once Lichess allows it after the opponent left (`opponentGone` with
//! `claimWinInSeconds`, re-armed by each one; a refused claim is tried once more, then again
//! only when Lichess says the opponent is still gone), logs every chat line
//! and answers chat commands in their room (`player::chat_commands`), and writes the game's
//! record once — with a fault when a loss on time
//! came from a 429 pause, the game was aborted by the shutdown or won by the opponent leaving.
//! A game stream Lichess refuses for good (400 or another permanent 4xx: a game the bot API
//! cannot play) is not retried: the game is handed to the settling task, which records it
//! when it ends. It runs in its game's span (`logging::game_span`): its log lines name the
//! game through it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot, watch};

use crate::config::ChatLines;
use crate::engine::SearchResult;
use crate::engine::humane::ClockLeft;
use crate::lichess::backoff::Backoff;
use crate::lichess::{
    BackoffPolicy, ChatLine, ChatRoom, Client, GameEvent, GameId, LichessError, StreamEnd,
};
use crate::player::LevelPlayer;
use crate::player::think::{PositionFacts, ThinkClock, ThinkSettings, Thinker, wait_after_search};
use crate::results::{AfterRestart, GameRecord, Outcome, fault};

use super::open_games::OpenGame;
use super::pool::{PoolHandle, SearchDone, SearchJob};
use super::reader::Reader;
use super::results_writer::ResultsStub;
use super::shutdown::{RunState, grace_over, sleep_or_stop, stopped};
use super::tracker::{Action, GameSetup, Tracker};
use crate::logging::show_duration;
use crate::player::chat::{LEAVE_CHAT, RESIGN_CHAT, TAKEBACKS_USED_CHAT, chat_line};
use crate::player::chat_commands::{ChatDesk, Command, LevelFacts, WAIT_EXTENSION};
use crate::player::clock::{ClockInput, think_time, urgency_ms};
use crate::player::conduct::Conduct;
use crate::unix_time::unix_ms;

/// Everything a game actor is given when it starts.
pub struct GameContext {
    pub client: Client,
    pub pool: PoolHandle,
    pub results: ResultsStub,
    pub setup: GameSetup,
    pub chat_lines: ChatLines,
    pub abort_after: Duration,
    /// How long to take over a move (the search's result waits in this task, not the pool).
    pub think: ThinkSettings,
    /// Takebacks, draw offers, resignation.
    pub conduct: Conduct,
    /// What `!level` says about the game's level.
    pub level_facts: LevelFacts,
    pub run_state: watch::Receiver<RunState>,
    /// Benchmarks: our own latency per move (state received → search submitted, plus search
    /// done → move request sent), search time excluded.
    pub latency: Option<mpsc::UnboundedSender<Duration>>,
}

/// How a game actor ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GameExit {
    /// The game ended and its record is in the log (or already was); against a bot, when it
    /// started (Unix ms: it counts against the bot-game limit).
    Recorded { bot_started_at_ms: Option<i64> },
    /// Stopped by the second shutdown signal before the game ended: the game runs on at
    /// Lichess and stays in the open-games file, for the next start to resume or settle.
    Stopped,
    /// The shutdown grace period ran out with the game past the point where Lichess allows
    /// an abort: left running on Lichess (a word in the chat), kept in the open-games file,
    /// resumed by the next start (or settled if it ended meanwhile).
    LeftRunning,
    /// The game cannot be followed (not ours, gone, unreadable); nothing recorded.
    Failed(String),
    /// Lichess refuses the game's stream for good (HTTP 400 or another permanent answer):
    /// the game is left to the settling task, never taken up again by a game actor.
    Unplayable(String),
}

struct Pending {
    ply: usize,
    rx: oneshot::Receiver<SearchDone>,
    cancel: Arc<AtomicBool>,
    /// From the state's arrival to the submission (for the latency measurement).
    state_to_submit: Duration,
    /// When the state this search answers arrived (the opponent's move: our clock runs).
    state_at: Instant,
    /// Our clock then, and the position's facts, for the think-time model.
    clock: ClockInput,
    facts: PositionFacts,
}

/// A search result held back while the bot "thinks" like a person (human think time); the
/// move is played when the wait is over, unless the game moved on meanwhile.
struct Thinking {
    ply: usize,
    result: SearchResult,
    until: tokio::time::Instant,
    /// Our own latency so far (for the latency measurement; the wait is not latency).
    latency: Duration,
}

impl Drop for Pending {
    fn drop(&mut self) {
        // A search nobody waits for stops at its next poll.
        self.cancel.store(true, Ordering::SeqCst);
    }
}

/// Runs one game to its end.
pub async fn run(mut ctx: GameContext) -> GameExit {
    let resumed = remember(&mut ctx).await;
    let params = &ctx.setup.params;
    tracing::info!(
        seed = ctx.setup.header.seed,
        level = params.level,
        nodes = params.nodes,
        noise_cp = format!("{:.1}", params.noise_cp),
        coefficients = params.coefficients_version,
        resumed_after_restart = resumed,
        "game started"
    );
    GameActor::new(ctx, resumed).play().await
}

/// What woke the game actor up.
enum Wake {
    Event(Result<GameEvent, StreamEnd>),
    SearchDone(Result<SearchDone, oneshot::error::RecvError>),
    ThinkingOver,
    AbortDue,
    ClaimDue,
    GraceOver,
    Stopped,
}

/// The state of one running game, owned by its task.
struct GameActor {
    ctx: GameContext,
    id: GameId,
    /// The previous run left the game open.
    resumed: bool,
    /// The level's player; lent to the search pool while a search runs.
    player: Option<Box<LevelPlayer>>,
    tracker: Tracker,
    pending: Option<Pending>,
    thinking: Option<Thinking>,
    backoff: Backoff,
    greeted: bool,
    greet_due: bool,
    abort_sent: bool,
    /// A first-move abort that failed for a while (5xx, network, 429) is made again then:
    /// Lichess never ends a challenge game nobody moves in by itself.
    abort_again_at: Option<Instant>,
    /// Game-stream refusals in a row (not found, token, forbidden).
    refusals: usize,
    run_state: watch::Receiver<RunState>,
    grace_state: watch::Receiver<RunState>,
    /// When the last game state arrived (the abort timer and the latency count from it).
    state_at: Instant,
    /// The stream must be opened again.
    reconnect: bool,
    /// Since when it has been our turn (at which ply): a 429 pause after that explains a
    /// loss on time.
    our_turn_since: Option<(usize, tokio::time::Instant)>,
    /// Set once we aborted the game ourselves at the end of the grace period: the fault to
    /// record.
    ended_by_shutdown: Option<String>,
    /// The opponent left: when Lichess lets us claim the game (`claimWinInSeconds` of its
    /// latest `opponentGone`).
    claim_at: Option<tokio::time::Instant>,
    /// Set once we claimed the game after the opponent left: the fault to record.
    claimed: Option<String>,
    /// Claims made since the opponent left (Lichess refuses one before it allows it, and
    /// answers one that ended nothing with 200 too): the first is tried again after
    /// [`CLAIM_RETRY`], the others when Lichess says again that the opponent is gone, up to
    /// [`CLAIM_TRIES`].
    claims: u32,
    /// The game's answers to chat commands.
    desk: ChatDesk,
    /// An answer to a chat command, to say (in its room) once the wake is handled.
    chat_reply: Option<(ChatRoom, String)>,
    /// More time before the first-move abort (`!wait`).
    abort_extension: Duration,
}

/// The longest wait before a failed first-move abort is made again (at most the abort's own
/// wait).
const ABORT_AGAIN_AFTER: Duration = Duration::from_secs(30);

/// How long after the first refused claim the game is claimed again (Lichess's wait may end a
/// moment after ours: it counts in whole seconds), and how long a claim due on our turn waits
/// for our move.
const CLAIM_RETRY: Duration = Duration::from_secs(3);
/// How many claims are made before the opponent's clock is left to decide (it runs out).
/// After the first two, a claim waits for Lichess's word: lila repeats `opponentGone` with
/// `claimWinInSeconds: 0` every round tick (5 s) while the opponent is gone for good, and
/// says nothing when they came back before that (`RoundAsyncActor.Player.setOnline` tells
/// `gone: false` only after a long absence), while each refused claim reloads the game on the
/// opponent's board (`ResignForce` answers `Event.Reload`).
const CLAIM_TRIES: u32 = 20;

impl GameActor {
    fn new(ctx: GameContext, resumed: bool) -> GameActor {
        let player = Box::new(LevelPlayer::new(
            ctx.setup.params.clone(),
            ctx.setup.header.seed,
        ));
        GameActor {
            id: ctx.setup.game_id.clone(),
            resumed,
            player: Some(player),
            tracker: Tracker::with_conduct(ctx.setup.clone(), ctx.conduct),
            pending: None,
            thinking: None,
            backoff: Backoff::new(reconnect_policy()),
            greeted: false,
            greet_due: false,
            abort_sent: false,
            abort_again_at: None,
            refusals: 0,
            run_state: ctx.run_state.clone(),
            grace_state: ctx.run_state.clone(),
            state_at: Instant::now(),
            reconnect: false,
            our_turn_since: None,
            ended_by_shutdown: None,
            claim_at: None,
            claimed: None,
            claims: 0,
            desk: ChatDesk::default(),
            chat_reply: None,
            abort_extension: Duration::ZERO,
            ctx,
        }
    }

    /// Follows the game stream, reconnecting as needed, until the game is recorded or the
    /// actor must stop.
    async fn play(&mut self) -> GameExit {
        loop {
            if *self.run_state.borrow() == RunState::Stopped {
                return GameExit::Stopped;
            }
            let mut stream = match self.open_stream().await {
                Ok(Some(stream)) => stream,
                Ok(None) => continue,
                Err(exit) => return exit,
            };
            self.state_at = Instant::now();
            self.reconnect = false;
            while !self.reconnect {
                let wake = self.next_wake(&mut stream).await;
                let actions = match self.on_wake(wake).await {
                    Ok(actions) => actions,
                    Err(exit) => return exit,
                };
                self.note_our_turn();
                if let Some(exit) = self.carry_out(actions).await {
                    return exit;
                }
                if self.abort_came_too_late() {
                    say(&self.ctx, &self.tracker, ChatRoom::Player, LEAVE_CHAT).await;
                    tracing::warn!(
                        "grace period over: the abort came too late (the opponent's move landed \
                         first); game left running at ply {} (not resigned); {}",
                        self.tracker.ply(),
                        after_leaving(self.ctx.setup.header.source)
                    );
                    return GameExit::LeftRunning;
                }
                if self.greet_due {
                    self.greet_due = false;
                    greet(&self.ctx, &self.tracker).await;
                }
                if let Some((room, text)) = self.chat_reply.take()
                    && let Err(e) = self.ctx.client.chat(&self.id, room, &text).await
                {
                    tracing::debug!("chat answer: {e}");
                }
            }
            let delay = self.backoff.next_delay();
            if sleep_or_stop(delay, &mut self.run_state).await {
                return GameExit::Stopped;
            }
        }
    }

    /// Whether the shutdown's abort was answered 200 but the game went on: the opponent's
    /// move landed first, so the game is past the point of an abort and is left running like
    /// any other at the end of the grace period (not left unplayed until the daemon stops).
    fn abort_came_too_late(&self) -> bool {
        self.ended_by_shutdown.is_some() && !self.tracker.is_finished() && self.tracker.ply() >= 2
    }

    /// Opens the game stream: `Ok(None)` after a failure worth retrying (the delay waited),
    /// `Err` when the game cannot be followed or the actor must stop.
    async fn open_stream(&mut self) -> Result<Option<Reader<GameEvent>>, GameExit> {
        match self.ctx.client.stream_game(&self.id).await {
            Ok(s) => {
                self.refusals = 0;
                Ok(Some(Reader::spawn(s)))
            }
            // A 400 (a game the bot API cannot play) or another permanent answer: settled,
            // never retried.
            Err(e) if is_permanent(&e) => Err(GameExit::Unplayable(e.to_string())),
            // Not found, or refused: retried a few times (a server hiccup must not cost a
            // game), then given up on.
            Err(e) if self.refusals >= 5 => Err(GameExit::Failed(e.to_string())),
            Err(e) => {
                self.refusals += usize::from(matches!(
                    e,
                    LichessError::NotFound { .. }
                        | LichessError::TokenRejected { .. }
                        | LichessError::Forbidden { .. }
                ));
                let delay = self.backoff.next_delay();
                tracing::warn!("game stream: {e}; retrying in {}", show_duration(delay));
                if sleep_or_stop(delay, &mut self.run_state).await {
                    return Err(GameExit::Stopped);
                }
                Ok(None)
            }
        }
    }

    /// Waits for the next thing to act on: a stream event, a search's result, the end of a
    /// think-time wait, the abort or claim timers, the end of the grace period, the stop.
    async fn next_wake(&mut self, stream: &mut Reader<GameEvent>) -> Wake {
        let abort_due = (self.state_at + self.ctx.abort_after + self.abort_extension)
            .max(self.abort_again_at.unwrap_or(self.state_at));
        let abort_armed = !self.abort_sent
            && self.ended_by_shutdown.is_none()
            && self.tracker.awaiting_opponent_first_move();
        let claim_armed = self.claim_at.is_some()
            && self.ended_by_shutdown.is_none()
            && !self.tracker.is_finished();
        let claim_at = self.claim_at;
        let thinking_until = self.thinking.as_ref().map(|t| t.until);
        let grace_armed = self.ended_by_shutdown.is_none();
        let search = self.pending.as_mut().map(|p| &mut p.rx);
        let searching = search.is_some();
        tokio::select! {
            event = stream.next() => Wake::Event(event),
            done = async { search.expect("guarded").await }, if searching => Wake::SearchDone(done),
            _ = tokio::time::sleep_until(thinking_until.unwrap_or_else(tokio::time::Instant::now)),
                if thinking_until.is_some() => Wake::ThinkingOver,
            _ = tokio::time::sleep_until(abort_due.into()), if abort_armed => Wake::AbortDue,
            _ = tokio::time::sleep_until(claim_at.unwrap_or_else(tokio::time::Instant::now)),
                if claim_armed => Wake::ClaimDue,
            _ = grace_over(&mut self.grace_state), if grace_armed => Wake::GraceOver,
            _ = stopped(&mut self.run_state) => Wake::Stopped,
        }
    }

    /// Acts on what woke the actor; returns the tracker's actions, or how the actor ends.
    async fn on_wake(&mut self, wake: Wake) -> Result<Vec<Action>, GameExit> {
        match wake {
            Wake::Event(event) => self.on_event(event),
            Wake::SearchDone(done) => {
                self.on_search_done(done).await;
                Ok(Vec::new())
            }
            Wake::ThinkingOver => {
                let t = self.thinking.take().expect("guarded");
                if !play_result(&self.ctx, &mut self.tracker, t.ply, &t.result, t.latency).await {
                    self.reconnect = true;
                }
                Ok(Vec::new())
            }
            Wake::AbortDue => {
                self.abort_sent = true;
                tracing::info!(
                    "opponent made no first move in {}: aborting",
                    show_duration(self.ctx.abort_after)
                );
                match self.ctx.client.abort(&self.id).await {
                    Err(e) if e.is_transient() => {
                        let again = self.ctx.abort_after.min(ABORT_AGAIN_AFTER);
                        tracing::warn!("abort: {e}: trying again in {}", show_duration(again));
                        self.abort_sent = false;
                        self.abort_again_at = Some(Instant::now() + again);
                    }
                    Err(e) => tracing::warn!("abort: {e}"),
                    Ok(()) => {}
                }
                Ok(Vec::new())
            }
            Wake::ClaimDue => {
                self.claim_at = None;
                if self.tracker.is_our_turn() {
                    // lila lets a claim through only on the opponent's turn, and answers one on
                    // ours with 200 and nothing done (`Pov.mightClaimWin`): our move first.
                    self.claim_at = Some(tokio::time::Instant::now() + CLAIM_RETRY);
                    return Ok(Vec::new());
                }
                let claimed = claim(&self.ctx, &self.tracker).await;
                // Until the stream says the game is over, a claim may have ended nothing: the
                // next try asks the level's conduct again (win or draw), the position having
                // moved on.
                self.claims += 1;
                self.claimed = claimed.or(self.claimed.take());
                if self.claims >= CLAIM_TRIES {
                    tracing::warn!(
                        "{} claims made: the opponent's clock decides the game",
                        self.claims
                    );
                } else if self.claims == 1 {
                    if self.claimed.is_none() {
                        tracing::info!(
                            "claim refused: trying again in {}",
                            show_duration(CLAIM_RETRY)
                        );
                    }
                    self.claim_at = Some(tokio::time::Instant::now() + CLAIM_RETRY);
                } else if self.claimed.is_none() {
                    tracing::info!(
                        "claim refused again: claiming when Lichess says the opponent is still gone"
                    );
                }
                Ok(Vec::new())
            }
            Wake::GraceOver => {
                if *self.grace_state.borrow() == RunState::Stopped {
                    return Err(GameExit::Stopped);
                }
                // No move after this: the game is aborted (the stream will say so) or left
                // running on Lichess for the next start.
                drop(self.pending.take());
                self.thinking = None;
                match abort_or_leave(&self.ctx, &self.tracker).await {
                    Some(aborted) => {
                        self.ended_by_shutdown = Some(aborted);
                        Ok(Vec::new())
                    }
                    None => Err(GameExit::LeftRunning),
                }
            }
            Wake::Stopped => {
                tracing::warn!(
                    "stopped: the game is left running (ply {}); {}",
                    self.tracker.ply(),
                    after_leaving(self.ctx.setup.header.source)
                );
                Err(GameExit::Stopped)
            }
        }
    }

    /// An event of the game stream (or its end: reconnect).
    fn on_event(&mut self, event: Result<GameEvent, StreamEnd>) -> Result<Vec<Action>, GameExit> {
        let now_ms = unix_ms();
        match event {
            Ok(GameEvent::GameFull(full)) => {
                self.state_at = Instant::now();
                self.backoff.reset();
                let actions = self
                    .tracker
                    .on_game_full(full, now_ms)
                    .map_err(|e| GameExit::Failed(e.to_string()))?;
                if !self.greeted {
                    self.greeted = true;
                    // A resumed game was greeted by the previous run.
                    self.greet_due = self.tracker.ply() < 2 && !self.tracker.is_finished();
                }
                Ok(actions)
            }
            // Only the game's own news starts the first-move abort's wait (and the move's
            // latency) again: a chat line or `opponentGone` is no move.
            Ok(GameEvent::GameState(state)) => {
                self.state_at = Instant::now();
                self.tracker
                    .on_game_state(state, now_ms)
                    .map_err(|e| GameExit::Failed(e.to_string()))
            }
            Ok(GameEvent::OpponentGone(gone)) => {
                // Each word from Lichess re-arms the claim (it repeats the count every few
                // seconds, and says 0 once the opponent is gone for good).
                self.claim_at = match (gone.gone, gone.claim_win_in_seconds) {
                    (true, Some(wait)) if self.claims < CLAIM_TRIES => {
                        let wait = Duration::from_secs(u64::from(wait));
                        if self.claim_at.is_none() && self.claims == 0 {
                            tracing::info!(
                                "opponent gone: claiming the game in {}",
                                show_duration(wait)
                            );
                        }
                        Some(tokio::time::Instant::now() + wait)
                    }
                    (true, _) => {
                        tracing::info!("opponent gone");
                        self.claim_at
                    }
                    (false, _) => {
                        tracing::info!("opponent back");
                        self.claims = 0;
                        None
                    }
                };
                Ok(Vec::new())
            }
            Ok(GameEvent::ChatLine(line)) => {
                self.on_chat(line);
                Ok(Vec::new())
            }
            Ok(_) => Ok(Vec::new()),
            Err(end) => {
                tracing::info!("game stream ended ({end}); reconnecting");
                self.reconnect = true;
                Ok(Vec::new())
            }
        }
    }

    /// A chat line: logged (what was said to and about the bot is needed for abuse reports and
    /// "why was I aborted?"), and a command in it answered in its room.
    fn on_chat(&mut self, line: ChatLine) {
        tracing::info!(room = line.room.as_str(), from = %line.username, text = %line.text, "chat");
        let ours = line
            .username
            .eq_ignore_ascii_case(&self.ctx.setup.header.account);
        // Lichess's own lines come as "lichess"; the "other" room is no room to answer in.
        let system = line.username.eq_ignore_ascii_case("lichess");
        if ours || system || line.room == ChatRoom::Other {
            return;
        }
        let Some(command) = Command::parse(&line.text) else {
            return;
        };
        let awaiting = self.tracker.awaiting_opponent_first_move() && !self.abort_sent;
        // Only the players write in the players' room; not ours, the line is the opponent's.
        let from_opponent = line.room == ChatRoom::Player;
        let answer = self.desk.answer(
            &command,
            &self.ctx.level_facts,
            from_opponent,
            awaiting,
            std::time::Instant::now(),
        );
        if answer.extend {
            self.abort_extension = WAIT_EXTENSION;
            tracing::info!(
                "the opponent asked to wait: the first-move abort comes {} later",
                show_duration(WAIT_EXTENSION)
            );
        }
        if let Some(text) = answer.say {
            self.chat_reply = Some((line.room, text));
        }
    }

    /// A search came back: the player returns, and the move is played now or after the
    /// think-time wait.
    async fn on_search_done(&mut self, done: Result<SearchDone, oneshot::error::RecvError>) {
        let p = self.pending.take().expect("guarded");
        let Ok(done) = done else {
            // Cancelled or pool gone: allow a new search on the next state.
            self.tracker.on_move_failed(p.ply);
            if !p.cancel.load(Ordering::SeqCst) {
                // The search failed (it panicked): no state comes on our turn, so the stream
                // is reopened and its gameFull searches the position again.
                self.reconnect = true;
            }
            return;
        };
        let got_at = Instant::now();
        tracing::debug!(
            ply = p.ply,
            nodes = done.result.nodes,
            depth = done.result.depth,
            queued_ms = done.queued.as_millis() as u64,
            searched_ms = done.searched.as_millis() as u64,
            "search done"
        );
        self.player = Some(done.player);
        let wait = think_wait(&self.ctx, &self.tracker, &p, &done.result);
        let latency = p.state_to_submit + got_at.elapsed();
        if wait.is_zero() {
            if !play_result(&self.ctx, &mut self.tracker, p.ply, &done.result, latency).await {
                self.reconnect = true;
            }
        } else {
            tracing::debug!(ply = p.ply, wait_ms = wait.as_millis() as u64, "thinking");
            self.thinking = Some(Thinking {
                ply: p.ply,
                result: done.result,
                until: tokio::time::Instant::now() + wait,
                latency,
            });
        }
    }

    /// Remembers since when it has been our turn.
    fn note_our_turn(&mut self) {
        if self.tracker.is_our_turn() {
            let ply = self.tracker.ply();
            if self.our_turn_since.is_none_or(|(p, _)| p != ply) {
                self.our_turn_since = Some((ply, tokio::time::Instant::now()));
            }
        }
    }

    /// Carries out the tracker's actions, the search first (offers and chat are answered
    /// while it runs); `Some` when the game is over and recorded.
    async fn carry_out(&mut self, mut actions: Vec<Action>) -> Option<GameExit> {
        actions.sort_by_key(|a| !matches!(a, Action::Search { .. }));
        for action in actions {
            match action {
                Action::Search { .. } if self.ended_by_shutdown.is_some() => {}
                Action::Search { ply, game, clock } => self.submit_search(ply, *game, clock),
                Action::AnswerDraw(accept) => {
                    tracing::info!(accept, "answering a draw offer");
                    if let Err(e) = self.ctx.client.draw(&self.id, accept).await {
                        tracing::warn!("draw offer: {e}");
                    }
                }
                Action::AnswerTakeback(accept) => self.answer_takeback(accept).await,
                Action::Resign | Action::Move { .. } => {}
                Action::Finished(record) => return Some(self.finish(*record).await),
            }
        }
        None
    }

    /// Lends the player to the search pool for the position at `ply`.
    fn submit_search(&mut self, ply: usize, game: crate::engine::Game, clock: ClockInput) {
        // A result still held back belongs to a position that is gone.
        self.thinking = None;
        let facts = PositionFacts::of(&game);
        let limit = think_time(clock);
        let cancel = Arc::new(AtomicBool::new(false));
        let setup = self.tracker.setup();
        let initial_ms = self.tracker.full().and_then(|f| f.clock).map(|c| c.initial);
        let job = SearchJob {
            game,
            // Lent to the pool while a search runs; a search abandoned by a reconnect never
            // hands it back, so a fresh one takes over with the same level and seed.
            player: self.player.take().unwrap_or_else(|| {
                Box::new(LevelPlayer::new(setup.params.clone(), setup.header.seed))
            }),
            clock: clock
                .remaining_ms
                .zip(initial_ms)
                .map(|(remaining_ms, initial_ms)| ClockLeft {
                    remaining_ms,
                    initial_ms,
                }),
            time_limit: limit,
            urgency_ms: urgency_ms(clock),
            cancel: Arc::clone(&cancel),
        };
        tracing::debug!(ply, limit_ms = limit.as_millis() as u64, "search submitted");
        let rx = self.ctx.pool.submit(job);
        self.pending = Some(Pending {
            ply,
            rx,
            cancel,
            state_to_submit: self.state_at.elapsed(),
            state_at: self.state_at,
            clock,
            facts,
        });
    }

    /// Answers a takeback request under the level's conduct.
    async fn answer_takeback(&mut self, accept: bool) {
        tracing::info!(accept, "answering a takeback");
        if !accept && self.ctx.conduct.takebacks > 0 {
            say(
                &self.ctx,
                &self.tracker,
                ChatRoom::Player,
                TAKEBACKS_USED_CHAT,
            )
            .await;
        }
        if let Err(e) = self.ctx.client.takeback(&self.id, accept).await {
            tracing::warn!("takeback: {e}");
            if accept {
                // The move stands: a fresh gameFull lets us search it again.
                self.tracker.on_takeback_failed();
                self.reconnect = true;
            }
        }
    }

    /// The game is over: its record (with the fault that explains it) goes to the results
    /// log, and the goodbye to the chat.
    async fn finish(&mut self, mut record: GameRecord) -> GameExit {
        // Dropping a pending search cancels it: no move after the end.
        drop(self.pending.take());
        if self.resumed {
            record.after_restart = Some(AfterRestart::Resumed);
        }
        explain_fault(
            &mut record,
            self.ended_by_shutdown.as_deref(),
            self.our_turn_since.map(|(_, since)| since),
            &self.ctx.client,
        );
        // Won (or drawn) because the opponent left, or lost (or drawn) because Lichess found
        // us gone and the opponent claimed it: no strength in either.
        if record.fault.is_none() && record.status == "timeout" {
            record.fault = match &self.claimed {
                Some(ours) => Some(ours.clone()),
                None if matches!(record.result, Outcome::Loss | Outcome::Draw) => {
                    Some(fault::text(
                        fault::CLAIMED_AGAINST,
                        &format!(
                            "{} by the opponent's claim: Lichess found our game stream gone",
                            record.result
                        ),
                    ))
                }
                None => None,
            };
        }
        tracing::info!(
            result = %record.result,
            status = %record.status,
            plies = record.moves.split_whitespace().count(),
            opponent = %record.opponent.name,
            fault = record.fault.as_deref().unwrap_or(""),
            "game over"
        );
        let bot_started_at_ms = record.opponent.bot.then_some(record.started_at_ms);
        let aborted = record.status == "aborted";
        match self.ctx.results.append(record).await {
            Ok(true) => {}
            Ok(false) => tracing::info!("already in the results log"),
            Err(e) => tracing::error!("results log: {e}"),
        }
        // An aborted game (by us: no first move, the shutdown; or by the opponent) was no
        // game to say goodbye after.
        if let Some(goodbye) = self
            .ctx
            .chat_lines
            .goodbye
            .as_ref()
            .filter(|_| self.ended_by_shutdown.is_none() && !aborted)
        {
            let text = chat_line(
                goodbye,
                &self.ctx.setup.header.account,
                &self.tracker.opponent_name(),
            );
            if let Err(e) = self
                .ctx
                .client
                .chat(&self.id, ChatRoom::Player, &text)
                .await
            {
                tracing::debug!("goodbye chat: {e}");
            }
        }
        GameExit::Recorded { bot_started_at_ms }
    }
}

/// Remembers the game as open (on disk before the first move). A game already remembered — left
/// open by the previous run, or started again after its actor failed — keeps its seed, so a
/// resumed game plays on as it began. Returns whether the previous run left it open.
async fn remember(ctx: &mut GameContext) -> bool {
    let setup = &mut ctx.setup;
    match ctx.results.open_game(OpenGame::of(setup, unix_ms())).await {
        Ok(opened) => {
            let first = opened.game;
            setup.header.seed = first.header.seed;
            if first.header.coefficients_version != setup.params.coefficients_version
                || first.header.level != setup.params.level
            {
                tracing::warn!(
                    "resumed with level {} under coefficients v{} (it began with level {} under v{})",
                    setup.params.level,
                    setup.params.coefficients_version,
                    first.header.level,
                    first.header.coefficients_version
                );
            }
            opened.from_previous_run
        }
        Err(e) => {
            tracing::error!(
                "cannot remember the game as open ({e}); if the daemon stops before it ends, \
                 it will not be settled after the restart"
            );
            false
        }
    }
}

/// At the end of the grace period: aborts the game while Lichess allows it (fewer than two
/// plies) and returns the fault to record; otherwise (or when the abort is refused) leaves the
/// game running on Lichess with a word in the chat and returns `None`. A game is never
/// resigned because the operator stopped the daemon: the next start resumes it (its gameStart
/// comes again, or the settling task hands it over), and a game that ends while the daemon is
/// away is settled then, with a fault when our absence decided it.
async fn abort_or_leave(ctx: &GameContext, tracker: &Tracker) -> Option<String> {
    let id = &ctx.setup.game_id;
    let ply = tracker.ply();
    if ply < 2 {
        match ctx.client.abort(id).await {
            Ok(()) => {
                tracing::warn!("grace period over: game aborted (ply {ply}: Lichess allows it)");
                return Some(fault::text(
                    fault::SHUTDOWN,
                    "aborted when the shutdown grace period ran out",
                ));
            }
            Err(e) => tracing::warn!("grace period over: abort refused ({e})"),
        }
    }
    say(ctx, tracker, ChatRoom::Player, LEAVE_CHAT).await;
    tracing::warn!(
        "grace period over: game left running at ply {ply} (not resigned); {}",
        after_leaving(ctx.setup.header.source)
    );
    None
}

/// What becomes of a game the daemon leaves running: the next start takes it up on Lichess; a
/// sandbox's games end with it.
pub(crate) fn after_leaving(source: crate::results::Source) -> &'static str {
    match source {
        crate::results::Source::Sandbox => "the sandbox's games end with it, so it is not recorded",
        _ => "the next start resumes it, or records it if it ended meanwhile",
    }
}

/// Whether a refused game stream is refused for good: a 400 (the bot API cannot play this
/// game) or another 4xx that is no refusal of the token, no 404 and no rate limit.
fn is_permanent(e: &LichessError) -> bool {
    matches!(
        e,
        LichessError::BadRequest { .. }
            | LichessError::Status { .. }
            | LichessError::BotLimit { .. }
            | LichessError::OpponentBotLimit { .. }
    )
}

/// Claims the game after the opponent left and Lichess's wait is over: the win, or the draw
/// where the level's conduct would accept a draw offer in this position. Returns the fault
/// to record if the game ends so (`None` when Lichess refused the claim: the game goes on).
async fn claim(ctx: &GameContext, tracker: &Tracker) -> Option<String> {
    let id = &ctx.setup.game_id;
    let draw = tracker.prefers_draw();
    let (what, result) = if draw {
        ("draw", ctx.client.claim_draw(id).await)
    } else {
        ("victory", ctx.client.claim_victory(id).await)
    };
    match result {
        Ok(()) => {
            tracing::info!("the opponent left: {what} claimed");
            Some(fault::text(
                fault::OPPONENT_GONE,
                &format!("the opponent left the game; {what} claimed"),
            ))
        }
        Err(e) => {
            tracing::warn!("claim {what}: {e}");
            None
        }
    }
}

/// Sets the fault of a finished game whose result is not the level's doing: the shutdown
/// aborted it (only if it ended so, not by a move that came first), or it was
/// lost on time while the account waited out a 429 pause that began or lasted after our turn
/// started (every request waits, our moves included).
fn explain_fault(
    record: &mut GameRecord,
    ended_by_shutdown: Option<&str>,
    our_turn_since: Option<tokio::time::Instant>,
    client: &Client,
) {
    if let Some(why) = ended_by_shutdown
        && record.status == "aborted"
    {
        record.fault = Some(why.to_string());
        return;
    }
    let paused_in_our_turn = our_turn_since
        .zip(client.last_pause_end())
        .is_some_and(|(since, pause_end)| pause_end > since);
    if record.lost_on_time() && paused_in_our_turn {
        record.fault = Some(fault::text(
            fault::RATE_LIMITED,
            &format!(
                "lost on time while the account waited out an HTTP 429 pause of {} \
                 (no request, our moves included, goes out during it)",
                show_duration(
                    client
                        .last_pause_length()
                        .unwrap_or(client.config().rate_limit.pause)
                )
            ),
        ));
    }
}

/// How long to hold the search's result back (human think time), counted from the
/// opponent's move; zero with `think_time = "fast"`.
fn think_wait(
    ctx: &GameContext,
    tracker: &Tracker,
    p: &Pending,
    result: &SearchResult,
) -> Duration {
    let thinker = Thinker {
        level: ctx.setup.params.level,
        seed: ctx.setup.header.seed,
        max_think: ctx.think.max_think,
    };
    let clock = ThinkClock {
        remaining_ms: p.clock.remaining_ms,
        increment_ms: p.clock.increment_ms,
        initial_ms: tracker.full().and_then(|f| f.clock).map(|c| c.initial),
        overhead_ms: p.clock.overhead_ms,
    };
    let facts = p.facts.with_move(result.best_move.as_ref());
    wait_after_search(
        ctx.think.mode,
        &thinker,
        &clock,
        &facts,
        p.state_at.elapsed(),
    )
}

/// Plays a search's result for `ply` under the account's conduct (resign, answer a standing
/// draw offer, post the move), unless the game moved on; `false` asks for a reconnect.
async fn play_result(
    ctx: &GameContext,
    tracker: &mut Tracker,
    ply: usize,
    result: &SearchResult,
    latency: Duration,
) -> bool {
    let actions = tracker.on_search_result(ply, result);
    if actions.is_empty() {
        tracing::debug!(ply, "search result dropped: the game moved on");
    }
    let id = &ctx.setup.game_id;
    for action in actions {
        match action {
            Action::Move { ply, uci } => {
                if let Some(tx) = &ctx.latency {
                    tx.send(latency).ok();
                }
                return post_move(ctx, tracker, ply, &uci).await;
            }
            Action::Resign => {
                tracing::info!(ply, score = %result.score, "resigning a lost game");
                say(ctx, tracker, ChatRoom::Player, RESIGN_CHAT).await;
                if let Err(e) = ctx.client.resign(id).await {
                    tracing::warn!("resign: {e}");
                    tracker.on_move_failed(ply);
                    return false;
                }
            }
            Action::AnswerDraw(accept) => {
                tracing::info!(accept, score = %result.score, "answering a draw offer");
                if let Err(e) = ctx.client.draw(id, accept).await {
                    tracing::warn!("draw offer: {e}");
                    if accept {
                        tracker.on_move_failed(ply);
                        return false;
                    }
                }
            }
            _ => {}
        }
    }
    true
}

/// Says `template` in `room` (`{me}`/`{opponent}` filled); failures only logged.
async fn say(ctx: &GameContext, tracker: &Tracker, room: ChatRoom, template: &str) {
    let text = chat_line(
        template,
        &ctx.setup.header.account,
        &tracker.opponent_name(),
    );
    if let Err(e) = ctx.client.chat(&ctx.setup.game_id, room, &text).await {
        tracing::debug!("chat: {e}");
    }
}

/// Posts our move; `false` asks for a reconnect (the fresh `gameFull` decides what next).
async fn post_move(ctx: &GameContext, tracker: &mut Tracker, ply: usize, uci: &str) -> bool {
    let id = &ctx.setup.game_id;
    match ctx.client.make_move(id, uci, false).await {
        Ok(()) => {
            tracker.on_move_posted(ply);
            tracing::debug!(ply, "move {uci}");
            true
        }
        Err(e) => {
            tracker.on_move_failed(ply);
            tracing::warn!(ply, "move {uci} not accepted: {e}");
            false
        }
    }
}

async fn greet(ctx: &GameContext, tracker: &Tracker) {
    if let Some(greeting) = &ctx.chat_lines.greeting {
        say(ctx, tracker, ChatRoom::Player, greeting).await;
    }
    if let Some(greeting) = &ctx.chat_lines.spectator_greeting {
        say(ctx, tracker, ChatRoom::Spectator, greeting).await;
    }
}

/// Pacing of stream reconnects: quick at first (a game clock is running), capped low.
pub(crate) fn reconnect_policy() -> BackoffPolicy {
    BackoffPolicy {
        base: Duration::from_millis(200),
        cap: Duration::from_secs(10),
        max_attempts: u32::MAX,
    }
}
