//! The Lichess client: the spec's examples parse, unknown types and fields are tolerated,
//! malformed lines are skipped, silent streams time out, 429 pauses the client, 5xx is
//! retried, one request is in flight at a time, bad tokens and insecure URLs are refused
//! with clear errors that never contain the token. The sandbox plays the server.

use std::time::{Duration, Instant};

use bytes::Bytes;
use ladder::lichess::{
    BackoffPolicy, ChallengeJson, ChallengeStatus, Client, ClientConfig, Color, DeclineReason,
    Event, GameEvent, GameJson, GameStatus, LichessError, NdjsonStream, RateLimitPolicy,
    SharedLimits, StreamEnd, TimeControl, Token, UserExtended,
};
use ladder::sandbox::{ChallengeSpec, ChallengerConfig, Sandbox, SandboxConfig};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/lichess");
const BOT: &str = "LadderBot";
const WAIT: Duration = Duration::from_secs(10);

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{FIXTURES}/{name}")).expect("fixture exists")
}

/// An NDJSON stream over fixed text, split into awkward chunks like a network would.
fn stream_of<T: serde::de::DeserializeOwned>(text: &str) -> NdjsonStream<T> {
    let chunks: Vec<Result<Bytes, std::io::Error>> = text
        .as_bytes()
        .chunks(37)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    NdjsonStream::new(
        futures_util::stream::iter(chunks),
        Duration::from_secs(5),
        "fixture",
    )
}

async fn collect<T: serde::de::DeserializeOwned>(text: &str) -> Vec<T> {
    let mut stream = stream_of(text);
    let mut out = Vec::new();
    loop {
        match stream.next().await {
            Ok(event) => out.push(event),
            Err(end) => {
                assert_eq!(end, StreamEnd::Closed);
                return out;
            }
        }
    }
}

#[tokio::test]
async fn every_event_stream_example_parses() {
    let events: Vec<Event> = collect(&fixture("event-stream.ndjson")).await;
    assert_eq!(events.len(), 7, "one event per example");
    let Event::GameStart { game } = &events[0] else {
        panic!("gameStart: {:?}", events[0]);
    };
    assert_eq!(game.full_id, "0FgNPGRzhDaW");
    assert_eq!(game.game_id, "0FgNPGRz");
    assert_eq!(game.color, Some(Color::White));
    assert_eq!(game.is_my_turn, Some(true));
    assert_eq!(game.seconds_left, Some(300));
    assert_eq!(game.opponent.as_ref().unwrap().rating, Some(776));
    let Event::GameStart { game: ai } = &events[1] else {
        panic!("gameStart vs AI");
    };
    let opponent = ai.opponent.as_ref().unwrap();
    assert_eq!((opponent.id.as_deref(), opponent.ai), (None, Some(1)));
    let Event::GameFinish { game } = &events[2] else {
        panic!("gameFinish");
    };
    assert_eq!(game.status.unwrap().name, GameStatus::Resign);
    assert_eq!(game.status.unwrap().id, 31);
    assert_eq!(game.winner, Some(Color::Black));
    assert_eq!(game.rating_diff, Some(-9));
    assert!(
        matches!(&events[3], Event::GameFinish { game } if game.status.unwrap().name == GameStatus::Aborted)
    );
    let Event::Challenge { challenge, compat } = &events[4] else {
        panic!("challenge");
    };
    assert_eq!(challenge.status, ChallengeStatus::Created);
    assert_eq!(challenge.time_control, TimeControl::Unlimited);
    assert!(challenge.dest_user.as_ref().unwrap().provisional);
    assert_eq!(compat.map(|c| c.board), Some(true));
    let Event::ChallengeCanceled { challenge } = &events[5] else {
        panic!("challengeCanceled");
    };
    assert_eq!(challenge.challenger.title.as_deref(), Some("WNM"));
    let Event::ChallengeDeclined { challenge } = &events[6] else {
        panic!("challengeDeclined");
    };
    assert_eq!(challenge.decline_reason(), Some(DeclineReason::Generic));
}

#[tokio::test]
async fn every_game_stream_example_parses() {
    let events: Vec<GameEvent> = collect(&fixture("game-stream.ndjson")).await;
    assert_eq!(events.len(), 4);
    let GameEvent::GameFull(full) = &events[0] else {
        panic!("gameFull");
    };
    assert_eq!(full.id, "BEOucQJo");
    assert_eq!(full.clock.unwrap().initial, 900_000);
    assert_eq!(full.white.title, None);
    assert_eq!(full.color_of("mary"), Some(Color::Black));
    assert_eq!(full.state.move_list(), vec!["d2d3"]);
    let GameEvent::GameState(state) = &events[1] else {
        panic!("gameState");
    };
    assert_eq!(state.move_list().len(), 13);
    assert_eq!(state.time_of(Color::Black), 8_395_220);
    assert_eq!(state.increment_of(Color::White), 10_000);
    assert!(!state.draw_offer_of(Color::White));
    assert_eq!(state.status, GameStatus::Started);
    assert!(matches!(&events[2], GameEvent::ChatLine(line) if line.text == "Good luck, have fun"));
    assert!(
        matches!(&events[3], GameEvent::OpponentGone(g) if g.gone && g.claim_win_in_seconds == Some(8))
    );
}

#[tokio::test]
async fn payload_examples_parse() {
    let games: Vec<GameJson> = collect(&fixture("games-user.ndjson")).await;
    assert_eq!(games.len(), 2);
    assert_eq!(
        games[0].clock.unwrap().initial,
        60,
        "export clocks are in seconds"
    );
    assert_eq!(games[0].color_of("lance5500"), Some(Color::White));
    assert_eq!(games[0].winner, Some(Color::White));
    assert_eq!(games[1].status, GameStatus::Draw);
    assert_eq!(games[1].players.black.rating_diff, Some(-4));

    let user: UserExtended = serde_json::from_str(&fixture("user.json")).unwrap();
    let bullet = user.perf("bullet").unwrap();
    assert_eq!(
        (bullet.rating, bullet.rd, bullet.prov),
        (Some(1076), Some(122), true)
    );
    assert!(!user.perf("blitz").unwrap().prov);
    assert!(!user.is_bot());
    let account: UserExtended = serde_json::from_str(&fixture("account.json")).unwrap();
    assert!(!account.id.is_empty());

    let created: ChallengeJson = serde_json::from_str(&fixture("challenge-create.json")).unwrap();
    assert_eq!(created.direction.as_deref(), Some("out"));
    let example: ChallengeJson = serde_json::from_str(&fixture("challenge-json.json")).unwrap();
    assert!(example.challenger.is_bot());
    assert!(matches!(
        example.time_control,
        TimeControl::Clock {
            limit: 600,
            increment: 0,
            ..
        }
    ));
}

#[tokio::test]
async fn unknown_types_and_fields_are_tolerated_and_bad_lines_skipped() {
    let text = concat!(
        "{\"type\":\"somethingNew\",\"payload\":[1,2]}\n",
        "\n",
        "{not json at all\n",
        "{\"type\":\"gameStart\",\"game\":{\"fullId\":\"abcd1234wxyz\",\"gameId\":\"abcd1234\",\"brandNew\":{\"x\":1}},\"extra\":true}\n",
        "{\"type\":\"gameStart\",\"game\":{\"fullId\":\"missing gameId\"}}\n",
        "{\"type\":\"challengeCanceled\",\"challenge\":{\"id\":\"c1\",\"url\":\"u\",\"status\":\"someday\",\"challenger\":{\"id\":\"a\",\"name\":\"A\"},\"destUser\":null,\"variant\":{\"key\":\"standard\",\"name\":\"Standard\"},\"rated\":false,\"speed\":\"blitz\",\"timeControl\":{\"type\":\"clock\",\"limit\":300,\"increment\":3},\"color\":\"random\",\"perf\":{\"icon\":\"\",\"name\":\"Blitz\"}}}",
    );
    let events: Vec<Event> = collect(text).await;
    assert_eq!(events.len(), 3, "{events:?}");
    assert!(matches!(&events[0], Event::Unknown { kind, .. } if kind == "somethingNew"));
    assert!(matches!(&events[1], Event::GameStart { game } if game.game_id == "abcd1234"));
    let Event::ChallengeCanceled { challenge } = &events[2] else {
        panic!("the last line (without newline) still counts");
    };
    assert_eq!(challenge.status, ChallengeStatus::Unknown);
    assert!(challenge.dest_user.is_none());

    let game: Vec<GameEvent> = collect(
        "{\"type\":\"gameState\",\"moves\":\"\",\"wtime\":1,\"btime\":2,\"winc\":0,\"binc\":0,\"status\":\"brandNewStatus\",\"newField\":1}\n{\"type\":\"newKind\"}\n",
    )
    .await;
    assert!(
        matches!(&game[0], GameEvent::GameState(s) if s.status == GameStatus::Unknown && s.move_list().is_empty())
    );
    assert!(matches!(&game[1], GameEvent::Unknown { kind, .. } if kind == "newKind"));
}

// ------------------------------------------------------------------ against the sandbox

fn sandbox_config() -> SandboxConfig {
    let mut rita = ChallengerConfig::new("Rita");
    rita.interval = None;
    let mut config = SandboxConfig::with_bots(&[BOT]);
    config.challengers.push(rita);
    config.keepalive_interval = Duration::from_millis(100);
    config
}

fn fast_config(sandbox: &Sandbox) -> ClientConfig {
    let mut config = sandbox.client_config(BOT).unwrap();
    config.rate_limit = RateLimitPolicy {
        pause: Duration::from_millis(400),
        max_attempts: 3,
    };
    config.backoff = BackoffPolicy {
        base: Duration::from_millis(10),
        cap: Duration::from_millis(50),
        max_attempts: 4,
    };
    // Generous against a loaded CI machine: keep-alives come every 100 ms.
    config.stream_idle_timeout = Duration::from_secs(2);
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_live_line_is_skipped_and_duplicates_arrive() {
    let sandbox = Sandbox::start(sandbox_config()).await.unwrap();
    let client = Client::new(fast_config(&sandbox)).unwrap();
    let mut events = client.stream_events().await.unwrap();
    assert!(sandbox.inject_event_line(BOT, "{\"type\":\"gameStart\",\"game\":"));
    assert!(sandbox.inject_event_line(BOT, "{\"type\":\"tournamentInvite\",\"id\":\"x\"}"));
    let id = sandbox
        .challenge("Rita", BOT, &ChallengeSpec::clock(60, 0))
        .unwrap()
        .id;
    let first = events.next().await.unwrap();
    assert!(matches!(first, Event::Unknown { ref kind, .. } if kind == "tournamentInvite"));
    let second = events.next().await.unwrap();
    assert!(matches!(second, Event::Challenge { ref challenge, .. } if challenge.id == id));
    sandbox.resend_events(BOT);
    let duplicate = events.next().await.unwrap();
    assert_eq!(duplicate, second, "a re-sent event is identical");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_stream_hits_the_idle_timeout_and_reconnecting_works() {
    let sandbox = Sandbox::start(sandbox_config()).await.unwrap();
    let mut config = fast_config(&sandbox);
    config.stream_idle_timeout = Duration::from_millis(800);
    let client = Client::new(config).unwrap();
    let mut events = client.stream_events().await.unwrap();
    // Keep-alives (every 100 ms) keep a quiet stream open past the 800 ms idle timeout.
    let quiet = tokio::time::timeout(Duration::from_millis(1500), events.next()).await;
    assert!(
        quiet.is_err(),
        "no event and no timeout while keep-alives flow"
    );
    sandbox.silence(BOT, Duration::from_secs(30));
    let started = Instant::now();
    let end = tokio::time::timeout(WAIT, events.next()).await.unwrap();
    assert_eq!(end, Err(StreamEnd::IdleTimeout(Duration::from_millis(800))));
    assert!(started.elapsed() >= Duration::from_millis(700));
    // The stuck connection is abandoned; a new stream is healthy and resyncs.
    let id = sandbox
        .challenge("Rita", BOT, &ChallengeSpec::clock(60, 0))
        .unwrap()
        .id;
    let mut fresh = client.stream_events().await.unwrap();
    let event = tokio::time::timeout(WAIT, fresh.next())
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(event, Event::Challenge { ref challenge, .. } if challenge.id == id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_429_pauses_the_client_then_the_call_succeeds() {
    let sandbox = Sandbox::start(sandbox_config()).await.unwrap();
    let client = Client::new(fast_config(&sandbox)).unwrap();
    sandbox.fail_next(BOT, 1, 429);
    let started = Instant::now();
    let account = client.account().await.unwrap();
    assert_eq!(account.username, BOT);
    assert!(
        started.elapsed() >= Duration::from_millis(400),
        "the call waited out the pause: {:?}",
        started.elapsed()
    );
    // Persistent 429s end in a typed error once the attempts run out.
    sandbox.fail_next(BOT, 10, 429);
    let err = client.account().await.unwrap_err();
    assert!(
        matches!(err, LichessError::RateLimited { attempts: 3, .. }),
        "{err}"
    );
    assert!(err.is_transient());
}

/// Two clients of one token as two processes hold them (the daemon and `calibrate --fetch`):
/// each with its own gate and pause, sharing only the token's files. The first gives up at
/// its first 429 (so only the pause on file, not its held turn, can hold the second back).
fn two_processes(sandbox: &Sandbox, shared: Option<&std::path::Path>) -> (Client, Client) {
    let client = |max_attempts| {
        let mut config = fast_config(sandbox);
        config.rate_limit.max_attempts = max_attempts;
        config.shared_limits = shared.map(|dir| SharedLimits::new(dir, BOT));
        Client::new(config).unwrap()
    };
    (client(1), client(3))
}

/// After a 429 that asks for 2 s, the other process using the token sends nothing until the
/// 2 s are over; without the shared files it calls at once (the control).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_seen_by_one_process_pauses_the_other_process_of_the_token() {
    let sandbox = Sandbox::start(sandbox_config()).await.unwrap();
    let asked = Duration::from_secs(2);
    for shared in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let (daemon, fetch) = two_processes(&sandbox, shared.then_some(dir.path()));
        sandbox.rate_limit_next(BOT, 1, asked);
        let refused = daemon.account().await.unwrap_err();
        assert!(
            matches!(refused, LichessError::RateLimited { .. }),
            "{refused}"
        );
        let limited_at = sandbox
            .with_world(|w| w.served_faults.last().map(|f| f.at))
            .unwrap();
        let asked_at = tokio::time::Instant::now();
        fetch.account().await.unwrap();
        let fetch_reached = sandbox
            .requests_of(BOT)
            .into_iter()
            .map(|(at, _)| at)
            .filter(|&at| at >= asked_at)
            .min()
            .unwrap();
        let after = fetch_reached - limited_at;
        if shared {
            assert!(
                after >= asked,
                "the other process called {after:?} after the 429"
            );
        } else {
            assert!(
                after < asked,
                "control: unshared, it calls at once ({after:?})"
            );
        }
    }
}

/// Two processes of one token firing calls at once never have two in flight together.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_of_one_token_take_turns() {
    let sandbox = Sandbox::start(sandbox_config()).await.unwrap();
    sandbox.delay_responses(BOT, Duration::from_millis(20), None);
    let dir = tempfile::tempdir().unwrap();
    let (daemon, fetch) = two_processes(&sandbox, Some(dir.path()));
    let calls = |client: Client| async move {
        for _ in 0..8 {
            client.account().await.unwrap();
        }
    };
    let (a, b) = tokio::join!(tokio::spawn(calls(daemon)), tokio::spawn(calls(fetch)));
    a.unwrap();
    b.unwrap();
    let stats = sandbox.request_stats(BOT);
    assert_eq!(stats.max_in_flight, 1, "{stats:?}");
    assert!(stats.total >= 16, "{stats:?}");
    // The control: without the shared files the two overlap.
    let (daemon, fetch) = two_processes(&sandbox, None);
    let (a, b) = tokio::join!(tokio::spawn(calls(daemon)), tokio::spawn(calls(fetch)));
    a.unwrap();
    b.unwrap();
    assert_eq!(sandbox.request_stats(BOT).max_in_flight, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_are_retried_and_client_errors_are_typed() {
    let sandbox = Sandbox::start(sandbox_config()).await.unwrap();
    let client = Client::new(fast_config(&sandbox)).unwrap();
    sandbox.fail_next(BOT, 3, 502);
    assert_eq!(client.account().await.unwrap().username, BOT);
    sandbox.fail_for(BOT, Duration::from_secs(30), 503);
    let err = client.account().await.unwrap_err();
    assert!(
        matches!(err, LichessError::Unavailable { attempts: 4, ref last, .. } if last.contains("503")),
        "{err}"
    );
    sandbox.clear_faults(BOT);
    // A 400 carries the body's error text; no retry.
    let id = sandbox
        .challenge("Rita", BOT, &ChallengeSpec::clock(60, 0))
        .unwrap()
        .id;
    client.accept_challenge(&id).await.unwrap();
    let id = id.game_id();
    let err = client.make_move(&id, "e2e5", false).await;
    match sandbox.game(&id).unwrap().color_of(BOT) {
        Some(Color::White) => {
            let err = err.unwrap_err();
            assert!(
                matches!(err, LichessError::BadRequest { ref message, .. } if message.contains("e2e5")),
                "{err}"
            );
        }
        _ => assert!(matches!(err, Err(LichessError::BadRequest { .. }))),
    }
    let err = client
        .accept_challenge(&"nope".parse().unwrap())
        .await
        .unwrap_err();
    assert!(matches!(err, LichessError::NotFound { .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_ordinary_request_at_a_time_per_client() {
    let sandbox = Sandbox::start(sandbox_config()).await.unwrap();
    let client = Client::new(fast_config(&sandbox)).unwrap();
    sandbox.delay_responses(BOT, Duration::from_millis(200), None);
    let started = Instant::now();
    let (a, b, c) = tokio::join!(client.account(), client.account(), client.user("Rita"));
    assert!(a.is_ok() && b.is_ok() && c.is_ok());
    // Served one after the other: three delayed answers take three delays.
    assert!(
        started.elapsed() >= Duration::from_millis(600),
        "{:?}",
        started.elapsed()
    );
}

/// Creating challenges takes turns of the shared pacer (lila limits creations per IP), without
/// holding up the account's other calls; answers to challenges take no turn (lila limits none,
/// and a person's challenge expires in 20 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn challenge_creations_wait_for_the_pacer_answers_and_other_calls_do_not() {
    let sandbox = Sandbox::start(sandbox_config()).await.unwrap();
    let mut config = fast_config(&sandbox);
    config.pacer = Some(ladder::lichess::Pacer::new(ladder::lichess::PacingPolicy {
        interval: Duration::from_secs(3),
        burst: 1,
    }));
    let client = Client::new(config).unwrap();
    let started = Instant::now();
    let create = || {
        let client = client.clone();
        async move {
            // Whether the sandbox creates it or not, each creation takes a turn.
            let request = ladder::lichess::ChallengeRequest::clock(60, 0);
            let _created = client.create_challenge("nobody", &request).await;
            started.elapsed()
        }
    };
    let answers = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        for id in ["aaaaaaaa", "bbbbbbbb", "cccccccc"] {
            // Unknown challenges: an error comes back (404), at once.
            let id = ladder::lichess::ChallengeId::new(id);
            let _answer = client.decline_challenge(&id, DeclineReason::Generic).await;
        }
        started.elapsed()
    };
    let ordinary = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        client.account().await.unwrap();
        started.elapsed()
    };
    let (first, second, answered, other) = tokio::join!(create(), create(), answers, ordinary);
    // The second creation waits its turn of the shared pace...
    assert!(
        second.max(first) >= Duration::from_millis(2500),
        "{second:?} (first {first:?})"
    );
    // ...while three answers (paced, they would take 6 s more) and the account's own calls
    // (moves) go on.
    assert!(answered < Duration::from_millis(2000), "{answered:?}");
    assert!(other < Duration::from_millis(2000), "{other:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_token_and_insecure_urls_get_clear_errors_without_secrets() {
    let sandbox = Sandbox::start(sandbox_config()).await.unwrap();
    let secret = "lip_verySecretToken123";
    let token = Token::new(secret, "test").unwrap();
    let client = Client::new(ClientConfig::new(sandbox.base_url(), token.clone())).unwrap();
    assert!(!format!("{client:?}").contains(secret));
    let err = client.account().await.unwrap_err();
    assert!(matches!(err, LichessError::TokenRejected { .. }));
    let text = format!("{err} / {err:?}");
    assert!(text.contains("token rejected"), "{text}");
    assert!(!text.contains(secret), "{text}");
    let err = client.stream_events().await.unwrap_err();
    assert!(matches!(err, LichessError::TokenRejected { .. }));

    for url in [
        "http://lichess.org",
        "http://10.0.0.1:8080",
        "ftp://127.0.0.1",
    ] {
        let err = Client::new(ClientConfig::new(url, token.clone())).unwrap_err();
        assert!(
            matches!(err, LichessError::BadBaseUrl { .. }),
            "{url}: {err}"
        );
        assert!(!err.to_string().contains(secret));
    }
    assert!(Client::new(ClientConfig::new("https://lichess.org", token)).is_ok());
}
