//! The search pool: N blocking OS threads shared by every account and game.
//!
//! Searches are CPU work, so they never run on the async runtime's workers. Jobs wait in a
//! priority queue ordered by the game's remaining clock: the game with the least time searches
//! first. Each game actor owns its [`LevelPlayer`] (engine, level, seed) and lends it to the
//! job; it comes back with the result, so a game's searches are reproducible from its seed
//! whatever thread runs them. A job's time limit runs from
//! submission: time spent queued is time off our clock.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::engine::humane::ClockLeft;
use crate::engine::{Game, SearchResult};
use crate::player::LevelPlayer;
use crate::player::deadline::{Deadline, TimeBudget};

/// One search to run.
pub struct SearchJob {
    pub game: Game,
    /// The game's level player, lent to the job and handed back with the result.
    pub player: Box<LevelPlayer>,
    /// The player's clock at submission (the humane model errs more in time trouble, as the
    /// arena's players do: `Seat::choose`).
    pub clock: Option<ClockLeft>,
    /// Wall-clock cap, counted from submission.
    pub time_limit: Duration,
    /// Lower runs first (the game's remaining clock in ms).
    pub urgency_ms: u64,
    /// Set by the game actor when the game ended: a queued job is dropped, a running one stops
    /// at its next poll (after depth 1).
    pub cancel: Arc<AtomicBool>,
}

/// A finished search, with the player handed back.
pub struct SearchDone {
    pub result: SearchResult,
    pub player: Box<LevelPlayer>,
    /// Time in the queue before a thread took the job.
    pub queued: Duration,
    /// Time searching.
    pub searched: Duration,
}

/// Counters for logs, tests and the benchmark.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    pub threads: usize,
    pub running: usize,
    /// The most searches ever running at once.
    pub peak_running: usize,
    pub completed: u64,
    pub cancelled: u64,
    /// Searches waiting for a thread.
    pub queued: usize,
}

struct Queued {
    urgency_ms: u64,
    seq: u64,
    submitted: Instant,
    job: SearchJob,
    reply: oneshot::Sender<SearchDone>,
}

impl PartialEq for Queued {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Queued {
    // BinaryHeap pops the greatest: least time first, then first come first served.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .urgency_ms
            .cmp(&self.urgency_ms)
            .then(other.seq.cmp(&self.seq))
    }
}

#[derive(Default)]
struct Queue {
    heap: BinaryHeap<Queued>,
    seq: u64,
    closed: bool,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
    threads: usize,
    running: AtomicUsize,
    peak: AtomicUsize,
    completed: AtomicU64,
    cancelled: AtomicU64,
}

/// The pool itself; dropping it (or [`SearchPool::shutdown`]) stops the threads after their
/// current search.
pub struct SearchPool {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

/// A cheap clonable handle for submitting jobs.
#[derive(Clone)]
pub struct PoolHandle {
    shared: Arc<Shared>,
}

impl SearchPool {
    /// Starts `threads` search threads; fails (never panics) when the system refuses one
    /// (a unit's TasksMax, the user's process limit).
    pub fn new(threads: usize) -> std::io::Result<SearchPool> {
        let threads = threads.max(1);
        let shared = Arc::new(Shared {
            threads,
            ..Shared::default()
        });
        let mut pool = SearchPool {
            shared,
            threads: Vec::with_capacity(threads),
        };
        for i in 0..threads {
            let shared = Arc::clone(&pool.shared);
            let handle = std::thread::Builder::new()
                .name(format!("search-{i}"))
                .spawn(move || worker(&shared))
                // Dropping `pool` stops the threads already started.
                .map_err(|e| {
                    std::io::Error::new(
                        e.kind(),
                        format!("cannot start search thread {} of {threads}: {e}", i + 1),
                    )
                })?;
            pool.threads.push(handle);
        }
        Ok(pool)
    }

    pub fn handle(&self) -> PoolHandle {
        PoolHandle {
            shared: Arc::clone(&self.shared),
        }
    }

    /// Stops taking jobs, drops the queued ones and waits for running searches to end.
    pub fn shutdown(mut self) {
        self.close();
        for t in self.threads.drain(..) {
            t.join().ok();
        }
    }

    fn close(&self) {
        let mut q = self.shared.queue.lock().expect("pool lock");
        q.closed = true;
        q.heap.clear();
        self.shared.wake.notify_all();
    }
}

impl Drop for SearchPool {
    fn drop(&mut self) {
        self.close();
    }
}

impl PoolHandle {
    /// Queues a job. The receiver yields the result, or an error if the job was cancelled or
    /// the pool shut down.
    pub fn submit(&self, job: SearchJob) -> oneshot::Receiver<SearchDone> {
        let (reply, rx) = oneshot::channel();
        let mut q = self.shared.queue.lock().expect("pool lock");
        if q.closed {
            return rx;
        }
        q.seq += 1;
        let seq = q.seq;
        q.heap.push(Queued {
            urgency_ms: job.urgency_ms,
            seq,
            submitted: Instant::now(),
            job,
            reply,
        });
        drop(q);
        self.shared.wake.notify_one();
        rx
    }

    pub fn stats(&self) -> PoolStats {
        let s = &self.shared;
        PoolStats {
            threads: s.threads,
            running: s.running.load(AtomicOrdering::SeqCst),
            peak_running: s.peak.load(AtomicOrdering::SeqCst),
            completed: s.completed.load(AtomicOrdering::SeqCst),
            cancelled: s.cancelled.load(AtomicOrdering::SeqCst),
            queued: s.queue.lock().expect("pool lock").heap.len(),
        }
    }
}

fn worker(shared: &Shared) {
    loop {
        let queued = {
            let mut q = shared.queue.lock().expect("pool lock");
            loop {
                if q.closed {
                    return;
                }
                if let Some(job) = q.heap.pop() {
                    break job;
                }
                q = shared.wake.wait(q).expect("pool lock");
            }
        };
        let Queued {
            submitted,
            mut job,
            reply,
            ..
        } = queued;
        if job.cancel.load(AtomicOrdering::SeqCst) || reply.is_closed() {
            shared.cancelled.fetch_add(1, AtomicOrdering::SeqCst);
            continue;
        }
        let now = shared.running.fetch_add(1, AtomicOrdering::SeqCst) + 1;
        shared.peak.fetch_max(now, AtomicOrdering::SeqCst);
        let started = Instant::now();
        let mut observer = Deadline::new(submitted, TimeBudget::hard(job.time_limit))
            .with_stop_flag(Arc::clone(&job.cancel));
        job.player.set_clock(job.clock);
        // A search that panics loses its player and its reply (the game actor searches again
        // with a fresh player), not the pool's thread.
        let chosen = std::panic::catch_unwind(AssertUnwindSafe(|| {
            job.player.choose(&job.game, &mut observer)
        }));
        let searched = started.elapsed();
        shared.running.fetch_sub(1, AtomicOrdering::SeqCst);
        shared.completed.fetch_add(1, AtomicOrdering::SeqCst);
        let Ok(result) = chosen else {
            tracing::error!("a search panicked: its game searches again");
            continue;
        };
        // The game actor may have stopped listening (game over): the result is simply dropped.
        reply
            .send(SearchDone {
                result,
                player: job.player,
                queued: started - submitted,
                searched,
            })
            .ok();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::levels::{Coefficients, LevelParams};

    fn job(urgency_ms: u64) -> SearchJob {
        SearchJob {
            game: Game::startpos(),
            player: Box::new(LevelPlayer::new(
                LevelParams::new(&Coefficients::builtin(), 3.0),
                urgency_ms,
            )),
            clock: None,
            time_limit: Duration::from_millis(50),
            urgency_ms,
            cancel: Arc::new(AtomicBool::new(false)),
        }
    }

    #[tokio::test]
    async fn the_player_searches_with_the_clock_of_its_job() {
        let pool = SearchPool::new(1).unwrap();
        let h = pool.handle();
        let low = ClockLeft {
            remaining_ms: 4_000,
            initial_ms: 180_000,
        };
        let mut timed = job(1);
        timed.clock = Some(low);
        let done = h.submit(timed).await.unwrap();
        assert_eq!(done.player.clock(), Some(low));
        // A job without a clock clears the one the player carried.
        let mut untimed = job(2);
        untimed.player = done.player;
        let done = h.submit(untimed).await.unwrap();
        assert_eq!(done.player.clock(), None);
        pool.shutdown();
    }

    #[tokio::test]
    async fn every_job_gets_a_legal_move_and_its_player_back() {
        let pool = SearchPool::new(2).unwrap();
        let h = pool.handle();
        let rxs: Vec<_> = (0..8).map(|i| h.submit(job(i))).collect();
        for rx in rxs {
            let done = rx.await.unwrap();
            let m = done.result.best_move.unwrap();
            assert!(Game::startpos().legal_moves().contains(&m));
            assert_eq!(done.player.params().level, 3.0);
        }
        let stats = h.stats();
        assert_eq!(stats.completed, 8);
        assert!(stats.peak_running <= 2);
        pool.shutdown();
    }

    #[tokio::test]
    async fn a_search_that_panics_loses_its_reply_not_the_pools_thread() {
        let pool = SearchPool::new(1).unwrap();
        let h = pool.handle();
        let mut doomed = job(1);
        doomed.player.panic_on_choose = true;
        assert!(
            h.submit(doomed).await.is_err(),
            "no reply from a panicked search"
        );
        // The pool's one thread still searches.
        let done = tokio::time::timeout(Duration::from_secs(30), h.submit(job(2)))
            .await
            .expect("the pool's thread died with the search")
            .unwrap();
        assert!(done.result.best_move.is_some());
        pool.shutdown();
    }

    #[test]
    fn least_time_pops_first() {
        let mut heap = BinaryHeap::new();
        for (seq, urgency_ms) in [(1, 5000), (2, 100), (3, 100), (4, 9000)] {
            heap.push(Queued {
                urgency_ms,
                seq,
                submitted: Instant::now(),
                job: job(urgency_ms),
                reply: oneshot::channel().0,
            });
        }
        let order: Vec<u64> = std::iter::from_fn(|| heap.pop().map(|q| q.seq)).collect();
        assert_eq!(order, [2, 3, 1, 4]);
    }

    #[tokio::test]
    async fn cancelled_job_is_dropped() {
        let pool = SearchPool::new(1).unwrap();
        let j = job(1);
        j.cancel.store(true, AtomicOrdering::SeqCst);
        assert!(pool.handle().submit(j).await.is_err());
        assert_eq!(pool.handle().stats().cancelled, 1);
    }
}
