//! The records of a match's games: a results record for each side that is one of our levels
//! (its header made by the level), one line for a game between anchors, the PGN, written as
//! each game finishes; and the games a resumed match finds already recorded.

use std::collections::HashMap;
use std::path::Path;

use anyhow::Context;
use shakmaty::Color;

use crate::lichess::{Clock, GameId};
use crate::results::{
    ClockRecord, GameRecord, Keyed, OpponentRecord, Outcome, ResultsLog, SCHEMA_VERSION, Source,
};

use super::anchor_fit;
use super::game::{PlayedGame, Termination};
use super::openings::Opening;
use super::pgn;
use super::report;
use super::roster::Roster;
use super::schedule::ScheduledGame;

/// Resuming: the same command (same seed, so the same match id and schedule) skips the games
/// its results file already holds, and returns them as the report counts them, so a resumed
/// match reports all its games, not only those played this time.
pub(super) fn skip_recorded_games(
    games: &mut Vec<ScheduledGame>,
    log: &ResultsLog,
    match_id: &str,
    results: &Path,
) -> Vec<report::Scored> {
    let scheduled = games.len();
    let (recorded, kept): (Vec<ScheduledGame>, Vec<ScheduledGame>) =
        games.drain(..).partition(|g| {
            let id = game_id(match_id, g.index);
            log.contains(&id)
                || log.contains(&format!("{id}-white"))
                || log.contains(&format!("{id}-black"))
        });
    *games = kept;
    if recorded.is_empty() {
        return Vec::new();
    }
    tracing::info!(
        "resuming {match_id}: {} of {scheduled} games already in {}, {} to play",
        recorded.len(),
        results.display(),
        games.len()
    );
    recorded_scores(&recorded, match_id, results)
}

/// The scores of `games` as recorded in `results`: from a level's record (White's, or Black's
/// turned round), or from the line of a game between anchors. A game without a result is left
/// out, as the report leaves it out when it is played.
fn recorded_scores(games: &[ScheduledGame], match_id: &str, results: &Path) -> Vec<report::Scored> {
    let paths = [results.to_path_buf()];
    let mut by_id: HashMap<String, (f64, bool)> = HashMap::new();
    match crate::results::read_results(&paths) {
        Ok(read) => {
            for r in read.records {
                let Some(score) = r.result.score() else {
                    continue;
                };
                let white_score = if r.color == "white" {
                    score
                } else {
                    1.0 - score
                };
                let id = r
                    .game_id
                    .as_str()
                    .strip_suffix("-white")
                    .or_else(|| r.game_id.as_str().strip_suffix("-black"))
                    .unwrap_or(r.game_id.as_str())
                    .to_string();
                by_id.entry(id).or_insert((white_score, r.fault.is_some()));
            }
        }
        Err(e) => tracing::warn!(
            "cannot read the resumed games of {}: {e}",
            results.display()
        ),
    }
    if let Ok((anchor_games, _)) = anchor_fit::read_anchor_games(&paths) {
        for g in anchor_games {
            if let Some(score) = g.white_score() {
                by_id
                    .entry(g.game_id.clone())
                    .or_insert((score, g.fault.is_some()));
            }
        }
    }
    games
        .iter()
        .filter_map(|g| {
            let &(white_score, fault) = by_id.get(&game_id(match_id, g.index))?;
            Some(report::Scored {
                white: g.white,
                black: g.black,
                white_score,
                fault,
            })
        })
        .collect()
}

/// The `--pgn` file, if any, opened to append `games` in schedule order.
pub(super) fn open_pgn(
    path: Option<&Path>,
    games: &[ScheduledGame],
) -> anyhow::Result<Option<pgn::PgnWriter>> {
    let Some(path) = path else {
        return Ok(None);
    };
    let writer = pgn::PgnWriter::append(path, games.iter().map(|g| g.index).collect())
        .with_context(|| format!("opening PGN file {}", path.display()))?;
    Ok(Some(writer))
}

/// Where every game goes as it finishes: the results file (a record for each side that is one
/// of our levels, or one anchor-game record) and the PGN.
pub(super) struct GameWriter<'a> {
    pub(super) log: ResultsLog,
    /// The results file's path, for errors.
    pub(super) results: &'a Path,
    pub(super) pgn: Option<pgn::PgnWriter>,
    /// The PGN `Date` of every game: the day the match started.
    pub(super) date: String,
    pub(super) record: RecordContext<'a>,
}

impl GameWriter<'_> {
    /// Writes `played`'s records and its PGN.
    pub(super) fn write(&mut self, played: &PlayedGame, roster: &Roster) -> anyhow::Result<()> {
        for record in records_of(played, roster, &self.record) {
            self.log
                .append(&record)
                .with_context(|| format!("writing {}", self.results.display()))?;
        }
        if let Some(record) = anchor_record_of(played, roster, &self.record) {
            self.log
                .append_line(&record.game_id, &record)
                .with_context(|| format!("writing {}", self.results.display()))?;
        }
        if let Some(w) = self.pgn.as_mut() {
            let ctx = pgn::PgnContext {
                event: self.record.match_id,
                date: &self.date,
                players: &roster.players,
                opening_name: &self.record.openings[played.scheduled.opening].name,
                tc: self.record.tc,
            };
            w.add(played.scheduled.index, pgn::format_game(played, &ctx))
                .context("writing the PGN")?;
        }
        Ok(())
    }
}

pub(super) struct RecordContext<'a> {
    pub(super) match_id: &'a str,
    pub(super) tc: Option<Clock>,
    pub(super) perf: &'a str,
    pub(super) openings: &'a [Opening],
}

/// The results records of a game: one for each side that is one of our levels, from its side.
fn records_of(played: &PlayedGame, roster: &Roster, ctx: &RecordContext<'_>) -> Vec<GameRecord> {
    let s = played.scheduled;
    let opening = &ctx.openings[s.opening];
    let moves: Vec<String> = played
        .game
        .moves()
        .iter()
        .map(|m| played.game.to_uci(*m))
        .collect();
    let mut out = Vec::new();
    for (color, me, them) in [
        (Color::White, s.white, s.black),
        (Color::Black, s.black, s.white),
    ] {
        let seed = *played.seeds.get(color);
        let Some(params) = roster.level_params(me) else {
            continue;
        };
        let opponent = &roster.players[them];
        let result = match played.winner {
            None => Outcome::Draw,
            Some(w) if w == color => Outcome::Win,
            Some(_) => Outcome::Loss,
        };
        let fault = match &played.termination {
            Termination::Fault { side, .. } => Some(format!(
                "{} side ({}) {}",
                if *side == color {
                    "our"
                } else {
                    "the opponent's"
                },
                roster.players[if side.is_white() { s.white } else { s.black }].name,
                played.termination.describe()
            )),
            _ => None,
        };
        out.push(GameRecord {
            schema: SCHEMA_VERSION,
            game_id: GameId::new(format!(
                "{}-{}",
                game_id(ctx.match_id, s.index),
                color_name(color)
            )),
            header: params.game_header(Source::Arena, &roster.players[me].name, seed),
            started_at_ms: played.started_at_ms,
            finished_at_ms: played.finished_at_ms,
            rated: true,
            speed: Keyed::parse(
                &ctx.tc
                    .map_or_else(|| ctx.perf.to_string(), |tc| tc.speed().to_string()),
            ),
            perf: Keyed::parse(ctx.perf),
            variant: "standard".to_string(),
            initial_fen: opening
                .fen
                .clone()
                .unwrap_or_else(|| "startpos".to_string()),
            clock: ctx.tc.map(|tc| ClockRecord {
                initial_ms: tc.initial_ms,
                increment_ms: tc.increment_ms,
            }),
            color: Keyed::parse(color_name(color)),
            opponent: OpponentRecord {
                id: opponent.name.clone(),
                name: opponent.name.clone(),
                title: None,
                rating: opponent.rating,
                provisional: false,
                rd: None,
                bot: true,
            },
            our_rating: None,
            result,
            status: Keyed::parse(played.termination.status()),
            winner: played.winner.map(|w| Keyed::parse(color_name(w))),
            moves: moves.join(" "),
            fault,
            after_restart: None,
            opening_plies: Some(played.opening_plies as u32),
        });
    }
    out
}

/// The id of game `index` of a match; a level's record appends its colour.
fn game_id(match_id: &str, index: usize) -> String {
    format!("{match_id}-{index:05}")
}

/// The record of a game in which neither side is one of our levels (anchor against anchor).
fn anchor_record_of(
    played: &PlayedGame,
    roster: &Roster,
    ctx: &RecordContext<'_>,
) -> Option<anchor_fit::AnchorGameRecord> {
    let s = played.scheduled;
    if roster.level_params(s.white).is_some() || roster.level_params(s.black).is_some() {
        return None;
    }
    let opening = &ctx.openings[s.opening];
    Some(anchor_fit::AnchorGameRecord {
        record: anchor_fit::ANCHOR_GAME.to_string(),
        schema: SCHEMA_VERSION,
        game_id: game_id(ctx.match_id, s.index),
        white: roster.players[s.white].name.clone(),
        black: roster.players[s.black].name.clone(),
        result: played.result_str().to_string(),
        status: played.termination.status().to_string(),
        initial_fen: opening
            .fen
            .clone()
            .unwrap_or_else(|| "startpos".to_string()),
        moves: played
            .game
            .moves()
            .iter()
            .map(|m| played.game.to_uci(*m))
            .collect::<Vec<_>>()
            .join(" "),
        seed: s.seed,
        started_at_ms: played.started_at_ms,
        finished_at_ms: played.finished_at_ms,
        fault: match &played.termination {
            Termination::Fault { side, .. } => Some(format!(
                "{} {}",
                roster.players[if side.is_white() { s.white } else { s.black }].name,
                played.termination.describe()
            )),
            _ => None,
        },
    })
}

fn color_name(c: Color) -> &'static str {
    if c.is_white() { "white" } else { "black" }
}
