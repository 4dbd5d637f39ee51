//! Opening positions for arena games: a built-in set of short, balanced, well-known lines, or
//! positions loaded from an EPD or PGN file. Each opening is played with both colours by the
//! schedule, so a lopsided line costs both players equally.

use std::path::Path;

use shakmaty::san::SanPlus;
use shakmaty::{Chess, Position};

use crate::engine::{Game, GameError};

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
#[derive(Debug, thiserror::Error)]
pub enum OpeningsError {
    #[error("cannot read openings file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Parse {
        path: String,
        line: usize,
        message: String,
    },
    #[error("{path}: no openings found (expected EPD lines or PGN games)")]
    Empty { path: String },
}

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
    let text = std::fs::read_to_string(path).map_err(|source| OpeningsError::Read {
        path: origin.clone(),
        source,
    })?;
    let is_pgn = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("pgn"));
    let openings = if is_pgn {
        parse_pgn(&text, &origin)?
    } else {
        parse_epd(&text, &origin)?
    };
    if openings.is_empty() {
        return Err(OpeningsError::Empty { path: origin });
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

/// PGN: every game becomes an opening (its `FEN` tag, if any, plus its main line).
pub fn parse_pgn(text: &str, origin: &str) -> Result<Vec<Opening>, OpeningsError> {
    let mut out = Vec::new();
    let mut tags: Vec<(String, String)> = Vec::new();
    let mut movetext = String::new();
    let mut first_line = 1;
    let flush = |tags: &mut Vec<(String, String)>,
                 movetext: &mut String,
                 line: usize,
                 out: &mut Vec<Opening>|
     -> Result<(), OpeningsError> {
        if tags.is_empty() && movetext.trim().is_empty() {
            return Ok(());
        }
        let err = |message: String| OpeningsError::Parse {
            path: origin.to_string(),
            line,
            message,
        };
        let tag = |name: &str| {
            tags.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        };
        let fen = tag("FEN");
        let game = Game::new(fen.as_deref(), false).map_err(|e| err(e.to_string()))?;
        let moves = san_line_to_uci(game.position(), movetext_tokens(movetext))
            .map_err(|e| err(e.to_string()))?;
        let name = tag("Opening")
            .or_else(|| tag("Event").filter(|e| !e.is_empty() && e != "?"))
            .unwrap_or_else(|| format!("{origin} #{}", out.len() + 1));
        out.push(Opening { name, fen, moves });
        tags.clear();
        movetext.clear();
        Ok(())
    };
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.starts_with('[') {
            // A tag after movetext starts the next game.
            if !movetext.trim().is_empty() {
                flush(&mut tags, &mut movetext, first_line, &mut out)?;
            }
            if tags.is_empty() {
                first_line = i + 1;
            }
            if let Some((k, v)) = parse_tag(line) {
                tags.push((k, v));
            }
        } else {
            if tags.is_empty() && movetext.trim().is_empty() {
                first_line = i + 1;
            }
            movetext.push_str(line);
            movetext.push('\n');
        }
    }
    flush(&mut tags, &mut movetext, first_line, &mut out)?;
    Ok(out)
}

fn parse_tag(line: &str) -> Option<(String, String)> {
    let inner = line.trim().strip_prefix('[')?.strip_suffix(']')?;
    let (name, rest) = inner.split_once(char::is_whitespace)?;
    let value = rest.trim().strip_prefix('"')?.strip_suffix('"')?;
    Some((name.to_string(), value.replace("\\\"", "\"")))
}

/// The SAN tokens of a PGN main line: comments, variations, NAGs, move numbers and the result
/// are dropped.
fn movetext_tokens(text: &str) -> impl Iterator<Item = &str> {
    let mut tokens = Vec::new();
    let mut depth = 0usize;
    let mut in_comment = false;
    for line in text.lines() {
        let mut rest = line;
        if !in_comment && depth == 0 {
            // `;` starts a comment that runs to the end of the line.
            if let Some(pos) = rest.find(';') {
                rest = &rest[..pos];
            }
        }
        let mut start = None;
        for (i, c) in rest.char_indices() {
            let separator = in_comment || c.is_whitespace() || matches!(c, '{' | '}' | '(' | ')');
            if separator {
                if let Some(s) = start.take()
                    && depth == 0
                {
                    tokens.push(&rest[s..i]);
                }
            } else if start.is_none() {
                start = Some(i);
            }
            match c {
                '{' if !in_comment => in_comment = true,
                '}' if in_comment => in_comment = false,
                '(' if !in_comment => depth += 1,
                ')' if !in_comment => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        if let Some(s) = start
            && depth == 0
            && !in_comment
        {
            tokens.push(&rest[s..]);
        }
    }
    tokens.into_iter().filter_map(|t| {
        // "12." "12..." and "12.e4" all carry a move number before the move.
        let t = t.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
        let t = t.trim_end_matches(['!', '?']);
        let skip = t.is_empty()
            || t.starts_with('$')
            || matches!(t, "*" | "1-0" | "0-1" | "1/2-1/2" | "-0" | "-1" | "/2-1/2");
        (!skip).then_some(t)
    })
}

/// Plays SAN moves from `start`, returning them in UCI notation.
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
