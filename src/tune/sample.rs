//! The training data's text format: one labelled position a line, games as blocks.
//!
//! ```text
//! <FEN>;<search score, centipawns, White's view>;<result: 1, 0.5 or 0, White's view>
//! ...
//! #game <index> <result> <plies>
//! ```
//!
//! A block of positions ends with its game's `#game` line, written in one piece after the game
//! is over, so a file cut by a kill ends in a whole block or in a partial one that resuming
//! drops ([`complete_prefix`]). Files of consecutive shards concatenate into the data of one run.

use std::fmt::Write as _;

/// One labelled position.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub fen: String,
    /// The search's score from White's point of view, centipawns.
    pub score_cp: i32,
    /// The game's result from White's point of view: 1, 0.5 or 0.
    pub result: f64,
}

impl Sample {
    /// Parses one data line; `None` for a comment or game marker, an error for a broken line.
    pub fn parse(line: &str) -> Result<Option<Sample>, String> {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return Ok(None);
        }
        let mut fields = line.split(';');
        let (Some(fen), Some(score), Some(result), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return Err("expected three fields separated by ';'".into());
        };
        let score_cp = score
            .trim()
            .parse::<i32>()
            .map_err(|_| format!("score {score:?} is not a whole number of centipawns"))?;
        let result = match result.trim() {
            "1" => 1.0,
            "0.5" => 0.5,
            "0" => 0.0,
            other => return Err(format!("result {other:?} is not 1, 0.5 or 0")),
        };
        Ok(Some(Sample {
            fen: fen.trim().to_string(),
            score_cp,
            result,
        }))
    }
}

/// The result's text in a data line.
pub fn result_text(result: f64) -> &'static str {
    if result > 0.75 {
        "1"
    } else if result < 0.25 {
        "0"
    } else {
        "0.5"
    }
}

/// One finished game's block: its positions labelled with its result, then the marker.
pub fn game_block(index: u64, positions: &[(String, i32)], result: f64, plies: usize) -> String {
    let mut block = String::with_capacity(positions.len() * 80 + 32);
    let result = result_text(result);
    for (fen, score) in positions {
        let _ = writeln!(block, "{fen};{score};{result}");
    }
    let _ = writeln!(block, "#game {index} {result} {plies}");
    block
}

/// The part of a data file made of whole game blocks: its length in bytes and the index of
/// the game after its last block (`first` when there is none). An error when the blocks'
/// indices do not run on from `first` one by one (the file belongs to another shard or run).
pub fn complete_prefix(text: &str, first: u64) -> Result<(usize, u64), String> {
    let mut end = 0;
    let mut next = first;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        offset += line.len();
        if !line.ends_with('\n') {
            break;
        }
        if let Some(rest) = line.strip_prefix("#game ") {
            let index = rest
                .split_whitespace()
                .next()
                .and_then(|i| i.parse::<u64>().ok())
                .ok_or_else(|| format!("a game marker without an index: {:?}", line.trim()))?;
            if index != next {
                return Err(format!(
                    "game {index} follows game {} (expected {next}): the file was made with \
                     other --games, --shard or --seed",
                    next as i64 - 1
                ));
            }
            next += 1;
            end = offset;
        }
    }
    Ok((end, next))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_reads_back_and_a_cut_block_is_dropped() {
        let block = game_block(
            7,
            &[("8/8/8/4k3/8/8/8/3QK3 w - - 0 1".into(), 950)],
            1.0,
            42,
        );
        let sample = Sample::parse(block.lines().next().unwrap())
            .unwrap()
            .unwrap();
        assert_eq!(sample.score_cp, 950);
        assert_eq!(sample.result, 1.0);
        let mut text = block.clone();
        text.push_str(&game_block(8, &[("x".into(), 0)], 0.5, 3));
        let whole = text.len();
        text.push_str("8/8/8/4k3/8/8/8/3QK3 b - - 0 1;-3;0");
        assert_eq!(complete_prefix(&text, 7), Ok((whole, 9)));
        // A file from another shard does not continue this one.
        assert!(complete_prefix(&text, 0).is_err());
    }

    #[test]
    fn broken_lines_are_errors_not_panics() {
        assert!(Sample::parse("fen;12").is_err());
        assert!(Sample::parse("fen;twelve;1").is_err());
        assert!(Sample::parse("fen;12;2").is_err());
        assert_eq!(Sample::parse("#game 1 1 40"), Ok(None));
    }
}
