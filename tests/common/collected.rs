//! A `ladder` process whose stderr is collected as it comes, for the tests to wait on.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::process::quiet_info;

/// The daemon process and everything it wrote to stderr so far; killed when dropped.
pub struct Daemon {
    pub child: Child,
    log: Arc<Mutex<String>>,
}

impl Daemon {
    /// Starts `command` with info logging in the plain style and collects its stderr (also
    /// copied to `copy`, line by line, when given).
    pub fn collect(mut command: Command, copy: Option<File>) -> Daemon {
        let mut child = quiet_info(&mut command)
            .stderr(Stdio::piped())
            .spawn()
            .expect("the ladder binary starts");
        let log = Arc::new(Mutex::new(String::new()));
        let stderr = child.stderr.take().unwrap();
        let sink = Arc::clone(&log);
        std::thread::spawn(move || {
            let mut copy = copy;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(file) = copy.as_mut() {
                    let _ = writeln!(file, "{line}");
                }
                let mut log = sink.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        Daemon { child, log }
    }

    /// Everything the process wrote to stderr so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Sends the signal `name` (`HUP`, `TERM`, ...).
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{name} failed");
    }

    /// Whether the process still runs.
    pub fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// Waits until `done` holds for the log so far; panics with `what` and the log after
    /// `within`.
    pub async fn wait_for_log(&self, what: &str, within: Duration, done: impl Fn(&str) -> bool) {
        let start = Instant::now();
        loop {
            let log = self.log();
            if done(&log) {
                return;
            }
            assert!(start.elapsed() < within, "{what}:\n{log}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}
