//! PGN of arena games, appended in schedule order (games finishing out of order wait for the
//! ones before them), so a run with a given seed always adds the same games in the same order.
//! Under a clock each move carries the mover's time left, as Lichess writes it (`[%clk]`).

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use shakmaty::fen::Fen;
use shakmaty::{Chess, EnPassantMode};

use super::game::PlayedGame;
use super::roster::PlayerSpec;
use crate::lichess::Clock;
use crate::pgn::PgnText;

/// Everything a PGN header needs besides the game itself.
pub struct PgnContext<'a> {
    pub event: &'a str,
    /// `YYYY.MM.DD`.
    pub date: &'a str,
    pub players: &'a [PlayerSpec],
    pub opening_name: &'a str,
    pub tc: Option<Clock>,
}

/// One game as PGN text (ends with a blank line).
pub fn format_game(played: &PlayedGame, ctx: &PgnContext<'_>) -> String {
    let white = &ctx.players[played.scheduled.white];
    let black = &ctx.players[played.scheduled.black];
    let initial = played.game.initial_position();
    let mut pgn = PgnText::new(initial.clone());
    pgn.tag("Event", ctx.event);
    pgn.tag("Site", "ladder arena");
    pgn.tag("Date", ctx.date);
    pgn.tag("Round", &(played.scheduled.index + 1).to_string());
    pgn.tag("White", &white.name);
    pgn.tag("Black", &black.name);
    pgn.tag("Result", played.result_str());
    if let Some(r) = white.rating {
        pgn.tag("WhiteElo", &format!("{r:.0}"));
    }
    if let Some(r) = black.rating {
        pgn.tag("BlackElo", &format!("{r:.0}"));
    }
    pgn.tag(
        "TimeControl",
        &ctx.tc.map_or("-".to_string(), |tc| tc.to_string()),
    );
    if *initial != Chess::default() {
        pgn.tag("SetUp", "1");
        pgn.tag(
            "FEN",
            &Fen::from_position(initial, EnPassantMode::Legal).to_string(),
        );
    }
    pgn.tag("Opening", ctx.opening_name);
    pgn.tag("GameSeed", &played.scheduled.seed.to_string());
    pgn.tag(
        "Termination",
        match played.termination {
            super::game::Termination::Rules(_) => "normal",
            super::game::Termination::Time { .. } => "time forfeit",
            super::game::Termination::Fault { .. } => "rules infraction",
        },
    );
    for (ply, m) in played.game.moves().iter().enumerate() {
        if ply == played.opening_plies && ply > 0 {
            pgn.comment("end of opening");
        }
        pgn.play(*m);
        let after = ply
            .checked_sub(played.opening_plies)
            .and_then(|k| played.clocks_after_ms.get(k));
        if let Some(&ms) = after {
            pgn.comment(&clk(ms));
        }
    }
    pgn.comment(&played.termination.describe());
    pgn.finish(played.result_str())
}

/// Lichess's clock comment: the mover's time left after the move, `[%clk H:MM:SS]`.
fn clk(ms: u64) -> String {
    let s = ms / 1000;
    format!("[%clk {}:{:02}:{:02}]", s / 3600, s / 60 % 60, s % 60)
}

/// Appends games to a PGN file in the order of `expected` (the shard's game indices), holding
/// back games that finish before an earlier one.
pub struct PgnWriter {
    file: File,
    expected: Vec<usize>,
    next: usize,
    pending: BTreeMap<usize, String>,
}

impl PgnWriter {
    /// Opens `path` for appending (creating it): like the results file, a new run adds its
    /// games after the ones already there and never truncates them.
    pub fn append(path: &Path, mut expected: Vec<usize>) -> io::Result<PgnWriter> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        expected.sort_unstable();
        let mut file = OpenOptions::new().create(true).append(true).open(path)?;
        // A file cut short (a crash mid-game) gets a blank line, so the next game's tags start
        // a game of their own.
        let len = file.metadata()?.len();
        if len > 0 && !ends_with_blank_line(path, len)? {
            file.write_all(b"\n\n")?;
        }
        Ok(PgnWriter {
            file,
            expected,
            next: 0,
            pending: BTreeMap::new(),
        })
    }

    /// Queues game `index`'s text and writes every game that is now in order.
    pub fn add(&mut self, index: usize, text: String) -> io::Result<()> {
        self.pending.insert(index, text);
        while let Some(&want) = self.expected.get(self.next) {
            let Some(text) = self.pending.remove(&want) else {
                break;
            };
            self.file.write_all(text.as_bytes())?;
            self.next += 1;
        }
        self.file.flush()
    }

    /// Writes whatever is still held back (games after one that never finished).
    pub fn finish(mut self) -> io::Result<()> {
        for text in std::mem::take(&mut self.pending).into_values() {
            self.file.write_all(text.as_bytes())?;
        }
        self.file.flush()
    }
}

/// Whether the `len`-byte file at `path` ends with an empty line (as every game written here
/// does).
fn ends_with_blank_line(path: &Path, len: u64) -> io::Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    let mut tail = [0u8; 2];
    let n = len.min(2) as usize;
    let mut f = File::open(path)?;
    f.seek(SeekFrom::Start(len - n as u64))?;
    f.read_exact(&mut tail[..n])?;
    Ok(&tail[..n] == b"\n\n")
}
