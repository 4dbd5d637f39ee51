//! Logging: tracing to stderr in the style of where stderr goes, the span conventions that put
//! the account and game id on every line of a game, and the daemon's periodic status line.
//!
//! Three styles:
//! - **journal** (stderr is the journald stream systemd gave us, `JOURNAL_STREAM`): no
//!   timestamps (journald stamps every line) and no colours, and each line starts with a
//!   `<N>` syslog priority, which journald strips and stores, so `journalctl -p warning` works;
//! - **terminal**: timestamps and colours;
//! - **plain** (a pipe or a file): timestamps, no colours, since nothing else dates the lines.
//!
//! `LADDER_LOG_STYLE=journal|terminal|plain` overrides the detection; `RUST_LOG` the filter.

use std::collections::BTreeMap;
use std::fmt;
use std::io::IsTerminal;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tracing::{Event, Level, Span, Subscriber};
use tracing_subscriber::fmt::format::{FormatEvent, FormatFields, Writer};
use tracing_subscriber::fmt::{FmtContext, MakeWriter};
use tracing_subscriber::registry::LookupSpan;

/// Where the log lines go, and so how they are dressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogStyle {
    Journal,
    Terminal,
    Plain,
}

impl LogStyle {
    /// The style for this process's stderr.
    pub fn detect() -> LogStyle {
        if let Some(style) = std::env::var("LADDER_LOG_STYLE")
            .ok()
            .and_then(|s| s.parse().ok())
        {
            return style;
        }
        if stderr_is_journal() {
            LogStyle::Journal
        } else if std::io::stderr().is_terminal() {
            LogStyle::Terminal
        } else {
            LogStyle::Plain
        }
    }
}

impl std::str::FromStr for LogStyle {
    type Err = String;

    fn from_str(s: &str) -> Result<LogStyle, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "journal" => Ok(LogStyle::Journal),
            "terminal" => Ok(LogStyle::Terminal),
            "plain" => Ok(LogStyle::Plain),
            other => Err(format!(
                "unknown log style `{other}` (journal, terminal or plain)"
            )),
        }
    }
}

/// systemd sets `JOURNAL_STREAM=<dev>:<inode>` of the stream it connected to stdout/stderr.
/// The variable is inherited by children whose stderr may go elsewhere, so compare it with
/// what fd 2 really is (sd_journal_stream_fd(3) recommends exactly this).
fn stderr_is_journal() -> bool {
    let Ok(value) = std::env::var("JOURNAL_STREAM") else {
        return false;
    };
    let Some((dev, ino)) = parse_journal_stream(&value) else {
        return false;
    };
    stderr_dev_ino().is_some_and(|actual| actual == (dev, ino))
}

fn parse_journal_stream(value: &str) -> Option<(u64, u64)> {
    let (dev, ino) = value.trim().split_once(':')?;
    Some((dev.parse().ok()?, ino.parse().ok()?))
}

#[cfg(unix)]
fn stderr_dev_ino() -> Option<(u64, u64)> {
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;
    // A duplicate of fd 2 as a File, only to fstat it; dropping it closes the duplicate.
    let fd = std::io::stderr().as_fd().try_clone_to_owned().ok()?;
    let meta = std::fs::File::from(fd).metadata().ok()?;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn stderr_dev_ino() -> Option<(u64, u64)> {
    None
}

/// Installs the global tracing subscriber on stderr. `RUST_LOG` overrides `default_filter`.
pub fn init(default_filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    let subscriber = subscriber(LogStyle::detect(), filter, std::io::stderr);
    // A second init (tests calling into main's paths) keeps the first subscriber.
    if tracing::subscriber::set_global_default(subscriber).is_err() {
        tracing::debug!("a global subscriber was already installed");
    }
}

/// The subscriber for `style`, writing to `writer`: what `init` installs, and what tests
/// capture.
pub fn subscriber<W>(
    style: LogStyle,
    filter: tracing_subscriber::EnvFilter,
    writer: W,
) -> Box<dyn Subscriber + Send + Sync>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_target(false);
    match style {
        LogStyle::Terminal => Box::new(builder.with_ansi(true).finish()),
        LogStyle::Plain => Box::new(builder.with_ansi(false).finish()),
        LogStyle::Journal => {
            let format = tracing_subscriber::fmt::format()
                .with_target(false)
                .with_ansi(false)
                .without_time();
            Box::new(
                builder
                    .with_ansi(false)
                    .event_format(SyslogPriority(format))
                    .finish(),
            )
        }
    }
}

/// Prefixes each event with its syslog priority, `<3>` … `<7>`, as sd-daemon(3) describes;
/// journald (SyslogLevelPrefix=yes, the default) turns it into the entry's PRIORITY.
struct SyslogPriority<F>(F);

impl<S, N, F> FormatEvent<S, N> for SyslogPriority<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        write!(writer, "<{}>", syslog_priority(*event.metadata().level()))?;
        self.0.format_event(ctx, writer, event)
    }
}

/// tracing level -> syslog priority (err 3, warning 4, info 6, debug 7).
pub fn syslog_priority(level: Level) -> u8 {
    match level {
        Level::ERROR => 3,
        Level::WARN => 4,
        Level::INFO => 6,
        Level::DEBUG | Level::TRACE => 7,
    }
}

// Span conventions. The daemon enters `account_span` in each account actor and instruments
// each game actor with `game_span`; every event inside then carries
// `account{account=ladder-l3}:game{game=abcd1234}:` on its line, in every style, so
// `journalctl -u ladder | grep game=abcd1234` is the whole story of one game.

/// Field name of the account (the Lichess username) in spans.
pub const ACCOUNT_FIELD: &str = "account";
/// Field name of the Lichess game id in spans.
pub const GAME_FIELD: &str = "game";

/// The span of one account's actor: enter it (or `.instrument()` the task with it).
pub fn account_span(account: &str) -> Span {
    tracing::info_span!("account", account = %account)
}

/// The span of one game, a child of its account's span whatever span is current where the game
/// task is spawned.
pub fn game_span(account: &Span, game_id: &str) -> Span {
    tracing::info_span!(parent: account, "game", game = %game_id)
}

// The periodic status line.

/// How often the daemon logs its status line: often enough to see it is alive in
/// `journalctl -f`, rarely enough not to drown the games.
pub const STATUS_INTERVAL: Duration = Duration::from_secs(300);

/// One account's part of the status line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountStatus {
    pub account: String,
    pub games_running: usize,
    /// Accepted challenges waiting for a free game slot.
    pub queued: usize,
    /// Games finished since midnight UTC (see [`DailyTally`]).
    pub games_today: u32,
    /// Why the account cannot play now (token rejected, account closed, Lichess unreachable).
    pub problem: Option<AccountProblem>,
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

/// `4m`, `30s`, `1h 5m`: a wait as the status line shows it.
pub fn show_wait(wait: Duration) -> String {
    let s = wait.as_secs_f64().ceil() as u64;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s.div_ceil(60)),
        _ => format!("{}h {}m", s / 3600, (s % 3600) / 60),
    }
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
    use std::sync::{Arc, Mutex};

    /// A MakeWriter collecting everything into a shared buffer.
    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Capture {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'w> MakeWriter<'w> for Capture {
        type Writer = Capture;
        fn make_writer(&'w self) -> Capture {
            self.clone()
        }
    }

    fn log_a_game(style: LogStyle) -> String {
        let capture = Capture::default();
        let sub = subscriber(
            style,
            tracing_subscriber::EnvFilter::new("debug"),
            capture.clone(),
        );
        tracing::subscriber::with_default(sub, || {
            let account = account_span("ladder-l3");
            // The game span is made outside the account span: the parent is explicit.
            let game = game_span(&account, "abcd1234");
            game.in_scope(|| {
                tracing::info!(mv = "e2e4", "played");
                tracing::warn!("opponent gone");
            });
            account.in_scope(|| tracing::error!("event stream closed"));
        });
        let bytes = capture.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn journal_lines_carry_priority_and_no_timestamp() {
        let out = log_a_game(LogStyle::Journal);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{out}");
        assert!(lines[0].starts_with("<6>"), "{out}");
        assert!(lines[1].starts_with("<4>"), "{out}");
        assert!(lines[2].starts_with("<3>"), "{out}");
        for (line, level) in lines.iter().zip(["INFO", "WARN", "ERROR"]) {
            // The level right after the priority: no date (journald adds it), and no escape
            // codes (journalctl would show them raw).
            assert!(line[3..].trim_start().starts_with(level), "{line}");
            assert!(!line.contains('\u{1b}'), "ANSI in journal line: {line}");
        }
    }

    #[test]
    fn every_game_line_names_account_and_game() {
        for style in [LogStyle::Journal, LogStyle::Plain, LogStyle::Terminal] {
            let out = log_a_game(style);
            let lines: Vec<&str> = out.lines().collect();
            for line in &lines[..2] {
                assert!(line.contains("ladder-l3"), "{style:?}: {line}");
                assert!(line.contains("abcd1234"), "{style:?}: {line}");
            }
            assert!(lines[0].contains("e2e4"), "{style:?}: {out}");
            assert!(lines[2].contains("ladder-l3") && !lines[2].contains("abcd1234"));
        }
    }

    #[test]
    fn plain_lines_are_dated_and_uncoloured() {
        let out = log_a_game(LogStyle::Plain);
        for line in out.lines() {
            // RFC 3339 UTC timestamp first, e.g. 2026-11-22T16:02:39.123456Z.
            let stamp = line.split_whitespace().next().unwrap();
            assert!(stamp.len() >= 20 && stamp.ends_with('Z'), "{line}");
            assert!(!line.contains('\u{1b}'), "{line}");
        }
    }

    #[test]
    fn journal_stream_variable_is_parsed_strictly() {
        assert_eq!(parse_journal_stream("8:12345"), Some((8, 12345)));
        assert_eq!(parse_journal_stream("8:x"), None);
        assert_eq!(parse_journal_stream(""), None);
        assert_eq!("Journal".parse(), Ok(LogStyle::Journal));
        assert!("syslog".parse::<LogStyle>().is_err());
    }

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
                },
                AccountStatus {
                    account: "ladder-l2".into(),
                    games_running: 1,
                    queued: 0,
                    games_today: 7,
                    problem: None,
                },
                AccountStatus {
                    account: "ladder-l3".into(),
                    games_running: 0,
                    queued: 0,
                    games_today: 0,
                    problem: None,
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

    #[test]
    fn waits_read_like_a_person_would_say_them() {
        assert_eq!(show_wait(Duration::from_millis(200)), "1s");
        assert_eq!(show_wait(Duration::from_secs(30)), "30s");
        assert_eq!(show_wait(Duration::from_secs(61)), "2m");
        assert_eq!(show_wait(Duration::from_secs(240)), "4m");
        assert_eq!(show_wait(Duration::from_secs(3900)), "1h 5m");
    }
}
