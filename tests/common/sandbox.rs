//! The sandbox as the in-process daemon tests set it up: quick keep-alives, random game ids
//! (the log buffer is shared by the tests, ids must not collide), challengers that challenge
//! only when asked, and clients with short timeouts so that faults resolve within a test.

use std::time::Duration;

use ladder::lichess::{BackoffPolicy, ClientConfig};
use ladder::sandbox::{ChallengerConfig, SandboxConfig};

/// A sandbox with `bots`, keep-alives every 300 ms and random game ids.
pub fn sandbox_config(bots: &[&str]) -> SandboxConfig {
    let mut config = SandboxConfig::with_bots(bots);
    config.keepalive_interval = Duration::from_millis(300);
    // Random game ids: the log buffer is shared by the tests, ids must not collide.
    config.seed = None;
    config
}

/// A scriptable challenger: challenges only when asked, thinks 10 ms, up to four games.
pub fn challenger(name: &str) -> ChallengerConfig {
    let mut c = ChallengerConfig::new(name);
    c.interval = None;
    c.think_time = Duration::from_millis(10);
    c.max_games = 4;
    c
}

/// Short stream idle timeout, backoff, request timeout and 429 pause (1 s, not lila's minute),
/// so faults resolve within a test.
pub fn quick(mut c: ClientConfig) -> ClientConfig {
    c.stream_idle_timeout = Duration::from_millis(1500);
    c.rate_limit.pause = Duration::from_secs(1);
    c.backoff = BackoffPolicy {
        base: Duration::from_millis(50),
        cap: Duration::from_millis(500),
        max_attempts: 6,
    };
    c.request_timeout = Duration::from_secs(5);
    c
}
