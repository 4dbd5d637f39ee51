//! This run's games, as the results log has them: the records of games that finished since the
//! daemon started, tallied per account (its level, games, score). `ladder run` shows it in the
//! sandbox's progress line and in its exit summary; the count is of records written, so it is
//! exactly what the results file gained. The score counts the games calibration counts: with a
//! result and no fault (a game aborted, or resigned when the shutdown grace ran out, is not
//! scored).

use std::collections::HashSet;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::results::{GameRecord, Line, scan_results};

/// Reads the games recorded since a moment (`finished_at_ms` is the daemon's own clock).
#[derive(Clone, Debug)]
pub struct Scoreboard {
    results: PathBuf,
    since_ms: i64,
}

/// One account's games of this run.
#[derive(Clone, Debug, PartialEq)]
pub struct AccountScore {
    pub account: String,
    pub level: f64,
    pub games: usize,
    /// Wins plus half the draws, of the scored games.
    pub points: f64,
    /// Games with a result and no fault: what `points` is out of.
    pub scored: usize,
}

/// The games of this run, per account, weakest level first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tally {
    pub games: usize,
    pub accounts: Vec<AccountScore>,
}

impl Scoreboard {
    pub fn new(results: &Path, since: SystemTime) -> Scoreboard {
        let since_ms = since
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        Scoreboard {
            results: results.to_path_buf(),
            since_ms,
        }
    }

    /// The tally of the games recorded so far (none while the file does not exist).
    pub fn read(&self) -> io::Result<Tally> {
        if !self.results.exists() {
            return Ok(Tally::default());
        }
        // Counted as read, not collected: the log holds months of games. The first record of
        // a game id counts, as `read_results` has it.
        let mut tally = Tally::default();
        let mut seen = HashSet::new();
        scan_results(&self.results, |line| {
            if let Line::Record(record) = line
                && seen.insert(record.game_id.clone())
                && record.finished_at_ms >= self.since_ms
            {
                tally.add(&record);
            }
        })?;
        tally.sort();
        Ok(tally)
    }
}

impl Tally {
    pub fn of<'a>(records: impl IntoIterator<Item = &'a GameRecord>) -> Tally {
        let mut tally = Tally::default();
        for record in records {
            tally.add(record);
        }
        tally.sort();
        tally
    }

    /// Counts one more game (the accounts' order is [`Tally::sort`]'s job).
    fn add(&mut self, record: &GameRecord) {
        self.games += 1;
        let index = match self
            .accounts
            .iter()
            .position(|a| a.account == record.header.account)
        {
            Some(i) => i,
            None => {
                self.accounts.push(AccountScore {
                    account: record.header.account.clone(),
                    level: record.header.level,
                    games: 0,
                    points: 0.0,
                    scored: 0,
                });
                self.accounts.len() - 1
            }
        };
        let account = &mut self.accounts[index];
        // A reload may change the level: the latest game's is the account's level now.
        account.level = record.header.level;
        account.games += 1;
        if let Some(score) = record.result.score().filter(|_| record.fault.is_none()) {
            account.points += score;
            account.scored += 1;
        }
    }

    /// Weakest level first.
    fn sort(&mut self) {
        self.accounts.sort_by(|a, b| {
            a.level
                .total_cmp(&b.level)
                .then_with(|| a.account.cmp(&b.account))
        });
    }
}

/// `level 1 (ladder-l1) 1½/2, level 4 (ladder-l4) 0/1 +1 not scored, level 7 (ladder-l7) 1 not
/// scored`, or `none`.
impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.accounts.is_empty() {
            return f.write_str("none");
        }
        for (i, a) in self.accounts.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "level {} ({}) ", a.level, a.account)?;
            let unscored = a.games - a.scored;
            match (a.scored, unscored) {
                (0, n) => write!(f, "{n} not scored")?,
                (scored, 0) => write!(f, "{}/{scored}", points(a.points))?,
                (scored, n) => write!(f, "{}/{scored} +{n} not scored", points(a.points))?,
            }
        }
        Ok(())
    }
}

/// A chess score: `0`, `½`, `2½`.
pub fn points(points: f64) -> String {
    let halves = (points * 2.0).round() as i64;
    match (halves / 2, halves % 2) {
        (0, 1) => "½".to_string(),
        (whole, 1) => format!("{whole}½"),
        (whole, _) => whole.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Outcome, sample_record};
    use crate::test_files::temp_file;

    fn record(account: &str, level: f64, result: Outcome) -> GameRecord {
        let mut r = sample_record(&format!("{account}{result:?}{level}"), result);
        r.header.account = account.to_string();
        r.header.level = level;
        r
    }

    #[test]
    fn tally_counts_every_game_and_scores_the_ones_calibration_counts() {
        let mut cut_short = record("ladder-l7", 7.0, Outcome::Loss);
        cut_short.game_id = crate::lichess::GameId::new("cutshort");
        cut_short.fault = Some("shutdown: resigned when the shutdown grace period ran out".into());
        let records = [
            record("ladder-l4", 4.0, Outcome::Loss),
            record("ladder-l1", 1.0, Outcome::Win),
            record("ladder-l1", 1.0, Outcome::Draw),
            record("ladder-l4", 4.0, Outcome::None),
            cut_short,
        ];
        let tally = Tally::of(&records);
        assert_eq!(tally.games, 5);
        assert_eq!(
            tally.to_string(),
            "level 1 (ladder-l1) 1½/2, level 4 (ladder-l4) 0/1 +1 not scored, \
             level 7 (ladder-l7) 1 not scored"
        );
        assert_eq!(Tally::default().to_string(), "none");
    }

    #[test]
    fn only_games_finished_since_the_start_count() {
        let (_dir, path) = temp_file("results.jsonl");
        let start = UNIX_EPOCH + std::time::Duration::from_millis(1_700_000_300_000);
        let board = Scoreboard::new(&path, start);
        assert_eq!(board.read().unwrap(), Tally::default(), "no file yet");
        let mut before = record("ladder-l1", 1.0, Outcome::Win);
        before.finished_at_ms = 1_700_000_299_999;
        let mut after = record("ladder-l1", 1.0, Outcome::Loss);
        after.finished_at_ms = 1_700_000_300_000;
        let lines: String = [&before, &after]
            .iter()
            .map(|r| serde_json::to_string(r).unwrap() + "\n")
            .collect();
        std::fs::write(&path, lines).unwrap();
        let tally = board.read().unwrap();
        assert_eq!(tally.games, 1);
        assert_eq!(tally.to_string(), "level 1 (ladder-l1) 0/1");
    }

    #[test]
    fn scores_read_like_a_crosstable() {
        assert_eq!(points(0.0), "0");
        assert_eq!(points(0.5), "½");
        assert_eq!(points(2.5), "2½");
        assert_eq!(points(3.0), "3");
    }
}
