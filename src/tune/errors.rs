//! `ladder tune errors`: a census of what the humane error model does at a level, counted on
//! the positions of the level's recorded games instead of new ones. Each of the level's moves
//! after the opening is chosen again by the level player of a coefficients file (the game's own
//! seed, so its draws are the game's), and the second look's verdict is tallied: noticed,
//! stumbled, aimed or kept. The recorded move is then played, so every coefficients file meets
//! the very same positions and draws, and a change of a knob (`[humane.stumble]`'s
//! `plausible_cp`, say) shows as a paired difference in minutes, where a judged match costs
//! hours and carries the sampling noise of new games. What the census cannot tell is how a
//! judge scores the moves: it counts the model's decisions, the judge counts big losses. With
//! `--judge-nodes N` each stumble is scored again by the strongest engine of this build (the
//! newest network, `SHIPPED_NETWORK`, N nodes, the trap's and the search's move alike): a trap
//! that loses 200 cp or more there is one the judge will likely count, the rest are the weak
//! search's mirage.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context as _, bail};

use shakmaty::Move;

use crate::engine::evaluator::{SHIPPED_NETWORK, network_of_version};
use crate::engine::look::score_after;
use crate::engine::{Engine, Evaluator, Game, Limits, NoStop};
use crate::levels::{Coefficients, LevelParams};
use crate::lichess::Color;
use crate::player::LevelPlayer;
use crate::player::humane::Verdict;
use crate::results::{GameRecord, read_results};

/// `ladder tune errors` options.
#[derive(Debug, clap::Args)]
pub struct ErrorsArgs {
    /// Results files whose games give the positions (the calibration loop's, say).
    #[arg(long = "results", required = true)]
    pub results: Vec<PathBuf>,
    /// Coefficients files to count with (each over the same positions and draws).
    #[arg(long = "coefficients", required = true)]
    pub coefficients: Vec<PathBuf>,
    /// The levels: `9`, `8..10`, `8,10`.
    #[arg(long)]
    pub level: String,
    /// The last this many games of each level in the results (any version: a position is a
    /// position).
    #[arg(long, default_value_t = 30)]
    pub games: usize,
    /// Score each stumble again at full strength with this many nodes (0: not judged).
    #[arg(long, default_value_t = 0)]
    pub judge_nodes: u64,
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
}

/// A stumble loses this much to the judge to count as a big loss, as the likeness report's.
const BIG_LOSS_CP: i32 = crate::engine::people::BIG_LOSS_CP as i32;

/// The verdicts on one level's moves with one coefficients file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Census {
    /// Moves the second look reviewed (after the opening, not from the book).
    pub moves: u64,
    pub noticed: u64,
    pub stumbled: u64,
    /// Stumbles that lose [`BIG_LOSS_CP`] or more to the judge (when judged).
    pub stumbled_big: u64,
    pub aimed: u64,
    /// Moves chosen as the recorded game played them: all of them when the coefficients are
    /// those of the games (a game replays from its seed), fewer for another file.
    pub as_played: u64,
}

impl Census {
    fn add(&mut self, verdict: Verdict) {
        self.moves += 1;
        match verdict {
            Verdict::Kept => {}
            Verdict::Noticed => self.noticed += 1,
            Verdict::Stumbled { .. } => self.stumbled += 1,
            Verdict::Aimed => self.aimed += 1,
        }
    }

    fn merge(&mut self, other: &Census) {
        self.moves += other.moves;
        self.noticed += other.noticed;
        self.stumbled += other.stumbled;
        self.stumbled_big += other.stumbled_big;
        self.aimed += other.aimed;
        self.as_played += other.as_played;
    }
}

/// The census of `level` in `games` with `coefficients`: each game's moves by the level after
/// its opening, chosen again with the game's seed; `threads` games at once. A game whose moves
/// do not replay is skipped with a warning. `judge_nodes` > 0 scores each stumble again.
pub fn census(
    coefficients: &Coefficients,
    level: f64,
    games: &[&GameRecord],
    judge_nodes: u64,
    threads: usize,
) -> Census {
    let next = AtomicUsize::new(0);
    let total = Mutex::new(Census::default());
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| {
                let mut mine = Census::default();
                let mut judge = (judge_nodes > 0).then(|| Judge::new(judge_nodes));
                while let Some(record) = games.get(next.fetch_add(1, Ordering::Relaxed)) {
                    match census_of_game(coefficients, level, record, judge.as_mut()) {
                        Some(c) => mine.merge(&c),
                        None => tracing::warn!(
                            game = %record.game_id,
                            "skipped: its moves do not replay"
                        ),
                    }
                }
                total
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .merge(&mine);
            });
        }
    });
    total
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The strongest engine of this build, scoring a stumble's two moves alike.
struct Judge {
    engine: Engine,
    limits: Limits,
}

impl Judge {
    fn new(nodes: u64) -> Judge {
        let strongest =
            network_of_version(SHIPPED_NETWORK).map_or_else(Evaluator::shipped, Evaluator::Network);
        Judge {
            engine: Engine::with_evaluator(16, strongest),
            limits: Limits {
                nodes: Some(nodes),
                depth: None,
            },
        }
    }

    /// What playing `trap` instead of `calm` loses in `game`, by the judge (each search on a
    /// cleared table, so the loss is a function of the position), the scores capped as the
    /// likeness report caps them: in a decided position no move loses much.
    fn loss(&mut self, game: &Game, calm: Move, trap: Move) -> i32 {
        let ceiling = crate::engine::people::CP_CEILING as i32;
        let mut score = |m| {
            self.engine.new_game();
            score_after(&mut self.engine, game, m, self.limits).clamp(-ceiling, ceiling)
        };
        score(calm) - score(trap)
    }
}

/// One game's census; `None` when its moves or its start do not replay.
fn census_of_game(
    coefficients: &Coefficients,
    level: f64,
    record: &GameRecord,
    mut judge: Option<&mut Judge>,
) -> Option<Census> {
    let ours = record.color.known()?;
    let mut game = record.start()?;
    let mut player = LevelPlayer::new(LevelParams::new(coefficients, level), record.header.seed);
    let first = record.opening_plies.unwrap_or(0) as usize;
    let mut census = Census::default();
    for (ply, uci) in record.moves.split_whitespace().enumerate() {
        let ours_to_choose = Color::from(game.turn()) == ours && ply >= first;
        let chosen = ours_to_choose
            .then(|| player.choose(&game, &mut NoStop).best_move)
            .flatten();
        // A book move has no verdict and is not counted.
        let verdict = ours_to_choose.then(|| player.last_verdict()).flatten();
        if let (Some(Verdict::Stumbled { instead_of }), Some(judge), Some(trap)) =
            (verdict, judge.as_deref_mut(), chosen)
            && judge.loss(&game, instead_of, trap) >= BIG_LOSS_CP
        {
            census.stumbled_big += 1;
        }
        let played = game.play_uci(uci).ok()?;
        if let Some(verdict) = verdict {
            census.add(verdict);
            census.as_played += u64::from(chosen == Some(played));
        }
    }
    Some(census)
}

/// The last `count` games of `level` in `records` (in file order).
pub fn games_of_level(records: &[GameRecord], level: f64, count: usize) -> Vec<&GameRecord> {
    let mut games: Vec<&GameRecord> = records
        .iter()
        .filter(|r| (r.header.level - level).abs() < 1e-9)
        .collect();
    let skip = games.len().saturating_sub(count);
    games.drain(..skip);
    games
}

/// Per 100 moves, with a 95% interval of a count of rare events (±1.96·√k).
fn per_100(count: u64, moves: u64) -> String {
    if moves == 0 {
        return "–".to_string();
    }
    let rate = 100.0 * count as f64 / moves as f64;
    let half = 196.0 * (count as f64).sqrt() / moves as f64;
    format!("{rate:.2} ± {half:.2}")
}

pub fn run(args: ErrorsArgs) -> anyhow::Result<()> {
    let levels = crate::levels::parse_levels(&args.level)
        .map_err(|e| anyhow::anyhow!("--level {}: {e}", args.level))?;
    if levels.is_empty() {
        bail!("--level names no level (e.g. --level 8..10)");
    }
    let files: Vec<(String, Coefficients)> = args
        .coefficients
        .iter()
        .map(|p| {
            Coefficients::load_or_explain(p, "--coefficients").map(|c| (p.display().to_string(), c))
        })
        .collect::<anyhow::Result<_>>()?;
    let read = read_results(&args.results).context("reading --results")?;
    for warning in &read.warnings {
        tracing::warn!("skipped: {warning}");
    }
    println!(
        "| level | coefficients | games | moves | as played | noticed /100 | stumbled /100 | \
         stumbles losing {BIG_LOSS_CP} cp at {} nodes /100 | aimed /100 |",
        args.judge_nodes
    );
    println!("|---:|---|---:|---:|---:|---|---|---|---|");
    for &level in &levels {
        let games = games_of_level(&read.records, level, args.games);
        if games.is_empty() {
            tracing::warn!(level, "no games of this level in the results");
            continue;
        }
        for (name, coefficients) in &files {
            let c = census(coefficients, level, &games, args.judge_nodes, args.threads);
            let judged = if args.judge_nodes > 0 {
                per_100(c.stumbled_big, c.moves)
            } else {
                "–".to_string()
            };
            println!(
                "| {level} | {name} | {} | {} | {} | {} | {} | {judged} | {} |",
                games.len(),
                c.moves,
                c.as_played,
                per_100(c.noticed, c.moves),
                per_100(c.stumbled, c.moves),
                per_100(c.aimed, c.moves),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Outcome, sample_record};

    const LEVEL: f64 = 8.0;

    /// A game of `plies` where `LEVEL` (seed 11, the shipped coefficients `with`) plays White
    /// and another player of the level (seed 12) Black, each with its own player, as the arena
    /// seats them; recorded as the arena records it.
    fn recorded_game(with: &Coefficients, plies: usize, id: &str) -> GameRecord {
        let mut white = LevelPlayer::new(LevelParams::new(with, LEVEL), 11);
        let mut black = LevelPlayer::new(LevelParams::new(with, LEVEL), 12);
        let mut game = Game::startpos();
        let mut moves = Vec::new();
        for ply in 0..plies {
            let player = if ply % 2 == 0 { &mut white } else { &mut black };
            let Some(m) = player.choose(&game, &mut NoStop).best_move else {
                break;
            };
            moves.push(game.to_uci(m));
            game.play(m);
        }
        let mut record = sample_record(id, Outcome::Draw);
        record.header.level = LEVEL;
        record.header.seed = 11;
        record.color = Color::White.into();
        record.moves = moves.join(" ");
        record.opening_plies = Some(4);
        record
    }

    #[test]
    fn the_census_replays_the_levels_choices_and_counts_its_stumbles() {
        let on = Coefficients::builtin();
        assert!(
            on.humane.and_then(|h| h.stumble).is_some(),
            "the shipped levels stumble"
        );
        let mut off = on.clone();
        off.humane.as_mut().expect("the model is on").stumble = None;
        let record = recorded_game(&on, 90, "g1");
        let mut other_level = sample_record("g0", Outcome::Win);
        other_level.header.level = 9.0;
        let records = vec![record.clone(), other_level];
        let games = games_of_level(&records, LEVEL, 5);
        assert_eq!(games.len(), 1, "only the level's own games");

        // With the coefficients that played it, the census chooses every move as played.
        let census_on = census(&on, LEVEL, &games, 0, 2);
        assert!(census_on.moves >= 30, "{census_on:?}");
        assert_eq!(census_on.as_played, census_on.moves, "{census_on:?}");
        assert!(census_on.stumbled >= 1, "{census_on:?}");
        // The same seed, the same census, whatever the threads.
        assert_eq!(census(&on, LEVEL, &games, 0, 1), census_on);

        // Without stumbles the same searches choose the same moves, except exactly where the
        // level stumbled.
        let census_off = census(&off, LEVEL, &games, 0, 2);
        assert_eq!(census_off.moves, census_on.moves);
        assert_eq!(census_off.stumbled, 0);
        assert_eq!(census_off.noticed, census_on.noticed);
        assert_eq!(
            census_off.as_played,
            census_on.moves - census_on.stumbled,
            "{census_off:?} against {census_on:?}"
        );

        // Judged, only stumbles can be counted as losing.
        let judged = census(&on, LEVEL, &games, 20_000, 2);
        assert!(judged.stumbled_big <= judged.stumbled, "{judged:?}");
        assert_eq!(judged.stumbled, census_on.stumbled);
    }

    #[test]
    fn a_game_that_does_not_replay_is_skipped_and_the_rest_counted() {
        let on = Coefficients::builtin();
        let good = recorded_game(&on, 20, "good");
        let mut bad = good.clone();
        bad.game_id = crate::lichess::GameId::new("bad");
        bad.moves = "e2e4 e2e4".to_string();
        let records = vec![bad, good.clone()];
        let games = games_of_level(&records, LEVEL, 5);
        assert_eq!(games.len(), 2);
        let both = census(&on, LEVEL, &games, 0, 2);
        let alone = census(&on, LEVEL, &[&good], 0, 2);
        assert_eq!(both, alone);
        assert!(alone.moves > 0);
    }
}
