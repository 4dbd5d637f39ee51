//! Opening positions for arena games: a built-in set of short, balanced, well-known lines, or
//! positions loaded from an EPD or PGN file (PGN read by `pgn-reader`, shakmaty's own). Each
//! opening is played with both colours by the schedule, so a lopsided line costs both players
//! equally.

use std::cell::Cell;
use std::io::Read;
use std::path::Path;

use pgn_reader::{Reader, SanPlus};
use shakmaty::{Chess, Position};

use crate::engine::{Game, GameError};
use crate::pgn::MainLine;
use crate::toml_file::line_of;

/// A starting point: an initial position plus moves already played from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Opening {
    pub name: String,
    /// `None` is the standard starting position.
    pub fen: Option<String>,
    /// UCI moves played from `fen` before the players take over.
    pub moves: Vec<String>,
}

impl Opening {
    /// The game as the players find it.
    pub fn game(&self) -> Result<Game, GameError> {
        Game::from_uci_moves(self.fen.as_deref(), &self.moves, false)
    }
}

/// Why an openings file could not be used.
pub type OpeningsError = crate::toml_file::FileError;

/// Short main lines (SAN from the start position) that leave both sides a normal game.
const BUILTIN: &[(&str, &str)] = &[
    ("Ruy Lopez", "e4 e5 Nf3 Nc6 Bb5 a6"),
    ("Italian Game", "e4 e5 Nf3 Nc6 Bc4 Bc5"),
    ("Petrov Defence", "e4 e5 Nf3 Nf6"),
    ("Scotch Game", "e4 e5 Nf3 Nc6 d4 exd4 Nxd4 Nf6"),
    ("Vienna Game", "e4 e5 Nc3 Nf6 f4 d5"),
    ("King's Gambit", "e4 e5 f4 exf4 Nf3 g5"),
    ("Sicilian Najdorf", "e4 c5 Nf3 d6 d4 cxd4 Nxd4 Nf6 Nc3 a6"),
    (
        "Sicilian Accelerated Dragon",
        "e4 c5 Nf3 Nc6 d4 cxd4 Nxd4 g6",
    ),
    ("Sicilian Taimanov", "e4 c5 Nf3 e6 d4 cxd4 Nxd4 Nc6"),
    ("Closed Sicilian", "e4 c5 Nc3 Nc6 g3 g6"),
    ("French Winawer", "e4 e6 d4 d5 Nc3 Bb4"),
    ("French Tarrasch", "e4 e6 d4 d5 Nd2 c5"),
    ("Caro-Kann Advance", "e4 c6 d4 d5 e5 Bf5"),
    ("Caro-Kann Classical", "e4 c6 d4 d5 Nc3 dxe4 Nxe4 Bf5"),
    ("Pirc Defence", "e4 d6 d4 Nf6 Nc3 g6"),
    ("Scandinavian Defence", "e4 d5 exd5 Qxd5 Nc3 Qa5"),
    ("Alekhine Defence", "e4 Nf6 e5 Nd5 d4 d6"),
    ("Queen's Gambit Declined", "d4 d5 c4 e6 Nc3 Nf6"),
    ("Slav Defence", "d4 d5 c4 c6 Nf3 Nf6"),
    ("Queen's Gambit Accepted", "d4 d5 c4 dxc4 Nf3 Nf6"),
    ("Catalan", "d4 d5 c4 e6 Nf3 Nf6 g3 Be7"),
    ("King's Indian Defence", "d4 Nf6 c4 g6 Nc3 Bg7 e4 d6"),
    ("Nimzo-Indian Defence", "d4 Nf6 c4 e6 Nc3 Bb4"),
    ("Queen's Indian Defence", "d4 Nf6 c4 e6 Nf3 b6"),
    ("Gruenfeld Defence", "d4 Nf6 c4 g6 Nc3 d5"),
    ("Modern Benoni", "d4 Nf6 c4 c5 d5 e6"),
    ("Dutch Leningrad", "d4 f5 g3 Nf6 Bg2 g6"),
    ("London System", "d4 d5 Bf4 Nf6 e3 c5"),
    ("Trompowsky Attack", "d4 Nf6 Bg5 e6 e4 h6"),
    ("English Four Knights", "c4 e5 Nc3 Nf6 Nf3 Nc6"),
    ("Symmetrical English", "c4 c5 Nc3 Nc6 g3 g6"),
    ("Reti Opening", "Nf3 d5 g3 Nf6 Bg2 c6"),
];

/// The built-in openings, in a fixed order.
pub fn builtin() -> Vec<Opening> {
    BUILTIN
        .iter()
        .map(|(name, san)| {
            let moves = san_line_to_uci(&Chess::default(), san.split_whitespace())
                .unwrap_or_else(|e| panic!("built-in opening {name} is not legal: {e}"));
            Opening {
                name: (*name).to_string(),
                fen: None,
                moves,
            }
        })
        .collect()
}

/// Loads openings from `path`: `.pgn` files as PGN games (headers, SAN movetext, comments and
/// variations ignored), anything else as EPD (one position per line).
pub fn load(path: &Path) -> Result<Vec<Opening>, OpeningsError> {
    let origin = path.display().to_string();
    let text = crate::toml_file::read_text(path)?;
    let is_pgn = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("pgn"));
    let openings = if is_pgn {
        parse_pgn(&text, &origin)?
    } else {
        parse_epd(&text, &origin)?
    };
    if openings.is_empty() {
        return Err(OpeningsError::Empty {
            path: origin,
            problem: "no openings found (expected EPD lines or PGN games)".to_string(),
        });
    }
    Ok(openings)
}

/// EPD: the four board fields, optionally followed by operations (`id "name";`) or by the
/// halfmove and fullmove counters of a full FEN. Blank lines and `#` comments are skipped.
pub fn parse_epd(text: &str, origin: &str) -> Result<Vec<Opening>, OpeningsError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let err = |message: String| OpeningsError::Parse {
            path: origin.to_string(),
            line: i + 1,
            message,
        };
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 4 {
            return Err(err(format!("expected at least 4 FEN fields, got {line:?}")));
        }
        let counters = fields.len() >= 6
            && fields[4].parse::<u32>().is_ok()
            && fields[5].trim_end_matches(';').parse::<u32>().is_ok();
        let fen = if counters {
            format!(
                "{} {}",
                fields[..5].join(" "),
                fields[5].trim_end_matches(';')
            )
        } else {
            format!("{} 0 1", fields[..4].join(" "))
        };
        let game = Game::new(Some(&fen), false).map_err(|e| err(e.to_string()))?;
        if game.outcome().is_some() {
            return Err(err(
                "the position is already decided by the rules".to_string()
            ));
        }
        let name = epd_id(line).unwrap_or_else(|| format!("{origin} #{}", out.len() + 1));
        out.push(Opening {
            name,
            fen: Some(fen),
            moves: Vec::new(),
        });
    }
    Ok(out)
}

/// The `id "..."` operation of an EPD line, if any.
fn epd_id(line: &str) -> Option<String> {
    let start = line.find("id \"")? + 4;
    let len = line[start..].find('"')?;
    Some(line[start..start + len].to_string())
}

/// PGN: every game becomes an opening (its `FEN` tag, if any, plus its main line). Standard
/// PGN as `pgn-reader` reads it: comments, NAGs, variations and `%` escape lines are skipped.
/// An error names the line where its game starts.
pub fn parse_pgn(text: &str, origin: &str) -> Result<Vec<Opening>, OpeningsError> {
    let consumed = Cell::new(0);
    let mut reader = Reader::new(Counting {
        rest: text.as_bytes(),
        consumed: &consumed,
    });
    let mut out = Vec::new();
    loop {
        // Skips blank lines and `%` lines, so what is buffered now starts the next game.
        let more = reader.has_more();
        let line = line_of(text, consumed.get() - reader.buffer().len());
        let err = |message: String| OpeningsError::Parse {
            path: origin.to_string(),
            line,
            message,
        };
        if !more.map_err(|e| err(e.to_string()))? {
            return Ok(out);
        }
        let Some(game) = reader
            .read_game(&mut MainLine)
            .map_err(|e| err(e.to_string()))?
        else {
            return Ok(out);
        };
        let game = game.map_err(err)?;
        // The opening's name: its `Opening` tag, else a real `Event`, else its place.
        let event = game.tag("Event").filter(|e| !e.is_empty() && *e != "?");
        let name = game
            .tag("Opening")
            .or(event)
            .map_or_else(|| format!("{origin} #{}", out.len() + 1), str::to_string);
        out.push(Opening {
            name,
            fen: game.tag("FEN").map(str::to_string),
            moves: game.moves,
        });
    }
}

/// The text as a reader that counts what `pgn-reader` has taken from it.
struct Counting<'a> {
    rest: &'a [u8],
    consumed: &'a Cell<usize>,
}

impl Read for Counting<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.rest.read(buf)?;
        self.consumed.set(self.consumed.get() + n);
        Ok(n)
    }
}

/// Plays SAN moves from `start`, returning them in UCI notation (the built-in lines).
fn san_line_to_uci<'a>(
    start: &Chess,
    san: impl Iterator<Item = &'a str>,
) -> Result<Vec<String>, String> {
    let mut position = start.clone();
    let mut out = Vec::new();
    for token in san {
        let parsed = SanPlus::from_ascii(token.as_bytes())
            .map_err(|e| format!("{token:?} is not a SAN move: {e}"))?;
        let m = parsed
            .san
            .to_move(&position)
            .map_err(|e| format!("{token:?} is not legal here: {e}"))?;
        out.push(shakmaty::uci::UciMove::from_standard(m).to_string());
        position.play_unchecked(m);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_lines_are_legal_distinct_and_undecided() {
        let openings = builtin();
        assert!(openings.len() >= 20);
        let mut fens: Vec<String> = openings.iter().map(|o| o.game().unwrap().fen()).collect();
        fens.sort();
        fens.dedup();
        assert_eq!(fens.len(), openings.len());
    }

    #[test]
    fn pgn_ignores_comments_variations_and_numbers() {
        let pgn = "[Event \"a\"]\n[Opening \"Test\"]\n\n1. e4 {best by test} e5 (1... c5 2. Nf3) 2. Nf3!? $1 Nc6 *\n\n\
                   [Event \"b\"]\n[FEN \"4k3/8/8/8/8/8/4P3/4K3 w - - 0 1\"]\n\n1.e3 Kd7 1/2-1/2\n";
        let openings = parse_pgn(pgn, "t.pgn").unwrap();
        assert_eq!(openings.len(), 2);
        assert_eq!(openings[0].name, "Test");
        assert_eq!(openings[0].moves, ["e2e4", "e7e5", "g1f3", "b8c6"]);
        assert_eq!(openings[1].moves, ["e2e3", "e8d7"]);
        assert!(openings[1].fen.is_some());
    }

    /// Standard PGN as other tools write it: `%` escape lines, `;` and `{}` comments, NAGs,
    /// nested variations, several games; an error names the line its game starts on.
    #[test]
    fn pgn_with_escapes_comments_nags_and_variations_reads() {
        let pgn = "% exported by some tool\n\
                   [Event \"?\"]\n[Site \"?\"]\n\n\
                   1. d4 ; a rest-of-line comment\n\
                   1... Nf6 $10 2. c4 {a comment (with parens)} e6 \
                   (2... g6 3. Nc3 (3. g3) Bg7) 3. Nc3 Bb4 $1 0-1\n\n\
                   %another escape\n\
                   [Event \"Gruenfeld\"]\n\n1. d4 Nf6 2. c4 g6 3. Nc3 d5 *\n\n\
                   [Event \"broken\"]\n\n1. e4 e5 2. Ke3 *\n";
        let err = parse_pgn(pgn, "t.pgn").unwrap_err().to_string();
        assert!(err.starts_with("t.pgn:13: "), "{err}");
        assert!(err.contains("Ke3"), "{err}");
        let good = &pgn[..pgn.find("[Event \"broken\"]").unwrap()];
        let openings = parse_pgn(good, "t.pgn").unwrap();
        assert_eq!(openings.len(), 2);
        assert_eq!(openings[0].name, "t.pgn #1", "an Event of ? is no name");
        assert_eq!(
            openings[0].moves,
            ["d2d4", "g8f6", "c2c4", "e7e6", "b1c3", "f8b4"]
        );
        assert_eq!(openings[1].name, "Gruenfeld");
        assert_eq!(openings[1].moves.len(), 6);
        assert!(openings[1].game().is_ok());
    }

    #[test]
    fn bad_pgn_move_and_bad_epd_name_the_line() {
        let err = parse_pgn("[Event \"x\"]\n\n1. e4 e4 *\n", "t.pgn").unwrap_err();
        assert!(err.to_string().contains("t.pgn:1"), "{err}");
        let err = parse_epd("# c\n\nnot a position at all\n", "t.epd").unwrap_err();
        assert!(err.to_string().contains("t.epd:3"), "{err}");
    }

    #[test]
    fn epd_reads_ids_and_counters() {
        let epd = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - id \"e4\";\n\
                   rnbqkbnr/pppppppp/8/8/3P4/8/PPP1PPPP/RNBQKBNR b KQkq - 0 1\n";
        let openings = parse_epd(epd, "t.epd").unwrap();
        assert_eq!(openings.len(), 2);
        assert_eq!(openings[0].name, "e4");
        assert_eq!(openings[1].name, "t.epd #2");
    }
}
