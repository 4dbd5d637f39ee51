//! Settling the games the daemon has open (`open_games.rs`) that no game actor has taken up.
//!
//! While an account is connected, [`settle`] looks after its open games that no game actor has
//! taken up — those the previous run left, accepted challenges whose `gameStart` is overdue,
//! games whose actor gave up: a game Lichess still has running is handed to the account actor
//! to play (its `gameStart` usually comes first; one game, one actor either way), with its
//! original seed (the game actor asks [`super::open_games::OpenGames::open`]); a game that ended is fetched from
//! the game export and recorded once, with a fault when our absence decided it; a challenge
//! that never became a game is forgotten.

use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tracing::Instrument;

use crate::lichess::{Client, GameId, GameJson, GameStatus, LichessError};
use crate::logging::game_span;
use crate::results::from_lichess::exported;
use crate::results::{AfterRestart, GameRecord, Outcome, fault};
use crate::unix_time::unix_ms;

use super::open_games::Unclaimed;
use super::results_writer::ResultsStub;
use super::shutdown::{RunState, sleep_or_stop};

/// How often the open games no game actor has taken up are looked at.
const RECHECK: Duration = Duration::from_secs(5);
/// How long an accepted challenge waits for its `gameStart` before it is looked up: Lichess
/// sends it within a second of the accept, and aborts a game whose first move does not come
/// within about half a minute, so a lost start must be found well before that.
pub const START_OVERDUE: Duration = Duration::from_secs(5);
/// How long an accepted challenge Lichess does not know as a game is kept: our accept may
/// still be waiting for the pacer (a minute after a 429).
const ACCEPT_PENDING: Duration = Duration::from_secs(120);

/// One open game: what its record needs that Lichess does not know.
/// The record of a game that ended with no game actor of ours playing it, from Lichess's
/// export and what we remembered. `None` when the export does not show `open.account` playing
/// it.
pub fn settled_record(open: &Unclaimed, game: &GameJson) -> Option<GameRecord> {
    let remembered = &open.game;
    let mut record = exported(game, remembered.header.clone())?;
    record.after_restart = open.from_previous_run.then_some(AfterRestart::Settled);
    let result = match record.result {
        Outcome::Win => "won",
        Outcome::Loss => "lost",
        Outcome::Draw => "drawn",
        Outcome::None => "no result",
    };
    if !remembered.played {
        // We never made a move in it: whatever the result, it says nothing of the level.
        record.fault = Some(fault::text(
            fault::NOT_PLAYED,
            &format!(
                "{} ({result}) before the daemon took the game up (its gameStart never came)",
                record.status
            ),
        ));
        return Some(record);
    }
    // A flag, or the opponent claiming the game after we left, happened because we were
    // absent: no strength in it. A win on time (the opponent flagged) or a mate, resignation
    // or agreed draw is a result like any other.
    let absent = matches!(game.status, GameStatus::Outoftime | GameStatus::Timeout);
    if absent && record.result != Outcome::Win {
        record.fault = Some(if open.from_previous_run {
            fault::text(
                fault::DAEMON_DOWN,
                &format!(
                    "{} ({result}) while the daemon was not running; settled after a restart",
                    record.status
                ),
            )
        } else {
            fault::text(
                fault::ABANDONED,
                &format!("{} ({result}) after its game actor gave up", record.status),
            )
        });
    }
    Some(record)
}

/// A game Lichess still has running that no game actor of ours plays: the account actor is
/// asked to start one (as for a `gameStart`).
#[derive(Clone, Debug, PartialEq)]
pub struct Adopt {
    pub game_id: GameId,
    /// The opponent's user id (lowercase; empty for Lichess's AI).
    pub opponent: String,
    /// When the game started (Unix ms), if the opponent is a bot: it counts against the
    /// bot-game limit.
    pub bot_started_at_ms: Option<i64>,
}

/// What the settling task tells its account actor.
#[derive(Clone, Debug, PartialEq)]
pub enum News {
    /// Start a game actor for this running game.
    Adopt(Adopt),
    /// A game against a bot was recorded from the export (it started at this Unix ms): it
    /// counts against the bot-game limit like any other.
    BotGameRecorded { game_id: GameId, started_at_ms: i64 },
}

/// Looks after the open games of `account` that no game actor has taken up (see the module
/// comment), every [`RECHECK`], until the daemon stops (the account actor replaces it at each
/// new connection, so it always uses the latest client).
pub async fn settle(
    client: Client,
    results: ResultsStub,
    account: String,
    adopt: mpsc::UnboundedSender<News>,
    mut run_state: watch::Receiver<RunState>,
) {
    loop {
        let Ok(open) = results.unclaimed(&account).await else {
            return;
        };
        let now = unix_ms();
        for game in open {
            // An accepted challenge of this run whose gameStart may still be on its way.
            let age_ms = now.saturating_sub(game.game.started_at_ms);
            if !game.game.played
                && !game.from_previous_run
                && age_ms < START_OVERDUE.as_millis() as i64
            {
                continue;
            }
            // Its log lines name the game as a game actor's would.
            let span = game_span(&tracing::Span::current(), game.game.game_id.as_str());
            settle_one(&client, &results, &adopt, &account, &game)
                .instrument(span)
                .await;
        }
        if sleep_or_stop(RECHECK, &mut run_state).await {
            return;
        }
    }
}

async fn settle_one(
    client: &Client,
    results: &ResultsStub,
    adopt: &mpsc::UnboundedSender<News>,
    account: &str,
    open: &Unclaimed,
) {
    let id = &open.game.game_id;
    let game = match client.export_game(id).await {
        Ok(game) => game,
        Err(LichessError::NotFound { .. }) => {
            if open.game.played {
                tracing::warn!("an open game is unknown to Lichess: forgotten without a record");
            } else {
                let age_ms = unix_ms().saturating_sub(open.game.started_at_ms);
                if !open.from_previous_run && age_ms < ACCEPT_PENDING.as_millis() as i64 {
                    tracing::debug!("an accepted challenge is not a game yet");
                    return;
                }
                tracing::info!("an accepted challenge never became a game: forgotten");
            }
            results.forget(id.clone()).await.ok();
            return;
        }
        Err(e) => {
            tracing::warn!("cannot look up an open game: {e}; trying again later");
            return;
        }
    };
    if game.status.is_ongoing() {
        let Some(color) = game.color_of(&account.to_lowercase()) else {
            tracing::warn!(
                "the export of an open game does not show the account playing: forgotten"
            );
            results.forget(id.clone()).await.ok();
            return;
        };
        let user = game.players.get(color.other()).user.as_ref();
        let opponent = user.map(|u| u.id.to_lowercase()).unwrap_or_default();
        let bot = user.is_some_and(|u| u.title.as_deref() == Some("BOT"));
        tracing::info!("an open game is running with no game actor of ours: taking it up");
        adopt
            .send(News::Adopt(Adopt {
                game_id: id.clone(),
                opponent,
                bot_started_at_ms: bot.then_some(game.created_at),
            }))
            .ok();
        return;
    }
    let Some(record) = settled_record(open, &game) else {
        tracing::warn!("the export of an open game does not show the account playing: forgotten");
        results.forget(id.clone()).await.ok();
        return;
    };
    tracing::info!(
        result = %record.result, status = %record.status,
        fault = record.fault.as_deref().unwrap_or(""),
        "game over with no game actor of ours playing it: settled from the export"
    );
    let bot_game = record.opponent.bot.then(|| News::BotGameRecorded {
        game_id: id.clone(),
        started_at_ms: record.started_at_ms,
    });
    match results.append(record).await {
        Ok(true) => {}
        Ok(false) => tracing::info!("already in the results log"),
        Err(e) => tracing::error!("results log: {e}"),
    }
    if let Some(news) = bot_game {
        adopt.send(news).ok();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::open_games::OpenGame;
    use crate::daemon::open_games::tests::open_game;
    use crate::results::Source;

    /// The export of a game of ladder-l2 (black) against alice.
    fn export(status: &str, winner: Option<&str>) -> GameJson {
        let winner = winner.map_or(String::new(), |w| format!(r#","winner":"{w}""#));
        serde_json::from_str(&format!(
            r#"{{"id":"g1","rated":true,"variant":"standard","speed":"blitz","perf":"blitz",
            "createdAt":1700000000000,"lastMoveAt":1700000100000,"status":"{status}",
            "players":{{"white":{{"user":{{"id":"alice","name":"Alice"}},"rating":1500}},
            "black":{{"user":{{"id":"ladder-l2","name":"Ladder-L2","title":"BOT"}},"rating":800}}}},
            "moves":"e4 e5 Nf3","clock":{{"initial":180,"increment":2,"totalTime":260}}{winner}}}"#
        ))
        .unwrap()
    }

    fn left_by_previous_run(game: OpenGame) -> Unclaimed {
        Unclaimed {
            game,
            from_previous_run: true,
        }
    }

    #[test]
    fn a_settled_record_keeps_what_we_remembered_and_faults_only_our_absence() {
        let open = left_by_previous_run(open_game("g1", 7));
        let r = settled_record(&open, &export("outoftime", Some("white"))).unwrap();
        assert_eq!((r.result, r.status.as_str()), (Outcome::Loss, "outoftime"));
        assert_eq!(
            (r.header.seed, r.header.source, r.header.level),
            (7, Source::Sandbox, 2.0)
        );
        assert_eq!(r.header.engine, open.game.header.engine);
        assert_eq!(
            r.header.coefficients_version,
            open.game.header.coefficients_version
        );
        assert_eq!(r.moves, "e2e4 e7e5 g1f3");
        assert_eq!(r.after_restart, Some(AfterRestart::Settled));
        assert_eq!(r.fault_kind(), Some(fault::DAEMON_DOWN));
        // The opponent claimed a draw after we left: no strength in it either.
        let r = settled_record(&open, &export("timeout", None)).unwrap();
        assert_eq!(
            (r.result, r.fault_kind()),
            (Outcome::Draw, Some(fault::DAEMON_DOWN))
        );
        // Results that are not our absence count.
        let r = settled_record(&open, &export("outoftime", Some("black"))).unwrap();
        assert_eq!((r.result, r.fault.as_deref()), (Outcome::Win, None));
        let r = settled_record(&open, &export("resign", Some("white"))).unwrap();
        assert_eq!((r.result, r.fault.as_deref()), (Outcome::Loss, None));
        // Not our game: nothing to record.
        let mut other = open.clone();
        other.game.header.account = "ladder-l9".into();
        assert!(settled_record(&other, &export("mate", Some("white"))).is_none());
    }

    #[test]
    fn a_game_we_never_moved_in_or_whose_actor_gave_up_is_faulted_for_what_it_was() {
        // Accepted in this run, its gameStart lost: whatever the result, nothing of the level.
        let setup_game = open_game("g1", 7);
        let never = Unclaimed {
            game: OpenGame {
                played: false,
                ..setup_game.clone()
            },
            from_previous_run: false,
        };
        for (status, winner) in [("noStart", Some("white")), ("outoftime", Some("black"))] {
            let r = settled_record(&never, &export(status, winner)).unwrap();
            assert_eq!(r.fault_kind(), Some(fault::NOT_PLAYED), "{status}");
            assert_eq!(r.after_restart, None, "no restart in between");
            assert_eq!(r.header.seed, 7);
        }
        // Played in this run until its actor gave up, then lost on time.
        let abandoned = Unclaimed {
            game: setup_game,
            from_previous_run: false,
        };
        let r = settled_record(&abandoned, &export("outoftime", Some("white"))).unwrap();
        assert_eq!(r.fault_kind(), Some(fault::ABANDONED));
        assert_eq!(r.after_restart, None);
    }
}
