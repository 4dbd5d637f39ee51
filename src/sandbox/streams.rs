//! NDJSON response bodies of the sandbox: queued lines, an empty keep-alive line at a fixed
//! interval, and the "silent" fault (a stuck connection sends nothing and loses what it
//! should have sent). The stream ends when the world drops its sender.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

use super::world::StreamReader;

struct BodyState {
    reader: StreamReader,
    keepalive: tokio::time::Interval,
}

/// A streaming `application/x-ndjson` response fed by `reader`.
pub fn ndjson_response(reader: StreamReader, keepalive_every: Duration) -> Response {
    let mut keepalive = tokio::time::interval(keepalive_every);
    keepalive.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The first tick of an interval fires at once; the first keep-alive is due one period in.
    keepalive.reset();
    let state = BodyState { reader, keepalive };
    let stream = futures_util::stream::unfold(state, |mut state| async move {
        loop {
            tokio::select! {
                line = state.reader.rx.recv() => {
                    let line = line?;
                    if state.reader.control.is_silent() {
                        continue;
                    }
                    let mut bytes = line.into_bytes();
                    bytes.push(b'\n');
                    return Some((Ok::<Bytes, Infallible>(Bytes::from(bytes)), state));
                }
                _ = state.keepalive.tick() => {
                    if state.reader.control.is_silent() {
                        continue;
                    }
                    return Some((Ok(Bytes::from_static(b"\n")), state));
                }
            }
        }
    });
    let mut response = Body::from_stream(stream).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    response
}
