//! The global cap on games (`daemon.max_games`, over all accounts): a count of the games
//! running or promised (accepted, not started yet) against the configured cap, which the
//! supervisor owns and changes on reload.
//!
//! Every game holds a [`Slot`] for as long as it runs, also a game that started over the cap
//! (a `gameStart` nobody asked for is played, see account.rs): so the count is always the
//! number of games, and a lowered cap takes effect as games end: nothing new starts until the
//! count is below the new cap. Raising the cap adds exactly the difference.

use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Debug)]
struct Counts {
    cap: usize,
    used: usize,
}

/// The shared count; cheap to clone.
#[derive(Clone, Debug)]
pub struct GameSlots {
    counts: Arc<Mutex<Counts>>,
}

/// One game's place in the count; dropping it frees the place.
#[derive(Debug)]
pub struct Slot {
    counts: Arc<Mutex<Counts>>,
}

fn lock(counts: &Mutex<Counts>) -> MutexGuard<'_, Counts> {
    // Two integers updated together: a panic elsewhere cannot leave them half-written.
    counts.lock().unwrap_or_else(|e| e.into_inner())
}

impl GameSlots {
    pub fn new(cap: usize) -> GameSlots {
        GameSlots {
            counts: Arc::new(Mutex::new(Counts { cap, used: 0 })),
        }
    }

    /// A slot if fewer games than the cap are running or promised.
    pub fn try_take(&self) -> Option<Slot> {
        let mut counts = lock(&self.counts);
        if counts.used >= counts.cap {
            return None;
        }
        counts.used += 1;
        Some(self.slot())
    }

    /// A slot for a game that runs whatever the cap says (it has started already).
    pub fn take_over_cap(&self) -> Slot {
        lock(&self.counts).used += 1;
        self.slot()
    }

    fn slot(&self) -> Slot {
        Slot {
            counts: Arc::clone(&self.counts),
        }
    }

    /// The new configured cap (reload). Running games keep their slots.
    pub fn set_cap(&self, cap: usize) {
        lock(&self.counts).cap = cap;
    }

    pub fn cap(&self) -> usize {
        lock(&self.counts).cap
    }

    /// Games running or promised.
    pub fn used(&self) -> usize {
        lock(&self.counts).used
    }

    pub fn is_full(&self) -> bool {
        let counts = lock(&self.counts);
        counts.used >= counts.cap
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut counts = lock(&self.counts);
        counts.used = counts.used.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lowered_cap_waits_for_games_to_end_and_a_raised_one_adds_the_difference() {
        let slots = GameSlots::new(4);
        let mut running: Vec<Slot> = (0..4).map(|_| slots.try_take().unwrap()).collect();
        assert!(slots.try_take().is_none());
        slots.set_cap(1);
        running.pop();
        running.pop();
        assert_eq!(slots.used(), 2);
        assert!(slots.try_take().is_none(), "2 running, cap 1");
        running.pop();
        assert!(slots.try_take().is_none(), "1 running, cap 1");
        running.pop();
        let one = slots.try_take().expect("0 running, cap 1");
        assert!(slots.try_take().is_none());
        slots.set_cap(3);
        let two = slots.try_take().unwrap();
        let three = slots.try_take().unwrap();
        assert!(
            slots.try_take().is_none(),
            "never more than the configured 3"
        );
        drop((one, two, three));
        assert_eq!(slots.used(), 0);
    }

    #[test]
    fn a_game_over_the_cap_counts_until_it_ends() {
        let slots = GameSlots::new(1);
        let forced = slots.take_over_cap();
        assert!(slots.is_full());
        assert!(slots.try_take().is_none());
        drop(forced);
        assert!(slots.try_take().is_some());
    }
}
