//! The sandbox through real HTTP, driven by the real client: a simulated challenger plays a
//! full game against a scripted bot; clocks run and flag; the event stream re-sends its state
//! on reconnect and a second stream closes the first; non-bots are refused on bot endpoints.

use std::time::Duration;

use ladder::lichess::{
    ChallengeId, ChallengeRequest, Client, ClientConfig, Color, Event, ExportQuery, GameEvent,
    GameId, GameStatus, LichessError, NdjsonStream, Speed, StreamEnd,
};
use ladder::player::seat::{MoverStyle, PlayerKind};
use ladder::sandbox::{AccountConfig, ChallengeSpec, ChallengerConfig, Sandbox, SandboxConfig};

const BOT: &str = "LadderBot";
const RITA: &str = "Rita";
const WAIT: Duration = Duration::from_secs(10);

fn config() -> SandboxConfig {
    let mut rita = ChallengerConfig::new(RITA);
    rita.interval = None;
    rita.think_time = Duration::from_millis(1);
    rita.player = PlayerKind::Mover(MoverStyle::Random);
    rita.rating = 1234;
    let mut config = SandboxConfig::with_bots(&[BOT]);
    config.accounts.push(AccountConfig::human("Hugo"));
    config.challengers.push(rita);
    config.keepalive_interval = Duration::from_millis(100);
    config.seed = Some(7);
    config
}

async fn start() -> (Sandbox, Client) {
    let sandbox = Sandbox::start(config()).await.expect("sandbox starts");
    let client = sandbox.client(BOT).expect("bot client");
    (sandbox, client)
}

async fn next<T: serde::de::DeserializeOwned>(stream: &mut NdjsonStream<T>) -> T {
    tokio::time::timeout(WAIT, stream.next())
        .await
        .expect("an event in time")
        .expect("stream still open")
}

/// Reads events until one matches.
async fn next_matching<T: serde::de::DeserializeOwned + std::fmt::Debug>(
    stream: &mut NdjsonStream<T>,
    mut f: impl FnMut(&T) -> bool,
) -> T {
    loop {
        let event = next(stream).await;
        if f(&event) {
            return event;
        }
    }
}

fn rita_challenge(sandbox: &Sandbox, limit: u32, increment: u32) -> ChallengeId {
    let spec = ChallengeSpec::clock(limit, increment);
    sandbox.challenge(RITA, BOT, &spec).expect("challenge").id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn challenger_plays_a_full_game_against_a_scripted_bot() {
    let (sandbox, client) = start().await;
    let mut events = client.stream_events().await.unwrap();
    let challenge_id = rita_challenge(&sandbox, 600, 5);

    let Event::Challenge { challenge, .. } = next(&mut events).await else {
        panic!("expected a challenge first");
    };
    assert_eq!(challenge.id, challenge_id);
    assert_eq!(challenge.challenger.name, RITA);
    assert_eq!(challenge.challenger.rating, Some(1234));
    assert_eq!(challenge.direction.as_deref(), Some("in"));
    client.accept_challenge(&challenge_id).await.unwrap();

    let Event::GameStart { game } = next(&mut events).await else {
        panic!("expected gameStart after accepting");
    };
    assert_eq!(
        game.game_id,
        challenge_id.game_id(),
        "the game id is the challenge id"
    );
    let color = game.color.expect("gameStart has our color");

    let mut stream = client.stream_game(&game.game_id).await.unwrap();
    let GameEvent::GameFull(full) = next(&mut stream).await else {
        panic!("gameFull comes first");
    };
    assert_eq!(full.color_of("ladderbot"), Some(color));
    assert_eq!(
        full.clock.map(|c| (c.initial, c.increment)),
        Some((600_000, 5_000))
    );
    assert!(full.player(color).is_bot());

    // Play random legal moves until the game ends.
    let mut state = full.state.clone();
    let mut plies_seen = 0;
    loop {
        if !state.status.is_ongoing() {
            break;
        }
        let moves = state.move_list();
        plies_seen = plies_seen.max(moves.len());
        let game = ladder::engine::Game::from_uci_moves(None, &moves, false).unwrap();
        if Color::from(game.turn()) == color {
            let legal = game.legal_moves();
            let pick = legal[(moves.len() * 7919) % legal.len()];
            client
                .make_move(&full.id, &game.to_uci(pick), false)
                .await
                .unwrap();
        }
        match tokio::time::timeout(WAIT, stream.next())
            .await
            .expect("state in time")
        {
            Ok(GameEvent::GameState(s)) => state = s,
            Ok(_) => {}
            Err(end) => panic!("game stream ended early: {end}"),
        }
    }
    // The stream ends right after the final gameState.
    assert_eq!(
        tokio::time::timeout(WAIT, stream.next()).await.unwrap(),
        Err(StreamEnd::Closed)
    );
    assert!(
        matches!(
            state.status,
            GameStatus::Mate | GameStatus::Stalemate | GameStatus::Draw
        ),
        "random play ends by the rules, got {:?}",
        state.status
    );
    assert!(plies_seen > 2);

    let Event::GameFinish { game: finished } =
        next_matching(&mut events, |e| matches!(e, Event::GameFinish { .. })).await
    else {
        unreachable!()
    };
    assert_eq!(finished.game_id, full.id);
    assert_eq!(finished.status.map(|s| s.name), Some(state.status));
    assert_eq!(finished.winner, state.winner);

    let summary = sandbox.wait_finished(1, WAIT).await.unwrap();
    assert_eq!(summary[0].moves.join(" "), state.moves);

    // The finished game is exported with SAN moves and the right result.
    let exported = client
        .export_games(BOT, &ExportQuery::default())
        .await
        .unwrap();
    assert_eq!(exported.len(), 1);
    assert_eq!(exported[0].id, full.id);
    assert_eq!(exported[0].status, state.status);
    assert_eq!(exported[0].winner, state.winner);
    assert_eq!(exported[0].color_of(BOT), Some(color));
    let san_count = exported[0].moves.as_deref().unwrap().split(' ').count();
    assert_eq!(san_count, state.move_list().len());
}

/// A game Rita challenges the bot to at `limit`+`increment`, the bot white, accepted by the
/// bot; its game stream.
async fn accepted_as_white(
    sandbox: &Sandbox,
    client: &Client,
    limit: u32,
    increment: u32,
) -> (GameId, NdjsonStream<GameEvent>) {
    let id = sandbox
        .challenge(
            RITA,
            BOT,
            &ChallengeSpec {
                color: ladder::lichess::ChallengeColor::Black,
                ..ChallengeSpec::clock(limit, increment)
            },
        )
        .unwrap()
        .id;
    client.accept_challenge(&id).await.unwrap();
    let id = id.game_id();
    let stream = client.stream_game(&id).await.unwrap();
    (id, stream)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clocks_run_and_a_silent_bot_loses_on_time() {
    let (sandbox, client) = start().await;
    // 0+1: after both first moves the side to move has only what the increments gave it.
    let (id, mut stream) = accepted_as_white(&sandbox, &client, 0, 1).await;
    let GameEvent::GameFull(full) = next(&mut stream).await else {
        panic!("gameFull first");
    };
    assert_eq!(full.color_of(BOT), Some(Color::White));
    client.make_move(&id, "e2e4", false).await.unwrap();
    // Rita answers; then our clock runs and we never move again.
    let state = loop {
        match next(&mut stream).await {
            GameEvent::GameState(s) if !s.status.is_ongoing() => break s,
            _ => {}
        }
    };
    assert_eq!(state.status, GameStatus::Outoftime);
    assert_eq!(state.winner, Some(Color::Black));
    assert_eq!(state.wtime, 0);
    assert_eq!(
        tokio::time::timeout(WAIT, stream.next()).await.unwrap(),
        Err(StreamEnd::Closed)
    );

    // A longer game: the clock of the side to move decreases in real time.
    let (id, mut stream) = accepted_as_white(&sandbox, &client, 60, 0).await;
    next(&mut stream).await;
    client.make_move(&id, "e2e4", false).await.unwrap();
    sandbox
        .wait_until("Rita's reply", WAIT, |w| {
            (w.games[&id].game.moves.len() == 2).then_some(())
        })
        .await
        .unwrap();
    let before = sandbox.game(&id).unwrap().wtime;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = sandbox.game(&id).unwrap();
    assert!(before - after.wtime >= 250, "{before} -> {}", after.wtime);
    assert_eq!(after.btime, 60_000, "only the side to move loses time");
    client.resign(&id).await.unwrap();
    let game = sandbox.game(&id).unwrap();
    assert_eq!(game.status, GameStatus::Resign);
    assert_eq!(game.winner, Some(Color::Black));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_stream_resends_state_and_a_second_stream_closes_the_first() {
    let (sandbox, client) = start().await;
    let pending = rita_challenge(&sandbox, 300, 0);
    let playing = rita_challenge(&sandbox, 180, 2);
    client.accept_challenge(&playing).await.unwrap();
    let playing = playing.game_id();

    let mut first = client.stream_events().await.unwrap();
    let mut seen = vec![next(&mut first).await, next(&mut first).await];
    let mut second = client.stream_events().await.unwrap();
    // The first stream ends cleanly once the second opens.
    let end = loop {
        match tokio::time::timeout(WAIT, first.next()).await.unwrap() {
            Ok(event) => seen.push(event),
            Err(end) => break end,
        }
    };
    assert_eq!(end, StreamEnd::Closed);
    let again = [next(&mut second).await, next(&mut second).await];
    for events in [&seen[..2], &again[..]] {
        assert!(
            events.iter().any(
                |e| matches!(e, Event::Challenge { challenge, .. } if challenge.id == pending)
            )
        );
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::GameStart { game } if game.game_id == playing))
        );
    }
    // The new stream carries new events, and keep-alives keep it alive past the idle window.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let third = rita_challenge(&sandbox, 300, 0);
    let event = next(&mut second).await;
    assert!(matches!(event, Event::Challenge { challenge, .. } if challenge.id == third));

    // Declines reach the challenger with the reason key.
    client
        .decline_challenge(&third, ladder::lichess::DeclineReason::TooFast)
        .await
        .unwrap();
    let declined = sandbox.declined();
    assert_eq!(declined.len(), 1);
    assert_eq!(
        declined[0].decline_reason(),
        Some(ladder::lichess::DeclineReason::TooFast)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accounts_tokens_and_challenges_over_http() {
    let (sandbox, bot) = start().await;
    let me = bot.account().await.unwrap();
    assert_eq!(me.username, BOT);
    assert!(me.is_bot());
    let rita = bot.user(RITA).await.unwrap();
    assert_eq!(rita.perf("blitz").and_then(|p| p.rating), Some(1234));

    // A human account is refused on bot endpoints, as on Lichess.
    let hugo = sandbox.client("Hugo").unwrap();
    let id = hugo
        .create_challenge(BOT, &ChallengeRequest::clock(180, 0))
        .await
        .unwrap()
        .id;
    bot.accept_challenge(&id).await.unwrap();
    let err = hugo.stream_game(&id.game_id()).await.unwrap_err();
    assert!(matches!(err, LichessError::BadRequest { .. }), "{err}");
    // Bots may not play UltraBullet.
    let err = hugo
        .create_challenge(BOT, &ChallengeRequest::clock(15, 0))
        .await
        .unwrap_err();
    assert!(matches!(err, LichessError::BadRequest { .. }), "{err}");
    // A stranger's game is not found.
    let err = bot.stream_game(&GameId::new("nosuchid")).await.unwrap_err();
    assert!(matches!(err, LichessError::NotFound { .. }), "{err}");

    // A challenge the bot sends to a simulated challenger is accepted and played.
    let out = bot
        .create_challenge(RITA, &ChallengeRequest::clock(60, 0))
        .await
        .unwrap();
    assert_eq!(out.direction.as_deref(), Some("out"));
    let game = out.id.game_id();
    sandbox
        .wait_until("Rita accepts", WAIT, |w| w.games.get(&game).map(|_| ()))
        .await
        .unwrap();
    bot.abort(&game).await.unwrap();
    assert_eq!(sandbox.game(&game).unwrap().status, GameStatus::Aborted);

    // A bad token is a clear 401 that never echoes the token.
    let token = ladder::lichess::Token::new("lip_wrongSecret42", "test").unwrap();
    let stranger = Client::new(ClientConfig::new(sandbox.base_url(), token)).unwrap();
    let err = stranger.account().await.unwrap_err();
    assert!(matches!(err, LichessError::TokenRejected { .. }));
    assert!(!format!("{err} {err:?}").contains("wrongSecret42"));
}

/// Plays the bot's side with the first legal move until `plies` moves are on the board.
async fn play_first_moves(
    client: &Client,
    stream: &mut NdjsonStream<GameEvent>,
    id: &GameId,
    color: Color,
    plies: usize,
) -> ladder::lichess::GameState {
    let GameEvent::GameFull(full) = next(stream).await else {
        panic!("gameFull first");
    };
    let mut state = full.state;
    loop {
        let moves = state.move_list();
        if moves.len() >= plies || !state.status.is_ongoing() {
            return state;
        }
        let game = ladder::engine::Game::from_uci_moves(None, &moves, false).unwrap();
        if Color::from(game.turn()) == color {
            let m = game.legal_moves()[0];
            client.make_move(id, &game.to_uci(m), false).await.unwrap();
        }
        loop {
            if let GameEvent::GameState(s) = next(stream).await {
                state = s;
                break;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_challenger_challenges_on_its_own_and_plays() {
    let mut config = config();
    let mut eve = ChallengerConfig::new("Eve");
    eve.interval = Some(Duration::from_millis(50));
    eve.targets = vec![BOT.to_string()];
    eve.time_controls = vec![(300, 3)];
    eve.player = PlayerKind::Level(1.0);
    eve.think_time = Duration::from_millis(1);
    eve.rated = true;
    config.challengers.push(eve);
    let sandbox = Sandbox::start(config).await.unwrap();
    let client = sandbox.client(BOT).unwrap();
    let mut events = client.stream_events().await.unwrap();
    let Event::Challenge { challenge, .. } = next(&mut events).await else {
        panic!("Eve challenges by herself");
    };
    assert_eq!(challenge.challenger.name, "Eve");
    assert!(challenge.rated);
    assert_eq!(challenge.speed, Speed::Blitz);
    client.accept_challenge(&challenge.id).await.unwrap();
    let Event::GameStart { game } =
        next_matching(&mut events, |e| matches!(e, Event::GameStart { .. })).await
    else {
        unreachable!()
    };
    let color = game.color.unwrap();
    let mut stream = client.stream_game(&game.game_id).await.unwrap();
    let state = play_first_moves(&client, &mut stream, &game.game_id, color, 12).await;
    assert!(
        state.move_list().len() >= 12,
        "Eve's engine answered every move"
    );
    client.resign(&game.game_id).await.unwrap();
    let summary = sandbox.game(&game.game_id).unwrap();
    assert_eq!(summary.status, GameStatus::Resign);
    assert_eq!(summary.winner, Some(color.other()));
    // A rated result moves both ratings.
    let bot = client.user(BOT).await.unwrap();
    assert!(bot.perf("blitz").unwrap().rating.unwrap() < 1500);
    // The client never had two ordinary requests in flight.
    let stats = sandbox.request_stats(BOT);
    assert_eq!(stats.max_in_flight, 1, "{stats:?}");
    assert!(stats.total >= 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn draw_offers_and_an_opponent_who_leaves() {
    let mut config = config();
    config.challengers[0].draw_offer_chance = 1.0;
    let sandbox = Sandbox::start(config).await.unwrap();
    let client = sandbox.client(BOT).unwrap();

    // Rita offers a draw with every move; the bot accepts.
    let challenge = rita_challenge(&sandbox, 300, 0);
    client.accept_challenge(&challenge).await.unwrap();
    let id = challenge.game_id();
    let color = sandbox.game(&id).unwrap().color_of(BOT).unwrap();
    let mut stream = client.stream_game(&id).await.unwrap();
    // Stop right after one of Rita's moves (our own move would decline her offer).
    let plies = if color == Color::White { 2 } else { 1 };
    let state = play_first_moves(&client, &mut stream, &id, color, plies).await;
    assert!(state.draw_offer_of(color.other()), "{state:?}");
    client.draw(&id, true).await.unwrap();
    let game = sandbox.game(&id).unwrap();
    assert_eq!((game.status, game.winner), (GameStatus::Draw, None));

    // Rita leaves: the bot hears opponentGone and claims the win once allowed.
    let challenge = rita_challenge(&sandbox, 300, 0);
    client.accept_challenge(&challenge).await.unwrap();
    let id = challenge.game_id();
    let color = sandbox.game(&id).unwrap().color_of(BOT).unwrap();
    let mut stream = client.stream_game(&id).await.unwrap();
    // Stop on our turn.
    let plies = if color == Color::White { 2 } else { 3 };
    let state = play_first_moves(&client, &mut stream, &id, color, plies).await;
    // On the claimer's own turn lila answers a victory claim with 200 and does nothing.
    client.claim_victory(&id).await.unwrap();
    assert!(sandbox.game(&id).unwrap().status.is_ongoing());
    sandbox
        .set_gone(&id, RITA, true, Duration::from_secs(1))
        .unwrap();
    let gone = next_matching(&mut stream, |e| matches!(e, GameEvent::OpponentGone(_))).await;
    assert!(matches!(gone, GameEvent::OpponentGone(g) if g.gone));
    // Our move: her turn now, and she has left (she makes no move). Before her wait is over
    // a claim is refused.
    let game = ladder::engine::Game::from_uci_moves(None, &state.move_list(), false).unwrap();
    let reply = game.to_uci(game.legal_moves()[0]);
    client.make_move(&id, &reply, false).await.unwrap();
    let err = client.claim_victory(&id).await.unwrap_err();
    assert!(matches!(err, LichessError::BadRequest { .. }), "{err}");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(
        sandbox.game(&id).unwrap().moves.len(),
        plies + 1,
        "she moved"
    );
    client.claim_victory(&id).await.unwrap();
    let game = sandbox.game(&id).unwrap();
    assert_eq!(
        (game.status, game.winner),
        (GameStatus::Timeout, Some(color))
    );
}

/// Throughput of the sandbox + client over loopback HTTP (a benchmark, not a test: run with
/// `cargo test --release --test sandbox sandbox_throughput -- --ignored --nocapture`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: prints numbers, asserts nothing about speed"]
async fn sandbox_throughput() {
    let (sandbox, client) = start().await;
    let games = 20;
    let started = std::time::Instant::now();
    let mut plies = 0;
    for _ in 0..games {
        let challenge = rita_challenge(&sandbox, 600, 0);
        client.accept_challenge(&challenge).await.unwrap();
        let id = challenge.game_id();
        let color = sandbox.game(&id).unwrap().color_of(BOT).unwrap();
        let mut stream = client.stream_game(&id).await.unwrap();
        let state = play_first_moves(&client, &mut stream, &id, color, usize::MAX).await;
        plies += state.move_list().len();
    }
    let elapsed = started.elapsed();
    println!(
        "{games} games, {plies} plies in {elapsed:?}: {:.0} plies/s ({:.2} ms per ply, both sides)",
        plies as f64 / elapsed.as_secs_f64(),
        elapsed.as_secs_f64() * 1000.0 / plies as f64
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_config_starts_with_bots_and_varied_challengers() {
    let config = SandboxConfig::demo(&["Ladder1", "Ladder2"]);
    assert!(config.challengers.len() >= 3);
    assert!(
        config
            .challengers
            .iter()
            .any(|c| matches!(c.player, PlayerKind::Level(_)))
    );
    assert!(
        config
            .challengers
            .iter()
            .any(|c| c.title.as_deref() == Some("BOT"))
    );
    assert!(config.challengers.iter().all(|c| c.interval.is_some()));
    let sandbox = Sandbox::start(config).await.unwrap();
    for bot in ["Ladder1", "Ladder2"] {
        let token = ladder::sandbox::sandbox_token(bot);
        let client = Client::new(ClientConfig::new(sandbox.base_url(), token)).unwrap();
        let me = client.account().await.unwrap();
        assert_eq!(me.username, bot);
        assert!(me.is_bot());
    }
}
