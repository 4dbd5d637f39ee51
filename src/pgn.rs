//! PGN text: writing the tag pairs and the numbered, wrapped SAN movetext of one game, shared by
//! the daemon's game log and the arena's games so both read the same in any PGN reader; and
//! reading a game's tags and main line back (`pgn-reader`), for openings files and for checking
//! what was written.

use std::collections::HashMap;
use std::ops::ControlFlow;

use pgn_reader::{RawTag, Visitor};
use shakmaty::san::SanPlus;
use shakmaty::{Chess, Move, Position};

use crate::engine::Game;

/// One game's PGN text, built tag by tag and then move by move.
pub struct PgnText {
    out: String,
    position: Chess,
    tokens: Vec<String>,
    /// Whether Black's next move needs its number (`12...`): at the start and after a comment.
    need_number: bool,
}

impl PgnText {
    /// A game that starts from `initial`.
    pub fn new(initial: Chess) -> PgnText {
        PgnText {
            out: String::new(),
            position: initial,
            tokens: Vec::new(),
            need_number: true,
        }
    }

    /// A tag pair, its value escaped. Tags come before any move.
    pub fn tag(&mut self, name: &str, value: &str) {
        let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
        self.out.push_str(&format!("[{name} \"{escaped}\"]\n"));
    }

    /// Plays `m` (legal in the current position) and writes it in SAN with its move number.
    pub fn play(&mut self, m: Move) {
        let number = self.position.fullmoves().get();
        if self.position.turn().is_white() {
            self.tokens.push(format!("{number}."));
        } else if self.need_number {
            self.tokens.push(format!("{number}..."));
        }
        self.need_number = false;
        self.tokens
            .push(SanPlus::from_move_and_play_unchecked(&mut self.position, m).to_string());
    }

    /// A `{comment}` in the movetext (braces in `text` are dropped: they would end it early).
    pub fn comment(&mut self, text: &str) {
        self.tokens
            .push(format!("{{{}}}", text.replace(['{', '}'], "")));
        self.need_number = true;
    }

    /// The whole text: tags, a blank line, the movetext wrapped at 79 columns ending with
    /// `result`, and a blank line after the game.
    pub fn finish(mut self, result: &str) -> String {
        self.tokens.push(result.to_string());
        self.out.push('\n');
        let mut line = String::new();
        for t in &self.tokens {
            if !line.is_empty() && line.len() + 1 + t.len() > 79 {
                self.out.push_str(&line);
                self.out.push('\n');
                line.clear();
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(t);
        }
        self.out.push_str(&line);
        self.out.push_str("\n\n");
        self.out
    }
}

/// One PGN game as read: its tags, its main line in UCI notation and the position it reaches.
#[derive(Debug)]
pub struct ReadGame {
    pub tags: HashMap<String, String>,
    pub moves: Vec<String>,
    pub end: Chess,
}

impl ReadGame {
    /// The value of a tag named `name` in any case (writers spell `FEN` differently).
    pub fn tag(&self, name: &str) -> Option<&str> {
        tag_of(&self.tags, name)
    }
}

fn tag_of<'a>(tags: &'a HashMap<String, String>, name: &str) -> Option<&'a str> {
    tags.iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// The `pgn-reader` visitor that reads a game as a [`ReadGame`]: from its `FEN` tag, if any,
/// along its main line; variations are skipped (the visitor's default), and an illegal move or
/// a bad `FEN` ends the game with an error.
pub struct MainLine;

impl Visitor for MainLine {
    type Tags = HashMap<String, String>;
    type Movetext = ReadGame;
    type Output = Result<ReadGame, String>;

    fn begin_tags(&mut self) -> ControlFlow<Self::Output, Self::Tags> {
        ControlFlow::Continue(HashMap::new())
    }

    fn tag(
        &mut self,
        tags: &mut Self::Tags,
        name: &[u8],
        value: RawTag<'_>,
    ) -> ControlFlow<Self::Output> {
        tags.insert(
            String::from_utf8_lossy(name).into_owned(),
            value.decode_utf8_lossy().into_owned(),
        );
        ControlFlow::Continue(())
    }

    fn begin_movetext(&mut self, tags: Self::Tags) -> ControlFlow<Self::Output, ReadGame> {
        match Game::new(tag_of(&tags, "FEN"), false) {
            Ok(game) => ControlFlow::Continue(ReadGame {
                end: game.position().clone(),
                tags,
                moves: Vec::new(),
            }),
            Err(e) => ControlFlow::Break(Err(e.to_string())),
        }
    }

    fn san(&mut self, game: &mut ReadGame, san_plus: SanPlus) -> ControlFlow<Self::Output> {
        match san_plus.san.to_move(&game.end) {
            Ok(m) => {
                game.moves
                    .push(shakmaty::uci::UciMove::from_standard(m).to_string());
                game.end.play_unchecked(m);
                ControlFlow::Continue(())
            }
            Err(e) => ControlFlow::Break(Err(format!("{san_plus} is not legal here: {e}"))),
        }
    }

    fn end_game(&mut self, game: ReadGame) -> Self::Output {
        Ok(game)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::uci::UciMove;

    fn play(pgn: &mut PgnText, position: &mut Chess, uci: &str) {
        let m = uci.parse::<UciMove>().unwrap().to_move(position).unwrap();
        position.play_unchecked(m);
        pgn.play(m);
    }

    #[test]
    fn tags_are_escaped_and_moves_numbered_after_a_comment() {
        let mut position = Chess::default();
        let mut pgn = PgnText::new(position.clone());
        pgn.tag("White", "A \"quoted\" \\ name");
        play(&mut pgn, &mut position, "e2e4");
        pgn.comment("end of {opening}");
        play(&mut pgn, &mut position, "e7e5");
        play(&mut pgn, &mut position, "d1h5");
        let text = pgn.finish("*");
        assert_eq!(
            text,
            "[White \"A \\\"quoted\\\" \\\\ name\"]\n\n1. e4 {end of opening} 1... e5 2. Qh5 *\n\n"
        );
    }

    #[test]
    fn long_movetext_wraps_at_79_columns() {
        let mut position = Chess::default();
        let mut pgn = PgnText::new(position.clone());
        for _ in 0..20 {
            for uci in ["g1f3", "g8f6", "f3g1", "f6g8"] {
                play(&mut pgn, &mut position, uci);
            }
        }
        let text = pgn.finish("1/2-1/2");
        let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
        assert!(lines.len() > 3, "{text}");
        assert!(lines.iter().all(|l| l.len() <= 79), "{text}");
        assert!(text.ends_with("1/2-1/2\n\n"));
    }
}
