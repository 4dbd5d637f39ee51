//! Logging: tracing to stderr in the style of where stderr goes, and the span conventions that
//! put the account and game id on every line of a game.
//!
//! Three styles:
//! - **journal** (stderr is the journald stream systemd gave us, `JOURNAL_STREAM`): no
//!   timestamps (journald stamps every line) and no colours, and each line starts with a
//!   `<N>` syslog priority, which journald strips and stores, so `journalctl -p warning` works;
//! - **terminal**: timestamps and colours;
//! - **plain** (a pipe or a file): timestamps, no colours, since nothing else dates the lines.
//!
//! `LADDER_LOG_STYLE=journal|terminal|plain` overrides the detection; `RUST_LOG` the filter.
//!
//! Long work (`calibrate --fetch`, `ladder arena`) shows its [`Progress`] as a bar with the ETA
//! in the terminal style only; elsewhere the work logs a plain line per step, which the journal
//! keeps. Log lines are written around a bar that is showing, so neither tears the other.

use std::borrow::Cow;
use std::fmt;
use std::io::{self, IsTerminal, Write};
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

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
    let subscriber = subscriber(LogStyle::detect(), filter, Stderr);
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

/// The progress bar showing on the terminal, if any: log lines are written around it.
static SHOWING: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// stderr for the log: a line written while a progress bar shows is written with the bar
/// lifted and redrawn below it (a line in the middle of a bar would be torn by its next redraw).
#[derive(Clone, Copy, Debug, Default)]
pub struct Stderr;

impl Write for Stderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let bar = SHOWING.lock().ok().and_then(|bar| bar.clone());
        match bar {
            Some(bar) => bar.suspend(|| io::stderr().write(buf)),
            None => io::stderr().write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}

impl<'w> MakeWriter<'w> for Stderr {
    type Writer = Stderr;
    fn make_writer(&'w self) -> Stderr {
        Stderr
    }
}

/// The progress of long work: in the terminal style a bar with the elapsed time, the count and
/// the ETA; otherwise nothing, and the caller logs its plain line per step ([`Progress::is_bar`]).
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// `total` steps counted in `unit` (`games`, `accounts`), for this process's stderr.
    pub fn new(total: u64, unit: &str) -> Progress {
        Progress::for_style(LogStyle::detect(), total, unit)
    }

    fn for_style(style: LogStyle, total: u64, unit: &str) -> Progress {
        if style != LogStyle::Terminal || total == 0 {
            return Progress { bar: None };
        }
        let template = format!(
            "{{elapsed_precise}} [{{bar:30}}] {{pos}}/{{len}} {}, ETA {{eta}}  {{msg}}",
            unit.replace(['{', '}'], "")
        );
        let style = ProgressStyle::with_template(&template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        let bar = ProgressBar::new(total).with_style(style);
        // Redrawn every second, so the elapsed time and the ETA move between steps.
        bar.enable_steady_tick(Duration::from_secs(1));
        if let Ok(mut showing) = SHOWING.lock() {
            *showing = Some(bar.clone());
        }
        Progress { bar: Some(bar) }
    }

    /// A bar shows the progress: per-step log lines would only repeat it.
    pub fn is_bar(&self) -> bool {
        self.bar.is_some()
    }

    /// The text after the bar (what is being done, the score so far).
    pub fn set_message(&self, message: impl Into<Cow<'static, str>>) {
        if let Some(bar) = &self.bar {
            bar.set_message(message);
        }
    }

    /// One step done.
    pub fn inc(&self) {
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }

    /// Leaves the bar's last state on the screen; what is written next goes below it.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar
            && !bar.is_finished()
        {
            bar.finish();
            leave(bar);
        }
    }
}

/// After the bar's last drawing: the log writes plainly again, on the next line.
fn leave(bar: &ProgressBar) {
    if let Ok(mut showing) = SHOWING.lock() {
        *showing = None;
    }
    if !bar.is_hidden() {
        // The bar ends without a newline: the next line would follow it on the same row.
        eprintln!();
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar
            && !bar.is_finished()
        {
            // Cut short (an error): keep what it showed.
            bar.abandon();
            leave(bar);
        }
    }
}

// Span conventions. The daemon instruments each account actor with `account_span` and each
// game actor with `game_span`; every event inside then carries
// `account{account=ladder-l3}:game{game=abcd1234}:` on its line, in every style, so
// `journalctl -u ladder | grep game=abcd1234` is the whole story of one game.

/// The span of one account's actor.
pub fn account_span(account: &str) -> Span {
    tracing::info_span!("account", account = %account)
}

/// The span of one game, a child of its account's span whatever span is current where the game
/// task is spawned.
pub fn game_span(account: &Span, game_id: &str) -> Span {
    tracing::info_span!(parent: account, "game", game = %game_id)
}

// How durations read wherever a person sees them (log lines, the status line, the sandbox's
// introduction and progress): one home, so a wait and a time since read alike everywhere.

/// A duration as a log line says it: `200ms` below a second, `1.5s` below 10 s (backoff
/// delays), then as a wait ([`show_wait`]: `30s`, `2m`, `1h 5m`).
pub fn show_duration(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{}ms", d.as_millis())
    } else if d < Duration::from_secs(10) && d.subsec_millis() != 0 {
        format!("{:.1}s", d.as_secs_f64())
    } else {
        show_wait(d)
    }
}

/// `4m`, `30s`, `1h 5m`: a wait as the status line and the log show it, rounded up (a wait
/// of 61 s is not over after "1m").
pub fn show_wait(d: Duration) -> String {
    spoken(d.as_secs_f64().ceil() as u64, false)
}

/// `40s`, `1m 10s`, `1h 2m`: a time since a start (or an interval), to the second below an
/// hour.
pub fn show_elapsed(d: Duration) -> String {
    spoken(d.as_secs(), true)
}

/// Whole seconds as a person says them: seconds below a minute, hours and minutes from an hour;
/// in between minutes, with the seconds when `exact`, else rounded up.
fn spoken(s: u64, exact: bool) -> String {
    match s {
        0..60 => format!("{s}s"),
        60..3600 if !exact || s.is_multiple_of(60) => format!("{}m", s.div_ceil(60)),
        60..3600 => format!("{}m {}s", s / 60, s % 60),
        _ => format!("{}h {}m", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_a_person_would_say_them() {
        type Show = fn(Duration) -> String;
        let cases: [(Show, u64, &str); 14] = [
            // A log line's duration: no Rust debug digits.
            (show_duration, 200, "200ms"),
            (show_duration, 1_234, "1.2s"),
            (show_duration, 3_000, "3s"),
            (show_duration, 60_000, "1m"),
            // A wait, rounded up.
            (show_wait, 200, "1s"),
            (show_wait, 30_000, "30s"),
            (show_wait, 61_000, "2m"),
            (show_wait, 240_000, "4m"),
            (show_wait, 3_900_000, "1h 5m"),
            // A time since a start, to the second below an hour.
            (show_elapsed, 40_900, "40s"),
            (show_elapsed, 70_000, "1m 10s"),
            (show_elapsed, 120_000, "2m"),
            (show_elapsed, 3_720_000, "1h 2m"),
            (show_elapsed, 3_600_000, "1h 0m"),
        ];
        for (show, ms, expected) in cases {
            assert_eq!(show(Duration::from_millis(ms)), expected, "{ms} ms");
        }
    }

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
    fn a_bar_only_in_the_terminal_style_and_log_lines_go_around_it() {
        for style in [LogStyle::Journal, LogStyle::Plain] {
            let progress = Progress::for_style(style, 10, "games");
            assert!(!progress.is_bar(), "{style:?}");
            assert!(SHOWING.lock().unwrap().is_none());
        }
        assert!(!Progress::for_style(LogStyle::Terminal, 0, "games").is_bar());
        let progress = Progress::for_style(LogStyle::Terminal, 3, "games");
        assert!(progress.is_bar());
        assert!(
            SHOWING.lock().unwrap().is_some(),
            "log lines must lift the bar"
        );
        progress.inc();
        progress.set_message("level 1 +1 =0 -0");
        progress.finish();
        assert!(SHOWING.lock().unwrap().is_none());
        drop(progress);
        let abandoned = Progress::for_style(LogStyle::Terminal, 3, "accounts");
        drop(abandoned);
        assert!(SHOWING.lock().unwrap().is_none());
    }

    #[test]
    fn journal_stream_variable_is_parsed_strictly() {
        assert_eq!(parse_journal_stream("8:12345"), Some((8, 12345)));
        assert_eq!(parse_journal_stream("8:x"), None);
        assert_eq!(parse_journal_stream(""), None);
        assert_eq!("Journal".parse(), Ok(LogStyle::Journal));
        assert!("syslog".parse::<LogStyle>().is_err());
    }
}
