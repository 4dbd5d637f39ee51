//! The pacer of challenge calls: Lichess limits the challenges created per IP address (lila's
//! `challenge.create.ip`: 500 per 10 minutes, in `controllers/Challenge.scala`'s `apiCreate`),
//! and every account of one process shares the process's IP. So creating challenges — of all
//! accounts — goes through one [`Pacer`]: a token bucket (a burst, then one call per interval).
//! An HTTP 429 on a challenge creation pauses every account's creations for its pause.
//! Answers (accept, decline, cancel) never go through the pacer: lila limits none of them per
//! IP, and a person's challenge expires 20 s after it is made, so an answer queued behind
//! others' turns or another account's 429 is a game lost (the soak saw 61 challenges expire
//! while their answers waited; an emulator run saw 4 expire while another account waited out
//! its 429). Moves and other game calls are never paced.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

/// How fast paced calls may go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacingPolicy {
    /// One call per this interval once the burst is spent.
    pub interval: Duration,
    /// Calls that may go at once after a quiet time.
    pub burst: u32,
}

impl Default for PacingPolicy {
    /// 500 per 10 minutes (one per 1.2 s) with a burst of 20: the ladder's accounts answering
    /// a wave of challenges together stay under lila's per-IP limit.
    fn default() -> PacingPolicy {
        PacingPolicy {
            interval: Duration::from_millis(1200),
            burst: 20,
        }
    }
}

struct State {
    /// When the bucket is full again; a call may go while this is at most
    /// `burst · interval` ahead of now (GCRA, the "theoretical arrival time").
    full_at: Instant,
    /// Set by a 429 on a creation: no paced call before this instant.
    paused_until: Option<Instant>,
}

/// One shared pacer; cheap to clone (clones share the bucket and the pause).
#[derive(Clone)]
pub struct Pacer {
    policy: PacingPolicy,
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for Pacer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pacer")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl Pacer {
    pub fn new(policy: PacingPolicy) -> Pacer {
        Pacer {
            policy,
            state: Arc::new(Mutex::new(State {
                full_at: Instant::now(),
                paused_until: None,
            })),
        }
    }

    pub fn policy(&self) -> PacingPolicy {
        self.policy
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // The state is two instants: a panic elsewhere cannot leave it inconsistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes a turn at `now`: `None` when the call may go, or how long to wait first. A turn
    /// is only taken when it is granted.
    fn try_take(&self, now: Instant) -> Option<Duration> {
        let mut state = self.lock();
        if let Some(until) = state.paused_until {
            if until > now {
                return Some(until - now);
            }
            state.paused_until = None;
        }
        let interval = self.policy.interval;
        let window = interval.saturating_mul(self.policy.burst.max(1));
        let full_at = state.full_at.max(now);
        let after = full_at + interval;
        if after > now + window {
            return Some(after - (now + window));
        }
        state.full_at = after;
        None
    }

    /// Waits for a turn.
    pub async fn turn(&self) {
        while let Some(wait) = self.try_take(Instant::now()) {
            tokio::time::sleep(wait).await;
        }
    }

    /// Stops every paced call for `pause` (after an HTTP 429 on a challenge creation).
    pub fn pause(&self, pause: Duration) {
        let until = Instant::now() + pause;
        let mut state = self.lock();
        state.paused_until = Some(state.paused_until.map_or(until, |t| t.max(until)));
    }

    /// When the current pause ends, if one is running.
    pub fn paused_until(&self) -> Option<Instant> {
        self.lock().paused_until.filter(|&t| t > Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pacer(interval_ms: u64, burst: u32) -> Pacer {
        Pacer::new(PacingPolicy {
            interval: Duration::from_millis(interval_ms),
            burst,
        })
    }

    #[test]
    fn a_burst_goes_then_one_call_per_interval() {
        let p = pacer(100, 3);
        let t = Instant::now();
        for _ in 0..3 {
            assert_eq!(p.try_take(t), None);
        }
        let wait = p.try_take(t).expect("the burst is spent");
        assert_eq!(wait, Duration::from_millis(100));
        // A refused turn is not taken: the same wait is still due.
        assert_eq!(p.try_take(t), Some(wait));
        assert_eq!(p.try_take(t + wait), None);
        assert!(p.try_take(t + wait).is_some());
        // After a quiet time the whole burst is back, and no more.
        let later = t + Duration::from_secs(10);
        for _ in 0..3 {
            assert_eq!(p.try_take(later), None);
        }
        assert!(p.try_take(later).is_some());
    }

    #[tokio::test]
    async fn a_pause_stops_every_clone_for_its_whole_length() {
        let p = pacer(1, 100);
        let other = p.clone();
        p.pause(Duration::from_millis(300));
        let wait = other.try_take(Instant::now()).expect("paused");
        assert!(wait > Duration::from_millis(250), "{wait:?}");
        assert!(other.paused_until().is_some());
        // A shorter pause never shortens a running one.
        p.pause(Duration::from_millis(10));
        assert!(other.try_take(Instant::now()).unwrap() > Duration::from_millis(200));
        let start = Instant::now();
        other.turn().await;
        assert!(start.elapsed() >= Duration::from_millis(250));
    }
}
