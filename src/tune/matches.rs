//! `ladder tune match`: two players at full strength against each other at fixed nodes, the
//! tuners' judge ("is the tuned evaluation better?", "are these search constants better?"). A
//! player is a weight set and a set of search constants.
//!
//! Each opening (the datagen openings: a book line and a few random plies that lose no
//! material, balanced by a short search) is played twice, each set once with White, so an
//! unbalanced opening cancels out. Each side has its own engine and hash; the games are
//! adjudicated as in datagen. The result is given as a score and an Elo difference with a 95%
//! interval over the game pairs (the project's one interval, [`crate::rating::elo_interval`],
//! with each pair one unit: it never collapses, and it is conservative when pairs split).

use std::sync::Arc;

use crate::rating::signed_elo;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::bail;
use shakmaty::Color;

use super::datagen::{Adjudicator, DatagenSettings, opening, result_by_rules, white_view};
use super::sets::{start_constants, start_evaluator};
use crate::engine::{
    Engine, Evaluator, Game, Limits, NoStop, SearchConstants, SearchParams, Weights,
};

/// `ladder tune match` options.
#[derive(Debug, clap::Args)]
pub struct MatchArgs {
    /// The first evaluation: a weight set (`shipped`, `handwritten` or a weights file) or a
    /// network (`net:1` built in, `net:FILE` a file `ladder tune net` wrote).
    #[arg(long, default_value = "shipped")]
    pub first: String,
    /// The second evaluation, the baseline.
    #[arg(long, default_value = "handwritten")]
    pub second: String,
    /// The first player's search constants: `shipped` or a file `ladder tune search` wrote.
    #[arg(long, default_value = "shipped")]
    pub first_constants: String,
    /// The second player's search constants.
    #[arg(long, default_value = "shipped")]
    pub second_constants: String,
    /// Game pairs (each opening played with both colours).
    #[arg(long, default_value_t = 500)]
    pub pairs: u64,
    /// Nodes per move.
    #[arg(long, default_value_t = 10_000)]
    pub nodes: u64,
    /// Seed of the openings (another seed than the training data's keeps them apart).
    #[arg(long, default_value_t = 1_000_001)]
    pub seed: u64,
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
}

/// The score of a match from the first set's side.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MatchResult {
    pub wins: u32,
    pub draws: u32,
    pub losses: u32,
    /// Each pair's points for the first set (0 to 2).
    pub pair_points: Vec<f64>,
}

impl MatchResult {
    /// Counts one pair of games: the first set's score with white and with black (each 0, ½
    /// or 1).
    pub fn add_pair(&mut self, as_white: f64, as_black: f64) {
        for s in [as_white, as_black] {
            match s {
                s if s > 0.75 => self.wins += 1,
                s if s < 0.25 => self.losses += 1,
                _ => self.draws += 1,
            }
        }
        self.pair_points.push(as_white + as_black);
    }

    pub fn games(&self) -> u32 {
        self.wins + self.draws + self.losses
    }

    pub fn score(&self) -> f64 {
        (f64::from(self.wins) + 0.5 * f64::from(self.draws)) / f64::from(self.games().max(1))
    }

    /// The Elo difference and its 95% interval: [`crate::rating::elo_interval`] over the game
    /// pairs, each pair's mean score one unit (the two games of an opening are not
    /// independent; the pairs are).
    pub fn elo(&self) -> (f64, f64, f64) {
        let points: f64 = self.pair_points.iter().map(|p| p / 2.0).sum();
        let e = crate::rating::elo_interval(points, self.pair_points.len() as f64);
        (e.elo, e.lo, e.hi)
    }
}

/// Plays one game from `start`; `engines[0]` has White. The result from White's view.
pub fn play(start: &Game, engines: [&mut Engine; 2], nodes: u64) -> f64 {
    let mut game = start.clone();
    let [white, black] = engines;
    white.new_game();
    black.new_game();
    let params = SearchParams::full_strength(Limits::nodes(nodes));
    let mut adjudicator = Adjudicator::default();
    loop {
        if let Some(result) = result_by_rules(&game) {
            return result;
        }
        let engine = if game.turn() == Color::White {
            &mut *white
        } else {
            &mut *black
        };
        let found = engine.search(&game, &params, &mut NoStop);
        let Some(best) = found.best_move else {
            return 0.5;
        };
        let score = white_view(&game, found.score);
        if let Some(result) = adjudicator.observe(game.moves().len(), score) {
            return result;
        }
        game.play(best);
    }
}

/// One side of a match: how it evaluates and how it searches.
#[derive(Clone, Debug)]
pub struct Player {
    pub evaluator: Evaluator,
    pub constants: SearchConstants,
}

impl Player {
    /// The shipped engine with other weights.
    pub fn with_weights(weights: Arc<Weights>) -> Player {
        Player {
            evaluator: Evaluator::Classical(weights),
            constants: SearchConstants::shipped(),
        }
    }

    fn engine(&self) -> Engine {
        let mut engine = Engine::with_evaluator(16, self.evaluator.clone());
        engine.set_search_constants(self.constants.clone());
        engine
    }
}

/// Plays `pairs` pairs between `first` and `second`; `on_pair` hears each pair as it ends.
pub fn run_match(
    first: &Player,
    second: &Player,
    pairs: u64,
    nodes: u64,
    seed: u64,
    threads: usize,
    on_pair: impl Fn(&MatchResult) + Sync,
) -> MatchResult {
    let next = AtomicU64::new(0);
    let total = std::sync::Mutex::new(MatchResult::default());
    let settings = DatagenSettings {
        seed,
        ..DatagenSettings::default()
    };
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            let (next, total, on_pair, settings) = (&next, &total, &on_pair, &settings);
            scope.spawn(move || {
                let mut a = first.engine();
                let mut b = second.engine();
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= pairs {
                        break;
                    }
                    let start = opening(settings, index, &mut a);
                    let as_white = play(&start, [&mut a, &mut b], nodes);
                    let as_black = 1.0 - play(&start, [&mut b, &mut a], nodes);
                    let Ok(mut total) = total.lock() else { break };
                    total.add_pair(as_white, as_black);
                    on_pair(&total);
                }
            });
        }
    });
    total.into_inner().unwrap_or_default()
}

pub fn run(args: MatchArgs) -> anyhow::Result<()> {
    if args.nodes == 0 || args.pairs == 0 {
        bail!("--nodes and --pairs must be at least 1");
    }
    let first = Player {
        evaluator: start_evaluator(&args.first)?,
        constants: start_constants(&args.first_constants)?,
    };
    let second = Player {
        evaluator: start_evaluator(&args.second)?,
        constants: start_constants(&args.second_constants)?,
    };
    let progress = crate::logging::Progress::new(args.pairs, "pairs");
    let result = run_match(
        &first,
        &second,
        args.pairs,
        args.nodes,
        args.seed,
        args.threads,
        |so_far| {
            progress.inc();
            let (elo, low, high) = so_far.elo();
            let line = format!(
                "+{} ={} -{}: {} [{}, {}]",
                so_far.wins,
                so_far.draws,
                so_far.losses,
                signed_elo(elo),
                signed_elo(low),
                signed_elo(high)
            );
            if progress.is_bar() {
                progress.set_message(line);
            } else if so_far.pair_points.len().is_multiple_of(50) {
                tracing::info!("{} pairs: {line}", so_far.pair_points.len());
            }
        },
    );
    progress.finish();
    let (elo, low, high) = result.elo();
    println!(
        "{} vs {} at {} nodes a move, {} games: +{} ={} -{}, score {:.1}%, Elo {} \
         (95% interval {} to {})",
        describe(&args.first, &args.first_constants),
        describe(&args.second, &args.second_constants),
        args.nodes,
        result.games(),
        result.wins,
        result.draws,
        result.losses,
        100.0 * result.score(),
        signed_elo(elo),
        signed_elo(low),
        signed_elo(high)
    );
    Ok(())
}

/// A player as the command line named it: its weights, and its constants when not shipped.
fn describe(weights: &str, constants: &str) -> String {
    if constants == "shipped" {
        weights.to_string()
    } else {
        format!("{weights} (search constants {constants})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_weaker_set_loses_and_the_interval_holds_the_estimate() {
        // Without its queen's worth the second set gives queens away.
        let mut pairs = Weights::handwritten().pairs().to_vec();
        pairs[crate::engine::weights::MATERIAL + 4] = [100, 100];
        let broken = Arc::new(Weights::from_pairs(pairs).unwrap());
        let good = Player::with_weights(Arc::new(Weights::handwritten()));
        let broken = Player::with_weights(broken);
        let result = run_match(&good, &broken, 4, 300, 5, 2, |_| {});
        assert_eq!(result.games(), 8);
        assert!(result.score() > 0.5, "{result:?}");
        let (elo, low, high) = result.elo();
        assert!(low <= elo && elo <= high);
    }

    #[test]
    fn every_pair_won_keeps_an_interval_of_honest_width() {
        // The pairs' variance is 0 here: a normal interval on it collapsed to a point.
        let pairs = |as_white: f64, as_black: f64| {
            let mut result = MatchResult::default();
            (0..4).for_each(|_| result.add_pair(as_white, as_black));
            result
        };
        let sweep = pairs(1.0, 1.0);
        assert_eq!((sweep.wins, sweep.draws, sweep.losses), (8, 0, 0));
        let (elo, low, high) = sweep.elo();
        assert!(low < elo && elo < high, "{low} {elo} {high}");
        assert!(low < 50.0 && high == f64::INFINITY, "{low} {high}");
        // Pairs that split 1-1 every time: 50%, an interval symmetric around 0.
        let even = pairs(1.0, 0.0);
        assert_eq!(even.pair_points, [1.0; 4]);
        let (elo, low, high) = even.elo();
        assert!(elo.abs() < 1e-9 && (low + high).abs() < 1e-9 && high > 100.0);
    }
}
