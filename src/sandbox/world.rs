//! The sandbox's state: accounts, challenges, games and the open streams, behind one mutex.
//! Every operation is synchronous and short (no await under the lock); HTTP handlers, the
//! clock ticker, the challengers and the control API all go through these methods, so the
//! rules live in one place.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::config::{AccountConfig, SandboxConfig};
// Re-exported where it lived first, for code that imported it from here.
use super::game::{ActionError, Offer, SandboxGame, Seat};
use crate::lichess::types::{
    ChallengeColor, ChallengeJson, ChallengePerf, ChallengeStatus, ChallengeUser, ChatLine,
    ChatRoom, Color, Compat, DeclineReason, Event, GameClock, GameEvent, GameEventInfo,
    GameEventOpponent, GameEventPlayer, GameFull, GamePerf, GameState, GameStatus, GameStatusObj,
    MAX_CHAT_CHARS, OpponentGone, PerfRating, UserExtended, Variant,
};
use crate::lichess::{ChallengeId, GameId, Perf, TimeControl};

/// How often lila's round tick repeats that a player is gone for good (`RoundSocket`'s
/// `tickSeconds`).
pub const GONE_TICK: Duration = Duration::from_secs(5);

/// The pools every sandbox account has a rating in: those of the games the sandbox plays
/// (every speed, and Chess960).
fn rated_perfs() -> impl Iterator<Item = Perf> {
    Perf::ALL
        .into_iter()
        .filter(|perf| perf.speed().is_some() || *perf == Perf::Chess960)
}

/// An API failure as Lichess words it; the server turns it into a status and `{"error"}`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    #[error("No such token")]
    Unauthorized,
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    BadRequest(String),
}

impl From<ActionError> for ApiError {
    fn from(e: ActionError) -> ApiError {
        ApiError::BadRequest(e.to_string())
    }
}

fn not_found() -> ApiError {
    ApiError::NotFound("Not found.".to_string())
}

pub use crate::unix_time::unix_ms;

/// A sandbox account.
#[derive(Clone, Debug)]
pub struct Account {
    pub id: String,
    pub username: String,
    pub token: String,
    pub bot: bool,
    pub title: Option<String>,
    /// perf -> (rating, rated games in it).
    pub ratings: BTreeMap<Perf, (i32, u32)>,
    pub provisional: bool,
    pub games_played: u32,
    /// The token's OAuth scopes, when the sandbox names them ([`AccountConfig::scopes`]).
    pub scopes: Option<Vec<String>>,
    /// Index of the simulated challenger playing this account, if any.
    pub challenger: Option<usize>,
    pub created_at_ms: i64,
    /// Closed by its owner (fault injection): its token is refused, `disabled` in user data.
    pub closed: bool,
}

impl Account {
    fn new(config: &AccountConfig, challenger: Option<usize>) -> Account {
        let title = if config.bot {
            Some("BOT".to_string())
        } else {
            config.title.clone()
        };
        Account {
            id: config.username.to_ascii_lowercase(),
            username: config.username.clone(),
            token: config.token.clone(),
            bot: config.bot,
            title,
            ratings: rated_perfs().map(|p| (p, (config.rating, 0))).collect(),
            provisional: config.provisional,
            games_played: config.games_played,
            scopes: config.scopes.clone(),
            challenger,
            created_at_ms: unix_ms(),
            closed: false,
        }
    }

    pub fn rating(&self, perf: Perf) -> i32 {
        self.ratings.get(&perf).map_or(1500, |r| r.0)
    }

    fn challenge_user(&self, perf: Perf) -> ChallengeUser {
        ChallengeUser {
            id: self.id.clone(),
            name: self.username.clone(),
            rating: Some(self.rating(perf)),
            title: self.title.clone(),
            provisional: self.provisional,
            online: Some(true),
            lag: None,
        }
    }

    fn seat(&self, perf: Perf) -> Seat {
        Seat {
            id: self.id.clone(),
            name: self.username.clone(),
            title: self.title.clone(),
            rating: self.rating(perf),
            provisional: self.provisional,
        }
    }

    /// `UserExtended` as `/api/user/{username}` and `/api/account` return it.
    pub fn user_json(&self, base_url: &str) -> UserExtended {
        UserExtended {
            id: self.id.clone(),
            username: self.username.clone(),
            perfs: self
                .ratings
                .iter()
                .map(|(perf, &(rating, games))| {
                    let prov = self.provisional || games < 10;
                    let perf_json = PerfRating {
                        games: Some(games),
                        rating: Some(rating),
                        rd: Some(if prov { 150 } else { 60 }),
                        prog: Some(0),
                        prov,
                    };
                    (perf.key().to_string(), perf_json)
                })
                .collect(),
            title: self.title.clone(),
            created_at: Some(self.created_at_ms),
            seen_at: Some(unix_ms()),
            disabled: self.closed,
            tos_violation: false,
            url: Some(format!("{base_url}/@/{}", self.username)),
            count: Some(serde_json::json!({ "all": self.games_played })),
        }
    }
}

/// Whether an open stream is currently muted by fault injection (a stuck connection).
#[derive(Debug, Default)]
pub struct StreamControl {
    silent_until: Mutex<Option<Instant>>,
}

impl StreamControl {
    pub fn silence(&self, duration: Duration) {
        *self.silent_until.lock().expect("silence lock") = Some(Instant::now() + duration);
    }

    pub fn is_silent(&self) -> bool {
        self.silent_until
            .lock()
            .expect("silence lock")
            .is_some_and(|t| Instant::now() < t)
    }
}

/// The server side of one open NDJSON stream: dropping it ends the stream (after the lines
/// already queued).
#[derive(Debug)]
pub struct StreamSlot {
    pub tx: mpsc::UnboundedSender<String>,
    pub control: Arc<StreamControl>,
}

/// What a new stream reads from.
pub struct StreamReader {
    pub rx: mpsc::UnboundedReceiver<String>,
    pub control: Arc<StreamControl>,
}

fn new_stream() -> (StreamSlot, StreamReader) {
    let (tx, rx) = mpsc::unbounded_channel();
    let control = Arc::new(StreamControl::default());
    (
        StreamSlot {
            tx,
            control: control.clone(),
        },
        StreamReader { rx, control },
    )
}

/// A `challenge` event as one side sees it: `direction` is "in" for the challenged account,
/// "out" for the challenger.
fn challenge_event(json: &ChallengeJson, direction: &str) -> Event {
    let mut challenge = json.clone();
    challenge.direction = Some(direction.to_string());
    Event::Challenge {
        challenge: Box::new(challenge),
        compat: Some(Compat {
            bot: true,
            board: true,
        }),
    }
}

fn send_json<T: serde::Serialize>(slot: &StreamSlot, value: &T) {
    let line = serde_json::to_string(value).expect("wire types serialize");
    // A closed receiver means the client went away; the next stream it opens resyncs.
    let _gone = slot.tx.send(line);
}

/// A challenge waiting for an answer.
#[derive(Clone, Debug)]
pub struct ChallengeEntry {
    pub json: ChallengeJson,
    /// The account that plays the challenger's side (the challenger's own, also when the
    /// challenge shows an anonymous person).
    pub player: String,
    pub created: Instant,
    /// When the challenge first went out on an open, not silenced event stream of its
    /// destination (`None`: its destination has not been told yet).
    pub delivered: Option<Instant>,
}

/// How a challenge left the list of open challenges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChallengeFate {
    Accepted,
    Declined,
    /// Canceled by its challenger.
    Canceled,
    /// Nobody answered within `challenge_timeout`.
    Expired,
}

/// A challenge that is no longer open, for a soak to check that every challenge was answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChallengeOutcome {
    pub id: ChallengeId,
    pub challenger: String,
    pub dest: String,
    pub created: Instant,
    pub delivered: Option<Instant>,
    pub ended: Instant,
    pub fate: ChallengeFate,
}

/// A move the server refused while the game was running: played out of turn (a second move
/// for a ply already played) or illegal in the current position. A correct client sends none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefusedMove {
    pub at: Instant,
    pub game_id: GameId,
    pub player: String,
    pub uci: String,
    /// Plies played when the move arrived.
    pub ply: usize,
    pub error: String,
}

/// An HTTP fault the fault layer actually served (not just armed), with when and to whom.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServedFault {
    pub at: Instant,
    pub account: String,
    pub status: u16,
    /// The request's path (`/api/challenge/{id}/accept`, ...).
    pub path: String,
}

/// A game with its streams and watchers.
#[derive(Debug)]
pub struct GameEntry {
    pub game: SandboxGame,
    pub full_id_suffix: String,
    /// Open game streams by player id.
    pub streams: HashMap<String, StreamSlot>,
    /// In-process watchers (simulated challengers, tests) see every state.
    pub watch: watch::Sender<GameState>,
    pub chat: Vec<ChatLine>,
    /// A player who left the game, and when the other may claim victory.
    pub gone: Option<(Color, Instant)>,
    /// When the other was last told that the player is gone for good (`claimWinInSeconds: 0`,
    /// repeated every [`GONE_TICK`] as lila's round tick repeats it).
    pub gone_told: Option<Instant>,
    pub started_at: Instant,
    /// When the game ended (`None` while it runs).
    pub ended_at: Option<Instant>,
}

impl GameEntry {
    /// Tells the opponent of `color`, on its game stream if one is open, that `color` left or
    /// came back.
    fn tell_opponent_of(&self, color: Color, news: OpponentGone) {
        let opponent = &self.game.seat(color.other()).id;
        if let Some(slot) = self.streams.get(opponent) {
            send_json(slot, &GameEvent::OpponentGone(news));
        }
    }
}

/// Things the sandbox's own tasks react to (simulated challengers answer and play).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notice {
    GameStarted {
        game_id: GameId,
    },
    ChallengeReceived {
        challenge_id: ChallengeId,
        dest: String,
    },
    ChallengeDeclined {
        challenge: ChallengeId,
        challenger: String,
        reason: String,
    },
}

/// HTTP faults armed for an account.
#[derive(Clone, Debug, Default)]
pub struct AccountFaults {
    /// Answer this many more requests with `fail_status`.
    pub fail_next: u32,
    /// ... or every request until then.
    pub fail_until: Option<Instant>,
    pub fail_status: u16,
    /// Delay every response by this much until `delay_until` (`None`: for good).
    pub delay: Duration,
    pub delay_until: Option<Instant>,
    /// An injected 429 asks for this wait (`Retry-After` and lila's `ratelimit.seconds`).
    pub retry_after: Option<Duration>,
    /// Until then, accepting a bot's challenge answers lila's 429 for the bot-game limit
    /// (`bot.vsBot.day`, with the seconds left).
    pub bot_limit_until: Option<Instant>,
    /// Until then, accepting a challenge answers lila's 400 for the *challenger's* bot-game
    /// limit (`bot.vsBot.day` in the body, the challenger named in the message).
    pub challenger_bot_limit_until: Option<Instant>,
    /// Until then, the account's event stream closes right after it opens (after replaying
    /// the open challenges and running games, as a second process on the token makes it).
    pub flap_event_stream_until: Option<Instant>,
    /// Until then, opening the account's event stream is answered with `fail_status` (other
    /// requests are served: the health check passes, the stream does not open).
    pub fail_event_stream_until: Option<Instant>,
}

/// What an account asked of the sandbox (streams excluded from the concurrency count).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RequestStats {
    /// Every request, streams included.
    pub total: u64,
    /// Ordinary (non-stream) requests being served now.
    pub in_flight: u32,
    /// The most ordinary requests ever served at once: Lichess wants 1.
    pub max_in_flight: u32,
    /// Requests answered by an injected fault.
    pub faulted: u64,
}

/// A challenge to create through the control API or the HTTP endpoint: the same shape the
/// client sends.
pub use crate::lichess::ChallengeRequest as ChallengeSpec;

/// Which API a caller uses: bot endpoints for bots, board endpoints for humans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    Bot,
    Board,
}

/// A game action arriving over HTTP (or from a challenger).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Move { uci: String, offering_draw: bool },
    Resign,
    Abort,
    Draw(bool),
    Takeback(bool),
    Chat { room: ChatRoom, text: String },
    ClaimVictory,
    ClaimDraw,
}

/// The sandbox's state.
pub struct World {
    pub base_url: String,
    pub config: SandboxConfig,
    pub accounts: BTreeMap<String, Account>,
    tokens: HashMap<String, String>,
    pub challenges: BTreeMap<ChallengeId, ChallengeEntry>,
    pub games: BTreeMap<GameId, GameEntry>,
    pub event_streams: HashMap<String, StreamSlot>,
    /// Every challenge declined so far, with its reason.
    pub declined: Vec<ChallengeJson>,
    pub faults: HashMap<String, AccountFaults>,
    pub requests: HashMap<String, RequestStats>,
    /// Lichess is down (fault injection): every request is answered with this status.
    pub outage: Option<u16>,
    /// The last User-Agent each account sent.
    pub user_agents: HashMap<String, String>,
    /// When each account's challenge call (accept, decline, create, cancel) arrived.
    pub challenge_calls: Vec<(Instant, String)>,
    /// Every challenge that is no longer open, in the order they closed.
    pub challenge_log: Vec<ChallengeOutcome>,
    /// Moves refused while their game was running (see [`RefusedMove`]).
    pub refused_moves: Vec<RefusedMove>,
    /// HTTP faults served so far (429, 5xx), in order.
    pub served_faults: Vec<ServedFault>,
    /// When each account opened an event stream, in order.
    pub event_stream_opens: Vec<(Instant, String)>,
    /// The newest requests of the accounts (streams included) when they arrived, with their
    /// paths; at most `request_log_cap` of them.
    pub request_log: VecDeque<(Instant, String, String)>,
    request_log_cap: usize,
    /// Requests dropped from the front of the log to keep it bounded.
    pub request_log_dropped: u64,
    /// Games whose stream Lichess refuses with this status (a game the bot API cannot play).
    pub refused_game_streams: HashMap<GameId, u16>,
    /// Per game, how many more claims (victory or draw, after the opponent left) are refused
    /// with a 400, as lila refuses one it does not allow yet.
    pub refused_claims: HashMap<GameId, u32>,
    /// Per game, the opponent's move that overtakes the next abort: it lands first, so the
    /// abort is answered 200 but finds the game past the point of an abort (lila's round
    /// actor takes the move before the abort the HTTP layer already acknowledged).
    pub aborts_overtaken_by: HashMap<GameId, String>,
    /// The simulated challengers send no new challenge while this is set (their games go on).
    pub challengers_paused: bool,
    /// Per account, how many of its next `gameStart` events are lost on the way (the game
    /// starts; the event stream never tells).
    pub lost_game_starts: HashMap<String, u32>,
    rng: StdRng,
    notices: mpsc::UnboundedSender<Notice>,
    finished: watch::Sender<usize>,
}

impl World {
    pub fn new(
        config: SandboxConfig,
        base_url: String,
        notices: mpsc::UnboundedSender<Notice>,
        finished: watch::Sender<usize>,
    ) -> World {
        let rng = match config.seed {
            Some(seed) => StdRng::seed_from_u64(seed),
            None => StdRng::from_entropy(),
        };
        let mut world = World {
            base_url,
            accounts: BTreeMap::new(),
            tokens: HashMap::new(),
            challenges: BTreeMap::new(),
            games: BTreeMap::new(),
            event_streams: HashMap::new(),
            declined: Vec::new(),
            faults: HashMap::new(),
            requests: HashMap::new(),
            outage: None,
            user_agents: HashMap::new(),
            challenge_calls: Vec::new(),
            challenge_log: Vec::new(),
            refused_moves: Vec::new(),
            served_faults: Vec::new(),
            event_stream_opens: Vec::new(),
            request_log: VecDeque::new(),
            request_log_cap: config.request_log_cap.max(1),
            request_log_dropped: 0,
            refused_game_streams: HashMap::new(),
            refused_claims: HashMap::new(),
            aborts_overtaken_by: HashMap::new(),
            challengers_paused: false,
            lost_game_starts: HashMap::new(),
            rng,
            notices,
            finished,
            config: config.clone(),
        };
        for account in &config.accounts {
            world.add_account(Account::new(account, None));
        }
        for (i, c) in config.challengers.iter().enumerate() {
            let account = AccountConfig {
                username: c.name.clone(),
                token: c.token().expose().to_string(),
                bot: c.title.as_deref() == Some("BOT"),
                title: c.title.clone(),
                rating: c.rating,
                provisional: c.provisional,
                games_played: 0,
                scopes: None,
            };
            world.add_account(Account::new(&account, Some(i)));
        }
        world
    }

    fn add_account(&mut self, account: Account) {
        self.tokens
            .insert(account.token.clone(), account.id.clone());
        self.accounts.insert(account.id.clone(), account);
    }

    /// The account id behind a bearer token.
    pub fn authenticate(&self, token: &str) -> Result<String, ApiError> {
        self.tokens
            .get(token)
            .cloned()
            .ok_or(ApiError::Unauthorized)
    }

    pub fn account(&self, id_or_name: &str) -> Option<&Account> {
        self.accounts.get(&id_or_name.to_ascii_lowercase())
    }

    /// Refuses the wrong kind of account on an API with a 400, as lila's `WithPovAsBot` does.
    pub fn check_api(&self, id: &str, api: Api) -> Result<(), ApiError> {
        let account = self.account(id).ok_or(ApiError::Unauthorized)?;
        match (api, account.bot) {
            (Api::Bot, false) => Err(ApiError::BadRequest(
                "This endpoint can only be used with a Bot account. \
                 See https://lichess.org/api#operation/botAccountUpgrade"
                    .to_string(),
            )),
            (Api::Board, true) => Err(ApiError::BadRequest(
                "This endpoint cannot be used with a Bot account.".to_string(),
            )),
            _ => Ok(()),
        }
    }

    fn random_id(&mut self, len: usize) -> String {
        const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        (0..len)
            .map(|_| ALPHABET[self.rng.gen_range(0..ALPHABET.len())] as char)
            .collect()
    }

    pub fn rng(&mut self) -> &mut StdRng {
        &mut self.rng
    }

    // -------------------------------------------------------------- accounts

    pub fn upgrade(&mut self, id: &str) -> Result<(), ApiError> {
        let account = self.accounts.get_mut(id).ok_or(ApiError::Unauthorized)?;
        if account
            .scopes
            .as_ref()
            .is_some_and(|s| !s.iter().any(|s| s == "bot:play"))
        {
            return Err(ApiError::Forbidden("Missing scope".to_string()));
        }
        if account.bot {
            return Err(ApiError::BadRequest(
                "This account is already a bot account.".to_string(),
            ));
        }
        if account.games_played > 0 {
            return Err(ApiError::BadRequest(
                "This account has already played games and cannot become a bot.".to_string(),
            ));
        }
        account.bot = true;
        account.title = Some("BOT".to_string());
        Ok(())
    }

    /// Revokes the account's token: every request with it gets 401 and its open streams end
    /// (Lichess closes them with the token). [`World::restore_token`] undoes it.
    pub fn revoke_token(&mut self, id: &str) -> bool {
        let id = id.to_ascii_lowercase();
        let Some(token) = self.accounts.get(&id).map(|a| a.token.clone()) else {
            return false;
        };
        self.tokens.remove(&token);
        self.close_streams_of(&id);
        true
    }

    /// Accepts the account's token again (the owner made the token work again).
    pub fn restore_token(&mut self, id: &str) -> bool {
        let id = id.to_ascii_lowercase();
        let Some(account) = self.accounts.get_mut(&id) else {
            return false;
        };
        account.closed = false;
        let token = account.token.clone();
        self.tokens.insert(token, id);
        true
    }

    /// Closes the account: its token is refused and `/api/user` shows it `disabled`.
    pub fn close_account(&mut self, id: &str) -> bool {
        let id = id.to_ascii_lowercase();
        match self.accounts.get_mut(&id) {
            Some(account) => account.closed = true,
            None => return false,
        }
        self.revoke_token(&id)
    }

    /// Ends the account's event stream and its game streams.
    fn close_streams_of(&mut self, id: &str) {
        self.event_streams.remove(id);
        for entry in self.games.values_mut() {
            entry.streams.remove(id);
        }
    }

    /// Lichess goes down (`Some(status)`: every request answered with it, open streams end)
    /// or comes back (`None`).
    pub fn set_outage(&mut self, status: Option<u16>) {
        self.outage = status;
        if status.is_some() {
            self.event_streams.clear();
            for entry in self.games.values_mut() {
                entry.streams.clear();
            }
        }
    }

    // -------------------------------------------------------------- challenges

    /// Creates a challenge from `from` to `to` and announces it on both event streams.
    pub fn create_challenge(
        &mut self,
        from: &str,
        to: &str,
        spec: &ChallengeSpec,
    ) -> Result<ChallengeJson, ApiError> {
        self.create_challenge_as(from, to, spec, false)
    }

    /// Creates a challenge `from` plays; with `anonymous` it shows `challenger: null`, as
    /// Lichess shows a person who is not logged in.
    pub fn create_challenge_as(
        &mut self,
        from: &str,
        to: &str,
        spec: &ChallengeSpec,
        anonymous: bool,
    ) -> Result<ChallengeJson, ApiError> {
        let challenger = self.account(from).ok_or(ApiError::Unauthorized)?.clone();
        let dest = self
            .account(to)
            .ok_or_else(|| ApiError::BadRequest(format!("User {to} not found")))?
            .clone();
        if challenger.id == dest.id {
            return Err(ApiError::BadRequest("You cannot challenge yourself".into()));
        }
        let speed = spec.time_control.speed();
        if let TimeControl::Clock {
            limit, increment, ..
        } = spec.time_control
        {
            let valid_limit =
                matches!(limit, 0 | 15 | 30 | 45 | 60 | 90) || (limit % 60 == 0 && limit <= 10800);
            if !valid_limit || increment > 60 || (limit == 0 && increment == 0) {
                return Err(ApiError::BadRequest("Invalid clock".into()));
            }
            if !speed.bots_may_play() && (challenger.bot || dest.bot) {
                return Err(ApiError::BadRequest("Bots cannot play UltraBullet".into()));
            }
        }
        if spec.fen.is_some() && spec.rated {
            return Err(ApiError::BadRequest(
                "Games from a position cannot be rated".into(),
            ));
        }
        let variant_key = match (&spec.fen, spec.variant.as_str()) {
            (Some(_), "standard") => "fromPosition".to_string(),
            (_, v) => v.to_string(),
        };
        if !matches!(
            variant_key.as_str(),
            "standard" | "chess960" | "fromPosition"
        ) {
            return Err(ApiError::BadRequest(format!(
                "The sandbox does not play the variant {variant_key}"
            )));
        }
        if let Some(fen) = &spec.fen {
            crate::engine::Game::new(Some(fen), variant_key == "chess960")
                .map_err(|e| ApiError::BadRequest(e.to_string()))?;
        }
        let perf = Perf::of_game(&variant_key, speed);
        let id = ChallengeId::new(self.random_id(8));
        let final_color = match spec.color {
            ChallengeColor::White => Color::White,
            ChallengeColor::Black => Color::Black,
            ChallengeColor::Random | ChallengeColor::Other => {
                if self.rng.r#gen::<bool>() {
                    Color::White
                } else {
                    Color::Black
                }
            }
        };
        let json = ChallengeJson {
            id: id.clone(),
            url: format!("{}/{id}", self.base_url),
            status: ChallengeStatus::Created,
            challenger: if anonymous {
                ChallengeUser::anonymous()
            } else {
                challenger.challenge_user(perf)
            },
            dest_user: Some(dest.challenge_user(perf)),
            variant: Variant::from_key(&variant_key),
            rated: spec.rated,
            speed,
            time_control: spec.time_control.clone(),
            color: spec.color,
            final_color: Some(final_color),
            perf: ChallengePerf {
                icon: "\u{e019}".to_string(),
                name: perf.name().to_string(),
            },
            direction: None,
            initial_fen: spec.fen.clone(),
            rematch_of: None,
            decline_reason: None,
            decline_reason_key: None,
        };
        let delivered = self.announce_challenge(&json, &challenger.id, &dest.id);
        self.challenges.insert(
            id.clone(),
            ChallengeEntry {
                json: json.clone(),
                player: challenger.id.clone(),
                created: Instant::now(),
                delivered: delivered.then(Instant::now),
            },
        );
        if dest.challenger.is_some() {
            let _ignored = self.notices.send(Notice::ChallengeReceived {
                challenge_id: id,
                dest: dest.id.clone(),
            });
        }
        let mut out = json;
        out.direction = Some("out".to_string());
        Ok(out)
    }

    /// Sends the challenge to both event streams; returns whether the destination's stream
    /// was open and not silenced.
    fn announce_challenge(&self, json: &ChallengeJson, challenger: &str, dest: &str) -> bool {
        let mut delivered = false;
        for (who, direction) in [(dest, "in"), (challenger, "out")] {
            if let Some(slot) = self.event_streams.get(who) {
                send_json(slot, &challenge_event(json, direction));
                delivered |= who == dest && !slot.control.is_silent();
            }
        }
        delivered
    }

    /// Moves a challenge that just closed into [`World::challenge_log`].
    fn log_challenge(&mut self, entry: &ChallengeEntry, fate: ChallengeFate) {
        self.challenge_log.push(ChallengeOutcome {
            id: entry.json.id.clone(),
            challenger: entry.json.challenger.id.clone(),
            dest: entry
                .json
                .dest_user
                .as_ref()
                .map(|u| u.id.clone())
                .unwrap_or_default(),
            created: entry.created,
            delivered: entry.delivered,
            ended: Instant::now(),
            fate,
        });
    }

    /// Logs a request of `account` to `path`, dropping the oldest entry when the log is full.
    pub fn log_request(&mut self, at: Instant, account: String, path: String) {
        if self.request_log.len() >= self.request_log_cap {
            self.request_log.pop_front();
            self.request_log_dropped += 1;
        }
        self.request_log.push_back((at, account, path));
    }

    /// The seconds left of `account`'s bot-game limit (armed by the control API) when `id` is
    /// a bot's challenge to it: lila refuses the accept with a 429 then.
    pub fn bot_limit_left(&self, account: &str, id: &ChallengeId) -> Option<u64> {
        let until = self.faults.get(account)?.bot_limit_until?;
        let now = Instant::now();
        let from_bot = self.challenges.get(id)?.json.challenger.is_bot();
        (from_bot && until > now).then(|| (until - now).as_secs().max(1))
    }

    /// When `id` is a bot's challenge to `account` while the challenger's bot-game limit is
    /// armed (by the control API): the seconds left and the challenger's name, for lila's 400.
    pub fn challenger_bot_limit_left(
        &self,
        account: &str,
        id: &ChallengeId,
    ) -> Option<(u64, String)> {
        let until = self.faults.get(account)?.challenger_bot_limit_until?;
        let now = Instant::now();
        let challenger = &self.challenges.get(id)?.json.challenger;
        (challenger.is_bot() && until > now)
            .then(|| ((until - now).as_secs().max(1), challenger.name.clone()))
    }

    pub fn accept_challenge(
        &mut self,
        account: &str,
        id: &ChallengeId,
    ) -> Result<GameId, ApiError> {
        let entry = self.challenges.get(id).ok_or_else(not_found)?;
        let dest = entry.json.dest_user.as_ref().map(|u| u.id.as_str());
        if dest != Some(account) {
            return Err(not_found());
        }
        let entry = self.challenges.remove(id).expect("checked above");
        self.log_challenge(&entry, ChallengeFate::Accepted);
        self.start_game(entry.json, &entry.player)
    }

    pub fn decline_challenge(
        &mut self,
        account: &str,
        id: &ChallengeId,
        reason: DeclineReason,
    ) -> Result<(), ApiError> {
        let entry = self.challenges.get(id).ok_or_else(not_found)?;
        if entry.json.dest_user.as_ref().map(|u| u.id.as_str()) != Some(account) {
            return Err(not_found());
        }
        let entry = self.challenges.remove(id).expect("checked above");
        self.log_challenge(&entry, ChallengeFate::Declined);
        let mut json = entry.json;
        json.status = ChallengeStatus::Declined;
        json.decline_reason = Some(reason.message().to_string());
        json.decline_reason_key = Some(reason.key());
        let challenger = json.challenger.id.clone();
        if let Some(slot) = self.event_streams.get(&challenger) {
            send_json(
                slot,
                &Event::ChallengeDeclined {
                    challenge: Box::new(json.clone()),
                },
            );
        }
        if self
            .accounts
            .get(&challenger)
            .is_some_and(|a| a.challenger.is_some())
        {
            let _ignored = self.notices.send(Notice::ChallengeDeclined {
                challenge: id.clone(),
                challenger,
                reason: reason.key(),
            });
        }
        self.declined.push(json);
        Ok(())
    }

    /// Cancels a challenge (by its challenger, or by expiry when `account` is `None`).
    pub fn cancel_challenge(
        &mut self,
        account: Option<&str>,
        id: &ChallengeId,
    ) -> Result<(), ApiError> {
        let entry = self.challenges.get(id).ok_or_else(not_found)?;
        if account.is_some_and(|a| entry.json.challenger.id != a) {
            return Err(not_found());
        }
        let entry = self.challenges.remove(id).expect("checked above");
        let fate = if account.is_some() {
            ChallengeFate::Canceled
        } else {
            ChallengeFate::Expired
        };
        self.log_challenge(&entry, fate);
        let mut json = entry.json;
        json.status = ChallengeStatus::Canceled;
        if let Some(dest) = json.dest_user.as_ref()
            && let Some(slot) = self.event_streams.get(&dest.id)
        {
            send_json(
                slot,
                &Event::ChallengeCanceled {
                    challenge: Box::new(json.clone()),
                },
            );
        }
        Ok(())
    }

    // -------------------------------------------------------------- games

    fn start_game(&mut self, challenge: ChallengeJson, player: &str) -> Result<GameId, ApiError> {
        let challenger = self.account(player).ok_or_else(not_found)?.clone();
        let dest_id = challenge
            .dest_user
            .as_ref()
            .ok_or_else(not_found)?
            .id
            .clone();
        let dest = self.account(&dest_id).ok_or_else(not_found)?.clone();
        let challenger_color = challenge.final_color.unwrap_or(Color::White);
        let perf = Perf::of_game(&challenge.variant.key, challenge.speed);
        let (white, black) = match challenger_color {
            Color::White => (challenger.seat(perf), dest.seat(perf)),
            Color::Black => (dest.seat(perf), challenger.seat(perf)),
        };
        let game = SandboxGame::new(
            challenge.id.game_id(),
            white,
            black,
            challenge.variant.key.clone(),
            challenge.rated,
            challenge.time_control.clone(),
            challenge.initial_fen.clone(),
            self.config.no_start_timeout,
            Instant::now(),
            unix_ms(),
        )
        .map_err(ApiError::BadRequest)?;
        let id = game.id.clone();
        let suffix = self.random_id(4);
        let (watch, _) = watch::channel(game.state(Instant::now()));
        self.games.insert(
            id.clone(),
            GameEntry {
                game,
                full_id_suffix: suffix,
                streams: HashMap::new(),
                watch,
                chat: Vec::new(),
                gone: None,
                gone_told: None,
                started_at: Instant::now(),
                ended_at: None,
            },
        );
        for player in [&challenger.id, &dest.id] {
            if let Some(account) = self.accounts.get_mut(player.as_str()) {
                account.games_played += 1;
            }
            self.send_game_event(player, &id, true);
        }
        let _ignored = self.notices.send(Notice::GameStarted {
            game_id: id.clone(),
        });
        Ok(id)
    }

    /// Sends `gameStart` (or `gameFinish`) of a game to a player's event stream.
    fn send_game_event(&mut self, player: &str, game_id: &GameId, start: bool) {
        if start
            && let Some(lost) = self.lost_game_starts.get_mut(player)
            && *lost > 0
        {
            *lost -= 1;
            return;
        }
        let (Some(slot), Some(info)) = (
            self.event_streams.get(player),
            self.game_event_info(player, game_id),
        ) else {
            return;
        };
        let game = Box::new(info);
        let event = if start {
            Event::GameStart { game }
        } else {
            Event::GameFinish { game }
        };
        send_json(slot, &event);
    }

    /// `GameEventInfo` of a game from one player's point of view.
    pub fn game_event_info(&self, player: &str, game_id: &GameId) -> Option<GameEventInfo> {
        let entry = self.games.get(game_id)?;
        let g = &entry.game;
        let color = g.color_of(player)?;
        let opponent = g.seat(color.other());
        let now = Instant::now();
        Some(GameEventInfo {
            full_id: format!("{}{}", g.id, entry.full_id_suffix),
            game_id: g.id.clone(),
            fen: Some(g.board.fen()),
            color: Some(color),
            last_move: Some(g.moves.last().cloned().unwrap_or_default()),
            source: Some("friend".to_string()),
            status: Some(GameStatusObj::from(g.status)),
            variant: Some(Variant::from_key(&g.variant)),
            speed: Some(g.speed),
            perf: Some(g.perf),
            rated: Some(g.rated),
            has_moved: Some(g.moves.len() > usize::from(color == Color::Black)),
            opponent: Some(GameEventOpponent {
                id: Some(opponent.id.clone()),
                username: opponent.name.clone(),
                rating: Some(opponent.rating),
                rating_diff: None,
                ai: None,
            }),
            is_my_turn: Some(!g.is_over() && g.turn() == color),
            seconds_left: g.clock().map(|_| (g.remaining(color, now) / 1000) as i64),
            winner: g.winner,
            rating: Some(g.seat(color).rating),
            rating_diff: None,
            compat: Some(Compat {
                bot: true,
                board: true,
            }),
            id: Some(g.id.clone()),
            tournament_id: None,
        })
    }

    /// `gameFull` of a game.
    pub fn game_full(&self, game_id: &GameId) -> Option<GameFull> {
        let entry = self.games.get(game_id)?;
        let g = &entry.game;
        let player = |s: &Seat| GameEventPlayer {
            id: s.id.clone(),
            name: s.name.clone(),
            title: s.title.clone(),
            rating: Some(s.rating),
            provisional: s.provisional,
            ai_level: None,
        };
        Some(GameFull {
            id: g.id.clone(),
            variant: Variant::from_key(&g.variant),
            clock: g.clock().map(|c| GameClock {
                initial: c.initial_ms,
                increment: c.increment_ms,
            }),
            speed: g.speed,
            perf: GamePerf {
                name: g.perf.name().to_string(),
            },
            rated: g.rated,
            created_at: g.created_at_ms,
            white: player(&g.white),
            black: player(&g.black),
            initial_fen: g.initial_fen.clone(),
            state: g.state(Instant::now()),
            days_per_turn: g.time_control.days_per_turn(),
            tournament_id: None,
        })
    }

    /// Opens the event stream of an account: closes the previous one, then sends every
    /// current challenge and game, as Lichess does.
    pub fn open_event_stream(&mut self, account: &str) -> StreamReader {
        let (slot, reader) = new_stream();
        // Replacing the slot drops the old sender: the old stream ends.
        self.event_streams.insert(account.to_string(), slot);
        self.event_stream_opens
            .push((Instant::now(), account.to_string()));
        self.resend_events(account);
        let flapping = self
            .faults
            .get(account)
            .and_then(|f| f.flap_event_stream_until)
            .is_some_and(|until| Instant::now() < until);
        if flapping {
            // The replay is sent; dropping the sender ends the stream after it.
            self.event_streams.remove(account);
        }
        reader
    }

    /// Sends every current challenge and game of an account again (also a fault: duplicates).
    pub fn resend_events(&mut self, account: &str) {
        let Some(slot) = self.event_streams.get(account) else {
            return;
        };
        let now = Instant::now();
        for entry in self.challenges.values_mut() {
            let json = &entry.json;
            let incoming = json.dest_user.as_ref().is_some_and(|u| u.id == account);
            let outgoing = json.challenger.id == account;
            if incoming || outgoing {
                let direction = if incoming { "in" } else { "out" };
                send_json(slot, &challenge_event(json, direction));
                if incoming && entry.delivered.is_none() && !slot.control.is_silent() {
                    entry.delivered = Some(now);
                }
            }
        }
        for (id, entry) in &self.games {
            if !entry.game.is_over()
                && entry.game.color_of(account).is_some()
                && let Some(info) = self.game_event_info(account, id)
            {
                send_json(
                    slot,
                    &Event::GameStart {
                        game: Box::new(info),
                    },
                );
            }
        }
    }

    /// Opens a player's game stream: `gameFull` first; closed at once if the game is over.
    pub fn open_game_stream(
        &mut self,
        account: &str,
        game_id: &GameId,
    ) -> Result<StreamReader, ApiError> {
        let full = self.game_full(game_id).ok_or_else(not_found)?;
        let entry = self.games.get_mut(game_id).expect("game_full found it");
        if entry.game.color_of(account).is_none() {
            return Err(not_found());
        }
        let (slot, reader) = new_stream();
        send_json(&slot, &GameEvent::GameFull(Box::new(full)));
        if !entry.game.is_over() {
            // A new stream for the same game and player closes the old one.
            entry.streams.insert(account.to_string(), slot);
        }
        Ok(reader)
    }

    /// Applies a player's action to a game.
    pub fn game_action(
        &mut self,
        account: &str,
        game_id: &GameId,
        action: Action,
    ) -> Result<(), ApiError> {
        if matches!(action, Action::ClaimVictory | Action::ClaimDraw)
            && let Some(left) = self.refused_claims.get_mut(game_id)
            && *left > 0
        {
            *left -= 1;
            return Err(ApiError::BadRequest("You cannot claim the game now".into()));
        }
        let entry = self.games.get_mut(game_id).ok_or_else(not_found)?;
        let color = entry.game.color_of(account).ok_or_else(not_found)?;
        let now = Instant::now();
        let now_ms = unix_ms();
        if action == Action::Abort
            && let Some(uci) = self.aborts_overtaken_by.remove(game_id)
        {
            if let Err(e) = entry.game.play(color.other(), &uci, false, now, now_ms) {
                tracing::warn!(game = %game_id, "the overtaking move {uci} was refused: {e}");
            }
            self.after_change(game_id);
            return Ok(());
        }
        let was_over = entry.game.is_over();
        let mut refused = None;
        let result = match action.clone() {
            Action::Move { uci, offering_draw } => {
                let ply = entry.game.moves.len();
                let played = entry.game.play(color, &uci, offering_draw, now, now_ms);
                if let Err(e @ (ActionError::NotYourTurn | ActionError::IllegalMove(_))) = &played {
                    refused = Some(RefusedMove {
                        at: now,
                        game_id: game_id.clone(),
                        player: account.to_string(),
                        uci,
                        ply,
                        error: e.to_string(),
                    });
                }
                played
            }
            Action::Resign => entry.game.resign(color, now, now_ms),
            Action::Abort => entry.game.abort(now, now_ms),
            Action::Draw(yes) => entry.game.offer(Offer::Draw, color, yes, now, now_ms),
            Action::Takeback(yes) => entry.game.offer(Offer::Takeback, color, yes, now, now_ms),
            Action::Chat { room, text } => {
                if text.chars().count() > MAX_CHAT_CHARS {
                    return Err(ApiError::BadRequest("Chat message too long".into()));
                }
                let line = ChatLine {
                    room,
                    username: entry.game.seat(color).name.clone(),
                    text,
                };
                entry.chat.push(line.clone());
                for slot in entry.streams.values() {
                    send_json(slot, &GameEvent::ChatLine(line.clone()));
                }
                return Ok(());
            }
            Action::ClaimVictory | Action::ClaimDraw => {
                // As lila answers (`BotPlayer.claimVictory`/`claimDraw`, `Pov.mightClaimWin`,
                // the round's `ResignForce`/`DrawForce`): a claim on a game that cannot be
                // claimed (no clock, still abortable) and a victory claim on the claimer's own
                // turn are answered 200 with nothing done; otherwise the game ends only if the
                // opponent is gone long enough, and a claim that did not win (or draw) what it
                // asked for is a 400.
                let victory = action == Action::ClaimVictory;
                if !entry.game.claimable() || (victory && entry.game.turn() == color) {
                    return Ok(());
                }
                let gone = entry
                    .gone
                    .is_some_and(|(who, at)| who == color.other() && now >= at);
                if !gone {
                    return Err(ApiError::BadRequest(
                        "The opponent has not left the game".into(),
                    ));
                }
                let claimed = if victory {
                    entry.game.claim_victory(color, now, now_ms)
                } else {
                    entry.game.claim_draw(now, now_ms)
                };
                let won_what_was_asked = entry.game.winner == victory.then_some(color);
                if claimed.is_ok() && !won_what_was_asked {
                    self.after_change(game_id);
                    return Err(ApiError::BadRequest(
                        "You cannot claim the win on this game".into(),
                    ));
                }
                claimed
            }
        };
        // A player who acts is back.
        let back = entry.gone.is_some_and(|(who, _)| who == color) && result.is_ok();
        let changed = result.is_ok() || (!was_over && entry.game.is_over());
        if back
            && !entry.game.is_over()
            && let Err(e) = self.set_gone(game_id, account, false, Duration::ZERO)
        {
            tracing::debug!(game = %game_id, "cannot mark {account} as back: {e}");
        }
        if changed {
            self.after_change(game_id);
        }
        self.refused_moves.extend(refused);
        result.map_err(ApiError::from)
    }

    /// Marks a player as gone from (or back in) a game and tells the opponent with an
    /// `opponentGone` line; the opponent may claim after `claim_after`.
    pub fn set_gone(
        &mut self,
        game_id: &GameId,
        player: &str,
        gone: bool,
        claim_after: Duration,
    ) -> Result<(), ApiError> {
        let entry = self.games.get_mut(game_id).ok_or_else(not_found)?;
        let color = entry.game.color_of(player).ok_or_else(not_found)?;
        if entry.game.is_over() {
            return Err(ActionError::GameOver.into());
        }
        let now = Instant::now();
        let long_gone = entry
            .gone
            .is_some_and(|(who, at)| who == color && now >= at);
        entry.gone = gone.then(|| (color, now + claim_after));
        entry.gone_told = None;
        // Wakes the player's own challenger task, which makes no move while it is gone.
        entry.watch.send_modify(|_| {});
        // lila tells of a return only after an absence long enough to be claimed
        // (`RoundAsyncActor.Player.setOnline`: `isLongGone`); one back sooner comes back in
        // silence, and the countdown the opponent heard simply stops.
        if !gone && !long_gone {
            return Ok(());
        }
        entry.tell_opponent_of(
            color,
            OpponentGone {
                gone,
                claim_win_in_seconds: gone.then_some(claim_after.as_secs() as u32),
            },
        );
        Ok(())
    }

    /// Tells the opponent of each player gone for good, again every [`GONE_TICK`], as lila's
    /// round tick does (`notifyGone`: `claimWinInSeconds: 0`).
    fn tell_gone_for_good(&mut self, now: Instant) {
        for entry in self.games.values_mut() {
            let Some((color, at)) = entry.gone else {
                continue;
            };
            let told_lately = entry
                .gone_told
                .is_some_and(|t| now.duration_since(t) < GONE_TICK);
            if entry.game.is_over() || now < at || told_lately {
                continue;
            }
            entry.gone_told = Some(now);
            entry.tell_opponent_of(
                color,
                OpponentGone {
                    gone: true,
                    claim_win_in_seconds: Some(0),
                },
            );
        }
    }

    /// Pushes the new state to streams and watchers; finishes the game's bookkeeping when
    /// it just ended.
    fn after_change(&mut self, game_id: &GameId) {
        let Some(entry) = self.games.get_mut(game_id) else {
            return;
        };
        let state = entry.game.state(Instant::now());
        for slot in entry.streams.values() {
            send_json(slot, &GameEvent::GameState(state.clone()));
        }
        entry.watch.send_replace(state);
        if entry.game.is_over() {
            entry.ended_at.get_or_insert_with(Instant::now);
            // The final gameState is queued; dropping the senders ends the streams after it.
            entry.streams.clear();
            let players = [entry.game.white.id.clone(), entry.game.black.id.clone()];
            self.update_ratings(game_id);
            for player in &players {
                self.send_game_event(player, game_id, false);
            }
            self.finished.send_modify(|n| *n += 1);
        }
    }

    /// Elo update of both players' perf ratings after a rated game with a result.
    fn update_ratings(&mut self, game_id: &GameId) {
        let Some(entry) = self.games.get(game_id) else {
            return;
        };
        let g = &entry.game;
        if !g.rated || matches!(g.status, GameStatus::Aborted | GameStatus::NoStart) {
            return;
        }
        let score_white = match g.winner {
            Some(Color::White) => 1.0,
            Some(Color::Black) => 0.0,
            None => 0.5,
        };
        let (w, b) = (g.white.id.clone(), g.black.id.clone());
        let perf = g.perf;
        let rw = f64::from(self.accounts.get(&w).map_or(1500, |a| a.rating(perf)));
        let rb = f64::from(self.accounts.get(&b).map_or(1500, |a| a.rating(perf)));
        let expected_white = 1.0 / (1.0 + 10f64.powf((rb - rw) / 400.0));
        for (id, delta_score) in [
            (w, score_white - expected_white),
            (b, expected_white - score_white),
        ] {
            if let Some(account) = self.accounts.get_mut(&id) {
                let entry = account.ratings.entry(perf).or_insert((1500, 0));
                let k = if entry.1 < 10 { 40.0 } else { 20.0 };
                entry.0 += (k * delta_score).round() as i32;
                entry.1 += 1;
            }
        }
    }

    /// Flags, `noStart` and challenge expiry: called by the clock ticker.
    pub fn tick(&mut self) {
        let now = Instant::now();
        let now_ms = unix_ms();
        let ended: Vec<GameId> = self
            .games
            .iter_mut()
            .filter_map(|(id, entry)| entry.game.tick(now, now_ms).then(|| id.clone()))
            .collect();
        for id in ended {
            self.after_change(&id);
        }
        self.tell_gone_for_good(now);
        let timeout = self.config.challenge_timeout;
        let expired: Vec<ChallengeId> = self
            .challenges
            .iter()
            .filter(|(_, c)| {
                matches!(c.json.time_control, TimeControl::Clock { .. })
                    && now.duration_since(c.created) >= timeout
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            let _gone = self.cancel_challenge(None, &id);
        }
    }

    /// The earliest instant at which `tick` has something to do.
    pub fn next_deadline(&self) -> Option<Instant> {
        let games = self.games.values().filter_map(|e| e.game.deadline());
        let challenges = self
            .challenges
            .values()
            .map(|c| c.created + self.config.challenge_timeout);
        games.chain(challenges).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lichess::types::ChallengeColor;

    fn world(challenge_timeout: Duration) -> World {
        let mut config = SandboxConfig::with_bots(&["bot"]);
        config.accounts.push(AccountConfig::human("hugo"));
        config.challenge_timeout = challenge_timeout;
        config.seed = Some(1);
        let (notices, _) = mpsc::unbounded_channel();
        let (finished, _) = watch::channel(0);
        World::new(config, "http://127.0.0.1:1".into(), notices, finished)
    }

    fn spec() -> ChallengeSpec {
        let mut spec = ChallengeSpec::clock(60, 0);
        spec.color = ChallengeColor::White;
        spec
    }

    fn play(w: &mut World, who: &str, game: &GameId, uci: &str) -> Result<(), ApiError> {
        w.game_action(
            who,
            game,
            Action::Move {
                uci: uci.into(),
                offering_draw: false,
            },
        )
    }

    #[test]
    fn the_bot_upgrade_needs_the_scope_and_an_account_without_games() {
        let mut w = world(Duration::from_secs(20));
        let with_scopes = |name: &str, scopes: &[&str]| AccountConfig {
            scopes: Some(scopes.iter().map(|s| s.to_string()).collect()),
            ..AccountConfig::human(name)
        };
        w.add_account(Account::new(
            &with_scopes("reader", &["challenge:read"]),
            None,
        ));
        w.add_account(Account::new(&with_scopes("player", &["bot:play"]), None));
        assert!(matches!(w.upgrade("reader"), Err(ApiError::Forbidden(_))));
        assert!(!w.account("reader").unwrap().bot);
        // Without scopes named, none is asked for (hugo); with bot:play, as on Lichess.
        for id in ["hugo", "player"] {
            w.upgrade(id).unwrap();
            assert_eq!(w.account(id).unwrap().title.as_deref(), Some("BOT"));
        }
        assert!(matches!(w.upgrade("hugo"), Err(ApiError::BadRequest(_))));
    }

    #[tokio::test]
    async fn the_request_log_keeps_the_newest_requests_and_counts_the_dropped() {
        let mut config = SandboxConfig::with_bots(&["bot"]);
        config.request_log_cap = 3;
        let (notices, _) = mpsc::unbounded_channel();
        let (finished, _) = watch::channel(0);
        let mut w = World::new(config, "http://127.0.0.1:1".into(), notices, finished);
        for i in 0..5 {
            w.log_request(Instant::now(), "bot".into(), format!("/api/{i}"));
        }
        let paths: Vec<&str> = w.request_log.iter().map(|(_, _, p)| p.as_str()).collect();
        assert_eq!(paths, ["/api/2", "/api/3", "/api/4"]);
        assert_eq!(w.request_log_dropped, 2);
    }

    #[test]
    fn moves_out_of_turn_or_illegal_are_recorded_and_late_ones_are_not() {
        let mut w = world(Duration::from_secs(20));
        let id = w.create_challenge("hugo", "bot", &spec()).unwrap().id;
        let game = w.accept_challenge("bot", &id).unwrap();
        play(&mut w, "hugo", &game, "e2e4").unwrap();
        play(&mut w, "bot", &game, "e7e5").unwrap();
        // The bot sends its move again: a second move for a ply already played.
        assert!(play(&mut w, "bot", &game, "e7e5").is_err());
        play(&mut w, "hugo", &game, "d2d4").unwrap();
        assert!(play(&mut w, "bot", &game, "e7e5").is_err(), "illegal now");
        let refused: Vec<(String, usize)> = w
            .refused_moves
            .iter()
            .map(|m| (m.player.clone(), m.ply))
            .collect();
        assert_eq!(refused, [("bot".to_string(), 2), ("bot".to_string(), 3)]);
        assert!(w.refused_moves[0].error.contains("Not your turn"));
        assert!(w.refused_moves[1].error.contains("Illegal"));
        // After the game ended a move is refused as "game over", not counted.
        w.game_action("bot", &game, Action::Resign).unwrap();
        assert!(play(&mut w, "bot", &game, "g8f6").is_err());
        assert_eq!(w.refused_moves.len(), 2);
        let entry = &w.games[&game];
        assert!(entry.ended_at.is_some_and(|end| end >= entry.started_at));
    }

    /// hugo (White) and the bot have each moved from `fen` (the standard start if `None`)
    /// with `moves`; the game is under way.
    fn game_under_way(w: &mut World, fen: Option<&str>, moves: [&str; 2]) -> GameId {
        let mut spec = spec();
        if let Some(fen) = fen {
            spec.variant = "fromPosition".into();
            spec.fen = Some(fen.into());
        }
        let id = w.create_challenge("hugo", "bot", &spec).unwrap().id;
        let game = w.accept_challenge("bot", &id).unwrap();
        // Still abortable: a claim can end nothing, and lila answers it with 200.
        w.game_action("bot", &game, Action::ClaimVictory).unwrap();
        w.game_action("bot", &game, Action::ClaimDraw).unwrap();
        play(w, "hugo", &game, moves[0]).unwrap();
        play(w, "bot", &game, moves[1]).unwrap();
        game
    }

    fn refused(result: Result<(), ApiError>) -> bool {
        matches!(result, Err(ApiError::BadRequest(_)))
    }

    #[test]
    fn claims_are_answered_as_lila_answers_them() {
        let mut w = world(Duration::from_secs(20));
        // hugo's turn: while he is there, or before his wait is over, a claim is a 400.
        let game = game_under_way(&mut w, None, ["e2e4", "e7e5"]);
        assert!(refused(w.game_action("bot", &game, Action::ClaimVictory)));
        w.set_gone(&game, "hugo", true, Duration::from_secs(60))
            .unwrap();
        assert!(refused(w.game_action("bot", &game, Action::ClaimVictory)));
        w.set_gone(&game, "hugo", true, Duration::ZERO).unwrap();
        w.game_action("bot", &game, Action::ClaimVictory).unwrap();
        let g = &w.games[&game].game;
        assert_eq!(
            (g.status, g.winner),
            (GameStatus::Timeout, Some(Color::Black))
        );

        // The bot's own turn: a victory claim is answered 200 and ends nothing; a draw claim
        // is not bound to the turn.
        let game = game_under_way(&mut w, None, ["e2e4", "e7e5"]);
        play(&mut w, "hugo", &game, "d2d4").unwrap();
        w.set_gone(&game, "hugo", true, Duration::ZERO).unwrap();
        w.game_action("bot", &game, Action::ClaimVictory).unwrap();
        assert!(!w.games[&game].game.is_over());
        w.game_action("bot", &game, Action::ClaimDraw).unwrap();
        let g = &w.games[&game].game;
        assert_eq!((g.status, g.winner), (GameStatus::Timeout, None));

        // The bot has a bare king: its victory claim draws the game, and is a 400.
        let bare = "4k3/8/8/8/8/8/8/R3K3 w - - 0 1";
        let game = game_under_way(&mut w, Some(bare), ["a1a2", "e8d8"]);
        w.set_gone(&game, "hugo", true, Duration::ZERO).unwrap();
        assert!(refused(w.game_action("bot", &game, Action::ClaimVictory)));
        let g = &w.games[&game].game;
        assert_eq!((g.status, g.winner), (GameStatus::Timeout, None));
    }

    #[test]
    fn closed_challenges_are_logged_with_their_fate_and_whether_the_bot_was_told() {
        let mut w = world(Duration::ZERO);
        // No event stream: the bot is never told; the challenge expires at the next tick.
        let unseen = w.create_challenge("hugo", "bot", &spec()).unwrap().id;
        w.tick();
        let _stream = w.open_event_stream("bot");
        assert_eq!(w.event_stream_opens.len(), 1);
        let seen = w.create_challenge("hugo", "bot", &spec()).unwrap().id;
        w.tick();
        w.config.challenge_timeout = Duration::from_secs(20);
        let accepted = w.create_challenge("hugo", "bot", &spec()).unwrap().id;
        w.accept_challenge("bot", &accepted).unwrap();
        let declined = w.create_challenge("hugo", "bot", &spec()).unwrap().id;
        w.decline_challenge("bot", &declined, DeclineReason::Later)
            .unwrap();
        let canceled = w.create_challenge("hugo", "bot", &spec()).unwrap().id;
        w.cancel_challenge(Some("hugo"), &canceled).unwrap();
        // A silenced stream loses the challenge: not delivered until the stream reopens.
        w.event_streams["bot"]
            .control
            .silence(Duration::from_secs(60));
        let lost = w.create_challenge("hugo", "bot", &spec()).unwrap().id;
        assert!(w.challenges[&lost].delivered.is_none());
        let _again = w.open_event_stream("bot");
        assert!(
            w.challenges[&lost].delivered.is_some(),
            "re-sent on reconnect"
        );

        let log: Vec<(ChallengeId, ChallengeFate, bool)> = w
            .challenge_log
            .iter()
            .map(|c| (c.id.clone(), c.fate, c.delivered.is_some()))
            .collect();
        assert_eq!(
            log,
            [
                (unseen, ChallengeFate::Expired, false),
                (seen, ChallengeFate::Expired, true),
                (accepted, ChallengeFate::Accepted, true),
                (declined, ChallengeFate::Declined, true),
                (canceled, ChallengeFate::Canceled, true),
            ]
        );
        assert!(
            w.challenge_log
                .iter()
                .all(|c| c.dest == "bot" && c.challenger == "hugo")
        );
    }
}
