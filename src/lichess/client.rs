//! `Client`: the only place the ladder talks HTTP to Lichess. One client per account (per
//! token) for the daemon's lifetime, shared by everything the account does (its event stream,
//! game actors, health checks, settling): one ordinary request in flight at a time, streams
//! beside it; HTTP 429 pauses every call of that client — of that account only — for at least
//! the policy's pause, longer when the answer asks (`Retry-After`, or lila's
//! `ratelimit.seconds`); 5xx and network errors are retried with decorrelated jitter; other
//! 4xx come back as typed errors. A 429 for the bot-game limit (`bot.vsBot.day`) is no request
//! rate: it pauses nothing and comes back at once as [`LichessError::BotLimit`]; the 400 lila
//! answers an accept with when the *challenger* is at that limit comes back as
//! [`LichessError::OpponentBotLimit`]. Streams get
//! an idle timeout per read, never a total one. Only challenge creations take turns of the
//! pacer the clients of one process share (lila limits creations per IP), and only a 429 on a
//! creation pauses that pacer; answers to challenges and game calls never wait for it.

use crate::logging::show_duration;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use reqwest::{Method, StatusCode, Url};
use serde::de::DeserializeOwned;
use tokio::time::Instant;

use super::backoff::{Backoff, BackoffPolicy, RateLimitPolicy, RetryPolicy};
use super::error::LichessError;
use super::ids::{ChallengeId, GameId};
use super::ndjson::{DEFAULT_IDLE_TIMEOUT, NdjsonStream, StreamEnd};
use super::pacer::{Pacer, PacingPolicy};
use super::shared_limits::{self, SharedLimits};
use super::speed::{Perf, TimeControl};
use super::stream_opens::{OpenBudget, OpenBudgetPolicy, ReconnectPolicy};
use super::token::Token;
use super::types::{
    ChallengeColor, ChallengeJson, ChatRoom, DeclineReason, Event, GameEvent, GameJson,
    UserExtended,
};

/// The real Lichess.
pub const LICHESS_URL: &str = "https://lichess.org";

/// How long an error body may be when quoted in an error message.
const MAX_ERROR_TEXT: usize = 300;

/// The longest pause a 429 answer can ask of an account (a wrong header cannot silence it
/// for days).
const MAX_ASKED_PAUSE: Duration = Duration::from_secs(24 * 3600);

/// lila's key of the bot-game limit in a 429 body (`{"ratelimit": {"key": …}}`).
pub const BOT_LIMIT_KEY: &str = "bot.vsBot.day";

/// Everything a client needs; `ClientConfig::new` fills in production defaults.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// `https://lichess.org`, or `http://127.0.0.1:port` for the sandbox.
    pub base_url: String,
    pub token: Token,
    pub rate_limit: RateLimitPolicy,
    pub backoff: BackoffPolicy,
    /// Longest silence tolerated on a stream (keep-alives count as data).
    pub stream_idle_timeout: Duration,
    /// Total time for one attempt of an ordinary request, and for a stream's headers.
    pub request_timeout: Duration,
    pub connect_timeout: Duration,
    /// `ladder/<version>`, or `ladder/<version> user:<name>` for an account's client
    /// ([`user_agent`]), as lichess-bot identifies itself.
    pub user_agent: String,
    /// How fast challenges may be created: the daemon makes one [`Pacer`] from this for all its
    /// accounts (they share one IP address).
    pub pacing: PacingPolicy,
    /// The shared pacer of challenge calls; `None` leaves them unpaced (one-off tools).
    pub pacer: Option<Pacer>,
    /// How the daemon spaces its checks of this account while Lichess refuses it (token
    /// rejected, account closed, not a bot).
    pub account_retry: RetryPolicy,
    /// The token's turn and 429 pause shared with other processes using the same token (the
    /// daemon and `ladder calibrate --fetch`); `None`: this process's limits only.
    pub shared_limits: Option<SharedLimits>,
    /// How many event-stream opens the token may make in a window (lila allows 30 per 10
    /// minutes): [`Client::stream_events`] waits for room.
    pub event_stream_opens: OpenBudgetPolicy,
    /// How the daemon spaces the reopens of the account's event stream.
    pub stream_reconnect: ReconnectPolicy,
}

/// The User-Agent of the ladder, naming the account when there is one.
pub fn user_agent(account: Option<&str>) -> String {
    let version = env!("CARGO_PKG_VERSION");
    match account {
        Some(name) => format!("ladder/{version} user:{name}"),
        None => format!("ladder/{version}"),
    }
}

impl ClientConfig {
    pub fn new(base_url: impl Into<String>, token: Token) -> ClientConfig {
        ClientConfig {
            base_url: base_url.into(),
            token,
            rate_limit: RateLimitPolicy::default(),
            backoff: BackoffPolicy::default(),
            stream_idle_timeout: DEFAULT_IDLE_TIMEOUT,
            request_timeout: Duration::from_secs(20),
            connect_timeout: Duration::from_secs(10),
            user_agent: user_agent(None),
            pacing: PacingPolicy::default(),
            pacer: None,
            account_retry: RetryPolicy::default(),
            shared_limits: None,
            event_stream_opens: OpenBudgetPolicy::default(),
            stream_reconnect: ReconnectPolicy::default(),
        }
    }
}

/// The one rule for where a token may be sent: https anywhere, plain http only to a loopback
/// host (the sandbox, tests). Config validation and `Client::new` both apply it.
pub fn validate_base_url(raw: &str) -> Result<Url, LichessError> {
    let bad = |reason: &str| LichessError::BadBaseUrl {
        url: raw.to_string(),
        reason: reason.to_string(),
    };
    let url = Url::parse(raw.trim()).map_err(|e| bad(&e.to_string()))?;
    if url.cannot_be_a_base() || url.host_str().is_none() {
        return Err(bad("not a base URL with a host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad("credentials do not belong in the URL"));
    }
    match url.scheme() {
        "https" => Ok(url),
        "http" if is_loopback(&url) => Ok(url),
        "http" => Err(bad(
            "plain http is only allowed to a loopback host (127.0.0.1, ::1, localhost); use https",
        )),
        _ => Err(bad("the scheme must be https (or http to loopback)")),
    }
}

fn is_loopback(url: &Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => bare.eq_ignore_ascii_case("localhost"),
    }
}

/// A challenge to create (`POST /api/challenge/{username}`).
#[derive(Clone, Debug, PartialEq)]
pub struct ChallengeRequest {
    pub rated: bool,
    pub time_control: TimeControl,
    pub color: ChallengeColor,
    /// Variant key (`standard`, `chess960`, `fromPosition`, ...).
    pub variant: String,
    pub fen: Option<String>,
}

impl ChallengeRequest {
    /// A casual standard real-time challenge.
    pub fn clock(limit_s: u32, increment_s: u32) -> ChallengeRequest {
        ChallengeRequest {
            rated: false,
            time_control: TimeControl::clock(limit_s, increment_s),
            color: ChallengeColor::Random,
            variant: "standard".to_string(),
            fen: None,
        }
    }

    fn form(&self) -> Vec<(String, String)> {
        let mut form = vec![
            ("rated".to_string(), self.rated.to_string()),
            (
                "color".to_string(),
                match self.color {
                    ChallengeColor::White => "white",
                    ChallengeColor::Black => "black",
                    ChallengeColor::Random | ChallengeColor::Other => "random",
                }
                .to_string(),
            ),
            ("variant".to_string(), self.variant.clone()),
        ];
        match &self.time_control {
            TimeControl::Clock {
                limit, increment, ..
            } => {
                form.push(("clock.limit".to_string(), limit.to_string()));
                form.push(("clock.increment".to_string(), increment.to_string()));
            }
            TimeControl::Correspondence {
                days_per_turn: Some(days),
            } => form.push(("days".to_string(), days.to_string())),
            TimeControl::Correspondence {
                days_per_turn: None,
            }
            | TimeControl::Unlimited
            | TimeControl::Other(_) => {}
        }
        if let Some(fen) = &self.fen {
            form.push(("fen".to_string(), fen.clone()));
        }
        form
    }
}

/// Filters of `GET /api/games/user/{username}`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportQuery {
    /// Games played since this time (Unix ms).
    pub since: Option<i64>,
    /// Games played until this time (Unix ms).
    pub until: Option<i64>,
    pub max: Option<u32>,
    pub perf_type: Vec<Perf>,
    pub rated: Option<bool>,
    /// Only games against this user.
    pub vs: Option<String>,
}

impl ExportQuery {
    fn pairs(&self) -> Vec<(String, String)> {
        let mut q = Vec::new();
        if let Some(v) = self.since {
            q.push(("since".to_string(), v.to_string()));
        }
        if let Some(v) = self.until {
            q.push(("until".to_string(), v.to_string()));
        }
        if let Some(v) = self.max {
            q.push(("max".to_string(), v.to_string()));
        }
        if !self.perf_type.is_empty() {
            let keys: Vec<&str> = self.perf_type.iter().map(|p| p.key()).collect();
            q.push(("perfType".to_string(), keys.join(",")));
        }
        if let Some(v) = self.rated {
            q.push(("rated".to_string(), v.to_string()));
        }
        if let Some(v) = &self.vs {
            q.push(("vs".to_string(), v.clone()));
        }
        // Only finished games are results; the rest of the flags keep the payload small.
        q.push(("finished".to_string(), "true".to_string()));
        q.push(("ongoing".to_string(), "false".to_string()));
        q.push(("clocks".to_string(), "false".to_string()));
        q.push(("evals".to_string(), "false".to_string()));
        q.push(("opening".to_string(), "false".to_string()));
        q
    }
}

/// Who a token belongs to, as Lichess says.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenOwner {
    pub account: UserExtended,
    /// The token's OAuth scopes; `None` when Lichess did not tell.
    pub scopes: Option<Vec<String>>,
}

/// How a call waits for the shared [`Pacer`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pacing {
    /// Game, account and challenge-answer calls: never wait for it.
    None,
    /// Challenge creations: a turn of the bucket (lila's per-IP creation limit), after any
    /// pause a 429 on a creation set.
    Turn,
}

impl Pacing {
    async fn wait(self, pacer: Option<&Pacer>) {
        if let (Pacing::Turn, Some(pacer)) = (self, pacer) {
            pacer.turn().await;
        }
    }
}

/// One request, rebuilt for every attempt.
struct Req {
    method: Method,
    segments: Vec<String>,
    query: Vec<(String, String)>,
    form: Option<Vec<(String, String)>>,
    /// A plain-text body (`/api/token/test` takes the token itself).
    text: Option<String>,
    accept: &'static str,
    /// How the call waits for the shared pacer.
    pacing: Pacing,
    /// Sent without the token (public data about an account whose token is refused).
    anonymous: bool,
    /// An event-stream open: every attempt, retries included, waits for the open budget.
    open_budget: bool,
}

impl Req {
    fn new(method: Method, segments: &[&str]) -> Req {
        Req {
            method,
            segments: segments.iter().map(|s| s.to_string()).collect(),
            query: Vec::new(),
            form: None,
            text: None,
            accept: "application/json",
            pacing: Pacing::None,
            anonymous: false,
            open_budget: false,
        }
    }

    fn pacing(mut self, pacing: Pacing) -> Req {
        self.pacing = pacing;
        self
    }

    fn query(mut self, key: &str, value: impl ToString) -> Req {
        self.query.push((key.to_string(), value.to_string()));
        self
    }

    fn form(mut self, form: Vec<(String, String)>) -> Req {
        self.form = Some(form);
        self
    }

    fn ndjson(mut self) -> Req {
        self.accept = "application/x-ndjson";
        self
    }

    /// `POST /api/...`: what errors and logs call this endpoint (never holds a secret).
    fn label(&self) -> String {
        format!("{} /{}", self.method, self.segments.join("/"))
    }
}

struct Inner {
    http: reqwest::Client,
    base: Url,
    /// The account's token; replaced in place when the account's token file changes
    /// ([`Client::set_token`]), so the gate and the pause outlive a new token.
    token: std::sync::RwLock<Token>,
    config: ClientConfig,
    /// Held for the whole of an ordinary call (retries and pauses included): one request at
    /// a time per token, as Lichess asks.
    gate: tokio::sync::Mutex<()>,
    /// Set by a 429: no call of this client starts before its end.
    pause: std::sync::Mutex<Option<Pause>>,
    /// The lock file of the token's turn across processes (see [`SharedLimits`]).
    turn_file: Option<std::fs::File>,
    /// The event-stream opens of the token in lila's window.
    event_opens: std::sync::Mutex<OpenBudget>,
}

/// The latest 429 pause of a client.
#[derive(Clone, Copy, Debug)]
struct Pause {
    until: Instant,
    length: Duration,
}

/// A Lichess API client for one account. Cheap to clone; clones share the request gate and
/// the rate-limit pause.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("base", &self.inner.base.as_str())
            .field("token", &*self.token())
            .finish()
    }
}

impl Client {
    /// Builds a client; fails on a base URL that is not https (or http to loopback).
    pub fn new(config: ClientConfig) -> Result<Client, LichessError> {
        let base = validate_base_url(&config.base_url)?;
        let http = reqwest::Client::builder()
            .user_agent(config.user_agent.clone())
            .connect_timeout(config.connect_timeout)
            // Lichess never redirects the API; a redirect would carry the token elsewhere.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| LichessError::BadBaseUrl {
                url: config.base_url.clone(),
                reason: format!("cannot build HTTP client: {e}"),
            })?;
        let turn_file = config
            .shared_limits
            .as_ref()
            .and_then(SharedLimits::open_lock);
        let event_opens = std::sync::Mutex::new(OpenBudget::new(config.event_stream_opens));
        Ok(Client {
            inner: Arc::new(Inner {
                http,
                base,
                token: std::sync::RwLock::new(config.token.clone()),
                config,
                gate: tokio::sync::Mutex::new(()),
                pause: std::sync::Mutex::new(None),
                turn_file,
                event_opens,
            }),
        })
    }

    /// A client for the real Lichess.
    pub fn lichess(token: Token) -> Result<Client, LichessError> {
        Client::new(ClientConfig::new(LICHESS_URL, token))
    }

    pub fn base_url(&self) -> &Url {
        &self.inner.base
    }

    pub fn config(&self) -> &ClientConfig {
        &self.inner.config
    }

    /// The token calls go out with now.
    fn token(&self) -> std::sync::RwLockReadGuard<'_, Token> {
        // A token is replaced whole: a panic elsewhere cannot leave it half written.
        self.inner.token.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends later calls with `token` (the account's token file was replaced). The client
    /// stays the same: its one-request gate and any running 429 pause hold across the change.
    pub fn set_token(&self, token: Token) {
        *self.inner.token.write().unwrap_or_else(|e| e.into_inner()) = token;
    }

    fn last_pause(&self) -> Option<Pause> {
        *self.inner.pause.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// When the current 429 pause ends, if one is running.
    pub fn paused_until(&self) -> Option<Instant> {
        self.last_pause()
            .map(|p| p.until)
            .filter(|&t| t > Instant::now())
    }

    /// When the latest 429 pause ended or will end (`None`: never paused). A game lost on
    /// time asks whether such a pause overlapped its last turn.
    pub fn last_pause_end(&self) -> Option<Instant> {
        self.last_pause().map(|p| p.until)
    }

    /// How long the latest 429 pause was (the policy's pause, or longer when Lichess asked).
    pub fn last_pause_length(&self) -> Option<Duration> {
        self.last_pause().map(|p| p.length)
    }

    /// Pauses every call of this client for `length` from now (never shortens a running
    /// pause), and tells the other processes using the token.
    fn pause_for(&self, length: Duration) {
        if let Some(shared) = &self.inner.config.shared_limits {
            shared.record_pause(SystemTime::now() + length);
        }
        let until = Instant::now() + length;
        let mut pause = self.inner.pause.lock().unwrap_or_else(|e| e.into_inner());
        if pause.is_none_or(|p| p.until < until) {
            *pause = Some(Pause { until, length });
        }
    }

    // ------------------------------------------------------------ endpoints

    /// `GET /api/account`: the token's own account.
    pub async fn account(&self) -> Result<UserExtended, LichessError> {
        Ok(self
            .json(Req::new(Method::GET, &["api", "account"]))
            .await?
            .0)
    }

    /// Whose token this is and what it may do: `GET /api/account`, with the scopes from the
    /// `X-OAuth-Scopes` header Lichess adds to OAuth responses, or else from
    /// `POST /api/token/test` (the documented way; `None` when neither tells).
    pub async fn token_owner(&self) -> Result<TokenOwner, LichessError> {
        let (account, headers) = self
            .json::<UserExtended>(Req::new(Method::GET, &["api", "account"]))
            .await?;
        let header_scopes = headers
            .get("x-oauth-scopes")
            .and_then(|v| v.to_str().ok())
            .map(parse_scopes);
        let scopes = match header_scopes {
            Some(scopes) => Some(scopes),
            None => self.token_test_scopes().await,
        };
        Ok(TokenOwner { account, scopes })
    }

    /// `POST /api/token/test` with the token as body: `{"<token>": {"scopes": "a,b", …} | null}`.
    async fn token_test_scopes(&self) -> Option<Vec<String>> {
        #[derive(serde::Deserialize)]
        struct TokenInfo {
            scopes: String,
        }
        let mut req = Req::new(Method::POST, &["api", "token", "test"]);
        req.text = Some(self.token().expose().to_string());
        let (map, _) = self
            .json::<std::collections::HashMap<String, Option<TokenInfo>>>(req)
            .await
            .ok()?;
        map.get(self.token().expose())?
            .as_ref()
            .map(|info| parse_scopes(&info.scopes))
    }

    /// `POST /api/bot/account/upgrade`: irreversibly turns the account into a bot.
    pub async fn upgrade_to_bot(&self) -> Result<(), LichessError> {
        self.ok(Req::new(
            Method::POST,
            &["api", "bot", "account", "upgrade"],
        ))
        .await
    }

    /// `GET /api/user/{username}`: public data, including ratings per perf.
    pub async fn user(&self, username: &str) -> Result<UserExtended, LichessError> {
        Ok(self
            .json(Req::new(Method::GET, &["api", "user", username]))
            .await?
            .0)
    }

    /// `GET /api/user/{username}` without the token: whether an account whose token is
    /// refused was closed (`disabled`) — a refused token would fail this call too.
    pub async fn public_user(&self, username: &str) -> Result<UserExtended, LichessError> {
        let mut req = Req::new(Method::GET, &["api", "user", username]);
        req.anonymous = true;
        Ok(self.json(req).await?.0)
    }

    /// `GET /api/stream/event`: challenges and game starts/finishes of this account. Each
    /// attempt waits until the token's open budget has room (lila's limit on opens).
    pub async fn stream_events(&self) -> Result<NdjsonStream<Event>, LichessError> {
        let mut req = Req::new(Method::GET, &["api", "stream", "event"]).ndjson();
        req.open_budget = true;
        self.stream(req).await
    }

    /// `GET /api/bot/game/stream/{gameId}`: `gameFull`, then `gameState` after every move.
    pub async fn stream_game(
        &self,
        game_id: &GameId,
    ) -> Result<NdjsonStream<GameEvent>, LichessError> {
        self.stream(
            Req::new(
                Method::GET,
                &["api", "bot", "game", "stream", game_id.as_str()],
            )
            .ndjson(),
        )
        .await
    }

    /// `POST /api/bot/game/{gameId}/move/{move}` (UCI), optionally offering a draw.
    pub async fn make_move(
        &self,
        game_id: &GameId,
        uci: &str,
        offering_draw: bool,
    ) -> Result<(), LichessError> {
        let mut req = Req::new(
            Method::POST,
            &["api", "bot", "game", game_id.as_str(), "move", uci],
        );
        if offering_draw {
            req = req.query("offeringDraw", "true");
        }
        self.ok(req).await
    }

    /// `POST /api/bot/game/{gameId}/chat`.
    pub async fn chat(
        &self,
        game_id: &GameId,
        room: ChatRoom,
        text: &str,
    ) -> Result<(), LichessError> {
        let form = vec![
            ("room".to_string(), room.as_str().to_string()),
            ("text".to_string(), text.to_string()),
        ];
        self.ok(Req::new(
            Method::POST,
            &["api", "bot", "game", game_id.as_str(), "chat"],
        )
        .form(form))
            .await
    }

    /// `POST /api/bot/game/{gameId}/abort` (only before both sides have moved).
    pub async fn abort(&self, game_id: &GameId) -> Result<(), LichessError> {
        self.game_action(game_id, &["abort"]).await
    }

    /// `POST /api/bot/game/{gameId}/resign`.
    pub async fn resign(&self, game_id: &GameId) -> Result<(), LichessError> {
        self.game_action(game_id, &["resign"]).await
    }

    /// `POST /api/bot/game/{gameId}/draw/{yes|no}`: offer/accept, or decline.
    pub async fn draw(&self, game_id: &GameId, accept: bool) -> Result<(), LichessError> {
        self.game_action(game_id, &["draw", yes_no(accept)]).await
    }

    /// `POST /api/bot/game/{gameId}/takeback/{yes|no}`.
    pub async fn takeback(&self, game_id: &GameId, accept: bool) -> Result<(), LichessError> {
        self.game_action(game_id, &["takeback", yes_no(accept)])
            .await
    }

    /// `POST /api/bot/game/{gameId}/claim-victory` (after `opponentGone`).
    pub async fn claim_victory(&self, game_id: &GameId) -> Result<(), LichessError> {
        self.game_action(game_id, &["claim-victory"]).await
    }

    /// `POST /api/bot/game/{gameId}/claim-draw` (after `opponentGone`).
    pub async fn claim_draw(&self, game_id: &GameId) -> Result<(), LichessError> {
        self.game_action(game_id, &["claim-draw"]).await
    }

    /// `POST /api/challenge/{challengeId}/accept`.
    pub async fn accept_challenge(&self, challenge_id: &ChallengeId) -> Result<(), LichessError> {
        self.ok(challenge_action(challenge_id, "accept")).await
    }

    /// `POST /api/challenge/{challengeId}/decline` with a reason.
    pub async fn decline_challenge(
        &self,
        challenge_id: &ChallengeId,
        reason: DeclineReason,
    ) -> Result<(), LichessError> {
        let form = vec![("reason".to_string(), reason.as_str().to_string())];
        self.ok(challenge_action(challenge_id, "decline").form(form))
            .await
    }

    /// `POST /api/challenge/{challengeId}/cancel` (a challenge this account sent).
    pub async fn cancel_challenge(&self, challenge_id: &ChallengeId) -> Result<(), LichessError> {
        self.ok(challenge_action(challenge_id, "cancel")).await
    }

    /// `POST /api/challenge/{username}`: challenges a user; once accepted, the game is
    /// [`ChallengeId::game_id`].
    pub async fn create_challenge(
        &self,
        username: &str,
        request: &ChallengeRequest,
    ) -> Result<ChallengeJson, LichessError> {
        let req = Req::new(Method::POST, &["api", "challenge", username])
            .form(request.form())
            .pacing(Pacing::Turn);
        let label = req.label();
        let (value, _): (serde_json::Value, _) = self.json(req).await?;
        // Older Lichess versions wrapped the challenge in `{"challenge": ...}`.
        let value = match value.get("challenge") {
            Some(inner) if inner.is_object() => inner.clone(),
            _ => value,
        };
        serde_json::from_value(value).map_err(|e| LichessError::Decode {
            endpoint: label,
            message: e.to_string(),
        })
    }

    /// `GET /game/export/{gameId}` as JSON (no `/api` prefix): one game, finished or not
    /// (an ongoing game's moves lag behind).
    pub async fn export_game(&self, game_id: &GameId) -> Result<GameJson, LichessError> {
        let (game, _) = self
            .json(Req::new(Method::GET, &["game", "export", game_id.as_str()]))
            .await?;
        Ok(game)
    }

    /// `GET /api/games/user/{username}` as NDJSON: finished games matching `query`, newest
    /// first. The whole download counts as one request (the gate is held throughout).
    pub async fn export_games(
        &self,
        username: &str,
        query: &ExportQuery,
    ) -> Result<Vec<GameJson>, LichessError> {
        let mut req = Req::new(Method::GET, &["api", "games", "user", username]).ndjson();
        req.query = query.pairs();
        let label = req.label();
        let _turn = self.turn(&req).await;
        let (response, across_processes) = self.send_with_retries(&req, false).await?;
        // The body may take minutes: the daemon's moves in another process go on beside it,
        // as they do beside its own streams.
        drop(across_processes);
        let mut stream: NdjsonStream<GameJson> = NdjsonStream::new(
            response.bytes_stream(),
            self.inner.config.stream_idle_timeout,
            label.clone(),
        );
        let mut games = Vec::new();
        loop {
            match stream.next().await {
                Ok(game) => games.push(game),
                Err(StreamEnd::Closed) => return Ok(games),
                Err(end) => {
                    return Err(LichessError::Unavailable {
                        endpoint: label,
                        attempts: 1,
                        last: format!("{end} after {} games", games.len()),
                    });
                }
            }
        }
    }

    // ------------------------------------------------------------ plumbing

    async fn game_action(&self, game_id: &GameId, tail: &[&str]) -> Result<(), LichessError> {
        let mut segments = vec!["api", "bot", "game", game_id.as_str()];
        segments.extend_from_slice(tail);
        self.ok(Req::new(Method::POST, &segments)).await
    }

    /// An ordinary call whose body is `{"ok": true}` (or anything 2xx).
    async fn ok(&self, req: Req) -> Result<(), LichessError> {
        let _turn = self.turn(&req).await;
        // The token's turn across processes is held until the body is read.
        let (response, _across_processes) = self.send_with_retries(&req, true).await?;
        // Drain the body so the connection can be reused.
        let _drained = response.bytes().await;
        Ok(())
    }

    /// An ordinary call returning JSON, with the response's headers.
    async fn json<T: DeserializeOwned>(
        &self,
        req: Req,
    ) -> Result<(T, reqwest::header::HeaderMap), LichessError> {
        let label = req.label();
        let _turn = self.turn(&req).await;
        let (response, _across_processes) = self.send_with_retries(&req, true).await?;
        let headers = response.headers().clone();
        let body = response
            .bytes()
            .await
            .map_err(|e| LichessError::Unavailable {
                endpoint: label.clone(),
                attempts: 1,
                last: e.to_string(),
            })?;
        let value = serde_json::from_slice(&body).map_err(|e| LichessError::Decode {
            endpoint: label,
            message: e.to_string(),
        })?;
        Ok((value, headers))
    }

    /// Opens a stream: the gate is held until the headers arrive, then released.
    async fn stream<T: DeserializeOwned>(&self, req: Req) -> Result<NdjsonStream<T>, LichessError> {
        let label = req.label();
        let response = {
            let _turn = self.turn(&req).await;
            self.send_with_retries(&req, false).await?.0
        };
        Ok(NdjsonStream::new(
            response.bytes_stream(),
            self.inner.config.stream_idle_timeout,
            label,
        ))
    }

    /// The account's turn for `req` in this process: a challenge call first waits for the
    /// shared pacer, and only then takes the account's one-request-at-a-time gate, so a queue
    /// of paced calls (a 429 pause) never holds up the moves of the account's running games.
    /// The turn across processes is taken per attempt (`send_with_retries`).
    async fn turn(&self, req: &Req) -> tokio::sync::MutexGuard<'_, ()> {
        req.pacing.wait(self.inner.config.pacer.as_ref()).await;
        self.inner.gate.lock().await
    }

    /// The token's turn across processes for one attempt, once no 429 pause (this process's
    /// or another's) runs: with shared limits, waits for the other processes' attempts.
    async fn turn_across_processes(&self) -> Option<shared_limits::TurnLock<'_>> {
        loop {
            self.wait_for_pause().await;
            let file = self.inner.turn_file.as_ref()?;
            let lock = shared_limits::take_turn(file).await;
            // Another process may have met a 429 while we waited for its attempt to end.
            if self.shared_pause_left().is_none() {
                return lock;
            }
        }
    }

    fn url(&self, req: &Req) -> Url {
        let mut url = self.inner.base.clone();
        {
            let mut path = url
                .path_segments_mut()
                .expect("validated base URLs can be a base");
            path.pop_if_empty();
            path.extend(&req.segments);
        }
        if !req.query.is_empty() {
            url.query_pairs_mut().extend_pairs(&req.query);
        }
        url
    }

    /// Sends `req` until it succeeds, waiting out 429 pauses and retrying 5xx and network
    /// errors with backoff. The caller holds the gate (taken with `turn`). `whole_timeout`
    /// bounds an ordinary call's whole response; a stream only bounds the wait for its headers.
    /// Each attempt takes the token's turn across processes and gives it back before any wait
    /// (a backoff, a pause): the response comes with the turn of its attempt, for the caller
    /// to hold while it reads the body.
    async fn send_with_retries(
        &self,
        req: &Req,
        whole_timeout: bool,
    ) -> Result<(reqwest::Response, Option<shared_limits::TurnLock<'_>>), LichessError> {
        let config = &self.inner.config;
        let label = req.label();
        let mut backoff = Backoff::new(config.backoff);
        let mut failures = 0u32;
        let mut rate_limited = 0u32;
        let mut attempt = 0u32;
        loop {
            // The first attempt waited for the pacer before the gate (`turn`).
            if attempt > 0 {
                req.pacing.wait(config.pacer.as_ref()).await;
            }
            if req.open_budget {
                self.wait_for_open_budget().await;
            }
            let across_processes = self.turn_across_processes().await;
            attempt += 1;
            let mut builder = self
                .inner
                .http
                .request(req.method.clone(), self.url(req))
                .header(reqwest::header::ACCEPT, req.accept);
            if !req.anonymous {
                builder = builder.bearer_auth(self.token().expose());
            }
            if let Some(form) = &req.form {
                builder = builder.form(form);
            }
            if let Some(text) = &req.text {
                builder = builder
                    .header(reqwest::header::CONTENT_TYPE, "text/plain")
                    .body(text.clone());
            }
            if whole_timeout {
                builder = builder.timeout(config.request_timeout);
            }
            let outcome = tokio::time::timeout(config.request_timeout, builder.send()).await;
            let failure = match outcome {
                Err(_) => format!(
                    "no response within {}",
                    show_duration(config.request_timeout)
                ),
                Ok(Err(e)) => describe_reqwest_error(&e),
                Ok(Ok(response)) => {
                    let status = response.status();
                    if status.is_success() {
                        return Ok((response, across_processes));
                    }
                    if status == StatusCode::TOO_MANY_REQUESTS {
                        let asked = RateLimitAnswer::read(response).await;
                        if asked.is_bot_game_limit() {
                            // A limit on games, not on requests: nothing to pause or retry.
                            return Err(LichessError::BotLimit {
                                endpoint: label,
                                message: asked.message,
                                wait: asked.wait.unwrap_or(config.rate_limit.pause),
                            });
                        }
                        rate_limited += 1;
                        let pause = asked
                            .wait
                            .map_or(config.rate_limit.pause, |w| w.max(config.rate_limit.pause));
                        tracing::warn!(
                            endpoint = %label,
                            "HTTP 429: pausing all calls of this account for {}",
                            show_duration(pause)
                        );
                        self.pause_for(pause);
                        // lila limits challenge creations per IP: every account's creations
                        // wait. Other limits are the token's: the other accounts play on.
                        if req.pacing == Pacing::Turn
                            && let Some(pacer) = &config.pacer
                        {
                            pacer.pause(pause);
                        }
                        if rate_limited >= config.rate_limit.max_attempts {
                            return Err(LichessError::RateLimited {
                                endpoint: label,
                                attempts: rate_limited,
                            });
                        }
                        continue;
                    }
                    if status.is_server_error() {
                        format!("HTTP {}", status.as_u16())
                    } else {
                        return Err(client_error(label, status, response).await);
                    }
                }
            };
            failures += 1;
            if failures >= config.backoff.max_attempts {
                return Err(LichessError::Unavailable {
                    endpoint: label,
                    attempts: failures,
                    last: failure,
                });
            }
            // The other processes' calls go on while this one waits.
            drop(across_processes);
            let delay = backoff.next_delay();
            tracing::warn!(endpoint = %label, "{failure}; retrying in {}", show_duration(delay));
            tokio::time::sleep(delay).await;
        }
    }

    /// Waits until the event stream may be opened without passing the token's open budget,
    /// and takes the open.
    async fn wait_for_open_budget(&self) {
        loop {
            let wait = self
                .inner
                .event_opens
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .try_take(Instant::now());
            let Some(wait) = wait else { return };
            let policy = self.inner.config.event_stream_opens;
            tracing::warn!(
                "the event stream was opened {} times in {}: waiting {} before opening it again \
                 (lila allows {} opens per {})",
                policy.max,
                show_duration(policy.window),
                show_duration(wait),
                super::stream_opens::LILA_OPENS,
                show_duration(super::stream_opens::LILA_WINDOW),
            );
            tokio::time::sleep(wait).await;
        }
    }

    /// How long the 429 pause another process recorded for the token still runs.
    fn shared_pause_left(&self) -> Option<Duration> {
        self.inner
            .config
            .shared_limits
            .as_ref()
            .and_then(SharedLimits::paused_until)
            .map(|until| until.duration_since(SystemTime::now()).unwrap_or_default())
    }

    async fn wait_for_pause(&self) {
        // A pause may grow while we wait (another call's 429, here or in another process):
        // wait until none is running.
        let mut said = false;
        loop {
            let other_process = self.shared_pause_left().map(|left| Instant::now() + left);
            let own = self.paused_until();
            match own.max(other_process) {
                Some(until) => {
                    // Our own pause is on file too: only a longer one is another's.
                    let anothers = other_process.is_some_and(|other| {
                        own.is_none_or(|own| other > own + Duration::from_secs(1))
                    });
                    if !said && anothers {
                        said = true;
                        tracing::info!(
                            "waiting {} for the HTTP 429 pause recorded for this token (by \
                             another process using it, or an earlier run)",
                            show_duration(until.saturating_duration_since(Instant::now()))
                        );
                    }
                    tokio::time::sleep_until(until).await;
                }
                None => return,
            }
        }
    }
}

/// What a 429 answer says about itself: how long to wait (the `Retry-After` header in
/// seconds, or lila's body `{"error": …, "ratelimit": {"key": …, "seconds": …}}`; the longer
/// of the two) and which limit it is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct RateLimitAnswer {
    wait: Option<Duration>,
    key: Option<String>,
    message: String,
}

impl RateLimitAnswer {
    async fn read(response: reqwest::Response) -> RateLimitAnswer {
        let header = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = response.text().await.unwrap_or_default();
        RateLimitAnswer::parse(header.as_deref(), &body)
    }

    /// lila's bot-game limit: by its key, or by its sentence where a lila of before the key
    /// (`BotLimit.given Writes[OpponentLimit]`) sent only `{"error": …}`.
    fn is_bot_game_limit(&self) -> bool {
        self.key.as_deref() == Some(BOT_LIMIT_KEY)
            || self.message.contains("games against other bots today")
    }

    fn parse(retry_after: Option<&str>, body: &str) -> RateLimitAnswer {
        let header = retry_after
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let value = serde_json::from_str::<serde_json::Value>(body).ok();
        let limit = value.as_ref().and_then(|v| v.get("ratelimit"));
        let seconds = limit
            .and_then(|l| l.get("seconds"))
            .and_then(serde_json::Value::as_u64)
            .map(Duration::from_secs);
        RateLimitAnswer {
            // Capped: a wait is added to the clock, and a day is longer than any lila window.
            wait: header.max(seconds).map(|w| w.min(MAX_ASKED_PAUSE)),
            key: limit
                .and_then(|l| l.get("key"))
                .and_then(serde_json::Value::as_str)
                .map(str::to_string),
            message: error_text(body),
        }
    }
}

/// `POST /api/challenge/{challengeId}/{action}`: an answer to a challenge, or its withdrawal.
fn challenge_action(challenge_id: &ChallengeId, action: &str) -> Req {
    Req::new(
        Method::POST,
        &["api", "challenge", challenge_id.as_str(), action],
    )
}

fn yes_no(accept: bool) -> &'static str {
    if accept { "yes" } else { "no" }
}

/// A reqwest error without its URL (which is harmless, but long) — and never a header.
fn describe_reqwest_error(e: &reqwest::Error) -> String {
    let kind = if e.is_connect() {
        "connection failed"
    } else if e.is_timeout() {
        "timed out"
    } else if e.is_body() || e.is_decode() {
        "response body failed"
    } else {
        "request failed"
    };
    let mut source = std::error::Error::source(e);
    let mut detail = String::new();
    while let Some(s) = source {
        detail = s.to_string();
        source = s.source();
    }
    if detail.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}: {detail}")
    }
}

/// Lichess errors are `{"error": "…"}`: that sentence, or a short prefix of any other body.
fn error_text(body: &str) -> String {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_string))
        .unwrap_or_else(|| body.trim().chars().take(MAX_ERROR_TEXT).collect())
}

/// The scopes of a comma-separated list (`X-OAuth-Scopes`, `/api/token/test`).
fn parse_scopes(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Turns a 4xx (other than 429) into a typed error, quoting the body's `error` text.
async fn client_error(
    label: String,
    status: StatusCode,
    response: reqwest::Response,
) -> LichessError {
    let body = response.text().await.unwrap_or_default();
    let message = error_text(&body);
    match status {
        StatusCode::UNAUTHORIZED => LichessError::TokenRejected { endpoint: label },
        StatusCode::FORBIDDEN => LichessError::Forbidden {
            endpoint: label,
            message,
        },
        StatusCode::NOT_FOUND => LichessError::NotFound {
            endpoint: label,
            message,
        },
        StatusCode::BAD_REQUEST => {
            // lila's answer to an accept when the challenger (a bot) is at its bot-game
            // limit: a 400 carrying the limit's key (`Challenge.eitherBotLimitResponse`).
            let limit = RateLimitAnswer::parse(None, &body);
            if limit.is_bot_game_limit() {
                LichessError::OpponentBotLimit {
                    endpoint: label,
                    message,
                    wait: limit.wait.unwrap_or_default(),
                }
            } else {
                LichessError::BadRequest {
                    endpoint: label,
                    message,
                }
            }
        }
        other => LichessError::Status {
            endpoint: label,
            status: other.as_u16(),
            message,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lichess_error_body_is_quoted_as_its_sentence() {
        assert_eq!(
            error_text(r#"{"error":"This account has already played games"}"#),
            "This account has already played games"
        );
        assert_eq!(error_text("  <html>oops"), "<html>oops");
    }

    #[test]
    fn a_429_says_how_long_to_wait_and_which_limit() {
        let plain = RateLimitAnswer::parse(None, "Too many requests");
        assert_eq!(plain.wait, None);
        assert_eq!(plain.key, None);
        let header = RateLimitAnswer::parse(Some(" 120 "), "");
        assert_eq!(header.wait, Some(Duration::from_secs(120)));
        let body = r#"{"error":"You played 100 games against other bots today, please wait before challenging another bot.","ratelimit":{"key":"bot.vsBot.day","seconds":3600}}"#;
        let bot = RateLimitAnswer::parse(Some("90"), body);
        assert_eq!(bot.wait, Some(Duration::from_secs(3600)), "the longer wait");
        assert_eq!(bot.key.as_deref(), Some(BOT_LIMIT_KEY));
        assert!(
            bot.message.starts_with("You played 100 games"),
            "{}",
            bot.message
        );
        assert!(bot.is_bot_game_limit());
        let keyless = RateLimitAnswer::parse(
            None,
            r#"{"error":"Bob played 100 games against other bots today, please wait until 2026-12-03T00:00:00Z to challenge them."}"#,
        );
        assert!(keyless.is_bot_game_limit());
        assert!(!plain.is_bot_game_limit());
        // An absurd wait is a day at most (it is added to the clock: no overflow).
        let huge = RateLimitAnswer::parse(Some("18446744073709551615"), body);
        assert_eq!(huge.wait, Some(MAX_ASKED_PAUSE));
        // Nonsense is no wait, and never a panic.
        let junk = RateLimitAnswer::parse(Some("soon"), r#"{"ratelimit":{"seconds":-5}}"#);
        assert_eq!(junk.wait, None);
    }

    #[test]
    fn scope_lists_are_split_and_trimmed() {
        assert_eq!(
            parse_scopes("bot:play, challenge:read,board:play"),
            vec!["bot:play", "challenge:read", "board:play"]
        );
        assert!(parse_scopes("").is_empty());
    }

    #[test]
    fn base_url_rules() {
        assert!(validate_base_url("https://lichess.org").is_ok());
        assert!(validate_base_url("http://127.0.0.1:8080").is_ok());
        assert!(validate_base_url("http://localhost:1").is_ok());
        assert!(validate_base_url("http://[::1]:1").is_ok());
        let err = validate_base_url("http://lichess.org").unwrap_err();
        assert!(err.to_string().contains("loopback"), "{err}");
        assert!(validate_base_url("ftp://127.0.0.1").is_err());
        assert!(validate_base_url("https://user:pw@lichess.org").is_err());
    }
}
