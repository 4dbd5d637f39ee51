//! The trainer's data in memory: each position as the inputs that are on from the side to
//! move's perspective (u16 indices; the other perspective's are [`flip_index`] of them) and its
//! label, parsed from `datagen` files once; every `--holdout-every`th game held out.
//!
//! The label, from the side to move's view, follows marlinflow's `--wdl`:
//! `wdl · result + (1 − wdl) · σ(score / 400)`, with σ the logistic function.
//!
//! [`flip_index`]: crate::engine::nnue::flip_index

use std::io::BufRead as _;
use std::path::PathBuf;

use anyhow::{Context, bail};
use shakmaty::{Chess, Color, Position, Square};

use super::super::sample::{is_held_out, parse_position, report_skipped, skip_line};
use crate::engine::nnue::{self, PieceSquare, feature_index};

/// Labelled positions, packed: the inputs of position `i` are `features[ends[i-1]..ends[i]]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Positions {
    features: Vec<u16>,
    ends: Vec<u32>,
    labels: Vec<f32>,
}

impl Positions {
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// The inputs on for the side to move in position `i`.
    #[inline]
    pub fn features(&self, i: usize) -> &[u16] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.features[start..self.ends[i] as usize]
    }

    /// The target of position `i`: the expected score of the side to move, 0..=1.
    #[inline]
    pub fn label(&self, i: usize) -> f32 {
        self.labels[i]
    }

    /// A position from its pieces, side to move and label.
    pub fn push(&mut self, position: &Chess, label: f32) -> Result<(), String> {
        self.push_pieces(position, label, |square| square)
    }

    /// The position with files a and h swapped (and b with g, ...), the same label: without
    /// castling rights the rules are the same in the mirror, so it is as good a sample.
    pub fn push_mirrored(&mut self, position: &Chess, label: f32) -> Result<(), String> {
        self.push_pieces(position, label, Square::flip_horizontal)
    }

    fn push_pieces(
        &mut self,
        position: &Chess,
        label: f32,
        place: impl Fn(Square) -> Square,
    ) -> Result<(), String> {
        let turn = position.turn();
        self.features.extend(
            nnue::features::pieces(position.board()).map(|piece: PieceSquare| {
                let moved = PieceSquare::new(piece.color, piece.role, place(piece.square));
                feature_index(turn, moved) as u16
            }),
        );
        let end = u32::try_from(self.features.len()).map_err(|_| {
            "more than 4 billion pieces in one load; use --max-positions".to_string()
        })?;
        self.ends.push(end);
        self.labels.push(label);
        Ok(())
    }

    /// The memory the positions take, in bytes.
    pub fn bytes(&self) -> usize {
        self.features.len() * 2 + self.ends.len() * 4 + self.labels.len() * 4
    }

    /// A hash of every position and label: a checkpoint resumes only on the data it was made on.
    pub fn fingerprint(&self) -> u64 {
        let mut hash = 0xcbf2_9ce4_8422_2325u64;
        let mut eat = |word: u64| {
            hash = (hash ^ word).wrapping_mul(0x0100_0000_01b3);
        };
        for &f in &self.features {
            eat(u64::from(f));
        }
        for &e in &self.ends {
            eat(u64::from(e));
        }
        for &l in &self.labels {
            eat(u64::from(l.to_bits()));
        }
        hash
    }
}

/// The training and held-out parts of the data.
#[derive(Debug, Default)]
pub struct Data {
    pub train: Positions,
    pub validation: Positions,
    /// Games read (`#game` markers).
    pub games: u64,
    pub skipped_lines: usize,
}

/// How to read the data.
#[derive(Clone, Copy, Debug)]
pub struct LoadOptions {
    /// The game result's weight in the label (the rest is the search score's).
    pub wdl: f32,
    /// One game in this many is held out for the validation loss (0: none).
    pub holdout_every: u64,
    /// Read at most this many positions.
    pub max_positions: usize,
    /// Also train on the file-mirror of every training position without castling rights
    /// (held-out positions are never mirrored).
    pub mirror: bool,
}

/// σ(x) = 1 / (1 + e^−x).
#[inline]
pub fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// The blended label from the side to move's view (see the module comment).
pub fn label(wdl: f32, result: f32, score_cp: f32) -> f32 {
    wdl * result + (1.0 - wdl) * sigmoid(score_cp / nnue::SCALE as f32)
}

/// Reads `datagen` files in order; a broken line is logged with its file and line and skipped,
/// a missing file or no positions at all is an error.
pub fn load(files: &[PathBuf], options: LoadOptions) -> anyhow::Result<Data> {
    if !(0.0..=1.0).contains(&options.wdl) {
        bail!("--wdl {} is not within 0..=1", options.wdl);
    }
    let mut data = Data::default();
    'files: for file in files {
        let reader = std::io::BufReader::new(
            std::fs::File::open(file).with_context(|| format!("cannot read {}", file.display()))?,
        );
        for (number, line) in reader.lines().enumerate() {
            let line = line.with_context(|| format!("cannot read {}", file.display()))?;
            if data.train.len() + data.validation.len() >= options.max_positions {
                break 'files;
            }
            if line.starts_with("#game") {
                data.games += 1;
                continue;
            }
            let parsed = parse_position(&line).and_then(|parsed| {
                let Some((sample, position)) = parsed else {
                    return Ok(());
                };
                let white = position.turn() == Color::White;
                let result = sample.result as f32;
                let score = sample.score_cp as f32;
                let (result, score) = if white {
                    (result, score)
                } else {
                    (1.0 - result, -score)
                };
                let label = label(options.wdl, result, score);
                if is_held_out(data.games, options.holdout_every) {
                    return data.validation.push(&position, label);
                }
                data.train.push(&position, label)?;
                if options.mirror && position.castles().castling_rights().is_empty() {
                    data.train.push_mirrored(&position, label)?;
                }
                Ok(())
            });
            if let Err(e) = parsed {
                skip_line(&mut data.skipped_lines, file, number, &e);
            }
        }
    }
    report_skipped(data.skipped_lines);
    if data.train.is_empty() {
        bail!(
            "no training positions in {} (lines are `FEN;score;result` as `ladder tune datagen` \
             writes them)",
            files
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_become_side_to_move_labels_and_every_kth_game_is_held_out() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("data.txt");
        std::fs::write(
            &file,
            "#run datagen 2 seed 1\n\
             4k3/8/8/8/8/8/8/3QK3 w - - 0 1;800;1\n\
             4k3/8/8/8/8/8/8/3QK3 b - - 0 1;800;1\n\
             #game 0 1 40\n\
             not a fen;1;1\n\
             4k3/8/8/8/8/8/8/4K3 w - - 0 1;0;0.5\n\
             #game 1 0.5 80\n",
        )
        .unwrap();
        let options = LoadOptions {
            wdl: 0.5,
            holdout_every: 2,
            max_positions: usize::MAX,
            mirror: false,
        };
        let data = load(&[file], options).unwrap();
        assert_eq!((data.games, data.skipped_lines), (2, 1));
        assert_eq!((data.train.len(), data.validation.len()), (2, 1));
        // White to move and winning: the result 1 and σ(2) blended.
        let white = 0.5 + 0.5 * sigmoid(2.0);
        assert!((data.train.label(0) - white).abs() < 1e-6);
        // The same from Black's view: lost, and the score negated.
        assert!((data.train.label(1) - (1.0 - white)).abs() < 1e-6);
        assert_eq!(data.train.features(0).len(), 3);
        // Black's own king is its own piece on its own back rank: e1 from its view.
        assert!(data.train.features(1).contains(&(5 * 64 + 4)));
        assert!((data.validation.label(0) - 0.5).abs() < 1e-6);
    }

    #[test]
    fn mirroring_adds_the_file_mirror_of_training_positions_without_castling_rights() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("data.txt");
        std::fs::write(
            &file,
            "4k3/8/8/8/8/8/8/3QK3 w - - 0 1;800;1\n\
             r3k3/8/8/8/8/8/8/4K2R w Kq - 0 1;0;0.5\n\
             #game 0 1 40\n\
             4k3/8/8/8/8/8/8/3QK3 w - - 0 1;800;1\n\
             #game 1 1 40\n",
        )
        .unwrap();
        let options = |mirror| LoadOptions {
            wdl: 0.5,
            holdout_every: 2,
            max_positions: usize::MAX,
            mirror,
        };
        let plain = load(std::slice::from_ref(&file), options(false)).unwrap();
        let mirrored = load(&[file], options(true)).unwrap();
        assert_eq!((plain.train.len(), plain.validation.len()), (2, 1));
        // Only the first position lacks castling rights; the held-out one is never mirrored.
        assert_eq!((mirrored.train.len(), mirrored.validation.len()), (3, 1));
        let feature = |role: usize, square: Square| (role * 64 + square as usize) as u16;
        // The queen on d1 becomes a queen on e1, the king on e1 a king on d1; same label.
        assert!(mirrored.train.features(1).contains(&feature(4, Square::E1)));
        assert!(mirrored.train.features(1).contains(&feature(5, Square::D1)));
        assert!(!mirrored.train.features(1).contains(&feature(4, Square::D1)));
        assert_eq!(mirrored.train.label(1), mirrored.train.label(0));
        assert_eq!(mirrored.train.features(2), plain.train.features(1));
    }

    #[test]
    fn no_positions_and_missing_files_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.txt");
        std::fs::write(&empty, "#game 0 1 3\n").unwrap();
        let options = LoadOptions {
            wdl: 0.3,
            holdout_every: 0,
            max_positions: usize::MAX,
            mirror: false,
        };
        let e = load(std::slice::from_ref(&empty), options).unwrap_err();
        assert!(e.to_string().contains("no training positions"), "{e}");
        let e = load(&[dir.path().join("missing.txt")], options).unwrap_err();
        assert!(e.to_string().contains("missing.txt"), "{e}");
    }
}
