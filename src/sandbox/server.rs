//! The sandbox's HTTP front: axum routes for the bot API subset (plus the board API for
//! human accounts, so tests can script both sides), bearer-token authentication, and the
//! HTTP fault layer (forced 429/5xx answers and delays).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;

use super::streams::ndjson_response;
use super::world::{Action, Api, ApiError, ChallengeSpec, ServedFault, World};
use crate::lichess::types::{ChallengeColor, ChatRoom, DeclineReason, ErrorBody, OkBody};
use crate::lichess::{ChallengeId, GameId, TimeControl};

pub type Shared = Arc<Mutex<World>>;

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = match &self {
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
        };
        error_answer(status, &self.to_string())
    }
}

/// Lichess's answer to a refused request: `{"error": …}`.
fn error_answer(status: StatusCode, text: &str) -> Response {
    let body = ErrorBody {
        error: text.to_string(),
    };
    (status, axum::Json(body)).into_response()
}

/// lila's body of a rate limit: the error, and the limit's key with the seconds to wait.
fn limit_body(text: &str, key: &str, seconds: u64) -> axum::Json<serde_json::Value> {
    axum::Json(json!({
        "error": text,
        "ratelimit": { "key": key, "seconds": seconds },
    }))
}

fn ok() -> Response {
    axum::Json(OkBody { ok: true }).into_response()
}

/// The answer of an action with no value: `{"ok":true}`, or the error as Lichess gives it.
fn done(result: Result<(), ApiError>) -> Response {
    result.map_or_else(IntoResponse::into_response, |()| ok())
}

/// The token of a request's `Authorization: Bearer …` header, as Lichess reads it.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::trim)
}

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, World> {
    shared.lock().expect("sandbox world lock")
}

/// The account id of the request's token.
fn auth(shared: &Shared, headers: &HeaderMap) -> Result<String, ApiError> {
    let token = bearer(headers).ok_or(ApiError::Unauthorized)?;
    lock(shared).authenticate(token)
}

/// Runs `f` for the account of the request's token with the world locked: the body of every
/// route that needs a token, refused (401) without a valid one.
fn as_account<T>(
    shared: &Shared,
    headers: &HeaderMap,
    f: impl FnOnce(&str, &mut World) -> Result<T, ApiError>,
) -> Result<T, ApiError> {
    let account = auth(shared, headers)?;
    f(&account, &mut lock(shared))
}

/// Parses an `application/x-www-form-urlencoded` body (empty is fine).
fn parse_form(body: &[u8]) -> HashMap<String, String> {
    let text = String::from_utf8_lossy(body);
    let Ok(url) = reqwest::Url::parse(&format!("http://form.invalid/?{text}")) else {
        return HashMap::new();
    };
    url.query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// The offers a player answers yes or no.
#[derive(Clone, Copy)]
enum Answer {
    Draw,
    Takeback,
}

impl Answer {
    fn action(self, yes: bool) -> Action {
        match self {
            Answer::Draw => Action::Draw(yes),
            Answer::Takeback => Action::Takeback(yes),
        }
    }
}

fn yes(text: &str) -> Result<bool, ApiError> {
    match text {
        "yes" | "true" => Ok(true),
        "no" | "false" => Ok(false),
        other => Err(ApiError::BadRequest(format!("Invalid value {other}"))),
    }
}

/// Builds the router over the shared world.
pub fn router(shared: Shared) -> Router {
    let mut router = Router::new()
        .route("/api/account", get(account))
        .route("/api/bot/account/upgrade", post(upgrade))
        .route("/api/user/{username}", get(user))
        .route("/api/stream/event", get(event_stream))
        .route("/api/challenge", get(list_challenges))
        .route("/api/challenge/{username}", post(create_challenge))
        .route("/api/challenge/{id}/accept", post(accept))
        .route("/api/challenge/{id}/decline", post(decline))
        .route("/api/challenge/{id}/cancel", post(cancel))
        .route("/api/games/user/{username}", get(export_user_games))
        .route("/game/export/{id}", get(export_game));
    for (prefix, api) in [("bot", Api::Bot), ("board", Api::Board)] {
        let base = format!("/api/{prefix}/game");
        router =
            router
                .route(
                    &format!("{base}/stream/{{id}}"),
                    get(move |s: State<Shared>, p: Path<GameId>, h: HeaderMap| {
                        game_stream(api, s, p, h)
                    }),
                )
                .route(
                    &format!("{base}/{{id}}/move/{{uci}}"),
                    post(
                        move |s: State<Shared>,
                              Path((id, uci)): Path<(GameId, String)>,
                              q: Query<HashMap<String, String>>,
                              h: HeaderMap| async move {
                            let offering_draw = q.get("offeringDraw").is_some_and(|v| v == "true");
                            act(api, s, id, h, Action::Move { uci, offering_draw })
                        },
                    ),
                )
                .route(
                    &format!("{base}/{{id}}/chat"),
                    post(
                        move |s: State<Shared>,
                              Path(id): Path<GameId>,
                              h: HeaderMap,
                              body: Bytes| async move {
                            let form = parse_form(&body);
                            let room = match form.get("room").map(String::as_str) {
                                Some("player") => ChatRoom::Player,
                                Some("spectator") => ChatRoom::Spectator,
                                _ => {
                                    return ApiError::BadRequest(
                                        "room: required (player|spectator)".into(),
                                    )
                                    .into_response();
                                }
                            };
                            let Some(text) = form.get("text").cloned() else {
                                return ApiError::BadRequest("text: required".into())
                                    .into_response();
                            };
                            act(api, s, id, h, Action::Chat { room, text })
                        },
                    ),
                );
        // The game actions without a value, and the offers answered yes or no.
        for (name, action) in [
            ("abort", Action::Abort),
            ("resign", Action::Resign),
            ("claim-victory", Action::ClaimVictory),
            ("claim-draw", Action::ClaimDraw),
        ] {
            router = router.route(
                &format!("{base}/{{id}}/{name}"),
                post(
                    move |s: State<Shared>, Path(id): Path<GameId>, h: HeaderMap| async move {
                        act(api, s, id, h, action)
                    },
                ),
            );
        }
        for (name, answer) in [("draw", Answer::Draw), ("takeback", Answer::Takeback)] {
            router = router.route(
                &format!("{base}/{{id}}/{name}/{{accept}}"),
                post(
                    move |s: State<Shared>,
                          Path((id, accept)): Path<(GameId, String)>,
                          h: HeaderMap| async move {
                        match yes(&accept) {
                            Ok(y) => act(api, s, id, h, answer.action(y)),
                            Err(e) => e.into_response(),
                        }
                    },
                ),
            );
        }
    }
    router
        .layer(middleware::from_fn_with_state(shared.clone(), fault_layer))
        .with_state(shared)
}

/// Counts an ordinary request as in flight until dropped (also when the client hangs up).
struct InFlight {
    shared: Shared,
    account: String,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut world = lock(&self.shared);
        if let Some(stats) = world.requests.get_mut(&self.account) {
            stats.in_flight = stats.in_flight.saturating_sub(1);
        }
    }
}

/// Request accounting, then the forced failures and delays armed through the control API.
async fn fault_layer(State(shared): State<Shared>, request: Request, next: Next) -> Response {
    let is_stream = request.uri().path().contains("/stream/");
    let armed = {
        let mut world = lock(&shared);
        if let Some(status) = world.outage {
            drop(world);
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
            return (status, "Lichess is down for maintenance").into_response();
        }
        let account = bearer(request.headers()).and_then(|t| world.authenticate(t).ok());
        if let Some(account) = &account {
            world.log_request(
                tokio::time::Instant::now(),
                account.clone(),
                request.uri().path().to_string(),
            );
            if let Some(agent) = request
                .headers()
                .get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
            {
                world.user_agents.insert(account.clone(), agent.to_string());
            }
            let path = request.uri().path();
            if request.method() == axum::http::Method::POST && path.starts_with("/api/challenge/") {
                world
                    .challenge_calls
                    .push((tokio::time::Instant::now(), account.clone()));
            }
        }
        account.map(|account| {
            let now = tokio::time::Instant::now();
            let (fail, delay, retry_after) = match world.faults.get_mut(&account) {
                None => (None, Duration::ZERO, None),
                Some(f) => {
                    let fail = if f.fail_next > 0 {
                        f.fail_next -= 1;
                        Some(f.fail_status)
                    } else if f.fail_until.is_some_and(|t| now < t)
                        || (request.uri().path() == "/api/stream/event"
                            && f.fail_event_stream_until.is_some_and(|t| now < t))
                    {
                        Some(f.fail_status)
                    } else {
                        None
                    };
                    let delay = match f.delay_until {
                        Some(t) if now >= t => Duration::ZERO,
                        _ => f.delay,
                    };
                    (fail, delay, f.retry_after)
                }
            };
            if let Some(status) = fail {
                world.served_faults.push(ServedFault {
                    at: now,
                    account: account.clone(),
                    status,
                    path: request.uri().path().to_string(),
                });
            }
            let stats = world.requests.entry(account.clone()).or_default();
            stats.total += 1;
            stats.faulted += u64::from(fail.is_some());
            let guard = (!is_stream).then(|| {
                stats.in_flight += 1;
                stats.max_in_flight = stats.max_in_flight.max(stats.in_flight);
                InFlight {
                    shared: shared.clone(),
                    account,
                }
            });
            (fail, delay, retry_after, guard)
        })
    };
    let Some((fail, delay, retry_after, _in_flight)) = armed else {
        return next.run(request).await;
    };
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    if let Some(status) = fail {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        if status == StatusCode::TOO_MANY_REQUESTS
            && let Some(wait) = retry_after
        {
            // lila's shape of a limit that asks for a longer wait.
            let body = limit_body(
                "Too many requests. Try again later.",
                "api.sandbox",
                wait.as_secs(),
            );
            return (
                status,
                [(header::RETRY_AFTER, wait.as_secs().to_string())],
                body,
            )
                .into_response();
        }
        let text = if status == StatusCode::TOO_MANY_REQUESTS {
            "Too many requests. Try again later."
        } else {
            "Injected failure"
        };
        return error_answer(status, text);
    }
    next.run(request).await
}

fn act(
    api: Api,
    State(shared): State<Shared>,
    id: GameId,
    headers: HeaderMap,
    action: Action,
) -> Response {
    done(as_account(&shared, &headers, |account, world| {
        world.check_api(account, api)?;
        world.game_action(account, &id, action)
    }))
}

async fn account(State(shared): State<Shared>, headers: HeaderMap) -> Response {
    as_account(&shared, &headers, |id, world| {
        let account = world.account(id).ok_or(ApiError::Unauthorized)?;
        let body = axum::Json(account.user_json(&world.base_url));
        // Like Lichess: the token's scopes ride along as a header.
        Ok(match &account.scopes {
            Some(scopes) => ([("x-oauth-scopes", scopes.join(", "))], body).into_response(),
            None => body.into_response(),
        })
    })
    .into_response()
}

async fn upgrade(State(shared): State<Shared>, headers: HeaderMap) -> Response {
    done(as_account(&shared, &headers, |id, world| world.upgrade(id)))
}

/// Public data; a request that carries a refused token is refused (401), as on Lichess, even
/// though the endpoint needs none.
async fn user(
    State(shared): State<Shared>,
    Path(username): Path<String>,
    headers: HeaderMap,
) -> Response {
    if bearer(&headers).is_some()
        && let Err(e) = auth(&shared, &headers)
    {
        return e.into_response();
    }
    let world = lock(&shared);
    match world.account(&username) {
        Some(account) => axum::Json(account.user_json(&world.base_url)).into_response(),
        None => ApiError::NotFound("Not found.".into()).into_response(),
    }
}

async fn event_stream(State(shared): State<Shared>, headers: HeaderMap) -> Response {
    let result = as_account(&shared, &headers, |id, world| {
        let keepalive = world.config.keepalive_interval;
        Ok((world.open_event_stream(id), keepalive))
    });
    match result {
        Ok((reader, keepalive)) => ndjson_response(reader, keepalive),
        Err(e) => e.into_response(),
    }
}

async fn game_stream(
    api: Api,
    State(shared): State<Shared>,
    Path(id): Path<GameId>,
    headers: HeaderMap,
) -> Response {
    let result = as_account(&shared, &headers, |account, world| {
        world.check_api(account, api)?;
        if let Some(&status) = world.refused_game_streams.get(&id) {
            return Ok(Err(status));
        }
        let keepalive = world.config.keepalive_interval;
        Ok(Ok((world.open_game_stream(account, &id)?, keepalive)))
    });
    match result {
        Ok(Ok((reader, keepalive))) => ndjson_response(reader, keepalive),
        Ok(Err(status)) => error_answer(
            StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST),
            "This game cannot be played with the Bot API.",
        ),
        Err(e) => e.into_response(),
    }
}

async fn list_challenges(State(shared): State<Shared>, headers: HeaderMap) -> Response {
    as_account(&shared, &headers, |id, world| {
        let mut incoming = Vec::new();
        let mut outgoing = Vec::new();
        for entry in world.challenges.values() {
            let mut c = entry.json.clone();
            if c.dest_user.as_ref().is_some_and(|u| u.id == id) {
                c.direction = Some("in".into());
                incoming.push(c);
            } else if c.challenger.id == id {
                c.direction = Some("out".into());
                outgoing.push(c);
            }
        }
        Ok(axum::Json(json!({ "in": incoming, "out": outgoing })))
    })
    .into_response()
}

async fn create_challenge(
    State(shared): State<Shared>,
    Path(username): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    as_account(&shared, &headers, |id, world| {
        let spec = challenge_spec(&parse_form(&body))?;
        world.create_challenge(id, &username, &spec)
    })
    .map(axum::Json)
    .into_response()
}

fn challenge_spec(form: &HashMap<String, String>) -> Result<ChallengeSpec, ApiError> {
    let number = |key: &str| -> Result<Option<u32>, ApiError> {
        form.get(key)
            .map(|v| {
                v.parse()
                    .map_err(|_| ApiError::BadRequest(format!("{key}: not a number")))
            })
            .transpose()
    };
    let time_control = match (number("clock.limit")?, number("clock.increment")?) {
        (Some(limit), Some(increment)) => TimeControl::clock(limit, increment),
        (None, None) => match number("days")? {
            Some(days) => TimeControl::Correspondence {
                days_per_turn: Some(days),
            },
            None => TimeControl::Unlimited,
        },
        _ => {
            return Err(ApiError::BadRequest(
                "clock.limit and clock.increment go together".into(),
            ));
        }
    };
    let color = match form.get("color").map(String::as_str) {
        None | Some("random") => ChallengeColor::Random,
        Some("white") => ChallengeColor::White,
        Some("black") => ChallengeColor::Black,
        Some(other) => return Err(ApiError::BadRequest(format!("color: invalid {other}"))),
    };
    Ok(ChallengeSpec {
        rated: form.get("rated").is_some_and(|v| v == "true"),
        time_control,
        color,
        variant: form
            .get("variant")
            .cloned()
            .unwrap_or_else(|| "standard".into()),
        fen: form.get("fen").cloned().filter(|f| !f.is_empty()),
    })
}

async fn accept(
    State(shared): State<Shared>,
    Path(id): Path<ChallengeId>,
    headers: HeaderMap,
) -> Response {
    let result = as_account(&shared, &headers, |account, world| {
        if let Some(seconds) = world.bot_limit_left(account, &id) {
            return Ok(Err(seconds));
        }
        if let Some((seconds, challenger)) = world.challenger_bot_limit_left(account, &id) {
            return Ok(Ok(Err((seconds, challenger))));
        }
        world.accept_challenge(account, &id).map(|_| Ok(Ok(())))
    });
    match result {
        Ok(Ok(Ok(()))) => ok(),
        // lila's answer when the challenging bot reached its bot-game limit
        // (`Challenge.eitherBotLimitResponse`: a 400, not a 429).
        Ok(Ok(Err((seconds, challenger)))) => (
            StatusCode::BAD_REQUEST,
            limit_body(
                &format!(
                    "{challenger} played 100 games against other bots today, please wait \
                     until tomorrow to challenge them."
                ),
                "bot.vsBot.day",
                seconds,
            ),
        )
            .into_response(),
        // lila's answer when the accepting bot reached its bot-game limit.
        Ok(Err(seconds)) => (
            StatusCode::TOO_MANY_REQUESTS,
            limit_body(
                "You played 100 games against other bots today, please wait before \
                 challenging another bot.",
                "bot.vsBot.day",
                seconds,
            ),
        )
            .into_response(),
        Err(e) => e.into_response(),
    }
}

async fn decline(
    State(shared): State<Shared>,
    Path(id): Path<ChallengeId>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let reason = match parse_form(&body).get("reason") {
        None => Ok(DeclineReason::Generic),
        Some(r) => r
            .parse()
            .map_err(|e: crate::lichess::types::UnknownDeclineReason| {
                ApiError::BadRequest(e.to_string())
            }),
    };
    done(as_account(&shared, &headers, |account, world| {
        world.decline_challenge(account, &id, reason?)
    }))
}

async fn cancel(
    State(shared): State<Shared>,
    Path(id): Path<ChallengeId>,
    headers: HeaderMap,
) -> Response {
    done(as_account(&shared, &headers, |account, world| {
        world.cancel_challenge(Some(account), &id)
    }))
}

async fn export_user_games(
    State(shared): State<Shared>,
    Path(username): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let world = lock(&shared);
    let Some(account) = world.account(&username) else {
        return ApiError::NotFound("Not found.".into()).into_response();
    };
    let number = |key: &str| query.get(key).and_then(|v| v.parse::<i64>().ok());
    let (since, until, max) = (number("since"), number("until"), number("max"));
    let perfs: Vec<&str> = query
        .get("perfType")
        .map(|p| p.split(',').collect())
        .unwrap_or_default();
    let rated = query.get("rated").map(|v| v == "true");
    let vs = query.get("vs").map(|v| v.to_ascii_lowercase());
    let mut games: Vec<_> = world
        .games
        .keys()
        .filter_map(|id| world.game_json(id))
        .filter(|g| !g.status.is_ongoing())
        .filter(|g| g.color_of(&account.id).is_some())
        .filter(|g| since.is_none_or(|s| g.created_at >= s))
        .filter(|g| until.is_none_or(|u| g.created_at <= u))
        .filter(|g| perfs.is_empty() || perfs.contains(&g.perf.key()))
        .filter(|g| rated.is_none_or(|r| g.rated == r))
        .filter(|g| {
            vs.as_ref().is_none_or(|v| {
                g.color_of(v)
                    .is_some_and(|c| g.color_of(&account.id) == Some(c.other()))
            })
        })
        .collect();
    games.sort_by_key(|g| std::cmp::Reverse(g.created_at));
    if let Some(max) = max {
        games.truncate(max.max(0) as usize);
    }
    let mut body = String::new();
    for g in &games {
        body.push_str(&serde_json::to_string(g).expect("wire types serialize"));
        body.push('\n');
    }
    ([(header::CONTENT_TYPE, "application/x-ndjson")], body).into_response()
}

/// `GET /game/export/{id}`: PGN by default, `GameJson` with `Accept: application/json`.
async fn export_game(
    State(shared): State<Shared>,
    Path(id): Path<GameId>,
    headers: HeaderMap,
) -> Response {
    let json = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/json"));
    let world = lock(&shared);
    let not_found = || ApiError::NotFound("Not found.".into()).into_response();
    if json {
        world
            .game_json(&id)
            .map_or_else(not_found, |g| axum::Json(g).into_response())
    } else {
        world.game_pgn(&id).map_or_else(not_found, |pgn| {
            ([(header::CONTENT_TYPE, "application/x-chess-pgn")], pgn).into_response()
        })
    }
}
