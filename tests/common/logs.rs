//! Log capture for the tests that run the daemon in process: every test's logs (the crate at
//! debug level) go to one buffer, shared by the tests of one test binary.

use std::io::Write;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

static LOGS: Mutex<Vec<u8>> = Mutex::new(Vec::new());

struct LogWriter;

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        LOGS.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Every test's logs go to one buffer (debug level for the crate).
pub fn capture_logs() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        tracing_subscriber::fmt()
            .with_env_filter("ladder=debug")
            .with_writer(|| LogWriter)
            .with_ansi(false)
            .with_target(false)
            .init();
    });
}

/// Everything logged so far.
pub fn logs() -> String {
    String::from_utf8_lossy(&LOGS.lock().unwrap()).into_owned()
}

/// Waits until some log line satisfies `f`; returns it.
pub async fn wait_log(what: &str, timeout: Duration, f: impl Fn(&str) -> bool) -> String {
    wait_log_after(0, what, timeout, f).await
}

/// Waits until a log line written after the first `offset` bytes satisfies `f`.
pub async fn wait_log_after(
    offset: usize,
    what: &str,
    timeout: Duration,
    f: impl Fn(&str) -> bool,
) -> String {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(line) = logs().get(offset..).unwrap_or("").lines().find(|l| f(l)) {
            return line.to_string();
        }
        if tokio::time::Instant::now() >= deadline {
            panic!("no log line {what} within {timeout:?}; logs:\n{}", logs());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
