//! The games the daemon has open on Lichess, remembered across restarts so that no game goes
//! unrecorded: a small JSON state file beside the results log (`<results stem>.open-games.json`)
//! holds, for each game started or accepted and not yet recorded, what its record will need and
//! Lichess cannot tell — account, level, coefficients version, engine parameters and the game's
//! seed. An accepted challenge is remembered before the accept is sent: its `gameStart` can be
//! lost (a silent or dropped event stream, a kill) and the game end before anyone sees it.
//!
//! The file is rewritten atomically (temp file, fsync, rename, fsync of the directory) when a
//! game starts and when it is recorded; the results writer thread owns it together with the
//! results log, so "recorded" and "no longer open" change in that order and a crash between
//! the two leaves a game that is open and recorded, which the next start cleans up.
//!
//! Settling the open games no game actor has taken up is `settle.rs`'s.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::atomic_file::write_atomically;
use crate::lichess::GameId;
use crate::results::GameHeader;
use crate::unix_time::unix_ms;

use super::tracker::GameSetup;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpenGame {
    pub game_id: GameId,
    /// The game's header as its record will carry it (flattened: the entry's keys are the
    /// record's). Files written before it had `source` after `seed`; the order of keys is
    /// never read.
    #[serde(flatten)]
    pub header: GameHeader,
    /// When our game actor first started it, or the challenge was accepted (Unix ms).
    pub started_at_ms: i64,
    /// A game actor took it up (in this run or an earlier one); `false` for an accepted
    /// challenge whose `gameStart` has not come. (Files written before this field: played.)
    #[serde(default = "played_by_default")]
    pub played: bool,
}

fn played_by_default() -> bool {
    true
}

impl OpenGame {
    pub fn of(setup: &GameSetup, now_ms: i64) -> OpenGame {
        OpenGame {
            game_id: setup.game_id.clone(),
            header: setup.header.clone(),
            started_at_ms: now_ms,
            played: true,
        }
    }

    /// An accepted challenge, to become the game `setup.game_id`.
    pub fn accepted(setup: &GameSetup, now_ms: i64) -> OpenGame {
        OpenGame {
            played: false,
            ..OpenGame::of(setup, now_ms)
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

/// An open game no game actor of this run has taken up (see [`settle`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Unclaimed {
    pub game: OpenGame,
    /// The previous run left it open.
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
    /// Games a game actor of this run has taken up and not given up (so [`settle`] leaves
    /// them alone).
    claimed: HashSet<GameId>,
}

/// The state file that goes with a results log: `results.jsonl` → `results.open-games.json`.
pub fn state_path(results: &Path) -> PathBuf {
    let stem = results
        .file_stem()
        .map_or_else(|| "results".into(), |s| s.to_string_lossy().into_owned());
    results.with_file_name(format!("{stem}.open-games.json"))
}

/// The games the state file of the results log `results` holds, read without changing it
/// (none when there is no file): what a stopped daemon left open.
pub fn read_open(results: &Path) -> io::Result<Vec<OpenGame>> {
    let path = state_path(results);
    match fs::read(&path) {
        Ok(bytes) => serde_json::from_slice::<StateFile>(&bytes)
            .map(|state| state.open_games)
            .map_err(|e| io::Error::other(format!("{}: {e}", path.display()))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(io::Error::new(
            e.kind(),
            format!("cannot read {}: {e}", path.display()),
        )),
    }
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

    /// A game actor takes up `game`: a game already remembered keeps what it was started or
    /// accepted with (its seed above all); a new one is remembered (on disk before this
    /// returns).
    pub fn open(&mut self, game: OpenGame) -> io::Result<Opened> {
        self.claimed.insert(game.game_id.clone());
        if let Some(known) = self.games.get_mut(&game.game_id) {
            let was_played = known.played;
            if !was_played {
                known.played = true;
                let known = known.clone();
                self.persist()?;
                return Ok(Opened {
                    game: known,
                    from_previous_run: false,
                });
            }
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

    /// Remembers an accepted challenge (on disk before this returns) without taking it up: a
    /// game actor does that on its `gameStart`, or [`settle`] if that never comes.
    pub fn accept(&mut self, game: OpenGame) -> io::Result<()> {
        if self.games.contains_key(&game.game_id) {
            return Ok(());
        }
        let id = game.game_id.clone();
        self.games.insert(id.clone(), game);
        if let Err(e) = self.persist() {
            self.games.remove(&id);
            return Err(e);
        }
        Ok(())
    }

    /// The game actor of `game_id` gave up without a record: [`settle`] looks after it again.
    pub fn release(&mut self, game_id: &GameId) {
        self.claimed.remove(game_id);
    }

    /// Every game of `account` is looked after by settling again: its actor starts (again),
    /// and an actor before it that ended without releasing its games (a panic) left them
    /// taken up.
    pub fn release_account(&mut self, account: &str) {
        let games = &self.games;
        self.claimed.retain(|id| {
            games
                .get(id)
                .is_none_or(|g| !g.header.account.eq_ignore_ascii_case(account))
        });
    }

    /// Forgets the accepted challenges of `account` that never became a game it played: the
    /// account was removed and its actor has ended, so nothing will settle them.
    pub fn forget_unplayed(&mut self, account: &str) -> io::Result<()> {
        let before = self.games.len();
        self.games
            .retain(|_, g| g.played || !g.header.account.eq_ignore_ascii_case(account));
        if self.games.len() != before {
            self.persist()?;
        }
        Ok(())
    }

    /// The game is recorded (or gone): forget it.
    pub fn close(&mut self, game_id: &GameId) -> io::Result<()> {
        self.claimed.remove(game_id);
        if self.games.remove(game_id).is_some() {
            self.persist()?;
        }
        Ok(())
    }

    /// The open games of `account` that no game actor of this run has taken up.
    pub fn unclaimed(&self, account: &str) -> Vec<Unclaimed> {
        self.games
            .values()
            .filter(|g| g.header.account.eq_ignore_ascii_case(account))
            .filter(|g| !self.claimed.contains(&g.game_id))
            .map(|g| Unclaimed {
                game: g.clone(),
                from_previous_run: self.previous.contains(&g.game_id),
            })
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
        write_atomically(&self.path, format!("{text}\n"))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::levels::{Coefficients, LevelParams};
    use crate::test_files::temp_file;

    pub(crate) fn open_game(id: &str, seed: u64) -> OpenGame {
        let setup = GameSetup::new(
            GameId::new(id),
            ("Ladder-L2", "ladder-l2"),
            LevelParams::new(&Coefficients::builtin(), 2.0),
            seed,
            crate::results::Source::Sandbox,
            100,
        );
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
        assert_eq!(again.game.header.seed, 7);
        assert!(open.unclaimed("ladder-l2").is_empty(), "claimed");
        open.close(&GameId::new("g1")).unwrap();
        drop(open);
        let open = OpenGames::load(&path, |_| false).unwrap();
        assert_eq!(open.games().count(), 0);
        assert!(!path.with_extension("json.tmp").exists());
    }

    #[test]
    fn an_accounts_games_go_back_to_settling_when_its_actor_starts_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = state_path(&dir.path().join("results.jsonl"));
        let mut open = OpenGames::load(&path, |_| false).unwrap();
        open.open(open_game("g1", 1)).unwrap();
        let mut other = open_game("g2", 2);
        other.header.account = "Ladder-L3".into();
        open.open(other).unwrap();
        // Both taken up by their actors; ladder-l2's actor panicked without releasing g1.
        assert!(open.unclaimed("ladder-l2").is_empty());
        open.release_account("LADDER-L2");
        let back: Vec<String> = open
            .unclaimed("ladder-l2")
            .iter()
            .map(|u| u.game.game_id.to_string())
            .collect();
        assert_eq!(back, ["g1"]);
        assert!(
            open.unclaimed("ladder-l3").is_empty(),
            "another account's game"
        );
    }

    #[test]
    fn a_removed_accounts_accepted_challenges_are_forgotten_and_its_games_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = state_path(&dir.path().join("results.jsonl"));
        let mut open = OpenGames::load(&path, |_| false).unwrap();
        let accepted = |id, account: &str| {
            let mut game = OpenGame {
                played: false,
                ..open_game(id, 1)
            };
            game.header.account = account.into();
            game
        };
        open.accept(accepted("g1", "Ladder-L2")).unwrap();
        open.accept(accepted("g2", "Ladder-L3")).unwrap();
        open.open(open_game("g3", 3)).unwrap();
        open.forget_unplayed("ladder-l2").unwrap();
        drop(open);
        let open = OpenGames::load(&path, |_| false).unwrap();
        let left: Vec<String> = open.games().map(|g| g.game_id.to_string()).collect();
        assert_eq!(
            left,
            ["g2", "g3"],
            "another account's, and a game it played"
        );
    }

    #[test]
    fn an_accepted_challenge_is_remembered_unplayed_and_keeps_its_seed_when_it_starts() {
        let dir = tempfile::tempdir().unwrap();
        let path = state_path(&dir.path().join("results.jsonl"));
        let mut open = OpenGames::load(&path, |_| false).unwrap();
        let accepted = OpenGame {
            played: false,
            ..open_game("g1", 7)
        };
        open.accept(accepted.clone()).unwrap();
        // On disk at once, and not taken up: the settling task looks after it.
        drop(open);
        let mut open = OpenGames::load(&path, |_| false).unwrap();
        let waiting = open.unclaimed("ladder-l2");
        assert_eq!(waiting.len(), 1);
        assert!(!waiting[0].game.played);
        assert!(waiting[0].from_previous_run);
        // Its gameStart comes after the restart: a fresh start with the seed of the accept,
        // not a resume.
        let started = open.open(open_game("g1", 99)).unwrap();
        assert_eq!(started.game.header.seed, 7);
        assert!(started.game.played);
        assert!(!started.from_previous_run, "it never began");
        assert!(open.unclaimed("ladder-l2").is_empty());
        // Its actor gives up: settled again, and the file says it was played.
        open.release(&GameId::new("g1"));
        let released = open.unclaimed("ladder-l2");
        assert_eq!(released.len(), 1);
        assert!(released[0].game.played);
        drop(open);
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"played\": true"), "{text}");
    }

    #[test]
    fn a_file_from_before_the_played_field_counts_its_games_as_played() {
        let dir = tempfile::tempdir().unwrap();
        let path = state_path(&dir.path().join("results.jsonl"));
        let mut old = serde_json::to_value(StateFile {
            open_games: vec![open_game("g1", 7)],
        })
        .unwrap();
        old["open_games"][0]
            .as_object_mut()
            .unwrap()
            .remove("played");
        fs::write(&path, old.to_string()).unwrap();
        let open = OpenGames::load(&path, |_| false).unwrap();
        assert!(open.games().all(|g| g.played));
    }

    /// An entry as the build before the game header wrote it (`source` after `seed`) reads
    /// whole; an entry now writes the header's keys in the order a results line has them.
    #[test]
    fn an_entry_from_before_the_header_reads_and_the_header_keeps_the_record_order() {
        let before = r#"{"open_games":[{"game_id":"g1","account":"Ladder-L2","level":2.0,"offset":0.5,"coefficients_version":41,"engine":{"nodes":300,"noise_cp":88.5,"hash_mb":1},"seed":7,"source":"sandbox","started_at_ms":1700000000000,"played":false}]}"#;
        let state: StateFile = serde_json::from_str(before).unwrap();
        let game = &state.open_games[0];
        let header = GameHeader {
            source: crate::results::Source::Sandbox,
            account: "Ladder-L2".into(),
            level: 2.0,
            offset: 0.5,
            coefficients_version: 41,
            engine: crate::results::EngineRecord {
                nodes: 300,
                noise_cp: 88.5,
                hash_mb: 1,
            },
            seed: 7,
        };
        assert_eq!(game.header, header);
        assert_eq!(
            (game.started_at_ms, game.played),
            (1_700_000_000_000, false)
        );
        let written = serde_json::to_string(game).unwrap();
        assert!(
            written.starts_with(
                r#"{"game_id":"g1","source":"sandbox","account":"Ladder-L2","level":2.0,"offset":0.5,"coefficients_version":41,"engine":{"nodes":300,"noise_cp":88.5,"hash_mb":1},"seed":7,"started_at_ms""#
            ),
            "{written}"
        );
    }

    #[test]
    fn an_unreadable_file_is_kept_aside_and_the_daemon_starts_empty() {
        let (dir, path) = temp_file("results.open-games.json");
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
