//! Reading a child process's stderr as it comes.

use std::io::{BufRead, BufReader};
use std::process::Child;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Reads the stderr lines of `child` (spawned with a piped stderr) until one satisfies
/// `found` or `within` has passed or the stream ended, then kills the child. Returns whether
/// the line came, and the lines read (joined with newlines).
pub fn read_until_line(
    child: &mut Child,
    within: Duration,
    found: impl Fn(&str) -> bool,
) -> (bool, String) {
    let (tx, rx) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + within;
    let mut log = Vec::new();
    let came = loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => {
                let done = found(&line);
                log.push(line);
                if done {
                    break true;
                }
            }
            // The process ended or the time ran out without the line.
            Err(_) => break false,
        }
    };
    drop(child.kill());
    drop(child.wait());
    (came, log.join("\n"))
}
