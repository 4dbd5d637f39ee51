//! Every results file the repository ships — the calibration runs' logs under `calibration/`
//! and the test fixtures — reads with today's types and writes back byte for byte: a game's
//! line through `GameRecord` (its header flattened in), a game between anchors through
//! `AnchorGameRecord`. The files are found by walking the folders, so a file added later is
//! held to the same rule. The one exception is named: the fixture of deliberately broken lines,
//! every line of which the reader must skip.

use std::path::{Path, PathBuf};

use ladder::arena::anchor_fit::AnchorGameRecord;
use ladder::results::{Line, scan_results};

/// Files made of lines the reader must refuse (malformed, a future schema, not JSON).
const BROKEN_ON_PURPOSE: &[&str] = &["tests/fixtures/calibration/broken-lines.jsonl"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `*.jsonl` below `dir`, sorted.
fn jsonl_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            jsonl_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "jsonl") {
            out.push(path);
        }
    }
}

fn shipped_results_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in ["calibration", "tests/fixtures"] {
        jsonl_files(&root().join(dir), &mut files);
    }
    files
}

/// What one line gave when read and written back.
enum Verdict {
    Same,
    Differs(String),
    Skipped(String),
}

fn judge(path: &Path) -> Vec<(String, Verdict)> {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut verdicts = Vec::new();
    scan_results(path, |line| {
        let original = lines[verdicts.len()];
        let verdict = match line {
            Line::Record(record) => {
                let written = serde_json::to_string(&record).unwrap();
                if written == original {
                    Verdict::Same
                } else {
                    Verdict::Differs(written)
                }
            }
            Line::Other { .. } => match serde_json::from_str::<AnchorGameRecord>(original) {
                Ok(game) => {
                    let written = serde_json::to_string(&game).unwrap();
                    if written == original {
                        Verdict::Same
                    } else {
                        Verdict::Differs(written)
                    }
                }
                Err(e) => Verdict::Skipped(format!("not an anchor game: {e}")),
            },
            Line::Skipped(warning) => Verdict::Skipped(warning.to_string()),
        };
        verdicts.push((original.to_string(), verdict));
    })
    .unwrap();
    assert_eq!(verdicts.len(), lines.len(), "{}", path.display());
    verdicts
}

#[test]
fn every_shipped_results_line_reads_and_writes_back_byte_for_byte() {
    let files = shipped_results_files();
    let names: Vec<String> = files
        .iter()
        .map(|f| {
            f.strip_prefix(root())
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    for broken in BROKEN_ON_PURPOSE {
        assert!(names.iter().any(|n| n == broken), "{broken} is gone");
    }
    let mut lines = 0;
    for (path, name) in files.iter().zip(&names) {
        let on_purpose = BROKEN_ON_PURPOSE.contains(&name.as_str());
        for (i, (original, verdict)) in judge(path).into_iter().enumerate() {
            match (verdict, on_purpose) {
                (Verdict::Same, false) => lines += 1,
                (Verdict::Skipped(_), true) => {}
                (Verdict::Same, true) => {
                    panic!("{name}:{}: read, but it is broken on purpose", i + 1)
                }
                (Verdict::Skipped(why), false) => panic!("{name}:{}: skipped: {why}", i + 1),
                (Verdict::Differs(written), _) => {
                    panic!(
                        "{name}:{}: written back differently\nwas: {original}\nnow: {written}",
                        i + 1
                    )
                }
            }
        }
    }
    // The shipped calibration logs alone hold over ten thousand lines: a walk that found
    // nothing, or a reader that skipped them all, fails here.
    assert!(lines > 10_000, "{lines} lines in {names:?}");
}
