//! Challenges in the sandbox as tests make and follow them: a casual 1+0 challenge with White
//! for the challenger, a challenge's game once under way, and the reason the daemon declined
//! one with.

use std::time::Duration;

use ladder::lichess::{ChallengeColor, ChallengeId, GameId, GameStatus};
use ladder::sandbox::{ChallengeSpec, Sandbox};

/// A casual 1+0 challenge in which `from` plays white.
pub fn as_white(sb: &Sandbox, from: &str, to: &str) -> ChallengeId {
    let mut spec = ChallengeSpec::clock(60, 0);
    spec.color = ChallengeColor::White;
    sb.challenge(from, to, &spec).unwrap().id
}

/// Waits (up to `timeout`) until game `id` is running and has a move (so the bot's game actor
/// is under way).
pub async fn game_under_way(sb: &Sandbox, id: &GameId, timeout: Duration) {
    sb.wait_until(&format!("game {id} under way"), timeout, |w| {
        w.summary(id)
            .filter(|g| g.status == GameStatus::Started && !g.moves.is_empty())
            .map(|_| ())
    })
    .await
    .unwrap();
}

/// A casual game of `limit_s`+0 that `from` challenges `to` to, once under way (within 10 s).
pub async fn game_under_way_with(sb: &Sandbox, from: &str, to: &str, limit_s: u32) -> GameId {
    let game = sb
        .challenge(from, to, &ChallengeSpec::clock(limit_s, 0))
        .unwrap()
        .id
        .game_id();
    game_under_way(sb, &game, Duration::from_secs(10)).await;
    game
}

/// The reason key (`later`, `toofast`, …) challenge `id` is declined with, within 10 s.
pub async fn declined_reason(sb: &Sandbox, id: &ChallengeId) -> String {
    sb.wait_until(
        &format!("challenge {id} declined"),
        Duration::from_secs(10),
        |w| {
            w.declined
                .iter()
                .find(|c| c.id == *id)
                .and_then(|c| c.decline_reason_key.clone())
        },
    )
    .await
    .unwrap()
}
