//! Simulated challengers: accounts that challenge bots at a configured rate and play their
//! games in-process (random moves or the ladder's own engine at a level, searched on a
//! blocking thread), with think times, draw offers, takeback proposals, and replies to the
//! bot's offers. They also accept challenges sent to them.

use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::sync::mpsc;

use super::config::{ChallengerConfig, PlayerKind};
use super::engine_challenger::AnchorPlayer;
use super::server::Shared;
use super::world::{Action, ChallengeSpec, Notice};
use crate::engine::Game;
use crate::levels::{Coefficients, LevelParams};
use crate::lichess::types::ChallengeColor;
use crate::lichess::{GameId, TimeControl};
use crate::player::deadline::TimeBudget;
use crate::player::{LevelPlayer, choose_blocking};

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, super::world::World> {
    shared.lock().expect("sandbox world lock")
}

/// Reacts to notices from the world: plays challengers' games, accepts their challenges.
pub async fn supervise(shared: Shared, mut notices: mpsc::UnboundedReceiver<Notice>, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let coefficients = Arc::new(Coefficients::builtin());
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
                        coefficients.clone(),
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
    over: bool,
    opponent_offers_draw: bool,
    opponent_proposes_takeback: bool,
}

fn view(shared: &Shared, game_id: &GameId, me: &str) -> Option<View> {
    let world = lock(shared);
    let g = &world.games.get(game_id)?.game;
    let color = g.color_of(me)?;
    Some(View {
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
    coefficients: Arc<Coefficients>,
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
    // An engine-backed challenger is one level player for the whole game, as the daemon's.
    let mut player = match config.player {
        PlayerKind::Engine { level } => Some(Box::new(LevelPlayer::new(
            LevelParams::new(&coefficients, level),
            rng.r#gen(),
        ))),
        PlayerKind::Random | PlayerKind::Anchor(_) => None,
    };
    let mut anchor = match &config.player {
        PlayerKind::Anchor(a) => Some(AnchorPlayer::new(a, rng.r#gen())),
        _ => None,
    };
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
        if v.my_turn {
            tokio::time::sleep(config.think_time).await;
            if let Some(uci) = choose_move(&v, &mut player, &mut anchor, &mut rng).await {
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

async fn choose_move(
    v: &View,
    player: &mut Option<Box<LevelPlayer>>,
    anchor: &mut Option<AnchorPlayer>,
    rng: &mut StdRng,
) -> Option<String> {
    let game = Game::from_uci_moves(Some(&v.initial_fen), &v.moves, v.chess960).ok()?;
    if let Some(anchor) = anchor {
        return anchor.choose(&game).await;
    }
    match player.take() {
        None => {
            let legal = game.legal_moves();
            if legal.is_empty() {
                return None;
            }
            let m = legal[rng.gen_range(0..legal.len())];
            Some(game.to_uci(m))
        }
        Some(taken) => {
            // No clock: a simulated person's level searches its whole node budget.
            let (returned, result) = choose_blocking(taken, game.clone(), TimeBudget::default())
                .await
                .ok()?;
            *player = Some(returned);
            result.best_move.map(|m| game.to_uci(m))
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::sandbox::{ChallengerConfig, Sandbox, SandboxConfig};
    use std::time::Duration;

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
