//! Alice, the person tests play against a bot: she challenges it (1+0) with the color a test
//! picks, with White opens as soon as the game lets her, and leaves a game for the bot to claim.

use std::time::Duration;

use ladder::lichess::{ChallengeColor, GameId, GameStatus};
use ladder::sandbox::{ChallengeSpec, GameSummary, Sandbox};

/// Alice challenges `bot` to a casual 1+0 game in which she plays `color`.
pub fn alice_challenges(sb: &Sandbox, bot: &str, color: ChallengeColor) -> GameId {
    let mut spec = ChallengeSpec::clock(60, 0);
    spec.color = color;
    sb.challenge("alice", bot, &spec).unwrap().id.game_id()
}

/// Alice challenges `bot` with White (1+0) and plays `first` as soon as the game lets her.
pub async fn alice_opens(sb: &Sandbox, bot: &str, first: &str) -> GameId {
    let id = alice_challenges(sb, bot, ChallengeColor::White);
    tokio::time::timeout(Duration::from_secs(10), async {
        while sb.play_move("alice", &id, first).is_err() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("Alice could not open");
    id
}

/// Alice (White) opens with e4 and the bot replies: the game is under way once both have moved.
pub async fn open_game_with_alice(sb: &Sandbox, bot: &str) -> GameId {
    let id = alice_opens(sb, bot, "e2e4").await;
    sb.wait_until("the bot's reply", Duration::from_secs(10), |w| {
        w.summary(&id).filter(|g| g.moves.len() >= 2).map(|_| ())
    })
    .await
    .unwrap();
    id
}

/// Alice leaves game `id` (claimable after 1 s) and the game ends within `within` as a win on
/// time: her clock has most of its minute left, so only the bot's claim ends it this soon.
/// Returns the finished game.
pub async fn alice_leaves_and_is_claimed_against(
    sb: &Sandbox,
    id: &GameId,
    within: Duration,
) -> GameSummary {
    sb.set_gone(id, "alice", true, Duration::from_secs(1))
        .unwrap();
    let games = sb.wait_finished(1, within).await.unwrap();
    let game = games.into_iter().find(|g| g.id == *id).unwrap();
    assert_eq!(game.status, GameStatus::Timeout, "{game:?}");
    game
}
