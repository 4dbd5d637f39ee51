//! Playing like a person, against the sandbox over real HTTP on 127.0.0.1: the PGN log of
//! every game (it parses and replays to the game's final position, and its tags replay the
//! game exactly), human think time, and the conduct a person expects (takebacks, draw offers,
//! resignation) as configured per account.

mod common {
    pub mod config;
    pub mod daemon;
    pub mod one_bot;
    pub mod sandbox;
    pub mod tokens;
}

use std::path::Path;
use std::time::Duration;

use common::config::{account_table, ladder_toml};
use common::daemon::{Running, bounded_by, launch, spec};
use common::one_bot::one_bot_config;
use common::sandbox::quick;
use common::tokens::token_clients;

use ladder::config::Config;
use ladder::daemon::pgn_log::pgn_path;
use ladder::engine::Game;
use ladder::lichess::{ChallengeColor, Color, GameId, GameStatus};
use ladder::pgn::{MainLine, ReadGame};
use ladder::results::{GameRecord, read_results};
use ladder::sandbox::{Action, ChallengeSpec, GameSummary, Sandbox};
use pgn_reader::Reader;

const TEST_TIMEOUT: Duration = Duration::from_secs(120);

// ---------------------------------------------------------------- harness

async fn sandbox(bot: &str, humans: &[&str]) -> Sandbox {
    Sandbox::start(one_bot_config(bot, humans)).await.unwrap()
}

/// The daemon for one account at `level`; `account_keys` are added to its `[[accounts]]`
/// (`think_time = "fast"` unless they set it: these tests are about other things).
async fn start_daemon(sb: &Sandbox, dir: &Path, bot: &str, level: u32, keys: &str) -> Running {
    let text = ladder_toml(
        sb.base_url(),
        "search_threads = 1\nmax_games = 4\nabort_after_s = 60\nshutdown_grace_s = 30\n",
        "min_initial_s = 15\nmax_games = 4\nmax_games_per_opponent = 4\n\
         variants = [\"standard\", \"fromPosition\"]\n",
    ) + &account_table(bot, "LADDER_TEST_UNUSED", level, &format!("{keys}\n"));
    let config = Config::parse(&text, &dir.join("accounts.toml")).unwrap();
    let clients = token_clients(sb, &[bot], quick);
    launch(spec(config, clients, dir)).await.unwrap()
}

/// The sandbox of `bot`, `humans` and Rita, and the daemon playing `bot` at `level` with
/// `keys` in a new temporary directory.
async fn playing(
    bot: &str,
    humans: &[&str],
    level: u32,
    keys: &str,
) -> (Sandbox, tempfile::TempDir, Running) {
    let sb = sandbox(bot, humans).await;
    let dir = tempfile::tempdir().unwrap();
    let run = start_daemon(&sb, dir.path(), bot, level, keys).await;
    (sb, dir, run)
}

async fn drain(run: Running) -> Vec<GameRecord> {
    run.daemon.shutdown().await;
    run.daemon.join().await.unwrap();
    let read = read_results(&[run.results]).unwrap();
    assert!(read.warnings.is_empty(), "{:?}", read.warnings);
    read.records
}

async fn bounded<F: std::future::Future<Output = ()>>(f: F) {
    bounded_by(TEST_TIMEOUT, f).await
}

// ---------------------------------------------------------------- PGN reading

fn read_pgn(path: &Path) -> Vec<ReadGame> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut reader = Reader::new(text.as_bytes());
    let mut games = Vec::new();
    while let Some(game) = reader.read_game(&mut MainLine).unwrap() {
        games.push(game.unwrap_or_else(|e| panic!("{e} in\n{text}")));
    }
    games
}

// ---------------------------------------------------------------- PGN

/// Every game the daemon plays is appended to `<results stem>.pgn`: the sandbox game parses
/// with pgn-reader and replays to the same final position as the recorded moves, and its
/// tags say how to replay it exactly (level, coefficients version, seed) and where it was
/// played.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_game_is_in_the_pgn_log_and_replays_to_its_final_position() {
    bounded(async {
        let bot = "pgn1";
        let (sb, dir, run) = playing(bot, &[], 3, "").await;
        for _ in 0..2 {
            sb.challenge("Rita", bot, &ChallengeSpec::clock(60, 1))
                .unwrap();
        }
        let games = sb.wait_finished(2, Duration::from_secs(90)).await.unwrap();
        let records = drain(run).await;
        assert_eq!(records.len(), 2);

        let pgn = read_pgn(&pgn_path(&dir.path().join("results.jsonl")));
        assert_eq!(pgn.len(), 2, "one PGN game per finished game");
        for game in &games {
            let record = records.iter().find(|r| r.game_id == game.id).unwrap();
            let read = pgn
                .iter()
                .find(|p| p.tags["Site"] == format!("{}/{}", sb.base_url(), game.id))
                .expect("the game's URL is its Site");
            let replayed =
                Game::from_uci_moves(None, &game.moves.iter().collect::<Vec<_>>(), false).unwrap();
            assert_eq!(read.end, *replayed.position(), "same final position");
            assert_eq!(read.moves, game.moves);
            let tags = &read.tags;
            assert_eq!(tags["Level"], "3");
            assert_eq!(
                tags["CoefficientsVersion"],
                record.header.coefficients_version.to_string()
            );
            assert_eq!(tags["Seed"], record.header.seed.to_string());
            assert_eq!(tags["Nodes"], record.header.engine.nodes.to_string());
            assert_eq!(tags["TimeControl"], "60+1");
            let (white, black) = (&tags["White"], &tags["Black"]);
            assert!(
                white.eq_ignore_ascii_case(&game.white) && black.eq_ignore_ascii_case(&game.black),
                "{white} {black} vs {game:?}"
            );
            let result = match game.winner {
                Some(ladder::lichess::Color::White) => "1-0",
                Some(ladder::lichess::Color::Black) => "0-1",
                None => "1/2-1/2",
            };
            assert_eq!(tags["Result"], result);
            assert!(tags.contains_key("Termination") && tags.contains_key("Date"));
            let opponent_elo = if record.color == "white" {
                "BlackElo"
            } else {
                "WhiteElo"
            };
            assert_eq!(
                tags.get(opponent_elo).map(String::as_str),
                record.opponent.rating.map(|r| format!("{r:.0}")).as_deref()
            );
        }
    })
    .await;
}

// ---------------------------------------------------------------- think time

/// With `think_time = "human"` the bot takes its time (every move after the first ones waits
/// at least the time a hand needs) and still never loses on time; the game is recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_human_paced_game_plays_to_the_end_without_losing_on_time() {
    bounded(async {
        let bot = "think1";
        // Rita plays as level 1, not at random: a random mover can be mated in four moves,
        // too short a game to see a pace.
        let mut config = one_bot_config(bot, &[]);
        config.challengers[0].player = ladder::player::seat::PlayerKind::Level(1.0);
        let sb = Sandbox::start(config).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let keys = "think_time = \"human\"\nmax_think_s = 1";
        let run = start_daemon(&sb, dir.path(), bot, 3, keys).await;
        let started = std::time::Instant::now();
        sb.challenge("Rita", bot, &ChallengeSpec::clock(30, 1))
            .unwrap();
        let games = sb.wait_finished(1, Duration::from_secs(100)).await.unwrap();
        let elapsed = started.elapsed();
        let records = drain(run).await;
        let game = &games[0];
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].fault, None, "{:?}", records[0]);
        let us = game.color_of(bot).unwrap();
        assert!(
            !(game.status == ladder::lichess::GameStatus::Outoftime && game.winner != Some(us)),
            "lost on time: {game:?}"
        );
        // Our clock: what the bot spent (initial + increments − what is left). The clock
        // starts with each side's second move; moves after that wait at least 0.35 s.
        let our_moves = game.moves.len() / 2;
        let left = if us == ladder::lichess::Color::White {
            game.wtime
        } else {
            game.btime
        };
        let spent_ms = 30_000 + 1_000 * (our_moves as u64).saturating_sub(1) - left;
        assert!(our_moves >= 4, "{game:?}");
        assert!(
            spent_ms >= 300 * (our_moves as u64 - 2),
            "{our_moves} moves in {spent_ms} ms: no human pace"
        );
        eprintln!("{our_moves} moves, {spent_ms} ms on our clock, game over in {elapsed:?}");
    })
    .await;
}

// ---------------------------------------------------------------- conduct

/// A game the human `alice` plays white in (from `fen` if given), scripted by the test.
async fn human_game(sb: &Sandbox, bot: &str, fen: Option<&str>) -> GameId {
    let mut spec = ChallengeSpec::clock(120, 1);
    spec.color = ChallengeColor::White;
    if let Some(fen) = fen {
        spec.variant = "fromPosition".into();
        spec.fen = Some(fen.into());
    }
    let id = sb.challenge("alice", bot, &spec).unwrap().id.game_id();
    sb.wait_until(&format!("{id} started"), Duration::from_secs(20), |w| {
        w.games.contains_key(&id).then_some(())
    })
    .await
    .unwrap();
    id
}

fn act(sb: &Sandbox, id: &GameId, action: Action) {
    sb.act("alice", id, action).unwrap();
}

fn play(sb: &Sandbox, id: &GameId, uci: &str, offering_draw: bool) {
    act(
        sb,
        id,
        Action::Move {
            uci: uci.into(),
            offering_draw,
        },
    );
}

async fn wait_for(sb: &Sandbox, id: &GameId, what: &str, done: impl Fn(&GameSummary) -> bool) {
    sb.wait_until(what, Duration::from_secs(30), |w| {
        w.summary(id).filter(|g| done(g)).map(|_| ())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:?}: {:?}", sb.game(id)));
}

/// The takeback proposal of `alice` is no longer standing (answered).
async fn takeback_answered(sb: &Sandbox, id: &GameId) {
    sb.wait_until("takeback answered", Duration::from_secs(30), |w| {
        w.games
            .get(id)
            .filter(|g| g.game.takeback_offer.is_none())
            .map(|_| ())
    })
    .await
    .unwrap();
}

/// Alice plays `uci` and, once the bot has replied, asks for a takeback.
async fn takeback_after_the_reply(sb: &Sandbox, id: &GameId, uci: &str) {
    play(sb, id, uci, false);
    wait_for(sb, id, "bot's reply", |g| g.moves.len() == 2).await;
    act(sb, id, Action::Takeback(true));
}

/// Level 1 with `takebacks = 1` grants one takeback (the moves are undone, as on Lichess) and
/// declines the second with a word in the chat; level 5 (default: none) declines at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn takebacks_are_granted_up_to_the_configured_number() {
    bounded(async {
        let bot = "takeback1";
        let (sb, _dir, run) = playing(bot, &["alice"], 1, "takebacks = 1").await;
        let id = human_game(&sb, bot, None).await;
        takeback_after_the_reply(&sb, &id, "e2e4").await;
        wait_for(&sb, &id, "takeback granted", |g| g.moves.is_empty()).await;
        takeback_after_the_reply(&sb, &id, "d2d4").await;
        takeback_answered(&sb, &id).await;
        let g = sb.game(&id).unwrap();
        assert_eq!(g.moves.len(), 2, "the second takeback is declined");
        assert_eq!(g.moves[0], "d2d4");
        wait_for(&sb, &id, "the chat line", |g| {
            g.chat.iter().any(|c| c.text.contains("no more takebacks"))
        })
        .await;
        act(&sb, &id, Action::Resign);
        drain(run).await;

        let bot = "takeback5";
        let (sb, _dir, run) = playing(bot, &["alice"], 5, "").await;
        let id = human_game(&sb, bot, None).await;
        takeback_after_the_reply(&sb, &id, "e2e4").await;
        takeback_answered(&sb, &id).await;
        assert_eq!(sb.game(&id).unwrap().moves.len(), 2, "level 5 grants none");
        act(&sb, &id, Action::Resign);
        drain(run).await;
    })
    .await;
}

/// White up a queen (the bot, black, clearly worse) and black up a queen (clearly better),
/// both at move 40.
const BOT_WORSE: &str = "6k1/5ppp/8/8/8/8/QR3PPP/6K1 w - - 0 40";
const BOT_BETTER: &str = "6k1/5ppp/8/8/8/8/qr3PPP/6K1 w - - 0 40";

/// A draw offer is declined when the bot is clearly better (the game goes on with its move)
/// and accepted when it is clearly worse (the game ends drawn).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn draw_offers_are_answered_from_the_evaluation() {
    bounded(async {
        let bot = "draw4";
        let (sb, _dir, run) = playing(bot, &["alice"], 4, "").await;

        let better = human_game(&sb, bot, Some(BOT_BETTER)).await;
        play(&sb, &better, "h2h3", true);
        wait_for(&sb, &better, "bot's reply", |g| g.moves.len() == 2).await;
        let g = sb.game(&better).unwrap();
        assert!(!g.is_over(), "declined: the game goes on: {g:?}");

        let worse = human_game(&sb, bot, Some(BOT_WORSE)).await;
        play(&sb, &worse, "h2h3", true);
        wait_for(&sb, &worse, "draw accepted", |g| g.is_over()).await;
        let g = sb.game(&worse).unwrap();
        assert_eq!(g.status, GameStatus::Draw, "{g:?}");
        assert_eq!(g.moves.len(), 1, "accepted instead of moving");

        act(&sb, &better, Action::Resign);
        let records = drain(run).await;
        let drawn = records.iter().find(|r| r.game_id == worse).unwrap();
        assert_eq!(drawn.result, ladder::results::Outcome::Draw);
    })
    .await;
}

/// Alice leaves the moment she has moved, her game claimable at once: the claim comes due on
/// the bot's turn, while it thinks like a person. lila answers a victory claim on the
/// claimer's own turn with 200 and does nothing, so the bot moves first and claims after: the
/// game ends by the claim long before her two minutes would, recorded as her leaving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_due_on_our_turn_is_made_after_our_move() {
    bounded(async {
        let bot = "claim1";
        let keys = "think_time = \"human\"\nmax_think_s = 2";
        let (sb, _dir, run) = playing(bot, &["alice"], 3, keys).await;
        let id = human_game(&sb, bot, None).await;
        play(&sb, &id, "e2e4", false);
        wait_for(&sb, &id, "the bot's reply", |g| g.moves.len() >= 2).await;
        play(&sb, &id, "d2d4", false);
        sb.set_gone(&id, "alice", true, Duration::ZERO).unwrap();
        let games = sb.wait_finished(1, Duration::from_secs(20)).await.unwrap();
        let g = &games[0];
        assert_eq!(
            (g.status, g.winner),
            (GameStatus::Timeout, Some(Color::Black))
        );
        assert_eq!(g.moves.len(), 4, "the bot moved, then claimed: {g:?}");
        let records = drain(run).await;
        assert_eq!(
            records[0].fault_kind(),
            Some("opponent_gone"),
            "{records:?}"
        );
    })
    .await;
}

/// Clearly lost (a queen and a rook down): level 8 resigns after a few moves with a word in
/// the chat; level 1 never resigns (its opponent must learn to mate).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_games_are_resigned_at_the_upper_levels_only() {
    bounded(async {
        for (level, resigns) in [(8, true), (1, false)] {
            let bot = format!("resign{level}");
            let (sb, _dir, run) = playing(&bot, &["alice"], level, "").await;
            let id = human_game(&sb, &bot, Some(BOT_WORSE)).await;
            // White walks its rook up the b-file: never a repeated position (the search would
            // take a repetition as a draw), never in reach of black's king.
            for (i, uci) in ["b2b3", "b3b4", "b4b5", "b5b6", "b6b7"].iter().enumerate() {
                let g = sb.game(&id).unwrap();
                if g.is_over() {
                    break;
                }
                play(&sb, &id, uci, false);
                let plies = 2 * i + 2;
                wait_for(&sb, &id, "bot's reply or resignation", |g| {
                    g.is_over() || g.moves.len() >= plies
                })
                .await;
            }
            let g = sb.game(&id).unwrap();
            if resigns {
                assert_eq!(g.status, GameStatus::Resign, "{g:?}");
                assert_eq!(g.winner, Some(Color::White));
                assert!(g.moves.len() <= 7, "resigned within a few moves: {g:?}");
                assert!(
                    g.chat.iter().any(|c| c.text.contains("I resign")),
                    "{:?}",
                    g.chat
                );
            } else {
                assert!(!g.is_over(), "level 1 plays on: {g:?}");
                assert_eq!(g.moves.len(), 10);
                act(&sb, &id, Action::Resign);
            }
            drain(run).await;
        }
    })
    .await;
}
