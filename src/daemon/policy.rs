//! The challenge policy: accept a challenge, or decline it with the reason Lichess shows the
//! challenger. A pure function of the account's policy, the challenge and the current load.

use crate::config::ChallengePolicy;
use crate::lichess::{Speed, TimeControl};

/// The facts of an incoming challenge the policy looks at.
#[derive(Clone, Debug, PartialEq)]
pub struct ChallengeFacts {
    pub challenger_id: String,
    pub challenger_is_bot: bool,
    /// A person who is not logged in (`challenger: null`).
    pub challenger_is_anonymous: bool,
    /// Lichess variant key: standard, chess960, fromPosition, …
    pub variant: String,
    pub speed: Speed,
    pub rated: bool,
    pub time_control: TimeControl,
}

/// Games already running or promised, as seen by the account when the challenge arrives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Load {
    /// Games of this account (running or accepted and not started yet).
    pub account_games: usize,
    /// Of those, against this challenger.
    pub opponent_games: usize,
    /// No global game slot is free.
    pub global_full: bool,
    /// The account has played (or promised) Lichess's daily maximum of games against bots.
    pub bot_games_full: bool,
    /// The daemon is shutting down: nothing new starts.
    pub draining: bool,
}

/// A Lichess decline reason: the client's wire type, so the policy decides in the API's terms.
pub use crate::lichess::types::DeclineReason as Reason;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Accept,
    Decline(Reason),
}

/// Decides one challenge. Permanent refusals (who, what) come before temporary ones (load), so
/// a challenger is not told "later" for a game we would never play.
pub fn decide(policy: &ChallengePolicy, c: &ChallengeFacts, load: Load) -> Decision {
    use Decision::Decline;
    if policy.block.iter().any(|b| b == &c.challenger_id) {
        return Decline(Reason::Generic);
    }
    if c.challenger_is_bot && !policy.accept_bots {
        return Decline(Reason::NoBot);
    }
    if c.challenger_is_anonymous && !policy.accept_anonymous {
        // Only a logged-in person can send a rated challenge: "rated" says log in.
        return Decline(if policy.rated {
            Reason::Rated
        } else {
            Reason::Generic
        });
    }
    if !policy.variants.iter().any(|v| v == &c.variant) {
        let standard_only = policy.variants.iter().all(|v| v == "standard");
        return Decline(if standard_only {
            Reason::Standard
        } else {
            Reason::Variant
        });
    }
    if let Some(reason) = time_control_reason(policy, c) {
        return Decline(reason);
    }
    if c.rated && !policy.rated {
        return Decline(Reason::Casual);
    }
    if !c.rated && !policy.casual {
        return Decline(Reason::Rated);
    }
    if load.draining
        || load.global_full
        || (c.challenger_is_bot && load.bot_games_full)
        || load.account_games >= policy.max_games
        || load.opponent_games >= policy.max_games_per_opponent
    {
        return Decline(Reason::Later);
    }
    Decision::Accept
}

fn time_control_reason(policy: &ChallengePolicy, c: &ChallengeFacts) -> Option<Reason> {
    if c.speed == Speed::Other {
        // A speed this build does not know: neither too fast nor too slow, just not ours.
        return Some(Reason::TimeControl);
    }
    if !policy.speeds.contains(&c.speed) {
        // Speeds are ordered fastest first.
        return Some(
            match (policy.speeds.iter().min(), policy.speeds.iter().max()) {
                (Some(&fastest), _) if c.speed < fastest => Reason::TooFast,
                (_, Some(&slowest)) if c.speed > slowest => Reason::TooSlow,
                _ => Reason::TimeControl,
            },
        );
    }
    match c.time_control {
        TimeControl::Unlimited | TimeControl::Other(_) => Some(Reason::TimeControl),
        TimeControl::Correspondence { days_per_turn } => {
            let days = u64::from(days_per_turn.unwrap_or(0));
            if days < policy.days.min {
                Some(Reason::TooFast)
            } else if days > policy.days.max {
                Some(Reason::TooSlow)
            } else {
                None
            }
        }
        TimeControl::Clock {
            limit, increment, ..
        } => {
            let (limit_s, increment_s) = (u64::from(limit), u64::from(increment));
            if limit_s < policy.initial_s.min || increment_s < policy.increment_s.min {
                Some(Reason::TooFast)
            } else if limit_s > policy.initial_s.max || increment_s > policy.increment_s.max {
                Some(Reason::TooSlow)
            } else {
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blitz() -> ChallengeFacts {
        ChallengeFacts {
            challenger_id: "alice".into(),
            challenger_is_bot: false,
            challenger_is_anonymous: false,
            variant: "standard".into(),
            speed: Speed::Blitz,
            rated: true,
            time_control: TimeControl::clock(180, 2),
        }
    }

    fn decline(p: &ChallengePolicy, c: &ChallengeFacts) -> Option<Reason> {
        match decide(p, c, Load::default()) {
            Decision::Accept => None,
            Decision::Decline(r) => Some(r),
        }
    }

    #[test]
    fn accepts_an_ordinary_blitz_challenge() {
        assert_eq!(
            decide(&ChallengePolicy::default(), &blitz(), Load::default()),
            Decision::Accept
        );
    }

    #[test]
    fn every_reason_is_the_one_lichess_expects() {
        let p = ChallengePolicy {
            accept_bots: false,
            block: vec!["troll".into()],
            rated: false,
            ..ChallengePolicy::default()
        };
        let with = |f: &dyn Fn(&mut ChallengeFacts)| {
            let mut c = blitz();
            c.rated = false;
            f(&mut c);
            decline(&p, &c)
        };
        assert_eq!(
            with(&|c| c.challenger_id = "troll".into()),
            Some(Reason::Generic)
        );
        assert_eq!(with(&|c| c.challenger_is_bot = true), Some(Reason::NoBot));
        assert_eq!(
            with(&|c| c.variant = "atomic".into()),
            Some(Reason::Standard)
        );
        assert_eq!(
            with(&|c| c.speed = Speed::UltraBullet),
            Some(Reason::TooFast)
        );
        assert_eq!(with(&|c| c.speed = Speed::Classical), Some(Reason::TooSlow));
        assert_eq!(
            with(&|c| c.time_control = TimeControl::clock(30, 0)),
            Some(Reason::TooFast)
        );
        assert_eq!(
            with(&|c| c.time_control = TimeControl::clock(180, 60)),
            Some(Reason::TooSlow)
        );
        assert_eq!(with(&|c| c.rated = true), Some(Reason::Casual));
        let casual_off = ChallengePolicy {
            casual: false,
            ..ChallengePolicy::default()
        };
        let mut c = blitz();
        c.rated = false;
        assert_eq!(decline(&casual_off, &c), Some(Reason::Rated));
        let mut variants = ChallengePolicy::default();
        variants.variants.push("chess960".into());
        c.variant = "atomic".into();
        assert_eq!(decline(&variants, &c), Some(Reason::Variant));
        let mut corr = ChallengePolicy::default();
        corr.speeds.push(Speed::Correspondence);
        let mut c = blitz();
        c.speed = Speed::Correspondence;
        c.time_control = TimeControl::Unlimited;
        assert_eq!(decline(&corr, &c), Some(Reason::TimeControl));
    }

    #[test]
    fn anonymous_people_are_declined_by_default_with_a_reason_and_unknown_speeds_too() {
        let mut c = blitz();
        c.challenger_id = "anonymous:abcd1234".into();
        c.challenger_is_anonymous = true;
        let p = ChallengePolicy::default();
        assert_eq!(decline(&p, &c), Some(Reason::Rated), "rated: log in");
        let casual_only = ChallengePolicy {
            rated: false,
            ..ChallengePolicy::default()
        };
        assert_eq!(decline(&casual_only, &c), Some(Reason::Generic));
        let welcome = ChallengePolicy {
            accept_anonymous: true,
            ..ChallengePolicy::default()
        };
        assert_eq!(decline(&welcome, &c), None);
        let mut other = blitz();
        other.speed = Speed::Other;
        assert_eq!(decline(&p, &other), Some(Reason::TimeControl));
    }

    #[test]
    fn limits_and_draining_say_later_but_only_for_games_we_would_play() {
        let p = ChallengePolicy::default();
        let full = Load {
            account_games: p.max_games,
            ..Load::default()
        };
        let same_opponent = Load {
            account_games: 1,
            opponent_games: 1,
            ..Load::default()
        };
        let global = Load {
            global_full: true,
            ..Load::default()
        };
        let draining = Load {
            draining: true,
            ..Load::default()
        };
        for load in [full, same_opponent, global, draining] {
            let decision = decide(&p, &blitz(), load);
            assert_eq!(decision, Decision::Decline(Reason::Later), "{load:?}");
        }
        let bots_done = Load {
            bot_games_full: true,
            ..Load::default()
        };
        let mut bot = blitz();
        bot.challenger_is_bot = true;
        assert_eq!(
            decide(&p, &bot, bots_done),
            Decision::Decline(Reason::Later)
        );
        assert_eq!(
            decide(&p, &blitz(), bots_done),
            Decision::Accept,
            "the daily limit is on games against bots only"
        );
        let mut atomic = blitz();
        atomic.variant = "atomic".into();
        assert_eq!(
            decide(&p, &atomic, draining),
            Decision::Decline(Reason::Standard)
        );
    }
}
