//! How often an account's event stream may be opened. lila allows 30 opens of
//! `/api/stream/event` per 10 minutes per token, and the 429 after that pauses the whole
//! account (its moves included) for a minute or more. A stream that closes right after it opens
//! (a second process on the token, a proxy) must therefore never turn into a reconnect loop:
//!
//! - [`ReconnectPacing`]: the wait before the next open grows (doubling, jittered) while the
//!   streams keep closing young, and goes back to the smallest only after a stream stayed up
//!   for `stable_after` (events on a young stream prove nothing: a reopened stream replays the
//!   running games and open challenges at once);
//! - [`OpenBudget`]: a sliding window of the opens themselves, a hard bound below lila's that
//!   holds whatever the pacing does (the client waits for it before each open).

use std::collections::VecDeque;
use std::time::Duration;

use rand::Rng;
use tokio::time::Instant;

/// lila's limit: 30 event-stream opens per 10 minutes per token.
pub const LILA_OPENS: u32 = 30;
pub const LILA_WINDOW: Duration = Duration::from_secs(600);

/// At most `max` opens in any `window`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenBudgetPolicy {
    pub max: u32,
    pub window: Duration,
}

impl Default for OpenBudgetPolicy {
    /// Five under lila's 30 per 10 minutes: a margin for clocks that disagree on the window.
    fn default() -> OpenBudgetPolicy {
        OpenBudgetPolicy {
            max: LILA_OPENS - 5,
            window: LILA_WINDOW,
        }
    }
}

/// The opens of one token's event stream in the last `window`.
#[derive(Clone, Debug)]
pub struct OpenBudget {
    policy: OpenBudgetPolicy,
    opens: VecDeque<Instant>,
}

impl OpenBudget {
    pub fn new(policy: OpenBudgetPolicy) -> OpenBudget {
        OpenBudget {
            policy,
            opens: VecDeque::new(),
        }
    }

    /// Takes an open at `now` when the window has room (`None`), or says how long until it
    /// has (`Some(wait)`, nothing taken).
    pub fn try_take(&mut self, now: Instant) -> Option<Duration> {
        while self
            .opens
            .front()
            .is_some_and(|&at| now.duration_since(at) >= self.policy.window)
        {
            self.opens.pop_front();
        }
        if self.opens.len() < self.policy.max.max(1) as usize {
            self.opens.push_back(now);
            return None;
        }
        let oldest = *self.opens.front().expect("full, so not empty");
        Some((oldest + self.policy.window).saturating_duration_since(now))
    }
}

/// How the event stream reconnects: doubling from `base` to `cap` (each wait jittered down to
/// half of it), back to `base` only once a stream stayed up `stable_after`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReconnectPolicy {
    pub base: Duration,
    pub cap: Duration,
    pub stable_after: Duration,
}

impl Default for ReconnectPolicy {
    fn default() -> ReconnectPolicy {
        ReconnectPolicy {
            base: Duration::from_millis(500),
            cap: Duration::from_secs(60),
            stable_after: Duration::from_secs(60),
        }
    }
}

/// The reconnect waits of one account's event stream.
#[derive(Clone, Debug)]
pub struct ReconnectPacing {
    policy: ReconnectPolicy,
    /// Reconnects since the last stream that stayed up.
    young_ends: u32,
    opened_at: Option<Instant>,
}

impl ReconnectPacing {
    pub fn new(policy: ReconnectPolicy) -> ReconnectPacing {
        ReconnectPacing {
            policy,
            young_ends: 0,
            opened_at: None,
        }
    }

    /// The stream opened (its headers came) at `now`.
    pub fn opened(&mut self, now: Instant) {
        self.opened_at = Some(now);
    }

    /// The wait before the next open, the stream (or its open) having ended at `now`.
    pub fn next_delay(&mut self, now: Instant) -> Duration {
        let stayed_up = self
            .opened_at
            .take()
            .is_some_and(|at| now.duration_since(at) >= self.policy.stable_after);
        if stayed_up {
            self.young_ends = 0;
        }
        let full = self
            .policy
            .base
            .saturating_mul(1u32 << self.young_ends.min(20))
            .min(self.policy.cap);
        self.young_ends = self.young_ends.saturating_add(1);
        // Jittered down to half, never below the base: accounts flapping together spread out.
        let low = (full / 2).max(self.policy.base).min(full);
        if low >= full {
            return full;
        }
        rand::thread_rng().gen_range(low..=full)
    }

    /// How many reconnects in a row followed a stream that did not stay up.
    pub fn young_ends(&self) -> u32 {
        self.young_ends
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_never_lets_more_opens_into_a_window_than_its_max() {
        let policy = OpenBudgetPolicy {
            max: 3,
            window: Duration::from_secs(10),
        };
        let mut budget = OpenBudget::new(policy);
        let start = Instant::now();
        let mut opens = Vec::new();
        let mut now = start;
        // Someone asking every 100 ms for a minute, waiting when told to.
        while now < start + Duration::from_secs(60) {
            match budget.try_take(now) {
                None => opens.push(now),
                Some(wait) => {
                    assert!(wait > Duration::ZERO && wait <= policy.window, "{wait:?}");
                }
            }
            now += Duration::from_millis(100);
        }
        for (i, &at) in opens.iter().enumerate() {
            let in_window = opens[i..]
                .iter()
                .take_while(|&&later| later.duration_since(at) < policy.window)
                .count();
            assert!(in_window <= 3, "{in_window} opens within 10 s from {i}");
        }
        // 3 per 10 s over a minute: the budget is used, not starved.
        assert_eq!(opens.len(), 18, "{opens:?}");
    }

    #[test]
    fn the_default_budget_stays_under_lilas_limit() {
        let policy = OpenBudgetPolicy::default();
        assert!(policy.max < LILA_OPENS && policy.window >= LILA_WINDOW);
    }

    #[test]
    fn events_on_a_young_stream_do_not_reset_the_wait() {
        let policy = ReconnectPolicy::default();
        let mut pacing = ReconnectPacing::new(policy);
        let mut now = Instant::now();
        let mut delays = Vec::new();
        for _ in 0..8 {
            pacing.opened(now);
            // The reopened stream replays the running games at once, then closes.
            now += Duration::from_millis(50);
            let delay = pacing.next_delay(now);
            delays.push(delay);
            now += delay;
        }
        // Doubling from 0.5 s (each jittered to at least half): the eighth wait is at least
        // half of min(60 s, 0.5 s · 2^7) = 32 s.
        assert!(delays[7] >= Duration::from_secs(30), "{delays:?}");
        let total: Duration = delays.iter().sum();
        assert!(total >= Duration::from_secs(60), "{delays:?}");
        assert_eq!(pacing.young_ends(), 8);
    }

    #[test]
    fn a_stream_that_stayed_up_starts_the_waits_over() {
        let policy = ReconnectPolicy::default();
        let mut pacing = ReconnectPacing::new(policy);
        let mut now = Instant::now();
        for _ in 0..5 {
            pacing.opened(now);
            now += Duration::from_secs(1);
            now += pacing.next_delay(now);
        }
        pacing.opened(now);
        now += policy.stable_after;
        assert_eq!(pacing.next_delay(now), policy.base);
        // A failed open (no stream at all) counts as a young end.
        assert!(pacing.next_delay(now) >= policy.base);
        assert_eq!(pacing.young_ends(), 2);
    }
}
