//! Simulated challengers: accounts that challenge bots at a configured rate and play their
//! games in-process, with think times, draw offers, takeback proposals, and replies to the
//! bot's offers. They also accept challenges sent to them. Each game's moves come from a seat
//! ([`crate::player::seat`]) of the challenger's player, seated as the arena seats it but with
//! no clock: a level searches its whole node budget (on a blocking thread), a mover draws from
//! the game's seed, an anchor's engine plays under the anchor's own per-move limits, so a game
//! against an anchor is played the way the anchor's rating was measured (the rehearsal of the
//! live calibration loop in tests/rehearsal.rs pits the daemon's levels against such).

use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::sync::mpsc;

use super::config::ChallengerConfig;
use super::server::Shared;
use super::world::{Action, ChallengeSpec, Notice};
use crate::engine::Game;
use crate::levels::Coefficients;
use crate::lichess::types::ChallengeColor;
use crate::lichess::{GameId, TimeControl};
use crate::player::seat::{MoveLimits, PlayerKind, Seat, Seating, Timeouts};
use crate::player::think::ThinkMode;

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, super::world::World> {
    shared.lock().expect("sandbox world lock")
}

/// Reacts to notices from the world: plays challengers' games, accepts their challenges.
pub async fn supervise(shared: Shared, mut notices: mpsc::UnboundedReceiver<Notice>, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let seating = Arc::new(Seating {
        coefficients: Coefficients::builtin(),
        // An engine's own limits only: a simulated person has no match to take them from.
        fixed: MoveLimits::default(),
        timeouts: TIMEOUTS,
        // No clock: a simulated person's moves come as the world schedules them.
        think: ThinkMode::Fast,
    });
    while let Some(notice) = notices.recv().await {
        match notice {
            Notice::GameStarted { game_id } => {
                let players: Vec<(String, ChallengerConfig)> = {
                    let world = lock(&shared);
                    let Some(entry) = world.games.get(&game_id) else {
                        continue;
                    };
                    [&entry.game.white.id, &entry.game.black.id]
                        .into_iter()
                        .filter_map(|id| {
                            let index = world.accounts.get(id.as_str())?.challenger?;
                            Some((id.clone(), world.config.challengers[index].clone()))
                        })
                        .collect()
                };
                for (account, config) in players {
                    let task = play_game(
                        shared.clone(),
                        game_id.clone(),
                        account,
                        config,
                        seating.clone(),
                        rng.r#gen(),
                    );
                    tokio::spawn(task);
                }
            }
            Notice::ChallengeReceived { challenge_id, dest } => {
                let shared = shared.clone();
                tokio::spawn(async move {
                    // A human takes a moment to click "accept".
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    if let Err(e) = lock(&shared).accept_challenge(&dest, &challenge_id) {
                        tracing::debug!(%challenge_id, "challenger could not accept: {e}");
                    }
                });
            }
            Notice::ChallengeDeclined {
                challenge,
                challenger,
                reason,
            } => {
                tracing::debug!(%challenge, %challenger, %reason, "sandbox challenge declined");
            }
        }
    }
}

/// Sends challenges from one challenger at its configured interval.
pub async fn challenge_loop(shared: Shared, index: usize, seed: u64) {
    let config = lock(&shared).config.challengers[index].clone();
    let Some(interval) = config.interval else {
        return;
    };
    let me = config.name.to_ascii_lowercase();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut turn = 0usize;
    loop {
        tokio::time::sleep(interval).await;
        let mut world = lock(&shared);
        if world.challengers_paused {
            continue;
        }
        let running = world
            .games
            .values()
            .filter(|e| !e.game.is_over() && e.game.color_of(&me).is_some())
            .count();
        let pending = world
            .challenges
            .values()
            .filter(|c| c.json.challenger.id == me)
            .count();
        if running + pending >= config.max_games.max(1) {
            continue;
        }
        let targets: Vec<String> = if config.targets.is_empty() {
            world
                .accounts
                .values()
                .filter(|a| a.bot && a.challenger.is_none())
                .map(|a| a.id.clone())
                .collect()
        } else {
            config.targets.clone()
        };
        if targets.is_empty() || config.time_controls.is_empty() {
            continue;
        }
        let target = &targets[rng.gen_range(0..targets.len())];
        let (limit, increment) = config.time_controls[turn % config.time_controls.len()];
        let variant = config
            .variants
            .get(turn % config.variants.len().max(1))
            .cloned()
            .unwrap_or_else(|| "standard".to_string());
        turn += 1;
        let spec = ChallengeSpec {
            rated: config.rated,
            time_control: TimeControl::clock(limit, increment),
            color: ChallengeColor::Random,
            variant,
            fen: None,
        };
        if let Err(e) = world.create_challenge(&me, target, &spec) {
            tracing::warn!(challenger = %config.name, %target, "sandbox challenge failed: {e}");
        }
    }
}

/// What a challenger needs to decide its next action.
struct View {
    initial_fen: String,
    chess960: bool,
    moves: Vec<String>,
    my_turn: bool,
    /// The challenger left the game (`Sandbox::set_gone`): it makes no move until it is back.
    gone: bool,
    over: bool,
    opponent_offers_draw: bool,
    opponent_proposes_takeback: bool,
}

fn view(shared: &Shared, game_id: &GameId, me: &str) -> Option<View> {
    let world = lock(shared);
    let entry = world.games.get(game_id)?;
    let g = &entry.game;
    let color = g.color_of(me)?;
    Some(View {
        gone: entry.gone.is_some_and(|(who, _)| who == color),
        initial_fen: g.initial_fen.clone(),
        chess960: g.variant == "chess960",
        moves: g.moves.clone(),
        my_turn: g.turn() == color,
        over: g.is_over(),
        opponent_offers_draw: g.draw_offer == Some(color.other()),
        opponent_proposes_takeback: g.takeback_offer == Some(color.other()),
    })
}

/// Plays one game for a challenger until it ends.
async fn play_game(
    shared: Shared,
    game_id: GameId,
    me: String,
    config: ChallengerConfig,
    seating: Arc<Seating>,
    seed: u64,
) {
    let Some(mut changes) = lock(&shared)
        .games
        .get(&game_id)
        .map(|e| e.watch.subscribe())
    else {
        return;
    };
    let mut rng = StdRng::seed_from_u64(seed);
    // One seat for the whole game, as the daemon's level player is.
    let mut player = ChallengerSeat::new(&config, seating, rng.r#gen());
    loop {
        changes.borrow_and_update();
        let Some(v) = view(&shared, &game_id, &me) else {
            return;
        };
        if v.over {
            return;
        }
        let act = |action: Action| {
            if let Err(e) = lock(&shared).game_action(&me, &game_id, action) {
                tracing::debug!(game = %game_id, "challenger action refused: {e}");
            }
        };
        if v.opponent_offers_draw {
            act(Action::Draw(config.accept_draws));
        }
        if v.opponent_proposes_takeback {
            act(Action::Takeback(config.accept_takebacks));
        }
        if v.my_turn && !v.gone {
            tokio::time::sleep(config.think_time).await;
            // It may have left while it thought.
            if view(&shared, &game_id, &me).is_none_or(|v| v.gone) {
                continue;
            }
            if let Some(uci) = choose_move(&v, &mut player).await {
                let offering_draw = rng.gen_bool(config.draw_offer_chance.clamp(0.0, 1.0));
                act(Action::Move { uci, offering_draw });
                if rng.gen_bool(config.takeback_chance.clamp(0.0, 1.0)) {
                    act(Action::Takeback(true));
                }
            }
            // Whatever happened meanwhile (a takeback, the bot's reply), look again.
            continue;
        }
        if changes.changed().await.is_err() {
            return;
        }
    }
}

async fn choose_move(v: &View, player: &mut ChallengerSeat) -> Option<String> {
    let game = Game::from_uci_moves(Some(&v.initial_fen), &v.moves, v.chess960).ok()?;
    player.choose(&game).await
}

/// The arena's defaults (`ladder arena --startup-timeout/--move-timeout/--timeout-margin`).
const TIMEOUTS: Timeouts = Timeouts {
    startup: Duration::from_secs(10),
    move_timeout: Duration::from_secs(60),
    margin: Duration::from_secs(1),
};

/// After a failed move (engine missing, crashed, hung or illegal) the next try waits this long,
/// so a missing engine does not start a process in a tight loop.
const RETRY_PAUSE: Duration = Duration::from_secs(1);

/// One challenger's side of one game: its seat, taken at the first move and kept while it
/// plays legal moves.
pub struct ChallengerSeat {
    /// The challenger's name, for the log.
    name: String,
    kind: PlayerKind,
    seating: Arc<Seating>,
    seat: Option<Seat>,
    /// This side's seed: a level's or a mover's every choice derives from it.
    seed: u64,
}

impl ChallengerSeat {
    pub fn new(config: &ChallengerConfig, seating: Arc<Seating>, seed: u64) -> ChallengerSeat {
        ChallengerSeat {
            name: config.name.clone(),
            kind: config.player.clone(),
            seating,
            seat: None,
            seed,
        }
    }

    /// The player's legal move in `game` (UCI), or `None` when it has none to give: at once
    /// without a legal move, after a pause when the seat failed (an engine's process is dropped
    /// and the next call starts a fresh one).
    pub async fn choose(&mut self, game: &Game) -> Option<String> {
        if game.legal_moves().is_empty() {
            return None;
        }
        let mut seat = match self.seat.take() {
            Some(seat) => seat,
            None => match self.seating.seat(&self.kind, self.seed, None).await {
                Ok(seat) => seat,
                Err(fault) => return self.failed(format!("cannot start: {fault}")).await,
            },
        };
        // No clock: the player plays under its own limits.
        match seat.choose(game, None).await.map(|choice| choice.uci) {
            Ok(uci) if is_legal(game, &uci) => {
                self.seat = Some(seat);
                Some(uci)
            }
            Ok(uci) => self.failed(format!("played an illegal move {uci}")).await,
            Err(fault) => self.failed(format!("failed: {fault}")).await,
        }
    }

    /// Logs why no move came and pauses before the next try.
    async fn failed(&self, what: String) -> Option<String> {
        tracing::warn!(challenger = %self.name, "sandbox challenger {what}");
        tokio::time::sleep(RETRY_PAUSE).await;
        None
    }
}

fn is_legal(game: &Game, uci: &str) -> bool {
    game.legal_moves().iter().any(|m| game.to_uci(*m) == uci)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::anchors::{Anchor, AnchorsFile};
    use crate::sandbox::{Sandbox, SandboxConfig};

    /// A seat for one game of a challenger playing as `anchor`.
    fn anchor_seat(anchor: &Anchor, seed: u64) -> ChallengerSeat {
        let config = ChallengerConfig::anchor("AnchorAnn", anchor).unwrap();
        let seating = Seating {
            coefficients: Coefficients::builtin(),
            fixed: MoveLimits::default(),
            timeouts: TIMEOUTS,
            think: ThinkMode::Fast,
        };
        ChallengerSeat::new(&config, Arc::new(seating), seed)
    }

    #[tokio::test]
    async fn a_mover_anchor_plays_legal_moves_reproducibly_to_the_end() {
        let anchors = AnchorsFile::builtin();
        let greedy = anchors.get("greedy").unwrap();
        let play = |seed| async move {
            let mut player = anchor_seat(greedy, seed);
            let mut moves: Vec<String> = Vec::new();
            loop {
                let game = Game::from_uci_moves(None, &moves, false).unwrap();
                if moves.len() >= 60 || game.legal_moves().is_empty() {
                    return moves;
                }
                moves.push(player.choose(&game).await.expect("a legal move"));
            }
        };
        let a = play(5).await;
        assert!(a.len() >= 10, "{a:?}");
        assert_eq!(a, play(5).await);
        // Mated: no move, at once (the pause is only for failures).
        let mated = Game::new(Some("R5k1/5ppp/8/8/8/8/8/6K1 b - - 0 1"), false).unwrap();
        let started = std::time::Instant::now();
        assert_eq!(anchor_seat(greedy, 1).choose(&mated).await, None);
        assert!(started.elapsed() < RETRY_PAUSE);
    }

    #[tokio::test]
    async fn an_engine_anchor_answers_with_a_legal_move() {
        let anchors = AnchorsFile::builtin();
        let ai = anchors.get("lichess-ai-1").unwrap();
        let PlayerKind::Uci { command, .. } = &ai.kind else {
            panic!("lichess-ai-1 is an engine")
        };
        if !command.program.exists() {
            eprintln!("skipped: {} is not installed", command.program.display());
            return;
        }
        let mut player = anchor_seat(ai, 1);
        let mut moves: Vec<String> = Vec::new();
        for _ in 0..6 {
            let game = Game::from_uci_moves(None, &moves, false).unwrap();
            moves.push(player.choose(&game).await.expect("a legal move"));
        }
        assert!(Game::from_uci_moves(None, &moves, false).is_ok());
    }

    #[tokio::test]
    async fn paused_challengers_send_no_challenge_until_resumed() {
        let mut config = SandboxConfig::with_bots(&["bot"]);
        let mut rita = ChallengerConfig::new("rita");
        rita.interval = Some(Duration::from_millis(20));
        config.challengers.push(rita);
        config.seed = Some(3);
        let sandbox = Sandbox::start(config).await.unwrap();
        sandbox.pause_challengers(true);
        // Nothing reaches the world while paused (a challenge already sent may stand).
        tokio::time::sleep(Duration::from_millis(50)).await;
        sandbox.with_world(|w| w.challenges.clear());
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(sandbox.pending_challenges().is_empty());
        sandbox.pause_challengers(false);
        sandbox
            .wait_until("a challenge", Duration::from_secs(5), |w| {
                (!w.challenges.is_empty()).then_some(())
            })
            .await
            .unwrap();
        sandbox.stop().await;
    }
}
