//! Lichess's daily limit on games between bots (lila's `BotLimit`: 100 bot-vs-bot games per bot
//! account per day, charged when a game starts; over it, Lichess refuses the challenge). Each
//! account counts its bot games of the current UTC day — finished ones from the results log at
//! start-up (so the count survives restarts) and the ones it starts — and declines further bot
//! challenges with `later` once the limit is reached.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::lichess::GameId;
use crate::results::{GameRecord, Line, scan_results};

use super::status::utc_day;

/// lila's `BotLimit` maximum.
pub const BOT_GAMES_PER_DAY: usize = 100;

fn utc_day_of_ms(unix_ms: i64) -> u64 {
    u64::try_from(unix_ms).map_or(0, |ms| ms / 86_400_000)
}

/// One account's bot games of one UTC day, by game id (a game is counted once, however often
/// it is seen: results log, `gameStart` again after a reconnect).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BotGames {
    day: u64,
    games: HashSet<GameId>,
}

impl BotGames {
    /// Counts `game_id`, a bot game that started at `started`.
    pub fn count(&mut self, game_id: &GameId, started: SystemTime) {
        let day = utc_day(started);
        if day > self.day {
            self.day = day;
            self.games.clear();
        }
        if day == self.day {
            self.games.insert(game_id.clone());
        }
    }

    /// Bot games on the UTC day of `now`.
    pub fn today(&self, now: SystemTime) -> usize {
        if utc_day(now) == self.day {
            self.games.len()
        } else {
            0
        }
    }
}

/// What the results log says about today (UTC) for each account (lowercase username).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TodayFromResults {
    /// Games finished today, for the status line.
    pub games: HashMap<String, u32>,
    /// Bot games started today.
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
        // A game copied twice into the log counts once (the writer never does that, a person
        // merging files might).
        let mut seen = HashSet::new();
        let scanned = scan_results(path, |line| {
            if let Line::Record(record) = line
                && seen.insert(record.game_id.clone())
            {
                today.add(&record, day);
            }
        });
        if let Err(e) = scanned {
            tracing::warn!(
                "cannot count today's games from {}: {e}; the daily bot-game limit starts at 0",
                path.display()
            );
            return TodayFromResults::default();
        }
        today
    }

    fn add(&mut self, record: &GameRecord, day: u64) {
        let account = record.account.to_lowercase();
        if utc_day_of_ms(record.finished_at_ms) == day {
            *self.games.entry(account.clone()).or_default() += 1;
        }
        // Lichess charges a bot game when it starts.
        if record.opponent.bot && utc_day_of_ms(record.started_at_ms) == day {
            let started = UNIX_EPOCH + Duration::from_millis(record.started_at_ms.max(0) as u64);
            self.bot_games
                .entry(account)
                .or_default()
                .count(&GameId::new(record.game_id.as_str()), started);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Outcome, ResultsLog, sample_record};

    fn at(day: u64, hour: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(day * 86_400 + hour * 3600)
    }

    #[test]
    fn counts_each_game_once_per_utc_day() {
        let mut games = BotGames::default();
        let id = GameId::new;
        games.count(&id("a"), at(20_000, 1));
        games.count(&id("a"), at(20_000, 2));
        games.count(&id("b"), at(20_000, 23));
        assert_eq!(games.today(at(20_000, 23)), 2);
        assert_eq!(games.today(at(20_001, 0)), 0, "a new UTC day starts at 0");
        games.count(&id("c"), at(20_001, 0));
        assert_eq!(games.today(at(20_001, 1)), 1);
        // A late report of yesterday's game does not count today.
        games.count(&id("d"), at(20_000, 22));
        assert_eq!(games.today(at(20_001, 1)), 1);
    }

    #[test]
    fn today_is_read_from_the_results_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let now = SystemTime::now();
        let now_ms = now.duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
        let mut log = ResultsLog::open(&path).unwrap();
        let mut record = |id: &str, account: &str, bot: bool, started_at_ms: i64| {
            let mut r = sample_record(id, Outcome::Win);
            r.account = account.into();
            r.opponent.bot = bot;
            r.started_at_ms = started_at_ms;
            r.finished_at_ms = started_at_ms;
            log.append(&r).unwrap();
        };
        record("g1", "Ladder-L1", true, now_ms);
        record("g2", "ladder-l1", true, now_ms - 1);
        record("g3", "ladder-l1", false, now_ms);
        record("g4", "ladder-l1", true, now_ms - 2 * 86_400_000);
        record("g5", "ladder-l2", true, now_ms);
        let today = TodayFromResults::read(&path, now);
        assert_eq!(today.bot_games["ladder-l1"].today(now), 2);
        assert_eq!(today.bot_games["ladder-l2"].today(now), 1);
        assert_eq!(today.games["ladder-l1"], 3);
        let missing = TodayFromResults::read(&dir.path().join("none.jsonl"), now);
        assert!(missing.games.is_empty() && missing.bot_games.is_empty());
    }
}
