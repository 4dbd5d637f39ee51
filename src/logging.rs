//! Logging: tracing to stderr, plain for journald, with timestamps on a terminal.

use std::io::IsTerminal;

/// Installs the global tracing subscriber. `RUST_LOG` overrides `default_filter`.
pub fn init(default_filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false);
    // journald stamps every line itself; a terminal needs the time.
    if std::io::stderr().is_terminal() {
        builder.init();
    } else {
        builder.without_time().with_ansi(false).init();
    }
}
