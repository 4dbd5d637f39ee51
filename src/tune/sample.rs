//! The training data's text format: one labelled position a line, games as blocks.
//!
//! ```text
//! #run datagen 2 seed=1 games=20000 shard=1/2 nodes=soft:5000:100000 random_plies=8 ...
//! <FEN>;<search score, centipawns, White's view>;<result: 1, 0.5 or 0, White's view>
//! ...
//! #game <index> <result> <plies>
//! ```
//!
//! The first line names the run ([`RunHeader`]); files made before it existed start with a
//! position. A block of positions ends with its game's `#game` line, written in one piece after
//! the game is over, so a file cut by a kill ends in a whole block or in a partial one that
//! resuming drops ([`complete_prefix`]).
//!
//! Both loaders (the tuner's [`super::dataset`] and the trainer's [`super::net::data`]) read it
//! through here: a line with its position ([`parse_position`]), the held-out games
//! ([`is_held_out`]) and broken lines logged and skipped ([`skip_line`]).

use std::fmt::Write as _;
use std::path::Path;

use shakmaty::fen::Fen;
use shakmaty::{CastlingMode, Chess};

use crate::shard::Shard;

/// How many nodes a data generation searches per move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeBudget {
    /// Exactly this many (the search's own limit).
    Fixed(u64),
    /// No new iteration once one has ended past `soft`; never more than `hard`.
    Soft { soft: u64, hard: u64 },
}

impl NodeBudget {
    /// The search's node limit.
    pub fn cap(self) -> u64 {
        match self {
            NodeBudget::Fixed(n) => n,
            NodeBudget::Soft { hard, .. } => hard,
        }
    }
}

impl std::fmt::Display for NodeBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NodeBudget::Fixed(n) => write!(f, "fixed:{n}"),
            NodeBudget::Soft { soft, hard } => write!(f, "soft:{soft}:{hard}"),
        }
    }
}

/// The version of the data's format written in every header.
pub const FORMAT: u32 = 2;

/// What made a data file: the settings that decide its games, the shard it holds, and the
/// fingerprints of the weights and of the binary that played them. Two files belong to one run
/// when everything but the shard's index agrees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunHeader {
    pub seed: u64,
    pub games: u64,
    pub shard: Shard,
    pub nodes: String,
    pub random_plies: u32,
    pub hash_mb: usize,
    /// Fingerprint of the evaluation weights' text, 16 hex digits.
    pub weights: String,
    /// The built-in network that played instead of the weights, 0 for none (written only when
    /// there is one, so the first generation's headers keep their bytes).
    pub network: u32,
    /// Fingerprint of the executable that played the games, 16 hex digits.
    pub binary: String,
}

impl RunHeader {
    /// The header's line, newline included.
    pub fn line(&self) -> String {
        format!(
            "#run datagen {FORMAT} seed={} games={} shard={} nodes={} random_plies={} hash_mb={} \
             weights={}{} binary={}\n",
            self.seed,
            self.games,
            self.shard,
            self.nodes,
            self.random_plies,
            self.hash_mb,
            self.weights,
            match self.network {
                0 => String::new(),
                n => format!(" network={n}"),
            },
            self.binary
        )
    }

    /// Reads a header line; the error says what is missing or wrong.
    pub fn parse(line: &str) -> Result<RunHeader, String> {
        let Some(rest) = line.trim().strip_prefix("#run datagen ") else {
            return Err(
                "it does not start with a `#run datagen` header (made by an older \
                        `ladder tune datagen`, or not data at all)"
                    .into(),
            );
        };
        let mut words = rest.split_whitespace();
        let format = words.next().unwrap_or("");
        if format != FORMAT.to_string() {
            return Err(format!(
                "its format is {format:?}, this binary reads {FORMAT}"
            ));
        }
        let fields: std::collections::HashMap<&str, &str> =
            words.filter_map(|w| w.split_once('=')).collect();
        let text = |key: &str| -> Result<String, String> {
            fields
                .get(key)
                .map(|v| v.to_string())
                .ok_or_else(|| format!("its header has no {key}="))
        };
        fn number<T: std::str::FromStr>(key: &str, v: String) -> Result<T, String> {
            v.parse()
                .map_err(|_| format!("its header's {key}={v:?} is not a number"))
        }
        Ok(RunHeader {
            seed: number("seed", text("seed")?)?,
            games: number("games", text("games")?)?,
            shard: text("shard")?
                .parse()
                .map_err(|e| format!("its header's shard: {e}"))?,
            nodes: text("nodes")?,
            random_plies: number("random_plies", text("random_plies")?)?,
            hash_mb: number("hash_mb", text("hash_mb")?)?,
            weights: text("weights")?,
            network: match fields.get("network") {
                Some(v) => number("network", v.to_string())?,
                None => 0,
            },
            binary: text("binary")?,
        })
    }

    /// `Ok` when `other` is a shard of the same run (any index); else the first difference.
    pub fn same_run(&self, other: &RunHeader) -> Result<(), String> {
        let pairs = [
            ("seed", self.seed.to_string(), other.seed.to_string()),
            ("games", self.games.to_string(), other.games.to_string()),
            (
                "shard count",
                self.shard.count.to_string(),
                other.shard.count.to_string(),
            ),
            ("nodes", self.nodes.clone(), other.nodes.clone()),
            (
                "random_plies",
                self.random_plies.to_string(),
                other.random_plies.to_string(),
            ),
            (
                "hash_mb",
                self.hash_mb.to_string(),
                other.hash_mb.to_string(),
            ),
            ("weights", self.weights.clone(), other.weights.clone()),
            (
                "network",
                self.network.to_string(),
                other.network.to_string(),
            ),
            ("binary", self.binary.clone(), other.binary.clone()),
        ];
        match pairs.into_iter().find(|(_, a, b)| a != b) {
            None => Ok(()),
            Some((key, a, b)) => Err(format!(
                "another run: {key} {b} where {a} was expected{}",
                if key == "binary" {
                    " (made by another build of ladder)"
                } else {
                    ""
                }
            )),
        }
    }
}

/// A stable 64-bit fingerprint of `bytes` (FNV-1a), as 16 hex digits.
pub fn fingerprint(bytes: &[u8]) -> String {
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("{hash:016x}")
}

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

/// Parses one data line with its position; `None` for a comment or game marker, an error for
/// a broken line or an unreadable or illegal FEN.
pub fn parse_position(line: &str) -> Result<Option<(Sample, Chess)>, String> {
    let Some(sample) = Sample::parse(line)? else {
        return Ok(None);
    };
    let position: Chess = sample
        .fen
        .parse::<Fen>()
        .map_err(|e| format!("bad FEN: {e}"))?
        .into_position(CastlingMode::Standard)
        .map_err(|e| format!("illegal position: {e}"))?;
    Ok(Some((sample, position)))
}

/// Whether the game after `games_before` finished ones is held out when one game in `every`
/// is (0: none): the last of each `every`.
pub fn is_held_out(games_before: u64, every: u64) -> bool {
    every > 0 && games_before % every == every - 1
}

/// How many broken lines a load logs one by one; the rest are only counted.
const SKIPS_LOGGED: usize = 10;

/// Counts a broken line of a data file (`number` from 0), logging it with its file and line
/// while few have been.
pub fn skip_line(skipped: &mut usize, file: &Path, number: usize, error: &str) {
    *skipped += 1;
    if *skipped <= SKIPS_LOGGED {
        tracing::warn!("{}:{}: {error}; line skipped", file.display(), number + 1);
    }
}

/// After a load: the count of broken lines, when more were skipped than logged.
pub fn report_skipped(skipped: usize) {
    if skipped > SKIPS_LOGGED {
        tracing::warn!("{skipped} broken lines skipped in all");
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

/// The part of a data file made of its header and whole game blocks: its length in bytes and
/// the index of the game after its last block (`first` when there is none). An error when the
/// blocks' indices do not run on from `first` one by one (the file belongs to another shard or
/// run).
pub fn complete_prefix(text: &str, first: u64) -> Result<(usize, u64), String> {
    let mut end = 0;
    let mut next = first;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        offset += line.len();
        if !line.ends_with('\n') {
            break;
        }
        if offset == line.len() && line.starts_with("#run ") {
            end = offset;
            continue;
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
    use shakmaty::Position;

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
    fn a_header_reads_back_and_names_what_differs() {
        let header = RunHeader {
            seed: 3,
            games: 100,
            shard: Shard::new(2, 4).unwrap(),
            nodes: NodeBudget::Soft {
                soft: 5000,
                hard: 100_000,
            }
            .to_string(),
            random_plies: 8,
            hash_mb: 8,
            weights: fingerprint(b"weights"),
            network: 0,
            binary: fingerprint(b"binary"),
        };
        let line = header.line();
        assert_eq!(RunHeader::parse(&line), Ok(header.clone()));
        // Without a network the header keeps the first generation's bytes; with one it names
        // it, and the two are different runs.
        assert!(!line.contains("network="), "{line}");
        let second_generation = RunHeader {
            network: 3,
            ..header.clone()
        };
        let line3 = second_generation.line();
        assert!(line3.contains(" network=3 "), "{line3}");
        assert_eq!(RunHeader::parse(&line3), Ok(second_generation.clone()));
        let e = header.same_run(&second_generation).unwrap_err();
        assert!(e.contains("network"), "{e}");
        let other_shard = RunHeader {
            shard: Shard::new(3, 4).unwrap(),
            ..header.clone()
        };
        assert_eq!(header.same_run(&other_shard), Ok(()));
        let other_binary = RunHeader {
            binary: fingerprint(b"another build"),
            ..header.clone()
        };
        let e = header.same_run(&other_binary).unwrap_err();
        assert!(e.contains("another build of ladder"), "{e}");
        assert!(RunHeader::parse("8/8/8/8/8/8/8/8 w - - 0 1;0;0.5").is_err());
        assert!(RunHeader::parse(&line.replace("games=100", "games=x")).is_err());
        // The header is part of the whole prefix: a run killed before its first game keeps it.
        assert_eq!(complete_prefix(&line, 25), Ok((line.len(), 25)));
    }

    #[test]
    fn broken_lines_are_errors_not_panics() {
        assert!(Sample::parse("fen;12").is_err());
        assert!(Sample::parse("fen;twelve;1").is_err());
        assert!(Sample::parse("fen;12;2").is_err());
        assert_eq!(Sample::parse("#game 1 1 40"), Ok(None));
    }

    #[test]
    fn a_line_reads_with_its_position_and_a_bad_fen_is_named() {
        let start = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
        let (sample, position) = parse_position(&format!("{start};15;0.5")).unwrap().unwrap();
        assert_eq!((sample.score_cp, sample.result), (15, 0.5));
        assert_eq!(position.board(), Chess::default().board());
        assert!(matches!(parse_position("#game 0 1 40"), Ok(None)));
        let bad = parse_position("8/8/8/x/8/8/8/8 w - - 0 1;0;1").unwrap_err();
        assert!(bad.starts_with("bad FEN"), "{bad}");
        // Both kings missing: a FEN that reads but is no legal position.
        let illegal = parse_position("8/8/8/8/8/8/8/8 w - - 0 1;0;1").unwrap_err();
        assert!(illegal.starts_with("illegal position"), "{illegal}");
    }

    #[test]
    fn the_last_game_of_each_group_is_held_out() {
        let held: Vec<bool> = (0..6).map(|g| is_held_out(g, 3)).collect();
        assert_eq!(held, [false, false, true, false, false, true]);
        assert!((0..6).all(|g| !is_held_out(g, 0)));
    }
}
