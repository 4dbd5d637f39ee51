//! The Markdown report of a calibration pass: per level the games, result split, performance
//! with its 95% interval, target, Lichess rating and the proposed change; then what was left out
//! and why, the prior, the fit and the gain.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::fetch::LichessRating;
use super::likeness::Likeness;
use super::pipeline::Calibration;
use super::select::LevelGames;
use super::update::LevelUpdate;
use crate::levels::level_key;

/// What the report says besides the calibration itself.
#[derive(Clone, Debug, Default)]
pub struct ReportContext {
    pub perf: String,
    pub versions: String,
    pub reading: Reading,
    /// Lichess's current rating by level key, with the account it is for.
    pub lichess: BTreeMap<String, (String, LichessRating)>,
    /// "dry run: nothing written" or what --apply wrote.
    pub outcome: String,
    /// The targets the levels were measured against and where they came from.
    pub targets: String,
    /// The plot beside the report, linked from it; `None` when no plot is written (a dry run
    /// that only prints the report).
    pub svg_name: Option<String>,
}

/// Where the games came from and what reading them passed over.
#[derive(Clone, Debug, Default)]
pub struct Reading {
    /// The results files read and, with --fetch, the Lichess export.
    pub inputs: Vec<String>,
    /// Lines skipped while reading (torn, malformed, unknown schema).
    pub warnings: Vec<String>,
    /// Game ids seen more than once across inputs (counted once).
    pub duplicates: usize,
    /// A line on what --fetch brought, when it ran.
    pub fetched: Option<String>,
}

/// The report as Markdown.
pub fn markdown(cal: &Calibration, ctx: &ReportContext) -> String {
    let mut out = String::new();
    summary(&mut out, cal, ctx);
    levels_table(&mut out, cal, ctx);
    apart_table(&mut out, cal);
    method(&mut out, cal);
    left_out(&mut out, cal, ctx);
    out
}

/// The title, the outcome, the inputs and how many games were used, left out and carried over.
fn summary(out: &mut String, cal: &Calibration, ctx: &ReportContext) {
    let p = &cal.proposal;
    let current = p.coefficients.version - 1;
    let versions = if p.changed {
        format!("v{current} → v{}", p.coefficients.version)
    } else {
        format!("v{current}, no change")
    };
    let _ = writeln!(
        out,
        "# Calibration report: {} ({}), coefficients {versions}\n",
        ctx.perf, ctx.versions,
    );
    let _ = writeln!(out, "{}\n", ctx.outcome);
    let _ = writeln!(out, "Targets: {}\n", ctx.targets);
    let _ = writeln!(out, "Inputs: {}", ctx.reading.inputs.join(", "));
    if let Some(f) = &ctx.reading.fetched {
        let _ = writeln!(out, "\nFetched: {f}");
    }
    let _ = writeln!(
        out,
        "\nGames used: {}; left out: {}; duplicate game ids ignored: {}; unreadable lines: {}.\n",
        cal.selection.used,
        cal.selection.excluded.total(),
        ctx.reading.duplicates,
        ctx.reading.warnings.len()
    );
    let _ = writeln!(
        out,
        "Opponents: the estimate is from games against {}{}.\n",
        cal.opponents.describe(),
        match cal.opponents.apart() {
            Some(apart) => format!(
                "; {} games against {apart} are estimated apart (a bot's rating among bots is \
                 another scale: on Lichess about 250 lower), never mixed in",
                cal.selection.used_apart
            ),
            None => String::new(),
        }
    );
    if cal.selection.carried_over > 0 {
        let _ = writeln!(
            out,
            "Of the games used, {} were played with an older coefficients version whose \
             parameters for their level are those of v{current} (same evaluation, nodes, noise, hash and \
             endgame scaling).\n",
            cal.selection.carried_over
        );
    }
    if let Some(svg) = &ctx.svg_name {
        let _ = writeln!(out, "![rating by level]({svg})\n");
    }
}

/// The table of the levels: their games, estimate, target, Lichess rating and proposed change.
fn levels_table(out: &mut String, cal: &Calibration, ctx: &ReportContext) {
    let _ = writeln!(out, "## Levels\n");
    let _ = writeln!(
        out,
        "| level | accounts | games | W/D/L | score | performance | ±95% | target | Lichess | offset | nodes | noise cp | status |"
    );
    let _ = writeln!(
        out,
        "|---:|---|---:|---|---:|---:|---:|---:|---:|---|---|---|---|"
    );
    for u in &cal.proposal.levels {
        level_row(out, cal, ctx, u);
    }
}

/// One level's row of the levels table.
fn level_row(out: &mut String, cal: &Calibration, ctx: &ReportContext, u: &LevelUpdate) {
    let key = level_key(u.level);
    let games = cal.selection.levels.get(&key);
    let accounts = games.map_or_else(String::new, |g| {
        g.accounts.iter().cloned().collect::<Vec<_>>().join(", ")
    });
    let (n, wdl, score, perf, ci) = match &u.estimate {
        Some(e) => (
            e.games.to_string(),
            format!("{}/{}/{}", e.wins, e.draws, e.losses),
            format!("{:.1}%", 100.0 * e.score),
            format!("{:.0}", e.rating),
            format!("{:.0}", e.ci95()),
        ),
        None => (
            games.map_or(0, |g| g.observations.len()).to_string(),
            "-".into(),
            "-".into(),
            "-".into(),
            "-".into(),
        ),
    };
    let target = u.target.map_or("-".to_string(), |t| format!("{t:.0}"));
    let lichess = ctx.lichess.get(&key).map_or("-".to_string(), |(_, r)| {
        format!(
            "{:.0}{}{}",
            r.rating,
            r.rd.map_or(String::new(), |rd| format!(" (RD {rd:.0})")),
            if r.provisional { "?" } else { "" }
        )
    });
    let _ = writeln!(
        out,
        "| {key} | {accounts} | {n} | {wdl} | {score} | {perf} | {ci} | {target} | {lichess} | {} | {} | {} | {} |",
        u.offset.arrow(|o| format!("{o:+.3}")),
        u.nodes.arrow(u64::to_string),
        u.noise.arrow(|n| format!("{n:.1}")),
        u.status.label()
    );
}

/// How the estimate was made (prior, weights, fit, gain), the proposed coefficients, and the
/// notes, errors and warnings of the pass.
fn method(out: &mut String, cal: &Calibration) {
    let p = &cal.proposal;
    let _ = writeln!(out, "\n## Method\n");
    let _ = writeln!(out, "- Prior: {}.", cal.prior);
    let _ = writeln!(
        out,
        "- Provisional opponents (flag, or RD ≥ 110) are down-weighted by the Glicko factor g(RD); {} such games.",
        total(&cal.selection.levels, |l| l.provisional)
    );
    let _ = writeln!(
        out,
        "- Far-off opponents (rated {:.0} or more from the level's estimate) count as {} of a game: \
         they tell little and rest on the Elo model's tails; {} such games used{}.",
        cal.far_off.gap,
        cal.far_off.share,
        total(&cal.selection.levels, |l| l.far_off),
        match cal.opponents.apart() {
            Some(apart) => format!(
                ", {} against {apart}",
                total(&cal.selection.apart, |l| l.far_off)
            ),
            None => String::new(),
        }
    );
    match &p.fit {
        Some(f) => {
            let _ = writeln!(
                out,
                "- Fit over {} levels, weights 1/SE²: rating ≈ {:.1} + {:.1} · x (x = level + offset).",
                f.points, f.intercept, f.slope
            );
        }
        None => {
            let _ = writeln!(out, "- No fit (fewer than two levels with enough games).");
        }
    }
    let _ = writeln!(
        out,
        "- Gain schedule: cycle {}, gain {:.3} (Robbins–Monro 1/k with a floor).",
        p.schedule.cycle, p.schedule.gain
    );
    let c = &p.coefficients;
    let _ = writeln!(
        out,
        "- Proposed: n0 = {:.4}, b = {:.4}, s0 = {:.3}, d = {:.4} (the new exponents, in the old \
         scale, ≈ {:.3} + {:.3} · level; each level's residual is its offset).",
        c.n0, c.b, c.s0, c.d, p.rescale.p, p.rescale.q
    );
    for note in &p.notes {
        let _ = writeln!(out, "- Note: {note}.");
    }
    for (level, e) in &cal.estimate_errors {
        let _ = writeln!(out, "- Level {}: no estimate ({e}).", level_key(*level));
    }
    for u in &p.levels {
        let sources = cal
            .selection
            .levels
            .get(&level_key(u.level))
            .map(|g| g.sources.len())
            .unwrap_or(0);
        if sources > 1 {
            let _ = writeln!(
                out,
                "- Warning: level {} mixes sources (lichess and arena ratings are different scales); use --source.",
                level_key(u.level)
            );
        }
    }
}

/// A count summed over the levels of a sample (provisional or far-off games).
fn total(sample: &BTreeMap<String, LevelGames>, count: impl Fn(&LevelGames) -> usize) -> usize {
    sample.values().map(count).sum()
}

/// The games left out, by reason, and the first unreadable lines.
fn left_out(out: &mut String, cal: &Calibration, ctx: &ReportContext) {
    let _ = writeln!(out, "\n## Games left out\n");
    let _ = writeln!(out, "| reason | games |\n|---|---:|");
    for (label, n) in cal.selection.excluded.rows() {
        let _ = writeln!(out, "| {label} | {n} |");
    }
    let _ = writeln!(
        out,
        "| duplicate game id (counted once) | {} |",
        ctx.reading.duplicates
    );
    let _ = writeln!(
        out,
        "| unreadable line (torn, not UTF-8, malformed, out of range, newer schema) | {} |",
        ctx.reading.warnings.len()
    );
    if !ctx.reading.warnings.is_empty() {
        let _ = writeln!(out, "\nUnreadable lines:\n");
        for w in ctx.reading.warnings.iter().take(20) {
            let _ = writeln!(out, "- {w}");
        }
        if ctx.reading.warnings.len() > 20 {
            let _ = writeln!(out, "- … and {} more", ctx.reading.warnings.len() - 20);
        }
    }
}

/// The table of the games kept apart (against bots when the estimate is from people): each
/// level's rating among them beside its rating in the estimate, never mixed into it.
fn apart_table(out: &mut String, cal: &Calibration) {
    let Some(apart) = cal.opponents.apart() else {
        return;
    };
    let _ = writeln!(out, "\n## Against {apart} (estimated apart)\n");
    if cal.apart.is_empty() {
        let _ = writeln!(out, "No games against {apart}.");
        return;
    }
    let _ = writeln!(
        out,
        "| level | games | W/D/L | score | rating vs {apart} | ±95% | far off | rating vs {} | difference |",
        cal.opponents.describe()
    );
    let _ = writeln!(out, "|---:|---:|---|---:|---:|---:|---:|---:|---:|");
    let main: BTreeMap<String, f64> = cal
        .estimates()
        .map(|(level, e)| (level_key(level), e.rating))
        .collect();
    let mut rows: Vec<_> = cal.apart.iter().collect();
    rows.sort_by(|a, b| a.1.level.total_cmp(&b.1.level));
    for (key, a) in rows {
        let games = cal.selection.apart.get(key);
        let far = games.map_or(0, |g| g.far_off);
        let n = games.map_or(0, |g| g.observations.len());
        let main_rating = main.get(key);
        let (wdl, score, rating, ci, diff) = match &a.estimate {
            Ok(e) => (
                format!("{}/{}/{}", e.wins, e.draws, e.losses),
                format!("{:.1}%", 100.0 * e.score),
                format!("{:.0}", e.rating),
                format!("{:.0}", e.ci95()),
                main_rating.map_or("-".to_string(), |m| format!("{:+.0}", e.rating - m)),
            ),
            Err(why) => (
                "-".into(),
                "-".into(),
                format!("- ({why})"),
                "-".into(),
                "-".into(),
            ),
        };
        let _ = writeln!(
            out,
            "| {key} | {n} | {wdl} | {score} | {rating} | {ci} | {far} | {} | {diff} |",
            main_rating.map_or("-".to_string(), |m| format!("{m:.0}")),
        );
    }
}

/// The human-likeness section: per band of people, the level that stands for it, how often it
/// would have played their move, and their average centipawn loss when it was measured.
pub fn likeness_section(l: &Likeness, svg_name: Option<&str>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\n## Human-likeness\n");
    let _ = writeln!(
        out,
        "Of {} games against rated people, the {} most recent were replayed; at each of their \
         moves after the opening plies, where more than one move was legal, the level whose \
         target fits their rating band was asked for its move (current coefficients, fixed \
         seed). Left out: {} games in a band no level's target fits, {} whose moves do not \
         replay. Centipawn loss of the people's moves: {}.\n",
        l.eligible, l.replayed, l.no_level, l.unreadable, l.judge_note
    );
    if l.bands.is_empty() {
        let _ = writeln!(out, "No move of a person to compare.");
        return out;
    }
    if let Some(svg) = svg_name {
        let _ = writeln!(out, "![top-1 match by band]({svg})\n");
    }
    let _ = writeln!(
        out,
        "| band | level (target) | games | moves compared | top-1 match | 95% interval | people's ACPL | blunders |"
    );
    let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|");
    for b in &l.bands {
        let (acpl, blunders) = match &b.quality {
            Some(q) => (
                format!("{:.0}", q.acpl()),
                format!("{:.1}%", 100.0 * q.rate(q.blunders)),
            ),
            None => ("-".to_string(), "-".to_string()),
        };
        let _ = writeln!(
            out,
            "| {:.0}–{:.0} | {} ({:.0}) | {} | {} | {:.1}% | {:.1}–{:.1}% | {acpl} | {blunders} |",
            b.low,
            b.high,
            level_key(b.level),
            b.target,
            b.games,
            b.positions,
            100.0 * b.top1(),
            100.0 * b.interval95().0,
            100.0 * b.interval95().1,
        );
    }
    let _ = writeln!(
        out,
        "\nThe interval treats moves as independent (moves of one game are alike: read it as a \
         lower bound). For scale: Maia matches 46–53% of human moves at its rating, a \
         depth-limited Stockfish about 38%."
    );
    out
}
