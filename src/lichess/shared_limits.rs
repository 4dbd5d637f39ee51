//! The limits of one token shared between processes: the daemon and `ladder calibrate --fetch`
//! may use the same tokens at the same time, and Lichess's rules ("one request at a time", "after
//! a 429, wait a minute") are the token's, not the process's. Small files per account in a
//! directory every process derives from the configuration carry them:
//!
//! - `<account>.lock`: held (an advisory `flock`, released by the kernel if the process dies)
//!   while one attempt of an ordinary request of that account is in flight, so two processes
//!   take turns; never across a retry's wait or a pause (the other process's moves go on);
//! - `<account>.pause`: the end of the latest 429 pause as Unix milliseconds, written whole
//!   (a temporary file renamed over it), so the other process waits it out too. It is read,
//!   merged (the later end wins: another process's longer pause is never shortened) and
//!   written under `<account>.pause.lock`, which also makes any temporary left beside it by a
//!   killed writer stale, and removed. A pause on file further ahead than
//!   [`MAX_SHARED_PAUSE`] is a corrupt file or a skewed clock: ignored, with a warning, so it
//!   can never silence an account indefinitely.
//!
//! Within one process the client's own gate and pause already hold; these files only add the
//! other processes. A file that cannot be read or written is logged and the call goes on under
//! the process's own limits: sharing is a courtesy that must never stop an account.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::atomic_file::write_atomically;

/// How often a waiting call looks again whether the other process released the token.
const LOCK_POLL: Duration = Duration::from_millis(5);

/// The furthest ahead a pause on file may end: lila's pauses last a minute or two; one further
/// ahead comes from a corrupt file or a clock that is wrong, and is ignored.
pub const MAX_SHARED_PAUSE: Duration = Duration::from_secs(15 * 60);

/// Where an account's shared limits live.
#[derive(Clone, Debug)]
pub struct SharedLimits {
    dir: PathBuf,
    account: String,
    /// The last pause file this process warned of ignoring: said once, not at every request.
    warned: Arc<Mutex<Option<String>>>,
}

impl SharedLimits {
    /// The files of `account` (by its lower-case name, as Lichess ids go) under `dir`.
    pub fn new(dir: impl Into<PathBuf>, account: &str) -> SharedLimits {
        SharedLimits {
            dir: dir.into(),
            account: account.to_lowercase(),
            warned: Arc::default(),
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

    fn pause_lock_path(&self) -> PathBuf {
        self.dir.join(format!("{}.pause.lock", self.account))
    }

    /// The end of the 429 pause another process (or this one) recorded, if it is still running
    /// and believable (at most [`MAX_SHARED_PAUSE`] ahead; a later one is ignored, with a
    /// warning).
    pub fn paused_until(&self) -> Option<SystemTime> {
        match self.read_pause() {
            OnFile::Until(until) => (until > SystemTime::now()).then_some(until),
            OnFile::Nothing => None,
            OnFile::Unbelievable { text, why } => {
                let mut warned = self.warned.lock().unwrap_or_else(|e| e.into_inner());
                if warned.as_deref() != Some(text.as_str()) {
                    tracing::warn!("{}: {why}; ignoring it", self.pause_path().display());
                    *warned = Some(text);
                }
                None
            }
        }
    }

    fn read_pause(&self) -> OnFile {
        let path = self.pause_path();
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return OnFile::Nothing,
            Err(e) => {
                return OnFile::Unbelievable {
                    text: String::new(),
                    why: format!("cannot be read ({e})"),
                };
            }
        };
        let text = text.trim().chars().take(40).collect::<String>();
        let Ok(ms) = text.parse::<u64>() else {
            return OnFile::Unbelievable {
                why: format!("not a time in Unix milliseconds ({text:?})"),
                text,
            };
        };
        let until = UNIX_EPOCH + Duration::from_millis(ms);
        let ahead = until.duration_since(SystemTime::now()).unwrap_or_default();
        if ahead > MAX_SHARED_PAUSE {
            return OnFile::Unbelievable {
                why: format!(
                    "a 429 pause ending {} from now, longer than any Lichess asks (a corrupt \
                     file or a clock that is wrong)",
                    crate::logging::show_duration(ahead)
                ),
                text,
            };
        }
        OnFile::Until(until)
    }

    /// Records a 429 pause running until `until` (at most [`MAX_SHARED_PAUSE`] from now): read,
    /// merged with the pause on file (the later end wins) and written under the pause lock,
    /// so two processes recording at once never shorten each other's pause.
    pub fn record_pause(&self, until: SystemTime) {
        let until = until.min(SystemTime::now() + MAX_SHARED_PAUSE);
        let _lock = self.lock_pause_file();
        self.remove_stale_temporaries();
        if let OnFile::Until(on_file) = self.read_pause()
            && on_file >= until
        {
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

    /// Takes the pause file's lock (blocking: it is only held for a read and a rename); `None`,
    /// logged, when the system refuses it (the write goes on unlocked).
    fn lock_pause_file(&self) -> Option<File> {
        let locked = std::fs::create_dir_all(&self.dir)
            .and_then(|()| {
                OpenOptions::new()
                    .create(true)
                    .truncate(false)
                    .write(true)
                    .open(self.pause_lock_path())
            })
            .and_then(|file| file.lock().map(|()| file));
        match locked {
            Ok(file) => Some(file),
            Err(e) => {
                tracing::warn!(
                    "cannot lock {} ({e}): recording the pause without it",
                    self.pause_lock_path().display()
                );
                None
            }
        }
    }

    /// Removes the temporaries of the pause file a killed writer left (`.<account>.pause.tmp-PID`):
    /// with the pause lock held, no live writer has one.
    fn remove_stale_temporaries(&self) {
        let prefix = format!(".{}.pause.tmp-", self.account);
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// What the pause file says.
enum OnFile {
    Nothing,
    Until(SystemTime),
    /// Unreadable, not a time, or too far ahead: the file's text (what a warning is said once
    /// for) and why.
    Unbelievable {
        text: String,
        why: String,
    },
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
    fn a_pause_too_far_ahead_is_ignored_and_never_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let limits = SharedLimits::new(dir.path(), "bot1");
        // A clock a day ahead wrote it, or the file is garbage that parses.
        let day = SystemTime::now() + Duration::from_secs(24 * 3600);
        let ms = day.duration_since(UNIX_EPOCH).unwrap().as_millis();
        std::fs::write(dir.path().join("bot1.pause"), format!("{ms}\n")).unwrap();
        assert_eq!(limits.paused_until(), None);
        std::fs::write(dir.path().join("bot1.pause"), "99999999999999999\n").unwrap();
        assert_eq!(limits.paused_until(), None);
        // A pause asked for hours is recorded as the longest believable one, and replaces
        // the unbelievable one on file.
        limits.record_pause(day);
        let seen = limits.paused_until().expect("recorded");
        let ahead = seen.duration_since(SystemTime::now()).unwrap();
        assert!(
            ahead <= MAX_SHARED_PAUSE && ahead > MAX_SHARED_PAUSE - Duration::from_secs(5),
            "{ahead:?}"
        );
    }

    #[test]
    fn recording_keeps_the_later_end_and_clears_a_killed_writers_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let limits = SharedLimits::new(dir.path(), "bot1");
        let stale = dir.path().join(".bot1.pause.tmp-999999");
        std::fs::write(&stale, "123").unwrap();
        let other = dir.path().join(".bot2.pause.tmp-999999");
        std::fs::write(&other, "123").unwrap();
        // Another process's longer pause stays: ours, shorter, does not replace it.
        let long = SystemTime::now() + Duration::from_secs(300);
        SharedLimits::new(dir.path(), "bot1").record_pause(long);
        limits.record_pause(SystemTime::now() + Duration::from_secs(60));
        let on_file = limits.paused_until().unwrap();
        assert!(on_file + Duration::from_millis(2) >= long, "shortened");
        assert!(!stale.exists(), "the killed writer's temporary is left");
        assert!(other.exists(), "another account's file was touched");
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
