//! A UCI client for external engines over tokio child processes: what an external engine's
//! seat ([`super::seat`]) and the arena's judge talk through. Every exchange has a deadline: an
//! engine that does not start, hangs or dies surfaces as a [`UciError`] and the process is
//! killed when the client is dropped, so a fresh one can start for the next game.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::time::{Instant, timeout_at};

use crate::engine::Score;

/// How to start an engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// `setoption` pairs sent after `uciok`, in order.
    pub options: Vec<(String, String)>,
}

/// What went wrong talking to an engine.
#[derive(Debug, thiserror::Error)]
pub enum UciError {
    #[error("cannot start {program}: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("no answer to `{request}` within {}", crate::logging::show_duration(*.waited))]
    Timeout { request: String, waited: Duration },
    #[error("the engine exited (waiting for the answer to `{request}`)")]
    Exited { request: String },
    #[error("i/o error talking to the engine: {0}")]
    Io(#[from] std::io::Error),
}

/// What a search answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Analysis {
    pub best: String,
    pub score: Option<Score>,
    /// With `MultiPV` above 1: the best exact score and first move of each line (by rank, best
    /// first) of the deepest iteration that reported it; empty when the engine sent none.
    pub lines: Vec<PvLine>,
}

/// One line of a `MultiPV` search.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PvLine {
    /// The line's first move, as sent.
    pub first: String,
    pub score: Score,
}

/// The line of an `info` line that reports an exact score with a PV: (rank, line).
fn parse_line(line: &str) -> Option<(usize, PvLine)> {
    let words: Vec<&str> = line.split_whitespace().collect();
    if words.first() != Some(&"info") {
        return None;
    }
    let after = |key: &str| {
        words
            .iter()
            .position(|w| *w == key)
            .and_then(|i| words.get(i + 1))
    };
    let rank = after("multipv").map_or(Some(1), |w| w.parse().ok())?;
    let i = words.iter().position(|w| *w == "score")?;
    if matches!(words.get(i + 3), Some(&"lowerbound") | Some(&"upperbound")) {
        return None;
    }
    let value: i32 = words.get(i + 2)?.parse().ok()?;
    let score = Score::from_uci(words.get(i + 1)?, value)?;
    let first = after("pv")?.to_string();
    Some((rank, PvLine { first, score }))
}

/// The score of an `info` line (of the first PV when several), and whether it is a bound.
fn parse_score(line: &str) -> Option<(Score, bool)> {
    let mut words = line.split_whitespace();
    if words.next() != Some("info") {
        return None;
    }
    let words: Vec<&str> = words.collect();
    if let Some(i) = words.iter().position(|w| *w == "multipv")
        && words.get(i + 1) != Some(&"1")
    {
        return None;
    }
    let i = words.iter().position(|w| *w == "score")?;
    let value: i32 = words.get(i + 2)?.parse().ok()?;
    let score = Score::from_uci(words.get(i + 1)?, value)?;
    let bound = matches!(words.get(i + 3), Some(&"lowerbound") | Some(&"upperbound"));
    Some((score, bound))
}

/// A running engine process.
pub struct UciEngine {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    /// `id name` from the engine, for PGN headers and logs.
    pub id_name: Option<String>,
}

impl UciEngine {
    /// Starts the engine, completes the `uci` handshake, sets the options and waits until it
    /// is ready, all within `startup`.
    pub async fn start(command: &EngineCommand, startup: Duration) -> Result<UciEngine, UciError> {
        let mut child = Command::new(&command.program)
            .args(&command.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            // A group of its own: the Ctrl-C typed at `ladder arena` or the calibration loop
            // (sent to the terminal's whole foreground group) must reach ladder alone, which
            // finishes the games in progress; an anchor killed by it would lose them instead.
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| UciError::Spawn {
                program: command.program.display().to_string(),
                source,
            })?;
        let stdin = child.stdin.take().expect("stdin was piped");
        let stdout = child.stdout.take().expect("stdout was piped");
        let mut engine = UciEngine {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
            id_name: None,
        };
        let deadline = Instant::now() + startup;
        engine.send("uci").await?;
        let mut id_name = None;
        engine
            .read_until("uci", deadline, |line| {
                if let Some(name) = line.strip_prefix("id name ") {
                    id_name = Some(name.trim().to_string());
                }
                line == "uciok"
            })
            .await?;
        engine.id_name = id_name;
        for (name, value) in &command.options {
            engine
                .send(&format!("setoption name {name} value {value}"))
                .await?;
        }
        engine.ready(deadline).await?;
        Ok(engine)
    }

    /// Tells the engine a new game starts and waits until it is ready.
    pub async fn new_game(&mut self, wait: Duration) -> Result<(), UciError> {
        self.send("ucinewgame").await?;
        self.ready(Instant::now() + wait).await
    }

    /// Sends `position` and `go` commands, waiting at most `wait`, and returns the move of
    /// `bestmove` (as sent; the caller checks it) with the last score the engine reported
    /// (exact scores preferred over bounds), from the side to move's point of view.
    pub async fn analyse(
        &mut self,
        position: &str,
        go: &str,
        wait: Duration,
    ) -> Result<Analysis, UciError> {
        let (mut exact, mut bound) = (None, None);
        let mut lines: Vec<PvLine> = Vec::new();
        let best = self
            .search(position, go, wait, |line| {
                if let Some((rank, pv)) = parse_line(line)
                    && rank >= 1
                    && rank <= lines.len() + 1
                {
                    // Rank 1 starts an iteration: the lines below it are of the last one until
                    // the new iteration reports them again.
                    if rank == lines.len() + 1 {
                        lines.push(pv);
                    } else {
                        lines[rank - 1] = pv;
                    }
                }
                if let Some((score, is_bound)) = parse_score(line) {
                    if is_bound {
                        bound = Some(score);
                    } else {
                        exact = Some(score);
                    }
                }
            })
            .await?;
        Ok(Analysis {
            best,
            score: exact.or(bound),
            lines,
        })
    }

    /// One search: `position`, `go`, every line until `bestmove` shown to `info`, the move of
    /// `bestmove`.
    async fn search(
        &mut self,
        position: &str,
        go: &str,
        wait: Duration,
        mut info: impl FnMut(&str),
    ) -> Result<String, UciError> {
        let deadline = Instant::now() + wait;
        self.send(position).await?;
        self.send(go).await?;
        let line = self
            .read_until(go, deadline, |line| {
                info(line);
                line.starts_with("bestmove")
            })
            .await?;
        Ok(line
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_string())
    }

    /// Asks the engine to quit and gives it a moment before the drop kills it.
    pub async fn quit(mut self) {
        if self.send("quit").await.is_ok() {
            let _exited = tokio::time::timeout(Duration::from_millis(500), self.child.wait()).await;
        }
    }

    async fn ready(&mut self, deadline: Instant) -> Result<(), UciError> {
        self.send("isready").await?;
        self.read_until("isready", deadline, |line| line == "readyok")
            .await
            .map(drop)
    }

    async fn send(&mut self, line: &str) -> Result<(), UciError> {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        let written = async {
            self.stdin.write_all(&bytes).await?;
            self.stdin.flush().await
        };
        match written.await {
            Ok(()) => Ok(()),
            // A closed pipe means the engine is gone; say so rather than "broken pipe".
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(UciError::Exited {
                request: line.to_string(),
            }),
            Err(e) => Err(UciError::Io(e)),
        }
    }

    /// Reads lines until `done` accepts one (returned), the engine exits or `deadline` passes.
    async fn read_until(
        &mut self,
        request: &str,
        deadline: Instant,
        mut done: impl FnMut(&str) -> bool,
    ) -> Result<String, UciError> {
        let started = Instant::now();
        loop {
            match timeout_at(deadline, self.lines.next_line()).await {
                Err(_) => {
                    return Err(UciError::Timeout {
                        request: request.to_string(),
                        waited: started.elapsed(),
                    });
                }
                Ok(Ok(None)) => {
                    return Err(UciError::Exited {
                        request: request.to_string(),
                    });
                }
                Ok(Err(e)) => return Err(UciError::Io(e)),
                Ok(Ok(Some(line))) => {
                    let line = line.trim();
                    if done(line) {
                        return Ok(line.to_string());
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The process group of process `pid` (the fifth field of /proc/PID/stat).
    fn process_group(pid: &str) -> String {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let after_name = &stat[stat.rfind(')').unwrap() + 1..];
        after_name.split_whitespace().nth(2).unwrap().to_string()
    }

    #[tokio::test]
    async fn an_engine_is_spared_the_ctrl_c_meant_for_ladder() {
        let responder = "while read line; do case $line in uci) echo uciok;; \
                         isready) echo readyok;; quit) exit 0;; esac; done";
        let command = EngineCommand {
            program: PathBuf::from("sh"),
            args: vec!["-c".into(), responder.into()],
            options: Vec::new(),
        };
        let engine = UciEngine::start(&command, Duration::from_secs(10))
            .await
            .unwrap();
        let pid = engine.child.id().unwrap().to_string();
        // Ctrl-C goes to the terminal's foreground group, ours: the engine is not in it.
        assert_ne!(process_group(&pid), process_group("self"));
        engine.quit().await;
    }

    #[test]
    fn scores_parse_from_info_lines() {
        assert_eq!(
            parse_score("info depth 10 seldepth 14 multipv 1 score cp -35 nodes 9 pv e2e4"),
            Some((Score::Cp(-35), false))
        );
        assert_eq!(
            parse_score("info depth 9 score mate -2 upperbound nodes 5"),
            Some((Score::Mate(-2), true))
        );
        assert_eq!(parse_score("info depth 9 multipv 2 score cp 10"), None);
        assert_eq!(parse_score("info string NNUE enabled"), None);
        assert_eq!(parse_score("bestmove e2e4"), None);
    }

    #[test]
    fn multipv_lines_parse_with_rank_score_and_first_move() {
        assert_eq!(
            parse_line("info depth 8 seldepth 9 multipv 2 score cp -35 nodes 9 pv e2e4 e7e5"),
            Some((
                2,
                PvLine {
                    first: "e2e4".to_string(),
                    score: Score::Cp(-35)
                }
            ))
        );
        // Without multipv: the first line; bounds and lines without a PV say nothing.
        assert_eq!(
            parse_line("info depth 3 score mate 2 pv d1h5").map(|(r, _)| r),
            Some(1)
        );
        assert_eq!(
            parse_line("info depth 9 multipv 1 score cp 5 lowerbound pv e2e4"),
            None
        );
        assert_eq!(
            parse_line("info depth 9 multipv 1 score cp 5 nodes 3"),
            None
        );
    }
}
