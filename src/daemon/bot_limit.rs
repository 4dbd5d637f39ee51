//! Lichess's limit on games between bots (lila's `BotLimit`: 100 bot-vs-bot games per bot
//! account in a window of a day, charged when a game starts; over it, Lichess refuses the
//! challenge, and an accept, with a 429 `bot.vsBot.day`). lila's window (`memo.RateLimit`)
//! is not the UTC day: it begins with the first game counted and lasts 24 h; the first game
//! after it begins the next. Each account counts its bot games in the window — those of the
//! results log at start-up (so the count survives restarts; a settled game is in the log like
//! any other) and the ones it starts or adopts — and declines further bot challenges with
//! `later` once the limit is reached, or once Lichess refused an accept for it (until the wait
//! Lichess gave is over).

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::lichess::GameId;
use crate::results::{GameRecord, Line, scan_results};

use super::status::utc_day;

/// lila's `BotLimit` maximum.
pub const BOT_GAMES_PER_DAY: usize = 100;
/// lila's window: a day from its first counted game.
pub const WINDOW: Duration = Duration::from_secs(86_400);
/// How far back the results log is read to find the window that runs now (windows chain only
/// through days of bot games; a week of them is far more than any window needs).
const LOOK_BACK: Duration = Duration::from_secs(7 * 86_400);

fn utc_day_of_ms(unix_ms: i64) -> u64 {
    u64::try_from(unix_ms).map_or(0, |ms| ms / 86_400_000)
}

/// The instant of a Unix time in ms (before 1970: 1970).
pub fn time_of_ms(unix_ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(unix_ms).unwrap_or(0))
}

/// One account's bot games in lila's current window, by game id (a game is counted once,
/// however often it is seen: results log, `gameStart` again after a reconnect).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BotGames {
    /// When the current window began (its first counted game).
    start: Option<SystemTime>,
    games: HashSet<GameId>,
    /// Lichess refused an accept for the limit: no bot game before this.
    refused_until: Option<SystemTime>,
}

impl BotGames {
    /// Counts `game_id`, a bot game that started at `started` (games must come in the order
    /// they started, as they do live; the results log is sorted first).
    pub fn count(&mut self, game_id: &GameId, started: SystemTime) {
        if self.games.contains(game_id) {
            return;
        }
        match self.start {
            Some(start) if started < start => {} // a game of an earlier window
            Some(start) if started < start + WINDOW => {
                self.games.insert(game_id.clone());
            }
            _ => {
                self.start = Some(started);
                self.games.clear();
                self.games.insert(game_id.clone());
            }
        }
    }

    /// Bot games counted in the window that runs at `now` (0 when none runs).
    pub fn in_window(&self, now: SystemTime) -> usize {
        match self.start {
            Some(start) if now < start + WINDOW => self.games.len(),
            _ => 0,
        }
    }

    /// When the window that runs at `now` ends (`None` when none runs).
    pub fn window_ends(&self, now: SystemTime) -> Option<SystemTime> {
        self.start.map(|s| s + WINDOW).filter(|&end| now < end)
    }

    /// Lichess refused an accept for the bot-game limit: bot challenges are declined until
    /// `until`.
    pub fn refused_until(&mut self, until: SystemTime) {
        self.refused_until = Some(self.refused_until.map_or(until, |t| t.max(until)));
    }

    /// Whether a refusal from Lichess still holds at `now`.
    pub fn is_refused(&self, now: SystemTime) -> bool {
        self.refused_until.is_some_and(|t| now < t)
    }
}

/// What the results log says for each account (lowercase username): today's games and the
/// bot games of lila's current window.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TodayFromResults {
    /// Games finished today (UTC), for the status line.
    pub games: HashMap<String, u32>,
    /// Bot games in the window that runs now.
    pub bot_games: HashMap<String, BotGames>,
}

impl TodayFromResults {
    /// Reads the results log at `path` (a missing file is an empty day), one line at a time.
    /// Unreadable lines are skipped here: the results reader names them where the log is
    /// opened for writing and read for calibration.
    pub fn read(path: &Path, now: SystemTime) -> TodayFromResults {
        let mut today = TodayFromResults::default();
        if !path.exists() {
            return today;
        }
        let day = utc_day(now);
        let since = now
            .checked_sub(LOOK_BACK)
            .unwrap_or(UNIX_EPOCH)
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        // A game copied twice into the log counts once (the writer never does that, a person
        // merging files might).
        let mut seen = HashSet::new();
        // Bot games by account, to count in the order they started.
        let mut bot_starts: HashMap<String, Vec<(i64, GameId)>> = HashMap::new();
        let scanned = scan_results(path, |line| {
            if let Line::Record(record) = line
                && seen.insert(record.game_id.clone())
            {
                today.add(&record, day);
                // Lichess charges a bot game when it starts.
                if record.opponent.bot && record.started_at_ms >= since {
                    bot_starts
                        .entry(record.header.account.to_lowercase())
                        .or_default()
                        .push((record.started_at_ms, record.game_id.clone()));
                }
            }
        });
        if let Err(e) = scanned {
            tracing::warn!(
                "cannot count today's games from {}: {e}; the bot-game limit starts at 0",
                path.display()
            );
            return TodayFromResults::default();
        }
        for (account, mut starts) in bot_starts {
            starts.sort();
            let games = today.bot_games.entry(account).or_default();
            for (started_ms, id) in starts {
                games.count(&GameId::new(id.as_str()), time_of_ms(started_ms));
            }
        }
        today
    }

    fn add(&mut self, record: &GameRecord, day: u64) {
        if utc_day_of_ms(record.finished_at_ms) == day {
            *self
                .games
                .entry(record.header.account.to_lowercase())
                .or_default() += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Outcome, ResultsLog, sample_record};
    use crate::test_files::temp_file;

    fn at(hour: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(20_000 * 86_400 + hour * 3600)
    }

    #[test]
    fn the_window_runs_a_day_from_its_first_game_not_the_utc_day() {
        let mut games = BotGames::default();
        let id = GameId::new;
        // First game at 22:00: the window runs to 22:00 the next day, across midnight.
        games.count(&id("a"), at(22));
        games.count(&id("a"), at(23));
        games.count(&id("b"), at(23));
        assert_eq!(games.in_window(at(23)), 2);
        assert_eq!(
            games.in_window(at(24 + 21)),
            2,
            "midnight UTC clears nothing"
        );
        assert_eq!(games.window_ends(at(23)), Some(at(24 + 22)));
        assert_eq!(games.in_window(at(24 + 22)), 0, "the window is over");
        // The next game begins the next window.
        games.count(&id("c"), at(24 + 23));
        assert_eq!(games.in_window(at(24 + 23)), 1);
        assert_eq!(games.window_ends(at(24 + 23)), Some(at(48 + 23)));
        // A late report of a game of the earlier window does not count in this one.
        games.count(&id("d"), at(24 + 20));
        assert_eq!(games.in_window(at(24 + 23)), 1);
    }

    #[test]
    fn a_refusal_holds_until_its_wait_is_over() {
        let mut games = BotGames::default();
        assert!(!games.is_refused(at(1)));
        games.refused_until(at(3));
        games.refused_until(at(2));
        assert!(games.is_refused(at(2)), "a shorter wait never shortens it");
        assert!(!games.is_refused(at(3)));
    }

    #[test]
    fn the_window_is_read_from_the_results_log() {
        let (dir, path) = temp_file("r.jsonl");
        let now = SystemTime::now();
        let now_ms = now.duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
        let hour = 3_600_000;
        let mut log = ResultsLog::open(&path).unwrap();
        let mut record = |id: &str, account: &str, bot: bool, started_at_ms: i64| {
            let mut r = sample_record(id, Outcome::Win);
            r.header.account = account.into();
            r.opponent.bot = bot;
            r.started_at_ms = started_at_ms;
            r.finished_at_ms = started_at_ms;
            log.append(&r).unwrap();
        };
        // Written in the order they finished, not started.
        record("g1", "Ladder-L1", true, now_ms);
        record("g2", "ladder-l1", true, now_ms - 20 * hour);
        record("g3", "ladder-l1", false, now_ms);
        // A window that began 30 h ago ended 6 h ago: g2 (20 h ago) belongs to it, and g1
        // begins the window that runs now.
        record("g0", "ladder-l1", true, now_ms - 30 * hour);
        record("g5", "ladder-l2", true, now_ms - 23 * hour);
        record("g6", "ladder-l2", true, now_ms - hour);
        let today = TodayFromResults::read(&path, now);
        assert_eq!(today.bot_games["ladder-l1"].in_window(now), 1);
        assert_eq!(today.bot_games["ladder-l2"].in_window(now), 2);
        let g2_today = utc_day(now - Duration::from_secs(20 * 3600)) == utc_day(now);
        assert_eq!(today.games["ladder-l1"], 2 + u32::from(g2_today));
        let missing = TodayFromResults::read(&dir.path().join("none.jsonl"), now);
        assert!(missing.games.is_empty() && missing.bot_games.is_empty());
    }
}
