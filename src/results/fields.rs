//! The typed fields of a results record: speed, perf, colour and status are values of known
//! sets (Lichess's keys, the arena's malfunction statuses), written as the same strings as
//! ever. A value this build does not know (Lichess may add one, an older or newer build may
//! have written one) is kept as [`Keyed::Other`] with its text: the line is read, never
//! dropped, and a record written back is byte for byte what was read.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::lichess::{Color, GameStatus, Perf, Speed};

/// A value that a record writes as its key.
pub trait RecordKey: Copy {
    /// The key written in the log.
    fn key(self) -> &'static str;
    /// The value of a key; `None` for a key this build does not know.
    fn from_key(key: &str) -> Option<Self>;
}

/// A known value, or the text of one this build does not know.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Keyed<T> {
    Known(T),
    Other(String),
}

impl<T: RecordKey> Keyed<T> {
    /// The value of `key`, known or not.
    pub fn parse(key: &str) -> Keyed<T> {
        T::from_key(key).map_or_else(|| Keyed::Other(key.to_string()), Keyed::Known)
    }

    /// The key as written in the log.
    pub fn as_str(&self) -> &str {
        match self {
            Keyed::Known(value) => value.key(),
            Keyed::Other(text) => text,
        }
    }

    /// The known value, if it is one.
    pub fn known(&self) -> Option<T> {
        match self {
            Keyed::Known(value) => Some(*value),
            Keyed::Other(_) => None,
        }
    }
}

impl<T> From<T> for Keyed<T> {
    fn from(value: T) -> Keyed<T> {
        Keyed::Known(value)
    }
}

impl<T: RecordKey> fmt::Display for Keyed<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<T: RecordKey> PartialEq<str> for Keyed<T> {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl<T: RecordKey> PartialEq<&str> for Keyed<T> {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl<T: RecordKey> Serialize for Keyed<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de, T: RecordKey> Deserialize<'de> for Keyed<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Keyed<T>, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(T::from_key(&text).map_or(Keyed::Other(text), Keyed::Known))
    }
}

impl RecordKey for Speed {
    fn key(self) -> &'static str {
        Speed::key(self)
    }
    fn from_key(key: &str) -> Option<Speed> {
        key.parse().ok()
    }
}

impl RecordKey for Perf {
    fn key(self) -> &'static str {
        Perf::key(self)
    }
    fn from_key(key: &str) -> Option<Perf> {
        key.parse().ok()
    }
}

impl RecordKey for Color {
    fn key(self) -> &'static str {
        match self {
            Color::White => "white",
            Color::Black => "black",
        }
    }
    fn from_key(key: &str) -> Option<Color> {
        match key {
            "white" => Some(Color::White),
            "black" => Some(Color::Black),
            _ => None,
        }
    }
}

/// How a recorded game ended: Lichess's status, or the arena's own for a player's malfunction
/// (which loses the game for the broken side).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EndStatus {
    Lichess(GameStatus),
    /// The player's process crashed.
    Crash,
    /// The player sent an illegal move.
    IllegalMove,
    /// The player did not answer in time.
    Hang,
}

/// Lichess's statuses a record may hold (every one but `unknown`, which stands for a status
/// this build does not know and is kept as [`Keyed::Other`] with its text).
const LICHESS_STATUSES: [GameStatus; 14] = [
    GameStatus::Created,
    GameStatus::Started,
    GameStatus::Aborted,
    GameStatus::Mate,
    GameStatus::Resign,
    GameStatus::Stalemate,
    GameStatus::Timeout,
    GameStatus::Draw,
    GameStatus::Outoftime,
    GameStatus::Cheat,
    GameStatus::NoStart,
    GameStatus::UnknownFinish,
    GameStatus::InsufficientMaterialClaim,
    GameStatus::VariantEnd,
];

impl RecordKey for EndStatus {
    fn key(self) -> &'static str {
        match self {
            EndStatus::Lichess(status) => status.as_str(),
            EndStatus::Crash => "crash",
            EndStatus::IllegalMove => "illegalmove",
            EndStatus::Hang => "hang",
        }
    }
    fn from_key(key: &str) -> Option<EndStatus> {
        match key {
            "crash" => Some(EndStatus::Crash),
            "illegalmove" => Some(EndStatus::IllegalMove),
            "hang" => Some(EndStatus::Hang),
            _ => LICHESS_STATUSES
                .into_iter()
                .find(|status| status.as_str() == key)
                .map(EndStatus::Lichess),
        }
    }
}

impl From<GameStatus> for Keyed<EndStatus> {
    /// Lichess's status as a record holds it (`unknown` as its text).
    fn from(status: GameStatus) -> Keyed<EndStatus> {
        Keyed::parse(status.as_str())
    }
}

/// A recorded game's speed.
pub type RecordSpeed = Keyed<Speed>;
/// A recorded game's perf (rating pool).
pub type RecordPerf = Keyed<Perf>;
/// A side in a record.
pub type RecordColor = Keyed<Color>;
/// A recorded game's end.
pub type RecordStatus = Keyed<EndStatus>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_reads_back_as_its_value() {
        for speed in Speed::ALL {
            assert_eq!(RecordSpeed::parse(speed.key()), Keyed::Known(speed));
        }
        for perf in Perf::ALL {
            assert_eq!(RecordPerf::parse(perf.key()), Keyed::Known(perf));
        }
        for status in LICHESS_STATUSES {
            let end = EndStatus::Lichess(status);
            assert_eq!(RecordStatus::parse(end.key()), Keyed::Known(end));
        }
        for end in [EndStatus::Crash, EndStatus::IllegalMove, EndStatus::Hang] {
            assert_eq!(RecordStatus::parse(end.key()), Keyed::Known(end));
        }
        assert_eq!(RecordColor::parse("black"), Keyed::Known(Color::Black));
    }

    #[test]
    fn an_unknown_key_is_kept_as_written() {
        let speed: RecordSpeed = serde_json::from_str(r#""hyperBullet""#).unwrap();
        assert_eq!(speed, Keyed::Other("hyperBullet".to_string()));
        assert_eq!(serde_json::to_string(&speed).unwrap(), r#""hyperBullet""#);
        // Lichess's own placeholders for the unknown stay text too.
        assert_eq!(RecordSpeed::parse("other"), Keyed::Other("other".into()));
        assert_eq!(
            RecordStatus::from(GameStatus::Unknown),
            Keyed::Other("unknown".into())
        );
    }
}
