//! A game as Lichess and UCI describe it: an initial position plus the moves played since,
//! with the Zobrist keys of every position so repetitions can be seen.

use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::zobrist::Zobrist64;
use shakmaty::{CastlingMode, Chess, Color, EnPassantMode, Move, Position, Role};

/// Why a game could not be built or a move not played.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GameError {
    #[error("bad FEN {fen:?}: {reason}")]
    BadFen { fen: String, reason: String },
    #[error("bad move {uci:?} (move {index}): not UCI notation")]
    BadMoveSyntax { uci: String, index: usize },
    #[error("illegal move {uci:?} (move {index}) in {fen}")]
    IllegalMove {
        uci: String,
        index: usize,
        fen: String,
    },
}

/// Non-pawn material of both sides at the start of a standard game, in the units of
/// [`Game::material_ratio`] (N=3, B=3, R=5, Q=9).
const START_PIECE_MATERIAL: u32 = 2 * (2 * 3 + 2 * 3 + 2 * 5 + 9);

/// A position with its history.
#[derive(Clone, Debug)]
pub struct Game {
    initial: Chess,
    position: Chess,
    mode: CastlingMode,
    /// Zobrist keys of every position from the initial one up to the current one (inclusive).
    keys: Vec<u64>,
    moves: Vec<Move>,
}

impl Game {
    /// The standard starting position.
    pub fn startpos() -> Game {
        Game::from_position(Chess::default(), CastlingMode::Standard)
    }

    /// A game from an initial FEN (`None`, `""` or `"startpos"` is the standard start position).
    /// `chess960` selects Chess960 castling rules and king-to-rook castling notation.
    pub fn new(initial_fen: Option<&str>, chess960: bool) -> Result<Game, GameError> {
        let mode = if chess960 {
            CastlingMode::Chess960
        } else {
            CastlingMode::Standard
        };
        let (position, mode) = match initial_fen.map(str::trim) {
            None | Some("") | Some("startpos") => (Chess::default(), mode),
            Some(fen) => {
                let bad = |reason: String| GameError::BadFen {
                    fen: fen.to_string(),
                    reason,
                };
                let parsed: Fen = fen.parse().map_err(|e| bad(format!("{e}")))?;
                match parsed.clone().into_position(mode) {
                    Ok(position) => (position, mode),
                    // "fromPosition" games may start from a position whose castling rights only
                    // make sense under Chess960 rules (a king or rook off its standard square).
                    // Its castling is then written king-takes-rook too: "king to the g-file"
                    // is no move (king on g1) or a plain king step (king on f1) there.
                    Err(e) if mode == CastlingMode::Standard => parsed
                        .into_position(CastlingMode::Chess960)
                        .map(|position| (position, CastlingMode::Chess960))
                        .map_err(|_| bad(format!("{e}")))?,
                    Err(e) => return Err(bad(format!("{e}"))),
                }
            }
        };
        Ok(Game::from_position(position, mode))
    }

    /// A game from an initial FEN plus the UCI moves played since, as Lichess sends them.
    pub fn from_uci_moves<S: AsRef<str>>(
        initial_fen: Option<&str>,
        moves: &[S],
        chess960: bool,
    ) -> Result<Game, GameError> {
        let mut game = Game::new(initial_fen, chess960)?;
        for m in moves {
            game.play_uci(m.as_ref())?;
        }
        Ok(game)
    }

    pub fn from_position(position: Chess, mode: CastlingMode) -> Game {
        let key = key_of(&position);
        Game {
            initial: position.clone(),
            position,
            mode,
            keys: vec![key],
            moves: Vec::new(),
        }
    }

    /// Plays a move given in UCI notation (both `e1g1` and `e1h1` castling are accepted).
    pub fn play_uci(&mut self, uci: &str) -> Result<Move, GameError> {
        let index = self.moves.len() + 1;
        let parsed: UciMove = uci.parse().map_err(|_| GameError::BadMoveSyntax {
            uci: uci.to_string(),
            index,
        })?;
        let m = parsed
            .to_move(&self.position)
            .map_err(|_| GameError::IllegalMove {
                uci: uci.to_string(),
                index,
                fen: self.fen(),
            })?;
        self.play(m);
        Ok(m)
    }

    /// Plays a move known to be legal in the current position.
    pub fn play(&mut self, m: Move) {
        self.position.play_unchecked(m);
        self.keys.push(key_of(&self.position));
        self.moves.push(m);
    }

    pub fn position(&self) -> &Chess {
        &self.position
    }

    pub fn initial_position(&self) -> &Chess {
        &self.initial
    }

    pub fn castling_mode(&self) -> CastlingMode {
        self.mode
    }

    pub fn moves(&self) -> &[Move] {
        &self.moves
    }

    /// Zobrist keys from the initial position to the current one, inclusive.
    pub fn keys(&self) -> &[u64] {
        &self.keys
    }

    pub fn key(&self) -> u64 {
        *self.keys.last().expect("a game always has its initial key")
    }

    pub fn turn(&self) -> Color {
        self.position.turn()
    }

    pub fn fen(&self) -> String {
        Fen::from_position(&self.position, EnPassantMode::Legal).to_string()
    }

    /// A move in the notation this game's castling mode uses on the wire.
    pub fn to_uci(&self, m: Move) -> String {
        UciMove::from_move(m, self.mode).to_string()
    }

    /// Legal moves in the current position.
    pub fn legal_moves(&self) -> shakmaty::MoveList {
        self.position.legal_moves()
    }

    /// How often the current position occurred before (same key, same side to move), looking
    /// back only as far as the last irreversible move.
    pub fn repetitions(&self) -> usize {
        let current = self.key();
        let reversible = self.position.halfmoves() as usize;
        self.keys
            .iter()
            .rev()
            .skip(2)
            .step_by(2)
            .take(reversible / 2)
            .filter(|&&k| k == current)
            .count()
    }

    /// The game's result by the rules, if it is over: checkmate, stalemate, insufficient
    /// material, threefold repetition or the 50-move rule.
    pub fn outcome(&self) -> Option<GameEnd> {
        if self.position.legal_moves().is_empty() {
            return Some(if self.position.is_check() {
                GameEnd::Checkmate {
                    winner: !self.position.turn(),
                }
            } else {
                GameEnd::Stalemate
            });
        }
        if self.position.is_insufficient_material() {
            Some(GameEnd::InsufficientMaterial)
        } else if self.repetitions() >= 2 {
            Some(GameEnd::Repetition)
        } else if self.position.halfmoves() >= 100 {
            Some(GameEnd::FiftyMoves)
        } else {
            None
        }
    }

    /// Non-pawn material of both sides divided by its value at the start of a standard game,
    /// the `r` of the endgame scaling in LEVELS.md.
    pub fn material_ratio(&self) -> f64 {
        let board = self.position.board();
        let value = |role: Role, v: u32| board.by_role(role).count() as u32 * v;
        let material = value(Role::Knight, 3)
            + value(Role::Bishop, 3)
            + value(Role::Rook, 5)
            + value(Role::Queen, 9);
        f64::from(material) / f64::from(START_PIECE_MATERIAL)
    }
}

/// How a game ended by the rules of chess.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GameEnd {
    Checkmate { winner: Color },
    Stalemate,
    InsufficientMaterial,
    Repetition,
    FiftyMoves,
}

impl GameEnd {
    pub fn winner(self) -> Option<Color> {
        match self {
            GameEnd::Checkmate { winner } => Some(winner),
            _ => None,
        }
    }
}

/// The position of a FEN a test knows to be valid (standard castling).
#[cfg(test)]
pub(crate) fn position_of(fen: &str) -> Chess {
    let game = Game::new(Some(fen), false).expect("a valid FEN");
    game.position().clone()
}

fn key_of(position: &Chess) -> u64 {
    let key: Zobrist64 = position.zobrist_hash(EnPassantMode::Legal);
    key.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plays_lichess_moves_and_detects_repetition() {
        let moves = [
            "g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1", "f6g8",
        ];
        let game = Game::from_uci_moves(None, &moves, false).unwrap();
        assert_eq!(game.outcome(), Some(GameEnd::Repetition));
        let game = Game::from_uci_moves(None, &moves[..7], false).unwrap();
        assert_eq!(game.outcome(), None);
    }

    #[test]
    fn rejects_illegal_move_and_bad_fen() {
        assert!(matches!(
            Game::from_uci_moves(None, &["e2e5"], false),
            Err(GameError::IllegalMove { index: 1, .. })
        ));
        assert!(matches!(
            Game::new(Some("not a fen"), false),
            Err(GameError::BadFen { .. })
        ));
    }

    /// A FEN whose castling right only Chess960 rules allow (king on f1 or g1): its castling
    /// is written king-takes-rook, which reads back as the same move, not as "king to g1".
    #[test]
    fn castling_from_a_chess960_only_fen_is_written_king_takes_rook() {
        for (fen, castle) in [
            ("4rkr1/4p1p1/8/8/8/8/8/5K1R w K - 0 1", "f1h1"),
            ("4rkr1/4p1p1/8/8/8/8/8/6KR w K - 0 1", "g1h1"),
        ] {
            let game = Game::new(Some(fen), false).unwrap();
            assert_eq!(game.castling_mode(), CastlingMode::Chess960, "{fen}");
            let castling = game
                .legal_moves()
                .into_iter()
                .find(|m| m.is_castle())
                .expect("castling is legal");
            assert_eq!(game.to_uci(castling), castle, "{fen}");
            let mut replay = Game::new(Some(fen), false).unwrap();
            assert_eq!(replay.play_uci(castle).unwrap(), castling, "{fen}");
        }
        // A standard FEN keeps the standard notation.
        let game = Game::new(Some("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1"), false).unwrap();
        assert_eq!(game.castling_mode(), CastlingMode::Standard);
    }

    #[test]
    fn material_ratio_halves_without_queens_and_rooks_of_one_side() {
        assert_eq!(Game::startpos().material_ratio(), 1.0);
        let kqk = Game::new(Some("8/8/8/4k3/8/8/8/3QK3 w - - 0 1"), false).unwrap();
        assert!((kqk.material_ratio() - 9.0 / 62.0).abs() < 1e-9);
    }
}
