//! Wall-clock Unix time in milliseconds: the one clock reading of records, open games and the
//! sandbox's timestamps (the engine and the players never read it).

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
