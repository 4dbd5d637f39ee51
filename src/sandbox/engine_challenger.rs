//! Sandbox challengers that play as an anchor of the rating scale (`calibration/anchors.toml`):
//! an external engine (Stockfish `UCI_Elo`, Fairy-Stockfish emulating a Lichess AI level) or a
//! built-in mover, posing as a person rated at the anchor's fitted rating. The moves come from
//! the arena's own seat for that anchor ([`crate::arena::player`]: the same process set-up, the
//! anchor's own per-move limits and no clock), so a sandbox game against an anchor is played the
//! way the anchor's rating was measured. A rehearsal of the live calibration loop pits the
//! daemon's levels against such challengers (tests/rehearsal.rs).

use std::time::Duration;

use super::config::{ChallengerConfig, PlayerKind};
use crate::arena::anchors::Anchor;
use crate::arena::player::{MoveLimits, Roster, Seat, Timeouts};
use crate::engine::Game;
use crate::levels::Coefficients;

/// The arena's defaults (`ladder arena --startup-timeout/--move-timeout/--timeout-margin`).
const TIMEOUTS: Timeouts = Timeouts {
    startup: Duration::from_secs(10),
    move_timeout: Duration::from_secs(60),
    margin: Duration::from_secs(1),
};

/// After a failed move (engine missing, crashed, hung or illegal) the next try waits this long,
/// so a missing engine does not start a process in a tight loop.
const RETRY_PAUSE: Duration = Duration::from_secs(1);

impl ChallengerConfig {
    /// A person who plays as `anchor`: rated at the anchor's fitted rating (not provisional), no
    /// title, moving at once, never offering draws or takebacks, accepting neither, and
    /// challenging one game at a time with the defaults of [`ChallengerConfig::new`] otherwise.
    /// An anchor without a fitted rating cannot pose as a rated person.
    pub fn anchor(name: &str, anchor: &Anchor) -> Result<ChallengerConfig, String> {
        let rating = anchor
            .rating
            .ok_or_else(|| format!("anchor {} has no fitted rating", anchor.name))?;
        Ok(ChallengerConfig {
            rating: rating.round() as i32,
            provisional: false,
            title: None,
            player: PlayerKind::Anchor(Box::new(anchor.clone())),
            think_time: Duration::ZERO,
            draw_offer_chance: 0.0,
            takeback_chance: 0.0,
            accept_draws: false,
            accept_takebacks: false,
            max_games: 1,
            ..ChallengerConfig::new(name)
        })
    }
}

/// One anchor's side of one game: its arena seat, started at the first move.
pub struct AnchorPlayer {
    roster: Roster,
    seat: Option<Seat>,
    seed: u64,
}

impl AnchorPlayer {
    /// The anchor for one game; `seed` seeds a built-in mover (engines ignore it).
    pub fn new(anchor: &Anchor, seed: u64) -> AnchorPlayer {
        AnchorPlayer {
            roster: Roster::new(
                vec![anchor.player()],
                Coefficients::builtin(),
                MoveLimits::default(),
                TIMEOUTS,
            ),
            seat: None,
            seed,
        }
    }

    /// The anchor's legal move in `game` (UCI), or `None` after a pause when it has none to
    /// give: no legal move, or the engine failed (its process is dropped and the next call
    /// starts a fresh one).
    pub async fn choose(&mut self, game: &Game) -> Option<String> {
        if game.legal_moves().is_empty() {
            return None;
        }
        let name = &self.roster.players[0].name;
        let mut seat = match self.seat.take() {
            Some(seat) => seat,
            None => match self.roster.seat(0, self.seed).await {
                Ok(seat) => seat,
                Err(fault) => {
                    tracing::warn!(anchor = %name, "sandbox anchor cannot start: {fault}");
                    tokio::time::sleep(RETRY_PAUSE).await;
                    return None;
                }
            },
        };
        // No clock: the anchor plays under its own limits, as in the games that rated it.
        match seat.choose(game, None).await {
            Ok(uci) if is_legal(game, &uci) => {
                self.seat = Some(seat);
                Some(uci)
            }
            Ok(uci) => {
                tracing::warn!(anchor = %name, %uci, "sandbox anchor played an illegal move");
                tokio::time::sleep(RETRY_PAUSE).await;
                None
            }
            Err(fault) => {
                tracing::warn!(anchor = %name, "sandbox anchor failed: {fault}");
                tokio::time::sleep(RETRY_PAUSE).await;
                None
            }
        }
    }
}

fn is_legal(game: &Game, uci: &str) -> bool {
    game.legal_moves().iter().any(|m| game.to_uci(*m) == uci)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arena::anchors::AnchorsFile;

    #[test]
    fn an_anchor_challenger_is_a_person_at_the_anchor_rating() {
        let anchors = AnchorsFile::builtin();
        let greedy = anchors.get("greedy").unwrap();
        let c = ChallengerConfig::anchor("GreedyGus", greedy).unwrap();
        assert_eq!(c.rating as f64, greedy.rating.unwrap().round());
        assert_eq!((c.title, c.provisional), (None, false));
        assert_eq!(c.think_time, Duration::ZERO);
        assert_eq!((c.draw_offer_chance, c.takeback_chance), (0.0, 0.0));
        let unrated = anchors.anchors.iter().find(|a| a.rating.is_none()).unwrap();
        let err = ChallengerConfig::anchor("x", unrated).unwrap_err();
        assert!(err.contains(&unrated.name), "{err}");
    }

    #[tokio::test]
    async fn a_mover_anchor_plays_legal_moves_reproducibly_to_the_end() {
        let anchors = AnchorsFile::builtin();
        let greedy = anchors.get("greedy").unwrap();
        let play = |seed| async move {
            let mut player = AnchorPlayer::new(greedy, seed);
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
        assert_eq!(AnchorPlayer::new(greedy, 1).choose(&mated).await, None);
        assert!(started.elapsed() < RETRY_PAUSE);
    }

    #[tokio::test]
    async fn an_engine_anchor_answers_with_a_legal_move() {
        let anchors = AnchorsFile::builtin();
        let ai = anchors.get("lichess-ai-1").unwrap();
        let crate::arena::anchors::AnchorKind::Uci { command, .. } = &ai.kind else {
            panic!("lichess-ai-1 is an engine")
        };
        if !command.program.exists() {
            eprintln!("skipped: {} is not installed", command.program.display());
            return;
        }
        let mut player = AnchorPlayer::new(ai, 1);
        let mut moves: Vec<String> = Vec::new();
        for _ in 0..6 {
            let game = Game::from_uci_moves(None, &moves, false).unwrap();
            moves.push(player.choose(&game).await.expect("a legal move"));
        }
        assert!(Game::from_uci_moves(None, &moves, false).is_ok());
    }
}
