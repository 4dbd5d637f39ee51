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

use std::fmt;
use std::io::IsTerminal;

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
}
