//! The game actor: one task per running game. It remembers the game as open (a game left open
//! by the previous run keeps its seed), follows the game stream (reconnecting and resuming
//! from `gameFull`), lets the [`Tracker`] decide, runs searches through the shared pool with
//! the game's [`LevelPlayer`] (level and seed fixed at game start), posts moves, chats, aborts
//! a game whose opponent never moves, answers offers and resigns lost games under the
//! account's conduct, waits out human think time after a search, ends the game honestly when the
//! shutdown grace period runs out, claims the win (or, where the level's conduct would take a
//! draw, the draw) once Lichess allows it after the opponent left (`opponentGone` with
//! `claimWinInSeconds`), and writes the game's record once — with a fault when a loss on time
//! came from a 429 pause, the game was ended by the shutdown or won by the opponent leaving.
//! A game stream Lichess refuses for good (400 or another permanent 4xx: a game the bot API
//! cannot play) is not retried: the game is handed to the settling task, which records it
//! when it ends. It runs in its game's span (`logging::game_span`): its log lines name the
//! game through it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot, watch};

use crate::engine::SearchResult;
use crate::lichess::backoff::Backoff;
use crate::lichess::{BackoffPolicy, ChatRoom, Client, GameEvent, LichessError};
use crate::player::LevelPlayer;
use crate::player::think::{PositionFacts, ThinkClock, ThinkSettings, Thinker, wait_after_search};
use crate::results::{AfterRestart, GameRecord, fault};

use super::open_games::OpenGame;
use super::pool::{PoolHandle, SearchDone, SearchJob};
use super::reader::Reader;
use super::results_writer::ResultsStub;
use super::shutdown::{RunState, grace_over, sleep_or_stop, stopped};
use super::tracker::{Action, GameSetup, Tracker};
use crate::player::chat::{RESIGN_CHAT, STOP_CHAT, TAKEBACKS_USED_CHAT, chat_line};
use crate::player::clock::{ClockInput, think_time, urgency_ms};
use crate::player::conduct::Conduct;
use crate::unix_time::unix_ms;

/// Everything a game actor is given when it starts.
pub struct GameContext {
    pub client: Client,
    pub pool: PoolHandle,
    pub results: ResultsStub,
    pub setup: GameSetup,
    pub greeting: Option<String>,
    pub goodbye: Option<String>,
    pub abort_after: Duration,
    /// How long to take over a move (the search's result waits in this task, not the pool).
    pub think: ThinkSettings,
    /// Takebacks, draw offers, resignation.
    pub conduct: Conduct,
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
    /// Stopped by the second shutdown signal before the game ended.
    Stopped,
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
    let id = ctx.setup.game_id.clone();
    let resumed = remember(&mut ctx).await;
    let params = &ctx.setup.params;
    tracing::info!(
        seed = ctx.setup.seed,
        level = params.level,
        nodes = params.nodes,
        noise_cp = format!("{:.1}", params.noise_cp),
        coefficients = params.coefficients_version,
        resumed_after_restart = resumed,
        "game started"
    );
    let mut player = Some(Box::new(LevelPlayer::new(params.clone(), ctx.setup.seed)));
    let mut tracker = Tracker::with_conduct(ctx.setup.clone(), ctx.conduct);
    let mut pending: Option<Pending> = None;
    let mut thinking: Option<Thinking> = None;
    let mut backoff = Backoff::new(reconnect_policy());
    let mut greeted = false;
    let mut greet_due = false;
    let mut abort_sent = false;
    let mut refusals = 0;
    let mut run_state = ctx.run_state.clone();
    let mut grace_state = ctx.run_state.clone();
    // Since when it has been our turn (at which ply): a 429 pause after that explains a loss
    // on time.
    let mut our_turn_since: Option<(usize, tokio::time::Instant)> = None;
    // Set once we ended the game ourselves at the end of the grace period: the fault to record.
    let mut ended_by_shutdown: Option<String> = None;
    // The opponent left: when Lichess lets us claim the game (`claimWinInSeconds`).
    let mut claim_at: Option<tokio::time::Instant> = None;
    // Set once we claimed the game after the opponent left: the fault to record.
    let mut claimed: Option<String> = None;
    loop {
        if *run_state.borrow() == RunState::Stopped {
            return GameExit::Stopped;
        }
        let mut stream = match ctx.client.stream_game(&id).await {
            Ok(s) => {
                refusals = 0;
                Reader::spawn(s)
            }
            // A 400 (a game the bot API cannot play) or another permanent answer: settled,
            // never retried.
            Err(e) if is_permanent(&e) => return GameExit::Unplayable(e.to_string()),
            // Not found, or refused: retried a few times (a server hiccup must not cost a
            // game), then given up on.
            Err(e) if refusals >= 5 => return GameExit::Failed(e.to_string()),
            Err(e) => {
                refusals += usize::from(matches!(
                    e,
                    LichessError::NotFound { .. }
                        | LichessError::TokenRejected { .. }
                        | LichessError::Forbidden { .. }
                ));
                let delay = backoff.next_delay();
                tracing::warn!("game stream: {e}; retrying in {delay:?}");
                if sleep_or_stop(delay, &mut run_state).await {
                    return GameExit::Stopped;
                }
                continue;
            }
        };
        let mut state_at = Instant::now();
        let mut reconnect = false;
        while !reconnect {
            let abort_due = state_at + ctx.abort_after;
            let abort_armed = !abort_sent
                && ended_by_shutdown.is_none()
                && tracker.awaiting_opponent_first_move();
            let claim_armed =
                claim_at.is_some() && ended_by_shutdown.is_none() && !tracker.is_finished();
            let mut actions = tokio::select! {
                event = stream.next() => {
                    let now_ms = unix_ms();
                    state_at = Instant::now();
                    match event {
                        Ok(GameEvent::GameFull(full)) => {
                            backoff.reset();
                            match tracker.on_game_full(full, now_ms) {
                                Ok(actions) => {
                                    if !greeted {
                                        greeted = true;
                                        // A resumed game was greeted by the previous run.
                                        greet_due = tracker.ply() < 2 && !tracker.is_finished();
                                    }
                                    actions
                                }
                                Err(e) => return GameExit::Failed(e.to_string()),
                            }
                        }
                        Ok(GameEvent::GameState(state)) => match tracker.on_game_state(state, now_ms) {
                            Ok(actions) => actions,
                            Err(e) => return GameExit::Failed(e.to_string()),
                        },
                        Ok(GameEvent::OpponentGone(gone)) => {
                            claim_at = match (gone.gone, gone.claim_win_in_seconds) {
                                (true, Some(wait)) if claimed.is_none() => {
                                    let wait = Duration::from_secs(u64::from(wait));
                                    tracing::info!("opponent gone: claiming the game in {wait:?}");
                                    Some(tokio::time::Instant::now() + wait)
                                }
                                (true, _) => {
                                    tracing::info!("opponent gone");
                                    claim_at
                                }
                                (false, _) => {
                                    tracing::info!("opponent back");
                                    None
                                }
                            };
                            Vec::new()
                        }
                        Ok(_) => Vec::new(),
                        Err(end) => {
                            tracing::info!("game stream ended ({end}); reconnecting");
                            reconnect = true;
                            Vec::new()
                        }
                    }
                }
                done = async { (&mut pending.as_mut().expect("guarded").rx).await }, if pending.is_some() => {
                    let p = pending.take().expect("guarded");
                    match done {
                        Ok(done) => {
                            let got_at = Instant::now();
                            tracing::debug!(
                                ply = p.ply, nodes = done.result.nodes, depth = done.result.depth,
                                queued_ms = done.queued.as_millis() as u64,
                                searched_ms = done.searched.as_millis() as u64, "search done"
                            );
                            player = Some(done.player);
                            let wait = think_wait(&ctx, &tracker, &p, &done.result);
                            let latency = p.state_to_submit + got_at.elapsed();
                            if wait.is_zero() {
                                if !play_result(&ctx, &mut tracker, p.ply, &done.result, latency).await {
                                    reconnect = true;
                                }
                            } else {
                                tracing::debug!(ply = p.ply, wait_ms = wait.as_millis() as u64, "thinking");
                                thinking = Some(Thinking {
                                    ply: p.ply,
                                    result: done.result,
                                    until: tokio::time::Instant::now() + wait,
                                    latency,
                                });
                            }
                        }
                        // Cancelled or pool gone: allow a new search on the next state.
                        Err(_) => tracker.on_move_failed(p.ply),
                    }
                    Vec::new()
                }
                _ = tokio::time::sleep_until(thinking.as_ref().map_or_else(tokio::time::Instant::now, |t| t.until)), if thinking.is_some() => {
                    let t = thinking.take().expect("guarded");
                    if !play_result(&ctx, &mut tracker, t.ply, &t.result, t.latency).await {
                        reconnect = true;
                    }
                    Vec::new()
                }
                _ = tokio::time::sleep_until(abort_due.into()), if abort_armed => {
                    abort_sent = true;
                    tracing::info!("opponent made no first move in {:?}: aborting", ctx.abort_after);
                    if let Err(e) = ctx.client.abort(&id).await {
                        tracing::warn!("abort: {e}");
                    }
                    Vec::new()
                }
                _ = tokio::time::sleep_until(claim_at.unwrap_or_else(tokio::time::Instant::now)), if claim_armed => {
                    claim_at = None;
                    claimed = claim(&ctx, &tracker).await;
                    Vec::new()
                }
                _ = grace_over(&mut grace_state), if ended_by_shutdown.is_none() => {
                    if *grace_state.borrow() == RunState::Stopped {
                        return GameExit::Stopped;
                    }
                    // No move after this: the game ends now, and the stream will say how.
                    drop(pending.take());
                    thinking = None;
                    ended_by_shutdown = Some(end_now(&ctx, &tracker).await);
                    Vec::new()
                }
                _ = stopped(&mut run_state) => {
                    return GameExit::Stopped;
                }
            };
            if tracker.is_our_turn() {
                let ply = tracker.ply();
                if our_turn_since.is_none_or(|(p, _)| p != ply) {
                    our_turn_since = Some((ply, tokio::time::Instant::now()));
                }
            }
            // The search first: offers and chat are answered while it runs.
            actions.sort_by_key(|a| !matches!(a, Action::Search { .. }));
            for action in actions {
                match action {
                    Action::Search { .. } if ended_by_shutdown.is_some() => {}
                    Action::Search { ply, game, clock } => {
                        // A result still held back belongs to a position that is gone.
                        thinking = None;
                        let facts = PositionFacts::of(&game);
                        let limit = think_time(clock);
                        let cancel = Arc::new(AtomicBool::new(false));
                        let job = SearchJob {
                            game: *game,
                            // Lent to the pool while a search runs; a search abandoned by a
                            // reconnect never hands it back, so a fresh one takes over with
                            // the same level and seed.
                            player: player.take().unwrap_or_else(|| {
                                Box::new(LevelPlayer::new(
                                    tracker.setup().params.clone(),
                                    tracker.setup().seed,
                                ))
                            }),
                            time_limit: limit,
                            urgency_ms: urgency_ms(clock),
                            cancel: Arc::clone(&cancel),
                        };
                        tracing::debug!(
                            ply,
                            limit_ms = limit.as_millis() as u64,
                            "search submitted"
                        );
                        let rx = ctx.pool.submit(job);
                        pending = Some(Pending {
                            ply,
                            rx,
                            cancel,
                            state_to_submit: state_at.elapsed(),
                            state_at,
                            clock,
                            facts,
                        });
                    }
                    Action::AnswerDraw(accept) => {
                        tracing::info!(accept, "answering a draw offer");
                        if let Err(e) = ctx.client.draw(&id, accept).await {
                            tracing::warn!("draw offer: {e}");
                        }
                    }
                    Action::AnswerTakeback(accept) => {
                        tracing::info!(accept, "answering a takeback");
                        if !accept && ctx.conduct.takebacks > 0 {
                            say(&ctx, &tracker, TAKEBACKS_USED_CHAT).await;
                        }
                        if let Err(e) = ctx.client.takeback(&id, accept).await {
                            tracing::warn!("takeback: {e}");
                            if accept {
                                // The move stands: a fresh gameFull lets us search it again.
                                tracker.on_takeback_failed();
                                reconnect = true;
                            }
                        }
                    }
                    Action::Resign | Action::Move { .. } => {}
                    Action::Finished(record) => {
                        // Dropping a pending search cancels it: no move after the end.
                        drop(pending.take());
                        let mut record = *record;
                        if resumed {
                            record.after_restart = Some(AfterRestart::Resumed);
                        }
                        explain_fault(
                            &mut record,
                            ended_by_shutdown.as_deref(),
                            our_turn_since.map(|(_, since)| since),
                            &ctx.client,
                        );
                        // Won (or drawn) because the opponent left: no strength in it.
                        if record.fault.is_none() && record.status == "timeout" {
                            record.fault.clone_from(&claimed);
                        }
                        tracing::info!(
                            result = ?record.result,
                            status = %record.status, moves = record.moves.split_whitespace().count(),
                            opponent = %record.opponent.name,
                            fault = record.fault.as_deref().unwrap_or(""), "game over"
                        );
                        let bot_started_at_ms = record.opponent.bot.then_some(record.started_at_ms);
                        match ctx.results.append(record).await {
                            Ok(true) => {}
                            Ok(false) => tracing::info!("already in the results log"),
                            Err(e) => tracing::error!("results log: {e}"),
                        }
                        // A game we ended ourselves had its word before the resignation.
                        if let Some(goodbye) =
                            ctx.goodbye.as_ref().filter(|_| ended_by_shutdown.is_none())
                        {
                            let text =
                                chat_line(goodbye, &ctx.setup.username, &tracker.opponent_name());
                            if let Err(e) = ctx.client.chat(&id, ChatRoom::Player, &text).await {
                                tracing::debug!("goodbye chat: {e}");
                            }
                        }
                        return GameExit::Recorded { bot_started_at_ms };
                    }
                }
            }
            if greet_due {
                greet_due = false;
                greet(&ctx, &tracker).await;
            }
        }
        let delay = backoff.next_delay();
        if sleep_or_stop(delay, &mut run_state).await {
            return GameExit::Stopped;
        }
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
            setup.seed = first.seed;
            if first.coefficients_version != setup.params.coefficients_version
                || first.level != setup.params.level
            {
                tracing::warn!(
                    "resumed with level {} under coefficients v{} (it began with level {} under v{})",
                    setup.params.level,
                    setup.params.coefficients_version,
                    first.level,
                    first.coefficients_version
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

/// Ends a running game at the end of the grace period: abort while Lichess allows it (fewer
/// than two plies), otherwise a word in the chat and resign. Returns the fault to record.
async fn end_now(ctx: &GameContext, tracker: &Tracker) -> String {
    let id = &ctx.setup.game_id;
    if tracker.ply() < 2 {
        match ctx.client.abort(id).await {
            Ok(()) => {
                tracing::warn!("grace period over: game aborted");
                return fault::text(
                    fault::SHUTDOWN,
                    "aborted when the shutdown grace period ran out",
                );
            }
            Err(e) => {
                tracing::warn!("grace period over: abort refused ({e}); resigning")
            }
        }
    }
    if let Err(e) = ctx.client.chat(id, ChatRoom::Player, STOP_CHAT).await {
        tracing::debug!("stop chat: {e}");
    }
    match ctx.client.resign(id).await {
        Ok(()) => tracing::warn!("grace period over: game resigned"),
        Err(e) => tracing::warn!("grace period over: resign: {e}"),
    }
    fault::text(
        fault::SHUTDOWN,
        "resigned when the shutdown grace period ran out",
    )
}

/// Whether a refused game stream is refused for good: a 400 (the bot API cannot play this
/// game) or another 4xx that is no refusal of the token, no 404 and no rate limit.
fn is_permanent(e: &LichessError) -> bool {
    matches!(
        e,
        LichessError::BadRequest { .. }
            | LichessError::Status { .. }
            | LichessError::BotLimit { .. }
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
/// ended it (only if it ended the way we ended it, not by a move that came first), or it was
/// lost on time while the account waited out a 429 pause that began or lasted after our turn
/// started (every request waits, our moves included).
fn explain_fault(
    record: &mut GameRecord,
    ended_by_shutdown: Option<&str>,
    our_turn_since: Option<tokio::time::Instant>,
    client: &Client,
) {
    if let Some(why) = ended_by_shutdown {
        let ours = record.status == "aborted"
            || (record.status == "resign" && record.result == crate::results::Outcome::Loss);
        if ours {
            record.fault = Some(why.to_string());
            return;
        }
    }
    let paused_in_our_turn = our_turn_since
        .zip(client.last_pause_end())
        .is_some_and(|(since, pause_end)| pause_end > since);
    if record.lost_on_time() && paused_in_our_turn {
        record.fault = Some(fault::text(
            fault::RATE_LIMITED,
            &format!(
                "lost on time while the account waited out an HTTP 429 pause of {:?} \
                 (no request, our moves included, goes out during it)",
                client
                    .last_pause_length()
                    .unwrap_or(client.config().rate_limit.pause)
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
        seed: ctx.setup.seed,
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
                tracing::info!(ply, score = ?result.score, "resigning a lost game");
                say(ctx, tracker, RESIGN_CHAT).await;
                if let Err(e) = ctx.client.resign(id).await {
                    tracing::warn!("resign: {e}");
                    tracker.on_move_failed(ply);
                    return false;
                }
            }
            Action::AnswerDraw(accept) => {
                tracing::info!(accept, score = ?result.score, "answering a draw offer");
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

/// Says `template` in the player chat (`{me}`/`{opponent}` filled); failures only logged.
async fn say(ctx: &GameContext, tracker: &Tracker, template: &str) {
    let text = chat_line(template, &ctx.setup.username, &tracker.opponent_name());
    if let Err(e) = ctx
        .client
        .chat(&ctx.setup.game_id, ChatRoom::Player, &text)
        .await
    {
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
    if let Some(greeting) = &ctx.greeting {
        let text = chat_line(greeting, &ctx.setup.username, &tracker.opponent_name());
        if let Err(e) = ctx
            .client
            .chat(&ctx.setup.game_id, ChatRoom::Player, &text)
            .await
        {
            tracing::debug!("greeting: {e}");
        }
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
