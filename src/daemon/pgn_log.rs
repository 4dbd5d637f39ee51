//! The PGN log of the daemon's games: `<results stem>.pgn` beside the results file, one game per
//! finished game, appended by the results writer thread right after the game's record (so the
//! two never race, and a crash tears at most the last game). Each game is written in one call
//! and fsynced; a torn last game (a crash mid-write) is cut off when the file is opened, so the
//! games after it start cleanly. Besides the standard tags (Site is the game's URL) a game
//! carries what replays it exactly: `Level`, `LevelOffset`, `CoefficientsVersion`, `Seed`,
//! `Nodes`, `NoiseCp` and `HashMb` (the player is rebuilt from the level under that coefficients
//! version with that seed; see `src/player/`).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use shakmaty::fen::Fen;
use shakmaty::{Chess, EnPassantMode};

use crate::engine::Game;
use crate::lichess::Color;
use crate::pgn::PgnText;
use crate::results::{GameRecord, Keyed, open_appending};
use crate::unix_time::UtcDateTime;

/// The PGN file that goes with a results file: same directory, same stem, `.pgn`.
pub fn pgn_path(results: &Path) -> PathBuf {
    results.with_extension("pgn")
}

/// An append-only PGN file.
pub struct PgnLog {
    file: File,
    /// The game URL prefix (`https://lichess.org`), the game id is appended.
    site: String,
}

impl PgnLog {
    /// Opens (creating) `path` for appending, cutting off a torn last game.
    pub fn open(path: &Path, site: &str) -> io::Result<PgnLog> {
        let mut file = open_appending(path)?;
        // Only the tail: the log grows for months, and no game is near this long.
        let len = file.metadata()?.len();
        let tail_start = len.saturating_sub(REPAIR_WINDOW);
        file.seek(SeekFrom::Start(tail_start))?;
        let mut text = Vec::new();
        file.read_to_end(&mut text)?;
        match repair(&text, tail_start == 0) {
            Repair::Keep => {}
            Repair::Append(tail) => {
                file.write_all(tail)?;
                file.sync_data()?;
            }
            Repair::Truncate(cut) => {
                tracing::warn!(
                    "{}: the last game was cut short (a crash while writing it); removed it",
                    path.display()
                );
                file.set_len(tail_start + cut as u64)?;
                file.seek(SeekFrom::End(0))?;
                file.sync_all()?;
            }
        }
        Ok(PgnLog {
            file,
            site: site.trim_end_matches('/').to_string(),
        })
    }

    /// Appends `record` as one PGN game, whole or not at all, fsynced before this returns
    /// ([`crate::append_file`]).
    pub fn append(&mut self, record: &GameRecord) -> io::Result<()> {
        let text = format_game(record, &self.site);
        crate::append_file::append_whole(&mut self.file, text.as_bytes())
    }
}

enum Repair {
    Keep,
    /// The last game is whole but lacks its closing blank line.
    Append(&'static [u8]),
    /// Cut the file to this length (the start of a torn game).
    Truncate(usize),
}

/// How much of the log's end is read to repair it: far more than any game.
const REPAIR_WINDOW: u64 = 1 << 20;

/// What to do with a file's tail (`text`, the whole file when `whole_file`) so the next game
/// starts cleanly. Every game written here starts with `[Event ` and ends with its result
/// token and a blank line.
fn repair(text: &[u8], whole_file: bool) -> Repair {
    if text.is_empty() || text.ends_with(b"\n\n") {
        return Repair::Keep;
    }
    const START: &[u8] = b"[Event ";
    let found = text
        .windows(START.len() + 2)
        .rposition(|w| w.starts_with(b"\n\n") && &w[2..] == START)
        .map(|i| i + 2);
    let last_start = match found {
        Some(i) => i,
        None if whole_file => 0,
        // No game starts in the window: nothing to cut safely, only close the tail.
        None => return Repair::Append(b"\n\n"),
    };
    let last = String::from_utf8_lossy(&text[last_start..]);
    let whole = last.starts_with("[Event ")
        && last.contains("\n\n")
        && ["1-0", "0-1", "1/2-1/2", "*"]
            .iter()
            .any(|r| last.trim_end().ends_with(r));
    if whole {
        Repair::Append(if text.ends_with(b"\n") {
            b"\n"
        } else {
            b"\n\n"
        })
    } else {
        Repair::Truncate(last_start)
    }
}

/// The PGN result token of a record.
fn result_token(record: &GameRecord) -> &'static str {
    match record.winner.as_ref().and_then(Keyed::known) {
        Some(Color::White) => "1-0",
        Some(Color::Black) => "0-1",
        _ if record.result == crate::results::Outcome::Draw => "1/2-1/2",
        _ => "*",
    }
}

/// Lichess's Termination tag for a status.
fn termination(status: &str) -> &'static str {
    match status {
        "outoftime" | "timeout" => "Time forfeit",
        "aborted" | "noStart" => "Abandoned",
        "cheat" => "Rules infraction",
        "started" | "created" | "unknownFinish" => "Unterminated",
        _ => "Normal",
    }
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// One game as PGN text, ending with a blank line.
pub fn format_game(record: &GameRecord, site: &str) -> String {
    let result = result_token(record);
    let we_are_white = record.color == "white";
    let started = UtcDateTime::of_unix_ms(record.started_at_ms);
    let (date, time) = (started.date('.'), started.time());
    let chess960 = record.variant == "chess960";
    let fen = (record.initial_fen != "startpos").then_some(record.initial_fen.as_str());
    let mut game = Game::new(fen, chess960).ok();
    let initial = game.as_ref().map(|g| g.initial_position().clone());
    let mut pgn = PgnText::new(initial.clone().unwrap_or_default());
    let kind = if record.rated { "Rated" } else { "Casual" };
    pgn.tag(
        "Event",
        &format!("{kind} {} game", capitalized(record.speed.as_str())),
    );
    pgn.tag("Site", &format!("{site}/{}", record.game_id));
    pgn.tag("Date", &date);
    pgn.tag("Round", "-");
    let (white, black) = if we_are_white {
        (
            record.header.account.as_str(),
            record.opponent.name.as_str(),
        )
    } else {
        (
            record.opponent.name.as_str(),
            record.header.account.as_str(),
        )
    };
    pgn.tag("White", white);
    pgn.tag("Black", black);
    pgn.tag("Result", result);
    pgn.tag("UTCDate", &date);
    pgn.tag("UTCTime", &time);
    let (white_elo, black_elo) = if we_are_white {
        (record.our_rating, record.opponent.rating)
    } else {
        (record.opponent.rating, record.our_rating)
    };
    if let Some(r) = white_elo {
        pgn.tag("WhiteElo", &format!("{r:.0}"));
    }
    if let Some(r) = black_elo {
        pgn.tag("BlackElo", &format!("{r:.0}"));
    }
    if let Some(title) = record.opponent.title.as_deref().filter(|t| !t.is_empty()) {
        let key = if we_are_white {
            "BlackTitle"
        } else {
            "WhiteTitle"
        };
        pgn.tag(key, title);
    }
    pgn.tag(
        "TimeControl",
        &record.clock.map_or("-".to_string(), |c| {
            format!("{}+{}", c.initial_ms / 1000, c.increment_ms / 1000)
        }),
    );
    match record.variant.as_str() {
        "chess960" => pgn.tag("Variant", "Chess960"),
        "fromPosition" => pgn.tag("Variant", "From Position"),
        _ => {}
    }
    if let Some(initial) = &initial
        && (*initial != Chess::default() || chess960)
    {
        pgn.tag("SetUp", "1");
        pgn.tag(
            "FEN",
            &Fen::from_position(initial, EnPassantMode::Legal).to_string(),
        );
    }
    pgn.tag("Termination", termination(record.status.as_str()));
    pgn.tag("Level", &format!("{}", record.header.level));
    pgn.tag("LevelOffset", &format!("{}", record.header.offset));
    pgn.tag(
        "CoefficientsVersion",
        &record.header.coefficients_version.to_string(),
    );
    pgn.tag("Seed", &record.header.seed.to_string());
    pgn.tag("Nodes", &record.header.engine.nodes.to_string());
    pgn.tag("NoiseCp", &format!("{:.1}", record.header.engine.noise_cp));
    pgn.tag("HashMb", &record.header.engine.hash_mb.to_string());
    match game.as_mut() {
        Some(game) => {
            for uci in record.moves.split_whitespace() {
                let Ok(m) = game.play_uci(uci) else {
                    pgn.comment(&format!("unreadable move {uci}; the rest is left out"));
                    break;
                };
                pgn.play(m);
            }
        }
        None => pgn.comment("unreadable initial position"),
    }
    if let Some(fault) = &record.fault {
        pgn.comment(fault);
    }
    pgn.finish(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Outcome, sample_record};
    use crate::test_files::temp_file;

    #[test]
    fn a_torn_last_game_is_cut_off_and_the_next_game_starts_cleanly() {
        let (_dir, path) = temp_file("r.pgn");
        let mut first = sample_record("g1", Outcome::Win);
        first.moves = "e2e4 e7e5".into();
        let whole = format_game(&first, "https://lichess.org");
        let torn = &whole[..whole.len() / 2];
        std::fs::write(&path, format!("{whole}{torn}")).unwrap();
        let mut log = PgnLog::open(&path, "https://lichess.org").unwrap();
        log.append(&sample_record("g2", Outcome::Draw)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.matches("[Event ").count(), 2, "{text}");
        assert!(text.starts_with(&whole));
        assert!(text.contains("[Site \"https://lichess.org/g2\"]"));

        // A log longer than the window that is read: the torn game is still cut exactly.
        let many = whole.repeat((REPAIR_WINDOW as usize) / whole.len() + 10);
        std::fs::write(&path, format!("{many}{torn}")).unwrap();
        drop(PgnLog::open(&path, "x").unwrap());
        assert!(std::fs::read_to_string(&path).unwrap() == many);

        // A whole game without its blank line keeps the game and adds the line.
        std::fs::write(&path, whole.trim_end()).unwrap();
        drop(PgnLog::open(&path, "x").unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), whole);
    }
}
