//! The players of a match (`ladder arena`): who they are ([`PlayerSpec`]: a name, a known
//! rating for an anchor, and the [`PlayerKind`] that sits at the board), how the command line
//! names them (`--level`, `--engine`, `--lichess-ai`), and the [`Roster`] that seats them game
//! after game. Before the first game every external engine the games need is started once
//! ([`Roster::start_engines`]): one that cannot start stops the match before anything is
//! written. External processes are reused between games of the same player; one that crashes,
//! hangs or plays an illegal move in a game is dropped and a fresh one starts for its next game.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::levels::LevelParams;
use crate::player::seat::{Fault, MoveLimits, MoverStyle, PlayerKind, Seat, Seating};
use crate::player::uci_engine::{EngineCommand, UciEngine, UciError};

/// A player of the match.
#[derive(Clone, Debug, PartialEq)]
pub struct PlayerSpec {
    pub name: String,
    /// Known rating of an anchor (Stockfish `UCI_Elo`, a Lichess AI nominal rating).
    pub rating: Option<f64>,
    pub kind: PlayerKind,
}

impl PlayerSpec {
    pub fn level(level: f64) -> PlayerSpec {
        PlayerSpec {
            name: format!("level-{}", crate::levels::level_key(level)),
            rating: None,
            kind: PlayerKind::Level(level),
        }
    }

    /// A built-in mover under its own name (`random`, `greedy`).
    pub fn mover(style: MoverStyle) -> PlayerSpec {
        PlayerSpec {
            name: style.name().to_string(),
            rating: None,
            kind: PlayerKind::Mover(style),
        }
    }

    pub fn level_number(&self) -> Option<f64> {
        match self.kind {
            PlayerKind::Level(l) => Some(l),
            PlayerKind::Uci { .. } | PlayerKind::Mover(_) => None,
        }
    }
}

/// Parses `name=sf1500,cmd=/usr/games/stockfish,option.UCI_Elo=1500,rating=1500` (also `arg=`
/// repeated for program arguments, and `nodes=`, `depth=`, `movetime=` per-move limits).
pub fn parse_engine(text: &str) -> Result<PlayerSpec, String> {
    let mut name = None;
    let mut program = None;
    let mut args = Vec::new();
    let mut options = Vec::new();
    let mut rating = None;
    let mut limits = MoveLimits::default();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = part
            .split_once('=')
            .ok_or_else(|| format!("engine spec {text:?}: {part:?} is not key=value"))?;
        let number = |what: &str| -> Result<u64, String> {
            value
                .parse()
                .map_err(|_| format!("engine spec: {what} {value:?} is not a whole number"))
        };
        match key.trim() {
            "name" => name = Some(value.to_string()),
            "cmd" => program = Some(PathBuf::from(value)),
            "arg" => args.push(value.to_string()),
            "rating" => {
                rating = Some(
                    value
                        .parse::<f64>()
                        .ok()
                        .filter(|r| r.is_finite())
                        .ok_or_else(|| format!("engine spec: rating {value:?} is not a number"))?,
                )
            }
            "nodes" => limits.nodes = Some(number("nodes")?),
            "depth" => limits.depth = Some(number("depth")? as u32),
            "movetime" => limits.movetime_ms = Some(number("movetime")?),
            k => match k.strip_prefix("option.") {
                Some(option) if !option.is_empty() => {
                    options.push((option.to_string(), value.to_string()))
                }
                _ => {
                    return Err(format!(
                        "engine spec: unknown key {k:?} (expected name, cmd, arg, option.NAME, \
                         rating, nodes, depth, movetime)"
                    ));
                }
            },
        }
    }
    let program = program.ok_or_else(|| format!("engine spec {text:?}: cmd= is required"))?;
    let name = name.unwrap_or_else(|| {
        program
            .file_name()
            .map_or("engine".to_string(), |f| f.to_string_lossy().into_owned())
    });
    Ok(PlayerSpec {
        name,
        rating,
        kind: PlayerKind::Uci {
            command: EngineCommand {
                program,
                args,
                options,
            },
            limits,
        },
    })
}

/// Lichess's AI levels 1-8 on Fairy-Stockfish: Skill Level, depth and movetime per move, and
/// the nominal rating Lichess shows for each.
const LICHESS_AI: [(i32, u32, u64, f64); 8] = [
    (-9, 5, 50, 800.0),
    (-5, 5, 100, 1100.0),
    (-1, 5, 150, 1400.0),
    (3, 5, 200, 1700.0),
    (7, 5, 300, 2000.0),
    (11, 8, 400, 2300.0),
    (16, 13, 500, 2700.0),
    (20, 22, 1000, 3000.0),
];

/// The preset reproducing Lichess AI level `level` (1-8) with Fairy-Stockfish at `program`.
pub fn lichess_ai(level: u32, program: &Path) -> Result<PlayerSpec, String> {
    let (skill, depth, movetime, rating) = *level
        .checked_sub(1)
        .and_then(|i| LICHESS_AI.get(i as usize))
        .ok_or_else(|| format!("Lichess AI level {level} does not exist (1-8)"))?;
    Ok(PlayerSpec {
        name: format!("lichess-ai-{level}"),
        rating: Some(rating),
        kind: PlayerKind::Uci {
            command: EngineCommand {
                program: program.to_path_buf(),
                args: Vec::new(),
                options: vec![("Skill Level".to_string(), skill.to_string())],
            },
            limits: MoveLimits {
                nodes: None,
                depth: Some(depth),
                movetime_ms: Some(movetime),
            },
        },
    })
}

/// The players of a match with their idle external engine processes.
pub struct Roster {
    pub players: Vec<PlayerSpec>,
    /// The coefficients, the match's per-move limits for external engines without their own,
    /// and the engines' timeouts.
    pub seating: Seating,
    /// Per player, processes of its engine waiting for its next game.
    idle: Vec<Mutex<Vec<UciEngine>>>,
}

impl Roster {
    pub fn new(players: Vec<PlayerSpec>, seating: Seating) -> Roster {
        let idle = players.iter().map(|_| Mutex::new(Vec::new())).collect();
        Roster {
            players,
            seating,
            idle,
        }
    }

    /// The level parameters of player `index`, if it is a level.
    pub fn level_params(&self, index: usize) -> Option<LevelParams> {
        let level = self.players[index].level_number()?;
        Some(LevelParams::new(&self.seating.coefficients, level))
    }

    /// Seats player `index` for a game whose own seed (this side's) is `seed`, an external
    /// engine in an idle process of its own when one waits ([`Seating::seat`]).
    pub async fn seat(&self, index: usize, seed: u64) -> Result<Seat, Fault> {
        let idle = self.idle[index].lock().expect("pool lock").pop();
        self.seating
            .seat(&self.players[index].kind, seed, idle)
            .await
    }

    /// Starts the external engine of each player in `needed` (indices; levels and movers need
    /// none), all at once, each within the seating's start-up timeout (`uci` answered by
    /// `uciok`, the options set, `isready` answered), and keeps each process idle for its
    /// player's first game. Called before the first game: an engine that cannot start would
    /// lose every game of the match by forfeit. When one or more cannot start, the error names
    /// each (its name and program, why) with how to install or fix it, and the processes that
    /// did start are stopped. Nothing random is drawn: the games and their seeds are those of
    /// the schedule whether this runs or not.
    pub async fn start_engines(
        &self,
        needed: impl IntoIterator<Item = usize>,
    ) -> anyhow::Result<()> {
        let mut indices: Vec<usize> = needed.into_iter().collect();
        indices.sort_unstable();
        indices.dedup();
        let startup = self.seating.timeouts.startup;
        let starts = indices
            .into_iter()
            .filter_map(|index| match &self.players[index].kind {
                PlayerKind::Uci { command, .. } => {
                    Some(async move { (index, command, UciEngine::start(command, startup).await) })
                }
                PlayerKind::Level(_) | PlayerKind::Mover(_) => None,
            });
        let mut failures = Vec::new();
        for (index, command, started) in futures_util::future::join_all(starts).await {
            match started {
                Ok(engine) => self.idle[index].lock().expect("pool lock").push(engine),
                Err(error) => failures.push(StartFailure {
                    name: self.players[index].name.clone(),
                    program: command.program.clone(),
                    error,
                }),
            }
        }
        if failures.is_empty() {
            return Ok(());
        }
        self.shutdown().await;
        Err(engines_not_starting(&failures))
    }

    /// Returns player `index`'s seat after its game: a healthy external process goes back to
    /// the pool.
    pub fn release(&self, index: usize, seat: Seat) {
        if let Some(engine) = seat.into_engine() {
            self.idle[index].lock().expect("pool lock").push(engine);
        }
    }

    /// Stops every idle external engine.
    pub async fn shutdown(&self) {
        let engines: Vec<UciEngine> = self
            .idle
            .iter()
            .flat_map(|pool| std::mem::take(&mut *pool.lock().expect("pool lock")))
            .collect();
        for engine in engines {
            engine.quit().await;
        }
    }
}

/// An external engine that did not start before the match.
struct StartFailure {
    name: String,
    program: PathBuf,
    error: UciError,
}

/// The error of engines that cannot start: each one named with its program and why (one
/// line of them), then what to do (`fix:` lines): the Debian package of a known engine that
/// is not there, else the path to correct or the handshake to check.
fn engines_not_starting(failures: &[StartFailure]) -> anyhow::Error {
    // The players of one program that fail alike (the Stockfish anchors, the Lichess AI
    // levels) are named together: `sf1350, sf1500 (/usr/games/stockfish): why`.
    let mut groups: Vec<(Vec<&str>, String, String)> = Vec::new();
    for f in failures {
        let program = f.program.display().to_string();
        let why = match &f.error {
            UciError::Spawn { source, .. } => source.to_string(),
            other => format!("started but is not a working UCI engine: {other}"),
        };
        match groups
            .iter_mut()
            .find(|(_, p, w)| *p == program && *w == why)
        {
            Some((names, _, _)) => names.push(&f.name),
            None => groups.push((vec![&f.name], program, why)),
        }
    }
    let described: Vec<String> = groups
        .iter()
        .map(|(names, program, why)| format!("{} ({program}): {why}", names.join(", ")))
        .collect();
    let headline = format!(
        "{} cannot start, no game was played: {}",
        if failures.len() == 1 {
            "external engine".to_string()
        } else {
            format!("{} external engines", failures.len())
        },
        described.join("; ")
    );
    let mut packages: Vec<&str> = Vec::new();
    let mut fixes: Vec<String> = Vec::new();
    for f in failures {
        let program = f.program.display();
        let fix = match &f.error {
            UciError::Spawn { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                if let Some(package) = debian_package(&f.program) {
                    if !packages.contains(&package) {
                        packages.push(package);
                    }
                    // The package installs it where the path says, or where PATH finds it.
                    let parent = f.program.parent().and_then(|p| p.to_str());
                    if matches!(parent, Some("/usr/games" | "")) {
                        continue;
                    }
                }
                format!(
                    "{program} does not exist: install the engine there or correct the path \
                     (`cmd=` of --engine, `command` in the anchors file, --fairy-stockfish)"
                )
            }
            UciError::Spawn { source, .. }
                if source.kind() == std::io::ErrorKind::PermissionDenied =>
            {
                format!("{program} is not executable: chmod +x {program}")
            }
            UciError::Spawn { .. } => {
                format!("{program} cannot be run: check that it is an executable program")
            }
            _ => format!(
                "run {program} by hand and check that it answers `uci` with `uciok`, or allow \
                 it more time with --startup-timeout (milliseconds)"
            ),
        };
        if !fixes.contains(&fix) {
            fixes.push(fix);
        }
    }
    if !packages.is_empty() {
        fixes.insert(
            0,
            format!(
                "install Debian's package (it puts the engine in /usr/games): apt-get install {}",
                packages.join(" ")
            ),
        );
    }
    // One `fix:` line each, as `exit::report` prints them.
    crate::exit::with_fix(headline, fixes.join(crate::exit::FIX))
}

/// The Debian package that installs the engine at `program`, for the engines the arena and
/// the anchors file use (installed in /usr/games under the package's name).
fn debian_package(program: &Path) -> Option<&'static str> {
    let name = program.file_name()?.to_str()?;
    ["stockfish", "fairy-stockfish", "ethereal-chess"]
        .into_iter()
        .find(|package| *package == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_specs_parse_and_reject_unknown_keys() {
        let p = parse_engine(
            "name=sf1500,cmd=/usr/games/stockfish,option.UCI_LimitStrength=true,option.UCI_Elo=1500,rating=1500",
        )
        .unwrap();
        assert_eq!(p.name, "sf1500");
        assert_eq!(p.rating, Some(1500.0));
        let PlayerKind::Uci { command, limits } = p.kind else {
            panic!("an engine")
        };
        assert_eq!(command.options.len(), 2);
        assert_eq!(command.options[1], ("UCI_Elo".into(), "1500".into()));
        assert!(limits.is_empty());
        assert!(
            parse_engine("cmd=x,colour=red")
                .unwrap_err()
                .contains("colour")
        );
        assert!(parse_engine("name=x").unwrap_err().contains("cmd="));
    }

    #[test]
    fn engines_that_cannot_start_are_named_with_their_program_and_the_fix() {
        let missing = |name: &str, program: &str| StartFailure {
            name: name.to_string(),
            program: PathBuf::from(program),
            error: UciError::Spawn {
                program: program.to_string(),
                source: std::io::Error::from(std::io::ErrorKind::NotFound),
            },
        };
        // Debian's engines where Debian puts them: one install command, each player named.
        let error = engines_not_starting(&[
            missing("sf1350", "/usr/games/stockfish"),
            missing("lichess-ai-1", "/usr/games/fairy-stockfish"),
            missing("sf1500", "/usr/games/stockfish"),
        ]);
        assert_eq!(
            crate::exit::report(&error),
            "error: 3 external engines cannot start, no game was played: sf1350, sf1500 \
             (/usr/games/stockfish): entity not found; lichess-ai-1 \
             (/usr/games/fairy-stockfish): entity not found\n  \
             fix: install Debian's package (it puts the engine in /usr/games): apt-get install \
             stockfish fairy-stockfish"
        );
        // One that does not answer the handshake, and a path of one's own.
        let mute = StartFailure {
            name: "mute".to_string(),
            program: PathBuf::from("/opt/mute"),
            error: UciError::Timeout {
                request: "uci".to_string(),
                waited: std::time::Duration::from_secs(10),
            },
        };
        let text = crate::exit::report(&engines_not_starting(&[
            mute,
            missing("own", "/opt/ethereal-chess"),
        ]));
        assert!(
            text.starts_with(
                "error: 2 external engines cannot start, no game was played: mute (/opt/mute): \
                 started but is not a working UCI engine: no answer to `uci` within 10"
            ),
            "{text}"
        );
        for fix in [
            "\n  fix: install Debian's package (it puts the engine in /usr/games): apt-get \
             install ethereal-chess\n",
            "\n  fix: run /opt/mute by hand and check that it answers `uci` with `uciok`",
            "\n  fix: /opt/ethereal-chess does not exist: install the engine there or correct",
        ] {
            assert!(text.contains(fix), "{fix}: {text}");
        }
    }

    #[test]
    fn lichess_presets() {
        let ai = lichess_ai(1, Path::new("/usr/games/fairy-stockfish")).unwrap();
        assert_eq!(ai.rating, Some(800.0));
        let PlayerKind::Uci { command, limits } = ai.kind else {
            panic!("an engine")
        };
        assert_eq!(command.options[0], ("Skill Level".into(), "-9".into()));
        assert_eq!((limits.depth, limits.movetime_ms), (Some(5), Some(50)));
        assert!(lichess_ai(9, Path::new("x")).is_err());
    }
}
