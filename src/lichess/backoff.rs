//! Retry pacing: decorrelated jitter backoff (`min(cap, uniform(base, 3·last))`, reset on
//! success) for 5xx and network errors, the long pause that follows an HTTP 429, and the slow
//! doubling retry of an account Lichess refuses (token rejected, account closed).

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

/// How often the daemon asks again about an account Lichess refused (token rejected, account
/// closed, not a bot): a repair takes a person, so the checks start slow and grow slower.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The first pause.
    pub first: Duration,
    /// The longest pause.
    pub cap: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            first: Duration::from_secs(30),
            cap: Duration::from_secs(30 * 60),
        }
    }
}

/// Capped doubling: `first`, `2·first`, `4·first`, … up to `cap`.
#[derive(Clone, Debug)]
pub struct Doubling {
    policy: RetryPolicy,
    next: Duration,
}

impl Doubling {
    pub fn new(policy: RetryPolicy) -> Doubling {
        Doubling {
            policy,
            next: policy.first.min(policy.cap),
        }
    }

    pub fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = self.next.saturating_mul(2).min(self.policy.cap);
        delay
    }

    /// Back to the first pause (after the account worked again).
    pub fn reset(&mut self) {
        self.next = self.policy.first.min(self.policy.cap);
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
    fn doubling_grows_to_its_cap_and_resets() {
        let mut d = Doubling::new(RetryPolicy::default());
        let delays: Vec<u64> = (0..9).map(|_| d.next_delay().as_secs()).collect();
        assert_eq!(delays, [30, 60, 120, 240, 480, 960, 1800, 1800, 1800]);
        d.reset();
        assert_eq!(d.next_delay(), Duration::from_secs(30));
    }

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
