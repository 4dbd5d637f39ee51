//! `ladder perft`: move generation counts, to check the board layer (with per-move divide).

use std::time::Instant;

use shakmaty::{Chess, Position};

use crate::engine::Game;

/// `ladder perft` options.
#[derive(Debug, clap::Args)]
pub struct PerftArgs {
    /// Depth in plies.
    pub depth: u32,
    /// Position as FEN (default: the start position). Quote it: it contains spaces.
    pub fen: Option<String>,
    /// Use Chess960 castling rules (castling written king-to-rook).
    #[arg(long)]
    pub chess960: bool,
}

/// Number of leaf positions `depth` plies below `pos`.
pub fn perft(pos: &Chess, depth: u32) -> u64 {
    if depth == 0 {
        return 1;
    }
    let moves = pos.legal_moves();
    if depth == 1 {
        return moves.len() as u64;
    }
    moves
        .iter()
        .map(|&m| {
            let mut child = pos.clone();
            child.play_unchecked(m);
            perft(&child, depth - 1)
        })
        .sum()
}

/// Perft split by root move: (move in the game's UCI notation, count), in generation order.
pub fn divide(game: &Game, depth: u32) -> Vec<(String, u64)> {
    let pos = game.position();
    pos.legal_moves()
        .iter()
        .map(|&m| {
            let mut child = pos.clone();
            child.play_unchecked(m);
            (game.to_uci(m), perft(&child, depth.saturating_sub(1)))
        })
        .collect()
}

pub fn run(args: PerftArgs) -> anyhow::Result<()> {
    let game = Game::new(args.fen.as_deref(), args.chess960).map_err(|e| {
        crate::exit::with_fix(
            e,
            "give the whole FEN as one argument, in quotes: ladder perft 3 \
             \"r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1\"",
        )
    })?;
    let start = Instant::now();
    let mut total = 0;
    if args.depth == 0 {
        total = 1;
    } else {
        let mut rows = divide(&game, args.depth);
        rows.sort();
        for (m, n) in rows {
            println!("{m}: {n}");
            total += n;
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    println!();
    println!("nodes {total}");
    println!(
        "time {:.3} s, {:.0} nodes/s",
        seconds,
        total as f64 / seconds.max(1e-9)
    );
    Ok(())
}
