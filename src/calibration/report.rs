//! The Markdown report of a calibration pass: per level the games, result split, performance
//! with its 95% interval, target, Lichess rating and the proposed change; then what was left out
//! and why, the prior, the fit and the gain.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::fetch::LichessRating;
use super::pipeline::Calibration;
use crate::levels::level_key;

/// What the report says besides the calibration itself.
#[derive(Clone, Debug, Default)]
pub struct ReportContext {
    pub perf: String,
    pub versions: String,
    pub inputs: Vec<String>,
    /// Lines skipped while reading (torn, malformed, unknown schema).
    pub read_warnings: Vec<String>,
    /// Game ids seen more than once across inputs (counted once).
    pub duplicates: usize,
    /// A line on what --fetch brought, when it ran.
    pub fetched: Option<String>,
    /// Lichess's current rating by level key, with the account it is for.
    pub lichess: BTreeMap<String, (String, LichessRating)>,
    /// "dry run: nothing written" or what --apply wrote.
    pub outcome: String,
    pub svg_name: String,
}

/// The report as Markdown.
pub fn markdown(cal: &Calibration, ctx: &ReportContext) -> String {
    let p = &cal.proposal;
    let mut out = String::new();
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
    let _ = writeln!(out, "Inputs: {}", ctx.inputs.join(", "));
    if let Some(f) = &ctx.fetched {
        let _ = writeln!(out, "\nFetched: {f}");
    }
    let _ = writeln!(
        out,
        "\nGames used: {}; left out: {}; duplicate game ids ignored: {}; unreadable lines: {}.\n",
        cal.selection.used,
        cal.selection.excluded.total(),
        ctx.duplicates,
        ctx.read_warnings.len()
    );
    if cal.selection.carried_over > 0 {
        let _ = writeln!(
            out,
            "Of the games used, {} were played with an older coefficients version whose \
             parameters for their level are those of v{current} (same nodes, noise, hash and \
             endgame scaling).\n",
            cal.selection.carried_over
        );
    }
    let _ = writeln!(out, "![rating by level]({})\n", ctx.svg_name);
    let _ = writeln!(out, "## Levels\n");
    let _ = writeln!(
        out,
        "| level | accounts | games | W/D/L | score | performance | ±95% | target | Lichess | offset | nodes | noise cp | status |"
    );
    let _ = writeln!(
        out,
        "|---:|---|---:|---|---:|---:|---:|---:|---:|---|---|---|---|"
    );
    for u in &p.levels {
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
            "| {key} | {accounts} | {n} | {wdl} | {score} | {perf} | {ci} | {target} | {lichess} | {:+.3} → {:+.3} | {} → {} | {:.1} → {:.1} | {} |",
            u.offset_old,
            u.offset_new,
            u.nodes_old,
            u.nodes_new,
            u.noise_old,
            u.noise_new,
            u.status.label()
        );
    }
    let _ = writeln!(out, "\n## Method\n");
    let _ = writeln!(out, "- Prior: {}.", cal.prior);
    let _ = writeln!(
        out,
        "- Provisional opponents (flag, or RD ≥ 110) are down-weighted by the Glicko factor g(RD); {} such games.",
        cal.selection
            .levels
            .values()
            .map(|l| l.provisional)
            .sum::<usize>()
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
        p.cycle, p.gain
    );
    let c = &p.coefficients;
    let _ = writeln!(
        out,
        "- Proposed: n0 = {:.4}, b = {:.4}, s0 = {:.3}, d = {:.4} (the new exponents, in the old \
         scale, ≈ {:.3} + {:.3} · level; each level's residual is its offset).",
        c.n0, c.b, c.s0, c.d, p.p, p.q
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
    let _ = writeln!(out, "\n## Games left out\n");
    let _ = writeln!(out, "| reason | games |\n|---|---:|");
    for (label, n) in cal.selection.excluded.rows() {
        let _ = writeln!(out, "| {label} | {n} |");
    }
    let _ = writeln!(
        out,
        "| duplicate game id (counted once) | {} |",
        ctx.duplicates
    );
    let _ = writeln!(
        out,
        "| unreadable line (torn, not UTF-8, malformed, out of range, newer schema) | {} |",
        ctx.read_warnings.len()
    );
    if !ctx.read_warnings.is_empty() {
        let _ = writeln!(out, "\nUnreadable lines:\n");
        for w in ctx.read_warnings.iter().take(20) {
            let _ = writeln!(out, "- {w}");
        }
        if ctx.read_warnings.len() > 20 {
            let _ = writeln!(out, "- … and {} more", ctx.read_warnings.len() - 20);
        }
    }
    out
}
