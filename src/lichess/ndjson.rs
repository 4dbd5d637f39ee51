//! NDJSON streams: one JSON object per line, empty lines as keep-alives, an idle timeout per
//! read (never a total timeout), malformed lines logged and skipped. A stream ends with a
//! distinguishable [`StreamEnd`] so the caller knows to reconnect.

use std::fmt;
use std::marker::PhantomData;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use serde::de::DeserializeOwned;

/// Lichess sends a keep-alive line every 7 s; 20 s of silence means the stream is stuck.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(20);

/// A line longer than this is garbage (or an attack), not an event: it is dropped.
const MAX_LINE_BYTES: usize = 1 << 20;

/// How many characters of a malformed line go into the warning.
const LOGGED_LINE_CHARS: usize = 200;

/// Why a stream stopped yielding events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamEnd {
    /// The server closed the stream cleanly (a game stream after the game ended, an event
    /// stream replaced by a newer one, a server restart).
    Closed,
    /// Nothing arrived, not even a keep-alive, for this long.
    IdleTimeout(Duration),
    /// The connection failed mid-stream.
    Error(String),
}

impl fmt::Display for StreamEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamEnd::Closed => f.write_str("stream closed by the server"),
            StreamEnd::IdleTimeout(d) => {
                write!(f, "stream silent for {}", crate::logging::show_duration(*d))
            }
            StreamEnd::Error(e) => write!(f, "stream failed: {e}"),
        }
    }
}

type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, String>> + Send>>;

/// A stream of parsed `T`s read from an NDJSON body.
pub struct NdjsonStream<T> {
    body: Option<ByteStream>,
    buffer: Vec<u8>,
    /// Skipping the rest of an over-long line.
    discarding: bool,
    idle_timeout: Duration,
    name: String,
    end: Option<StreamEnd>,
    _marker: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for NdjsonStream<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NdjsonStream")
            .field("name", &self.name)
            .field("idle_timeout", &self.idle_timeout)
            .field("end", &self.end)
            .finish()
    }
}

impl<T: DeserializeOwned> NdjsonStream<T> {
    /// Wraps a byte stream; `name` (an endpoint, never a URL with secrets) labels the logs.
    pub fn new<S, E>(body: S, idle_timeout: Duration, name: impl Into<String>) -> NdjsonStream<T>
    where
        S: Stream<Item = Result<Bytes, E>> + Send + 'static,
        E: fmt::Display,
    {
        let body = body.map(|r| r.map_err(|e| e.to_string()));
        NdjsonStream {
            body: Some(Box::pin(body)),
            buffer: Vec::new(),
            discarding: false,
            idle_timeout,
            name: name.into(),
            end: None,
            _marker: PhantomData,
        }
    }

    /// The stream's label (its endpoint).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The next event, or why the stream ended. After an end, every call returns that end.
    /// Cancel-safe: dropping the future between lines loses nothing that was buffered.
    pub async fn next(&mut self) -> Result<T, StreamEnd> {
        loop {
            if let Some(end) = &self.end {
                return Err(end.clone());
            }
            if let Some(line) = self.take_line() {
                if let Some(event) = self.parse(&line) {
                    return Ok(event);
                }
                continue;
            }
            let Some(body) = self.body.as_mut() else {
                return Err(self.finish(StreamEnd::Closed));
            };
            match tokio::time::timeout(self.idle_timeout, body.next()).await {
                Err(_) => return Err(self.finish(StreamEnd::IdleTimeout(self.idle_timeout))),
                Ok(None) => {
                    // A last line without its newline still counts.
                    let rest = std::mem::take(&mut self.buffer);
                    self.body = None;
                    if !self.discarding
                        && let Some(event) = self.parse(&rest)
                    {
                        self.end = Some(StreamEnd::Closed);
                        return Ok(event);
                    }
                    return Err(self.finish(StreamEnd::Closed));
                }
                Ok(Some(Err(e))) => return Err(self.finish(StreamEnd::Error(e))),
                Ok(Some(Ok(chunk))) => self.push(&chunk),
            }
        }
    }

    fn finish(&mut self, end: StreamEnd) -> StreamEnd {
        self.body = None;
        self.end = Some(end.clone());
        end
    }

    fn push(&mut self, chunk: &[u8]) {
        self.buffer.extend_from_slice(chunk);
        if self.buffer.len() > MAX_LINE_BYTES && !self.buffer.contains(&b'\n') {
            tracing::warn!(
                stream = %self.name,
                "dropping a line longer than {MAX_LINE_BYTES} bytes"
            );
            self.buffer.clear();
            self.discarding = true;
        }
    }

    /// Takes one complete line (without its newline) from the buffer.
    fn take_line(&mut self) -> Option<Vec<u8>> {
        let pos = self.buffer.iter().position(|&b| b == b'\n')?;
        let mut line: Vec<u8> = self.buffer.drain(..=pos).collect();
        line.pop();
        if self.discarding {
            // The tail of an over-long line: skip it, resume with the next one.
            self.discarding = false;
            return Some(Vec::new());
        }
        Some(line)
    }

    /// Parses a line; keep-alives and malformed lines yield `None`.
    fn parse(&self, line: &[u8]) -> Option<T> {
        let text = String::from_utf8_lossy(line);
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        match serde_json::from_str(text) {
            Ok(event) => Some(event),
            Err(e) => {
                let shown: String = text.chars().take(LOGGED_LINE_CHARS).collect();
                let ellipsis = if text.chars().count() > LOGGED_LINE_CHARS {
                    "…"
                } else {
                    ""
                };
                tracing::warn!(
                    stream = %self.name,
                    "skipping malformed line ({e}): {shown}{ellipsis}"
                );
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::stream;

    fn chunks(parts: &[&str]) -> impl Stream<Item = Result<Bytes, String>> + Send + 'static {
        let owned: Vec<Result<Bytes, String>> = parts
            .iter()
            .map(|p| Ok(Bytes::from(p.to_string())))
            .collect();
        stream::iter(owned)
    }

    #[tokio::test]
    async fn splits_lines_across_chunks_and_skips_keepalives() {
        let mut s: NdjsonStream<serde_json::Value> = NdjsonStream::new(
            chunks(&["\n{\"a\":", "1}\n\n{\"b\"", ":2}\n", "{\"c\":3}"]),
            Duration::from_secs(5),
            "test",
        );
        assert_eq!(s.next().await.unwrap()["a"], 1);
        assert_eq!(s.next().await.unwrap()["b"], 2);
        assert_eq!(s.next().await.unwrap()["c"], 3);
        assert_eq!(s.next().await, Err(StreamEnd::Closed));
        assert_eq!(s.next().await, Err(StreamEnd::Closed));
    }

    #[tokio::test]
    async fn overlong_line_is_dropped_and_the_next_one_parses() {
        let long = format!("{{\"junk\":\"{}\"}}", "x".repeat(MAX_LINE_BYTES + 10));
        let parts: Vec<Result<Bytes, String>> = long
            .as_bytes()
            .chunks(64 * 1024)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .chain([Ok(Bytes::from("\n{\"ok\":1}\n"))])
            .collect();
        let mut s: NdjsonStream<serde_json::Value> =
            NdjsonStream::new(stream::iter(parts), Duration::from_secs(5), "test");
        assert_eq!(s.next().await.unwrap()["ok"], 1);
        assert_eq!(s.next().await, Err(StreamEnd::Closed));
    }

    #[tokio::test]
    async fn random_garbage_never_panics_and_valid_lines_survive() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        for _ in 0..200 {
            let mut bytes: Vec<u8> = (0..rng.gen_range(0..300)).map(|_| rng.r#gen()).collect();
            bytes.extend_from_slice(b"\n{\"ok\":true}\n");
            let parts: Vec<Result<Bytes, String>> = bytes
                .chunks(rng.gen_range(1..50))
                .map(|c| Ok(Bytes::copy_from_slice(c)))
                .collect();
            let mut s: NdjsonStream<crate::lichess::Event> =
                NdjsonStream::new(stream::iter(parts), Duration::from_secs(5), "fuzz");
            let mut unknown = 0;
            while let Ok(event) = s.next().await {
                assert!(matches!(event, crate::lichess::Event::Unknown { .. }));
                unknown += 1;
            }
            assert!(unknown >= 1, "the valid last line is read");
        }
    }

    #[tokio::test]
    async fn error_mid_stream_is_reported() {
        let parts: Vec<Result<Bytes, String>> =
            vec![Ok(Bytes::from("{\"a\":1}\n")), Err("reset".to_string())];
        let mut s: NdjsonStream<serde_json::Value> =
            NdjsonStream::new(stream::iter(parts), Duration::from_secs(5), "test");
        assert!(s.next().await.is_ok());
        assert_eq!(s.next().await, Err(StreamEnd::Error("reset".to_string())));
    }
}
