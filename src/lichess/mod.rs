//! Everything the ladder knows about Lichess: its vocabulary (ids, speeds, perfs, time
//! controls, the token, which base URLs may carry it) and the HTTP client.
//!
//! - [`ids`]: `GameId`, `ChallengeId` and the rule that links them,
//! - [`speed`]: `Speed`, `Perf`, `Clock`, `TimeControl` and lila's rules between them,
//! - [`token`]: the redacted `Token`, validated once,
//! - [`types`]: serde wire types as the OpenAPI spec spells them,
//! - [`ndjson`]: line streams with an idle timeout,
//! - [`backoff`]: retry pacing (decorrelated jitter, 429 pause, refused-account retries),
//! - [`pacer`]: the challenge creations of all accounts, paced together (one IP), and the
//!   pause a 429 on a creation sets for all of them,
//! - [`shared_limits`]: a token's turn and 429 pause shared with other processes using it
//!   (the daemon and `calibrate --fetch`),
//! - [`stream_opens`]: how often the event stream may be (re)opened (lila's 30 per 10 min),
//! - [`client`]: `Client`, one per account, the only place HTTP to Lichess happens, the
//!   base-URL rule (https, or http to loopback) and the User-Agent,
//! - [`error`]: the `LichessError` type.

pub mod backoff;
pub mod client;
pub mod error;
pub mod ids;
pub mod ndjson;
pub mod pacer;
pub mod shared_limits;
pub mod speed;
pub mod stream_opens;
pub mod token;
pub mod types;

pub use backoff::{BackoffPolicy, RateLimitPolicy, RetryPolicy};
pub use client::{
    ChallengeRequest, Client, ClientConfig, ExportQuery, LICHESS_URL, TokenOwner, user_agent,
    validate_base_url,
};
pub use error::LichessError;
pub use ids::{BadId, ChallengeId, GameId};
pub use ndjson::{DEFAULT_IDLE_TIMEOUT, NdjsonStream, StreamEnd};
pub use pacer::{Pacer, PacingPolicy};
pub use shared_limits::SharedLimits;
pub use speed::{Clock, Perf, Speed, TimeControl};
pub use stream_opens::{OpenBudgetPolicy, ReconnectPolicy};
pub use token::{Token, TokenError, token_file_permission_problem};
pub use types::*;
