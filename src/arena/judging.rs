//! The judge behind a match: every finished game's moves judged as it arrives, by one judge
//! process (restarted after a failure), into each player's move quality.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::logging::Progress;

use super::{judge, likeness};

/// A finished game for the judge.
pub(super) struct JudgeJob {
    pub(super) game: crate::engine::Game,
    pub(super) first: usize,
    /// The mover's clock before each judged move (empty: no clock, or not recorded).
    pub(super) clocks: Vec<crate::engine::humane::ClockLeft>,
    pub(super) white: usize,
    pub(super) black: usize,
}

/// What the judge found, and a sentence on how (or why not) it judged.
pub(super) struct Judged {
    pub(super) quality: Vec<judge::Quality>,
    pub(super) likeness: Vec<likeness::Likeness>,
    /// Each player's moves against each opponent: `(player, opponent)`.
    pub(super) by_opponent: BTreeMap<(usize, usize), likeness::Likeness>,
    pub(super) describe: String,
}

/// Judges games as they arrive, one at a time, with one judge process (restarted after a
/// failure). A missing judge or `--judge-depth 0` only turns into a sentence in the report;
/// after Ctrl-C the games still queued are left unjudged.
pub(super) async fn judge_games(
    program: PathBuf,
    depth: u32,
    mut jobs: tokio::sync::mpsc::UnboundedReceiver<JudgeJob>,
    players: usize,
    stop: Arc<AtomicBool>,
    progress: Option<Arc<Progress>>,
) -> Judged {
    let mut quality = vec![judge::Quality::default(); players];
    let mut likeness = vec![likeness::Likeness::default(); players];
    let mut by_opponent: BTreeMap<(usize, usize), likeness::Likeness> = BTreeMap::new();
    let skip = if depth == 0 {
        Some("not judged (--judge-depth 0)".to_string())
    } else if !program.exists() {
        Some(format!(
            "not judged: {} is not installed (apt-get install stockfish)",
            program.display()
        ))
    } else {
        None
    };
    if let Some(describe) = skip {
        while jobs.recv().await.is_some() {}
        return Judged {
            quality,
            likeness,
            by_opponent,
            describe,
        };
    }
    let (mut judge, mut name) = (None, None);
    let (mut games, mut failed, mut skipped) = (0usize, Vec::new(), 0usize);
    while let Some(job) = jobs.recv().await {
        if stop.load(Ordering::Relaxed) {
            skipped += 1;
            continue;
        }
        if judge.is_none() {
            match judge::Judge::start_with_lines(&program, depth, likeness::JUDGE_LINES).await {
                Ok(j) => {
                    name = name.or(j.id_name.clone());
                    judge = Some(j);
                }
                Err(e) => {
                    failed.push(e);
                    continue;
                }
            }
        }
        let j = judge.as_mut().expect("started above");
        match j.judge_game_fully(&job.game, job.first, &job.clocks).await {
            Ok(judged) => {
                quality[job.white].merge(&judged.quality.0);
                quality[job.black].merge(&judged.quality.1);
                likeness[job.white].merge(&judged.likeness.0);
                likeness[job.black].merge(&judged.likeness.1);
                let pairs = [(job.white, job.black), (job.black, job.white)];
                for (pair, side) in pairs
                    .into_iter()
                    .zip([&judged.likeness.0, &judged.likeness.1])
                {
                    by_opponent.entry(pair).or_default().merge(side);
                }
                games += 1;
            }
            Err(e) => {
                failed.push(e);
                judge = None;
            }
        }
        if let Some(progress) = &progress {
            progress.inc();
            if !progress.is_bar() && (games + failed.len()).is_multiple_of(10) {
                tracing::info!("{} games judged", games + failed.len());
            }
        }
    }
    if let Some(j) = judge {
        j.quit().await;
    }
    let mut describe = format!(
        "{} games judged by {} at depth {depth}",
        games,
        name.unwrap_or_else(|| program.display().to_string())
    );
    if !failed.is_empty() {
        describe.push_str(&format!(
            "; {} not judged after a judge failure (first: {})",
            failed.len(),
            failed[0]
        ));
    }
    if skipped > 0 {
        describe.push_str(&format!("; {skipped} not judged (interrupted)"));
    }
    Judged {
        quality,
        likeness,
        by_opponent,
        describe,
    }
}
