//! Serde wire types of the Lichess API subset the ladder uses, spelled as the OpenAPI spec
//! spells them. Every type ignores unknown fields; unknown event types become `Unknown`
//! variants instead of errors, and a value of a closed list Lichess may extend (perf, speed,
//! challenge colour, chat room) reads as its `Other` variant (an optional colour as absent),
//! so a new Lichess feature never drops a line or breaks a running daemon. A challenge from an
//! anonymous person (`challenger: null`) reads as [`ChallengeUser::anonymous`]. The sandbox
//! serializes the very same types, so both sides agree on the shapes.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ids::{ChallengeId, GameId};
use super::speed::{Perf, Speed, TimeControl};

/// A side of the board.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Color {
    White,
    Black,
}

impl Color {
    /// `white` for White, `black` for Black: this side's one of a pair.
    pub fn fold_wb<T>(self, white: T, black: T) -> T {
        match self {
            Color::White => white,
            Color::Black => black,
        }
    }

    pub fn other(self) -> Color {
        self.fold_wb(Color::Black, Color::White)
    }

    pub fn as_str(self) -> &'static str {
        self.fold_wb("white", "black")
    }
}

impl fmt::Display for Color {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<shakmaty::Color> for Color {
    fn from(c: shakmaty::Color) -> Color {
        c.fold_wb(Color::White, Color::Black)
    }
}

impl From<Color> for shakmaty::Color {
    fn from(c: Color) -> shakmaty::Color {
        c.fold_wb(shakmaty::Color::White, shakmaty::Color::Black)
    }
}

/// The color a challenger asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChallengeColor {
    White,
    Black,
    Random,
    /// A value this build does not know (the colour is Lichess's to decide).
    #[serde(other)]
    Other,
}

/// An optional field read leniently: a value that does not parse (an unknown colour) is
/// absent instead of failing the whole line.
fn lenient<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let value = Option::<Value>::deserialize(d)?;
    Ok(value.and_then(|v| T::deserialize(v).ok()))
}

/// `GameStatusName`: how a game stands or ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum GameStatus {
    Created,
    Started,
    Aborted,
    Mate,
    Resign,
    Stalemate,
    Timeout,
    Draw,
    Outoftime,
    Cheat,
    NoStart,
    UnknownFinish,
    InsufficientMaterialClaim,
    VariantEnd,
    /// A status this build does not know; treated as finished.
    #[serde(other)]
    Unknown,
}

impl GameStatus {
    /// The numeric `GameStatusId` paired with this name.
    pub fn id(self) -> u32 {
        match self {
            GameStatus::Created => 10,
            GameStatus::Started => 20,
            GameStatus::Aborted => 25,
            GameStatus::Mate => 30,
            GameStatus::Resign => 31,
            GameStatus::Stalemate => 32,
            GameStatus::Timeout => 33,
            GameStatus::Draw => 34,
            GameStatus::Outoftime => 35,
            GameStatus::Cheat => 36,
            GameStatus::NoStart => 37,
            GameStatus::UnknownFinish | GameStatus::Unknown => 38,
            GameStatus::InsufficientMaterialClaim => 39,
            GameStatus::VariantEnd => 60,
        }
    }

    /// The wire name (`outoftime`, `noStart`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            GameStatus::Created => "created",
            GameStatus::Started => "started",
            GameStatus::Aborted => "aborted",
            GameStatus::Mate => "mate",
            GameStatus::Resign => "resign",
            GameStatus::Stalemate => "stalemate",
            GameStatus::Timeout => "timeout",
            GameStatus::Draw => "draw",
            GameStatus::Outoftime => "outoftime",
            GameStatus::Cheat => "cheat",
            GameStatus::NoStart => "noStart",
            GameStatus::UnknownFinish => "unknownFinish",
            GameStatus::InsufficientMaterialClaim => "insufficientMaterialClaim",
            GameStatus::VariantEnd => "variantEnd",
            GameStatus::Unknown => "unknown",
        }
    }

    /// Whether the game is still being played (or waiting for its first move).
    pub fn is_ongoing(self) -> bool {
        matches!(self, GameStatus::Created | GameStatus::Started)
    }
}

impl fmt::Display for GameStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `GameStatus` as the event stream sends it: `{id, name}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GameStatusObj {
    pub id: u32,
    pub name: GameStatus,
}

impl From<GameStatus> for GameStatusObj {
    fn from(name: GameStatus) -> GameStatusObj {
        GameStatusObj {
            id: name.id(),
            name,
        }
    }
}

/// Why a bot declines a challenge (the request's `reason`). The event's `declineReasonKey`
/// spells the same keys in lowercase; [`FromStr`] accepts both spellings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeclineReason {
    Generic,
    Later,
    TooFast,
    TooSlow,
    TimeControl,
    Rated,
    Casual,
    Standard,
    Variant,
    NoBot,
    OnlyBot,
}

impl DeclineReason {
    pub const ALL: [DeclineReason; 11] = [
        DeclineReason::Generic,
        DeclineReason::Later,
        DeclineReason::TooFast,
        DeclineReason::TooSlow,
        DeclineReason::TimeControl,
        DeclineReason::Rated,
        DeclineReason::Casual,
        DeclineReason::Standard,
        DeclineReason::Variant,
        DeclineReason::NoBot,
        DeclineReason::OnlyBot,
    ];

    /// The request spelling (`tooFast`).
    pub fn as_str(self) -> &'static str {
        match self {
            DeclineReason::Generic => "generic",
            DeclineReason::Later => "later",
            DeclineReason::TooFast => "tooFast",
            DeclineReason::TooSlow => "tooSlow",
            DeclineReason::TimeControl => "timeControl",
            DeclineReason::Rated => "rated",
            DeclineReason::Casual => "casual",
            DeclineReason::Standard => "standard",
            DeclineReason::Variant => "variant",
            DeclineReason::NoBot => "noBot",
            DeclineReason::OnlyBot => "onlyBot",
        }
    }

    /// The event spelling (`toofast`).
    pub fn key(self) -> String {
        self.as_str().to_ascii_lowercase()
    }

    /// The English sentence Lichess shows the challenger.
    pub fn message(self) -> &'static str {
        match self {
            DeclineReason::Generic => "I'm not accepting challenges at the moment.",
            DeclineReason::Later => "This is not the right time for me, please ask again later.",
            DeclineReason::TooFast => {
                "This time control is too fast for me, please challenge again with a slower game."
            }
            DeclineReason::TooSlow => {
                "This time control is too slow for me, please challenge again with a faster game."
            }
            DeclineReason::TimeControl => "I'm not accepting challenges with this time control.",
            DeclineReason::Rated => "Please send me a rated challenge instead.",
            DeclineReason::Casual => "Please send me a casual challenge instead.",
            DeclineReason::Standard => "I'm not accepting variant challenges right now.",
            DeclineReason::Variant => "I'm not willing to play this variant right now.",
            DeclineReason::NoBot => "I'm not accepting challenges from bots.",
            DeclineReason::OnlyBot => "I'm only accepting challenges from bots.",
        }
    }
}

impl fmt::Display for DeclineReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown decline reason {0:?}")]
pub struct UnknownDeclineReason(pub String);

impl FromStr for DeclineReason {
    type Err = UnknownDeclineReason;
    fn from_str(s: &str) -> Result<DeclineReason, UnknownDeclineReason> {
        DeclineReason::ALL
            .into_iter()
            .find(|r| r.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownDeclineReason(s.to_string()))
    }
}

impl Serialize for DeclineReason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for DeclineReason {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<DeclineReason, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// `Variant`: `{key, name, short}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Variant {
    pub key: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short: Option<String>,
}

impl Variant {
    pub fn standard() -> Variant {
        Variant::from_key("standard")
    }

    /// The variant object Lichess sends for a variant key.
    pub fn from_key(key: &str) -> Variant {
        let (name, short) = match key {
            "standard" => ("Standard", "Std"),
            "chess960" => ("Chess960", "960"),
            "fromPosition" => ("From Position", "FEN"),
            "crazyhouse" => ("Crazyhouse", "Crazy"),
            "antichess" => ("Antichess", "Anti"),
            "atomic" => ("Atomic", "Atom"),
            "horde" => ("Horde", "Horde"),
            "kingOfTheHill" => ("King of the Hill", "KotH"),
            "racingKings" => ("Racing Kings", "Race"),
            "threeCheck" => ("Three-check", "3check"),
            other => (other, other),
        };
        Variant {
            key: key.to_string(),
            name: name.to_string(),
            short: Some(short.to_string()),
        }
    }
}

/// `GameCompat`: whether the bot and board APIs can play the game.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compat {
    #[serde(default)]
    pub bot: bool,
    #[serde(default)]
    pub board: bool,
}

// ---------------------------------------------------------------- challenges

/// `ChallengeUser`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChallengeUser {
    pub id: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rating: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub provisional: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub online: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lag: Option<i32>,
}

impl ChallengeUser {
    pub fn is_bot(&self) -> bool {
        self.title.as_deref() == Some("BOT")
    }

    /// The challenger of a challenge from a person who is not logged in (`challenger: null`):
    /// an empty id.
    pub fn anonymous() -> ChallengeUser {
        ChallengeUser {
            id: String::new(),
            name: "Anonymous".to_string(),
            rating: None,
            title: None,
            provisional: false,
            online: None,
            lag: None,
        }
    }

    pub fn is_anonymous(&self) -> bool {
        self.id.is_empty()
    }
}

/// `challenger`: a user, or `null` for an anonymous person.
fn challenger_or_anonymous<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<ChallengeUser, D::Error> {
    Ok(Option::<ChallengeUser>::deserialize(d)?.unwrap_or_else(ChallengeUser::anonymous))
}

fn serialize_challenger<S: serde::Serializer>(
    user: &ChallengeUser,
    s: S,
) -> Result<S::Ok, S::Error> {
    if user.is_anonymous() {
        s.serialize_none()
    } else {
        user.serialize(s)
    }
}

/// `ChallengeStatus`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChallengeStatus {
    Created,
    Offline,
    Canceled,
    Declined,
    Accepted,
    #[serde(other)]
    Unknown,
}

/// The `perf` object of a challenge.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChallengePerf {
    #[serde(default)]
    pub icon: String,
    pub name: String,
}

/// `ChallengeJson` (also the body of `challengeDeclined`, with the decline fields set).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChallengeJson {
    pub id: ChallengeId,
    pub url: String,
    pub status: ChallengeStatus,
    /// [`ChallengeUser::anonymous`] for `null`.
    #[serde(
        deserialize_with = "challenger_or_anonymous",
        serialize_with = "serialize_challenger"
    )]
    pub challenger: ChallengeUser,
    /// `null` for open challenges.
    pub dest_user: Option<ChallengeUser>,
    pub variant: Variant,
    pub rated: bool,
    pub speed: Speed,
    pub time_control: TimeControl,
    pub color: ChallengeColor,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub final_color: Option<Color>,
    pub perf: ChallengePerf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_fen: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rematch_of: Option<GameId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decline_reason: Option<String>,
    /// Lowercase key (`toofast`); parse with [`DeclineReason::from_str`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decline_reason_key: Option<String>,
}

impl ChallengeJson {
    /// The decline reason, when this is a declined challenge with a known key.
    pub fn decline_reason(&self) -> Option<DeclineReason> {
        self.decline_reason_key.as_deref()?.parse().ok()
    }
}

// ---------------------------------------------------------------- event stream

/// `GameEventOpponent`: a player, or Lichess's AI (id null, `ai` level).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GameEventOpponent {
    #[serde(default)]
    pub id: Option<String>,
    pub username: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rating: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rating_diff: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ai: Option<u32>,
}

/// `GameEventInfo`: the `game` of `gameStart` / `gameFinish`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GameEventInfo {
    pub full_id: String,
    pub game_id: GameId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fen: Option<String>,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub color: Option<Color>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_move: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<GameStatusObj>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<Variant>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<Speed>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perf: Option<Perf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rated: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_moved: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opponent: Option<GameEventOpponent>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_my_turn: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds_left: Option<i64>,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub winner: Option<Color>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rating: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rating_diff: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compat: Option<Compat>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<GameId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tournament_id: Option<String>,
}

/// One line of `/api/stream/event`.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    GameStart {
        game: Box<GameEventInfo>,
    },
    GameFinish {
        game: Box<GameEventInfo>,
    },
    Challenge {
        challenge: Box<ChallengeJson>,
        compat: Option<Compat>,
    },
    ChallengeCanceled {
        challenge: Box<ChallengeJson>,
    },
    ChallengeDeclined {
        challenge: Box<ChallengeJson>,
    },
    /// An event type this build does not know (kept raw for logging).
    Unknown {
        kind: String,
        raw: Value,
    },
}

#[derive(Deserialize)]
struct GameHolder {
    game: Box<GameEventInfo>,
}

#[derive(Deserialize)]
struct ChallengeHolder {
    challenge: Box<ChallengeJson>,
    #[serde(default)]
    compat: Option<Compat>,
}

/// A tagged line (`{"type": …, …}`) read as a JSON object, with its `type` (`""` when it has
/// none).
fn tagged_line<'de, D: serde::Deserializer<'de>>(d: D) -> Result<(String, Value), D::Error> {
    use serde::de::Error;
    let value = Value::deserialize(d)?;
    if !value.is_object() {
        return Err(D::Error::custom("an event must be a JSON object"));
    }
    let kind = value
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    Ok((kind, value))
}

/// The body of a tagged line as a `T`, its error as the deserializer's `E`.
fn body<T: serde::de::DeserializeOwned, E: serde::de::Error>(value: Value) -> Result<T, E> {
    serde_json::from_value(value).map_err(E::custom)
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Event, D::Error> {
        let (kind, value) = tagged_line(d)?;
        let game = |value| body::<GameHolder, D::Error>(value).map(|h| h.game);
        let challenge = |value| body::<ChallengeHolder, D::Error>(value);
        Ok(match kind.as_str() {
            "gameStart" => Event::GameStart { game: game(value)? },
            "gameFinish" => Event::GameFinish { game: game(value)? },
            "challenge" => {
                let h = challenge(value)?;
                Event::Challenge {
                    challenge: h.challenge,
                    compat: h.compat,
                }
            }
            "challengeCanceled" => Event::ChallengeCanceled {
                challenge: challenge(value)?.challenge,
            },
            "challengeDeclined" => Event::ChallengeDeclined {
                challenge: challenge(value)?.challenge,
            },
            _ => Event::Unknown { kind, raw: value },
        })
    }
}

impl Serialize for Event {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde_json::json;
        let value = match self {
            Event::GameStart { game } => json!({"type": "gameStart", "game": game}),
            Event::GameFinish { game } => json!({"type": "gameFinish", "game": game}),
            Event::Challenge { challenge, compat } => match compat {
                Some(c) => json!({"type": "challenge", "challenge": challenge, "compat": c}),
                None => json!({"type": "challenge", "challenge": challenge}),
            },
            Event::ChallengeCanceled { challenge } => {
                json!({"type": "challengeCanceled", "challenge": challenge})
            }
            Event::ChallengeDeclined { challenge } => {
                json!({"type": "challengeDeclined", "challenge": challenge})
            }
            Event::Unknown { raw, .. } => raw.clone(),
        };
        value.serialize(s)
    }
}

// ---------------------------------------------------------------- game stream

/// `GameEventPlayer`: a side of `gameFull`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GameEventPlayer {
    /// Empty for Lichess's AI.
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rating: Option<i32>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub provisional: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ai_level: Option<u32>,
}

impl GameEventPlayer {
    pub fn is_bot(&self) -> bool {
        self.title.as_deref() == Some("BOT")
    }

    /// The name to call the player by: the username, "Stockfish level N" for Lichess's AI,
    /// "Anonymous" for someone not logged in (both come without a name).
    pub fn display_name(&self) -> String {
        match (self.name.trim(), self.ai_level) {
            ("", Some(level)) => format!("Stockfish level {level}"),
            ("", None) => "Anonymous".to_string(),
            (name, _) => name.to_string(),
        }
    }
}

/// `gameFull.clock`, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GameClock {
    pub initial: u64,
    pub increment: u64,
}

/// `gameFull.perf`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GamePerf {
    #[serde(default)]
    pub name: String,
}

/// `expiration` of a game waiting for a first move.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Expiration {
    pub idle_millis: u64,
    pub millis_to_move: u64,
}

/// `GameStateEvent`: the moves so far, the clocks (ms) and the status.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GameState {
    /// UCI moves separated by spaces (king-to-rook castling in Chess960).
    pub moves: String,
    pub wtime: u64,
    pub btime: u64,
    pub winc: u64,
    pub binc: u64,
    pub status: GameStatus,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub winner: Option<Color>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wdraw: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bdraw: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wtakeback: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub btakeback: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiration: Option<Expiration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rematch: Option<GameId>,
}

impl GameState {
    /// The moves as a list (empty for a game without moves).
    pub fn move_list(&self) -> Vec<&str> {
        self.moves.split_whitespace().collect()
    }

    /// Remaining time (ms) of a side.
    pub fn time_of(&self, color: Color) -> u64 {
        color.fold_wb(self.wtime, self.btime)
    }

    /// Increment (ms) of a side.
    pub fn increment_of(&self, color: Color) -> u64 {
        color.fold_wb(self.winc, self.binc)
    }

    /// Whether a side is offering a draw.
    pub fn draw_offer_of(&self, color: Color) -> bool {
        color.fold_wb(self.wdraw, self.bdraw)
    }

    /// Whether a side is proposing a takeback.
    pub fn takeback_of(&self, color: Color) -> bool {
        color.fold_wb(self.wtakeback, self.btakeback)
    }
}

/// `GameFullEvent`: the first line of a game stream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GameFull {
    pub id: GameId,
    pub variant: Variant,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<GameClock>,
    pub speed: Speed,
    pub perf: GamePerf,
    pub rated: bool,
    pub created_at: i64,
    pub white: GameEventPlayer,
    pub black: GameEventPlayer,
    #[serde(default = "startpos")]
    pub initial_fen: String,
    pub state: GameState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub days_per_turn: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tournament_id: Option<String>,
}

fn startpos() -> String {
    "startpos".to_string()
}

impl GameFull {
    /// The color `user_id` plays, if they play this game (ids compare case-insensitively).
    pub fn color_of(&self, user_id: &str) -> Option<Color> {
        if self.white.id.eq_ignore_ascii_case(user_id) {
            Some(Color::White)
        } else if self.black.id.eq_ignore_ascii_case(user_id) {
            Some(Color::Black)
        } else {
            None
        }
    }

    pub fn player(&self, color: Color) -> &GameEventPlayer {
        color.fold_wb(&self.white, &self.black)
    }
}

/// `chatLine.room`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatRoom {
    Player,
    Spectator,
    /// A room this build does not know (a line from it is read, never answered).
    #[serde(other)]
    Other,
}

impl ChatRoom {
    pub fn as_str(self) -> &'static str {
        match self {
            ChatRoom::Player => "player",
            ChatRoom::Spectator => "spectator",
            ChatRoom::Other => "other",
        }
    }
}

/// Longest chat line Lichess accepts (characters).
pub const MAX_CHAT_CHARS: usize = 140;

/// `ChatLineEvent`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatLine {
    pub room: ChatRoom,
    pub username: String,
    pub text: String,
}

/// `OpponentGoneEvent`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpponentGone {
    pub gone: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_win_in_seconds: Option<u32>,
}

/// One line of `/api/bot/game/stream/{gameId}`.
#[derive(Clone, Debug, PartialEq)]
pub enum GameEvent {
    GameFull(Box<GameFull>),
    GameState(GameState),
    ChatLine(ChatLine),
    OpponentGone(OpponentGone),
    /// A line type this build does not know.
    Unknown {
        kind: String,
        raw: Value,
    },
}

impl<'de> Deserialize<'de> for GameEvent {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<GameEvent, D::Error> {
        let (kind, value) = tagged_line(d)?;
        Ok(match kind.as_str() {
            "gameFull" => GameEvent::GameFull(Box::new(body::<_, D::Error>(value)?)),
            "gameState" => GameEvent::GameState(body::<_, D::Error>(value)?),
            "chatLine" => GameEvent::ChatLine(body::<_, D::Error>(value)?),
            "opponentGone" => GameEvent::OpponentGone(body::<_, D::Error>(value)?),
            _ => GameEvent::Unknown { kind, raw: value },
        })
    }
}

/// Adds `"type": kind` to a serialized object.
fn tagged<T: Serialize>(kind: &str, body: &T) -> Value {
    let mut value = serde_json::to_value(body).expect("wire types serialize");
    if let Value::Object(map) = &mut value {
        map.insert("type".to_string(), Value::String(kind.to_string()));
    }
    value
}

impl Serialize for GameState {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        tagged("gameState", &GameStateBody(self)).serialize(s)
    }
}

/// Serializes a `GameState` without the tag (the derive's output).
struct GameStateBody<'a>(&'a GameState);

impl Serialize for GameStateBody<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let g = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("moves", &g.moves)?;
        m.serialize_entry("wtime", &g.wtime)?;
        m.serialize_entry("btime", &g.btime)?;
        m.serialize_entry("winc", &g.winc)?;
        m.serialize_entry("binc", &g.binc)?;
        m.serialize_entry("status", &g.status)?;
        if let Some(w) = g.winner {
            m.serialize_entry("winner", &w)?;
        }
        for (key, on) in [
            ("wdraw", g.wdraw),
            ("bdraw", g.bdraw),
            ("wtakeback", g.wtakeback),
            ("btakeback", g.btakeback),
        ] {
            if on {
                m.serialize_entry(key, &true)?;
            }
        }
        if let Some(e) = &g.expiration {
            m.serialize_entry("expiration", e)?;
        }
        if let Some(r) = &g.rematch {
            m.serialize_entry("rematch", r)?;
        }
        m.end()
    }
}

impl Serialize for GameEvent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let value = match self {
            GameEvent::GameFull(full) => tagged("gameFull", full.as_ref()),
            GameEvent::GameState(state) => tagged("gameState", &GameStateBody(state)),
            GameEvent::ChatLine(line) => tagged("chatLine", line),
            GameEvent::OpponentGone(gone) => tagged("opponentGone", gone),
            GameEvent::Unknown { raw, .. } => raw.clone(),
        };
        value.serialize(s)
    }
}

// ---------------------------------------------------------------- users

/// `Perf` of a user: the rating in one pool. Puzzle modes (`storm`, `racer`, `streak`) have
/// another shape and parse with `rating: None`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PerfRating {
    #[serde(default)]
    pub games: Option<u32>,
    #[serde(default)]
    pub rating: Option<i32>,
    #[serde(default)]
    pub rd: Option<i32>,
    #[serde(default)]
    pub prog: Option<i32>,
    /// Present (true) only while the rating is provisional.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prov: bool,
}

/// `UserExtended` (the fields the ladder reads; also what `/api/account` returns).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserExtended {
    pub id: String,
    pub username: String,
    #[serde(default)]
    /// By perf key; besides the [`Perf`] pools, Lichess lists puzzle modes here.
    pub perfs: BTreeMap<String, PerfRating>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen_at: Option<i64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disabled: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tos_violation: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<Value>,
}

impl UserExtended {
    pub fn is_bot(&self) -> bool {
        self.title.as_deref() == Some("BOT")
    }

    /// The rating in one perf (`blitz`, `rapid`, ...), if the user has one.
    pub fn perf(&self, perf: &str) -> Option<&PerfRating> {
        self.perfs.get(perf).filter(|p| p.rating.is_some())
    }

    /// Total number of games played, when Lichess says (`count.all`).
    pub fn games_played(&self) -> Option<u64> {
        self.count.as_ref()?.get("all")?.as_u64()
    }
}

// ---------------------------------------------------------------- game export

/// `LightUser`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LightUser {
    pub id: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// `GamePlayerUser`: a side of an exported game.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GamePlayer {
    /// Absent for Lichess's AI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<LightUser>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rating: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rating_diff: Option<i32>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub provisional: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ai_level: Option<u32>,
}

/// `GamePlayers`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GamePlayers {
    pub white: GamePlayer,
    pub black: GamePlayer,
}

impl GamePlayers {
    pub fn get(&self, color: Color) -> &GamePlayer {
        color.fold_wb(&self.white, &self.black)
    }
}

/// `GameJson.clock`, in **seconds** (unlike `gameFull.clock`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportClock {
    pub initial: u64,
    pub increment: u64,
    #[serde(default)]
    pub total_time: u64,
}

/// `GameJson`: one exported game.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GameJson {
    pub id: GameId,
    pub rated: bool,
    pub variant: String,
    pub speed: Speed,
    pub perf: Perf,
    pub created_at: i64,
    pub last_move_at: i64,
    pub status: GameStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub players: GamePlayers,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_fen: Option<String>,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub winner: Option<Color>,
    /// SAN moves separated by spaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moves: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<ExportClock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub days_per_turn: Option<u32>,
}

impl GameJson {
    /// The color `user_id` played, if they played this game.
    pub fn color_of(&self, user_id: &str) -> Option<Color> {
        [Color::White, Color::Black].into_iter().find(|&c| {
            self.players
                .get(c)
                .user
                .as_ref()
                .is_some_and(|u| u.id.eq_ignore_ascii_case(user_id))
        })
    }
}

/// `{"ok": true}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OkBody {
    pub ok: bool,
}

/// `{"error": "..."}` (400 and 404 bodies).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the sandbox writes must read back identically, with the spec's `type` tags.
    #[test]
    fn events_round_trip_with_their_type_tags() {
        let state = GameState {
            moves: "e2e4 e7e5".into(),
            wtime: 1000,
            btime: 2000,
            winc: 0,
            binc: 0,
            status: GameStatus::NoStart,
            winner: Some(Color::White),
            wdraw: true,
            bdraw: false,
            wtakeback: false,
            btakeback: false,
            expiration: Some(Expiration {
                idle_millis: 5,
                millis_to_move: 30_000,
            }),
            rematch: None,
        };
        let line = serde_json::to_string(&GameEvent::GameState(state.clone())).unwrap();
        let value: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(value["type"], "gameState");
        assert_eq!(value["status"], "noStart");
        assert_eq!(value["wdraw"], true);
        assert!(value.get("bdraw").is_none(), "false flags are omitted");
        assert_eq!(value["expiration"]["millisToMove"], 30_000);
        let back: GameEvent = serde_json::from_str(&line).unwrap();
        assert_eq!(back, GameEvent::GameState(state));

        let gone = GameEvent::OpponentGone(OpponentGone {
            gone: true,
            claim_win_in_seconds: Some(8),
        });
        let line = serde_json::to_string(&gone).unwrap();
        assert!(line.contains("\"claimWinInSeconds\":8"), "{line}");
        assert_eq!(serde_json::from_str::<GameEvent>(&line).unwrap(), gone);
    }

    /// A `gameStart` line of the spec's example with `perf`, `speed` and `color` replaced.
    fn game_start(perf: &str, speed: &str, color: &str) -> String {
        format!(
            r#"{{"type":"gameStart","game":{{"fullId":"0FgNPGRzhDaW","gameId":"0FgNPGRz","fen":"rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1","color":"{color}","lastMove":"","source":"friend","status":{{"id":20,"name":"started"}},"variant":{{"key":"standard","name":"Standard"}},"speed":"{speed}","perf":"{perf}","rated":true,"hasMoved":false,"opponent":{{"id":"aaron","username":"Aaron","rating":776}},"isMyTurn":true,"secondsLeft":300,"rating":724,"compat":{{"bot":false,"board":true}},"id":"0FgNPGRz"}}}}"#
        )
    }

    #[test]
    fn unknown_perf_speed_and_colour_keep_the_line() {
        let known: Event = serde_json::from_str(&game_start("blitz", "blitz", "white")).unwrap();
        let Event::GameStart { game } = known else {
            panic!("{known:?}")
        };
        assert_eq!(
            (game.perf, game.speed, game.color),
            (Some(Perf::Blitz), Some(Speed::Blitz), Some(Color::White))
        );
        let new: Event =
            serde_json::from_str(&game_start("hyperBlitz", "hyper", "purple")).unwrap();
        let Event::GameStart { game } = new else {
            panic!("the line was not kept: {new:?}")
        };
        assert_eq!(game.game_id.as_str(), "0FgNPGRz");
        assert_eq!(
            (game.perf, game.speed, game.color),
            (Some(Perf::Other), Some(Speed::Other), None)
        );
        assert_eq!(Perf::of_game("standard", Speed::Other).key(), "other");

        let chat: GameEvent = serde_json::from_str(
            r#"{"type":"chatLine","username":"thibault","text":"hi","room":"team"}"#,
        )
        .unwrap();
        assert!(
            matches!(&chat, GameEvent::ChatLine(line) if line.room == ChatRoom::Other),
            "{chat:?}"
        );

        let export: GameJson = serde_json::from_str(
            r#"{"id":"g1","rated":false,"variant":"standard","speed":"hyper","perf":"hyperBlitz",
            "createdAt":1,"lastMoveAt":2,"status":"mate","winner":"green",
            "players":{"white":{"user":{"id":"a","name":"A"}},"black":{"user":{"id":"b","name":"B"}}}}"#,
        )
        .unwrap();
        assert_eq!(
            (export.perf, export.speed, export.winner),
            (Perf::Other, Speed::Other, None)
        );
    }

    #[test]
    fn an_anonymous_challenger_parses_and_writes_back_as_null() {
        let line = r#"{"type":"challenge","challenge":{"id":"H9fIRZUk","url":"https://lichess.org/H9fIRZUk","status":"created","challenger":null,"destUser":{"id":"bot1","name":"Bot1","rating":1500,"title":"BOT"},"variant":{"key":"standard","name":"Standard","short":"Std"},"rated":false,"speed":"blitz","timeControl":{"type":"clock","limit":300,"increment":0,"show":"5+0"},"color":"mauve","perf":{"icon":"","name":"Blitz"}},"compat":{"bot":true,"board":true}}"#;
        let event: Event = serde_json::from_str(line).unwrap();
        let Event::Challenge { challenge, .. } = &event else {
            panic!("{event:?}")
        };
        assert!(challenge.challenger.is_anonymous());
        assert!(!challenge.challenger.is_bot());
        assert_eq!(challenge.color, ChallengeColor::Other);
        let written = serde_json::to_value(&**challenge).unwrap();
        assert!(written["challenger"].is_null(), "{written}");
    }

    #[test]
    fn decline_reasons_parse_in_both_spellings() {
        for reason in DeclineReason::ALL {
            assert_eq!(reason.as_str().parse::<DeclineReason>(), Ok(reason));
            assert_eq!(reason.key().parse::<DeclineReason>(), Ok(reason));
        }
        assert_eq!("toofast".parse(), Ok(DeclineReason::TooFast));
        assert!("rude".parse::<DeclineReason>().is_err());
        assert_eq!(GameStatus::Outoftime.id(), 35);
        let status: GameStatus = serde_json::from_str("\"insufficientMaterialClaim\"").unwrap();
        assert_eq!(status, GameStatus::InsufficientMaterialClaim);
    }

    #[test]
    fn players_without_a_name_are_called_by_what_they_are() {
        let named = GameEventPlayer {
            id: "alice".into(),
            name: "Alice".into(),
            title: None,
            rating: None,
            provisional: false,
            ai_level: None,
        };
        assert_eq!(named.display_name(), "Alice");
        let ai = GameEventPlayer {
            id: String::new(),
            name: String::new(),
            ai_level: Some(3),
            ..named.clone()
        };
        assert_eq!(ai.display_name(), "Stockfish level 3");
        let anonymous = GameEventPlayer {
            ai_level: None,
            ..ai
        };
        assert_eq!(anonymous.display_name(), "Anonymous");
    }
}
