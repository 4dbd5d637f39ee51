//! The client's error type: every way a Lichess call can fail, typed so callers can react
//! (reconnect, give up on a game, stop an account) and worded so no token ever appears.

use std::time::Duration;

/// A failed Lichess call. Messages never contain the token (it travels only in a header).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LichessError {
    /// The base URL is unusable (not https, or plain http to a host that is not loopback).
    #[error("invalid Lichess base URL {url:?}: {reason}")]
    BadBaseUrl { url: String, reason: String },
    /// HTTP 401: the token is wrong, revoked or expired.
    #[error(
        "token rejected by {endpoint} (HTTP 401): check that the token is valid and not revoked"
    )]
    TokenRejected { endpoint: String },
    /// HTTP 403: the token lacks a scope, or the account may not do this (e.g. not a bot).
    #[error("forbidden: {endpoint} (HTTP 403): {message}")]
    Forbidden { endpoint: String, message: String },
    /// HTTP 404.
    #[error("not found: {endpoint} (HTTP 404): {message}")]
    NotFound { endpoint: String, message: String },
    /// HTTP 400 with the body's `error` text (illegal move, game over, ...).
    #[error("{endpoint} refused (HTTP 400): {message}")]
    BadRequest { endpoint: String, message: String },
    /// Any other 4xx.
    #[error("{endpoint} answered HTTP {status}: {message}")]
    Status {
        endpoint: String,
        status: u16,
        message: String,
    },
    /// HTTP 429 for Lichess's limit on games between bots (`ratelimit.key` `bot.vsBot.day`):
    /// not a request rate, so nothing is paused or retried; `wait` is how long Lichess says
    /// the limit lasts. `message` says whose limit it is (ours, or the other bot's).
    #[error("{endpoint}: bot-game limit reached (HTTP 429, for {}): {message}", crate::logging::show_duration(*.wait))]
    BotLimit {
        endpoint: String,
        message: String,
        wait: Duration,
    },
    /// HTTP 400 with `ratelimit.key` `bot.vsBot.day`: the *other* bot (the challenger whose
    /// challenge we accepted) is at its daily bot-game limit (lila's `OpponentLimit`). Nothing
    /// of ours is limited; the challenge cannot be accepted until `wait` has passed.
    #[error("{endpoint}: the other bot is at its bot-game limit (HTTP 400, for {}): {message}", crate::logging::show_duration(*.wait))]
    OpponentBotLimit {
        endpoint: String,
        message: String,
        wait: Duration,
    },
    /// Still 429 after the configured number of pauses.
    #[error("{endpoint} still rate limited (HTTP 429) after {attempts} attempts")]
    RateLimited { endpoint: String, attempts: u32 },
    /// 5xx or network failures until the retries ran out.
    #[error("{endpoint} failed after {attempts} attempts: {last}")]
    Unavailable {
        endpoint: String,
        attempts: u32,
        last: String,
    },
    /// The response body did not parse.
    #[error("{endpoint}: unexpected response: {message}")]
    Decode { endpoint: String, message: String },
    /// A stream went quiet for longer than its idle timeout.
    #[error("{endpoint}: no data for {}", crate::logging::show_duration(*.idle))]
    IdleTimeout { endpoint: String, idle: Duration },
}

impl LichessError {
    /// The HTTP status behind this error, if it came from a response.
    pub fn status(&self) -> Option<u16> {
        match self {
            LichessError::TokenRejected { .. } => Some(401),
            LichessError::Forbidden { .. } => Some(403),
            LichessError::NotFound { .. } => Some(404),
            LichessError::BadRequest { .. } | LichessError::OpponentBotLimit { .. } => Some(400),
            LichessError::Status { status, .. } => Some(*status),
            LichessError::RateLimited { .. } | LichessError::BotLimit { .. } => Some(429),
            _ => None,
        }
    }

    /// Whether retrying later could help (network trouble, 5xx, 429, a silent stream).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            LichessError::RateLimited { .. }
                | LichessError::Unavailable { .. }
                | LichessError::IdleTimeout { .. }
        )
    }
}
