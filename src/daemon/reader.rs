//! A stream reader task: reads an NDJSON stream on its own task and forwards each item.
//!
//! The stream's idle timeout runs inside one `next()` call; an actor that `select!`s on
//! `next()` together with a periodic timer would restart that timeout on every tick and never
//! notice a silent stream. Reading on a separate task keeps one `next()` alive until it yields.

use serde::de::DeserializeOwned;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::lichess::{NdjsonStream, StreamEnd};

/// Items of one stream, then exactly one `Err` saying why it ended.
pub struct Reader<T> {
    rx: mpsc::Receiver<Result<T, StreamEnd>>,
    task: JoinHandle<()>,
}

impl<T: DeserializeOwned + Send + 'static> Reader<T> {
    pub fn spawn(mut stream: NdjsonStream<T>) -> Reader<T> {
        let (tx, rx) = mpsc::channel(64);
        let task = tokio::spawn(async move {
            loop {
                let item = stream.next().await;
                let end = item.is_err();
                if tx.send(item).await.is_err() || end {
                    return;
                }
            }
        });
        Reader { rx, task }
    }

    /// The next item, or why the stream ended. Cancel-safe.
    pub async fn next(&mut self) -> Result<T, StreamEnd> {
        self.rx
            .recv()
            .await
            .unwrap_or_else(|| Err(StreamEnd::Error("stream reader stopped".into())))
    }
}

impl<T> Drop for Reader<T> {
    fn drop(&mut self) {
        self.task.abort();
    }
}
