//! Lichess's game and challenge ids as types, so one cannot stand in for the other by accident,
//! and the one rule that links them: a challenge that is accepted becomes a game with the
//! challenge's id ([`ChallengeId::game_id`]).
//!
//! Ids that arrive from Lichess (JSON, URL paths) are taken as sent; [`FromStr`] checks the
//! alphabet Lichess uses for ids typed by people and tests.

use std::borrow::Borrow;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// An id that is not made of ASCII letters and digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} id {value:?}: expected ASCII letters and digits")]
pub struct BadId {
    kind: &'static str,
    value: String,
}

macro_rules! lichess_id {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// Wraps an id as Lichess (or the sandbox) spelled it.
            pub fn new(id: impl Into<String>) -> $name {
                $name(id.into())
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl FromStr for $name {
            type Err = BadId;
            fn from_str(s: &str) -> Result<$name, BadId> {
                if s.is_empty() || !s.bytes().all(|b| b.is_ascii_alphanumeric()) {
                    return Err(BadId {
                        kind: $kind,
                        value: s.to_string(),
                    });
                }
                Ok($name(s.to_string()))
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        /// Maps keyed by id can be searched with a plain `&str` (an id from a URL path).
        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
    };
}

lichess_id!(
    /// The 8-character id of a Lichess game (`gameId`; the 12-character `fullId` is another
    /// thing: it carries the player's secret).
    GameId,
    "game"
);

lichess_id!(
    /// The id of a Lichess challenge.
    ChallengeId,
    "challenge"
);

impl ChallengeId {
    /// The game this challenge becomes once accepted: Lichess gives it the challenge's id. A
    /// slot reserved when a challenge is accepted is released by its `gameStart` through this.
    pub fn game_id(&self) -> GameId {
        GameId(self.0.clone())
    }
}

/// Results keep game ids as plain strings on disk; they compare with the typed id directly.
impl PartialEq<GameId> for String {
    fn eq(&self, other: &GameId) -> bool {
        *self == other.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_accepted_challenge_becomes_the_game_with_its_id() {
        let challenge: ChallengeId = "a1B2c3D4".parse().unwrap();
        let game = challenge.game_id();
        assert_eq!(game, "a1B2c3D4");
        assert_eq!(game.to_string(), challenge.to_string());
    }

    #[test]
    fn ids_are_plain_strings_on_the_wire_and_checked_when_typed() {
        let id: GameId = serde_json::from_str("\"abcd1234\"").unwrap();
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"abcd1234\"");
        assert!("".parse::<GameId>().is_err());
        let err = "../etc".parse::<ChallengeId>().unwrap_err();
        assert!(err.to_string().contains("challenge id"), "{err}");
        let map: std::collections::HashMap<GameId, u8> = [(id.clone(), 1)].into();
        assert_eq!(map.get("abcd1234"), Some(&1));
        let on_disk: String = "abcd1234".into();
        assert!(on_disk == id);
    }
}
