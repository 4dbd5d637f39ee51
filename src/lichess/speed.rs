//! Lichess's speeds, rating pools (perfs) and time controls, and lila's rules between them: a
//! real-time clock's speed follows from its estimated duration (initial + 40 × increment), a
//! correspondence or unlimited game is correspondence, and a game counts in its speed's pool
//! unless it is a variant with a pool of its own. [`Clock::speed`] is the one place the speed
//! boundaries are written. A speed or perf key this build does not know (Lichess may add one)
//! reads as `Other` instead of failing the whole line: the game is played, its record says
//! `other`, and calibration, which asks for a known perf, leaves it out.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// `Display` as the API key and `FromStr` from one of `ALL`'s keys (an unknown key is an error
/// naming the known ones: what a person configures must be a key this build knows).
macro_rules! api_key_text {
    ($t:ident, $what:literal) => {
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.key())
            }
        }

        impl FromStr for $t {
            type Err = String;
            fn from_str(s: &str) -> Result<$t, String> {
                $t::ALL.into_iter().find(|t| t.key() == s).ok_or_else(|| {
                    format!(
                        concat!("unknown ", $what, " {:?} (known: {})"),
                        s,
                        keys($t::ALL)
                    )
                })
            }
        }
    };
}

/// Lichess's speed categories (`Speed` in the API spec), fastest first: the order is the
/// speed order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Speed {
    UltraBullet,
    Bullet,
    Blitz,
    Rapid,
    Classical,
    Correspondence,
    /// A speed key this build does not know (never in [`Speed::ALL`], never configured).
    #[serde(other)]
    Other,
}

impl Speed {
    pub const ALL: [Speed; 6] = [
        Speed::UltraBullet,
        Speed::Bullet,
        Speed::Blitz,
        Speed::Rapid,
        Speed::Classical,
        Speed::Correspondence,
    ];

    /// The API key (`ultraBullet`, `blitz`, ...).
    pub fn key(self) -> &'static str {
        match self {
            Speed::UltraBullet => "ultraBullet",
            Speed::Bullet => "bullet",
            Speed::Blitz => "blitz",
            Speed::Rapid => "rapid",
            Speed::Classical => "classical",
            Speed::Correspondence => "correspondence",
            Speed::Other => "other",
        }
    }

    /// The name Lichess shows (`UltraBullet`, `Blitz`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Speed::UltraBullet => "UltraBullet",
            Speed::Bullet => "Bullet",
            Speed::Blitz => "Blitz",
            Speed::Rapid => "Rapid",
            Speed::Classical => "Classical",
            Speed::Correspondence => "Correspondence",
            Speed::Other => "Other",
        }
    }

    /// The speed of a game with this real-time clock, or without one (correspondence and
    /// unlimited games).
    pub fn of(clock: Option<Clock>) -> Speed {
        clock.map_or(Speed::Correspondence, Clock::speed)
    }

    /// Lichess refuses UltraBullet games for bot accounts.
    pub fn bots_may_play(self) -> bool {
        self != Speed::UltraBullet
    }
}

api_key_text!(Speed, "speed");

/// Lichess's rating pools (`PerfType` in the API spec): one per speed, one per variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Perf {
    UltraBullet,
    Bullet,
    Blitz,
    Rapid,
    Classical,
    Correspondence,
    Chess960,
    Crazyhouse,
    Antichess,
    Atomic,
    Horde,
    KingOfTheHill,
    RacingKings,
    ThreeCheck,
    /// A perf key this build does not know (never in [`Perf::ALL`]).
    #[serde(other)]
    Other,
}

impl Perf {
    pub const ALL: [Perf; 14] = [
        Perf::UltraBullet,
        Perf::Bullet,
        Perf::Blitz,
        Perf::Rapid,
        Perf::Classical,
        Perf::Correspondence,
        Perf::Chess960,
        Perf::Crazyhouse,
        Perf::Antichess,
        Perf::Atomic,
        Perf::Horde,
        Perf::KingOfTheHill,
        Perf::RacingKings,
        Perf::ThreeCheck,
    ];

    /// The pool of a game: its variant's when the variant has one, else its speed's
    /// (`standard` and `fromPosition` games count by speed).
    pub fn of_game(variant_key: &str, speed: Speed) -> Perf {
        variant_key
            .parse::<Perf>()
            .ok()
            .filter(|perf| perf.speed().is_none())
            .unwrap_or(Perf::from(speed))
    }

    /// The speed whose pool this is; `None` for a variant's pool.
    pub fn speed(self) -> Option<Speed> {
        Speed::ALL.into_iter().find(|s| Perf::from(*s) == self)
    }

    /// The API key (`blitz`, `chess960`, `kingOfTheHill`, ...).
    pub fn key(self) -> &'static str {
        match self {
            Perf::UltraBullet => Speed::UltraBullet.key(),
            Perf::Bullet => Speed::Bullet.key(),
            Perf::Blitz => Speed::Blitz.key(),
            Perf::Rapid => Speed::Rapid.key(),
            Perf::Classical => Speed::Classical.key(),
            Perf::Correspondence => Speed::Correspondence.key(),
            Perf::Chess960 => "chess960",
            Perf::Crazyhouse => "crazyhouse",
            Perf::Antichess => "antichess",
            Perf::Atomic => "atomic",
            Perf::Horde => "horde",
            Perf::KingOfTheHill => "kingOfTheHill",
            Perf::RacingKings => "racingKings",
            Perf::ThreeCheck => "threeCheck",
            Perf::Other => "other",
        }
    }

    /// The name Lichess shows (`gameFull.perf.name`, a challenge's `perf.name`).
    pub fn name(self) -> &'static str {
        match self {
            Perf::Chess960 => "Chess960",
            Perf::Crazyhouse => "Crazyhouse",
            Perf::Antichess => "Antichess",
            Perf::Atomic => "Atomic",
            Perf::Horde => "Horde",
            Perf::KingOfTheHill => "King of the Hill",
            Perf::RacingKings => "Racing Kings",
            Perf::ThreeCheck => "Three-check",
            Perf::Other => "Other",
            speed => speed.speed().map_or("", Speed::name),
        }
    }

    /// The pool a shown name stands for; `None` for a name that is no pool (`From Position`).
    pub fn from_name(name: &str) -> Option<Perf> {
        Perf::ALL
            .into_iter()
            .find(|perf| perf.name().eq_ignore_ascii_case(name.trim()))
    }
}

impl From<Speed> for Perf {
    fn from(speed: Speed) -> Perf {
        match speed {
            Speed::UltraBullet => Perf::UltraBullet,
            Speed::Bullet => Perf::Bullet,
            Speed::Blitz => Perf::Blitz,
            Speed::Rapid => Perf::Rapid,
            Speed::Classical => Perf::Classical,
            Speed::Correspondence => Perf::Correspondence,
            Speed::Other => Perf::Other,
        }
    }
}

api_key_text!(Perf, "perf");

fn keys<T: fmt::Display>(all: impl IntoIterator<Item = T>) -> String {
    all.into_iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A real-time clock: initial time and increment per move, in milliseconds (Lichess's clocks
/// are whole seconds; the arena also plays fractions, e.g. `60+0.6`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock {
    pub initial_ms: u64,
    pub increment_ms: u64,
}

impl Clock {
    pub fn from_secs(initial_s: u64, increment_s: u64) -> Clock {
        Clock {
            initial_ms: initial_s.saturating_mul(1000),
            increment_ms: increment_s.saturating_mul(1000),
        }
    }

    /// lila's estimate of a game's length for one side, in whole seconds: the initial time
    /// plus 40 increments (a typical game's moves).
    pub fn estimated_seconds(self) -> u64 {
        self.initial_ms
            .saturating_add(self.increment_ms.saturating_mul(40))
            / 1000
    }

    /// The speed of a game on this clock, with lila's boundaries (scalachess `Speed`):
    /// UltraBullet below 30 s, bullet below 180 s, blitz below 480 s, rapid below 1500 s,
    /// classical below 21600 s, correspondence beyond (no Lichess clock goes that far).
    pub fn speed(self) -> Speed {
        match self.estimated_seconds() {
            0..30 => Speed::UltraBullet,
            30..180 => Speed::Bullet,
            180..480 => Speed::Blitz,
            480..1500 => Speed::Rapid,
            1500..21600 => Speed::Classical,
            _ => Speed::Correspondence,
        }
    }
}

impl FromStr for Clock {
    type Err = String;
    /// PGN's `TimeControl` form: `60+0.6` (seconds + seconds per move), or `180` (no
    /// increment).
    fn from_str(s: &str) -> Result<Clock, String> {
        let bad = || format!("time control {s:?}: expected SECONDS+INCREMENT, e.g. 60+0.6");
        let (base, inc) = s.split_once('+').unwrap_or((s, "0"));
        let millis = |v: &str| -> Result<u64, String> {
            let v: f64 = v.trim().parse().map_err(|_| bad())?;
            if !(v.is_finite() && v >= 0.0) {
                return Err(bad());
            }
            Ok((v * 1000.0).round() as u64)
        };
        let clock = Clock {
            initial_ms: millis(base)?,
            increment_ms: millis(inc)?,
        };
        if clock.initial_ms == 0 && clock.increment_ms == 0 {
            return Err(bad());
        }
        Ok(clock)
    }
}

impl fmt::Display for Clock {
    /// PGN's `TimeControl` form: seconds, `+`, increment in seconds.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = |ms: u64| {
            if ms.is_multiple_of(1000) {
                format!("{}", ms / 1000)
            } else {
                format!("{}", ms as f64 / 1000.0)
            }
        };
        write!(f, "{}+{}", secs(self.initial_ms), secs(self.increment_ms))
    }
}

/// `TimeControl` of the API: a real-time clock (seconds), correspondence (days), unlimited,
/// or a `type` this version does not know (kept as written, never an error: lila may add one).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(try_from = "serde_json::Value")]
pub enum TimeControl {
    Clock {
        /// Initial time in seconds.
        limit: u32,
        /// Increment in seconds.
        increment: u32,
        /// How Lichess labels it (`3+2`, `½+0`: minutes + seconds).
        show: Option<String>,
    },
    Correspondence {
        days_per_turn: Option<u32>,
    },
    Unlimited,
    /// A `type` this version does not know; no real-time clock, so never accepted.
    Other(String),
}

/// The known shapes as lila writes them (`{"type": "clock", …}`).
#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum KnownTimeControl {
    Clock {
        /// Initial time in seconds.
        limit: u32,
        /// Increment in seconds.
        increment: u32,
        /// How Lichess labels it (`3+2`, `½+0`: minutes + seconds).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        show: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    Correspondence {
        #[serde(default)]
        days_per_turn: Option<u32>,
    },
    Unlimited,
}

impl TryFrom<serde_json::Value> for TimeControl {
    type Error = String;

    fn try_from(value: serde_json::Value) -> Result<TimeControl, String> {
        let tag = match value.get("type") {
            Some(serde_json::Value::String(tag)) => tag.clone(),
            _ => return Err("a time control without a \"type\"".to_string()),
        };
        if !matches!(tag.as_str(), "clock" | "correspondence" | "unlimited") {
            return Ok(TimeControl::Other(tag));
        }
        Ok(
            match serde_json::from_value(value).map_err(|e| e.to_string())? {
                KnownTimeControl::Clock {
                    limit,
                    increment,
                    show,
                } => TimeControl::Clock {
                    limit,
                    increment,
                    show,
                },
                KnownTimeControl::Correspondence { days_per_turn } => {
                    TimeControl::Correspondence { days_per_turn }
                }
                KnownTimeControl::Unlimited => TimeControl::Unlimited,
            },
        )
    }
}

impl Serialize for TimeControl {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let known = match self.clone() {
            TimeControl::Clock {
                limit,
                increment,
                show,
            } => KnownTimeControl::Clock {
                limit,
                increment,
                show,
            },
            TimeControl::Correspondence { days_per_turn } => {
                KnownTimeControl::Correspondence { days_per_turn }
            }
            TimeControl::Unlimited => KnownTimeControl::Unlimited,
            TimeControl::Other(tag) => {
                use serde::ser::SerializeMap;
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("type", &tag)?;
                return map.end();
            }
        };
        known.serialize(serializer)
    }
}

impl TimeControl {
    /// A real-time clock of `limit_s` + `increment_s` seconds, labelled as Lichess does.
    pub fn clock(limit_s: u32, increment_s: u32) -> TimeControl {
        let minutes = match limit_s {
            15 => "¼".to_string(),
            30 => "½".to_string(),
            45 => "¾".to_string(),
            90 => "1.5".to_string(),
            s => (s / 60).to_string(),
        };
        TimeControl::Clock {
            limit: limit_s,
            increment: increment_s,
            show: Some(format!("{minutes}+{increment_s}")),
        }
    }

    /// The real-time clock, if the game has one.
    pub fn real_time(&self) -> Option<Clock> {
        match self {
            TimeControl::Clock {
                limit, increment, ..
            } => Some(Clock::from_secs(u64::from(*limit), u64::from(*increment))),
            TimeControl::Correspondence { .. } | TimeControl::Unlimited | TimeControl::Other(_) => {
                None
            }
        }
    }

    /// Days per move of a correspondence game (`None`: another kind, or no limit).
    pub fn days_per_turn(&self) -> Option<u32> {
        match self {
            TimeControl::Correspondence { days_per_turn } => *days_per_turn,
            TimeControl::Clock { .. } | TimeControl::Unlimited | TimeControl::Other(_) => None,
        }
    }

    /// The speed of a game with this time control.
    pub fn speed(&self) -> Speed {
        Speed::of(self.real_time())
    }
}

impl fmt::Display for TimeControl {
    /// `180+2` (seconds), `3d` (days per move) or `unlimited`, for log lines.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimeControl::Clock {
                limit, increment, ..
            } => write!(f, "{limit}+{increment}"),
            TimeControl::Correspondence { days_per_turn } => {
                write!(f, "{}d", days_per_turn.unwrap_or(0))
            }
            TimeControl::Unlimited => f.write_str("unlimited"),
            TimeControl::Other(tag) => f.write_str(tag),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_control_of_an_unknown_type_is_kept_not_an_error() {
        let tc: TimeControl = serde_json::from_str(r#"{"type":"hourglass","seconds":30}"#).unwrap();
        assert_eq!(tc, TimeControl::Other("hourglass".into()));
        assert_eq!(tc.real_time(), None);
        assert_eq!(tc.to_string(), "hourglass");
        assert_eq!(
            serde_json::to_string(&tc).unwrap(),
            r#"{"type":"hourglass"}"#
        );
        // The known ones read and write as lila writes them.
        for line in [
            r#"{"type":"clock","limit":180,"increment":2,"show":"3+2"}"#,
            r#"{"type":"correspondence","daysPerTurn":3}"#,
            r#"{"type":"unlimited"}"#,
        ] {
            let tc: TimeControl = serde_json::from_str(line).unwrap();
            assert_eq!(serde_json::to_string(&tc).unwrap(), line);
        }
        // A clock without its limit is still an error, and so is no type at all.
        assert!(serde_json::from_str::<TimeControl>(r#"{"type":"clock"}"#).is_err());
        assert!(serde_json::from_str::<TimeControl>(r#"{"limit":1}"#).is_err());
    }

    /// lila's boundaries (scalachess `Speed`: UltraBullet 0–29 s, Bullet 30–179, Blitz
    /// 180–479, Rapid 480–1499, Classical 1500–21599) through the one function everything
    /// calls: the sandbox and the daemon's policy through `TimeControl::speed`, the arena
    /// directly.
    #[test]
    fn speed_boundaries_are_lilas() {
        let speed = |seconds: u64| Clock::from_secs(seconds, 0).speed();
        assert_eq!(speed(29), Speed::UltraBullet);
        assert_eq!(speed(30), Speed::Bullet);
        assert_eq!(speed(179), Speed::Bullet);
        assert_eq!(speed(180), Speed::Blitz);
        assert_eq!(speed(479), Speed::Blitz);
        assert_eq!(speed(480), Speed::Rapid);
        assert_eq!(speed(1499), Speed::Rapid);
        assert_eq!(speed(1500), Speed::Classical);
        // The increment counts 40 times: 1+2 is 60 + 80 = 140 s, bullet; 2+1 is 160 s;
        // 3+0 is blitz; 0+1 is 40 s, bullet; the arena's 60+0.6 is 84 s.
        assert_eq!(TimeControl::clock(60, 2).speed(), Speed::Bullet);
        assert_eq!(TimeControl::clock(139, 1).speed(), Speed::Bullet);
        assert_eq!(TimeControl::clock(140, 1).speed(), Speed::Blitz);
        assert_eq!(TimeControl::clock(0, 1).speed(), Speed::Bullet);
        assert_eq!("60+0.6".parse::<Clock>().unwrap().speed(), Speed::Bullet);
        assert_eq!(
            Clock {
                initial_ms: 179_999,
                increment_ms: 0
            }
            .speed(),
            Speed::Bullet
        );
        assert_eq!(TimeControl::Unlimited.speed(), Speed::Correspondence);
        assert_eq!(
            TimeControl::Correspondence {
                days_per_turn: Some(2)
            }
            .speed(),
            Speed::Correspondence
        );
    }

    #[test]
    fn perfs_follow_variant_then_speed_and_read_back_from_their_names() {
        assert_eq!(Perf::of_game("standard", Speed::Blitz), Perf::Blitz);
        assert_eq!(Perf::of_game("fromPosition", Speed::Rapid), Perf::Rapid);
        assert_eq!(Perf::of_game("chess960", Speed::Blitz), Perf::Chess960);
        for perf in Perf::ALL {
            assert_eq!(Perf::from_name(perf.name()), Some(perf));
            assert_eq!(perf.key().parse::<Perf>(), Ok(perf));
            let json = serde_json::to_string(&perf).unwrap();
            assert_eq!(json, format!("\"{}\"", perf.key()));
        }
        assert_eq!(Perf::from_name("From Position"), None);
        assert_eq!(Perf::KingOfTheHill.key(), "kingOfTheHill");
        assert_eq!(Perf::Blitz.speed(), Some(Speed::Blitz));
        assert_eq!(Perf::Chess960.speed(), None);
        assert!(Speed::Bullet < Speed::Blitz && Speed::Classical < Speed::Correspondence);
        assert!("hyperBullet".parse::<Speed>().is_err());
    }

    #[test]
    fn clocks_read_and_print_pgn_time_controls() {
        let clock: Clock = "60+0.6".parse().unwrap();
        assert_eq!((clock.initial_ms, clock.increment_ms), (60_000, 600));
        assert_eq!(clock.to_string(), "60+0.6");
        assert_eq!("180".parse::<Clock>().unwrap().to_string(), "180+0");
        assert!("0+0".parse::<Clock>().is_err());
        assert!("fast".parse::<Clock>().is_err());
        assert_eq!(
            TimeControl::clock(30, 0),
            TimeControl::Clock {
                limit: 30,
                increment: 0,
                show: Some("½+0".into())
            }
        );
        assert_eq!(TimeControl::clock(180, 2).to_string(), "180+2");
    }
}
