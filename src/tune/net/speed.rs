//! `ladder tune net-speed`: how fast the engine's network evaluates, with the accumulator
//! refreshed from the board for every position or updated by each move's changes (as a search
//! does on make and unmake), on positions of seeded random games.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use shakmaty::{Chess, Move, Position};

use super::model::FloatNetwork;
use crate::engine::nnue::{Accumulator, MoveFeatures, Network};
use crate::seed::SplitMix;

/// `ladder tune net-speed` options.
#[derive(Debug, clap::Args)]
pub struct SpeedArgs {
    /// A network file; without it, a network of random weights of --hidden units.
    #[arg(long)]
    pub net: Option<PathBuf>,
    /// Units per accumulator of the random network.
    #[arg(long, default_value_t = 128)]
    pub hidden: usize,
    /// Output buckets of the random network.
    #[arg(long, default_value_t = 1)]
    pub output_buckets: usize,
    /// Random games to walk (100 plies at most each).
    #[arg(long, default_value_t = 200)]
    pub games: usize,
    /// Passes over the games per measurement.
    #[arg(long, default_value_t = 20)]
    pub rounds: usize,
}

/// Seeded random games: each start position with the moves played from it.
fn random_games(count: usize) -> Vec<(Chess, Vec<Move>)> {
    let mut rng = SplitMix::new(1);
    (0..count)
        .map(|_| {
            let start = Chess::default();
            let mut pos = start.clone();
            let mut moves = Vec::new();
            for _ in 0..100 {
                let legal = pos.legal_moves();
                if legal.is_empty() {
                    break;
                }
                let m = legal[(rng.next_u64() % legal.len() as u64) as usize];
                pos.play_unchecked(m);
                moves.push(m);
            }
            (start, moves)
        })
        .collect()
}

/// Evaluations per second of `evaluate` over every position of the games, `rounds` times.
fn measure(
    games: &[(Chess, Vec<Move>)],
    rounds: usize,
    mut walk: impl FnMut(&Chess, &[Move]) -> i64,
) -> f64 {
    let positions: usize = games.iter().map(|(_, moves)| moves.len()).sum();
    let started = Instant::now();
    let mut sum = 0i64;
    for _ in 0..rounds {
        for (start, moves) in games {
            sum += walk(start, moves);
        }
    }
    black_box(sum);
    (positions * rounds) as f64 / started.elapsed().as_secs_f64()
}

pub fn run(args: SpeedArgs) -> anyhow::Result<()> {
    let network = match &args.net {
        Some(path) => {
            let bytes =
                std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
            Network::from_bytes(&bytes).with_context(|| format!("{}", path.display()))?
        }
        None => FloatNetwork::random(
            args.hidden.clamp(1, 4096),
            args.output_buckets.clamp(1, 16),
            1,
        )
        .quantise()?,
    };
    let games = random_games(args.games);
    let rounds = args.rounds.max(1);
    // The walk itself (playing the moves), to subtract from both.
    let walk_only = measure(&games, rounds, |start, moves| {
        let mut pos = start.clone();
        for &m in moves {
            pos.play_unchecked(m);
        }
        i64::from(pos.halfmoves())
    });
    let mut accumulator = Accumulator::new(&network);
    let refresh = measure(&games, rounds, |start, moves| {
        let mut pos = start.clone();
        let mut sum = 0i64;
        for &m in moves {
            pos.play_unchecked(m);
            accumulator.refresh(&network, pos.board());
            sum += i64::from(accumulator.evaluate(
                &network,
                pos.turn(),
                pos.board().occupied().count(),
            ));
        }
        sum
    });
    let incremental = measure(&games, rounds, |start, moves| {
        let mut pos = start.clone();
        accumulator.refresh(&network, pos.board());
        let mut sum = 0i64;
        for &m in moves {
            let changes = MoveFeatures::of(&pos, m);
            accumulator.apply(&network, &changes);
            pos.play_unchecked(m);
            sum += i64::from(accumulator.evaluate(
                &network,
                pos.turn(),
                pos.board().occupied().count(),
            ));
        }
        sum
    });
    let per = |rate: f64| 1e9 / rate - 1e9 / walk_only;
    println!(
        "network (768 -> {}) x 2 -> 1, {} positions x {rounds} rounds",
        network.hidden(),
        games.iter().map(|(_, m)| m.len()).sum::<usize>()
    );
    println!("walk only (play the moves): {walk_only:.0} positions/s");
    println!(
        "refresh + evaluate:         {refresh:.0} positions/s ({:.0} ns a position beyond the walk)",
        per(refresh)
    );
    println!(
        "incremental + evaluate:     {incremental:.0} positions/s ({:.0} ns a position beyond the walk)",
        per(incremental)
    );
    Ok(())
}
