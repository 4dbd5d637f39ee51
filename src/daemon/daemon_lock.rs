//! One daemon per results log: `results.jsonl` → `results.daemon.lock` beside it, held (an
//! advisory `flock`, released by the kernel when the process dies) for the daemon's life, with
//! the holder's pid written in it. The tokens' shared limits (`results.tokens/`), the open
//! games and the PGN go with the results log, so the lock covers them too. A second daemon on
//! the same files would play each account twice: Lichess sends both the same challenges and
//! games, and two event streams on one token close each other in turn until lila's limit on
//! stream opens pauses the account.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// The lock of the results log `results`, held until dropped.
#[derive(Debug)]
pub struct DaemonLock {
    _file: File,
}

/// The lock file that goes with a results log.
pub fn lock_path(results: &Path) -> PathBuf {
    let stem = results
        .file_stem()
        .map_or_else(|| "results".into(), |s| s.to_string_lossy().into_owned());
    results.with_file_name(format!("{stem}.daemon.lock"))
}

impl DaemonLock {
    /// Takes the lock of `results`, or says which process holds it.
    pub fn take(results: &Path) -> anyhow::Result<DaemonLock> {
        let path = lock_path(results);
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| anyhow::anyhow!("cannot open {}: {e}", path.display()))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                let holder = match text.trim().parse::<u32>() {
                    Ok(pid) => format!("another ladder daemon (pid {pid})"),
                    Err(_) => "another ladder daemon".to_string(),
                };
                anyhow::bail!(
                    "{holder} is already running with the results log {} and its tokens \
                     (lock {}): one daemon per results log and tokens; stop the other one first \
                     (or give this one its own results log and accounts)",
                    results.display(),
                    path.display()
                );
            }
            Err(TryLockError::Error(e)) => {
                anyhow::bail!("cannot lock {}: {e}", path.display());
            }
        }
        // The holder's pid, for the error above and for a person looking.
        let written = file
            .set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| writeln!(file, "{}", std::process::id()));
        if let Err(e) = written {
            tracing::warn!("cannot write the pid into {} ({e})", path.display());
        }
        Ok(DaemonLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_pid_until_it_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let results = dir.path().join("results.jsonl");
        let first = DaemonLock::take(&results).unwrap();
        let err = DaemonLock::take(&results).unwrap_err().to_string();
        assert!(
            err.contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
        assert!(err.contains("results.jsonl"), "{err}");
        // Another results log is another daemon's business.
        let other = DaemonLock::take(&dir.path().join("other.jsonl")).unwrap();
        drop(first);
        DaemonLock::take(&results).expect("free again once the first let go");
        drop(other);
        assert_eq!(lock_path(&results), dir.path().join("results.daemon.lock"));
    }
}
