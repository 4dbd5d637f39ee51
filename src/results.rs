//! The results log: one JSON line per finished game, the source of truth for calibration.
//!
//! The daemon and the arena append [`GameRecord`]s through [`ResultsLog`]: each record is
//! written once per game id (even across restarts), flushed and fsynced. [`read_results`] is
//! tolerant: a torn last line (a crash mid-write), a malformed line, an unknown schema version
//! or a duplicate game id is skipped and reported, never fatal.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The schema version this build writes and the newest it reads.
pub const SCHEMA_VERSION: u32 = 1;

/// Where a game was played.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Lichess,
    Sandbox,
    Arena,
}

/// The game's result from the bot's (the level's) side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Win,
    Draw,
    Loss,
    /// Aborted or otherwise without a result: never rated.
    None,
}

impl Outcome {
    /// The score from the bot's side, if the game has a result.
    pub fn score(self) -> Option<f64> {
        match self {
            Outcome::Win => Some(1.0),
            Outcome::Draw => Some(0.5),
            Outcome::Loss => Some(0.0),
            Outcome::None => None,
        }
    }
}

/// The engine parameters a game was played with (at full material; the endgame scaling is
/// recomputed from the coefficients version).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EngineRecord {
    pub nodes: u64,
    pub noise_cp: f64,
    pub hash_mb: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockRecord {
    pub initial_ms: u64,
    pub increment_ms: u64,
}

/// The opponent as Lichess (or the arena) describes them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpponentRecord {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub rating: Option<f64>,
    #[serde(default)]
    pub provisional: bool,
    /// Rating deviation when known (the arena's anchors, the export API).
    #[serde(default)]
    pub rd: Option<f64>,
    #[serde(default)]
    pub bot: bool,
}

/// One finished game.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GameRecord {
    pub schema: u32,
    pub game_id: String,
    pub source: Source,
    /// The bot account (or arena player) whose game this is.
    pub account: String,
    pub level: f64,
    pub offset: f64,
    pub coefficients_version: u32,
    pub engine: EngineRecord,
    pub seed: u64,
    /// Unix milliseconds.
    pub started_at_ms: i64,
    pub finished_at_ms: i64,
    pub rated: bool,
    /// Lichess speed (bullet, blitz, rapid, classical, correspondence).
    pub speed: String,
    /// Lichess perf key; the rating pool the game counts for.
    pub perf: String,
    pub variant: String,
    /// "startpos" or a FEN.
    pub initial_fen: String,
    #[serde(default)]
    pub clock: Option<ClockRecord>,
    /// "white" or "black".
    pub color: String,
    pub opponent: OpponentRecord,
    /// The bot's own rating before the game, when known.
    #[serde(default)]
    pub our_rating: Option<f64>,
    pub result: Outcome,
    /// Lichess status name (mate, resign, outoftime, draw, aborted, …).
    pub status: String,
    /// "white", "black" or absent.
    #[serde(default)]
    pub winner: Option<String>,
    /// UCI moves separated by spaces.
    pub moves: String,
    /// Set when the game went wrong by our own fault (lost on time with budget left, engine
    /// crash, disconnect, a rate-limit pause, a shutdown): calibration leaves such games out
    /// and reports them. The daemon's faults start with their kind ([`fault`]), then `: ` and
    /// the detail.
    #[serde(default)]
    pub fault: Option<String>,
    /// Set when the game was open across a restart of the daemon: how its record was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_restart: Option<AfterRestart>,
}

/// How a game that was open when the daemon stopped got its record after the restart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AfterRestart {
    /// Lichess still had it running: it was played on, with its original seed.
    Resumed,
    /// It ended while the daemon was down: the record comes from Lichess's game export.
    Settled,
}

/// The kinds of fault the daemon writes: a `fault` text starts with one of these.
pub mod fault {
    /// Lost on time although the node budget should have fitted the clock.
    pub const FLAGGED: &str = "flagged";
    /// Lost on time while the account waited out an HTTP 429 pause (every request of the
    /// account waits, our moves included).
    pub const RATE_LIMITED: &str = "rate_limited";
    /// Ended by us (aborted or resigned) when the shutdown grace period ran out.
    pub const SHUTDOWN: &str = "shutdown";
    /// Lost on time (or by the opponent's claim) while the daemon was not running.
    pub const DAEMON_DOWN: &str = "daemon_down";

    /// `kind: detail`.
    pub fn text(kind: &str, detail: &str) -> String {
        format!("{kind}: {detail}")
    }
}

impl GameRecord {
    /// The kind of the record's fault (the text before the first `:`), if it has one.
    pub fn fault_kind(&self) -> Option<&str> {
        let text = self.fault.as_deref()?;
        Some(text.split_once(':').map_or(text, |(kind, _)| kind).trim())
    }

    /// Whether our side lost on time.
    pub fn lost_on_time(&self) -> bool {
        self.result == Outcome::Loss && self.status == "outoftime"
    }
}

/// An append-only results file that writes each game id at most once.
pub struct ResultsLog {
    path: PathBuf,
    file: File,
    seen: HashSet<String>,
}

impl ResultsLog {
    /// Opens (creating) `path` for appending. The ids already in the file are loaded so a
    /// restarted process never writes a game twice; a torn last line is closed with a newline
    /// so the next record starts on a line of its own.
    pub fn open(path: &Path) -> io::Result<ResultsLog> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)?;
        let mut seen = HashSet::new();
        let mut text = String::new();
        file.read_to_string(&mut text)?;
        for line in text.lines() {
            if let Ok(id) = serde_json::from_str::<IdOnly>(line) {
                seen.insert(id.game_id);
            }
        }
        if !text.is_empty() && !text.ends_with('\n') {
            file.seek(SeekFrom::End(0))?;
            file.write_all(b"\n")?;
            file.sync_data()?;
        }
        Ok(ResultsLog {
            path: path.to_path_buf(),
            file,
            seen,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn contains(&self, game_id: &str) -> bool {
        self.seen.contains(game_id)
    }

    /// Appends `record` unless its game id is already in the file. Returns whether it wrote.
    /// The line is written in one call, then flushed and fsynced before this returns.
    pub fn append(&mut self, record: &GameRecord) -> io::Result<bool> {
        if self.seen.contains(&record.game_id) {
            return Ok(false);
        }
        let mut line = serde_json::to_string(record).map_err(io::Error::other)?;
        line.push('\n');
        self.file.write_all(line.as_bytes())?;
        self.file.flush()?;
        self.file.sync_data()?;
        self.seen.insert(record.game_id.clone());
        Ok(true)
    }
}

#[derive(Deserialize)]
struct IdOnly {
    game_id: String,
}

/// Something skipped while reading results, with where it was.
#[derive(Clone, Debug, PartialEq)]
pub struct ReadWarning {
    pub path: PathBuf,
    pub line: usize,
    pub problem: String,
}

impl std::fmt::Display for ReadWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.path.display(), self.line, self.problem)
    }
}

/// The records read from one or more results files, with what was skipped.
#[derive(Clone, Debug, Default)]
pub struct ResultsRead {
    pub records: Vec<GameRecord>,
    pub warnings: Vec<ReadWarning>,
    pub duplicates: usize,
}

/// Reads results files in order. The first record of each game id wins; later copies (the same
/// game in two files, or fetched again) are counted in `duplicates`. Fails only when a file
/// cannot be opened or read.
pub fn read_results(paths: &[PathBuf]) -> io::Result<ResultsRead> {
    let mut out = ResultsRead::default();
    let mut seen = HashSet::new();
    for path in paths {
        let file = File::open(path).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot open {}: {e}", path.display()))
        })?;
        let mut reader = BufReader::new(file);
        let mut raw = Vec::new();
        let mut line_no = 0;
        loop {
            raw.clear();
            if reader.read_until(b'\n', &mut raw)? == 0 {
                break;
            }
            line_no += 1;
            let complete = raw.last() == Some(&b'\n');
            let text = String::from_utf8_lossy(&raw);
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            let warn = |problem: String| ReadWarning {
                path: path.clone(),
                line: line_no,
                problem,
            };
            match parse_line(text) {
                Ok(record) => {
                    if seen.insert(record.game_id.clone()) {
                        out.records.push(record);
                    } else {
                        out.duplicates += 1;
                    }
                }
                Err(problem) if !complete => out
                    .warnings
                    .push(warn(format!("torn last line skipped ({problem})"))),
                Err(problem) => out.warnings.push(warn(problem)),
            }
        }
    }
    Ok(out)
}

fn parse_line(text: &str) -> Result<GameRecord, String> {
    #[derive(Deserialize)]
    struct SchemaOnly {
        schema: u32,
    }
    let schema = serde_json::from_str::<SchemaOnly>(text)
        .map_err(|e| format!("not a results record: {e}"))?
        .schema;
    if schema > SCHEMA_VERSION {
        return Err(format!(
            "schema version {schema} is newer than this build reads ({SCHEMA_VERSION}); skipped"
        ));
    }
    serde_json::from_str(text).map_err(|e| format!("malformed record: {e}"))
}

/// A record for tests and examples; every field filled with plausible values.
pub fn sample_record(game_id: &str, result: Outcome) -> GameRecord {
    GameRecord {
        schema: SCHEMA_VERSION,
        game_id: game_id.to_string(),
        source: Source::Sandbox,
        account: "ladder-l3".to_string(),
        level: 3.0,
        offset: 0.0,
        coefficients_version: 1,
        engine: EngineRecord {
            nodes: 128,
            noise_cp: 56.0,
            hash_mb: 1,
        },
        seed: 42,
        started_at_ms: 1_700_000_000_000,
        finished_at_ms: 1_700_000_300_000,
        rated: true,
        speed: "blitz".to_string(),
        perf: "blitz".to_string(),
        variant: "standard".to_string(),
        initial_fen: "startpos".to_string(),
        clock: Some(ClockRecord {
            initial_ms: 180_000,
            increment_ms: 2_000,
        }),
        color: "white".to_string(),
        opponent: OpponentRecord {
            id: "aaron".to_string(),
            name: "Aaron".to_string(),
            title: None,
            rating: Some(1000.0),
            provisional: false,
            rd: None,
            bot: false,
        },
        our_rating: Some(1100.0),
        result,
        status: "mate".to_string(),
        winner: Some("white".to_string()),
        moves: "f2f3 e7e5 g2g4 d8h4".to_string(),
        fault: None,
        after_restart: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_each_game_once_even_after_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.jsonl");
        let mut log = ResultsLog::open(&path).unwrap();
        assert!(log.append(&sample_record("a", Outcome::Win)).unwrap());
        assert!(!log.append(&sample_record("a", Outcome::Win)).unwrap());
        drop(log);
        let mut log = ResultsLog::open(&path).unwrap();
        assert!(!log.append(&sample_record("a", Outcome::Loss)).unwrap());
        assert!(log.append(&sample_record("b", Outcome::Draw)).unwrap());
        let read = read_results(&[path]).unwrap();
        assert_eq!(read.records.len(), 2);
        assert_eq!(read.records[0].result, Outcome::Win);
        assert!(read.warnings.is_empty());
    }

    #[test]
    fn torn_last_line_is_skipped_and_the_next_record_survives() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.jsonl");
        let mut log = ResultsLog::open(&path).unwrap();
        log.append(&sample_record("a", Outcome::Win)).unwrap();
        drop(log);
        let full = serde_json::to_string(&sample_record("torn", Outcome::Win)).unwrap();
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&full.as_bytes()[..full.len() / 2]).unwrap();
        drop(f);

        let read = read_results(std::slice::from_ref(&path)).unwrap();
        assert_eq!(read.records.len(), 1);
        assert_eq!(read.warnings.len(), 1);
        assert!(read.warnings[0].problem.contains("torn"));

        let mut log = ResultsLog::open(&path).unwrap();
        log.append(&sample_record("c", Outcome::Loss)).unwrap();
        let read = read_results(&[path]).unwrap();
        let ids: Vec<_> = read.records.iter().map(|r| r.game_id.as_str()).collect();
        assert_eq!(ids, ["a", "c"]);
        assert_eq!(read.warnings.len(), 1, "{:?}", read.warnings);
    }

    #[test]
    fn after_restart_is_optional_and_round_trips() {
        let plain = sample_record("p", Outcome::Win);
        let line = serde_json::to_string(&plain).unwrap();
        assert!(!line.contains("after_restart"), "{line}");
        let mut settled = sample_record("s", Outcome::Loss);
        settled.after_restart = Some(AfterRestart::Settled);
        settled.fault = Some(fault::text(fault::DAEMON_DOWN, "lost on time"));
        let line = serde_json::to_string(&settled).unwrap();
        assert!(line.contains(r#""after_restart":"settled""#), "{line}");
        assert_eq!(parse_line(&line).unwrap(), settled);
        assert_eq!(settled.fault_kind(), Some(fault::DAEMON_DOWN));
        assert_eq!(plain.fault_kind(), None);
    }

    #[test]
    fn unknown_schema_and_duplicates_across_files_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.jsonl");
        let b = dir.path().join("b.jsonl");
        ResultsLog::open(&a)
            .unwrap()
            .append(&sample_record("x", Outcome::Win))
            .unwrap();
        let mut log = ResultsLog::open(&b).unwrap();
        log.append(&sample_record("x", Outcome::Win)).unwrap();
        let mut future = sample_record("y", Outcome::Win);
        future.schema = SCHEMA_VERSION + 1;
        log.append(&future).unwrap();
        let read = read_results(&[a, b]).unwrap();
        assert_eq!(read.records.len(), 1);
        assert_eq!(read.duplicates, 1);
        assert_eq!(read.warnings.len(), 1);
        assert!(read.warnings[0].problem.contains("schema version"));
        assert_eq!(read.warnings[0].line, 2);
    }
}
