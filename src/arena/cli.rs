//! `ladder arena` on the command line: its arguments, what it does with them (play a match,
//! report on results files, fit the anchors) and what it prints and writes.

use anyhow::Context;

use super::options::ArenaOptions;
use super::rebuild::{RebuiltJudging, report_from_results};
use super::{anchor_fit, report, run_match};

/// `ladder arena` options (boxed: they are many, and the CLI's command enum stays small).
#[derive(Debug, Clone, clap::Args)]
pub struct ArenaArgs {
    #[command(flatten)]
    pub options: Box<ArenaOptions>,
}

pub fn run(args: ArenaArgs) -> anyhow::Result<()> {
    let text = if args.options.fit_anchors {
        fit_anchors(&args.options)?
    } else if args.options.from_results.is_empty() {
        run_match(&args.options)?.report
    } else {
        let o = &args.options;
        let judging = if o.judge_games > 0 {
            Some(RebuiltJudging {
                program: o.judge.clone(),
                depth: o.judge_depth,
                games_per_level: o.judge_games,
                coefficients: o.coefficients()?,
                only_as_coefficients: o.judge_as_coefficients_history(),
                near: o.judge_near,
                levels: judged_levels(&o.levels)?,
            })
        } else {
            None
        };
        let text = report_from_results(&o.from_results, judging.as_ref())?;
        if let Some(path) = &args.options.report {
            std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?;
        }
        text
    };
    println!("{text}");
    Ok(())
}

/// `--level` with `--from-results`: the levels judged (`None`: not given, every level).
fn judged_levels(lists: &[String]) -> anyhow::Result<Option<Vec<f64>>> {
    if lists.is_empty() {
        return Ok(None);
    }
    let mut levels = Vec::new();
    for list in lists {
        levels.extend(
            crate::levels::parse_levels(list).map_err(|e| anyhow::anyhow!("--level: {e}"))?,
        );
    }
    Ok(Some(levels))
}

/// `--fit-anchors`: the joint fit of the games between anchors, pinned to the file's scale;
/// with `--update-anchors` the file is rewritten with the new ratings.
fn fit_anchors(args: &ArenaOptions) -> anyhow::Result<String> {
    let file = args.anchors()?;
    let (games, warnings) =
        anchor_fit::read_anchor_games(&args.from_results).context("reading results")?;
    for w in &warnings {
        tracing::warn!("skipped {w}");
    }
    let (fit, scored) = anchor_fit::fit_games(&file, &games).map_err(anyhow::Error::msg)?;
    let mut text = format!(
        "# Anchor fit from {}\n\n",
        args.from_results
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    text.push_str(&anchor_fit::render_fit(&fit, &file.scale));
    text.push('\n');
    text.push_str(&report::render_pairings(&fit.names, &scored));
    if args.update_anchors {
        let path = args.anchors_file.as_ref().expect("required by clap");
        let provenance = crate::anchors::FitProvenance {
            date: crate::unix_time::UtcDateTime::now().date('-'),
            games: scored.iter().filter(|g| !g.fault).count() as u64,
            tournament: args.tournament_command.clone(),
            command: command_line(),
            results: args
                .from_results
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
            machine: args.machine.clone(),
        };
        let new = anchor_fit::updated(&file, &fit, provenance);
        let toml = new.to_toml();
        // Checked before it replaces the old file: what we write must load.
        crate::anchors::AnchorsFile::parse(&toml, &path.display().to_string())
            .context("the rewritten anchors file does not load back")?;
        crate::atomic_file::write_atomically(path, &toml)?;
        text.push_str(&format!("\nWrote {}\n", path.display()));
    }
    Ok(text)
}

/// This process's command line as a shell would take it (`ladder` for the binary's path).
fn command_line() -> String {
    std::iter::once("ladder".to_string())
        .chain(std::env::args().skip(1).map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=,:+@".contains(c))
            {
                a
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        }))
        .collect::<Vec<_>>()
        .join(" ")
}
