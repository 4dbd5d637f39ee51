//! The report of games already played, rebuilt from arena results files (`ladder arena
//! --from-results`), with the last games of each level judged when asked.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, bail};

use crate::levels::{Coefficients, history_versions, level_key, plays_alike};
use crate::logging::Progress;
use crate::results::{GameRecord, Source};

use super::judging::{JudgeJob, Judged, judge_games};
use super::report;

/// What a report rebuilt from results files judges: the last `games_per_level` games of each
/// level in the files, by `program` at `depth`, every move after the arena's opening (from the
/// first when the record does not say where the opening ended). The levels' ratings the quality
/// is read beside come from `coefficients`.
pub struct RebuiltJudging {
    pub program: PathBuf,
    pub depth: u32,
    pub games_per_level: usize,
    pub coefficients: Coefficients,
    /// `Some(history directory)`: judge only the games a level played as `coefficients` has
    /// it — of its version, or of an older one (`coefficients-vN.toml` in that directory, as
    /// `ladder calibrate` keeps them) under which the level plays alike ([`plays_alike`]; a
    /// version without a file there counts as different). A calibration loop's results hold
    /// each level's games from before its last move too, and the likeness of a shipped ladder
    /// is that of the games it plays. `None`: every game.
    pub only_as_coefficients: Option<PathBuf>,
    /// `Some(elo)`: judge only games whose two sides' ratings (a level's from `coefficients`,
    /// an anchor's from its record) are within `elo` of each other. People's figures come from
    /// games between players of about one strength (Lichess pairs them so), and issue 33 asks
    /// for opponents near the level's strength: a level outplayed by an anchor 300 points
    /// above it spends its game in lost positions, where every further slip counts. A game
    /// with a side of unknown rating is left out. `None`: every opponent.
    pub near: Option<f64>,
    /// `Some(levels)`: judge only these levels' games and show only their rows (and the
    /// anchors'), as `--level` asks: a level's games are found going back from the last, so
    /// asking for one level judges its last games, not the file's. `None`: every level.
    pub levels: Option<Vec<f64>>,
}

impl RebuiltJudging {
    /// Whether the level is one this judging asks for.
    fn wants(&self, level: f64) -> bool {
        // Exactly, as calibration picks a level's records: both come from the same text.
        self.levels
            .as_ref()
            .is_none_or(|wanted| wanted.contains(&level))
    }
}

/// The older coefficients versions the games in `records` were played with, read from
/// `history_dir` (a version without a readable file is left out: its games are not judged).
fn older_versions(
    records: &[&GameRecord],
    now: u32,
    history_dir: &Path,
) -> BTreeMap<u32, Coefficients> {
    let wanted: BTreeSet<u32> = records
        .iter()
        .map(|r| r.header.coefficients_version)
        .filter(|&v| v != now)
        .collect();
    history_versions(history_dir, wanted, "not judged")
}

/// Which games of a level count for the judge: every one, or those played as the judged
/// coefficients play the level (their version, and the older `versions` where it plays alike).
enum Counted<'a> {
    Every,
    AsNow {
        now: &'a Coefficients,
        versions: BTreeMap<u32, Coefficients>,
    },
}

impl Counted<'_> {
    fn counts(&self, record: &GameRecord, level: f64) -> bool {
        match self {
            Counted::Every => true,
            Counted::AsNow { now, versions } => {
                let version = record.header.coefficients_version;
                version == now.version
                    || versions
                        .get(&version)
                        .is_some_and(|old| plays_alike(old, now, level))
            }
        }
    }
}

/// The report of games already played, read back from arena results files. A game between two
/// levels has a record for each side and counts once; players are named as in the records, an
/// opponent's rating (if any) makes it an anchor. With `judging`, the last games of each level
/// are judged (see [`RebuiltJudging`]) and the report gains its move-quality table.
pub fn report_from_results(
    paths: &[PathBuf],
    judging: Option<&RebuiltJudging>,
) -> anyhow::Result<String> {
    let read = crate::results::read_results(paths).context("reading results")?;
    for w in &read.warnings {
        tracing::warn!("skipped {w}");
    }
    let mut names: Vec<String> = Vec::new();
    let mut levels: Vec<Option<f64>> = Vec::new();
    let mut known: Vec<Option<f64>> = Vec::new();
    let mut index_of = |name: &str, level: Option<f64>, rating: Option<f64>| {
        let i = names.iter().position(|n| n == name).unwrap_or_else(|| {
            names.push(name.to_string());
            levels.push(None);
            known.push(None);
            names.len() - 1
        });
        levels[i] = levels[i].or(level);
        known[i] = known[i].or(rating);
        i
    };
    let mut seen = std::collections::HashSet::new();
    let mut scored = Vec::new();
    // The record each scored game was read from, for the judge.
    let mut played_records = Vec::new();
    for r in read
        .records
        .iter()
        .filter(|r| r.header.source == Source::Arena)
    {
        let Some(score) = r.result.score() else {
            continue;
        };
        let me = index_of(&r.header.account, Some(r.header.level), None);
        let them = index_of(&r.opponent.name, None, r.opponent.rating);
        // "<match>-<index>-<colour>": both sides of one game share the part before the colour.
        let game = r
            .game_id
            .as_str()
            .rsplit_once('-')
            .map_or(r.game_id.as_str(), |(g, _)| g);
        if !seen.insert(game.to_string()) {
            continue;
        }
        let (white, black, white_score) = if r.color == "white" {
            (me, them, score)
        } else {
            (them, me, 1.0 - score)
        };
        scored.push(report::Scored {
            white,
            black,
            white_score,
            fault: r.fault.is_some(),
        });
        played_records.push(r);
    }
    if scored.is_empty() {
        bail!("no arena games in the given results files");
    }
    // A level met only as an opponent still sits on the ladder.
    for (i, name) in names.iter().enumerate() {
        if levels[i].is_none() && known[i].is_none() {
            levels[i] = name.strip_prefix("level-").and_then(|l| l.parse().ok());
        }
    }
    // Records arrive in completion order, which concurrency makes arbitrary: put the players in
    // a fixed order (levels by level, then anchors by rating, then the rest by name) so the same
    // games always give the same report.
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.sort_by(|&a, &b| {
        let key = |i: usize| (levels[i].is_none(), levels[i].or(known[i]));
        let (ka, kb) = (key(a), key(b));
        ka.0.cmp(&kb.0)
            .then(
                ka.1.unwrap_or(f64::MAX)
                    .total_cmp(&kb.1.unwrap_or(f64::MAX)),
            )
            .then(names[a].cmp(&names[b]))
    });
    let mut new_index = vec![0; order.len()];
    for (new, &old) in order.iter().enumerate() {
        new_index[old] = new;
    }
    let names: Vec<String> = order.iter().map(|&i| names[i].clone()).collect();
    let levels: Vec<Option<f64>> = order.iter().map(|&i| levels[i]).collect();
    let known: Vec<Option<f64>> = order.iter().map(|&i| known[i]).collect();
    for s in &mut scored {
        s.white = new_index[s.white];
        s.black = new_index[s.black];
    }
    let mut text = format!(
        "# Arena report from {}\n\n{} games\n\n",
        paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        scored.len()
    );
    text.push_str(&report::render(&names, &levels, &known, &scored));
    text.push('\n');
    match judging {
        None => text.push_str("## Move quality\n\nnot judged: rebuilt from results files (--judge-games N judges the last N games of each level)\n"),
        Some(judging) => {
            let counted = match &judging.only_as_coefficients {
                None => Counted::Every,
                Some(history_dir) => Counted::AsNow {
                    now: &judging.coefficients,
                    versions: older_versions(
                        &played_records,
                        judging.coefficients.version,
                        history_dir,
                    ),
                },
            };
            let claimed: Vec<Option<f64>> = levels
                .iter()
                .zip(&known)
                .map(|(level, known)| {
                    level.map_or(*known, |l| judging.coefficients.rating_of(l))
                })
                .collect();
            // A level not asked for is judged as an anchor is: only as an opponent.
            let asked: Vec<Option<f64>> = levels
                .iter()
                .map(|l| l.filter(|&l| judging.wants(l)))
                .collect();
            let (jobs, unmarked) = judge_jobs(
                &scored,
                &played_records,
                &asked,
                judging.games_per_level,
                &counted,
                judging.near.map(|elo| (elo, claimed.as_slice())),
            );
            let mut judged = judge_rebuilt(judging, jobs, names.len())?;
            // ...and not shown: its moves judged were only those of games against an asked level.
            for (i, level) in levels.iter().enumerate() {
                if level.is_some() && asked[i].is_none() {
                    judged.quality[i] = Default::default();
                    judged.likeness[i] = Default::default();
                }
            }
            if let Some(wanted) = &judging.levels {
                let list: Vec<String> = wanted.iter().map(|&l| level_key(l)).collect();
                judged
                    .describe
                    .push_str(&format!("; levels {} only", list.join(", ")));
            }
            if let Counted::AsNow { now, .. } = &counted {
                judged.describe.push_str(&format!(
                    "; only games a level played as version {} plays it",
                    now.version
                ));
            }
            if let Some(elo) = judging.near {
                judged.describe.push_str(&format!(
                    "; only games between sides rated within {elo:.0} of each other"
                ));
            }
            if unmarked > 0 {
                judged.describe.push_str(&format!(
                    "; {unmarked} of them from their first ply (their records do not say where the opening ended)"
                ));
            }
            text.push_str(&report::render_quality(
                &names,
                &claimed,
                &judged.quality,
                &judged.describe,
            ));
            text.push('\n');
            text.push_str(&super::likeness::render_likeness(
                &names,
                &claimed,
                &judged.likeness,
                &judged.describe,
            ));
            text.push_str(&super::likeness::render_by_opponent(
                &names,
                &claimed,
                &judged.likeness,
                &judged.by_opponent,
            ));
        }
    }
    Ok(text)
}

/// The games to judge: going back from the last, each game that a level in it still needs
/// (fewer than `per_level` of its games chosen) and that every level in it played as `counted`
/// asks, and with `near` = (elo, ratings) whose sides' ratings are within elo of each other, in
/// the order they were played; and how many of them have records that do not mark the
/// opening's plies (judged from the first).
fn judge_jobs(
    scored: &[report::Scored],
    records: &[&GameRecord],
    levels: &[Option<f64>],
    per_level: usize,
    counted: &Counted,
    near: Option<(f64, &[Option<f64>])>,
) -> (Vec<JudgeJob>, usize) {
    let mut chosen = vec![0usize; levels.len()];
    let mut jobs = Vec::new();
    let mut unmarked = 0;
    for (s, record) in scored.iter().zip(records).rev() {
        let sides = [s.white, s.black];
        // Every level in the game must have played as asked (both sides of a game between
        // levels count in the report), and one of them still need games.
        let played_as_asked = sides
            .iter()
            .all(|&p| levels[p].is_none_or(|level| counted.counts(record, level)));
        let needed = sides
            .iter()
            .any(|&p| levels[p].is_some() && chosen[p] < per_level);
        let close = near.is_none_or(
            |(elo, ratings)| match (ratings[s.white], ratings[s.black]) {
                (Some(w), Some(b)) => (w - b).abs() <= elo,
                _ => false,
            },
        );
        if !(played_as_asked && needed && close) {
            continue;
        }
        let Some(game) = record.replay() else {
            tracing::warn!(game = %record.game_id, "not judged: its moves do not replay");
            continue;
        };
        for p in sides {
            chosen[p] += 1;
        }
        if record.opening_plies.is_none() {
            unmarked += 1;
        }
        jobs.push(JudgeJob {
            game,
            first: record.opening_plies.map_or(0, |plies| plies as usize),
            // The results records keep no clock per move.
            clocks: Vec::new(),
            white: s.white,
            black: s.black,
        });
    }
    jobs.reverse();
    (jobs, unmarked)
}

/// Judges `jobs` with one judge process, showing the progress.
fn judge_rebuilt(
    judging: &RebuiltJudging,
    jobs: Vec<JudgeJob>,
    players: usize,
) -> anyhow::Result<Judged> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let progress = Arc::new(Progress::new(jobs.len() as u64, "games judged"));
    let judged = runtime.block_on(async {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<JudgeJob>();
        for job in jobs {
            let _queued = tx.send(job);
        }
        drop(tx);
        judge_games(
            judging.program.clone(),
            judging.depth,
            rx,
            players,
            Arc::new(AtomicBool::new(false)),
            Some(Arc::clone(&progress)),
        )
        .await
    });
    progress.finish();
    Ok(judged)
}
