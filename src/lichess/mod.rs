//! The Lichess HTTP client: wire types, NDJSON streams with idle timeouts, rate limits.
//!
//! - [`token`]: the redacted `Token` and how it is loaded,
//! - [`types`]: serde wire types as the OpenAPI spec spells them,
//! - [`ndjson`]: line streams with an idle timeout,
//! - [`backoff`]: retry pacing (decorrelated jitter, 429 pause, refused-account retries),
//! - [`pacer`]: the challenge calls of all accounts, paced together (one IP),
//! - [`client`]: `Client`, one per account, the only place HTTP happens,
//! - [`error`]: the `LichessError` type.

pub mod backoff;
pub mod client;
pub mod error;
pub mod ndjson;
pub mod pacer;
pub mod token;
pub mod types;

pub use backoff::{BackoffPolicy, RateLimitPolicy, RetryPolicy};
pub use client::{ChallengeRequest, Client, ClientConfig, ExportQuery, LICHESS_URL, user_agent};
pub use error::LichessError;
pub use ndjson::{DEFAULT_IDLE_TIMEOUT, NdjsonStream, StreamEnd};
pub use pacer::{Pacer, PacingPolicy};
pub use token::{Token, TokenError, token_file_permission_problem};
pub use types::*;
