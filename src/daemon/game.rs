//! The game actor: one task per running game. It follows the game stream (reconnecting and
//! resuming from `gameFull`), lets the [`Tracker`] decide, runs searches through the shared
//! pool with the game's [`LevelPlayer`] (level and seed fixed at game start), posts moves,
//! chats, aborts a game whose opponent never moves, declines offers, and writes the game's
//! record once. It runs in its game's span (`logging::game_span`): its log lines name the
//! game through it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot, watch};

use crate::lichess::backoff::Backoff;
use crate::lichess::{BackoffPolicy, ChatRoom, Client, GameEvent, LichessError};
use crate::player::LevelPlayer;

use super::chat::chat_line;
use super::pool::{PoolHandle, SearchDone, SearchJob};
use super::reader::Reader;
use super::results_writer::ResultsStub;
use super::shutdown::{RunState, sleep_or_stop, stopped};
use super::tracker::{Action, GameSetup, Tracker};
use crate::player::clock::{think_time, urgency_ms};

/// Everything a game actor is given when it starts.
pub struct GameContext {
    pub client: Client,
    pub pool: PoolHandle,
    pub results: ResultsStub,
    pub setup: GameSetup,
    pub greeting: Option<String>,
    pub goodbye: Option<String>,
    pub abort_after: Duration,
    pub run_state: watch::Receiver<RunState>,
    /// Benchmarks: our own latency per move (state received → search submitted, plus search
    /// done → move request sent), search time excluded.
    pub latency: Option<mpsc::UnboundedSender<Duration>>,
}

/// How a game actor ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GameExit {
    /// The game ended and its record is in the log (or already was).
    Recorded,
    /// Stopped by the second shutdown signal before the game ended.
    Stopped,
    /// The game cannot be followed (not ours, gone, unreadable); nothing recorded.
    Failed(String),
}

struct Pending {
    ply: usize,
    rx: oneshot::Receiver<SearchDone>,
    cancel: Arc<AtomicBool>,
    /// When the search result arrived (for the latency measurement).
    state_to_submit: Duration,
}

impl Drop for Pending {
    fn drop(&mut self) {
        // A search nobody waits for stops at its next poll.
        self.cancel.store(true, Ordering::SeqCst);
    }
}

/// Runs one game to its end.
pub async fn run(ctx: GameContext) -> GameExit {
    let id = ctx.setup.game_id.clone();
    let params = &ctx.setup.params;
    tracing::info!(
        seed = ctx.setup.seed,
        level = params.level,
        nodes = params.nodes,
        noise_cp = format!("{:.1}", params.noise_cp),
        coefficients = params.coefficients_version,
        "game started"
    );
    let mut player = Some(Box::new(LevelPlayer::new(params.clone(), ctx.setup.seed)));
    let mut tracker = Tracker::new(ctx.setup.clone());
    let mut pending: Option<Pending> = None;
    let mut backoff = Backoff::new(reconnect_policy());
    let mut greeted = false;
    let mut greet_due = false;
    let mut abort_sent = false;
    let mut refusals = 0;
    let mut run_state = ctx.run_state.clone();
    loop {
        if *run_state.borrow() == RunState::Stopped {
            return GameExit::Stopped;
        }
        let mut stream = match ctx.client.stream_game(&id).await {
            Ok(s) => {
                refusals = 0;
                Reader::spawn(s)
            }
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
            let abort_armed = !abort_sent && tracker.awaiting_opponent_first_move();
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
                            tracing::info!(gone = gone.gone, "opponent gone");
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
                            match tracker.on_search_done(p.ply, done.result.best_move) {
                                Some(Action::Move { ply, uci }) => {
                                    if let Some(tx) = &ctx.latency {
                                        tx.send(p.state_to_submit + got_at.elapsed()).ok();
                                    }
                                    if !post_move(&ctx, &mut tracker, ply, &uci).await {
                                        reconnect = true;
                                    }
                                }
                                _ => tracing::debug!(ply = p.ply, "search result dropped: the game moved on"),
                            }
                        }
                        // Cancelled or pool gone: allow a new search on the next state.
                        Err(_) => tracker.on_move_failed(p.ply),
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
                _ = stopped(&mut run_state) => {
                    return GameExit::Stopped;
                }
            };
            // The search first: offers and chat are answered while it runs.
            actions.sort_by_key(|a| !matches!(a, Action::Search { .. }));
            for action in actions {
                match action {
                    Action::Search { ply, game, clock } => {
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
                        });
                    }
                    Action::Move { .. } => {}
                    Action::DeclineDraw => {
                        tracing::info!("declining a draw offer");
                        if let Err(e) = ctx.client.draw(&id, false).await {
                            tracing::warn!("decline draw: {e}");
                        }
                    }
                    Action::DeclineTakeback => {
                        tracing::info!("declining a takeback");
                        if let Err(e) = ctx.client.takeback(&id, false).await {
                            tracing::warn!("decline takeback: {e}");
                        }
                    }
                    Action::Finished(record) => {
                        // Dropping a pending search cancels it: no move after the end.
                        drop(pending.take());
                        let record = *record;
                        tracing::info!(
                            result = ?record.result,
                            status = %record.status, moves = record.moves.split_whitespace().count(),
                            opponent = %record.opponent.name, "game over"
                        );
                        match ctx.results.append(record).await {
                            Ok(true) => {}
                            Ok(false) => tracing::info!("already in the results log"),
                            Err(e) => tracing::error!("results log: {e}"),
                        }
                        if let Some(goodbye) = &ctx.goodbye {
                            let text =
                                chat_line(goodbye, &ctx.setup.username, &tracker.opponent_name());
                            if let Err(e) = ctx.client.chat(&id, ChatRoom::Player, &text).await {
                                tracing::debug!("goodbye chat: {e}");
                            }
                        }
                        return GameExit::Recorded;
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

/// Posts our move; `false` asks for a reconnect (the fresh `gameFull` decides what next).
async fn post_move(ctx: &GameContext, tracker: &mut Tracker, ply: usize, uci: &str) -> bool {
    let id = &ctx.setup.game_id;
    match ctx.client.make_move(id, uci, false).await {
        Ok(()) => {
            tracker.on_move_posted(ply);
            tracing::info!(ply, "move {uci}");
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

pub(crate) fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
