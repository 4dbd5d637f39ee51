//! The results log: one JSON line per finished game, the source of truth for calibration.
//!
//! The daemon and the arena append [`GameRecord`]s through [`ResultsLog`]: each record is
//! written once per game id (even across restarts), flushed and fsynced. Every reader of a
//! results file (the daemon's and the arena's start-up scan in [`ResultsLog::open`], the arena's
//! `--from-results`, calibration) goes through [`scan_results`], which is tolerant: a torn last
//! line (a crash mid-write), bytes that are not UTF-8, a malformed line, an unknown schema
//! version, a value out of its sane range ([`check_record`]) or a duplicate game id is skipped
//! and reported with its file and line, never fatal. A game exported by Lichess becomes a record
//! through [`from_lichess`].

pub mod fields;
pub mod from_lichess;
pub mod header;

pub use fields::{EndStatus, Keyed, RecordColor, RecordPerf, RecordSpeed, RecordStatus};
pub use header::{EngineRecord, GameHeader, Source};

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::lichess::{Color, GameId, GameStatus, Perf, Speed};

/// The schema version this build writes and the newest it reads.
pub const SCHEMA_VERSION: u32 = 1;

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

/// As a log line says it: `win`, `draw`, `loss`, `no result`.
impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Outcome::Win => "win",
            Outcome::Draw => "draw",
            Outcome::Loss => "loss",
            Outcome::None => "no result",
        })
    }
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
    pub game_id: GameId,
    /// Who played it and with what (flattened: its keys stand between `game_id` and
    /// `started_at_ms`, as they always have).
    #[serde(flatten)]
    pub header: GameHeader,
    /// Unix milliseconds.
    pub started_at_ms: i64,
    pub finished_at_ms: i64,
    pub rated: bool,
    /// Lichess speed (bullet, blitz, rapid, classical, correspondence).
    pub speed: RecordSpeed,
    /// Lichess perf key; the rating pool the game counts for.
    pub perf: RecordPerf,
    pub variant: String,
    /// "startpos" or a FEN.
    pub initial_fen: String,
    #[serde(default)]
    pub clock: Option<ClockRecord>,
    /// "white" or "black".
    pub color: RecordColor,
    pub opponent: OpponentRecord,
    /// The bot's own rating before the game, when known.
    #[serde(default)]
    pub our_rating: Option<f64>,
    pub result: Outcome,
    /// Lichess status name (mate, resign, outoftime, draw, aborted, …), or the arena's for a
    /// malfunction (crash, illegalmove, hang).
    pub status: RecordStatus,
    /// "white", "black" or absent.
    #[serde(default)]
    pub winner: Option<RecordColor>,
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
    /// Plies at the start of `moves` that an arena opening played (no player chose them);
    /// absent in games from Lichess and in arena records written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opening_plies: Option<u32>,
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
    /// Lost on time (or by the opponent's claim) after its game actor gave up on it.
    pub const ABANDONED: &str = "abandoned";
    /// Won (or drawn) by a claim after the opponent left the game (`opponentGone`).
    pub const OPPONENT_GONE: &str = "opponent_gone";
    /// Lost (or drawn) by the opponent's claim while the daemon played the game: Lichess
    /// found our side gone (a bot is gone once its game stream has been down for the wait
    /// Lichess gives, e.g. while it reconnects through a 429 pause or a network fault).
    pub const CLAIMED_AGAINST: &str = "claimed_against";
    /// Ended before the daemon took the game up: its `gameStart` never came (a lost event
    /// stream, a restart between the accept and the start), so we never moved in it.
    pub const NOT_PLAYED: &str = "not_played";

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

    /// The game replayed from its initial position and moves; `None` for a variant we do not
    /// play or moves that are not legal there.
    pub fn replay(&self) -> Option<crate::engine::Game> {
        let mut game = self.start()?;
        for m in self.moves.split_whitespace() {
            game.play_uci(m).ok()?;
        }
        Some(game)
    }

    /// The game's initial position, before any move; `None` for a variant our engine does not
    /// play or a FEN that does not parse.
    pub fn start(&self) -> Option<crate::engine::Game> {
        let chess960 = match self.variant.as_str() {
            "standard" | "fromPosition" => false,
            "chess960" => true,
            _ => return None,
        };
        crate::engine::Game::new(Some(&self.initial_fen), chess960).ok()
    }
}

/// An append-only results file that writes each game id at most once.
pub struct ResultsLog {
    path: PathBuf,
    file: File,
    seen: HashSet<String>,
}

/// Opens `path` for reading and appending, creating it and its folder when missing: the
/// append-only logs (results, PGN) read what is there before they add to it.
pub fn open_appending(path: &Path) -> io::Result<File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(path)
}

impl ResultsLog {
    /// Opens (creating) `path` for appending. The ids already in the file are loaded so a
    /// restarted process never writes a game twice (lines skipped by the reader still count
    /// when their game id can be read); every skipped line is logged as a warning with its
    /// file and line. A torn last line is closed with a newline so the next record starts on a
    /// line of its own.
    pub fn open(path: &Path) -> io::Result<ResultsLog> {
        let mut file = open_appending(path)?;
        let mut seen = HashSet::new();
        scan_lines(&mut file, path, |line| match line {
            Line::Record(record) => {
                seen.insert(record.game_id.to_string());
            }
            Line::Other { game_id } => {
                seen.extend(game_id);
            }
            Line::Skipped(warning) => {
                tracing::warn!("skipped {warning}");
                seen.extend(warning.game_id);
            }
        })?;
        let len = file.seek(SeekFrom::End(0))?;
        if len > 0 {
            let mut last = [0u8];
            file.seek(SeekFrom::Start(len - 1))?;
            file.read_exact(&mut last)?;
            if last[0] != b'\n' {
                file.write_all(b"\n")?;
                file.sync_data()?;
            }
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
    /// The line is written whole or not at all, fsynced before this returns
    /// ([`crate::append_file`]).
    pub fn append(&mut self, record: &GameRecord) -> io::Result<bool> {
        self.append_line(record.game_id.as_str(), record)
    }

    /// Appends any record with a `game_id` field the same way (the arena's games between
    /// anchors, which [`read_results`] skips).
    pub fn append_line<T: Serialize>(&mut self, game_id: &str, record: &T) -> io::Result<bool> {
        if self.seen.contains(game_id) {
            return Ok(false);
        }
        let mut line = serde_json::to_string(record).map_err(io::Error::other)?;
        line.push('\n');
        crate::append_file::append_whole(&mut self.file, line.as_bytes())?;
        self.seen.insert(game_id.to_string());
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
    /// The game id of the skipped line, when it could still be read (so a writer never logs
    /// that game a second time).
    pub game_id: Option<String>,
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
    /// Lines of other record kinds (the arena's games between anchors), skipped.
    pub other_records: usize,
}

/// One line of a results file as the reader judged it.
#[derive(Clone, Debug)]
pub enum Line {
    Record(Box<GameRecord>),
    /// A record of another kind (`"record": "anchor-game"`: the arena's games between
    /// anchors), not a game of ours.
    Other {
        game_id: Option<String>,
    },
    Skipped(ReadWarning),
}

/// Reads results files in order. The first record of each game id wins; later copies (the same
/// game in two files, or fetched again) are counted in `duplicates`. Fails only when a file
/// cannot be opened or read; every bad line is skipped and reported.
pub fn read_results(paths: &[PathBuf]) -> io::Result<ResultsRead> {
    let mut out = ResultsRead::default();
    let mut seen = HashSet::new();
    for path in paths {
        scan_results(path, |line| match line {
            Line::Record(record) => {
                if seen.insert(record.game_id.clone()) {
                    out.records.push(*record);
                } else {
                    out.duplicates += 1;
                }
            }
            Line::Other { .. } => out.other_records += 1,
            Line::Skipped(warning) => out.warnings.push(warning),
        })?;
    }
    Ok(out)
}

/// The one reader of a results file: hands every non-empty line to `each`, as a checked record
/// or as a skipped line with its file, line number and why. Reads bytes, so a line that is not
/// UTF-8 is one skipped line, not the end of the file. Fails only when the file cannot be
/// opened or read.
pub fn scan_results(path: &Path, each: impl FnMut(Line)) -> io::Result<()> {
    let mut file = File::open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot open {}: {e}", path.display())))?;
    scan_lines(&mut file, path, each)
}

fn scan_lines(file: &mut File, path: &Path, mut each: impl FnMut(Line)) -> io::Result<()> {
    let mut reader = BufReader::new(file);
    let mut raw = Vec::new();
    let mut line_no = 0;
    loop {
        raw.clear();
        let read = reader
            .read_until(b'\n', &mut raw)
            .map_err(|e| io::Error::new(e.kind(), format!("reading {}: {e}", path.display())))?;
        if read == 0 {
            return Ok(());
        }
        line_no += 1;
        let complete = raw.last() == Some(&b'\n');
        let skipped = |problem: String, text: &str| {
            Line::Skipped(ReadWarning {
                path: path.to_path_buf(),
                line: line_no,
                problem,
                game_id: serde_json::from_str::<IdOnly>(text).ok().map(|i| i.game_id),
            })
        };
        let line = match std::str::from_utf8(&raw) {
            Err(e) => {
                let lossy = String::from_utf8_lossy(&raw);
                skipped(
                    format!(
                        "not valid UTF-8 (byte {} of the line); skipped",
                        e.valid_up_to() + 1
                    ),
                    lossy.trim(),
                )
            }
            Ok(text) if text.trim().is_empty() => continue,
            Ok(text) => match parse_line(text.trim()) {
                Ok(Some(record)) => Line::Record(Box::new(record)),
                Ok(None) => Line::Other {
                    game_id: serde_json::from_str::<IdOnly>(text).ok().map(|i| i.game_id),
                },
                Err(problem) if !complete => {
                    skipped(format!("torn last line skipped ({problem})"), text.trim())
                }
                Err(problem) => skipped(problem, text.trim()),
            },
        };
        each(line);
    }
}

/// `Ok(None)`: a record of another kind (`"record": "anchor-game"`), not a game of ours.
fn parse_line(text: &str) -> Result<Option<GameRecord>, String> {
    #[derive(Deserialize)]
    struct SchemaOnly {
        schema: u32,
        #[serde(default)]
        record: Option<String>,
    }
    let head = serde_json::from_str::<SchemaOnly>(text)
        .map_err(|e| format!("not a results record: {e}"))?;
    if head.record.is_some() {
        return Ok(None);
    }
    let schema = head.schema;
    if schema > SCHEMA_VERSION {
        return Err(format!(
            "schema version {schema} is newer than this build reads ({SCHEMA_VERSION}); skipped"
        ));
    }
    let record: GameRecord =
        serde_json::from_str(text).map_err(|e| format!("malformed record: {e}"))?;
    check_record(&record).map_err(|problem| format!("{problem}; skipped"))?;
    Ok(Some(record))
}

/// Ratings a record may hold (the opponent's, ours) and a level may be measured at. Lichess's
/// lie well inside; the Elo model itself has no floor (the simulator's weakest opponents are
/// rated below 0); beyond these a number is a corruption, not a rating.
pub const RATING_RANGE: RangeInclusive<f64> = -1000.0..=5000.0;
/// Rating deviations: Glicko-2 starts at 500 on Lichess.
pub const RD_RANGE: RangeInclusive<f64> = 0.0..=1000.0;
/// Levels (the UCI front end's `Level` goes up to 100).
pub const LEVEL_RANGE: RangeInclusive<f64> = 0.0..=100.0;
/// Nodes per move at full material (0 marks a game fetched from Lichess).
pub const MAX_NODES: u64 = 10_000_000_000;
/// Evaluation noise scale, centipawns.
pub const NOISE_RANGE: RangeInclusive<f64> = 0.0..=100_000.0;
/// Initial clock (Lichess allows 180 minutes) and increment (180 s), with room to spare.
pub const MAX_INITIAL_MS: u64 = 24 * 3600 * 1000;
pub const MAX_INCREMENT_MS: u64 = 3600 * 1000;
/// Unix milliseconds from 1970 to 2100.
pub const TIME_RANGE_MS: RangeInclusive<i64> = 0..=4_102_444_800_000;
/// Half-moves in a game: the longest legal game is under 12 000 plies.
pub const MAX_PLIES: usize = 12_000;

/// Whether every value of `record` lies in its sane range. A record that parses but holds an
/// absurd number (an opponent rated 1e308, a level of -3) would poison whatever reads it, so
/// the reader skips it and says which key was wrong.
pub fn check_record(r: &GameRecord) -> Result<(), String> {
    fn bad(key: &str, value: impl std::fmt::Display, range: &str) -> Result<(), String> {
        Err(format!("{key} = {value} is out of range ({range})"))
    }
    // 1e308, not 309 digits.
    let num = |v: f64| {
        if v.is_finite() && (v == 0.0 || (1e-3..1e7).contains(&v.abs())) {
            format!("{v}")
        } else {
            format!("{v:e}")
        }
    };
    let id = r.game_id.as_str();
    if id.trim().is_empty() || id.len() > 200 {
        return bad("game_id", format!("{id:?}"), "1 to 200 characters");
    }
    let (header, engine) = (&r.header, &r.header.engine);
    if header.account.trim().is_empty() {
        return bad("account", "\"\"", "a name");
    }
    let level = header.level;
    if !(level.is_finite() && level > *LEVEL_RANGE.start() && level <= *LEVEL_RANGE.end()) {
        return bad("level", num(level), "0 < level <= 100");
    }
    if !(header.offset.is_finite() && header.offset.abs() <= *LEVEL_RANGE.end()) {
        return bad("offset", num(header.offset), "-100 to 100");
    }
    if engine.nodes > MAX_NODES {
        return bad("engine.nodes", engine.nodes, "at most 10^10");
    }
    if !(engine.noise_cp.is_finite() && NOISE_RANGE.contains(&engine.noise_cp)) {
        return bad("engine.noise_cp", num(engine.noise_cp), "0 to 100000");
    }
    if engine.hash_mb > crate::engine::tt::MAX_HASH_MB {
        return bad("engine.hash_mb", engine.hash_mb, "at most 4096");
    }
    for (key, ms) in [
        ("started_at_ms", r.started_at_ms),
        ("finished_at_ms", r.finished_at_ms),
    ] {
        if !TIME_RANGE_MS.contains(&ms) {
            return bad(key, ms, "Unix milliseconds between 1970 and 2100");
        }
    }
    if let Some(clock) = r.clock {
        if clock.initial_ms > MAX_INITIAL_MS {
            return bad("clock.initial_ms", clock.initial_ms, "at most 24 hours");
        }
        if clock.increment_ms > MAX_INCREMENT_MS {
            return bad("clock.increment_ms", clock.increment_ms, "at most 1 hour");
        }
    }
    if r.color.known().is_none() {
        return bad(
            "color",
            format!("{:?}", r.color.as_str()),
            "\"white\" or \"black\"",
        );
    }
    if let Some(w) = &r.winner
        && !matches!(w.as_str(), "white" | "black")
    {
        return bad("winner", format!("{w:?}"), "\"white\", \"black\" or absent");
    }
    for (key, rating) in [
        ("opponent.rating", r.opponent.rating),
        ("our_rating", r.our_rating),
    ] {
        if let Some(v) = rating
            && !(v.is_finite() && RATING_RANGE.contains(&v))
        {
            return bad(key, num(v), "-1000 to 5000");
        }
    }
    if let Some(rd) = r.opponent.rd
        && !(rd.is_finite() && RD_RANGE.contains(&rd))
    {
        return bad("opponent.rd", num(rd), "0 to 1000");
    }
    let plies = r.moves.split_whitespace().count();
    if plies > MAX_PLIES {
        return bad("moves", format!("{plies} plies"), "at most 12000");
    }
    for (key, value) in [
        ("speed", r.speed.as_str()),
        ("perf", r.perf.as_str()),
        ("variant", r.variant.as_str()),
        ("status", r.status.as_str()),
    ] {
        if value.is_empty() || value.len() > 40 {
            return bad(key, format!("{value:?}"), "1 to 40 characters");
        }
    }
    Ok(())
}

/// A record for tests and examples; every field filled with plausible values.
pub fn sample_record(game_id: &str, result: Outcome) -> GameRecord {
    GameRecord {
        schema: SCHEMA_VERSION,
        game_id: GameId::new(game_id),
        header: GameHeader {
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
        },
        started_at_ms: 1_700_000_000_000,
        finished_at_ms: 1_700_000_300_000,
        rated: true,
        speed: Speed::Blitz.into(),
        perf: Perf::Blitz.into(),
        variant: "standard".to_string(),
        initial_fen: "startpos".to_string(),
        clock: Some(ClockRecord {
            initial_ms: 180_000,
            increment_ms: 2_000,
        }),
        color: Color::White.into(),
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
        status: GameStatus::Mate.into(),
        winner: Some(Color::White.into()),
        moves: "f2f3 e7e5 g2g4 d8h4".to_string(),
        fault: None,
        after_restart: None,
        opening_plies: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_files::temp_file;

    #[test]
    fn writes_each_game_once_even_after_reopen() {
        let (_dir, path) = temp_file("results.jsonl");
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

    /// A results file holding game `a`, then `damage` appended as it is (a torn line, a line
    /// that is not UTF-8).
    fn damaged_log(damage: &[u8]) -> (tempfile::TempDir, PathBuf) {
        let (dir, path) = temp_file("results.jsonl");
        let mut log = ResultsLog::open(&path).unwrap();
        log.append(&sample_record("a", Outcome::Win)).unwrap();
        drop(log);
        OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(damage)
            .unwrap();
        (dir, path)
    }

    #[test]
    fn torn_last_line_is_skipped_and_the_next_record_survives() {
        let full = serde_json::to_string(&sample_record("torn", Outcome::Win)).unwrap();
        let (_dir, path) = damaged_log(&full.as_bytes()[..full.len() / 2]);

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

    /// A line as older builds wrote it (strings for speed, perf, colour, status and winner),
    /// with values this build does not know: it reads, keeps them, and writes back the very
    /// same bytes.
    #[test]
    fn an_old_line_with_unknown_values_round_trips_byte_identically() {
        let line = r#"{"schema":1,"game_id":"old1","source":"lichess","account":"ladder-l3","level":3.0,"offset":-0.25,"coefficients_version":4,"engine":{"nodes":1200,"noise_cp":88.5,"hash_mb":1},"seed":18446744073709551557,"started_at_ms":1763000000000,"finished_at_ms":1763000300000,"rated":true,"speed":"hyperBullet","perf":"other","variant":"standard","initial_fen":"startpos","clock":{"initial_ms":30000,"increment_ms":0},"color":"black","opponent":{"id":"aaron","name":"Aaron","title":null,"rating":1012.0,"provisional":false,"rd":null,"bot":false},"our_rating":null,"result":"loss","status":"someNewEnd","winner":"white","moves":"e2e4 e7e5","fault":null}"#;
        let record = parse_line(line).unwrap().expect("a game record");
        assert_eq!(record.speed, Keyed::Other("hyperBullet".into()));
        assert_eq!(record.perf, Keyed::Other("other".into()));
        assert_eq!(record.status, Keyed::Other("someNewEnd".into()));
        assert_eq!(record.color, Keyed::Known(Color::Black));
        assert_eq!(record.winner, Some(Keyed::Known(Color::White)));
        assert_eq!(serde_json::to_string(&record).unwrap(), line);
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
        assert_eq!(parse_line(&line).unwrap(), Some(settled.clone()));
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

    #[test]
    fn a_line_that_is_not_utf8_is_skipped_with_its_line_and_the_rest_is_read() {
        let mut bad = serde_json::to_vec(&sample_record("latin1", Outcome::Win)).unwrap();
        let at = bad.windows(5).position(|w| w == b"Aaron").unwrap();
        bad[at + 1] = 0xE9; // "A\xE9ron": Latin-1, not UTF-8
        bad.push(b'\n');
        let (_dir, path) = damaged_log(&bad);
        let mut log = ResultsLog::open(&path).expect("a bad byte never stops a writer");
        assert!(
            log.contains("latin1"),
            "the skipped line's id is still known"
        );
        log.append(&sample_record("c", Outcome::Loss)).unwrap();
        drop(log);
        let read = read_results(std::slice::from_ref(&path)).unwrap();
        let ids: Vec<_> = read.records.iter().map(|r| r.game_id.as_str()).collect();
        assert_eq!(ids, ["a", "c"]);
        assert_eq!(read.warnings.len(), 1, "{:?}", read.warnings);
        let w = read.warnings[0].to_string();
        assert!(w.starts_with(&format!("{}:2: ", path.display())), "{w}");
        assert!(w.contains("not valid UTF-8"), "{w}");
    }

    #[test]
    fn values_out_of_range_are_skipped_and_named() {
        let (_dir, path) = temp_file("results.jsonl");
        let mut log = ResultsLog::open(&path).unwrap();
        let mut cases: Vec<(GameRecord, &str)> = Vec::new();
        let mut add = |id: &str, key: &'static str, change: &dyn Fn(&mut GameRecord)| {
            let mut r = sample_record(id, Outcome::Win);
            change(&mut r);
            cases.push((r, key));
        };
        add("huge-rating", "opponent.rating", &|r| {
            r.opponent.rating = Some(1e308)
        });
        add("low-rating", "opponent.rating", &|r| {
            r.opponent.rating = Some(-5000.0)
        });
        add("our-rating", "our_rating", &|r| r.our_rating = Some(9000.0));
        add("rd", "opponent.rd", &|r| r.opponent.rd = Some(1e9));
        add("level", "level", &|r| r.header.level = -3.0);
        add("offset", "offset", &|r| r.header.offset = 1e12);
        add("noise", "engine.noise_cp", &|r| {
            r.header.engine.noise_cp = 1e300
        });
        add("hash", "engine.hash_mb", &|r| {
            r.header.engine.hash_mb = 100_000_000
        });
        add("clock", "clock.initial_ms", &|r| {
            r.clock = Some(ClockRecord {
                initial_ms: u64::MAX,
                increment_ms: 0,
            })
        });
        add("time", "started_at_ms", &|r| r.started_at_ms = -1);
        add("plies", "moves", &|r| r.moves = "e2e4 ".repeat(20_000));
        add("color", "color", &|r| {
            r.color = Keyed::Other("green".into())
        });
        for (record, _) in &cases {
            log.append(record).unwrap();
        }
        log.append(&sample_record("fine", Outcome::Draw)).unwrap();
        drop(log);
        let read = read_results(std::slice::from_ref(&path)).unwrap();
        let ids: Vec<_> = read.records.iter().map(|r| r.game_id.as_str()).collect();
        assert_eq!(ids, ["fine"]);
        assert_eq!(read.warnings.len(), cases.len());
        for ((record, key), w) in cases.iter().zip(&read.warnings) {
            assert!(
                w.problem.starts_with(&format!("{key} = ")),
                "{}: {w}",
                record.game_id
            );
            assert_eq!(w.game_id.as_deref(), Some(record.game_id.as_str()));
        }
        // The writer's start-up scan knows these games too, and never logs them again.
        let mut log = ResultsLog::open(&path).unwrap();
        assert!(
            !log.append(&sample_record("huge-rating", Outcome::Win))
                .unwrap()
        );
    }
}
