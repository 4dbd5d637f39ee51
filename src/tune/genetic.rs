//! `ladder tune search`: a genetic search over the search constants (pruning margins, depth
//! limits, reduction formulas; [`crate::engine::constants`]), in the spirit of seed 004's
//! genetic optimisation: the constants only games can judge, judged by games.
//!
//! Each generation is a population of constant sets. Every member plays the same openings
//! (new ones each generation) with both colours against the shipped constants at fixed nodes;
//! its fitness is its score. The best few go on unchanged (and are judged again on the next
//! generation's openings, so a lucky score does not carry a set for ever); the rest are
//! children of parents picked by tournament, by uniform crossover and a mutation of a few
//! constants by one or two steps. The first generation is the shipped set and its mutants.
//!
//! Everything is a function of the seed: the openings of generation g, its population (from
//! the seed and generation g−1's scores), so a run killed at any point resumes from its
//! journal (one JSON line per judged member) to the same result. At the end the best member
//! of the last generation plays a longer confirmation match against the shipped constants;
//! only that match's interval says whether it is better.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

use super::matches::{Player, run_match};
use super::sets::start_weights;
use crate::engine::constants::TUNABLES;
use crate::engine::{Evaluator, SearchConstants};
use crate::seed::{SplitMix, mix64};

/// Members of each generation carried over unchanged.
const ELITES: usize = 2;
/// Members drawn for each parent tournament.
const TOURNAMENT: usize = 3;

/// `ladder tune search` options.
#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    /// Where the best constants go (their text form, with the confirmation match in the header).
    #[arg(long)]
    pub out: PathBuf,
    /// The journal of judged members; an existing one is resumed [default: OUT.journal.jsonl].
    #[arg(long)]
    pub journal: Option<PathBuf>,
    /// Members of each generation.
    #[arg(long, default_value_t = 12)]
    pub population: usize,
    #[arg(long, default_value_t = 10)]
    pub generations: u32,
    /// Game pairs each member plays against the shipped constants, per generation.
    #[arg(long, default_value_t = 40)]
    pub pairs: u64,
    /// Game pairs of the final confirmation match (0: none).
    #[arg(long, default_value_t = 400)]
    pub confirm_pairs: u64,
    /// Nodes per move.
    #[arg(long, default_value_t = 5_000)]
    pub nodes: u64,
    /// Chance that a child's constant mutates, percent.
    #[arg(long, default_value_t = 20)]
    pub mutation_percent: u32,
    /// The evaluation weights both sides play with: `shipped`, `handwritten` or a file.
    #[arg(long, default_value = "shipped")]
    pub weights: String,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Games played at once.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
}

/// One judged member, as the journal keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Judged {
    generation: u32,
    member: usize,
    values: Vec<i32>,
    wins: u32,
    draws: u32,
    losses: u32,
    /// The member's score against the shipped constants, 0 to 1.
    score: f64,
}

/// The genetic search's settings that decide its results (the journal must match them).
#[derive(Clone, Copy, Debug)]
struct Plan {
    population: usize,
    mutation_percent: u32,
    seed: u64,
}

type Values = [i32; TUNABLES.len()];

impl Plan {
    /// Generation `generation`'s members: the shipped set and its mutants first, then the
    /// elites of the previous generation and their children.
    fn members(&self, generation: u32, previous: &[(Values, f64)]) -> Vec<Values> {
        let mut rng = SplitMix::new(mix64(self.seed ^ mix64(u64::from(generation) + 1)));
        let shipped = SearchConstants::shipped().values();
        if generation == 0 || previous.is_empty() {
            let mut members = vec![shipped];
            while members.len() < self.population {
                // Every constant may move at first, so the population spreads out.
                members.push(mutate(&shipped, 50, &mut rng));
            }
            return members;
        }
        let mut ranked: Vec<&(Values, f64)> = previous.iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
        let mut members: Vec<Values> = ranked.iter().take(ELITES).map(|m| m.0).collect();
        while members.len() < self.population {
            let mother = tournament(previous, &mut rng);
            let father = tournament(previous, &mut rng);
            let child = crossover(&mother, &father, &mut rng);
            members.push(mutate(&child, self.mutation_percent, &mut rng));
        }
        members
    }
}

/// The fittest of a few members drawn at random.
fn tournament(members: &[(Values, f64)], rng: &mut SplitMix) -> Values {
    let mut best: Option<&(Values, f64)> = None;
    for _ in 0..TOURNAMENT {
        let drawn = &members[(rng.next_u64() % members.len() as u64) as usize];
        if best.is_none_or(|b| drawn.1 > b.1) {
            best = Some(drawn);
        }
    }
    best.expect("at least one draw").0
}

/// Each constant from one parent or the other.
fn crossover(mother: &Values, father: &Values, rng: &mut SplitMix) -> Values {
    let mut child = *mother;
    for (c, f) in child.iter_mut().zip(father) {
        if rng.next_u64() & 1 == 1 {
            *c = *f;
        }
    }
    child
}

/// Moves each constant, with chance `percent`, by one or two steps up or down, within range.
fn mutate(values: &Values, percent: u32, rng: &mut SplitMix) -> Values {
    let mut out = *values;
    for (v, t) in out.iter_mut().zip(TUNABLES) {
        if rng.next_u64() % 100 < u64::from(percent) {
            let steps = [-2, -1, 1, 2][(rng.next_u64() % 4) as usize];
            *v = (*v + steps * t.step).clamp(t.min, t.max);
        }
    }
    out
}

/// The journal read back: judged members by (generation, member). A line that does not
/// parse (a kill mid-write) is skipped with a warning.
fn read_journal(path: &Path) -> anyhow::Result<Vec<Judged>> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let mut judged = Vec::new();
    for (number, line) in BufReader::new(file).lines().enumerate() {
        let line = line.with_context(|| format!("cannot read {}", path.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Judged>(&line) {
            Ok(j) if j.values.len() == TUNABLES.len() => judged.push(j),
            Ok(_) => tracing::warn!(
                "{}:{}: a member with another number of constants; skipped",
                path.display(),
                number + 1
            ),
            Err(e) => tracing::warn!("{}:{}: {e}; skipped", path.display(), number + 1),
        }
    }
    Ok(judged)
}

pub fn run(args: SearchArgs) -> anyhow::Result<()> {
    if args.population < ELITES + 1 || args.generations == 0 || args.pairs == 0 {
        bail!(
            "--population must be at least {}, --generations and --pairs at least 1",
            ELITES + 1
        );
    }
    if args.mutation_percent > 100 || args.nodes == 0 {
        bail!("--mutation-percent must be 0 to 100 and --nodes at least 1");
    }
    let journal_path = args.journal.clone().unwrap_or_else(|| {
        let mut name = args.out.clone().into_os_string();
        name.push(".journal.jsonl");
        PathBuf::from(name)
    });
    let plan = Plan {
        population: args.population,
        mutation_percent: args.mutation_percent,
        seed: args.seed,
    };
    let weights = Arc::new(start_weights(&args.weights)?);
    let baseline = Player::with_weights(weights.clone());
    let mut journal_done = read_journal(&journal_path)?;
    let mut journal = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&journal_path)
        .with_context(|| format!("cannot open {}", journal_path.display()))?;
    let mut previous: Vec<(Values, f64)> = Vec::new();
    for generation in 0..args.generations {
        let members = plan.members(generation, &previous);
        let openings_seed = mix64(args.seed.wrapping_add(u64::from(generation) << 32));
        let mut judged_now = Vec::new();
        for (member, values) in members.iter().enumerate() {
            let known = journal_done
                .iter()
                .position(|j| j.generation == generation && j.member == member);
            let judged = match known {
                Some(i) if journal_done[i].values == values.to_vec() => journal_done.swap_remove(i),
                Some(_) => bail!(
                    "{}: generation {generation} member {member} differs from this run's \
                     (another seed or --population/--mutation-percent?); use another --journal",
                    journal_path.display()
                ),
                None => {
                    let player = Player {
                        evaluator: Evaluator::Classical(weights.clone()),
                        constants: SearchConstants::from_values(*values)
                            .map_err(|e| anyhow::anyhow!(e))?,
                    };
                    let result = run_match(
                        &player,
                        &baseline,
                        args.pairs,
                        args.nodes,
                        openings_seed,
                        args.threads,
                        |_| {},
                    );
                    let judged = Judged {
                        generation,
                        member,
                        values: values.to_vec(),
                        wins: result.wins,
                        draws: result.draws,
                        losses: result.losses,
                        score: result.score(),
                    };
                    writeln!(journal, "{}", serde_json::to_string(&judged)?)
                        .and_then(|()| journal.flush())
                        .with_context(|| format!("cannot write {}", journal_path.display()))?;
                    judged
                }
            };
            tracing::info!(
                "generation {generation} member {member}: +{} ={} -{} ({:.1}%){}",
                judged.wins,
                judged.draws,
                judged.losses,
                100.0 * judged.score,
                changes_from_shipped(values)
            );
            judged_now.push((*values, judged.score));
        }
        let best = judged_now
            .iter()
            .map(|m| m.1)
            .fold(f64::NEG_INFINITY, f64::max);
        let mean = judged_now.iter().map(|m| m.1).sum::<f64>() / judged_now.len() as f64;
        println!(
            "generation {generation}: best {:.1}%, mean {:.1}% against the shipped constants",
            100.0 * best,
            100.0 * mean
        );
        previous = judged_now;
    }
    finish(&args, &previous, &baseline)
}

/// Confirms the last generation's best member and writes it.
fn finish(args: &SearchArgs, last: &[(Values, f64)], baseline: &Player) -> anyhow::Result<()> {
    let (values, score) = last
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .copied()
        .expect("a generation has members");
    let best = SearchConstants::from_values(values).map_err(|e| anyhow::anyhow!(e))?;
    let mut header = format!(
        "Search constants from `ladder tune search --population {} --generations {} --pairs {} \
         --nodes {} --seed {} --weights {}`.\nLast generation's best: {:.1}% against the shipped \
         constants over {} pairs.{}",
        args.population,
        args.generations,
        args.pairs,
        args.nodes,
        args.seed,
        args.weights,
        100.0 * score,
        args.pairs,
        changes_from_shipped(&values)
    );
    if args.confirm_pairs > 0 {
        let player = Player {
            evaluator: baseline.evaluator.clone(),
            constants: best.clone(),
        };
        // Openings no generation played.
        let result = run_match(
            &player,
            baseline,
            args.confirm_pairs,
            args.nodes,
            mix64(args.seed ^ 0xC0F1_12A7),
            args.threads,
            |_| {},
        );
        let (elo, low, high) = result.elo();
        let line = format!(
            "Confirmation against the shipped constants, {} games at {} nodes: +{} ={} -{}, \
             Elo {elo:+.0} (95% interval {low:+.0} to {high:+.0}){}",
            result.games(),
            args.nodes,
            result.wins,
            result.draws,
            result.losses,
            if low > 0.0 {
                ""
            } else {
                ": not shown better; do not ship"
            }
        );
        println!("{line}");
        header.push('\n');
        header.push_str(&line);
    }
    crate::atomic_file::write_atomically(&args.out, best.to_text(&header))?;
    println!("wrote {}", args.out.display());
    Ok(())
}

/// `; rfp_margin 80→100, …` for the constants that differ from the shipped ones.
fn changes_from_shipped(values: &Values) -> String {
    let changes: Vec<String> = TUNABLES
        .iter()
        .zip(values)
        .filter(|(t, v)| t.shipped != **v)
        .map(|(t, v)| format!("{} {}→{v}", t.name, t.shipped))
        .collect();
    if changes.is_empty() {
        String::new()
    } else {
        format!("; {}", changes.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan {
            population: 6,
            mutation_percent: 30,
            seed: 9,
        }
    }

    #[test]
    fn the_first_generation_is_the_shipped_set_and_its_mutants_in_range() {
        let members = plan().members(0, &[]);
        assert_eq!(members.len(), 6);
        assert_eq!(members[0], SearchConstants::shipped().values());
        assert!(members[1..].iter().all(|m| *m != members[0]));
        for m in &members {
            assert!(SearchConstants::from_values(*m).is_ok(), "{m:?}");
        }
        assert_eq!(
            members,
            plan().members(0, &[]),
            "same seed, same population"
        );
    }

    #[test]
    fn the_fittest_go_on_and_children_take_their_constants_from_the_parents() {
        let first = plan().members(0, &[]);
        // Member 3 scored best, member 5 second.
        let scored: Vec<(Values, f64)> = first
            .iter()
            .enumerate()
            .map(|(i, m)| (*m, [0.4, 0.45, 0.3, 0.7, 0.2, 0.6][i]))
            .collect();
        let next = plan().members(1, &scored);
        assert_eq!(next.len(), 6);
        assert_eq!(&next[..2], &[first[3], first[5]]);
        // Without mutation every child's constant comes from some member of the last one.
        let no_mutation = Plan {
            mutation_percent: 0,
            ..plan()
        };
        for child in &no_mutation.members(1, &scored)[ELITES..] {
            for (i, v) in child.iter().enumerate() {
                assert!(first.iter().any(|m| m[i] == *v), "constant {i}: {v}");
            }
        }
    }

    #[test]
    fn a_journal_line_cut_off_by_a_kill_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.jsonl");
        let judged = Judged {
            generation: 0,
            member: 1,
            values: SearchConstants::shipped().values().to_vec(),
            wins: 3,
            draws: 1,
            losses: 0,
            score: 0.875,
        };
        let line = serde_json::to_string(&judged).unwrap();
        std::fs::write(&path, format!("{line}\n{}", &line[..20])).unwrap();
        assert_eq!(read_journal(&path).unwrap(), vec![judged]);
    }

    /// A tiny run end to end: the journal holds every member, and a second run with the same
    /// seed resumes from it to the same output without playing again.
    #[test]
    fn a_run_resumes_from_its_journal_to_the_same_constants() {
        let dir = tempfile::tempdir().unwrap();
        let args = |out: &str| SearchArgs {
            out: dir.path().join(out),
            journal: Some(dir.path().join("journal.jsonl")),
            population: 3,
            generations: 2,
            pairs: 1,
            confirm_pairs: 0,
            nodes: 200,
            mutation_percent: 30,
            weights: "shipped".into(),
            seed: 4,
            threads: 1,
        };
        run(args("first.txt")).unwrap();
        let journal = std::fs::read_to_string(dir.path().join("journal.jsonl")).unwrap();
        assert_eq!(journal.lines().count(), 6);
        run(args("second.txt")).unwrap();
        let again = std::fs::read_to_string(dir.path().join("journal.jsonl")).unwrap();
        assert_eq!(again, journal, "nothing was played twice");
        let read = |name: &str| {
            SearchConstants::parse(&std::fs::read_to_string(dir.path().join(name)).unwrap())
                .unwrap()
        };
        assert_eq!(read("first.txt"), read("second.txt"));
    }
}
