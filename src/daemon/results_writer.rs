//! The results writer: one OS thread owns the [`ResultsLog`] and appends the records the game
//! actors send it. A record is written in one call and fsynced before the reply, and a write
//! in progress is never interrupted (not even by the second shutdown signal): the thread only
//! stops once every sender is gone and the queue is empty.

use std::io;
use std::path::Path;
use std::thread::JoinHandle;

use tokio::sync::{mpsc, oneshot};

use crate::results::{GameRecord, ResultsLog};

type Request = (Box<GameRecord>, oneshot::Sender<io::Result<bool>>);

/// A clonable handle for appending records.
#[derive(Clone)]
pub struct ResultsStub {
    tx: mpsc::UnboundedSender<Request>,
}

/// The writer thread; [`ResultsWriter::close`] waits for it after the stubs are dropped.
pub struct ResultsWriter {
    thread: JoinHandle<()>,
}

/// Opens `path` and starts the writer thread.
pub fn start(path: &Path) -> io::Result<(ResultsStub, ResultsWriter)> {
    let mut log = ResultsLog::open(path)?;
    let (tx, mut rx) = mpsc::unbounded_channel::<Request>();
    let thread = std::thread::Builder::new()
        .name("results".into())
        .spawn(move || {
            while let Some((record, reply)) = rx.blocking_recv() {
                let written = log.append(&record);
                if let Err(e) = &written {
                    tracing::error!(game = %record.game_id, "cannot write the results log: {e}");
                }
                // The game actor may be gone (hard stop); the record is on disk regardless.
                reply.send(written).ok();
            }
        })?;
    Ok((ResultsStub { tx }, ResultsWriter { thread }))
}

impl ResultsStub {
    /// Appends `record` unless its game is already in the log; `Ok(false)` for a duplicate.
    pub async fn append(&self, record: GameRecord) -> io::Result<bool> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send((Box::new(record), reply))
            .map_err(|_| io::Error::other("the results writer has stopped"))?;
        rx.await
            .map_err(|_| io::Error::other("the results writer has stopped"))?
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

    #[tokio::test]
    async fn writes_each_game_once_through_many_stubs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let (stub, writer) = start(&path).unwrap();
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
}
