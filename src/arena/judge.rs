//! Move quality of arena games, judged after each game by a separate UCI engine (Stockfish at
//! a fixed depth): per player the average centipawn loss and Lichess's inaccuracy, mistake and
//! blunder rates.
//!
//! The arithmetic is lila's: an evaluation is turned into centipawns capped at ±1000 (a mate
//! counts as the cap), the winning chances are `2 / (1 + e^(-0.00368208·cp)) - 1` in [-1, 1],
//! and a move whose winning chances for the mover drop by 0.3, 0.2 or 0.1 or more is a blunder,
//! a mistake or an inaccuracy. The centipawn loss of a move is how much the capped evaluation
//! falls for the mover, never below 0. Opening moves (from the book) are not judged.
//!
//! Beside Lichess's judgements it counts the moves that lose [`BIG_LOSS_CP`] or more, the
//! measure of the published figures of how often people blunder at each rating
//! ([`super::people`]), so a level's rate can be read beside a person's.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::likeness::{JudgedPosition, Likeness, likeness_of_game};
use crate::engine::humane::ClockLeft;
use crate::engine::people::{BIG_LOSS_CP, CP_CEILING};
use crate::engine::position::GameEnd;
use crate::engine::{Game, Score};
use crate::player::seat::position_command;
use crate::player::uci_engine::{EngineCommand, UciEngine};
use shakmaty::Position;

/// lila's factor of the winning-chances curve.
pub const WIN_CHANCE_FACTOR: f64 = 0.003_682_08;
/// Centipawns from the side to move's point of view, capped at ±[`CP_CEILING`].
pub fn capped_cp(score: Score) -> f64 {
    match score {
        Score::Cp(cp) => (cp as f64).clamp(-CP_CEILING, CP_CEILING),
        Score::Mate(n) if n > 0 => CP_CEILING,
        // `mate 0` or `mate -n`: the side to move is (being) mated.
        Score::Mate(_) => -CP_CEILING,
    }
}

/// Winning chances in [-1, 1] of the side whose evaluation is `cp`.
pub fn win_chance(cp: f64) -> f64 {
    2.0 / (1.0 + (-WIN_CHANCE_FACTOR * cp).exp()) - 1.0
}

/// Lichess's judgement of one move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Judgement {
    Good,
    Inaccuracy,
    Mistake,
    Blunder,
}

/// The judgement of a move that lowered the mover's winning chances from `before` to `after`
/// (both in [-1, 1], the mover's point of view).
pub fn judge(before: f64, after: f64) -> Judgement {
    let drop = before - after;
    if drop >= 0.3 {
        Judgement::Blunder
    } else if drop >= 0.2 {
        Judgement::Mistake
    } else if drop >= 0.1 {
        Judgement::Inaccuracy
    } else {
        Judgement::Good
    }
}

/// One player's judged moves, summed.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Quality {
    pub moves: u64,
    pub cp_loss: f64,
    pub inaccuracies: u64,
    pub mistakes: u64,
    pub blunders: u64,
    /// Moves that lost [`BIG_LOSS_CP`] or more.
    pub big_losses: u64,
}

impl Quality {
    /// Adds a move whose position was evaluated `before` (the mover to move) and whose result
    /// was evaluated `after` (the mover's point of view), both capped centipawns.
    pub fn add(&mut self, before: f64, after: f64) {
        self.moves += 1;
        let loss = (before - after).max(0.0);
        self.cp_loss += loss;
        if loss >= BIG_LOSS_CP {
            self.big_losses += 1;
        }
        match judge(win_chance(before), win_chance(after)) {
            Judgement::Good => {}
            Judgement::Inaccuracy => self.inaccuracies += 1,
            Judgement::Mistake => self.mistakes += 1,
            Judgement::Blunder => self.blunders += 1,
        }
    }

    pub fn merge(&mut self, other: &Quality) {
        self.moves += other.moves;
        self.cp_loss += other.cp_loss;
        self.inaccuracies += other.inaccuracies;
        self.mistakes += other.mistakes;
        self.blunders += other.blunders;
        self.big_losses += other.big_losses;
    }

    pub fn acpl(&self) -> f64 {
        self.cp_loss / self.moves.max(1) as f64
    }

    /// A count as a share of the judged moves.
    pub fn rate(&self, count: u64) -> f64 {
        count as f64 / self.moves.max(1) as f64
    }
}

/// The capped evaluation, for the side to move, of a position where the game is over.
fn terminal_cp(end: GameEnd) -> f64 {
    match end {
        GameEnd::Checkmate { .. } => -CP_CEILING,
        _ => 0.0,
    }
}

/// Summed quality of the moves of a game by each side, from the evaluations of the positions
/// from ply `first` on (`evals[k]` is the capped evaluation of the position after `first + k`
/// plies, for the side to move there). Returns (white, black).
pub fn game_quality(game: &Game, first: usize, evals: &[f64]) -> (Quality, Quality) {
    let (mut white, mut black) = (Quality::default(), Quality::default());
    let white_moves_first = {
        // Side to move at ply `first`: replay the colours from the initial position.
        let white_starts = game.initial_position().turn().is_white();
        white_starts == first.is_multiple_of(2)
    };
    for k in 0..evals.len().saturating_sub(1) {
        let before = evals[k];
        let after = -evals[k + 1];
        let white_moved = white_moves_first == k.is_multiple_of(2);
        if white_moved {
            white.add(before, after);
        } else {
            black.add(before, after);
        }
    }
    (white, black)
}

/// A judge: one Stockfish process searching every position to a fixed depth.
pub struct Judge {
    engine: UciEngine,
    depth: u32,
    /// Lines per position (`MultiPV`): more than 1 for the human-likeness figures.
    lines: usize,
    pub id_name: Option<String>,
}

/// A game judged for both the move quality and the human-likeness of its errors.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JudgedGame {
    /// (white, black).
    pub quality: (Quality, Quality),
    pub likeness: (Likeness, Likeness),
}

/// How long one judged position may take before the judge counts as hung.
const POSITION_TIMEOUT: Duration = Duration::from_secs(60);

impl Judge {
    /// The default judge's binary.
    pub const STOCKFISH: &'static str = "/usr/games/stockfish";

    /// The default judge's binary where it is installed; else `None`, having said on stderr
    /// that what needs it is skipped (tests judge only on machines with Stockfish).
    pub fn installed_stockfish() -> Option<PathBuf> {
        let program = PathBuf::from(Judge::STOCKFISH);
        if program.exists() {
            Some(program)
        } else {
            eprintln!("skipped: {} is not installed", program.display());
            None
        }
    }

    /// Starts `program` (one thread, 16 MB hash), one line per position.
    pub async fn start(program: &Path, depth: u32) -> Result<Judge, String> {
        Judge::start_with_lines(program, depth, 1).await
    }

    /// Starts `program` reporting `lines` lines per position (`MultiPV`; the human-likeness
    /// figures need [`JUDGE_LINES`]).
    pub async fn start_with_lines(
        program: &Path,
        depth: u32,
        lines: usize,
    ) -> Result<Judge, String> {
        let mut options = vec![
            ("Threads".to_string(), "1".to_string()),
            ("Hash".to_string(), "16".to_string()),
        ];
        if lines > 1 {
            options.push(("MultiPV".to_string(), lines.to_string()));
        }
        let command = EngineCommand {
            program: PathBuf::from(program),
            args: Vec::new(),
            options,
        };
        let engine = UciEngine::start(&command, Duration::from_secs(10))
            .await
            .map_err(|e| format!("judge {}: {e}", program.display()))?;
        Ok(Judge {
            id_name: engine.id_name.clone(),
            engine,
            depth,
            lines,
        })
    }

    /// Judges the moves of `game` from ply `first` on: (white, black).
    pub async fn judge_game(
        &mut self,
        game: &Game,
        first: usize,
    ) -> Result<(Quality, Quality), String> {
        Ok(self.judge_game_fully(game, first, &[]).await?.quality)
    }

    /// Judges the moves of `game` from ply `first` on, for the move quality and the
    /// human-likeness figures; `clocks[k]` is the mover's clock before ply `first + k` (empty:
    /// no clock).
    pub async fn judge_game_fully(
        &mut self,
        game: &Game,
        first: usize,
        clocks: &[ClockLeft],
    ) -> Result<JudgedGame, String> {
        self.engine
            .new_game(Duration::from_secs(10))
            .await
            .map_err(|e| e.to_string())?;
        let mut replay = Game::from_position(game.initial_position().clone(), game.castling_mode());
        for m in &game.moves()[..first.min(game.moves().len())] {
            replay.play(*m);
        }
        let mut evals = Vec::with_capacity(game.moves().len() + 1 - first.min(game.moves().len()));
        let mut positions = Vec::with_capacity(evals.capacity());
        let mut ply = first;
        loop {
            let legal_moves = replay.legal_moves().len();
            let (eval, lines) = match replay.outcome() {
                Some(end) => (terminal_cp(end), Vec::new()),
                None => {
                    let go = format!("go depth {}", self.depth);
                    let reply = self
                        .engine
                        .analyse(&position_command(&replay), &go, POSITION_TIMEOUT)
                        .await
                        .map_err(|e| e.to_string())?;
                    let lines = reply
                        .lines
                        .iter()
                        .take(self.lines)
                        .map(|l| (l.first.clone(), capped_cp(l.score)))
                        .collect();
                    (
                        capped_cp(reply.score.ok_or("the judge gave no score")?),
                        lines,
                    )
                }
            };
            evals.push(eval);
            positions.push(JudgedPosition { lines, legal_moves });
            if ply >= game.moves().len() || replay.outcome().is_some() {
                break;
            }
            replay.play(game.moves()[ply]);
            ply += 1;
        }
        Ok(JudgedGame {
            quality: game_quality(game, first, &evals),
            likeness: likeness_of_game(game, first, &evals, &positions, clocks),
        })
    }

    pub async fn quit(self) {
        self.engine.quit().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn win_chances_match_hand_computed_values() {
        assert_eq!(win_chance(0.0), 0.0);
        // 2 / (1 + e^-0.368208) - 1 = 0.18203...
        assert!((win_chance(100.0) - 0.182_03).abs() < 1e-4);
        // 2 / (1 + e^-1.104624) - 1 = 0.50224...
        assert!((win_chance(300.0) - 0.502_24).abs() < 1e-4);
        assert!((win_chance(-300.0) + 0.502_24).abs() < 1e-4);
        // The cap: 2 / (1 + e^-3.68208) - 1 = 0.95089...
        assert!((win_chance(CP_CEILING) - 0.950_89).abs() < 1e-4);
        assert_eq!(capped_cp(Score::Cp(2500)), 1000.0);
        assert_eq!(capped_cp(Score::Cp(-42)), -42.0);
        assert_eq!(capped_cp(Score::Mate(3)), 1000.0);
        assert_eq!(capped_cp(Score::Mate(-2)), -1000.0);
        assert_eq!(capped_cp(Score::Mate(0)), -1000.0);
    }

    #[test]
    fn judgements_follow_lichess_thresholds() {
        // (before, after) in centipawns, the judgement of the drop in winning chances.
        let cases = [
            // 0 -> -100 cp: 0 - (-0.182) = 0.182 drop: an inaccuracy.
            (0.0, -100.0, Judgement::Inaccuracy),
            // +300 -> 0: a drop of 0.502: a blunder.
            (300.0, 0.0, Judgement::Blunder),
            // +100 -> -50: 0.182 + 0.0917 = 0.274: a mistake.
            (100.0, -50.0, Judgement::Mistake),
            // Deep in a won position a lot of centipawns are a small change: +1000 -> +600
            // drops 0.951 - 0.802 = 0.149: an inaccuracy, though 400 cp were lost.
            (1000.0, 600.0, Judgement::Inaccuracy),
            (50.0, 60.0, Judgement::Good),
        ];
        for (before, after, expected) in cases {
            let judged = judge(win_chance(before), win_chance(after));
            assert_eq!(judged, expected, "{before} -> {after}");
        }
    }

    #[test]
    fn a_game_splits_its_moves_between_the_sides() {
        // Four plies from the start, white to move first: evaluations of the five positions for
        // the side to move there.
        let game = Game::from_uci_moves(None, &["e2e4", "e7e5", "d1h5", "b8c6"], false).unwrap();
        let evals = [30.0, -30.0, 20.0, -300.0, 310.0];
        let (w, b) = game_quality(&game, 0, &evals);
        // White: 30 -> 30 (no loss), 20 -> 300 (a gain).
        assert_eq!(w.moves, 2);
        assert_eq!(b.moves, 2);
        assert_eq!(w.cp_loss, 0.0);
        // Black's moves: before -30, after -20 (loss 0); before -300, after -310 (loss 10).
        assert_eq!(b.cp_loss, 10.0);
        assert_eq!(b.blunders + b.mistakes + b.inaccuracies, 0);
        // Starting after two book plies: only plies 2 and 3 are judged, white first.
        let (w, b) = game_quality(&game, 2, &evals[2..]);
        assert_eq!((w.moves, b.moves), (1, 1));
        assert_eq!(b.cp_loss, 10.0);
    }

    #[test]
    fn a_big_loss_is_200_centipawns_whatever_lichess_calls_it() {
        let mut q = Quality::default();
        // Lichess calls this an inaccuracy (deep in a won position), people's figures a
        // blunder: 400 cp lost.
        q.add(1000.0, 600.0);
        // Just under the threshold, and a gain.
        q.add(100.0, -99.0);
        q.add(-50.0, 80.0);
        // Exactly the threshold.
        q.add(0.0, -200.0);
        assert_eq!(q.moves, 4);
        assert_eq!(q.big_losses, 2);
        let mut total = Quality::default();
        total.merge(&q);
        total.merge(&q);
        assert_eq!(total.big_losses, 4);
    }
}
