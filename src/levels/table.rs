//! `ladder levels`: its options and the table it prints — each level's engine parameters,
//! target and calibrated rating, with the endgame multipliers (the sandbox's start-up line
//! prints a row of it too).

use super::{Coefficients, LevelParams, NO_CLIP_SCALES, level_key};
use crate::engine::noise::MAX_NOISE_CP;

/// `ladder levels` options.
#[derive(Debug, clap::Args)]
pub struct LevelsArgs {
    /// Coefficients file (default: the built-in calibration/coefficients.toml).
    #[arg(long)]
    pub coefficients: Option<std::path::PathBuf>,
    /// First level of the table.
    #[arg(long, default_value_t = 1.0)]
    pub from: f64,
    /// Last level of the table (not below --from: the table counts up) [default: the top
    /// calibrated level of the coefficients, 10 without one].
    #[arg(long)]
    pub to: Option<f64>,
    /// Step between levels (positive); rows are --from + i·step, rounded to the decimals of
    /// --from and --step.
    #[arg(long, default_value_t = 1.0)]
    pub step: f64,
}

/// Where `ladder levels` stops without `--to`: the ladder's top level, and never below
/// `--from`, so `--from 15` alone prints level 15.
pub fn default_top(coefficients: &Coefficients, from: f64) -> f64 {
    coefficients.top_level().max(from)
}

/// Most rows `ladder levels` prints.
pub const MAX_TABLE_ROWS: usize = 100_000;

/// The levels of `ladder levels --from --to --step`: from + i·step for i = 0, 1, … up to `to`,
/// each rounded to the decimals of `from` and `step` (so 0.1 steps give 1.2, not
/// 1.2000000000000002, and land on the whole levels exactly). An error names the option.
pub fn rows(from: f64, to: f64, step: f64) -> Result<Vec<f64>, String> {
    for (name, value) in [("--from", from), ("--to", to), ("--step", step)] {
        if !value.is_finite() {
            return Err(format!("{name} must be a number, not {value}"));
        }
    }
    if step <= 0.0 {
        return Err(format!(
            "--step must be positive (got {step}); e.g. --step 0.1 for tenths of a level"
        ));
    }
    if to < from {
        return Err(format!(
            "--to {to} is below --from {from}: the table counts up; swap them (--from {to} --to {from})"
        ));
    }
    let decimals = decimals_of(from).max(decimals_of(step));
    let scale = 10f64.powi(decimals as i32);
    let round = |x: f64| (x * scale).round() / scale;
    let count = ((to - from) / step + 1e-9).floor() as usize + 1;
    if count > MAX_TABLE_ROWS {
        return Err(format!(
            "--from {from} --to {to} --step {step} makes {count} rows (at most {MAX_TABLE_ROWS}): take a larger --step"
        ));
    }
    Ok((0..count).map(|i| round(from + i as f64 * step)).collect())
}

/// How many decimals the shortest form of `x` has ("0.25" → 2, "3" → 0), at most 9.
fn decimals_of(x: f64) -> usize {
    let text = format!("{x}");
    text.split_once('.')
        .map_or(0, |(_, frac)| frac.len().min(9))
}

/// The evaluation a level plays, as the table names it: `hce` (hand-crafted) or `netN`.
fn evaluation(p: &LevelParams) -> String {
    match p.network {
        0 => "hce".to_string(),
        n => format!("net{n}"),
    }
}

/// The table `ladder levels` prints: per level, its target, its rating (recorded, or `~`
/// interpolated between rated levels), the rating whose errors the humane model plays (and,
/// after a slash, the one its habits keep where that differs; `-` with the model off), nodes, noise, the chance of a blind move, hash and the evaluation it plays,
/// and the endgame multipliers at r = 1, 0.5 and 0.25.
pub fn render(coefficients: &Coefficients, levels: &[f64]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "coefficients version {} (evaluation weights version {}, search version {}): n0={} b={} s0={} d={} r_min={} endgame nodes={} noise={} levels/halving={}",
        coefficients.version,
        coefficients.eval_weights,
        coefficients.search,
        coefficients.n0,
        coefficients.b,
        coefficients.s0,
        coefficients.d,
        coefficients.r_min,
        coefficients.endgame_nodes,
        coefficients.endgame_noise,
        coefficients.endgame_levels_per_halving
    );
    let targets = coefficients.targets();
    let _ = writeln!(
        out,
        "targets: {} ({} ratings); ratings: {}",
        targets.describe(),
        targets.perf,
        if coefficients.ratings_source.is_empty() {
            "-"
        } else {
            &coefficients.ratings_source
        }
    );
    if let Some(clip) = coefficients.noise_clip {
        if let (Some(cp), Some(from), Some(to)) = (clip.cp, clip.from_level, clip.to_level) {
            let _ = writeln!(
                out,
                "noise draws clipped at ±{cp} cp from level {} to level {}",
                level_key(from),
                level_key(to)
            );
        }
        if let (Some(from), Some(to), Some(widen)) = (clip.from_x, clip.to_x, clip.widen_x) {
            let (clip_in, none_from) = match (clip.scales, clip.cp) {
                (Some(k), _) => (
                    format!("{k} noise scales"),
                    format!("{NO_CLIP_SCALES} scales"),
                ),
                (None, cp) => (
                    format!("±{} cp", cp.unwrap_or(f64::NAN)),
                    format!("±{MAX_NOISE_CP} cp"),
                ),
            };
            let clipped: Vec<String> = levels
                .iter()
                .filter_map(|&level| {
                    let p = LevelParams::new(coefficients, level);
                    // A clip at MAX_NOISE_CP is every draw's bound anyway.
                    let cp = p.noise_clip_at(p.noise_at(1.0));
                    (cp < MAX_NOISE_CP).then(|| format!("{} ±{cp} cp", level_key(level)))
                })
                .collect();
            let _ = writeln!(
                out,
                "noise draws clipped at {clip_in} from x = {from:.3} to {to:.3}, doubling every \
                 {widen:.3} of x outside (none from {none_from}): {}",
                if clipped.is_empty() {
                    "no level here".to_string()
                } else {
                    format!("levels {}", clipped.join(", "))
                }
            );
        }
    }
    let _ = writeln!(
        out,
        "{:>6} {:>7} {:>10} {:>9} {:>6} {:>5} {:>5} {:>7} {:>7} {:>6} | {:>10} {:>10} {:>10} | {:>8} {:>8} {:>8}",
        "level",
        "offset",
        "nodes",
        "noise_cp",
        "blind",
        "hash",
        "eval",
        "target",
        "rating",
        "model",
        "nodes@1",
        "nodes@0.5",
        "nodes@0.25",
        "noise@1",
        "@0.5",
        "@0.25"
    );
    for &level in levels {
        let p = LevelParams::new(coefficients, level);
        let rating = match coefficients.ratings.get(&level_key(level)) {
            Some(r) => format!("{r:.0}"),
            None => coefficients
                .rating_of(level)
                .map_or("-".to_string(), |r| format!("~{r:.0}")),
        };
        let model = p.humane.as_ref().map_or("-".to_string(), |h| match h.1 {
            // Habits at the target where the errors' rating is below it: both.
            p if p.habits != p.errors => format!("{:.0}/{:.0}", p.errors, p.habits),
            p => format!("{:.0}", p.errors),
        });
        let _ = writeln!(
            out,
            "{:>6} {:>7.2} {:>10} {:>9.1} {:>6.3} {:>4}M {:>5} {:>7.0} {:>7} {:>6} | {:>10} {:>10} {:>10} | {:>8.1} {:>8.1} {:>8.1}",
            level_key(level),
            p.offset,
            p.nodes,
            p.noise_cp,
            p.blind_probability,
            p.hash_mb,
            evaluation(&p),
            targets.target(level),
            rating,
            model,
            p.nodes_at(1.0),
            p.nodes_at(0.5),
            p.nodes_at(0.25),
            p.noise_at(1.0),
            p.noise_at(0.5),
            p.noise_at(0.25),
        );
    }
    out
}

pub fn run(args: LevelsArgs) -> anyhow::Result<()> {
    let coefficients = match &args.coefficients {
        Some(path) => Coefficients::load(path)?,
        None => Coefficients::builtin(),
    };
    let to = args
        .to
        .unwrap_or_else(|| default_top(&coefficients, args.from));
    let levels = rows(args.from, to, args.step).map_err(anyhow::Error::msg)?;
    print!("{}", render(&coefficients, &levels));
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn the_levels_table_rows_are_exact_decimals_and_bad_ranges_are_refused() {
        let levels = rows(1.0, 3.0, 0.1).unwrap();
        assert_eq!(levels.len(), 21);
        for (i, level) in levels.iter().enumerate() {
            let key = level_key(*level);
            assert!(
                key.split_once('.').is_none_or(|(_, f)| f.len() == 1),
                "row {i}: {key}"
            );
        }
        assert_eq!(levels[2], 1.2);
        assert_eq!(levels[10], 2.0);
        assert_eq!(levels[20], 3.0);
        // The row of level 2 is level 2's.
        let c = Coefficients::builtin();
        let text = render(&c, &levels);
        let row = |key: &str| {
            text.lines()
                .find(|l| l.split_whitespace().next() == Some(key))
                .map(str::to_string)
        };
        assert_eq!(
            row("2"),
            render(&c, &[2.0])
                .lines()
                .find(|l| l.split_whitespace().next() == Some("2"))
                .map(str::to_string)
        );
        let measured = format!(" {:.0} ", c.ratings["2"]);
        assert!(row("2").unwrap().contains(&measured), "{:?}", row("2"));
        // Decimals of --from count too, and the end is reached despite rounding.
        assert_eq!(rows(1.25, 2.0, 0.25).unwrap(), vec![1.25, 1.5, 1.75, 2.0]);
        assert_eq!(rows(4.0, 4.0, 1.0).unwrap(), vec![4.0]);
        let err = rows(1.0, 3.0, 0.0).unwrap_err();
        assert!(err.starts_with("--step must be positive"), "{err}");
        assert!(rows(1.0, 3.0, -1.0).is_err());
        let err = rows(5.0, 1.0, 1.0).unwrap_err();
        assert!(err.contains("--to 1 is below --from 5"), "{err}");
        assert!(rows(f64::NAN, 3.0, 1.0).is_err());
        assert!(rows(1.0, 1e9, 0.001).unwrap_err().contains("rows"));
    }

    /// The cell of `table` (as [`render`] writes it) in the row of `level` and the column
    /// headed `column`.
    pub(crate) fn cell(table: &str, level: &str, column: &str) -> String {
        // The header follows the lines about the coefficients, however many there are.
        let header: Vec<&str> = table
            .lines()
            .find(|l| l.split_whitespace().next() == Some("level"))
            .unwrap()
            .split_whitespace()
            .collect();
        let at = header.iter().position(|&h| h == column).unwrap();
        let row = table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(level))
            .unwrap();
        row.split_whitespace().nth(at).unwrap().to_string()
    }

    #[test]
    fn the_table_names_the_evaluation_each_level_plays() {
        let text = crate::levels::tests::network_from(4, 10);
        let c = Coefficients::parse(&text, "c.toml").unwrap();
        let table = render(&c, &[9.0, 10.0]);
        assert_eq!(
            (cell(&table, "9", "eval"), cell(&table, "10", "eval")),
            ("hce".into(), "net4".into())
        );
    }

    #[test]
    fn the_table_shows_the_rating_the_humane_model_plays() {
        let shipped = Coefficients::builtin();
        // The shipped ratings, the errors' and (where they differ) the habits'.
        let table = render(&shipped, &[1.0, 12.0]);
        for level in [1.0, 12.0] {
            let want = LevelParams::new(&shipped, level)
                .humane
                .map_or("-".to_string(), |h| {
                    let played = h.1;
                    if played.habits == played.errors {
                        format!("{:.0}", played.errors)
                    } else {
                        format!("{:.0}/{:.0}", played.errors, played.habits)
                    }
                });
            assert_eq!(cell(&table, &level_key(level), "model"), want);
        }
        let mut off = shipped.clone();
        off.humane = None;
        assert_eq!(cell(&render(&off, &[3.0]), "3", "model"), "-");
        // The line over x, where it overshoots the top's target...
        let mut strength = shipped.clone();
        let h = strength.humane.as_mut().expect("the shipped model is on");
        h.rating_from = crate::engine::humane::ModelRating::Strength;
        h.habits_at_target = false;
        let line = LevelParams::new(&strength, 12.0).humane.unwrap().1.errors;
        let target = shipped.targets().target(12.0);
        assert!(line > target, "the line {line} overshoots at the top");
        assert_eq!(
            cell(&render(&strength, &[12.0]), "12", "model"),
            format!("{line:.0}")
        );
        // ...and the lower of the line and the target: the target there.
        let mut lower = strength.clone();
        lower.humane.as_mut().unwrap().rating_from = crate::engine::humane::ModelRating::Lower;
        assert_eq!(
            cell(&render(&lower, &[12.0]), "12", "model"),
            format!("{target:.0}")
        );
        // Habits kept at the target where the errors' rating is below it: both, slashed.
        let errors = LevelParams::new(&lower, 1.0).humane.unwrap().1.errors;
        let target = lower.targets().target(1.0);
        assert!(errors < target, "{errors} vs {target}");
        assert_eq!(
            cell(&render(&lower, &[1.0]), "1", "model"),
            format!("{errors:.0}")
        );
        let mut habits = lower.clone();
        habits.humane.as_mut().unwrap().habits_at_target = true;
        assert_eq!(
            cell(&render(&habits, &[1.0]), "1", "model"),
            format!("{errors:.0}/{target:.0}")
        );
    }
}
