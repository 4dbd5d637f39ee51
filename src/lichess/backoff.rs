//! Retry pacing: decorrelated jitter backoff (`min(cap, uniform(base, 3·last))`, reset on
//! success) for 5xx and network errors, and the long pause that follows an HTTP 429.

use std::time::Duration;

use rand::Rng;

/// How a client spaces its retries after 5xx and network errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackoffPolicy {
    /// The smallest pause.
    pub base: Duration,
    /// The largest pause.
    pub cap: Duration,
    /// Attempts per call (the first try included) before the error is returned.
    pub max_attempts: u32,
}

impl Default for BackoffPolicy {
    fn default() -> BackoffPolicy {
        BackoffPolicy {
            base: Duration::from_millis(500),
            cap: Duration::from_secs(30),
            max_attempts: 6,
        }
    }
}

/// What a client does after HTTP 429.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimitPolicy {
    /// How long every call of this client waits after a 429 (Lichess asks for a full minute).
    pub pause: Duration,
    /// How many 429s in a row one call tolerates before returning `RateLimited`.
    pub max_attempts: u32,
}

impl Default for RateLimitPolicy {
    fn default() -> RateLimitPolicy {
        RateLimitPolicy {
            pause: Duration::from_secs(60),
            max_attempts: 5,
        }
    }
}

/// Decorrelated jitter state for one call.
#[derive(Clone, Debug)]
pub struct Backoff {
    policy: BackoffPolicy,
    last: Duration,
}

impl Backoff {
    pub fn new(policy: BackoffPolicy) -> Backoff {
        Backoff {
            policy,
            last: policy.base,
        }
    }

    /// The next pause: uniform between `base` and three times the previous pause, capped.
    pub fn next_delay(&mut self) -> Duration {
        let base = self.policy.base.as_secs_f64();
        let high = (self.last.as_secs_f64() * 3.0).max(base);
        let pick = if high > base {
            rand::thread_rng().gen_range(base..=high)
        } else {
            base
        };
        let delay = Duration::from_secs_f64(pick).min(self.policy.cap);
        self.last = delay;
        delay
    }

    /// Back to the smallest pause (after a success).
    pub fn reset(&mut self) {
        self.last = self.policy.base;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_stay_between_base_and_cap_and_grow() {
        let policy = BackoffPolicy {
            base: Duration::from_millis(100),
            cap: Duration::from_secs(2),
            max_attempts: 10,
        };
        let mut backoff = Backoff::new(policy);
        let mut max_seen = Duration::ZERO;
        for _ in 0..50 {
            let d = backoff.next_delay();
            assert!(d >= policy.base && d <= policy.cap, "{d:?}");
            max_seen = max_seen.max(d);
        }
        // 50 draws of a process that triples its upper bound reach well past the base.
        assert!(max_seen > Duration::from_millis(300));
        backoff.reset();
        assert!(backoff.next_delay() <= Duration::from_millis(300));
    }
}
