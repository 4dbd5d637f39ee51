//! The challenges that wait for a slot: a person's challenge that the policy accepts but that
//! arrives while every slot is busy is not declined at once (the player would be lost to a
//! `later`); it waits, unanswered, up to the account's `max_waiting`, and is accepted when a
//! slot frees, the oldest first. One that Lichess cancels meanwhile (the challenger gave up,
//! or it expired) is forgotten; one that waited [`PATIENCE`] is declined `later` after all.
//! Bots never wait: they are declined at once, so they never stand ahead of a person.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::lichess::{ChallengeId, ChallengeJson};

/// How long a challenge waits at most before it is declined after all: a person does not
/// look at a pending challenge for longer, and lila shows it as pending all that time.
pub const PATIENCE: Duration = Duration::from_secs(10 * 60);

/// The waiting challenges of one account, oldest first.
#[derive(Debug, Default)]
pub struct Waiting {
    queue: VecDeque<(ChallengeJson, Instant)>,
}

impl Waiting {
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Adds a challenge that arrived `now`, unless `max` wait already (or it waits already):
    /// `false` when it was not added.
    pub fn push(&mut self, challenge: ChallengeJson, max: usize, now: Instant) -> bool {
        if self.queue.len() >= max || self.contains(&challenge.id) {
            return false;
        }
        self.queue.push_back((challenge, now));
        true
    }

    pub fn contains(&self, id: &ChallengeId) -> bool {
        self.queue.iter().any(|(c, _)| c.id == *id)
    }

    /// Forgets a challenge (Lichess canceled it); `true` when it was waiting.
    pub fn remove(&mut self, id: &ChallengeId) -> bool {
        let before = self.queue.len();
        self.queue.retain(|(c, _)| c.id != *id);
        self.queue.len() != before
    }

    /// Takes out, oldest first, the challenges that have waited [`PATIENCE`] by `now`.
    pub fn take_expired(&mut self, now: Instant) -> Vec<ChallengeJson> {
        let mut expired = Vec::new();
        while let Some((_, since)) = self.queue.front()
            && now.duration_since(*since) >= PATIENCE
        {
            expired.extend(self.queue.pop_front().map(|(c, _)| c));
        }
        expired
    }

    /// Takes out every challenge, oldest first (the daemon drains: nothing new starts).
    pub fn take_all(&mut self) -> Vec<ChallengeJson> {
        self.queue.drain(..).map(|(c, _)| c).collect()
    }

    /// The waiting challenges, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &ChallengeJson> {
        self.queue.iter().map(|(c, _)| c)
    }

    /// Takes out the challenge at `index` (of [`Waiting::iter`]) with the time it arrived.
    pub fn take(&mut self, index: usize) -> Option<(ChallengeJson, Instant)> {
        self.queue.remove(index)
    }

    /// Puts a challenge taken out by [`Waiting::take`] back in its place.
    pub fn restore(&mut self, index: usize, challenge: ChallengeJson, since: Instant) {
        self.queue
            .insert(index.min(self.queue.len()), (challenge, since));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn challenge(id: &str) -> ChallengeJson {
        let json = format!(
            r#"{{"id":"{id}","url":"https://lichess.org/{id}","status":"created",
            "challenger":{{"id":"ann","name":"Ann"}},"destUser":null,
            "variant":{{"key":"standard","name":"Standard"}},"rated":false,"speed":"blitz",
            "timeControl":{{"type":"clock","limit":180,"increment":0,"show":"3+0"}},
            "color":"random","perf":{{"name":"Blitz"}}}}"#
        );
        serde_json::from_str(&json).expect("a challenge")
    }

    fn ids(challenges: &[ChallengeJson]) -> Vec<String> {
        challenges.iter().map(|c| c.id.to_string()).collect()
    }

    #[test]
    fn oldest_first_up_to_the_bound_and_never_twice() {
        let now = Instant::now();
        let mut waiting = Waiting::default();
        assert!(waiting.push(challenge("aaaa1111"), 2, now));
        assert!(
            !waiting.push(challenge("aaaa1111"), 2, now),
            "the same challenge twice"
        );
        assert!(waiting.push(challenge("bbbb2222"), 2, now));
        assert!(
            !waiting.push(challenge("cccc3333"), 2, now),
            "over the bound"
        );
        assert!(
            !waiting.push(challenge("cccc3333"), 0, now),
            "a bound of 0: no queue"
        );
        // Taken out and put back, a challenge keeps its place and its age.
        let (taken, since) = waiting.take(0).unwrap();
        assert_eq!(ids(std::slice::from_ref(&taken)), ["aaaa1111"]);
        assert_eq!(
            ids(&waiting.iter().cloned().collect::<Vec<_>>()),
            ["bbbb2222"]
        );
        waiting.restore(0, taken, since);
        let order: Vec<_> = waiting.iter().cloned().collect();
        assert_eq!(ids(&order), ["aaaa1111", "bbbb2222"]);
        assert!(waiting.remove(&challenge("bbbb2222").id));
        assert!(waiting.contains(&challenge("aaaa1111").id));
        assert!(waiting.remove(&challenge("aaaa1111").id));
        assert!(!waiting.remove(&challenge("aaaa1111").id));
        assert!(waiting.is_empty());
    }

    #[test]
    fn a_challenge_that_waited_its_patience_comes_out_and_the_younger_stay() {
        let start = Instant::now();
        let mut waiting = Waiting::default();
        waiting.push(challenge("aaaa1111"), 3, start);
        waiting.push(challenge("bbbb2222"), 3, start + Duration::from_secs(60));
        assert!(waiting.take_expired(start + PATIENCE / 2).is_empty());
        let expired = waiting.take_expired(start + PATIENCE);
        assert_eq!(ids(&expired), ["aaaa1111"]);
        assert_eq!(waiting.len(), 1);
        assert_eq!(ids(&waiting.take_all()), ["bbbb2222"]);
        assert!(waiting.is_empty());
    }
}
