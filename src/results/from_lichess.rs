//! A Lichess export as results records: an exported game of a ladder account turned into a
//! [`GameRecord`] (the daemon settles a game that ended while it was down with it, `ladder
//! calibrate --fetch` fills gaps in the log with it).
//!
//! An exported game has no seed or engine parameters: it is marked with `engine.nodes == 0`
//! (calibration's `is_fetched`). Its coefficients version is inferred from the log
//! ([`VersionTimeline`]): a fetched game takes version v only when logged games of the same
//! account with version v were played both before and after it, or when it is newer than the
//! account's last logged game and that game already had the current version. Otherwise its
//! version is 0 and calibration leaves it out (counted as "version not inferable"), because a
//! version change can happen at any time and a game on the wrong side of it would be rated
//! against the wrong coefficients.

use std::collections::BTreeMap;

use shakmaty::fen::Fen;
use shakmaty::san::San;
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Chess, Position};

use super::fields::{Keyed, RecordStatus};
use super::header::GameHeader;
use super::{ClockRecord, GameRecord, OpponentRecord, Outcome, SCHEMA_VERSION};
use crate::lichess::{GameJson, GameStatus};

/// Per account, the (start time, coefficients version) of the logged games, sorted by time.
#[derive(Clone, Debug, Default)]
pub struct VersionTimeline {
    games: BTreeMap<String, Vec<(i64, u32)>>,
    current: u32,
}

impl VersionTimeline {
    /// Builds the timeline from logged (not fetched) records; `current` is the version in force.
    pub fn new(records: &[GameRecord], current: u32) -> VersionTimeline {
        let mut games: BTreeMap<String, Vec<(i64, u32)>> = BTreeMap::new();
        for r in records.iter().filter(|r| r.header.engine.nodes != 0) {
            games
                .entry(r.header.account.to_lowercase())
                .or_default()
                .push((r.started_at_ms, r.header.coefficients_version));
        }
        for list in games.values_mut() {
            list.sort_unstable();
        }
        VersionTimeline { games, current }
    }

    /// The version a game of `account` started at `t` was played with, when the log says so.
    pub fn infer(&self, account: &str, t: i64) -> Option<u32> {
        let list = self.games.get(&account.to_lowercase())?;
        let after = list.partition_point(|&(s, _)| s <= t);
        let before = after.checked_sub(1).map(|i| list[i]);
        match (before, list.get(after)) {
            (Some((_, a)), Some(&(_, b))) if a == b => Some(a),
            (Some((_, a)), None) if a == self.current => Some(a),
            _ => None,
        }
    }

    /// The newest logged start time of `account` (the export resumes after it).
    pub fn newest(&self, account: &str) -> Option<i64> {
        self.games
            .get(&account.to_lowercase())
            .and_then(|l| l.last())
            .map(|&(t, _)| t)
    }
}

/// One ladder account as the fetch sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct AccountRef {
    pub username: String,
    pub level: f64,
}

/// Converts an exported game of `account` to a record, its coefficients version inferred from
/// `timeline`; `None` when the account did not play it.
pub fn to_record(
    game: &GameJson,
    account: &AccountRef,
    timeline: &VersionTimeline,
) -> Option<GameRecord> {
    let version = timeline
        .infer(&account.username, game.created_at)
        .unwrap_or(0);
    exported(
        game,
        GameHeader::fetched(&account.username, account.level, version),
    )
}

/// The record of an exported game from the side of `header.account`, with `header` as it is
/// (a fetched game's, or the one the daemon remembered of a game it played); `None` when that
/// account did not play it.
pub fn exported(game: &GameJson, header: GameHeader) -> Option<GameRecord> {
    let color = game.color_of(&header.account.to_lowercase())?;
    let us = game.players.get(color);
    let them = game.players.get(color.other());
    let result = match (game.status, game.winner) {
        (
            GameStatus::Aborted | GameStatus::NoStart | GameStatus::Created | GameStatus::Started,
            _,
        ) => Outcome::None,
        (_, Some(w)) if w == color => Outcome::Win,
        (_, Some(_)) => Outcome::Loss,
        (_, None) => Outcome::Draw,
    };
    let status = RecordStatus::from(game.status);
    let initial_fen = game
        .initial_fen
        .clone()
        .filter(|f| !f.is_empty())
        .unwrap_or_else(|| "startpos".to_string());
    let moves = game.moves.as_deref().unwrap_or("");
    let opponent_user = them.user.as_ref();
    Some(GameRecord {
        schema: SCHEMA_VERSION,
        game_id: game.id.clone(),
        header,
        started_at_ms: game.created_at,
        finished_at_ms: game.last_move_at,
        rated: game.rated,
        speed: Keyed::parse(game.speed.key()),
        perf: Keyed::parse(game.perf.key()),
        variant: game.variant.clone(),
        initial_fen: initial_fen.clone(),
        clock: game.clock.map(|c| ClockRecord {
            initial_ms: c.initial.saturating_mul(1000),
            increment_ms: c.increment.saturating_mul(1000),
        }),
        color: color.into(),
        opponent: OpponentRecord {
            id: opponent_user.map_or_else(|| "ai".to_string(), |u| u.id.clone()),
            name: opponent_user.map_or_else(
                || format!("AI level {}", them.ai_level.unwrap_or(0)),
                |u| u.name.clone(),
            ),
            title: opponent_user.and_then(|u| u.title.clone()),
            // Lichess's AI has no rating: such games are left out as unrated opponents.
            rating: them.rating.map(f64::from),
            provisional: them.provisional,
            rd: None,
            bot: opponent_user.and_then(|u| u.title.as_deref()) == Some("BOT"),
        },
        our_rating: us.rating.map(f64::from),
        result,
        status,
        winner: game.winner.map(Keyed::from),
        moves: san_to_uci(&initial_fen, moves).unwrap_or_else(|| moves.to_string()),
        fault: None,
        after_restart: None,
        opening_plies: None,
    })
}

/// The export's SAN moves as UCI, as the log stores them; `None` when they do not replay
/// (a variant, a bad FEN), in which case the SAN is kept: calibration only counts the moves.
fn san_to_uci(initial_fen: &str, san: &str) -> Option<String> {
    let mut pos: Chess = if initial_fen == "startpos" {
        Chess::default()
    } else {
        Fen::from_ascii(initial_fen.as_bytes())
            .ok()?
            .into_position(CastlingMode::Standard)
            .ok()?
    };
    let mut out = Vec::new();
    for token in san.split_whitespace() {
        let m = San::from_ascii(token.as_bytes()).ok()?.to_move(&pos).ok()?;
        out.push(UciMove::from_move(m, CastlingMode::Standard).to_string());
        pos.play_unchecked(m);
    }
    Some(out.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::sample_record;

    #[test]
    fn versions_are_inferred_only_between_logged_games_of_one_version() {
        let mut records = Vec::new();
        for (id, t, v) in [("a", 100, 1), ("b", 200, 1), ("c", 300, 2), ("d", 400, 2)] {
            let mut r = sample_record(id, Outcome::Win);
            r.started_at_ms = t;
            r.header.coefficients_version = v;
            records.push(r);
        }
        let tl = VersionTimeline::new(&records, 2);
        assert_eq!(tl.infer("ladder-l3", 150), Some(1));
        assert_eq!(tl.infer("LADDER-L3", 250), None, "across a version change");
        assert_eq!(tl.infer("ladder-l3", 350), Some(2));
        assert_eq!(
            tl.infer("ladder-l3", 500),
            Some(2),
            "after the last, current"
        );
        assert_eq!(tl.infer("ladder-l3", 50), None, "before the first");
        assert_eq!(tl.infer("someone-else", 150), None);
        assert_eq!(
            VersionTimeline::new(&records, 3).infer("ladder-l3", 500),
            None
        );
        assert_eq!(tl.newest("ladder-l3"), Some(400));
    }

    #[test]
    fn san_replays_to_uci() {
        assert_eq!(
            san_to_uci("startpos", "e4 e5 Nf3 Nc6 Bb5 a6 O-O").as_deref(),
            Some("e2e4 e7e5 g1f3 b8c6 f1b5 a7a6 e1g1")
        );
        assert_eq!(san_to_uci("startpos", "e4 Ke2"), None);
    }
}
