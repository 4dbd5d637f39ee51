//! The games the daemon has open on Lichess, remembered across restarts so that no game goes
//! unrecorded: a small JSON state file beside the results log (`<results stem>.open-games.json`)
//! holds, for each game started and not yet recorded, what its record will need and Lichess
//! cannot tell — account, level, coefficients version, engine parameters and the game's seed.
//!
//! The file is rewritten atomically (temp file, fsync, rename, fsync of the directory) when a
//! game starts and when it is recorded; the results writer thread owns it together with the
//! results log, so "recorded" and "no longer open" change in that order and a crash between
//! the two leaves a game that is open and recorded, which the next start cleans up.
//!
//! On start, every game left open is settled ([`settle`], one task per account): a game that
//! Lichess still has running comes back through the event stream (`gameStart`) and is played
//! on with its original seed (the game actor asks [`OpenGames::open`]); a game that ended
//! meanwhile is fetched from the game export and recorded once, marked as settled after a
//! restart, with a fault when it was lost on time while we were down.

use std::collections::{BTreeMap, HashSet};
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tracing::Instrument;

use crate::calibration::fetch::{AccountRef, VersionTimeline, to_record};
use crate::lichess::{Client, GameId, GameJson, GameStatus, LichessError};
use crate::logging::game_span;
use crate::results::{AfterRestart, EngineRecord, GameRecord, Outcome, Source, fault};

use super::results_writer::ResultsStub;
use super::shutdown::{RunState, sleep_or_stop};
use super::tracker::GameSetup;

/// How often a game that Lichess still reports running, but that no game actor has taken
/// up, is looked at again (its `gameStart` may have been lost, or it ends before one comes).
const RECHECK: Duration = Duration::from_secs(30);

/// One open game: what its record needs that Lichess does not know.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpenGame {
    pub game_id: GameId,
    pub account: String,
    pub level: f64,
    pub offset: f64,
    pub coefficients_version: u32,
    pub engine: EngineRecord,
    pub seed: u64,
    pub source: Source,
    /// When our game actor first started it (Unix ms).
    pub started_at_ms: i64,
}

impl OpenGame {
    pub fn of(setup: &GameSetup, now_ms: i64) -> OpenGame {
        let p = &setup.params;
        OpenGame {
            game_id: setup.game_id.clone(),
            account: setup.username.clone(),
            level: p.level,
            offset: p.offset,
            coefficients_version: p.coefficients_version,
            engine: EngineRecord {
                nodes: p.nodes,
                noise_cp: p.noise_cp,
                hash_mb: p.hash_mb,
            },
            seed: setup.seed,
            source: setup.source,
            started_at_ms: now_ms,
        }
    }
}

/// What [`OpenGames::open`] found.
#[derive(Clone, Debug, PartialEq)]
pub struct Opened {
    /// The game as first remembered: a game seen before keeps its seed.
    pub game: OpenGame,
    /// The game was open when the daemon last stopped: this is a resume after a restart.
    pub from_previous_run: bool,
}

#[derive(Serialize, Deserialize)]
struct StateFile {
    open_games: Vec<OpenGame>,
}

/// The set of open games and its file. Owned by the results writer thread.
pub struct OpenGames {
    path: PathBuf,
    games: BTreeMap<GameId, OpenGame>,
    /// Games left open by a previous run.
    previous: HashSet<GameId>,
    /// Games a game actor of this run has taken up (so [`settle`] leaves them alone).
    claimed: HashSet<GameId>,
}

/// The state file that goes with a results log: `results.jsonl` → `results.open-games.json`.
pub fn state_path(results: &Path) -> PathBuf {
    let stem = results
        .file_stem()
        .map_or_else(|| "results".into(), |s| s.to_string_lossy().into_owned());
    results.with_file_name(format!("{stem}.open-games.json"))
}

impl OpenGames {
    /// Loads the state file (none yet: no open game). `recorded` tells which games the results
    /// log already has (a crash after the record and before the state update): those are
    /// dropped. An unreadable file is kept aside under a new name, reported, and replaced by
    /// an empty set: the daemon must start, and nothing in the file is lost.
    pub fn load(path: &Path, recorded: impl Fn(&str) -> bool) -> io::Result<OpenGames> {
        let mut games = BTreeMap::new();
        match fs::read(path) {
            Ok(bytes) => match serde_json::from_slice::<StateFile>(&bytes) {
                Ok(state) => {
                    for game in state.open_games {
                        if recorded(game.game_id.as_str()) {
                            tracing::info!(game = %game.game_id, "open game already recorded");
                        } else {
                            games.insert(game.game_id.clone(), game);
                        }
                    }
                }
                Err(e) => {
                    let aside = path.with_extension(format!("json.unreadable-{}", unix_ms()));
                    fs::rename(path, &aside).map_err(|re| {
                        io::Error::new(
                            re.kind(),
                            format!(
                                "{}: unreadable ({e}) and cannot be moved aside: {re}",
                                path.display()
                            ),
                        )
                    })?;
                    tracing::error!(
                        "{}:{}:{}: the open games file is unreadable ({e}); kept as {}, \
                         starting with no open game",
                        path.display(),
                        e.line(),
                        e.column(),
                        aside.display()
                    );
                }
            },
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("cannot read {}: {e}", path.display()),
                ));
            }
        }
        let previous = games.keys().cloned().collect();
        let open = OpenGames {
            path: path.to_path_buf(),
            games,
            previous,
            claimed: HashSet::new(),
        };
        open.persist()?;
        if !open.games.is_empty() {
            tracing::info!(
                games = open.games.len(),
                file = %path.display(),
                "games left open by the previous run: settling them"
            );
        }
        Ok(open)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A game actor takes up `game`: a game already remembered keeps what it was started with
    /// (its seed above all); a new one is remembered (on disk before this returns).
    pub fn open(&mut self, game: OpenGame) -> io::Result<Opened> {
        self.claimed.insert(game.game_id.clone());
        if let Some(known) = self.games.get(&game.game_id) {
            return Ok(Opened {
                game: known.clone(),
                from_previous_run: self.previous.contains(&game.game_id),
            });
        }
        self.games.insert(game.game_id.clone(), game.clone());
        if let Err(e) = self.persist() {
            self.games.remove(&game.game_id);
            return Err(e);
        }
        Ok(Opened {
            game,
            from_previous_run: false,
        })
    }

    /// The game is recorded (or gone): forget it.
    /// (A `&str`: the results log keeps game ids as plain strings.)
    pub fn close(&mut self, game_id: &str) -> io::Result<()> {
        self.claimed.remove(game_id);
        if self.games.remove(game_id).is_some() {
            self.persist()?;
        }
        Ok(())
    }

    /// The open games of `account` that no game actor of this run has taken up.
    pub fn unclaimed(&self, account: &str) -> Vec<OpenGame> {
        self.games
            .values()
            .filter(|g| g.account.eq_ignore_ascii_case(account))
            .filter(|g| !self.claimed.contains(&g.game_id))
            .cloned()
            .collect()
    }

    pub fn games(&self) -> impl Iterator<Item = &OpenGame> {
        self.games.values()
    }

    /// Writes the set atomically: a crash leaves the old file or the new one, never a mix.
    fn persist(&self) -> io::Result<()> {
        let state = StateFile {
            open_games: self.games.values().cloned().collect(),
        };
        let text = serde_json::to_string_pretty(&state).map_err(io::Error::other)?;
        write_atomically(&self.path, text.as_bytes())
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", self.path.display())))
    }
}

/// Temp file in the same directory, fsync, rename over `path`, fsync the directory.
fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let tmp = path.with_extension("json.tmp");
    {
        let mut file = File::create(&tmp)?;
        file.write_all(bytes)?;
        file.write_all(b"\n")?;
        file.sync_all()?;
    }
    fs::rename(&tmp, path)?;
    // The rename itself must survive a power cut.
    #[cfg(unix)]
    File::open(dir)?.sync_all()?;
    Ok(())
}

/// The record of a game that ended while the daemon was down, from Lichess's export and what
/// we remembered. `None` when the export does not show `game.account` playing it.
pub fn settled_record(open: &OpenGame, game: &GameJson) -> Option<GameRecord> {
    let account = AccountRef {
        username: open.account.clone(),
        level: open.level,
    };
    let mut record = to_record(game, &account, &VersionTimeline::default())?;
    record.source = open.source;
    record.level = open.level;
    record.offset = open.offset;
    record.coefficients_version = open.coefficients_version;
    record.engine = open.engine.clone();
    record.seed = open.seed;
    record.after_restart = Some(AfterRestart::Settled);
    // A flag, or the opponent claiming the game after we left, happened because we were
    // down: no strength in it. A win on time (the opponent flagged) or a mate, resignation
    // or agreed draw is a result like any other.
    let absent = matches!(game.status, GameStatus::Outoftime | GameStatus::Timeout);
    if absent && record.result != Outcome::Win {
        record.fault = Some(fault::text(
            fault::DAEMON_DOWN,
            &format!(
                "{} ({}) while the daemon was not running; settled after a restart",
                record.status,
                match record.result {
                    Outcome::Loss => "lost",
                    _ => "drawn",
                }
            ),
        ));
    }
    Some(record)
}

/// Settles the games `account` left open in a previous run (see the module comment). Runs
/// until none of them is left unclaimed, or the daemon stops.
pub async fn settle(
    client: Client,
    results: ResultsStub,
    account: String,
    mut run_state: watch::Receiver<RunState>,
) {
    loop {
        let open = match results.unclaimed(&account).await {
            Ok(open) => open,
            Err(_) => return,
        };
        if open.is_empty() {
            return;
        }
        for game in open {
            // Its log lines name the game as a game actor's would.
            let span = game_span(&tracing::Span::current(), game.game_id.as_str());
            settle_one(&client, &results, &game).instrument(span).await;
        }
        if results
            .unclaimed(&account)
            .await
            .is_ok_and(|g| g.is_empty())
        {
            return;
        }
        if sleep_or_stop(RECHECK, &mut run_state).await {
            return;
        }
    }
}

async fn settle_one(client: &Client, results: &ResultsStub, open: &OpenGame) {
    let id = &open.game_id;
    let game = match client.export_game(id).await {
        Ok(game) => game,
        Err(LichessError::NotFound { .. }) => {
            tracing::warn!("a game left open is unknown to Lichess: forgotten without a record");
            results.forget(id.clone()).await.ok();
            return;
        }
        Err(e) => {
            tracing::warn!("cannot settle a game left open: {e}; trying again later");
            return;
        }
    };
    if game.status.is_ongoing() {
        tracing::info!("a game left open is still running: waiting for its gameStart");
        return;
    }
    let Some(record) = settled_record(open, &game) else {
        tracing::warn!(
            "the export of a game left open does not show the account playing: forgotten"
        );
        results.forget(id.clone()).await.ok();
        return;
    };
    tracing::info!(
        result = ?record.result, status = %record.status,
        fault = record.fault.as_deref().unwrap_or(""), "game over while the daemon was down: settled"
    );
    match results.append(record).await {
        Ok(true) => {}
        Ok(false) => tracing::info!("already in the results log"),
        Err(e) => tracing::error!("results log: {e}"),
    }
}

fn unix_ms() -> i64 {
    super::game::unix_ms()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::levels::{Coefficients, LevelParams};

    fn open_game(id: &str, seed: u64) -> OpenGame {
        let setup = GameSetup {
            game_id: GameId::new(id),
            username: "Ladder-L2".into(),
            user_id: "ladder-l2".into(),
            params: LevelParams::new(&Coefficients::builtin(), 2.0),
            seed,
            source: Source::Sandbox,
            move_overhead_ms: 100,
        };
        OpenGame::of(&setup, 1_700_000_000_000)
    }

    #[test]
    fn a_game_survives_a_restart_with_its_seed_until_it_is_closed() {
        let dir = tempfile::tempdir().unwrap();
        let path = state_path(&dir.path().join("results.jsonl"));
        assert_eq!(path, dir.path().join("results.open-games.json"));
        let mut open = OpenGames::load(&path, |_| false).unwrap();
        let first = open.open(open_game("g1", 7)).unwrap();
        assert!(!first.from_previous_run);
        open.open(open_game("g2", 8)).unwrap();
        drop(open);

        let mut open = OpenGames::load(&path, |id| id == "g2").unwrap();
        assert_eq!(open.unclaimed("ladder-l2").len(), 1, "g2 was recorded");
        // The game comes back with another seed drawn: the remembered one wins.
        let again = open.open(open_game("g1", 99)).unwrap();
        assert!(again.from_previous_run);
        assert_eq!(again.game.seed, 7);
        assert!(open.unclaimed("ladder-l2").is_empty(), "claimed");
        open.close("g1").unwrap();
        drop(open);
        let open = OpenGames::load(&path, |_| false).unwrap();
        assert_eq!(open.games().count(), 0);
        assert!(!path.with_extension("json.tmp").exists());
    }

    /// The export of a game of ladder-l2 (black) against alice.
    fn export(status: &str, winner: Option<&str>) -> GameJson {
        let winner = winner.map_or(String::new(), |w| format!(r#","winner":"{w}""#));
        serde_json::from_str(&format!(
            r#"{{"id":"g1","rated":true,"variant":"standard","speed":"blitz","perf":"blitz",
            "createdAt":1700000000000,"lastMoveAt":1700000100000,"status":"{status}",
            "players":{{"white":{{"user":{{"id":"alice","name":"Alice"}},"rating":1500}},
            "black":{{"user":{{"id":"ladder-l2","name":"Ladder-L2","title":"BOT"}},"rating":800}}}},
            "moves":"e4 e5 Nf3","clock":{{"initial":180,"increment":2,"totalTime":260}}{winner}}}"#
        ))
        .unwrap()
    }

    #[test]
    fn a_settled_record_keeps_what_we_remembered_and_faults_only_our_absence() {
        let open = open_game("g1", 7);
        let r = settled_record(&open, &export("outoftime", Some("white"))).unwrap();
        assert_eq!((r.result, r.status.as_str()), (Outcome::Loss, "outoftime"));
        assert_eq!((r.seed, r.source, r.level), (7, Source::Sandbox, 2.0));
        assert_eq!(r.engine, open.engine);
        assert_eq!(r.coefficients_version, open.coefficients_version);
        assert_eq!(r.moves, "e2e4 e7e5 g1f3");
        assert_eq!(r.after_restart, Some(AfterRestart::Settled));
        assert_eq!(r.fault_kind(), Some(fault::DAEMON_DOWN));
        // The opponent claimed a draw after we left: no strength in it either.
        let r = settled_record(&open, &export("timeout", None)).unwrap();
        assert_eq!(
            (r.result, r.fault_kind()),
            (Outcome::Draw, Some(fault::DAEMON_DOWN))
        );
        // Results that are not our absence count.
        let r = settled_record(&open, &export("outoftime", Some("black"))).unwrap();
        assert_eq!((r.result, r.fault.as_deref()), (Outcome::Win, None));
        let r = settled_record(&open, &export("resign", Some("white"))).unwrap();
        assert_eq!((r.result, r.fault.as_deref()), (Outcome::Loss, None));
        // Not our game: nothing to record.
        let mut other = open.clone();
        other.account = "ladder-l9".into();
        assert!(settled_record(&other, &export("mate", Some("white"))).is_none());
    }

    #[test]
    fn an_unreadable_file_is_kept_aside_and_the_daemon_starts_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.open-games.json");
        fs::write(&path, "{\"open_games\": [ {\"game_id\": ").unwrap();
        let open = OpenGames::load(&path, |_| false).unwrap();
        assert_eq!(open.games().count(), 0);
        let kept: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains("unreadable"))
            .collect();
        assert_eq!(kept.len(), 1);
        let text = fs::read_to_string(kept[0].path()).unwrap();
        assert!(
            text.starts_with("{\"open_games\""),
            "the bad file is kept whole"
        );
    }
}
