//! The limits of one token shared between processes: the daemon and `ladder calibrate --fetch`
//! may use the same tokens at the same time, and Lichess's rules ("one request at a time", "after
//! a 429, wait a minute") are the token's, not the process's. Two small files per account in a
//! directory both processes derive from the configuration carry them:
//!
//! - `<account>.lock`: held (an advisory `flock`, released by the kernel if the process dies)
//!   while an ordinary request of that account is in flight, so two processes take turns;
//! - `<account>.pause`: the end of the latest 429 pause as Unix milliseconds, written whole
//!   (a temporary file renamed over it), so the other process waits it out too.
//!
//! Within one process the client's own gate and pause already hold; these files only add the
//! other processes. A file that cannot be read or written is logged and the call goes on under
//! the process's own limits: sharing is a courtesy that must never stop an account.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::atomic_file::write_atomically;

/// How often a waiting call looks again whether the other process released the token.
const LOCK_POLL: Duration = Duration::from_millis(5);

/// Where an account's shared limits live.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedLimits {
    dir: PathBuf,
    account: String,
}

impl SharedLimits {
    /// The files of `account` (by its lower-case name, as Lichess ids go) under `dir`.
    pub fn new(dir: impl Into<PathBuf>, account: &str) -> SharedLimits {
        SharedLimits {
            dir: dir.into(),
            account: account.to_lowercase(),
        }
    }

    /// The directory that goes with a results log: `results.jsonl` → `results.tokens/`, beside
    /// the log like its open-games file, so every command reading one configuration agrees.
    pub fn dir_for_results(results: &Path) -> PathBuf {
        let stem = results
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "results".to_string());
        results.with_file_name(format!("{stem}.tokens"))
    }

    fn lock_path(&self) -> PathBuf {
        self.dir.join(format!("{}.lock", self.account))
    }

    fn pause_path(&self) -> PathBuf {
        self.dir.join(format!("{}.pause", self.account))
    }

    /// Opens (creating) the account's lock file; `None`, logged, when that is impossible.
    pub fn open_lock(&self) -> Option<File> {
        let opened = std::fs::create_dir_all(&self.dir).and_then(|()| {
            OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(self.lock_path())
        });
        match opened {
            Ok(file) => Some(file),
            Err(e) => {
                tracing::warn!(
                    "cannot open {} ({e}): this account's requests are not coordinated with \
                     other processes using its token",
                    self.lock_path().display()
                );
                None
            }
        }
    }

    /// The end of the 429 pause another process (or this one) recorded, if it is still running.
    pub fn paused_until(&self) -> Option<SystemTime> {
        let path = self.pause_path();
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::warn!("cannot read {} ({e}); ignoring it", path.display());
                return None;
            }
        };
        let Ok(ms) = text.trim().parse::<u64>() else {
            tracing::warn!(
                "{}: not a time in Unix milliseconds ({:?}); ignoring it",
                path.display(),
                text.trim()
            );
            return None;
        };
        let until = UNIX_EPOCH + Duration::from_millis(ms);
        (until > SystemTime::now()).then_some(until)
    }

    /// Records a 429 pause running until `until` (never shortening a longer one on file).
    pub fn record_pause(&self, until: SystemTime) {
        if self.paused_until().is_some_and(|on_file| on_file >= until) {
            return;
        }
        let ms = until
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis();
        let path = self.pause_path();
        if let Err(e) = write_atomically(&path, format!("{ms}\n")) {
            tracing::warn!("{e}: other processes using this token will not wait for its 429 pause");
        }
    }
}

/// Takes the token's turn across processes: waits until `file`'s lock is free, then holds it
/// until the returned guard is dropped. A lock the system refuses (not a wait) is logged and
/// the call goes on.
pub async fn take_turn(file: &File) -> Option<TurnLock<'_>> {
    loop {
        match file.try_lock() {
            Ok(()) => return Some(TurnLock { file }),
            Err(TryLockError::WouldBlock) => tokio::time::sleep(LOCK_POLL).await,
            Err(TryLockError::Error(e)) => {
                tracing::warn!("cannot lock the token's turn file ({e}); going on without it");
                return None;
            }
        }
    }
}

/// The token's turn, held across processes until dropped.
pub struct TurnLock<'a> {
    file: &'a File,
}

impl Drop for TurnLock<'_> {
    fn drop(&mut self) {
        // Closing would release it too, but the file stays open for the next call.
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pause_on_file_is_seen_until_it_ends_and_is_never_shortened() {
        let dir = tempfile::tempdir().unwrap();
        let one = SharedLimits::new(dir.path(), "Bot1");
        let other = SharedLimits::new(dir.path(), "bot1");
        assert_eq!(other.paused_until(), None);
        let long = SystemTime::now() + Duration::from_secs(120);
        one.record_pause(long);
        let seen = other
            .paused_until()
            .expect("the other process sees the pause");
        assert!(
            seen.duration_since(long).unwrap_or_else(|e| e.duration()) < Duration::from_millis(2)
        );
        // A shorter pause recorded later leaves the longer one.
        one.record_pause(SystemTime::now() + Duration::from_secs(60));
        assert!(other.paused_until().unwrap() >= seen);
        // Another account is not paused.
        assert_eq!(SharedLimits::new(dir.path(), "bot2").paused_until(), None);
    }

    #[test]
    fn an_ended_or_unreadable_pause_pauses_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let limits = SharedLimits::new(dir.path(), "bot1");
        limits.record_pause(SystemTime::now() - Duration::from_secs(1));
        assert_eq!(limits.paused_until(), None);
        std::fs::write(dir.path().join("bot1.pause"), "soon\n").unwrap();
        assert_eq!(limits.paused_until(), None);
    }

    #[test]
    fn the_directory_goes_beside_the_results_log() {
        assert_eq!(
            SharedLimits::dir_for_results(Path::new("/srv/ladder/results.jsonl")),
            PathBuf::from("/srv/ladder/results.tokens")
        );
    }

    #[tokio::test]
    async fn two_openers_of_one_account_take_turns() {
        let dir = tempfile::tempdir().unwrap();
        let limits = SharedLimits::new(dir.path(), "bot1");
        // Two opens are two open file descriptions: they exclude each other as two
        // processes would.
        let first = limits.open_lock().unwrap();
        let second = limits.open_lock().unwrap();
        let held = take_turn(&first).await.unwrap();
        let waiting = tokio::time::timeout(Duration::from_millis(50), take_turn(&second)).await;
        assert!(
            waiting.is_err(),
            "the second took the turn while the first held it"
        );
        drop(held);
        let taken = tokio::time::timeout(Duration::from_millis(500), take_turn(&second)).await;
        assert!(taken.is_ok(), "the turn was not released");
    }
}
