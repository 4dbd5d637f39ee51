//! The games between anchors and the fit that rates them: the `anchor-game` records an arena
//! results file holds beside the levels' own, the "neighbours" schedule of an anchor
//! tournament, and the pinning of a joint fit ([`super::report::joint_fit`]) to the anchors
//! file's declared scale: the games fix the anchors' ratings relative to each other; the pins
//! (anchors whose rating on the scale is known from a stated source, with an uncertainty) fix
//! only the common offset, weighted by inverse variance.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::report::{JointFit, Scored};
use super::roster::PlayerSpec;
use crate::anchors::{Anchor, AnchorsFile, FitProvenance, Fitted, Pin};

impl From<&Anchor> for PlayerSpec {
    /// The arena player an anchor is, carrying its rating.
    fn from(anchor: &Anchor) -> PlayerSpec {
        PlayerSpec {
            name: anchor.name.clone(),
            rating: anchor.fitted.rating,
            kind: anchor.kind.clone(),
        }
    }
}

/// The `record` tag of a game between two players that are not our levels.
pub const ANCHOR_GAME: &str = "anchor-game";

/// A game between two anchors (neither side one of our levels), one line in the arena's
/// results file beside the levels' own records, which `ladder calibrate` skips.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnchorGameRecord {
    /// Always [`ANCHOR_GAME`].
    pub record: String,
    pub schema: u32,
    pub game_id: String,
    pub white: String,
    pub black: String,
    /// `1-0`, `0-1` or `1/2-1/2`.
    pub result: String,
    /// Lichess status name (mate, draw, stalemate), or the arena's for malfunctions.
    pub status: String,
    /// "startpos" or a FEN.
    pub initial_fen: String,
    /// UCI moves from the initial position, the opening's included.
    pub moves: String,
    pub seed: u64,
    pub started_at_ms: i64,
    pub finished_at_ms: i64,
    /// Set when a side lost by malfunction; the fit leaves such games out.
    #[serde(default)]
    pub fault: Option<String>,
}

impl AnchorGameRecord {
    /// White's score, if the result string is one.
    pub fn white_score(&self) -> Option<f64> {
        match self.result.as_str() {
            "1-0" => Some(1.0),
            "0-1" => Some(0.0),
            "1/2-1/2" => Some(0.5),
            _ => None,
        }
    }
}

/// The games between anchors in `paths` (other lines skipped; each game id once), with a
/// warning per unreadable anchor line.
pub fn read_anchor_games(
    paths: &[PathBuf],
) -> std::io::Result<(Vec<AnchorGameRecord>, Vec<String>)> {
    #[derive(Deserialize)]
    struct Tag {
        #[serde(default)]
        record: Option<String>,
    }
    let mut games = Vec::new();
    let mut warnings = Vec::new();
    let mut seen = HashSet::new();
    for path in paths {
        let file = std::fs::File::open(path).map_err(|e| {
            std::io::Error::new(e.kind(), format!("cannot open {}: {e}", path.display()))
        })?;
        for (i, line) in BufReader::new(file).lines().enumerate() {
            let line = line?;
            let text = line.trim();
            if text.is_empty() {
                continue;
            }
            match serde_json::from_str::<Tag>(text) {
                Ok(Tag { record: Some(tag) }) if tag == ANCHOR_GAME => {}
                _ => continue,
            }
            match serde_json::from_str::<AnchorGameRecord>(text) {
                Ok(g) => {
                    if seen.insert(g.game_id.clone()) {
                        games.push(g);
                    }
                }
                Err(e) => warnings.push(format!("{}:{}: {e}", path.display(), i + 1)),
            }
        }
    }
    Ok((games, warnings))
}

// ---- The tournament schedule. ----

/// Pairings where every player meets its `k` nearest neighbours on each side of `order` (player
/// indices from weakest to strongest), as (lower index, higher index).
pub fn neighbour_pairings(order: &[usize], k: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (pos, &a) in order.iter().enumerate() {
        for &b in order.iter().skip(pos + 1).take(k) {
            out.push((a.min(b), a.max(b)));
        }
    }
    out
}

/// Players ordered weakest first: by rating where every player has one, else as given.
pub fn scale_order(players: &[PlayerSpec]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..players.len()).collect();
    if players.iter().all(|p| p.rating.is_some()) {
        order.sort_by(|&a, &b| {
            players[a]
                .rating
                .unwrap_or(0.0)
                .total_cmp(&players[b].rating.unwrap_or(0.0))
        });
    }
    order
}

// ---- Pinning a joint fit to the scale. ----

/// The anchors' ratings on the declared scale.
#[derive(Clone, Debug, PartialEq)]
pub struct PinnedFit {
    pub names: Vec<String>,
    pub ratings: Vec<f64>,
    /// From the games, relative to the pins' weighted mean.
    pub se: Vec<f64>,
    /// The offset's own uncertainty, 1/sqrt(sum of the pins' inverse variances).
    pub scale_sd: f64,
    pub games: Vec<u64>,
    pub points: Vec<f64>,
    /// Per pin: (anchor, declared, fitted): how far each pin sits from the combined offset.
    pub pin_residuals: Vec<(String, f64, f64)>,
}

/// Puts a joint fit on the scale: a single shift chosen so the pinned anchors sit, weighted by
/// inverse variance, at their declared ratings. Pins naming players absent from the fit are
/// ignored; `None` when none is present.
pub fn pin(fit: &JointFit, names: &[String], pins: &[Pin]) -> Option<PinnedFit> {
    let index: HashMap<&str, usize> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let used: Vec<(usize, &Pin)> = pins
        .iter()
        .filter_map(|p| Some((*index.get(p.anchor.as_str())?, p)))
        .collect();
    if used.is_empty() {
        return None;
    }
    let weights: Vec<f64> = used.iter().map(|(_, p)| 1.0 / (p.sd * p.sd)).collect();
    let total: f64 = weights.iter().sum();
    let shift = used
        .iter()
        .zip(&weights)
        .map(|((i, p), w)| w * (p.rating - fit.ratings[*i]))
        .sum::<f64>()
        / total;
    let n = names.len();
    let c = &fit.covariance;
    let se = (0..n)
        .map(|i| {
            // Var(r_i - sum_k w_k r_k / W) from the covariance of the relative ratings.
            let mut var = c[i][i];
            for ((k, _), wk) in used.iter().zip(&weights) {
                var -= 2.0 * wk / total * c[i][*k];
                for ((l, _), wl) in used.iter().zip(&weights) {
                    var += wk * wl / (total * total) * c[*k][*l];
                }
            }
            var.max(0.0).sqrt()
        })
        .collect();
    Some(PinnedFit {
        names: names.to_vec(),
        ratings: fit.ratings.iter().map(|r| r + shift).collect(),
        se,
        scale_sd: total.sqrt().recip(),
        games: fit.games.clone(),
        points: fit.points.clone(),
        pin_residuals: used
            .iter()
            .map(|(i, p)| (p.anchor.clone(), p.rating, fit.ratings[*i] + shift))
            .collect(),
    })
}

/// Fits the anchor games jointly and pins them with `file`'s pins. Players are the anchors of
/// the file that played, in the file's order, then any other names met in the games.
pub fn fit_games(
    file: &AnchorsFile,
    games: &[AnchorGameRecord],
) -> Result<(PinnedFit, Vec<Scored>), String> {
    let mut names: Vec<String> = file
        .anchors
        .iter()
        .map(|a| a.name.clone())
        .filter(|n| games.iter().any(|g| &g.white == n || &g.black == n))
        .collect();
    for g in games {
        for n in [&g.white, &g.black] {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    let index = |n: &str| {
        names
            .iter()
            .position(|m| m == n)
            .expect("every name is listed")
    };
    let scored: Vec<Scored> = games
        .iter()
        .filter_map(|g| {
            Some(Scored {
                white: index(&g.white),
                black: index(&g.black),
                white_score: g.white_score()?,
                fault: g.fault.is_some(),
            })
        })
        .collect();
    if scored.is_empty() {
        return Err("no games between anchors in the given results files".to_string());
    }
    let fit = super::report::joint_fit(names.len(), &scored)
        .ok_or("the anchors' games do not connect every anchor to the others")?;
    let pinned = pin(&fit, &names, &file.pins).ok_or_else(|| {
        format!(
            "none of the pinned anchors ({}) played",
            file.pins
                .iter()
                .map(|p| p.anchor.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    })?;
    Ok((pinned, scored))
}

/// `file` with the fitted ratings, SEs and game counts written into its anchors (anchors that
/// did not play keep what they had), and `provenance`.
pub fn updated(file: &AnchorsFile, fit: &PinnedFit, provenance: FitProvenance) -> AnchorsFile {
    let mut out = file.clone();
    for a in &mut out.anchors {
        if let Some(i) = fit.names.iter().position(|n| *n == a.name) {
            a.fitted = Fitted {
                rating: Some(fit.ratings[i]),
                se: Some(fit.se[i]),
                games: Some(fit.games[i]),
            };
        }
    }
    out.scale_sd = Some(fit.scale_sd.round());
    out.fit = Some(provenance);
    out
}

/// The fit as a Markdown table, weakest first.
pub fn render_fit(fit: &PinnedFit, scale: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## Anchors on the {scale} scale (joint fit of {} games, pinned)\n",
        fit.games.iter().sum::<u64>() / 2
    );
    let _ = writeln!(
        out,
        "| anchor | rating | se (games) | games | score |\n|---|---:|---:|---:|---:|"
    );
    let mut order: Vec<usize> = (0..fit.names.len()).collect();
    order.sort_by(|&a, &b| fit.ratings[a].total_cmp(&fit.ratings[b]));
    for i in order {
        let _ = writeln!(
            out,
            "| {} | {:.0} | {:.0} | {} | {:.1}% |",
            fit.names[i],
            fit.ratings[i],
            fit.se[i],
            fit.games[i],
            100.0 * fit.points[i] / fit.games[i].max(1) as f64
        );
    }
    let _ = writeln!(
        out,
        "\nScale offset uncertainty (from the pins, shared by every anchor): ±{:.0} (1 sd).",
        fit.scale_sd
    );
    for (anchor, declared, fitted) in &fit.pin_residuals {
        let _ = writeln!(
            out,
            "- pin {anchor}: declared {declared:.0}, fitted {fitted:.0} ({:+.0})",
            fitted - declared
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbours_meet_their_k_nearest_on_each_side() {
        let p = neighbour_pairings(&[3, 0, 1, 2], 2);
        assert_eq!(p, [(0, 3), (1, 3), (0, 1), (0, 2), (1, 2)]);
    }

    #[test]
    fn pinning_shifts_every_rating_by_one_offset() {
        // Relative ratings 0, 100, 300 with a diagonal covariance of 10² each (player 0 the
        // reference, so 0); one pin puts player 1 at 1500.
        let fit = JointFit {
            ratings: vec![0.0, 100.0, 300.0],
            covariance: vec![
                vec![0.0, 0.0, 0.0],
                vec![0.0, 100.0, 0.0],
                vec![0.0, 0.0, 100.0],
            ],
            games: vec![10, 20, 10],
            points: vec![5.0, 10.0, 5.0],
        };
        let names: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let pins = [Pin {
            anchor: "b".into(),
            rating: 1500.0,
            sd: 200.0,
            source: "test".into(),
        }];
        let p = pin(&fit, &names, &pins).unwrap();
        assert_eq!(p.ratings, [1400.0, 1500.0, 1700.0]);
        // The pinned anchor has no error relative to the pin; the others carry both variances.
        assert!(p.se[1].abs() < 1e-9);
        assert!((p.se[0] - 10.0).abs() < 1e-9);
        assert!((p.se[2] - 200f64.sqrt()).abs() < 1e-9);
        assert!((p.scale_sd - 200.0).abs() < 1e-9);
        // Two equal pins that disagree by 200 (b says shift 1400, c says 1600) meet in the
        // middle: each sits 100 from its declared rating.
        let two = [
            pins[0].clone(),
            Pin {
                anchor: "c".into(),
                rating: 1900.0,
                sd: 200.0,
                source: "test".into(),
            },
        ];
        let p = pin(&fit, &names, &two).unwrap();
        assert!((p.ratings[1] - 1600.0).abs() < 1e-9);
        assert!((p.ratings[2] - 1800.0).abs() < 1e-9);
        assert!((p.scale_sd - 200.0 / 2f64.sqrt()).abs() < 1e-9);
    }
}
