//! The PGN log of the daemon's games: `<results stem>.pgn` beside the results file, one game per
//! finished game, appended by the results writer thread right after the game's record (so the
//! two never race, and a crash tears at most the last game). Each game is written in one call
//! and fsynced; a torn last game (a crash mid-write) is cut off when the file is opened, so the
//! games after it start cleanly. Besides the standard tags (Site is the game's URL) a game
//! carries what replays it exactly: `Level`, `LevelOffset`, `CoefficientsVersion`, `Seed`,
//! `Nodes`, `NoiseCp` and `HashMb` (the player is rebuilt from the level under that coefficients
//! version with that seed; see `src/player/`).

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use shakmaty::fen::Fen;
use shakmaty::san::SanPlus;
use shakmaty::{Chess, EnPassantMode, Position};

use crate::engine::Game;
use crate::results::GameRecord;

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
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)?;
        let mut text = Vec::new();
        file.read_to_end(&mut text)?;
        match repair(&text) {
            Repair::Keep => {}
            Repair::Append(tail) => {
                file.write_all(tail)?;
                file.sync_data()?;
            }
            Repair::Truncate(len) => {
                tracing::warn!(
                    "{}: the last game was cut short (a crash while writing it); removed it",
                    path.display()
                );
                file.set_len(len as u64)?;
                file.seek(SeekFrom::End(0))?;
                file.sync_all()?;
            }
        }
        Ok(PgnLog {
            file,
            site: site.trim_end_matches('/').to_string(),
        })
    }

    /// Appends `record` as one PGN game, in one write, fsynced before this returns.
    pub fn append(&mut self, record: &GameRecord) -> io::Result<()> {
        let text = format_game(record, &self.site);
        self.file.write_all(text.as_bytes())?;
        self.file.flush()?;
        self.file.sync_data()
    }
}

enum Repair {
    Keep,
    /// The last game is whole but lacks its closing blank line.
    Append(&'static [u8]),
    /// Cut the file to this length (the start of a torn game).
    Truncate(usize),
}

/// What to do with a file's tail so the next game starts cleanly. Every game written here
/// starts with `[Event ` and ends with its result token and a blank line.
fn repair(text: &[u8]) -> Repair {
    if text.is_empty() || text.ends_with(b"\n\n") {
        return Repair::Keep;
    }
    const START: &[u8] = b"[Event ";
    let last_start = text
        .windows(START.len() + 2)
        .rposition(|w| w.starts_with(b"\n\n") && &w[2..] == START)
        .map_or(0, |i| i + 2);
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
    match record.winner.as_deref() {
        Some("white") => "1-0",
        Some("black") => "0-1",
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

/// `YYYY.MM.DD` and `HH:MM:SS` (UTC) of a Unix time in ms (civil-from-days, Howard Hinnant's
/// algorithm).
fn utc_date_time(ms: i64) -> (String, String) {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let of_day = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        format!("{year:04}.{month:02}.{day:02}"),
        format!(
            "{:02}:{:02}:{:02}",
            of_day / 3600,
            of_day / 60 % 60,
            of_day % 60
        ),
    )
}

/// One game as PGN text, ending with a blank line.
pub fn format_game(record: &GameRecord, site: &str) -> String {
    let mut out = String::new();
    let mut tag = |name: &str, value: &str| {
        let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
        out.push_str(&format!("[{name} \"{escaped}\"]\n"));
    };
    let result = result_token(record);
    let we_are_white = record.color == "white";
    let (date, time) = utc_date_time(record.started_at_ms);
    let kind = if record.rated { "Rated" } else { "Casual" };
    tag(
        "Event",
        &format!("{kind} {} game", capitalized(&record.speed)),
    );
    tag("Site", &format!("{site}/{}", record.game_id));
    tag("Date", &date);
    tag("Round", "-");
    let (white, black) = if we_are_white {
        (record.account.as_str(), record.opponent.name.as_str())
    } else {
        (record.opponent.name.as_str(), record.account.as_str())
    };
    tag("White", white);
    tag("Black", black);
    tag("Result", result);
    tag("UTCDate", &date);
    tag("UTCTime", &time);
    let (white_elo, black_elo) = if we_are_white {
        (record.our_rating, record.opponent.rating)
    } else {
        (record.opponent.rating, record.our_rating)
    };
    if let Some(r) = white_elo {
        tag("WhiteElo", &format!("{r:.0}"));
    }
    if let Some(r) = black_elo {
        tag("BlackElo", &format!("{r:.0}"));
    }
    let opponent_title = record.opponent.title.as_deref().filter(|t| !t.is_empty());
    if let Some(title) = opponent_title {
        tag(
            if we_are_white {
                "BlackTitle"
            } else {
                "WhiteTitle"
            },
            title,
        );
    }
    tag(
        "TimeControl",
        &record.clock.map_or("-".to_string(), |c| {
            format!("{}+{}", c.initial_ms / 1000, c.increment_ms / 1000)
        }),
    );
    let chess960 = record.variant == "chess960";
    match record.variant.as_str() {
        "chess960" => tag("Variant", "Chess960"),
        "fromPosition" => tag("Variant", "From Position"),
        _ => {}
    }
    let fen = (record.initial_fen != "startpos").then_some(record.initial_fen.as_str());
    let mut game = Game::new(fen, chess960).ok();
    if let Some(g) = &game
        && (*g.initial_position() != Chess::default() || chess960)
    {
        tag("SetUp", "1");
        tag(
            "FEN",
            &Fen::from_position(g.initial_position(), EnPassantMode::Legal).to_string(),
        );
    }
    tag("Termination", termination(&record.status));
    tag("Level", &format!("{}", record.level));
    tag("LevelOffset", &format!("{}", record.offset));
    tag(
        "CoefficientsVersion",
        &record.coefficients_version.to_string(),
    );
    tag("Seed", &record.seed.to_string());
    tag("Nodes", &record.engine.nodes.to_string());
    tag("NoiseCp", &format!("{:.1}", record.engine.noise_cp));
    tag("HashMb", &record.engine.hash_mb.to_string());
    out.push('\n');

    let mut tokens = Vec::new();
    let mut need_number = true;
    if let Some(game) = game.as_mut() {
        let mut position = game.initial_position().clone();
        for uci in record.moves.split_whitespace() {
            let Ok(m) = game.play_uci(uci) else {
                tokens.push(format!("{{unreadable move {uci}; the rest is left out}}"));
                break;
            };
            let number = position.fullmoves().get();
            if position.turn().is_white() {
                tokens.push(format!("{number}."));
            } else if need_number {
                tokens.push(format!("{number}..."));
            }
            need_number = false;
            tokens.push(SanPlus::from_move_and_play_unchecked(&mut position, m).to_string());
        }
    } else {
        tokens.push("{unreadable initial position}".to_string());
    }
    if let Some(fault) = &record.fault {
        tokens.push(format!("{{{}}}", fault.replace(['{', '}'], "")));
    }
    tokens.push(result.to_string());
    let mut line = String::new();
    for t in tokens {
        if !line.is_empty() && line.len() + 1 + t.len() > 79 {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&t);
    }
    out.push_str(&line);
    out.push_str("\n\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Outcome, sample_record};

    #[test]
    fn a_torn_last_game_is_cut_off_and_the_next_game_starts_cleanly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.pgn");
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

        // A whole game without its blank line keeps the game and adds the line.
        std::fs::write(&path, whole.trim_end()).unwrap();
        drop(PgnLog::open(&path, "x").unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), whole);
    }

    #[test]
    fn dates_are_utc_civil_dates() {
        assert_eq!(
            utc_date_time(0),
            ("1970.01.01".to_string(), "00:00:00".to_string())
        );
        // 2024-02-29 13:14:15 UTC.
        assert_eq!(
            utc_date_time(1_709_212_455_000),
            ("2024.02.29".to_string(), "13:14:15".to_string())
        );
    }
}
