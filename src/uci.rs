//! `ladder uci`: the engine over the UCI protocol on stdin/stdout.
//!
//! The main thread reads commands and owns the session state (options, position, game seed);
//! a worker thread owns the [`Engine`] and runs one search at a time, so `stop`, `isready` and
//! `quit` are answered while it thinks. Bad input never changes the state: it is answered with
//! `info string error: ...` and the previous position and options stay in force.
//!
//! Strength: option `Level` (a string holding a decimal number, because UCI has no float type;
//! `0` = full strength) or `UCI_LimitStrength` + `UCI_Elo` (mapped to a level through the
//! coefficients' ratings table) select a level. At a level the node budget, noise and hash come
//! from [`LevelParams`], with the endgame scaling of the current position; `go nodes`/`depth`
//! and the clock can only lower that budget.
//!
//! Evaluation at full strength: option `Network` picks a built-in network (0 = the hand-crafted
//! evaluation), and `EvalFile` a network file that `ladder tune net` wrote, which wins over
//! `Network` while it is set: a candidate plays at the clock before it is built in.

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Color, Move, Position};

use crate::engine::evaluator::SHIPPED_NETWORK;
use crate::engine::nnue::Network;
use crate::engine::weights::SHIPPED_VERSION;
use crate::engine::{
    Engine, Evaluator, Game, Limits, SearchConstants, SearchInfo, SearchObserver, SearchParams,
};
use crate::levels::{Coefficients, LevelParams, MAX_HASH_MB};
use crate::player::LevelPlayer;
use crate::player::deadline::{Deadline, TimeBudget};

/// `ladder uci` options.
#[derive(Debug, clap::Args)]
pub struct UciArgs {}

pub fn run(_args: UciArgs) -> anyhow::Result<()> {
    let output = Output::new(std::io::stdout());
    serve(std::io::stdin().lock(), output);
    Ok(())
}

/// Speaks UCI until `quit` or the end of `input`; every answer goes to `output`.
pub fn serve<R: BufRead>(input: R, output: Output) {
    let mut input = input;
    let mut session = Session::new(output);
    let mut raw = Vec::new();
    loop {
        raw.clear();
        // Bytes, not `lines()`: one line that is not UTF-8 is one bad command, not the end of
        // the session. Only the end of input or a broken pipe ends it.
        match input.read_until(b'\n', &mut raw) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let Ok(line) = std::str::from_utf8(&raw) else {
            session.output.error("the line is not valid UTF-8; ignored");
            continue;
        };
        let line = line.trim_end_matches(['\n', '\r']);
        if session.handle(line) == Flow::Quit {
            break;
        }
    }
    session.worker.shutdown();
}

/// A line-oriented, thread-shared writer: each line is written and flushed whole, so the
/// worker's `info`/`bestmove` lines never interleave with the main thread's answers.
#[derive(Clone)]
pub struct Output(Arc<Mutex<Box<dyn Write + Send>>>);

impl Output {
    pub fn new(writer: impl Write + Send + 'static) -> Output {
        Output(Arc::new(Mutex::new(Box::new(writer))))
    }

    fn line(&self, text: &str) {
        let mut writer = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // A GUI that closed our stdout also closes our stdin soon; the read loop then ends, so a
        // failed write needs no handling of its own.
        let written = writeln!(writer, "{text}").and_then(|()| writer.flush());
        drop(written);
    }

    fn error(&self, message: &str) {
        self.line(&format!("info string error: {message}"));
    }
}

/// Levels above this are far past full strength anyway (nodes are capped by `max_nodes`).
const MAX_LEVEL: f64 = 100.0;
const DEFAULT_HASH_MB: usize = 16;
/// The largest `Seed` a GUI can hold in a 32-bit spin control.
const MAX_SEED: u64 = i32::MAX as u64;
const DEFAULT_OVERHEAD_MS: u64 = 50;
const MAX_OVERHEAD_MS: u64 = 5000;
/// Names accepted for the built-in coefficients in the `Coefficients` option.
const BUILTIN: &str = "<built-in>";

/// The options a GUI can set.
#[derive(Clone, Debug)]
struct Options {
    /// 0 = full strength.
    level: f64,
    /// 0 = a fresh random seed per game.
    seed: u64,
    hash_mb: usize,
    chess960: bool,
    limit_strength: bool,
    elo: u32,
    move_overhead_ms: u64,
    /// The evaluation at full strength: 0 the hand-crafted one, otherwise a built-in network.
    network: u32,
    /// A network file (`EvalFile`), read when set; it wins over `network`.
    eval_file: Option<Arc<Network>>,
    /// The search constants at full strength: the shipped ones, or a file `ladder tune
    /// search` wrote (`SearchFile`), so a tuned or trial set plays at a real clock.
    search_constants: SearchConstants,
    coefficients: Arc<Coefficients>,
    coefficients_source: String,
}

impl Options {
    fn new() -> Options {
        let coefficients = Coefficients::builtin();
        let (min_elo, max_elo) = elo_range(&coefficients);
        Options {
            level: 0.0,
            seed: 0,
            hash_mb: DEFAULT_HASH_MB,
            chess960: false,
            limit_strength: false,
            elo: 1500u32.clamp(min_elo, max_elo),
            move_overhead_ms: DEFAULT_OVERHEAD_MS,
            network: 0,
            eval_file: None,
            search_constants: SearchConstants::shipped(),
            coefficients: Arc::new(coefficients),
            coefficients_source: BUILTIN.to_string(),
        }
    }

    /// The level in force: `UCI_LimitStrength` wins over `Level`; `None` is full strength.
    fn effective_level(&self) -> Result<Option<f64>, String> {
        if self.limit_strength {
            return self
                .coefficients
                .level_for_rating(f64::from(self.elo))
                .map(Some)
                .ok_or_else(|| {
                    format!(
                        "UCI_LimitStrength: coefficients {} have no ratings table",
                        self.coefficients_source
                    )
                });
        }
        Ok((self.level > 0.0).then_some(self.level))
    }
}

/// The `UCI_Elo` range: the lowest and highest rating in the coefficients' table.
fn elo_range(coefficients: &Coefficients) -> (u32, u32) {
    let ratings: Vec<f64> = coefficients
        .rated_levels()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    let min = ratings.iter().copied().fold(f64::INFINITY, f64::min);
    let max = ratings.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if min.is_finite() && max.is_finite() {
        (min.round().max(0.0) as u32, max.round().max(0.0) as u32)
    } else {
        (0, 4000)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    Continue,
    Quit,
}

/// The main thread's state.
struct Session {
    options: Options,
    game: Game,
    /// Seeds all evaluation noise of the current game.
    game_seed: u64,
    output: Output,
    worker: Worker,
}

impl Session {
    fn new(output: Output) -> Session {
        let options = Options::new();
        Session {
            game_seed: fresh_seed(options.seed),
            options,
            game: Game::startpos(),
            worker: Worker::spawn(output.clone()),
            output,
        }
    }

    fn handle(&mut self, line: &str) -> Flow {
        let line = line.trim();
        let (command, rest) = match line.split_once(char::is_whitespace) {
            Some((command, rest)) => (command, rest.trim()),
            None => (line, ""),
        };
        match command {
            "" => {}
            "uci" => self.identify(),
            "isready" => self.output.line("readyok"),
            "ucinewgame" => self.new_game(),
            "setoption" => {
                if let Err(e) = self.set_option(rest) {
                    self.output.error(&e);
                }
            }
            "position" => match parse_position(rest, self.options.chess960) {
                Ok(game) => self.game = game,
                Err(e) => self.output.error(&e),
            },
            "go" => self.go(rest),
            "stop" => self.worker.stop.raise(),
            "quit" => return Flow::Quit,
            // Accepted and ignored: we have no debug output, need no registration and do not ponder.
            "debug" | "register" | "ponderhit" => {}
            other => self.output.error(&format!("unknown command {other:?}")),
        }
        Flow::Continue
    }

    fn identify(&self) {
        let (min_elo, max_elo) = elo_range(&self.options.coefficients);
        let lines = [
            format!("id name ladder {}", env!("CARGO_PKG_VERSION")),
            "id author the ladder authors".to_string(),
            "option name Level type string default 0".to_string(),
            format!("option name Seed type spin default 0 min 0 max {MAX_SEED}"),
            "option name GameSeed type string default 0".to_string(),
            format!("option name Hash type spin default {DEFAULT_HASH_MB} min 1 max {MAX_HASH_MB}"),
            "option name Clear Hash type button".to_string(),
            "option name Threads type spin default 1 min 1 max 1".to_string(),
            format!(
                "option name Move Overhead type spin default {DEFAULT_OVERHEAD_MS} min 0 max {MAX_OVERHEAD_MS}"
            ),
            format!("option name Network type spin default 0 min 0 max {SHIPPED_NETWORK}"),
            format!("option name EvalFile type string default {BUILTIN}"),
            format!("option name SearchFile type string default {BUILTIN}"),
            "option name UCI_Chess960 type check default false".to_string(),
            "option name UCI_LimitStrength type check default false".to_string(),
            format!(
                "option name UCI_Elo type spin default {} min {min_elo} max {max_elo}",
                self.options.elo
            ),
            format!("option name Coefficients type string default {BUILTIN}"),
            "uciok".to_string(),
        ];
        for line in lines {
            self.output.line(&line);
        }
    }

    fn new_game(&mut self) {
        self.game = Game::startpos();
        self.game_seed = fresh_seed(self.options.seed);
        self.worker.send(Job::NewGame);
    }

    /// Applies `name <id> [value <x>]`; on error nothing changes.
    fn set_option(&mut self, args: &str) -> Result<(), String> {
        let (name, value) = parse_setoption(args)?;
        let mut options = self.options.clone();
        let value_str = value.as_deref().unwrap_or("");
        let missing = || format!("option {name:?} needs a value");
        match name.to_ascii_lowercase().as_str() {
            "level" => {
                let level: f64 = value_str
                    .parse()
                    .map_err(|_| format!("Level {value_str:?} is not a number"))?;
                if !(level.is_finite() && (0.0..=MAX_LEVEL).contains(&level)) {
                    return Err(format!(
                        "Level {value_str:?} out of range (0 = full strength, up to {MAX_LEVEL})"
                    ));
                }
                options.level = level;
            }
            "seed" => {
                options.seed = parse_spin(&name, value.as_deref(), 0, MAX_SEED)?;
            }
            // A recorded game's seed (the `seed` of a results line or the `Seed` of a PGN) is
            // a full 64-bit number, more than a GUI's spin control holds: this string option
            // takes it, so that game replays move for move.
            "gameseed" => {
                options.seed = value_str.trim().parse::<u64>().map_err(|_| {
                    format!("GameSeed {value_str:?} is not a whole number up to 2^64-1")
                })?;
            }
            "hash" => {
                options.hash_mb =
                    parse_spin(&name, value.as_deref(), 1, MAX_HASH_MB as u64)? as usize;
            }
            "clear hash" => self.worker.send(Job::ClearHash),
            "threads" => {
                parse_spin(&name, value.as_deref(), 1, 1)?;
            }
            "move overhead" => {
                options.move_overhead_ms = parse_spin(&name, value.as_deref(), 0, MAX_OVERHEAD_MS)?;
            }
            "network" => {
                options.network =
                    parse_spin(&name, value.as_deref(), 0, SHIPPED_NETWORK.into())? as u32;
            }
            "evalfile" => {
                let path = value.ok_or_else(missing)?;
                options.eval_file = if names_the_built_in(&path) {
                    None
                } else {
                    let bytes = std::fs::read(&path)
                        .map_err(|e| format!("EvalFile: cannot read {path}: {e}"))?;
                    let network = Network::from_bytes(&bytes)
                        .map_err(|e| format!("EvalFile: {path}: {e}"))?;
                    Some(Arc::new(network))
                };
            }
            "searchfile" => {
                let path = value.ok_or_else(missing)?;
                options.search_constants = if names_the_built_in(&path) {
                    SearchConstants::shipped()
                } else {
                    let text = std::fs::read_to_string(&path)
                        .map_err(|e| format!("SearchFile: cannot read {path}: {e}"))?;
                    SearchConstants::parse(&text).map_err(|e| format!("SearchFile: {path}: {e}"))?
                };
            }
            "uci_chess960" => options.chess960 = parse_check(&name, value.as_deref())?,
            "uci_limitstrength" => options.limit_strength = parse_check(&name, value.as_deref())?,
            "uci_elo" => {
                let (min, max) = elo_range(&options.coefficients);
                options.elo =
                    parse_spin(&name, value.as_deref(), u64::from(min), u64::from(max))? as u32;
            }
            "coefficients" => {
                let path = value.ok_or_else(missing)?;
                if names_the_built_in(&path) {
                    options.coefficients = Arc::new(Coefficients::builtin());
                    options.coefficients_source = BUILTIN.to_string();
                } else {
                    let loaded = Coefficients::load(std::path::Path::new(&path))
                        .map_err(|e| format!("Coefficients: {e}"))?;
                    options.coefficients = Arc::new(loaded);
                    options.coefficients_source = path;
                }
            }
            _ => return Err(format!("unknown option {name:?}")),
        }
        // A new non-zero Seed takes effect at once, so `setoption Seed` + `go` replays a game.
        if options.seed != self.options.seed {
            self.game_seed = fresh_seed(options.seed);
        }
        self.options = options;
        Ok(())
    }

    fn go(&mut self, args: &str) {
        if self.worker.searching.load(Ordering::SeqCst) {
            self.output
                .error("go while a search is running (send stop first)");
            return;
        }
        let started = Instant::now();
        let (go, problems) = parse_go(args);
        for problem in problems {
            self.output.error(&problem);
        }
        let level = match self.options.effective_level() {
            Ok(level) => level,
            Err(e) => {
                self.output.error(&e);
                (self.options.level > 0.0).then_some(self.options.level)
            }
        };
        let cap = Limits {
            nodes: go.nodes,
            depth: go.depth.map(|d| d.min(u64::from(u32::MAX)) as u32),
        };
        let mode = match level {
            Some(level) => {
                let level_params = LevelParams::new(&self.options.coefficients, level);
                let params = level_params.search_params(&self.game, self.game_seed);
                self.output.line(&format!(
                    "info string level {level} nodes {} noise {:.1} blind {:.3} hash {} seed {} coefficients v{}",
                    params.limits.nodes.unwrap_or(0),
                    params.noise.scale_cp,
                    params.blindness.probability,
                    level_params.hash_mb,
                    self.game_seed,
                    level_params.coefficients_version,
                ));
                SearchMode::Level {
                    params: level_params,
                    seed: self.game_seed,
                }
            }
            None => SearchMode::FullStrength {
                network: self.options.network,
                eval_file: self.options.eval_file.clone(),
                constants: self.options.search_constants.clone(),
                hash_mb: self.options.hash_mb,
            },
        };
        let budget = time_budget(&go, self.game.turn(), self.options.move_overhead_ms);
        self.worker.stop.lower();
        self.worker.searching.store(true, Ordering::SeqCst);
        self.worker.send(Job::Search(Box::new(SearchJob {
            game: self.game.clone(),
            mode,
            cap,
            budget,
            infinite: go.infinite,
            started,
        })));
    }
}

/// Whether a string option's value asks for the built-in choice again (GUIs send the default
/// back, or an empty value as `<empty>`).
fn names_the_built_in(path: &str) -> bool {
    path.is_empty() || path == BUILTIN || path == "<empty>"
}

/// The configured seed, or a fresh random one when it is 0.
fn fresh_seed(configured: u64) -> u64 {
    if configured != 0 {
        configured
    } else {
        // Never 0, so "0 = random" stays unambiguous in logs.
        rand::random::<u64>().max(1)
    }
}

/// Splits `name <id...> [value <x...>]`; names may contain spaces.
fn parse_setoption(args: &str) -> Result<(String, Option<String>), String> {
    let tokens: Vec<&str> = args.split_whitespace().collect();
    if tokens.first() != Some(&"name") {
        return Err(format!("setoption needs `name ...`, got {args:?}"));
    }
    let value_at = tokens.iter().position(|t| *t == "value");
    let name_end = value_at.unwrap_or(tokens.len());
    let name = tokens[1..name_end].join(" ");
    if name.is_empty() {
        return Err("setoption without an option name".to_string());
    }
    let value = value_at.map(|i| tokens[i + 1..].join(" "));
    Ok((name, value))
}

fn parse_spin(name: &str, value: Option<&str>, min: u64, max: u64) -> Result<u64, String> {
    let value = value.ok_or_else(|| format!("option {name:?} needs a value"))?;
    let n: u64 = value
        .parse()
        .map_err(|_| format!("{name} {value:?} is not a whole number"))?;
    if !(min..=max).contains(&n) {
        return Err(format!("{name} {n} out of range {min}..={max}"));
    }
    Ok(n)
}

fn parse_check(name: &str, value: Option<&str>) -> Result<bool, String> {
    match value.map(str::to_ascii_lowercase).as_deref() {
        Some("true") => Ok(true),
        Some("false") => Ok(false),
        other => Err(format!(
            "{name} must be true or false, got {:?}",
            other.unwrap_or("")
        )),
    }
}

/// `startpos [moves ...]` or `fen <fen> [moves ...]`, all or nothing.
fn parse_position(args: &str, chess960: bool) -> Result<Game, String> {
    let tokens: Vec<&str> = args.split_whitespace().collect();
    let moves_at = tokens.iter().position(|t| *t == "moves");
    let (setup, moves) = match moves_at {
        Some(i) => (&tokens[..i], &tokens[i + 1..]),
        None => (&tokens[..], &[][..]),
    };
    let fen = match setup {
        ["startpos"] => None,
        ["fen", fen @ ..] if !fen.is_empty() => Some(fen.join(" ")),
        _ => {
            return Err(format!(
                "position needs `startpos` or `fen <fen>`, got {args:?}"
            ));
        }
    };
    Game::from_uci_moves(fen.as_deref(), moves, chess960).map_err(|e| e.to_string())
}

/// The parameters of one `go` command.
#[derive(Clone, Debug, Default, PartialEq)]
struct Go {
    wtime: Option<u64>,
    btime: Option<u64>,
    winc: u64,
    binc: u64,
    movestogo: Option<u64>,
    depth: Option<u64>,
    nodes: Option<u64>,
    movetime: Option<u64>,
    infinite: bool,
}

/// Parses `go` arguments. Problems (a bad number, an unsupported keyword) are reported but do
/// not cancel the search: a GUI that sent `go` waits for a `bestmove`.
fn parse_go(args: &str) -> (Go, Vec<String>) {
    let mut go = Go::default();
    let mut problems = Vec::new();
    let mut tokens = args.split_whitespace().peekable();
    while let Some(token) = tokens.next() {
        let mut number = |tokens: &mut std::iter::Peekable<std::str::SplitWhitespace<'_>>| {
            let value = tokens.next();
            match value.map(str::parse::<i64>) {
                // Some GUIs send a negative clock once flagged; treat it as no time left.
                Some(Ok(n)) => Some(n.max(0) as u64),
                _ => {
                    problems.push(format!(
                        "go {token}: expected a number, got {:?}",
                        value.unwrap_or("")
                    ));
                    None
                }
            }
        };
        match token {
            "wtime" => go.wtime = number(&mut tokens),
            "btime" => go.btime = number(&mut tokens),
            "winc" => go.winc = number(&mut tokens).unwrap_or(0),
            "binc" => go.binc = number(&mut tokens).unwrap_or(0),
            "movestogo" => go.movestogo = number(&mut tokens),
            "depth" => go.depth = number(&mut tokens),
            "nodes" => go.nodes = number(&mut tokens),
            "movetime" => go.movetime = number(&mut tokens),
            "infinite" => go.infinite = true,
            "mate" => {
                number(&mut tokens);
                problems.push("go mate is not supported; searching normally".to_string());
            }
            "searchmoves" => {
                while tokens.peek().is_some_and(|t| t.parse::<UciMove>().is_ok()) {
                    tokens.next();
                }
                problems.push("go searchmoves is not supported; searching all moves".to_string());
            }
            "ponder" => problems.push("go ponder is not supported; searching now".to_string()),
            other => problems.push(format!("go: unknown parameter {other:?} ignored")),
        }
    }
    (go, problems)
}

/// Moves assumed left in the game when the GUI does not say (sudden death).
const DEFAULT_MOVES_TO_GO: u64 = 25;

/// Time for one move. With a clock: a target of remaining/moves-to-go plus most of the
/// increment, never more than half of what is left after the overhead (all but a tenth when
/// this is the last move before the time control); the soft limit, 0.6 of the target, is
/// scaled by the [`Deadline`]; the hard one is four targets. `movetime` is a hard limit, less
/// the overhead.
fn time_budget(go: &Go, turn: Color, overhead_ms: u64) -> TimeBudget {
    let mut soft: Option<u64> = None;
    let mut hard: Option<u64> = None;
    let (time, inc) = match turn {
        Color::White => (go.wtime, go.winc),
        Color::Black => (go.btime, go.binc),
    };
    if let Some(time) = time {
        let available = time.saturating_sub(overhead_ms);
        let moves_to_go = go.movestogo.unwrap_or(DEFAULT_MOVES_TO_GO).clamp(1, 50);
        // Saturating: a GUI may send any i64 of milliseconds.
        let cap = if moves_to_go == 1 {
            available.saturating_mul(9) / 10
        } else {
            available / 2
        };
        let target = (available / moves_to_go)
            .saturating_add(inc.saturating_mul(3) / 4)
            .min(cap);
        hard = Some(target.saturating_mul(4).min(cap));
        // Scaled after each iteration by how settled the search is (`soft_scale`, 0.35 to 3.5;
        // about 0.8 for a typical settled move): a little above the old fixed half of the
        // target, so that time moves from settled moves to unsettled ones.
        soft = Some(target.saturating_mul(3) / 5);
    }
    if let Some(movetime) = go.movetime {
        let limit = movetime - overhead_ms.min(movetime / 2);
        hard = Some(hard.map_or(limit, |h| h.min(limit)));
    }
    TimeBudget {
        soft: soft.map(Duration::from_millis),
        hard: hard.map(Duration::from_millis),
    }
}

/// A stop flag the worker can also wait on (for `go infinite`, which must not answer before
/// `stop`).
#[derive(Default)]
struct StopSignal {
    /// Shared with the search's [`Deadline`].
    raised: Arc<AtomicBool>,
    lock: Mutex<()>,
    changed: Condvar,
}

impl StopSignal {
    fn raise(&self) {
        self.raised.store(true, Ordering::SeqCst);
        // Taking the lock orders this notify after a waiter's check-then-wait.
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.changed.notify_all();
    }

    fn lower(&self) {
        self.raised.store(false, Ordering::SeqCst);
    }

    fn wait(&self) {
        let mut guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        while !self.raised.load(Ordering::SeqCst) {
            guard = self.changed.wait(guard).unwrap_or_else(|p| p.into_inner());
        }
    }
}

enum Job {
    NewGame,
    ClearHash,
    Search(Box<SearchJob>),
}

/// Who searches: a level (the daemon's own [`LevelPlayer`], kept for the whole game), or the
/// engine at full strength.
enum SearchMode {
    Level {
        params: LevelParams,
        seed: u64,
    },
    FullStrength {
        hash_mb: usize,
        network: u32,
        eval_file: Option<Arc<Network>>,
        constants: SearchConstants,
    },
}

struct SearchJob {
    game: Game,
    mode: SearchMode,
    /// `go nodes` / `go depth`: they may only shorten a level's search.
    cap: Limits,
    budget: TimeBudget,
    infinite: bool,
    started: Instant,
}

/// The search thread and the handles the main thread keeps on it.
struct Worker {
    jobs: Option<Sender<Job>>,
    stop: Arc<StopSignal>,
    /// True from `go` until just before `bestmove` is written.
    searching: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Worker {
    fn spawn(output: Output) -> Worker {
        let (jobs, receiver) = std::sync::mpsc::channel();
        let stop = Arc::new(StopSignal::default());
        let searching = Arc::new(AtomicBool::new(false));
        let handle = {
            let (stop, searching) = (stop.clone(), searching.clone());
            std::thread::Builder::new()
                .name("uci-search".to_string())
                .spawn(move || work(receiver, &stop, &searching, &output))
                .expect("spawn the search thread")
        };
        Worker {
            jobs: Some(jobs),
            stop,
            searching,
            handle: Some(handle),
        }
    }

    fn send(&self, job: Job) {
        if let Some(jobs) = &self.jobs {
            // The worker only exits once `jobs` is dropped, so sending cannot fail before that.
            jobs.send(job).expect("the search thread is running");
        }
    }

    /// Stops a running search (it still prints its `bestmove`) and joins the thread.
    fn shutdown(&mut self) {
        self.stop.raise();
        self.jobs = None;
        if let Some(handle) = self.handle.take() {
            // A panic in the search has already been reported on stderr by the panic hook.
            drop(handle.join());
        }
    }
}

fn work(jobs: Receiver<Job>, stop: &StopSignal, searching: &AtomicBool, output: &Output) {
    let mut engine = Engine::new(DEFAULT_HASH_MB);
    // The level player of the current game: made at its first search, dropped by
    // `ucinewgame`, `Clear Hash` or a change of level or seed.
    let mut player: Option<LevelPlayer> = None;
    for job in jobs {
        match job {
            Job::NewGame => {
                engine.new_game();
                player = None;
            }
            Job::ClearHash => {
                let mb = engine.hash_mb();
                engine.set_hash_mb(mb);
                player = None;
            }
            Job::Search(job) => {
                let best = search(&mut engine, &mut player, &job, stop, output);
                if job.infinite {
                    stop.wait();
                }
                // Cleared before `bestmove` is written: a GUI may send the next `go` as soon as
                // it reads that line.
                searching.store(false, Ordering::SeqCst);
                let best = best.map_or("0000".to_string(), |m| job.game.to_uci(m));
                output.line(&format!("bestmove {best}"));
            }
        }
    }
}

fn search(
    engine: &mut Engine,
    player: &mut Option<LevelPlayer>,
    job: &SearchJob,
    stop: &StopSignal,
    output: &Output,
) -> Option<Move> {
    if job.game.legal_moves().is_empty() {
        let score = if job.game.position().is_check() {
            "mate 0"
        } else {
            "cp 0"
        };
        output.line(&format!("info depth 0 score {score}"));
        return None;
    }
    let mut observer = UciObserver {
        deadline: Deadline::new(job.started, job.budget).with_stop_flag(stop.raised.clone()),
        mode: job.game.castling_mode(),
        output,
        last_reported: None,
    };
    let result = match &job.mode {
        SearchMode::Level { params, seed } => {
            let same_game = player
                .as_ref()
                .is_some_and(|p| p.params() == params && p.seed() == *seed);
            if !same_game {
                *player = Some(LevelPlayer::new(params.clone(), *seed));
            }
            let player = player.as_mut().expect("just made");
            player.choose_within(&job.game, job.cap, &mut observer)
        }
        SearchMode::FullStrength {
            hash_mb,
            network,
            eval_file,
            constants,
        } => {
            if engine.hash_mb() != *hash_mb {
                engine.set_hash_mb(*hash_mb);
            }
            let evaluator = match eval_file {
                Some(file) => Evaluator::Network(file.clone()),
                None => Evaluator::of_versions(SHIPPED_VERSION, *network)
                    .expect("the option's range holds only built-in networks"),
            };
            if *engine.evaluator() != evaluator {
                engine.set_evaluator(evaluator);
            }
            engine.set_search_constants(constants.clone());
            let params = SearchParams::full_strength(job.cap);
            engine.search(&job.game, &params, &mut observer)
        }
    };
    // The last line must carry the final node count, which a stopped iteration may not have
    // reported.
    if observer.last_reported != Some(result.nodes) {
        let info = SearchInfo {
            depth: result.depth,
            seldepth: result.depth,
            score: result.score,
            nodes: result.nodes,
            pv: result.pv.clone(),
            best_move_nodes: 0,
            pass_nodes: 0,
        };
        observer.report(&info);
    }
    result.best_move
}

/// Stops the search on `stop` or time (its [`Deadline`]), and prints one `info` line per
/// iteration.
struct UciObserver<'a> {
    deadline: Deadline,
    mode: CastlingMode,
    output: &'a Output,
    last_reported: Option<u64>,
}

impl UciObserver<'_> {
    fn report(&mut self, info: &SearchInfo) {
        let elapsed = self.deadline.started().elapsed();
        let ms = elapsed.as_millis() as u64;
        let nps = info.nodes * 1000 / ms.max(1);
        let score = info.score.to_uci();
        let mut line = format!(
            "info depth {} seldepth {} score {score} nodes {} nps {nps} time {ms}",
            info.depth, info.seldepth, info.nodes
        );
        if !info.pv.is_empty() {
            line.push_str(" pv");
            for m in &info.pv {
                line.push(' ');
                line.push_str(&UciMove::from_move(*m, self.mode).to_string());
            }
        }
        self.output.line(&line);
        self.last_reported = Some(info.nodes);
    }
}

impl SearchObserver for UciObserver<'_> {
    fn should_stop(&mut self, nodes: u64) -> bool {
        self.deadline.should_stop(nodes)
    }

    fn on_iteration(&mut self, info: &SearchInfo) {
        self.report(info);
        self.deadline.on_iteration(info);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setoption_names_may_contain_spaces() {
        assert_eq!(
            parse_setoption("name Move Overhead value 100").unwrap(),
            ("Move Overhead".to_string(), Some("100".to_string()))
        );
        assert_eq!(
            parse_setoption("name Clear Hash").unwrap(),
            ("Clear Hash".to_string(), None)
        );
        assert!(parse_setoption("value 3").is_err());
    }

    #[test]
    fn position_is_all_or_nothing() {
        let game = parse_position("startpos moves e2e4 e7e5", false).unwrap();
        assert_eq!(game.moves().len(), 2);
        let fen = "fen 8/8/8/4k3/8/8/8/3QK3 w - - 0 1 moves d1d5";
        assert_eq!(parse_position(fen, false).unwrap().moves().len(), 1);
        assert!(parse_position("startpos moves e2e4 e2e4", false).is_err());
        assert!(parse_position("fen 9/8 w - - 0 1", false).is_err());
        assert!(parse_position("", false).is_err());
    }

    #[test]
    fn go_parses_limits_and_reports_problems() {
        let (go, problems) = parse_go("wtime 60000 btime -20 winc 1000 movestogo 10 nodes 500");
        assert_eq!(go.wtime, Some(60000));
        assert_eq!(go.btime, Some(0));
        assert_eq!(go.winc, 1000);
        assert_eq!(go.movestogo, Some(10));
        assert_eq!(go.nodes, Some(500));
        assert!(problems.is_empty());
        let (go, problems) = parse_go("depth x searchmoves e2e4 d2d4 infinite");
        assert_eq!(go.depth, None);
        assert!(go.infinite);
        assert_eq!(problems.len(), 2, "{problems:?}");
    }

    #[test]
    fn time_budget_stays_well_inside_the_clock() {
        let go = |wtime, winc, movestogo| Go {
            wtime: Some(wtime),
            winc,
            movestogo,
            ..Go::default()
        };
        for (time, inc, mtg) in [
            (180_000, 0, None),
            (1_000, 2_000, None),
            (60, 0, None),
            (5_000, 0, Some(1)),
            (300_000, 3_000, Some(40)),
        ] {
            let budget = time_budget(&go(time, inc, mtg), Color::White, 50);
            let hard = budget.hard.unwrap().as_millis() as u64;
            let soft = budget.soft.unwrap().as_millis() as u64;
            assert!(soft <= hard, "{time} {inc}: soft {soft} > hard {hard}");
            assert!(
                hard <= time.saturating_sub(50) * 9 / 10,
                "{time}+{inc}: hard {hard}"
            );
        }
        // Any i64 a GUI sends is a clock: no overflow, and a huge clock is a long search.
        for (time, inc, mtg) in [
            (2_049_638_230_412_172_452, 0, Some(1)),
            (60_000, 6_148_914_691_236_517_206, None),
            (u64::MAX, u64::MAX, Some(1)),
        ] {
            let budget = time_budget(&go(time, inc, mtg), Color::White, 50);
            assert!(
                budget.hard.unwrap() >= Duration::from_secs(10),
                "{time}+{inc}: {budget:?}"
            );
        }
        // 3+0 blitz at the start: a few seconds, not a tenth of a second nor half the clock.
        let blitz = time_budget(&go(180_000, 0, None), Color::White, 50);
        let hard = blitz.hard.unwrap();
        assert!(hard >= Duration::from_secs(5) && hard <= Duration::from_secs(60));
        // Black's clock is the one that counts when Black is to move.
        let black = Go {
            wtime: Some(1_000_000),
            btime: Some(1_000),
            ..Go::default()
        };
        assert!(time_budget(&black, Color::Black, 50).hard.unwrap() <= Duration::from_millis(500));
        let movetime = Go {
            movetime: Some(1000),
            ..Go::default()
        };
        let budget = time_budget(&movetime, Color::White, 50);
        assert_eq!(budget.hard, Some(Duration::from_millis(950)));
        assert_eq!(budget.soft, None);
    }
}
