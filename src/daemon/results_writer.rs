//! The results writer: one OS thread owns the [`ResultsLog`], the [`PgnLog`] and the
//! [`OpenGames`] state file beside it, and applies what the game actors send it: a game taken
//! up is remembered as open, a finished game is appended to the log, then to the PGN log, and
//! then forgotten as open. A record is
//! written in one call and fsynced before the reply, and a write in progress is never
//! interrupted (not even by the second shutdown signal): the thread only stops once every
//! sender is gone and the queue is empty.

use std::io;
use std::path::Path;
use std::thread::JoinHandle;

use tokio::sync::{mpsc, oneshot};

use crate::lichess::GameId;
use crate::results::{GameRecord, ResultsLog};

use super::open_games::{self, OpenGame, OpenGames, Opened, Unclaimed};
use super::pgn_log::{PgnLog, pgn_path};

enum Request {
    Append(Box<GameRecord>, oneshot::Sender<io::Result<bool>>),
    Open(Box<OpenGame>, oneshot::Sender<io::Result<Opened>>),
    Accept(Box<OpenGame>, oneshot::Sender<io::Result<()>>),
    Release(GameId),
    ReleaseAccount(String),
    ForgetUnplayed(String),
    Forget(GameId, oneshot::Sender<io::Result<()>>),
    Unclaimed(String, oneshot::Sender<Vec<Unclaimed>>),
    All(oneshot::Sender<Vec<OpenGame>>),
}

/// A clonable handle for appending records and remembering open games.
#[derive(Clone)]
pub struct ResultsStub {
    tx: mpsc::UnboundedSender<Request>,
}

/// The writer thread; [`ResultsWriter::close`] waits for it after the stubs are dropped.
pub struct ResultsWriter {
    thread: JoinHandle<()>,
}

/// Opens `path`, its PGN log (`site` is the game URL prefix, the server's base URL) and its
/// open-games file, and starts the writer thread.
pub fn start(path: &Path, site: &str) -> io::Result<(ResultsStub, ResultsWriter)> {
    let mut log = ResultsLog::open(path)?;
    let pgn_file = pgn_path(path);
    // The PGN log is a convenience: a file that cannot be opened is reported and the games
    // are still played and recorded.
    let mut pgn = PgnLog::open(&pgn_file, site)
        .inspect_err(|e| tracing::error!("cannot open the PGN log {}: {e}", pgn_file.display()))
        .ok();
    let mut open = OpenGames::load(&open_games::state_path(path), |id| log.contains(id))?;
    let (tx, mut rx) = mpsc::unbounded_channel::<Request>();
    let thread = std::thread::Builder::new()
        .name("results".into())
        .spawn(move || {
            while let Some(request) = rx.blocking_recv() {
                // The sender may be gone (hard stop); what was asked is done regardless.
                match request {
                    Request::Append(record, reply) => {
                        let written = log.append(&record);
                        // A game new to the log goes to the PGN log too; a failure there is
                        // logged and loses nothing (the record is written).
                        if matches!(written, Ok(true))
                            && let Some(pgn) = pgn.as_mut()
                            && let Err(e) = pgn.append(&record)
                        {
                            tracing::error!(game = %record.game_id, "cannot write the PGN log {}: {e}", pgn_file.display());
                        }
                        match &written {
                            // Recorded (now or before): no longer open. A failed write
                            // leaves it open, to be settled after a restart.
                            Ok(_) => {
                                if let Err(e) = open.close(&record.game_id) {
                                    tracing::error!(game = %record.game_id, "cannot update the open games file: {e}");
                                }
                            }
                            Err(e) => {
                                tracing::error!(game = %record.game_id, "cannot write the results log: {e}")
                            }
                        }
                        reply.send(written).ok();
                    }
                    Request::Open(game, reply) => {
                        let opened = open.open(*game);
                        if let Err(e) = &opened {
                            tracing::error!("cannot update the open games file: {e}");
                        }
                        reply.send(opened).ok();
                    }
                    Request::Accept(game, reply) => {
                        let accepted = open.accept(*game);
                        if let Err(e) = &accepted {
                            tracing::error!("cannot update the open games file: {e}");
                        }
                        reply.send(accepted).ok();
                    }
                    Request::Release(id) => open.release(&id),
                    Request::ReleaseAccount(account) => open.release_account(&account),
                    Request::ForgetUnplayed(account) => {
                        if let Err(e) = open.forget_unplayed(&account) {
                            tracing::error!("cannot update the open games file: {e}");
                        }
                    }
                    Request::Forget(id, reply) => {
                        reply.send(open.close(&id)).ok();
                    }
                    Request::Unclaimed(account, reply) => {
                        reply.send(open.unclaimed(&account)).ok();
                    }
                    Request::All(reply) => {
                        reply.send(open.games().cloned().collect()).ok();
                    }
                }
            }
        })?;
    Ok((ResultsStub { tx }, ResultsWriter { thread }))
}

fn stopped() -> io::Error {
    io::Error::other("the results writer has stopped")
}

impl ResultsStub {
    async fn ask<T>(&self, request: impl FnOnce(oneshot::Sender<T>) -> Request) -> io::Result<T> {
        let (reply, rx) = oneshot::channel();
        self.tx.send(request(reply)).map_err(|_| stopped())?;
        rx.await.map_err(|_| stopped())
    }

    /// Appends `record` unless its game is already in the log; `Ok(false)` for a duplicate.
    /// Either way the game is no longer open.
    pub async fn append(&self, record: GameRecord) -> io::Result<bool> {
        self.ask(|reply| Request::Append(Box::new(record), reply))
            .await?
    }

    /// Remembers `game` as open (on disk before this returns), or returns what was remembered
    /// of it before: a resumed game keeps its seed.
    pub async fn open_game(&self, game: OpenGame) -> io::Result<Opened> {
        self.ask(|reply| Request::Open(Box::new(game), reply))
            .await?
    }

    /// Every game open now (started or accepted and not yet recorded), by game id.
    pub async fn open_games(&self) -> io::Result<Vec<OpenGame>> {
        self.ask(Request::All).await
    }

    /// Remembers an accepted challenge as open (on disk before this returns), to be taken up
    /// by a game actor on its `gameStart`, or settled if that never comes.
    pub async fn remember_accepted(&self, game: OpenGame) -> io::Result<()> {
        self.ask(|reply| Request::Accept(Box::new(game), reply))
            .await?
    }

    /// The game actor of `game_id` gave up without recording it: the game is settled instead.
    pub fn release(&self, game_id: GameId) {
        self.tx.send(Request::Release(game_id)).ok();
    }

    /// Every open game of `account` goes back to settling (its actor starts).
    pub fn release_account(&self, account: &str) {
        self.tx
            .send(Request::ReleaseAccount(account.to_string()))
            .ok();
    }

    /// Forgets the accepted challenges of a removed account that never became its games.
    pub fn forget_unplayed(&self, account: &str) {
        self.tx
            .send(Request::ForgetUnplayed(account.to_string()))
            .ok();
    }

    /// Forgets an open game without a record (Lichess does not know it).
    pub async fn forget(&self, game_id: GameId) -> io::Result<()> {
        self.ask(|reply| Request::Forget(game_id, reply)).await?
    }

    /// The open games of `account` that no game actor has taken up in this run.
    pub async fn unclaimed(&self, account: &str) -> io::Result<Vec<Unclaimed>> {
        self.ask(|reply| Request::Unclaimed(account.to_string(), reply))
            .await
    }
}

impl ResultsWriter {
    /// Waits until every queued record is written (all stubs must be dropped first).
    pub fn close(self) {
        self.thread.join().ok();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Outcome, read_results, sample_record};
    use crate::test_files::temp_file;

    #[tokio::test]
    async fn writes_each_game_once_through_many_stubs() {
        let (_dir, path) = temp_file("r.jsonl");
        let (stub, writer) = start(&path, "http://127.0.0.1").unwrap();
        let mut tasks = Vec::new();
        for i in 0..10 {
            let stub = stub.clone();
            tasks.push(tokio::spawn(async move {
                stub.append(sample_record(&format!("g{}", i % 5), Outcome::Win))
                    .await
                    .unwrap()
            }));
        }
        let mut written = 0;
        for t in tasks {
            written += usize::from(t.await.unwrap());
        }
        assert_eq!(written, 5);
        drop(stub);
        writer.close();
        assert_eq!(read_results(&[path]).unwrap().records.len(), 5);
    }

    #[tokio::test]
    async fn a_recorded_game_is_no_longer_open_even_after_a_restart() {
        use crate::levels::{Coefficients, LevelParams};
        use crate::results::Source;
        let (_dir, path) = temp_file("r.jsonl");
        let game = |id: &str| {
            let setup = super::super::tracker::GameSetup::new(
                GameId::new(id),
                ("ladder-l3", "ladder-l3"),
                LevelParams::new(&Coefficients::builtin(), 3.0),
                5,
                Source::Sandbox,
                100,
            );
            OpenGame::of(&setup, 0)
        };
        let (stub, writer) = start(&path, "http://127.0.0.1").unwrap();
        stub.open_game(game("a")).await.unwrap();
        stub.open_game(game("b")).await.unwrap();
        assert!(stub.append(sample_record("a", Outcome::Win)).await.unwrap());
        drop(stub);
        writer.close();

        let (stub, writer) = start(&path, "http://127.0.0.1").unwrap();
        let open = stub.unclaimed("Ladder-L3").await.unwrap();
        assert_eq!(
            open.iter()
                .map(|g| g.game.game_id.as_str())
                .collect::<Vec<_>>(),
            ["b"]
        );
        assert!(open[0].from_previous_run);
        let resumed = stub.open_game(game("b")).await.unwrap();
        assert!(resumed.from_previous_run);
        drop(stub);
        writer.close();
    }
}
