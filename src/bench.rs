//! `ladder bench`: a fixed set of positions searched to a fixed depth, each with a fresh hash;
//! the total node count is the signature every commit that changes the search quotes.

use std::time::{Duration, Instant};

use crate::engine::evaluator::SHIPPED_NETWORK;
use crate::engine::weights::SHIPPED_VERSION;
use crate::engine::{
    Engine, Evaluator, Game, Limits, NoStop, Noise, SearchConstants, SearchParams,
};

/// Default depth of `ladder bench`.
pub const DEFAULT_DEPTH: u32 = 8;
/// Default hash of `ladder bench`, MB.
pub const DEFAULT_HASH_MB: usize = 16;

/// The bench positions: the perft suite's middlegames, openings after common lines, played-out
/// middlegames, and endgames from trivial mates to pawn races.
pub const POSITIONS: &[&str] = &[
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
    "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",
    "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8",
    "r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10",
    "rnbqkb1r/1p2pppp/p2p1n2/8/3NP3/2N5/PPP2PPP/R1BQKB1R w KQkq - 0 6",
    "r1bq1rk1/2p1bppp/p1np1n2/1p2p3/4P3/1BP2N1P/PP1P1PP1/RNBQR1K1 b - - 0 9",
    "rnbq1rk1/p1p1bpp1/1p2pn1p/3p4/2PP3B/2N1PN2/PP3PPP/R2QKB1R w KQ - 0 8",
    "rnbqk2r/pp2nppp/4p3/2ppP3/3P2Q1/P1P5/2P2PPP/R1B1KBNR b KQkq - 2 7",
    "r1bq1rk1/ppp1npbp/3p1np1/3Pp3/2P1P3/2N2N2/PP2BPPP/R1BQ1RK1 w - - 1 9",
    "r2qkbnr/pp1nppp1/2p3bp/8/3P3P/5NN1/PPP2PP1/R1BQKB1R w KQkq - 2 8",
    "r1bq1rk1/bpp2ppp/p1np1n2/4p3/4P3/1BPP1N1P/PP3PP1/RNBQR1K1 b - - 0 9",
    "r1bqk2r/ppp1bppp/1nn5/4p3/8/2N2NP1/PP1PPPBP/R1BQ1RK1 w kq - 4 8",
    "rn1q1rk1/pp3ppp/2p1pn2/5b2/PbBP4/2N1PN2/1P2QPPP/R1B2RK1 b - - 4 9",
    "r2q1rk1/pp1bppbp/2np1np1/8/2PNP3/2N1B3/PP2BPPP/R2Q1RK1 w - - 2 10",
    "r1bq1rk1/p3bppp/2n1pn2/1ppp4/4P3/3P1NP1/PPPN1PBP/R1BQR1K1 w - - 0 9",
    "rn2k2r/pp3ppp/2p1pn2/q4b2/1bBP4/2N2N2/PPPBQPPP/R3K2R w KQkq - 2 9",
    "r4rk1/pbpn1pp1/1p2p2p/3n4/3P3B/P3PP2/1P4PP/R3KBNR w KQ - 2 14",
    "rnbqk2r/ppp2p1p/3b4/3PN2n/2BP1ppP/8/PPP3P1/RNBQK2R w KQkq - 1 9",
    "1rbq1rk1/pp2npbp/3pp1p1/2p5/3nPP2/2NPBNP1/PPPQ2BP/R4RK1 w - - 8 11",
    "rnb1qrk1/1pp1p1bp/3p1np1/p2P1p2/2P5/2N2NP1/PP2PPBP/R1BQ1RK1 w - - 0 9",
    "r3r1k1/ppp1bppp/2n5/3q1b2/3P4/P1P2N2/4BPPP/R1BQR1K1 w - - 0 15",
    "r1b1k2r/3pbppp/p3pn2/1p6/2q1P3/PNN1BP2/1PPQ2PP/1K1R3R w kq - 0 14",
    "r2q1rk1/pb2bppp/1p6/2ppPp2/3P4/2PBPQ2/PP1N1B1P/R3K2R w KQ - 0 16",
    "8/8/8/4k3/8/8/8/3QK3 w - - 0 1",
    "8/8/8/8/4k3/8/8/R3K3 w - - 0 1",
    "8/5pk1/6p1/8/2K5/8/5PP1/8 w - - 0 1",
    "8/8/1p3k2/p1p1r3/P1P5/1P2R1K1/8/8 w - - 0 1",
    "6k1/5pp1/7p/3n4/8/2B3P1/5PKP/8 w - - 0 1",
    "8/3k4/8/2P1K3/8/8/6b1/8 w - - 0 1",
    "2r3k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1",
    "8/8/3k4/8/8/3K4/3P4/8 w - - 0 1",
    "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1",
    "6k1/6p1/8/8/8/8/r5PK/1R6 b - - 0 1",
    "8/p4pk1/1p4p1/2b5/2P5/1P3NP1/P4PKP/8 b - - 0 1",
    "r5k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1",
    "8/8/8/3bk3/8/8/2K5/3N4 b - - 0 1",
    "3q2k1/5ppp/8/8/8/8/5PPP/3Q2K1 w - - 0 1",
];

/// One position's bench line.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchLine {
    pub fen: &'static str,
    pub best_move: Option<String>,
    pub nodes: u64,
    pub time: Duration,
}

/// The outcome of a bench run: the signature is `total_nodes`.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchResult {
    pub depth: u32,
    pub lines: Vec<BenchLine>,
    pub total_nodes: u64,
    pub time: Duration,
}

impl BenchResult {
    pub fn nps(&self) -> f64 {
        self.total_nodes as f64 / self.time.as_secs_f64().max(1e-9)
    }
}

/// Searches every bench position to `depth` with a fresh 16 MB table and no noise.
pub fn bench(depth: u32) -> BenchResult {
    bench_with(depth, DEFAULT_HASH_MB, Noise::NONE)
}

/// [`bench`] with a chosen hash size and noise.
pub fn bench_with(depth: u32, hash_mb: usize, noise: Noise) -> BenchResult {
    bench_search(
        depth,
        hash_mb,
        noise,
        SearchConstants::shipped(),
        Evaluator::shipped(),
    )
}

/// [`bench_with`] with a chosen set of search constants (an older search version's) and
/// evaluation.
pub fn bench_search(
    depth: u32,
    hash_mb: usize,
    noise: Noise,
    constants: SearchConstants,
    evaluator: Evaluator,
) -> BenchResult {
    let mut engine = Engine::with_evaluator(hash_mb, evaluator);
    engine.set_search_constants(constants);
    let params = SearchParams {
        limits: Limits::depth(depth),
        noise,
        blindness: crate::engine::Blindness::NONE,
    };
    let lines: Vec<BenchLine> = POSITIONS
        .iter()
        .map(|&fen| {
            let game = Game::new(Some(fen), false).expect("bench positions are valid");
            engine.new_game();
            let t = Instant::now();
            let result = engine.search(&game, &params, &mut NoStop);
            BenchLine {
                fen,
                best_move: result.best_move.map(|m| game.to_uci(m)),
                nodes: result.nodes,
                time: t.elapsed(),
            }
        })
        .collect();
    // Search time only: clearing the table between positions is not the engine's speed.
    BenchResult {
        depth,
        total_nodes: lines.iter().map(|l| l.nodes).sum(),
        time: lines.iter().map(|l| l.time).sum(),
        lines,
    }
}

/// `ladder bench` options.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Search depth for every position.
    #[arg(long, default_value_t = DEFAULT_DEPTH)]
    pub depth: u32,
    /// Hash size in MB (fresh for each position).
    #[arg(long, default_value_t = DEFAULT_HASH_MB)]
    pub hash: usize,
    /// Evaluation noise scale in centipawns (0 = full strength), to measure the noise's cost.
    #[arg(long, default_value_t = 0.0)]
    pub noise_cp: f64,
    /// Seed of the evaluation noise.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The search version (`search` in a coefficients file; default: the newest), to check
    /// that an older one still searches exactly as it was calibrated.
    #[arg(long)]
    pub search: Option<u32>,
    /// A built-in network to evaluate with (`network` in a coefficients file; 0 = the
    /// hand-crafted evaluation, whose signature is the one commits quote).
    #[arg(long, default_value_t = 0)]
    pub network: u32,
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    if args.hash == 0 {
        anyhow::bail!("--hash must be at least 1 MB");
    }
    if !(args.noise_cp.is_finite() && args.noise_cp >= 0.0) {
        anyhow::bail!("--noise-cp must be a non-negative number");
    }
    let noise = Noise::new(args.noise_cp, args.seed);
    let version = args
        .search
        .unwrap_or(crate::engine::constants::SHIPPED_SEARCH_VERSION);
    let constants = SearchConstants::of_known_version(version)
        .map_err(|unknown| anyhow::anyhow!("--search {version}: {unknown}"))?;
    let evaluator = Evaluator::of_versions(SHIPPED_VERSION, args.network).ok_or_else(|| {
        anyhow::anyhow!(
            "--network {}: no such built-in network (0 to {SHIPPED_NETWORK})",
            args.network
        )
    })?;
    let result = bench_search(args.depth, args.hash, noise, constants, evaluator);
    for (i, line) in result.lines.iter().enumerate() {
        println!(
            "{:>2} {:>10} nodes {:>7.3}s  {:<6} {}",
            i + 1,
            line.nodes,
            line.time.as_secs_f64(),
            line.best_move.as_deref().unwrap_or("-"),
            line.fen
        );
    }
    println!("depth {} hash {} MB", result.depth, args.hash);
    println!("time  {:.3} s", result.time.as_secs_f64());
    println!("nps   {:.0}", result.nps());
    println!("bench: {}", result.total_nodes);
    Ok(())
}
