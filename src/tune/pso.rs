//! The particle swarm of MadChess (seed 003) on Texel's loss: derivative-free, so it can move
//! any weight, the non-linear ones (king-attack weights) included.
//!
//! Several swarms of particles fly through the space of the chosen weights, each drawn towards
//! its own best point, its swarm's best and the best of all swarms, with random magnitudes.
//! When ten iterations in a row find nothing better, every particle but the best of all is
//! thrown to a random point: the others are drawn back towards the best and may meet a better
//! point on the way. Each particle's loss is the engine's own evaluation over the positions
//! (not the linear form), so no trace has to hold for the weights it moves.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use shakmaty::{Color, Position};

use super::dataset::{Split, sigmoid};
use crate::engine::Weights;
use crate::engine::eval::evaluate_with;
use crate::engine::weights::{LEN, TERMS, name_of};

const INERTIA: f64 = 0.729;
const INFLUENCE: f64 = 1.49;
/// Iterations without a better global point before the particles are scattered.
const STALE_ITERATIONS: usize = 10;

/// The scalar indices (`2 · pair + 0` middlegame, `+ 1` endgame) of the named terms.
pub fn scalars_of_terms(names: &str) -> anyhow::Result<Vec<usize>> {
    let mut scalars = Vec::new();
    for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let mut start = 0;
        let mut found = false;
        for term in &TERMS {
            if term.name == name {
                found = true;
                for pair in start..start + term.len {
                    scalars.push(2 * pair);
                    // Terms that use only one half keep the other at zero.
                    if !term.name.starts_with("king_") {
                        scalars.push(2 * pair + 1);
                    }
                }
            }
            start += term.len;
        }
        if !found {
            let known: Vec<&str> = TERMS.iter().map(|t| t.name).collect();
            anyhow::bail!(
                "--terms: no term is named {name:?} (known: {})",
                known.join(", ")
            );
        }
    }
    Ok(scalars)
}

/// The loss of one weight set over the positions, evaluated by the engine itself.
fn engine_loss(split: &Split, weights: &Weights, k: f64, lambda: f64) -> f64 {
    let data = &split.train;
    let mut total = 0.0;
    for (i, pos) in data.positions.iter().enumerate() {
        let stm = f64::from(evaluate_with(pos, weights));
        let white = if pos.turn() == Color::White {
            stm
        } else {
            -stm
        };
        let result = f64::from(data.results[i]);
        let label = if lambda >= 1.0 {
            result
        } else {
            lambda * result + (1.0 - lambda) * sigmoid(k, f64::from(data.scores[i]))
        };
        let e = sigmoid(k, white) - label;
        total += e * e;
    }
    total / data.positions.len().max(1) as f64
}

fn with_values(start: &Weights, scalars: &[usize], values: &[f64]) -> Weights {
    let mut pairs = start.pairs().to_vec();
    for (&scalar, &value) in scalars.iter().zip(values) {
        pairs[scalar / 2][scalar % 2] = value.round() as i32;
    }
    Weights::from_pairs(pairs).expect("same length")
}

struct Particle {
    at: Vec<f64>,
    velocity: Vec<f64>,
    best_at: Vec<f64>,
    best_loss: f64,
}

/// What the swarm moves and how long it flies.
#[derive(Clone, Debug)]
pub struct SwarmSettings {
    /// The terms to move, comma-separated names.
    pub terms: String,
    pub iterations: usize,
    pub swarms: usize,
    pub particles: usize,
    /// How far each weight may move from its start.
    pub range: i32,
    pub seed: u64,
    /// The label blend (as in the gradient run).
    pub lambda: f64,
    pub threads: usize,
}

/// Runs the swarms and returns the best weights found (the start if nothing beat it).
pub fn tune(
    split: &Split,
    start: &Weights,
    k: f64,
    args: &SwarmSettings,
) -> anyhow::Result<Weights> {
    if split.train.positions.is_empty() {
        anyhow::bail!("the swarm needs positions (none were loaded)");
    }
    let scalars = scalars_of_terms(&args.terms)?;
    let origin: Vec<f64> = scalars
        .iter()
        .map(|&s| f64::from(start.pairs()[s / 2][s % 2]))
        .collect();
    let range = f64::from(args.range.max(1));
    let (low, high): (Vec<f64>, Vec<f64>) = origin.iter().map(|&o| (o - range, o + range)).unzip();
    let mut rng = StdRng::seed_from_u64(args.seed);
    let random_point = |rng: &mut StdRng| -> Vec<f64> {
        (0..origin.len())
            .map(|i| rng.gen_range(low[i]..=high[i]))
            .collect()
    };
    let count = args.swarms.max(1) * args.particles.max(1);
    let mut particles: Vec<Particle> = (0..count)
        .map(|p| {
            let at = if p == 0 {
                origin.clone()
            } else {
                random_point(&mut rng)
            };
            Particle {
                velocity: vec![0.0; at.len()],
                best_at: at.clone(),
                at,
                best_loss: f64::INFINITY,
            }
        })
        .collect();
    let start_loss = engine_loss(split, start, k, args.lambda);
    let mut global = (start_loss, origin.clone());
    let mut stale = 0;
    tracing::info!(
        "swarm: {} weights ({} swarms of {}), engine loss at the start {start_loss:.6}",
        scalars.len(),
        args.swarms,
        args.particles
    );
    for iteration in 1..=args.iterations {
        // Every particle's loss, the particles shared out over the threads.
        let losses = evaluate_all(split, start, &scalars, &particles, k, args);
        tracing::debug!("swarm iteration {iteration}: losses {losses:?}");
        for (particle, loss) in particles.iter_mut().zip(losses) {
            if loss < particle.best_loss {
                particle.best_loss = loss;
                particle.best_at = particle.at.clone();
            }
        }
        let best_now = particles
            .iter()
            .min_by(|a, b| a.best_loss.total_cmp(&b.best_loss))
            .map(|p| (p.best_loss, p.best_at.clone()))
            .expect("at least one particle");
        if best_now.0 < global.0 {
            global = best_now;
            stale = 0;
        } else {
            stale += 1;
        }
        tracing::info!(
            "swarm iteration {iteration}: best engine loss {:.6}",
            global.0
        );
        if stale >= STALE_ITERATIONS {
            stale = 0;
            for particle in &mut particles {
                if particle.best_at != global.1 {
                    particle.at = random_point(&mut rng);
                    particle.velocity.iter_mut().for_each(|v| *v = 0.0);
                }
            }
            continue;
        }
        let swarm_best: Vec<Vec<f64>> = particles
            .chunks(args.particles.max(1))
            .map(|swarm| {
                swarm
                    .iter()
                    .min_by(|a, b| a.best_loss.total_cmp(&b.best_loss))
                    .map(|p| p.best_at.clone())
                    .expect("a swarm has particles")
            })
            .collect();
        for (index, particle) in particles.iter_mut().enumerate() {
            let swarm = &swarm_best[index / args.particles.max(1)];
            for i in 0..particle.at.len() {
                let x = particle.at[i];
                let mut v = INERTIA * particle.velocity[i];
                v += rng.r#gen::<f64>() * INFLUENCE * (particle.best_at[i] - x);
                v += rng.r#gen::<f64>() * INFLUENCE * (swarm[i] - x);
                v += rng.r#gen::<f64>() * INFLUENCE * (global.1[i] - x);
                particle.velocity[i] = v;
                particle.at[i] = (x + v).clamp(low[i], high[i]);
            }
        }
    }
    let best = with_values(start, &scalars, &global.1);
    for (i, &scalar) in scalars.iter().enumerate() {
        if (global.1[i].round() - origin[i]).abs() >= 1.0 {
            tracing::info!(
                "{} {}: {} -> {}",
                name_of(scalar / 2),
                if scalar % 2 == 0 { "mg" } else { "eg" },
                origin[i],
                global.1[i].round()
            );
        }
    }
    debug_assert_eq!(best.pairs().len(), LEN);
    Ok(best)
}

fn evaluate_all(
    split: &Split,
    start: &Weights,
    scalars: &[usize],
    particles: &[Particle],
    k: f64,
    args: &SwarmSettings,
) -> Vec<f64> {
    let threads = args.threads.max(1);
    let mut losses = vec![0.0; particles.len()];
    std::thread::scope(|scope| {
        let chunk = particles.len().div_ceil(threads).max(1);
        let handles: Vec<_> = particles
            .chunks(chunk)
            .map(|group| {
                scope.spawn(move || {
                    group
                        .iter()
                        .map(|p| {
                            engine_loss(split, &with_values(start, scalars, &p.at), k, args.lambda)
                        })
                        .collect::<Vec<f64>>()
                })
            })
            .collect();
        let mut at = 0;
        for handle in handles {
            for loss in handle.join().expect("a swarm thread panicked") {
                losses[at] = loss;
                at += 1;
            }
        }
    });
    losses
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Positions where one side has the bishop pair and the other a bishop and a knight, from
    /// the endgame to the full board, labelled through the sigmoid by the engine's own
    /// evaluation with the bishop pair worth `pair` and every other weight as in `start`.
    fn labelled_by_the_pair(start: &Weights, pair: [i32; 2], k: f64) -> Split {
        let mut pairs = start.pairs().to_vec();
        pairs[crate::engine::weights::BISHOP_PAIR] = pair;
        let truth = Weights::from_pairs(pairs).unwrap();
        let fens = [
            "2b1kn2/8/8/8/8/8/8/2B1KB2 w - - 0 1",
            "2b1kb2/8/8/8/8/8/8/2B1KN2 b - - 0 1",
            "2b1kn2/pppp4/8/8/8/8/PPPP4/2B1KB2 w - - 0 1",
            "r1b1kn2/pp6/8/8/8/8/PP6/R1B1KB2 b - - 0 1",
            "r1bqkn1r/ppp2ppp/8/8/8/8/PPP2PPP/R1BQKB1R w KQkq - 0 1",
            "r1bqkb1r/ppp2ppp/8/8/8/8/PPP2PPP/R1BQKN1R b KQkq - 0 1",
            "rnbqk2r/pppp1ppp/8/8/8/8/PPPP1PPP/R1BQKB1R w KQkq - 0 1",
            "r1bqkb1r/pppp1ppp/8/8/8/8/PPPP1PPP/RNBQK2R w KQkq - 0 1",
        ];
        let mut train = crate::tune::dataset::Dataset::default();
        for fen in fens {
            let game = crate::engine::Game::new(Some(fen), false).unwrap();
            let pos = game.position().clone();
            let stm = f64::from(evaluate_with(&pos, &truth));
            let white = if pos.turn() == Color::White {
                stm
            } else {
                -stm
            };
            let sample = crate::tune::sample::Sample {
                fen: fen.into(),
                score_cp: 0,
                result: 0.0,
            };
            let trace = crate::tune::trace::Trace::of(&pos, start);
            train.push(trace, &sample, Some(pos));
            *train.results.last_mut().unwrap() = sigmoid(k, white) as f32;
        }
        Split {
            train,
            held_out: Default::default(),
            skipped_lines: 0,
            games: 0,
        }
    }

    #[test]
    fn the_swarm_finds_the_weight_that_made_the_labels_and_repeats_by_seed() {
        let start = Weights::handwritten();
        let from = start.pairs()[crate::engine::weights::BISHOP_PAIR];
        let truth = [from[0] + 60, from[1] + 60];
        let k = 0.006;
        let split = labelled_by_the_pair(&start, truth, k);
        let settings = SwarmSettings {
            terms: "bishop_pair".into(),
            iterations: 40,
            swarms: 2,
            particles: 6,
            range: 100,
            seed: 7,
            lambda: 1.0,
            threads: 2,
        };
        let before = engine_loss(&split, &start, k, 1.0);
        let tuned = tune(&split, &start, k, &settings).unwrap();
        let after = engine_loss(&split, &tuned, k, 1.0);
        assert!(after < before / 10.0, "loss {before} -> {after}");
        let found = tuned.pairs()[crate::engine::weights::BISHOP_PAIR];
        for half in 0..2 {
            assert!(
                (found[half] - truth[half]).abs() <= 15,
                "half {half}: found {found:?}, labels made with {truth:?}, start {from:?}"
            );
        }
        // Only the named term moves.
        let moved = (0..LEN)
            .filter(|&p| tuned.pairs()[p] != start.pairs()[p])
            .collect::<Vec<_>>();
        assert_eq!(moved, vec![crate::engine::weights::BISHOP_PAIR]);
        // Same seed, same weights, whatever the threads.
        let again = tune(
            &split,
            &start,
            k,
            &SwarmSettings {
                threads: 1,
                ..settings
            },
        )
        .unwrap();
        assert_eq!(again.pairs(), tuned.pairs());
    }

    #[test]
    fn terms_are_named_or_refused() {
        let scalars = scalars_of_terms("bishop_pair").unwrap();
        let pair = crate::engine::weights::BISHOP_PAIR;
        assert_eq!(scalars, vec![2 * pair, 2 * pair + 1]);
        let error = scalars_of_terms("bishop_pear").unwrap_err().to_string();
        assert!(
            error.contains("bishop_pear") && error.contains("bishop_pair"),
            "{error}"
        );
    }
}
