//! Whether an account can play: the check of its token against Lichess (whose token, a BOT
//! account, not closed), the reasons it cannot, and how soon to ask again.
//!
//! Two kinds of trouble, retried differently: a *refusal* needs a person (a revoked token, a
//! closed account, an account that is not a bot), so it is an ERROR retried slowly (capped
//! doubling, 30 s to 30 min by default); an *outage* (Lichess unreachable, 5xx) fixes itself,
//! so it is a WARN retried quickly (jittered backoff up to a minute). Neither stops the daemon
//! or another account, and the account recovers by itself when the check passes again.

use std::time::Duration;

use crate::config::Account;
use crate::lichess::backoff::{Backoff, Doubling};
use crate::lichess::{BackoffPolicy, Client, LichessError, RetryPolicy};

/// Why an account cannot play now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trouble {
    /// A few words for the status line: `token rejected`, `account closed`, …
    pub short: String,
    /// The whole story for the log, with what to do. Never the token.
    pub detail: String,
    /// A person must act (true), or it passes by itself (an outage).
    pub refused: bool,
}

impl Trouble {
    pub fn refused(short: &str, detail: String) -> Trouble {
        Trouble {
            short: short.to_string(),
            detail,
            refused: true,
        }
    }

    pub fn outage(detail: String) -> Trouble {
        Trouble {
            short: "Lichess unreachable".to_string(),
            detail,
            refused: false,
        }
    }

    /// The trouble behind a failed call of a playing account (its event stream), or `None`
    /// when the error is not about the account (the caller reconnects as usual).
    pub fn of_call(account: &str, e: &LichessError) -> Option<Trouble> {
        match e {
            LichessError::TokenRejected { .. } => Some(Trouble::refused(
                "token rejected",
                format!(
                    "account {account}: the token was rejected (HTTP 401): it was revoked or \
                     expired; put a new token (scope bot:play) where token_env/token_file says"
                ),
            )),
            LichessError::Forbidden { message, .. } => Some(Trouble::refused(
                "forbidden",
                format!(
                    "account {account}: Lichess refuses it (HTTP 403: {message}); check the \
                     token's scopes (bot:play) and the account's standing"
                ),
            )),
            _ => None,
        }
    }
}

/// Checks that `client`'s token works and belongs to the BOT account `account`, which is not
/// closed. Returns the Lichess user id.
pub async fn verify(account: &Account, client: &Client) -> Result<String, Trouble> {
    let name = &account.username;
    let me = match client.account().await {
        Ok(me) => me,
        Err(e @ LichessError::TokenRejected { .. }) => {
            // A closed account's tokens stop working too: say which it is when Lichess tells.
            return Err(match client.public_user(name).await {
                Ok(user) if user.disabled => closed(name),
                _ => Trouble::of_call(name, &e).expect("a 401 is a refusal"),
            });
        }
        Err(e @ LichessError::Forbidden { .. }) => {
            return Err(Trouble::of_call(name, &e).expect("a 403 is a refusal"));
        }
        Err(e) => {
            return Err(Trouble::outage(format!(
                "account {name}: cannot reach Lichess to check the token: {e}"
            )));
        }
    };
    if me.disabled {
        return Err(closed(name));
    }
    if !me.id.eq_ignore_ascii_case(name) {
        return Err(Trouble::refused(
            &format!("token of {}", me.username),
            format!(
                "account {name}: the token belongs to {}, not to {name}; give {name} a token \
                 created while logged in as {name}",
                me.username
            ),
        ));
    }
    if !me.is_bot() {
        return Err(Trouble::refused(
            "not a BOT account",
            format!(
                "account {name}: not a BOT account (upgrade it with `ladder upgrade {name}`; \
                 irreversible)"
            ),
        ));
    }
    Ok(me.id)
}

fn closed(name: &str) -> Trouble {
    Trouble::refused(
        "account closed",
        format!(
            "account {name}: the Lichess account is closed; reopen it or remove it from accounts.toml"
        ),
    )
}

/// The next pause of an account in trouble: slow doubling for refusals, quick jitter for
/// outages; both start over once the account plays again.
#[derive(Debug)]
pub struct RetrySchedule {
    refused: Doubling,
    outage: Backoff,
}

impl RetrySchedule {
    pub fn new(refused: RetryPolicy) -> RetrySchedule {
        RetrySchedule {
            refused: Doubling::new(refused),
            outage: Backoff::new(outage_policy()),
        }
    }

    pub fn next_delay(&mut self, trouble: &Trouble) -> Duration {
        if trouble.refused {
            self.refused.next_delay()
        } else {
            self.outage.next_delay()
        }
    }

    pub fn reset(&mut self) {
        self.refused.reset();
        self.outage.reset();
    }
}

/// Retries while Lichess is unreachable: quick at first, at most a minute apart.
fn outage_policy() -> BackoffPolicy {
    BackoffPolicy {
        base: Duration::from_millis(500),
        cap: Duration::from_secs(60),
        max_attempts: u32::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_wait_long_and_outages_short() {
        let policy = RetryPolicy {
            first: Duration::from_secs(30),
            cap: Duration::from_secs(120),
        };
        let mut schedule = RetrySchedule::new(policy);
        let refused = Trouble::refused("token rejected", "x".into());
        let outage = Trouble::outage("y".into());
        let waits: Vec<u64> = (0..4)
            .map(|_| schedule.next_delay(&refused).as_secs())
            .collect();
        assert_eq!(waits, [30, 60, 120, 120]);
        assert!(schedule.next_delay(&outage) <= Duration::from_secs(60));
        schedule.reset();
        assert_eq!(schedule.next_delay(&refused), Duration::from_secs(30));
    }

    #[test]
    fn a_401_and_a_403_are_refusals_naming_the_account_and_other_errors_are_not() {
        let rejected = LichessError::TokenRejected {
            endpoint: "GET /api/stream/event".into(),
        };
        let t = Trouble::of_call("ladder-l3", &rejected).unwrap();
        assert!(t.refused && t.short == "token rejected");
        assert!(t.detail.contains("ladder-l3"), "{}", t.detail);
        let down = LichessError::Unavailable {
            endpoint: "GET /api/stream/event".into(),
            attempts: 6,
            last: "HTTP 503".into(),
        };
        assert_eq!(Trouble::of_call("ladder-l3", &down), None);
    }
}
