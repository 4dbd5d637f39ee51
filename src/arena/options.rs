//! What a match is asked to be: every option of `ladder arena`, which is also how calibration's
//! arena loop and the tests describe a match to [`super::run_match`].

use std::path::PathBuf;

use crate::anchors::AnchorsFile;
use crate::levels::Coefficients;
use crate::lichess::{Clock, Perf};
use crate::player::think::ThinkMode;

use super::judge;
use crate::shard::ShardArg;

/// Everything `ladder arena` takes.
#[derive(Debug, Clone, clap::Args)]
pub struct ArenaOptions {
    /// Our levels taking part: `3`, `1..5`, `1,3,5` (repeatable). With --from-results and
    /// --judge-games: the levels judged (default: every level in the files).
    #[arg(long = "level", value_name = "LEVELS")]
    pub levels: Vec<String>,
    /// An external UCI engine, one argument without spaces (repeatable), e.g.
    /// `name=sf1500,cmd=/usr/games/stockfish,option.UCI_LimitStrength=true,option.UCI_Elo=1500,rating=1500`;
    /// also arg=, nodes=, depth=, movetime=.
    #[arg(long = "engine", value_name = "SPEC")]
    pub engines: Vec<String>,
    /// Lichess AI levels emulated with Fairy-Stockfish: `1..8`, `1,3` (repeatable).
    #[arg(long = "lichess-ai", value_name = "LEVELS")]
    pub lichess_ai: Vec<String>,
    /// Anchors by name from the anchors file: `sf1500`, `lichess-ai-1,greedy`, `all`
    /// (repeatable); their ratings come from the file.
    #[arg(long = "anchor", alias = "anchors", value_name = "NAMES")]
    pub anchors: Vec<String>,
    /// The anchors file (default: the built-in calibration/anchors.toml).
    #[arg(long, value_name = "FILE")]
    pub anchors_file: Option<PathBuf>,
    /// Pair every player with its K nearest neighbours on each side of the scale (players
    /// ordered by rating when all have one, else as listed): the anchor tournament's schedule.
    #[arg(long, value_name = "K", conflicts_with_all = ["round_robin", "gauntlet"])]
    pub neighbours: Option<usize>,
    /// Play nothing: fit the anchors jointly from the games between anchors in the
    /// --from-results files, pin them to the anchors file's scale and print their ratings.
    #[arg(long, requires = "from_results")]
    pub fit_anchors: bool,
    /// With --fit-anchors: write the fitted ratings, SEs and games into --anchors-file.
    #[arg(long, requires_all = ["fit_anchors", "anchors_file"])]
    pub update_anchors: bool,
    /// With --update-anchors: the command line that played the games, kept in the file.
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub tournament_command: String,
    /// With --update-anchors: binary and machine the games were played with, kept in the file.
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub machine: String,
    /// The Fairy-Stockfish binary for --lichess-ai.
    #[arg(long, default_value = "/usr/games/fairy-stockfish")]
    pub fairy_stockfish: PathBuf,
    /// Everyone plays everyone (the default).
    #[arg(long, conflicts_with = "gauntlet")]
    pub round_robin: bool,
    /// Every level plays every external engine (without engines: the first level plays the
    /// others).
    #[arg(long)]
    pub gauntlet: bool,
    /// Clock for both sides, seconds+increment: `60+0.6`.
    #[arg(long, value_name = "TC")]
    pub tc: Option<Clock>,
    /// How our levels pace their moves on the clock (needs --tc): `fast` moves as the search
    /// ends; `human` charges each move the time a person of the level would take, as the
    /// daemon waits live (`think_time = "human"`), without waiting: the levels come into time
    /// trouble as people do (the report's clock columns), at no cost in wall time.
    #[arg(long, value_name = "PACE", default_value = "fast", value_parser = think_mode, requires = "tc")]
    pub think: ThinkMode,
    /// Fixed nodes per move for external engines without their own limits (no clock).
    #[arg(long, conflicts_with = "tc")]
    pub nodes: Option<u64>,
    /// Fixed milliseconds per move for external engines without their own limits (no clock).
    #[arg(long, value_name = "MS", conflicts_with = "tc")]
    pub movetime: Option<u64>,
    /// Fixed depth per move for external engines without their own limits (no clock).
    #[arg(long, conflicts_with = "tc")]
    pub depth: Option<u32>,
    /// Openings file (.epd, or .pgn); default: the built-in balanced lines.
    #[arg(long)]
    pub openings: Option<PathBuf>,
    /// Games per pairing; each opening is played with both colours.
    #[arg(long, default_value_t = 20)]
    pub games_per_pairing: usize,
    /// Games played at once (default: number of cores).
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// Play only part K of N of the schedule (for several machines): `2/4`, or `env/N` to take K
    /// from a Kubernetes Indexed Job or a Slurm job array (`docs/cluster.md`).
    #[arg(long, default_value = "1/1")]
    pub shard: ShardArg,
    /// Match seed; every game's seed derives from it and the game index (default: random).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Results JSONL (appended; the schema `ladder calibrate` reads).
    #[arg(long, default_value = "arena-results.jsonl")]
    pub results: PathBuf,
    /// PGN of every game, in schedule order (appended, as --results is).
    #[arg(long)]
    pub pgn: Option<PathBuf>,
    /// Play nothing: report on these arena results files (repeatable; e.g. several shards or
    /// runs sharing a level).
    #[arg(long, value_name = "FILE")]
    pub from_results: Vec<PathBuf>,
    /// With --from-results: judge the last N games of each level in the files at
    /// --judge-depth, for the move-quality table beside people's figures; 0: not judged.
    /// Levels' ratings there come from --coefficients.
    #[arg(long, value_name = "N", default_value_t = 0, requires = "from_results")]
    pub judge_games: usize,
    /// With --judge-games: judge only the games a level played as --coefficients has it (its
    /// version, or an older one under which the level plays alike, read from --history-dir):
    /// a calibration loop's last version, judged on its own games.
    #[arg(long, requires = "judge_games")]
    pub judge_as_coefficients: bool,
    /// With --judge-games: judge only games whose sides are rated within ELO of each other (a
    /// level by --coefficients, an anchor by its record): people's figures come from games
    /// between players of about one strength, and issue 33 asks for opponents near the level's.
    #[arg(long, value_name = "ELO", requires = "judge_games", value_parser = near_elo)]
    pub judge_near: Option<f64>,
    /// The older coefficients versions for --judge-as-coefficients (`coefficients-vN.toml`, as
    /// `ladder calibrate` keeps them; default: history/ beside --coefficients, else
    /// calibration/history).
    #[arg(long, value_name = "DIR", requires = "judge_as_coefficients")]
    pub history_dir: Option<PathBuf>,
    /// Also write the report (Markdown) here.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Coefficients file (default: the built-in calibration/coefficients.toml).
    #[arg(long)]
    pub coefficients: Option<PathBuf>,
    /// Prefix of the game ids in the results (default: arena-<seed in hex>).
    #[arg(long)]
    pub match_id: Option<String>,
    /// Lichess perf the results count for (default: the clock's speed, blitz without clock).
    #[arg(long)]
    pub perf: Option<Perf>,
    /// The engine that judges every game's moves after it is played (average centipawn loss,
    /// inaccuracies, mistakes, blunders); missing: the report says so and the match goes on.
    #[arg(long, value_name = "PATH", default_value = judge::Judge::STOCKFISH)]
    pub judge: PathBuf,
    /// The judge's search depth per position; 0: no judging.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub judge_depth: u32,
    /// Time allowed for an engine to start and get ready, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    pub startup_timeout: u64,
    /// Time allowed for a move without clock or movetime, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 60_000)]
    pub move_timeout: u64,
    /// Grace beyond the clock or movetime before an engine counts as hung, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 1_000)]
    pub timeout_margin: u64,
}

impl ArenaOptions {
    /// The coefficients of the options: `--coefficients`, else the built-in ones.
    pub fn coefficients(&self) -> anyhow::Result<Coefficients> {
        match &self.coefficients {
            Some(path) => Coefficients::load_or_explain(path, "--coefficients"),
            None => Ok(Coefficients::builtin()),
        }
    }

    /// The history directory --judge-as-coefficients compares with, when it is asked for.
    pub fn judge_as_coefficients_history(&self) -> Option<PathBuf> {
        self.judge_as_coefficients.then(|| {
            self.history_dir
                .clone()
                .unwrap_or_else(|| match &self.coefficients {
                    Some(path) => path
                        .parent()
                        .unwrap_or(std::path::Path::new("."))
                        .join("history"),
                    None => PathBuf::from("calibration/history"),
                })
        })
    }

    /// The anchors file of the options: `--anchors-file`, else the built-in one.
    pub fn anchors(&self) -> anyhow::Result<AnchorsFile> {
        Ok(match &self.anchors_file {
            Some(path) => AnchorsFile::load(path)?,
            None => AnchorsFile::builtin(),
        })
    }
}

/// `--think`: `fast` or `human`.
fn think_mode(text: &str) -> Result<ThinkMode, String> {
    ThinkMode::parse(text).ok_or_else(|| format!("{text:?} is not a pace: fast or human"))
}

/// `--judge-near`: a number of rating points, finite and not negative.
fn near_elo(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(elo) if elo.is_finite() && elo >= 0.0 => Ok(elo),
        _ => Err(format!(
            "{text:?} is not a number of rating points (0 or more)"
        )),
    }
}
