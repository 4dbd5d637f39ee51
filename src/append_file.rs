//! Appending whole records to the append-only logs (results, PGN): a record is in the file
//! entirely or not at all. A write that fails part way (a full disk, a file size limit) is cut
//! back before the error is returned, so the next record does not land on a fragment; and
//! where even that failed, the next record starts on a line of its own.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;

/// Appends `bytes` to `file` (opened for appending), flushed and fsynced before this returns.
/// On failure the file is cut back to its length before the call and the write's error is
/// returned.
pub fn append_whole(file: &mut File, bytes: &[u8]) -> io::Result<()> {
    let before = file.metadata()?.len();
    // A fragment an earlier failure could not cut back: start on a new line.
    let torn = before > 0 && {
        let mut last = [0u8];
        file.read_exact_at(&mut last, before - 1)?;
        last[0] != b'\n'
    };
    let written = (|| {
        if torn {
            file.write_all(b"\n")?;
        }
        file.write_all(bytes)?;
        file.flush()?;
        file.sync_data()
    })();
    if let Err(e) = written {
        if let Err(cut) = file.set_len(before).and_then(|()| file.sync_data()) {
            tracing::error!(
                "a failed append could not be cut back ({cut}); the next record starts on a new line"
            );
        }
        return Err(e);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_files::temp_file;
    use std::path::Path;

    fn open_appending(path: &Path) -> File {
        std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .open(path)
            .unwrap()
    }

    /// Set in the child process of the file-size-limit test: the path it appends to.
    const CHILD_PATH: &str = "LADDER_TEST_APPEND_CHILD";

    #[test]
    fn a_write_cut_short_by_the_file_size_limit_leaves_the_file_as_it_was() {
        if let Some(path) = std::env::var_os(CHILD_PATH) {
            // The child: under a 1-block file size limit, a long record fails part way.
            let mut file = open_appending(Path::new(&path));
            let long = format!("{}\n", "r".repeat(4000));
            let err = append_whole(&mut file, long.as_bytes()).expect_err("over the limit");
            assert_eq!(err.raw_os_error(), Some(27), "EFBIG: {err}");
            return;
        }
        let (_dir, path) = temp_file("results.jsonl");
        let before = "a record\n".repeat(40);
        std::fs::write(&path, &before).unwrap();
        // SIGXFSZ ignored, so the write returns EFBIG after the bytes the limit allows. The
        // child's output goes to pipes: the limit would fail its writes to a file too.
        let child = std::process::Command::new("bash")
            .arg("-c")
            .arg("trap '' XFSZ; ulimit -f 1 && exec \"$0\" --exact \"$1\" --test-threads 1")
            .arg(std::env::current_exe().unwrap())
            .arg("append_file::tests::a_write_cut_short_by_the_file_size_limit_leaves_the_file_as_it_was")
            .env(CHILD_PATH, &path)
            .output()
            .unwrap();
        assert!(
            child.status.success(),
            "the child failed: {}\n{}",
            child.status,
            String::from_utf8_lossy(&child.stderr)
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
        // No limit now: the next record follows the last whole one.
        let mut file = open_appending(&path);
        append_whole(&mut file, b"the next\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{before}the next\n")
        );
    }

    #[test]
    fn a_fragment_left_behind_is_closed_before_the_next_record() {
        let (_dir, path) = temp_file("results.jsonl");
        std::fs::write(&path, "whole\n{\"torn").unwrap();
        let mut file = open_appending(&path);
        append_whole(&mut file, b"next\n").unwrap();
        append_whole(&mut file, b"last\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "whole\n{\"torn\nnext\nlast\n"
        );
    }
}
