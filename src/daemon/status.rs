//! The daemon's periodic one-line status (games running and queued, searches waiting, games
//! today per account, the accounts that cannot play and when they are checked again) and the
//! daily tally behind it. Logged every `daemon.status_interval_s`.

use std::collections::BTreeMap;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::logging::show_wait;

/// One account's part of the status line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountStatus {
    pub account: String,
    pub games_running: usize,
    /// People's challenges waiting for a free game slot (the waiting list; an accepted
    /// challenge whose game is about to start is not counted).
    pub queued: usize,
    /// Games finished since midnight UTC (see [`DailyTally`]).
    pub games_today: u32,
    /// Why the account cannot play now (token rejected, account closed, Lichess unreachable).
    pub problem: Option<AccountProblem>,
    /// The account has made its first connection attempt, whatever came of it (readiness).
    pub checked: bool,
}

/// An account that cannot play: the reason in a few words, and when it is checked again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountProblem {
    pub reason: String,
    pub retry_at: Instant,
}

/// What the daemon knows at a status tick.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Status {
    pub accounts: Vec<AccountStatus>,
    /// Searches waiting for a thread of the search pool.
    pub search_queue: usize,
    /// True once SIGTERM arrived: running games finish, no new ones start.
    pub draining: bool,
}

/// The one-line status at `now`, e.g.
/// `status: 3 games running, 1 queued, 0 searches waiting; today: ladder-l1 12 (1 playing), ladder-l2 7; bad: ladder-l3 (token rejected, retry in 4m)`.
pub fn status_line(status: &Status, now: Instant) -> String {
    use std::fmt::Write;
    let running: usize = status.accounts.iter().map(|a| a.games_running).sum();
    let queued: usize = status.accounts.iter().map(|a| a.queued).sum();
    let mut line = format!(
        "status: {running} game{} running, {queued} queued, {} search{} waiting",
        plural(running),
        status.search_queue,
        if status.search_queue == 1 { "" } else { "es" },
    );
    if status.draining {
        line.push_str(", draining (no new games)");
    }
    if status.accounts.is_empty() {
        line.push_str("; no accounts");
        return line;
    }
    line.push_str("; today:");
    for (i, account) in status.accounts.iter().enumerate() {
        let _ = write!(
            line,
            "{} {} {}",
            if i == 0 { "" } else { "," },
            account.account,
            account.games_today
        );
        match (account.games_running, account.queued) {
            (0, 0) => {}
            (p, 0) => {
                let _ = write!(line, " ({p} playing)");
            }
            (p, q) => {
                let _ = write!(line, " ({p} playing, {q} queued)");
            }
        }
    }
    let bad: Vec<String> = status
        .accounts
        .iter()
        .filter_map(|a| {
            let problem = a.problem.as_ref()?;
            let wait = show_wait(problem.retry_at.saturating_duration_since(now));
            Some(format!(
                "{} ({}, retry in {wait})",
                a.account, problem.reason
            ))
        })
        .collect();
    if !bad.is_empty() {
        let _ = write!(line, "; bad: {}", bad.join(", "));
    }
    line
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Finished games per account for the current UTC day; the count restarts at midnight UTC.
#[derive(Clone, Debug, Default)]
pub struct DailyTally {
    day: u64,
    counts: BTreeMap<String, u32>,
}

impl DailyTally {
    pub fn new() -> DailyTally {
        DailyTally::default()
    }

    /// Counts one finished game of `account` at `now`.
    pub fn record(&mut self, account: &str, now: SystemTime) {
        self.roll(now);
        *self.counts.entry(account.to_string()).or_default() += 1;
    }

    /// Starts `account`'s count of today at `games` (read from the results log at start-up).
    pub fn seed(&mut self, account: &str, games: u32, now: SystemTime) {
        self.roll(now);
        *self.counts.entry(account.to_string()).or_default() += games;
    }

    /// Games `account` finished today (UTC) as of `now`.
    pub fn today(&mut self, account: &str, now: SystemTime) -> u32 {
        self.roll(now);
        self.counts.get(account).copied().unwrap_or(0)
    }

    fn roll(&mut self, now: SystemTime) {
        let day = utc_day(now);
        if day != self.day {
            self.day = day;
            self.counts.clear();
        }
    }
}

/// The UTC day (days since the Unix epoch) of a time.
pub fn utc_day(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn status_line_sums_and_lists_accounts() {
        let status = Status {
            accounts: vec![
                AccountStatus {
                    account: "ladder-l1".into(),
                    games_running: 2,
                    queued: 1,
                    games_today: 12,
                    problem: None,
                    checked: true,
                },
                AccountStatus {
                    account: "ladder-l2".into(),
                    games_running: 1,
                    queued: 0,
                    games_today: 7,
                    problem: None,
                    checked: true,
                },
                AccountStatus {
                    account: "ladder-l3".into(),
                    games_running: 0,
                    queued: 0,
                    games_today: 0,
                    problem: None,
                    checked: true,
                },
            ],
            search_queue: 1,
            draining: false,
        };
        let now = Instant::now();
        assert_eq!(
            status_line(&status, now),
            "status: 3 games running, 1 queued, 1 search waiting; today: \
             ladder-l1 12 (2 playing, 1 queued), ladder-l2 7 (1 playing), ladder-l3 0"
        );
        let idle = Status {
            draining: true,
            ..Status::default()
        };
        assert_eq!(
            status_line(&idle, now),
            "status: 0 games running, 0 queued, 0 searches waiting, draining (no new games); \
             no accounts"
        );
        assert!(!status_line(&status, now).contains('\n'));
        let mut troubled = status.clone();
        troubled.accounts[2].problem = Some(AccountProblem {
            reason: "token rejected".into(),
            retry_at: now + Duration::from_secs(239),
        });
        assert!(
            status_line(&troubled, now).ends_with("; bad: ladder-l3 (token rejected, retry in 4m)"),
            "{}",
            status_line(&troubled, now)
        );
    }

    #[test]
    fn daily_tally_restarts_at_utc_midnight() {
        let day = |d: u64, h: u64| UNIX_EPOCH + Duration::from_secs(d * 86_400 + h * 3600);
        let mut tally = DailyTally::new();
        tally.record("a", day(20_000, 1));
        tally.record("a", day(20_000, 23));
        tally.record("b", day(20_000, 23));
        assert_eq!(tally.today("a", day(20_000, 23)), 2);
        assert_eq!(tally.today("b", day(20_000, 23)), 1);
        assert_eq!(tally.today("c", day(20_000, 23)), 0);
        assert_eq!(tally.today("a", day(20_001, 0)), 0);
        tally.record("b", day(20_001, 2));
        assert_eq!(tally.today("b", day(20_001, 3)), 1);
    }
}
