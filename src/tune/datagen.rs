//! `ladder tune datagen`: training positions from the engine's games against itself.
//!
//! Game `i` of a run depends only on the seed, `i` and the settings: it opens with a line of
//! the levels' book, then a few random plies that lose no material (checked by a short search:
//! an opening that leaves one side far ahead is drawn again), then the engine plays both sides
//! with a fresh hash, at a fixed node budget or, as the field makes network data (Stormphrax,
//! OpenBench, Lozza), with a soft node limit (no new iteration once it is passed) under a hard
//! cap. Wins are adjudicated when both sides' searches
//! agree on a decisive score for a few plies, draws when the score stays near zero late in the
//! game; the rules' own ends (mate, repetition, 50 moves, insufficient material) end it too.
//! Every quiet position searched (not in check, best move neither a capture nor a promotion,
//! no mate score) is kept with the search's score and the game's result.
//!
//! A run is cut into shards (`--shard K/N`, or `env/N` under a batch system: [`crate::shard`]),
//! contiguous ranges of game indices. Every file starts with its run's header ([`RunHeader`]:
//! the settings, the shard, the weights and the binary), so a file is never resumed or merged
//! with another run's; `ladder tune merge` ([`super::merge`]) joins a complete set of shards into
//! the file one process would have written. The output is appended game by game in index order,
//! so a killed run resumes where its last whole game ends.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use anyhow::{Context, bail};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use shakmaty::{Color, Move, Position};

use super::sample::{NodeBudget, RunHeader, complete_prefix, fingerprint, game_block};
use crate::engine::evaluator::{SHIPPED_NETWORK, network_of_version};
use crate::engine::see::see_non_negative;
use crate::engine::{
    Engine, Evaluator, Game, Limits, NoStop, Score, SearchInfo, SearchObserver, SearchParams,
    Weights,
};
use crate::player::book::book_move;
use crate::shard::{Shard, ShardArg};

/// How one run plays its games.
#[derive(Clone, Debug, PartialEq)]
pub struct DatagenSettings {
    pub seed: u64,
    /// How many nodes each move searches.
    pub nodes: NodeBudget,
    /// Random plies after the book line.
    pub random_plies: u32,
    pub hash_mb: usize,
    /// The evaluation weights both sides play with.
    pub weights: Arc<Weights>,
    /// The built-in network both sides play with instead (0: none, the weights play): the
    /// second generation's data is the first network's own games.
    pub network: u32,
}

impl Default for DatagenSettings {
    fn default() -> Self {
        DatagenSettings {
            seed: 1,
            nodes: NodeBudget::Fixed(5_000),
            random_plies: 6,
            hash_mb: 8,
            weights: Weights::shipped(),
            network: 0,
        }
    }
}

/// An opening whose short search scores beyond this (centipawns) is drawn again.
const OPENING_MAX_CP: i32 = 300;
/// Nodes of the opening's verification search.
const OPENING_CHECK_NODES: u64 = 2_000;
/// Tries for a balanced opening before the last one is taken as it is.
const OPENING_TRIES: u64 = 16;
/// A win is adjudicated after this many consecutive plies at or beyond [`WIN_CP`].
const WIN_PLIES: u32 = 4;
const WIN_CP: i32 = 1_000;
/// A draw is adjudicated after this many consecutive plies within [`DRAW_CP`], from
/// [`DRAW_FROM_PLY`] on.
const DRAW_PLIES: u32 = 10;
const DRAW_CP: i32 = 10;
const DRAW_FROM_PLY: usize = 80;
/// A game still running after this many plies is a draw.
pub const MAX_PLIES: usize = 400;

/// Ends a game early on what the searches say: a win when the scores (White's view) stay at
/// or beyond [`WIN_CP`] on the same side for [`WIN_PLIES`] plies (both sides' searches agree),
/// a draw when they stay within [`DRAW_CP`] for [`DRAW_PLIES`] plies from [`DRAW_FROM_PLY`] on.
#[derive(Clone, Debug, Default)]
pub struct Adjudicator {
    win_run: (i32, u32),
    draw_run: u32,
}

impl Adjudicator {
    /// Hears the score of the search at `ply`; the result (White's view) once adjudicated.
    pub fn observe(&mut self, ply: usize, white_score: i32) -> Option<f64> {
        let sign = white_score.signum();
        if white_score.abs() >= WIN_CP {
            self.win_run = if self.win_run.0 == sign {
                (sign, self.win_run.1 + 1)
            } else {
                (sign, 1)
            };
            if self.win_run.1 >= WIN_PLIES {
                return Some(if sign > 0 { 1.0 } else { 0.0 });
            }
        } else {
            self.win_run = (0, 0);
        }
        if ply >= DRAW_FROM_PLY && white_score.abs() <= DRAW_CP {
            self.draw_run += 1;
            if self.draw_run >= DRAW_PLIES {
                return Some(0.5);
            }
        } else {
            self.draw_run = 0;
        }
        None
    }
}

/// One played game: its kept positions with White's-view scores, the result, the plies.
#[derive(Clone, Debug, PartialEq)]
pub struct PlayedGame {
    pub positions: Vec<(String, i32)>,
    pub result: f64,
    pub plies: usize,
}

/// Plays game `index` of a run: the same settings and index give the same game.
pub fn play_game(settings: &DatagenSettings, index: u64) -> PlayedGame {
    let mut engine = match network_of_version(settings.network) {
        Some(network) => Engine::with_evaluator(settings.hash_mb, Evaluator::Network(network)),
        None => Engine::with_weights(settings.hash_mb, settings.weights.clone()),
    };
    let mut game = opening(settings, index, &mut engine);
    engine.new_game();
    let params = SearchParams::full_strength(Limits::nodes(settings.nodes.cap()));
    let mut positions = Vec::new();
    let mut adjudicator = Adjudicator::default();
    let result = loop {
        if let Some(result) = result_by_rules(&game) {
            break result;
        }
        let found = match settings.nodes {
            NodeBudget::Fixed(_) => engine.search(&game, &params, &mut NoStop),
            NodeBudget::Soft { soft, .. } => engine.search(
                &game,
                &params,
                &mut SoftNodes {
                    soft,
                    passed: false,
                },
            ),
        };
        let Some(best) = found.best_move else {
            break 0.5; // unreachable: outcome() saw legal moves
        };
        let score = white_view(&game, found.score);
        if matches!(found.score, Score::Cp(_)) && is_quiet(&game, best) {
            positions.push((game.fen(), score));
        }
        if let Some(result) = adjudicator.observe(game.moves().len(), score) {
            break result;
        }
        game.play(best);
    };
    PlayedGame {
        positions,
        result,
        plies: game.moves().len(),
    }
}

/// Starts no new iteration once an iteration has ended past `soft` nodes; the hard cap is the
/// search's own node limit.
struct SoftNodes {
    soft: u64,
    passed: bool,
}

impl SearchObserver for SoftNodes {
    // Polled before every iteration (and every 1024 nodes inside one, where `passed` is still
    // false: it only turns true at the end of an iteration).
    fn should_stop(&mut self, _nodes: u64) -> bool {
        self.passed
    }
    fn on_iteration(&mut self, info: &SearchInfo) {
        self.passed |= info.nodes >= self.soft;
    }
}

/// The result (White's view) when the rules end the game or it has gone on too long.
pub fn result_by_rules(game: &Game) -> Option<f64> {
    if let Some(end) = game.outcome() {
        return Some(match end.winner() {
            Some(Color::White) => 1.0,
            Some(Color::Black) => 0.0,
            None => 0.5,
        });
    }
    (game.moves().len() >= MAX_PLIES).then_some(0.5)
}

/// A search score from White's point of view, mates as ±30,000.
pub fn white_view(game: &Game, score: Score) -> i32 {
    let white = if game.turn() == Color::White { 1 } else { -1 };
    match score {
        Score::Cp(cp) => white * cp,
        Score::Mate(m) => white * m.signum() * 30_000,
    }
}

/// Whether a position and its best move are quiet enough for Texel's method.
fn is_quiet(game: &Game, best: Move) -> bool {
    !game.position().is_check() && !best.is_capture() && !best.is_promotion()
}

/// The book line and random plies game `index` starts from, balanced by a short search.
pub fn opening(settings: &DatagenSettings, index: u64, engine: &mut Engine) -> Game {
    let mut game = Game::startpos();
    for attempt in 0..OPENING_TRIES {
        let mut rng = StdRng::seed_from_u64(
            settings
                .seed
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .wrapping_add(index.wrapping_mul(OPENING_TRIES) + attempt),
        );
        game = Game::startpos();
        while let Some(m) = book_move(&game, 10.0, rng.r#gen()) {
            game.play(m);
        }
        for _ in 0..settings.random_plies {
            let moves = game.legal_moves();
            let safe: Vec<Move> = moves
                .iter()
                .copied()
                .filter(|&m| see_non_negative(game.position().board(), game.turn(), m))
                .collect();
            let pool = if safe.is_empty() {
                moves.to_vec()
            } else {
                safe
            };
            if pool.is_empty() || game.outcome().is_some() {
                break;
            }
            game.play(pool[rng.gen_range(0..pool.len())]);
        }
        if game.outcome().is_some() {
            continue;
        }
        engine.new_game();
        let check = SearchParams::full_strength(Limits::nodes(OPENING_CHECK_NODES));
        if let Score::Cp(cp) = engine.search(&game, &check, &mut NoStop).score
            && cp.abs() <= OPENING_MAX_CP
        {
            break;
        }
    }
    game
}

/// `ladder tune datagen` options.
#[derive(Debug, clap::Args)]
pub struct DatagenArgs {
    /// Data file to write; an existing one is resumed after its last whole game.
    #[arg(long)]
    pub out: PathBuf,
    /// Games in the whole run (all shards together).
    #[arg(long, default_value_t = 20_000)]
    pub games: u64,
    /// Seed of the openings: the same seed and settings give the same games.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Exact nodes the engine searches per move (the Texel data of weights versions 1 and 2).
    #[arg(long, default_value_t = 5_000, conflicts_with = "soft_nodes")]
    pub nodes: u64,
    /// A soft node limit instead: no new iteration once one ends past it (network data).
    #[arg(long)]
    pub soft_nodes: Option<u64>,
    /// The hard cap on a move's nodes with --soft-nodes.
    #[arg(long, default_value_t = 100_000, requires = "soft_nodes")]
    pub hard_nodes: u64,
    /// Random plies (that lose no material) after the book line.
    #[arg(long, default_value_t = 6)]
    pub random_plies: u32,
    /// This process's part of the run, K/N: the K-th of N contiguous ranges of games; `env/N`
    /// takes K from JOB_COMPLETION_INDEX (Kubernetes) or SLURM_ARRAY_TASK_ID (Slurm).
    #[arg(long, default_value = "1/1")]
    pub shard: ShardArg,
    /// Games played at once (one engine each).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Hash per engine, MB.
    #[arg(long, default_value_t = 8)]
    pub hash_mb: usize,
    /// The evaluation weights both sides play with: `shipped`, `handwritten` or a weights file
    /// (the seed-1 data of version 1 was made with `handwritten`).
    #[arg(long, default_value = "shipped")]
    pub weights: String,
    /// A built-in network both sides play with instead of the weights (`ladder bench --network
    /// N`'s numbers; 0: none): the second generation of network data.
    #[arg(long, default_value_t = 0)]
    pub network: u32,
}

pub fn run(args: DatagenArgs) -> anyhow::Result<()> {
    if args.nodes == 0 || args.threads == 0 || args.hash_mb == 0 {
        bail!("--nodes, --threads and --hash-mb must be at least 1");
    }
    let nodes = match args.soft_nodes {
        None => NodeBudget::Fixed(args.nodes),
        Some(soft) if soft >= 1 && soft <= args.hard_nodes => NodeBudget::Soft {
            soft,
            hard: args.hard_nodes,
        },
        Some(soft) => bail!(
            "--soft-nodes {soft} must be at least 1 and at most --hard-nodes {}",
            args.hard_nodes
        ),
    };
    let settings = DatagenSettings {
        seed: args.seed,
        nodes,
        random_plies: args.random_plies,
        hash_mb: args.hash_mb,
        weights: Arc::new(super::sets::start_weights(&args.weights)?),
        network: args.network,
    };
    let shard = args
        .shard
        .resolve_from_process()
        .map_err(|e| anyhow::anyhow!("--shard: {e}"))?;
    let summary = generate(&args.out, &settings, args.games, shard, args.threads)?;
    tracing::info!(
        "{}: games {}..{} done ({} new, {} positions new, {:.0} positions/s)",
        args.out.display(),
        summary.first_game,
        summary.end_game,
        summary.games_played,
        summary.positions_written,
        summary.positions_per_second
    );
    Ok(())
}

/// The header of shard `shard` of a run of `games` with `settings`, made by this binary.
pub fn run_header(settings: &DatagenSettings, games: u64, shard: Shard) -> RunHeader {
    RunHeader {
        seed: settings.seed,
        games,
        shard,
        nodes: settings.nodes.to_string(),
        random_plies: settings.random_plies,
        hash_mb: settings.hash_mb,
        weights: fingerprint(settings.weights.to_text("").as_bytes()),
        network: settings.network,
        binary: binary_fingerprint().to_string(),
    }
}

/// The fingerprint of the running executable's bytes: data made by two builds is never merged,
/// since a change to the search or the evaluation changes the games.
pub fn binary_fingerprint() -> &'static str {
    static FINGERPRINT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    FINGERPRINT.get_or_init(|| {
        std::env::current_exe()
            .and_then(std::fs::read)
            .map(|bytes| fingerprint(&bytes))
            // An executable that cannot read itself still makes data; it just never merges
            // with another process's.
            .unwrap_or_else(|_| format!("unknown-{}", std::process::id()))
    })
}

/// What a [`generate`] call did.
#[derive(Clone, Debug, PartialEq)]
pub struct GenerateSummary {
    pub first_game: u64,
    pub end_game: u64,
    pub games_played: u64,
    pub positions_written: u64,
    pub positions_per_second: f64,
}

/// Plays the games of `shard` of a run of `games` not yet in `out` and appends them in order.
pub fn generate(
    out: &Path,
    settings: &DatagenSettings,
    games: u64,
    shard: Shard,
    threads: usize,
) -> anyhow::Result<GenerateSummary> {
    // Checked here, where every run starts: a header naming a network that did not play would
    // mislabel the whole file.
    if settings.network != 0 && network_of_version(settings.network).is_none() {
        bail!(
            "--network {}: this binary has networks 1 to {SHIPPED_NETWORK} (0: none)",
            settings.network
        );
    }
    let header = run_header(settings, games, shard);
    let range = shard.range(games);
    let start = resume_point(out, &header)?;
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(out)
        .with_context(|| format!("cannot open {} for appending", out.display()))?;
    if file
        .metadata()
        .with_context(|| format!("cannot read {}", out.display()))?
        .len()
        == 0
    {
        file.write_all(header.line().as_bytes())
            .and_then(|()| file.flush())
            .with_context(|| format!("cannot write {}", out.display()))?;
    }
    let todo = range.end.saturating_sub(start);
    if start > range.start {
        tracing::info!(
            "{}: resuming at game {start} ({} of {} games already there)",
            out.display(),
            start - range.start,
            range.end - range.start
        );
    }
    let progress = crate::logging::Progress::new(todo, "games");
    let began = Instant::now();
    let next = AtomicU64::new(start);
    let failed = AtomicBool::new(false);
    let (sender, receiver) = mpsc::channel::<(u64, PlayedGame)>();
    let mut written = 0u64;
    let mut games_played = 0u64;
    std::thread::scope(|scope| -> anyhow::Result<()> {
        for _ in 0..threads.min(todo.max(1) as usize) {
            let sender = sender.clone();
            let (next, failed) = (&next, &failed);
            scope.spawn(move || {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= range.end || failed.load(Ordering::Relaxed) {
                        break;
                    }
                    if sender.send((index, play_game(settings, index))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(sender);
        // Games finish out of order across threads; they are written in index order.
        let mut pending = BTreeMap::new();
        let mut write_next = start;
        for (index, played) in receiver {
            pending.insert(index, played);
            while let Some(played) = pending.remove(&write_next) {
                let block = game_block(write_next, &played.positions, played.result, played.plies);
                if let Err(e) = file.write_all(block.as_bytes()).and_then(|()| file.flush()) {
                    failed.store(true, Ordering::Relaxed);
                    return Err(e).with_context(|| format!("cannot write {}", out.display()));
                }
                written += played.positions.len() as u64;
                games_played += 1;
                write_next += 1;
                let rate = written as f64 / began.elapsed().as_secs_f64().max(1e-3);
                progress.inc();
                progress.set_message(format!("{written} positions, {rate:.0} positions/s"));
                if !progress.is_bar() && games_played.is_multiple_of(50) {
                    tracing::info!(
                        "game {write_next} of {}: {written} positions, {rate:.0} positions/s",
                        range.end
                    );
                }
            }
        }
        Ok(())
    })?;
    file.sync_all()
        .with_context(|| format!("cannot sync {}", out.display()))?;
    progress.finish();
    Ok(GenerateSummary {
        first_game: range.start,
        end_game: range.end,
        games_played,
        positions_written: written,
        positions_per_second: written as f64 / began.elapsed().as_secs_f64().max(1e-3),
    })
}

/// The first game still to play in `out` for the run and shard of `header`; a partial game left
/// by a kill is cut off the file, and a file of another run or shard is refused.
fn resume_point(out: &Path, header: &RunHeader) -> anyhow::Result<u64> {
    let first = header.shard.range(header.games).start;
    let text = match std::fs::read(out) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(first),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", out.display())),
    };
    if !text.is_empty() {
        let found = RunHeader::parse(text.lines().next().unwrap_or(""))
            .map_err(|e| anyhow::anyhow!("cannot resume {}: {e}", out.display()))?;
        found
            .same_run(header)
            .and_then(|()| match found.shard == header.shard {
                true => Ok(()),
                false => Err(format!(
                    "it holds shard {}, not {}",
                    found.shard, header.shard
                )),
            })
            .map_err(|e| anyhow::anyhow!("cannot resume {}: {e}", out.display()))?;
    }
    let (whole, next) = complete_prefix(&text, first)
        .map_err(|e| anyhow::anyhow!("cannot resume {}: {e}", out.display()))?;
    if whole < text.len() {
        tracing::warn!(
            "{}: dropping a partial game at the end ({} bytes)",
            out.display(),
            text.len() - whole
        );
        let file = OpenOptions::new()
            .write(true)
            .open(out)
            .with_context(|| format!("cannot open {}", out.display()))?;
        file.set_len(whole as u64)
            .with_context(|| format!("cannot truncate {}", out.display()))?;
    }
    Ok(next)
}
