//! No game goes unrecorded, against the sandbox over real HTTP on 127.0.0.1: a game that ends
//! while the daemon is down is settled from the game export after the restart (once, with the
//! server's result); a game still running at the restart is played on with its original seed;
//! a drain that runs out of grace aborts a game without moves and leaves a game under way —
//! one the level is winning — running on the server, unresigned, for the restart to resume; a
//! loss on time caused by a 429 pause is recorded with a fault that calibration leaves
//! out.

mod common {
    pub mod config;
    pub mod daemon;
    pub mod one_bot;
    pub mod sandbox;
    pub mod tokens;
}

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::config::{account_table, ladder_toml};
use common::daemon::{Running, bounded_by, launch, spec};
use common::one_bot::one_bot_config;
use common::sandbox::quick;
use common::tokens::token_clients;

use ladder::calibration::select::{Filter, Versions, select};
use ladder::config::Config;
use ladder::daemon::open_games::{OpenGame, state_path};
use ladder::engine::{Game, NoStop};
use ladder::levels::{Coefficients, LevelParams};
use ladder::lichess::{ChallengeColor, Color, GameId, GameStatus};
use ladder::player::LevelPlayer;
use ladder::player::chat::LEAVE_CHAT;
use ladder::results::{AfterRestart, GameRecord, Outcome, Source, fault, read_results};
use ladder::sandbox::{Action, ChallengeSpec, GameSummary, Sandbox};

const TEST_TIMEOUT: Duration = Duration::from_secs(120);

async fn sandbox(bot: &str, humans: &[&str]) -> Sandbox {
    let mut config = one_bot_config(bot, humans);
    config.challengers[0].max_games = 1;
    Sandbox::start(config).await.unwrap()
}

struct Options {
    shutdown_grace_s: u64,
    rate_limit_pause: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            shutdown_grace_s: 30,
            rate_limit_pause: Duration::from_secs(1),
        }
    }
}

async fn start_daemon(sb: &Sandbox, dir: &Path, bot: &str, o: &Options) -> Running {
    let text = ladder_toml(
        sb.base_url(),
        &format!(
            "search_threads = 1\nmax_games = 8\nabort_after_s = 60\nshutdown_grace_s = {}\n",
            o.shutdown_grace_s
        ),
        "min_initial_s = 30\nmax_games = 4\nvariants = [\"standard\", \"fromPosition\"]\n",
    ) + &account_table(bot, "LADDER_TEST_UNUSED", 1, "");
    let config = Config::parse(&text, &dir.join("accounts.toml")).unwrap();
    let pause = o.rate_limit_pause;
    let clients = token_clients(sb, &[bot], move |c| {
        let mut c = quick(c);
        c.rate_limit.pause = pause;
        c
    });
    launch(spec(config, clients, dir)).await.unwrap()
}

/// The sandbox of `bot`, `humans` and Rita, and the daemon playing `bot` with `o` in a new
/// temporary directory.
async fn playing(bot: &str, humans: &[&str], o: &Options) -> (Sandbox, tempfile::TempDir, Running) {
    let sb = sandbox(bot, humans).await;
    let dir = tempfile::tempdir().unwrap();
    let run = start_daemon(&sb, dir.path(), bot, o).await;
    (sb, dir, run)
}

/// Stops at once (two stop requests, like a second SIGTERM): running games stay open.
async fn hard_stop(run: Running) {
    run.daemon.shutdown().await;
    run.daemon.shutdown().await;
    run.daemon.join().await.unwrap();
}

/// Drains and waits for the exit; the records written.
async fn drain(run: Running) -> Vec<GameRecord> {
    run.daemon.shutdown().await;
    run.daemon.join().await.unwrap();
    records(&run.results)
}

fn records(results: &Path) -> Vec<GameRecord> {
    if !results.exists() {
        return Vec::new();
    }
    let read = read_results(&[results.to_path_buf()]).unwrap();
    assert!(read.warnings.is_empty(), "{:?}", read.warnings);
    assert_eq!(read.duplicates, 0, "a game was written twice");
    read.records
}

fn open_games(results: &Path) -> Vec<OpenGame> {
    #[derive(serde::Deserialize)]
    struct File {
        open_games: Vec<OpenGame>,
    }
    let text = std::fs::read_to_string(state_path(results)).unwrap();
    serde_json::from_str::<File>(&text).unwrap().open_games
}

/// The ids of the games the open-games file beside the first results file keeps.
fn open_game_ids(dir: &Path) -> Vec<GameId> {
    open_games(&first_results(dir))
        .into_iter()
        .map(|g| g.game_id)
        .collect()
}

/// What `bot` said in `game`'s chat, in order.
fn said_by<'a>(game: &'a GameSummary, bot: &str) -> Vec<&'a str> {
    game.chat
        .iter()
        .filter(|l| l.username.eq_ignore_ascii_case(bot))
        .map(|l| l.text.as_str())
        .collect()
}

/// The only record of `id`.
fn record_of<'a>(records: &'a [GameRecord], id: &GameId) -> &'a GameRecord {
    let ours: Vec<_> = records.iter().filter(|r| r.game_id == *id).collect();
    assert_eq!(ours.len(), 1, "game {id} recorded {} times", ours.len());
    ours[0]
}

/// A game a human challenger plays white in, scripted by the test; returns once the bot has
/// accepted and the game started.
async fn human_game(sb: &Sandbox, human: &str, bot: &str) -> GameId {
    human_game_from(sb, human, bot, None).await
}

/// [`human_game`] from the position `fen` (white to move) when given.
async fn human_game_from(sb: &Sandbox, human: &str, bot: &str, fen: Option<&str>) -> GameId {
    let mut spec = ChallengeSpec::clock(60, 0);
    spec.color = ChallengeColor::White;
    if let Some(fen) = fen {
        spec.variant = "fromPosition".into();
        spec.fen = Some(fen.into());
    }
    let id = sb.challenge(human, bot, &spec).unwrap().id.game_id();
    sb.wait_until(&format!("{id} started"), Duration::from_secs(20), |w| {
        w.games.contains_key(&id).then_some(())
    })
    .await
    .unwrap();
    id
}

/// A game Alice challenges `bot` to (she plays white) once its event stream is open, whose
/// `gameStart` the sandbox never sends.
async fn game_with_lost_start(sb: &Sandbox, bot: &str) -> GameId {
    sb.wait_event_stream(bot, Duration::from_secs(10))
        .await
        .unwrap();
    sb.lose_next_game_start(bot);
    human_game(sb, "alice", bot).await
}

fn play(sb: &Sandbox, who: &str, id: &GameId, uci: &str) {
    sb.play_move(who, id, uci).unwrap();
}

async fn wait_plies(sb: &Sandbox, id: &GameId, plies: usize) -> GameSummary {
    sb.wait_until(
        &format!("{plies} plies in {id}"),
        Duration::from_secs(20),
        |w| w.summary(id).filter(|g| g.moves.len() >= plies),
    )
    .await
    .unwrap()
}

async fn wait_over(sb: &Sandbox, id: &GameId) -> GameSummary {
    sb.wait_until(&format!("{id} over"), Duration::from_secs(30), |w| {
        w.summary(id).filter(|g| g.is_over())
    })
    .await
    .unwrap()
}

async fn wait_recorded(results: &Path, id: &GameId) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !records(results).iter().any(|r| r.game_id == *id) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{id} never recorded"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn bounded<F: std::future::Future<Output = ()>>(f: F) {
    bounded_by(TEST_TIMEOUT, f).await
}

/// Killed during two games that then end on the server — one lost on time while the daemon
/// is down, one resigned by the opponent — and restarted: each game is in the results exactly
/// once, with the server's result and the seed it began with, marked as settled; the flag
/// carries a fault, the win does not; later restarts add nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn games_that_end_while_the_daemon_is_down_are_settled_once_after_the_restart() {
    bounded(async {
        let bot = "down1";
        let (sb, dir, first) = playing(bot, &["Alice"], &Options::default()).await;

        let flagged = sb
            .challenge("Rita", bot, &ChallengeSpec::clock(60, 0))
            .unwrap()
            .id
            .game_id();
        let resigned = human_game(&sb, "alice", bot).await;
        play(&sb, "alice", &resigned, "e2e4");
        wait_plies(&sb, &resigned, 2).await;
        wait_plies(&sb, &flagged, 6).await;
        hard_stop(first).await;

        let open = open_games(&first_results(dir.path()));
        let seed_of = |id: &GameId| {
            open.iter()
                .find(|g| g.game_id == *id)
                .unwrap_or_else(|| panic!("{id} not remembered as open: {open:?}"))
                .header
                .seed
        };
        let (flagged_seed, resigned_seed) = (seed_of(&flagged), seed_of(&resigned));
        assert!(records(&first_results(dir.path())).is_empty());

        // While the daemon is down: our clock runs out in one game, Alice resigns the other.
        let us = sb.game(&flagged).unwrap().color_of(bot).unwrap();
        sb.wait_until(
            "our turn in the flagged game",
            Duration::from_secs(10),
            |w| {
                w.games
                    .get(&flagged)
                    .filter(|e| e.game.turn() == us)
                    .map(|_| ())
            },
        )
        .await
        .unwrap();
        sb.with_world(|w| {
            let game = &mut w.games.get_mut(&flagged).unwrap().game;
            game.set_remaining(us, 200, tokio::time::Instant::now());
        });
        sb.act("alice", &resigned, Action::Resign).unwrap();
        let flagged_game = wait_over(&sb, &flagged).await;
        assert_eq!(flagged_game.status, GameStatus::Outoftime);
        assert_eq!(flagged_game.winner, Some(us.other()));
        let resigned_game = sb.game(&resigned).unwrap();

        let second = start_daemon(&sb, dir.path(), bot, &Options::default()).await;
        wait_recorded(&second.results, &flagged).await;
        wait_recorded(&second.results, &resigned).await;
        let records = drain(second).await;

        let r = record_of(&records, &flagged);
        assert_eq!(r.result, Outcome::Loss);
        assert_eq!(r.status, "outoftime");
        assert_eq!(r.after_restart, Some(AfterRestart::Settled));
        assert_eq!(r.header.seed, flagged_seed);
        assert_eq!(r.moves.split_whitespace().count(), flagged_game.moves.len());
        assert_eq!(
            r.moves.split_whitespace().collect::<Vec<_>>(),
            flagged_game.moves
        );
        assert_eq!(r.header.source, Source::Sandbox);
        assert_eq!(r.fault_kind(), Some(fault::DAEMON_DOWN), "{r:?}");
        assert_eq!(
            r.header.engine.nodes,
            LevelParams::new(&Coefficients::builtin(), 1.0).nodes
        );

        let r = record_of(&records, &resigned);
        assert_eq!(r.result, Outcome::Win);
        assert_eq!(r.status, "resign");
        assert_eq!(r.after_restart, Some(AfterRestart::Settled));
        assert_eq!(r.header.seed, resigned_seed);
        assert_eq!(r.fault, None, "a resignation is a result like any other");
        assert_eq!(
            r.moves.split_whitespace().count(),
            resigned_game.moves.len()
        );

        assert!(
            open_games(&first_results(dir.path())).is_empty(),
            "settled games are no longer open"
        );
        // Nothing is settled twice.
        let third = start_daemon(&sb, dir.path(), bot, &Options::default()).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(drain(third).await.len(), 2);
    })
    .await;
}

/// A `gameStart` lost on a live event stream (the soak saw it with a silent stream): the
/// accepted challenge was remembered, with its seed, before the accept went out; once its start
/// is overdue the settling finds the game running and the account plays it — in time for the
/// person waiting, and recorded once with the seed drawn at the accept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_whose_game_start_is_lost_is_taken_up_and_played() {
    bounded(async {
        let bot = "lost1";
        let (sb, _dir, run) = playing(bot, &["Alice"], &Options::default()).await;
        let id = game_with_lost_start(&sb, bot).await;
        let remembered = open_games(&run.results)
            .into_iter()
            .find(|g| g.game_id == id)
            .expect("the accepted challenge is remembered before the game starts");
        play(&sb, "alice", &id, "e2e4");
        // The sandbox aborts a game whose first move does not come in 30 s (noStart).
        let answered = sb
            .wait_until("the bot's first move", Duration::from_secs(25), |w| {
                w.summary(&id).filter(|g| g.moves.len() >= 2)
            })
            .await;
        assert!(
            answered.is_ok(),
            "the game was never taken up: {:?}",
            sb.game(&id)
        );
        sb.act("alice", &id, Action::Resign).unwrap();
        wait_recorded(&run.results, &id).await;
        let records = drain(run).await;
        let r = record_of(&records, &id);
        assert_eq!((r.result, r.fault.as_deref()), (Outcome::Win, None));
        assert_eq!(
            r.header.seed, remembered.header.seed,
            "the seed drawn at the accept"
        );
        assert_eq!(r.after_restart, None);
    })
    .await;
}

/// Killed after accepting a challenge and before its `gameStart` arrived (the soak's lost
/// games): the person aborts the game while the daemon is down. After the restart the game
/// is recorded once, from the export, with a `not_played` fault (calibration leaves faults out).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_accepted_but_never_started_before_a_kill_is_settled_after_the_restart() {
    bounded(async {
        let bot = "lost2";
        let (sb, dir, first) = playing(bot, &["Alice"], &Options::default()).await;
        let id = game_with_lost_start(&sb, bot).await;
        hard_stop(first).await;
        let open = open_games(&first_results(dir.path()));
        let remembered = open
            .iter()
            .find(|g| g.game_id == id)
            .unwrap_or_else(|| panic!("{id} not remembered: {open:?}"));
        assert!(!remembered.played, "{remembered:?}");
        let seed = remembered.header.seed;

        sb.act("alice", &id, Action::Abort).unwrap();
        wait_over(&sb, &id).await;
        let second = start_daemon(&sb, dir.path(), bot, &Options::default()).await;
        wait_recorded(&second.results, &id).await;
        let records = drain(second).await;
        let r = record_of(&records, &id);
        assert_eq!(r.status, "aborted");
        assert_eq!(r.header.seed, seed);
        assert_eq!(r.after_restart, Some(AfterRestart::Settled));
        assert_eq!(r.fault_kind(), Some(fault::NOT_PLAYED), "{r:?}");
        assert!(open_games(&first_results(dir.path())).is_empty());
    })
    .await;
}

fn first_results(dir: &Path) -> PathBuf {
    dir.join("results.jsonl")
}

/// Stopped during a game that Lichess still has running at the restart: the game comes back
/// through `gameStart`, is played on with the seed it began with (the move after the restart
/// is the one that seed gives), and is recorded once, marked as resumed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_still_running_at_the_restart_resumes_with_its_original_seed() {
    bounded(async {
        let bot = "resume1";
        let (sb, dir, first) = playing(bot, &["Alice"], &Options::default()).await;
        let id = human_game(&sb, "alice", bot).await;
        play(&sb, "alice", &id, "d2d4");
        let before = wait_plies(&sb, &id, 2).await;
        hard_stop(first).await;
        let seed = open_games(&first_results(dir.path()))[0].header.seed;

        play(&sb, "alice", &id, "c2c4");
        let second = start_daemon(&sb, dir.path(), bot, &Options::default()).await;
        let after = wait_plies(&sb, &id, 4).await;
        assert!(!after.is_over());
        // A fresh player with the original seed chooses the move the resumed daemon played.
        let params = LevelParams::new(&Coefficients::builtin(), 1.0);
        let position = Game::from_uci_moves(
            None,
            &[before.moves.clone(), vec!["c2c4".into()]].concat(),
            false,
        )
        .unwrap();
        let expected = LevelPlayer::new(params, seed)
            .choose(&position, &mut NoStop)
            .best_move
            .map(|m| position.to_uci(m))
            .unwrap();
        assert_eq!(
            after.moves[3], expected,
            "the resumed game did not keep its seed"
        );

        sb.act("alice", &id, Action::Resign).unwrap();
        wait_recorded(&second.results, &id).await;
        let records = drain(second).await;
        let r = record_of(&records, &id);
        assert_eq!(r.header.seed, seed, "the record carries the original seed");
        assert_eq!(r.after_restart, Some(AfterRestart::Resumed));
        assert_eq!((r.result, r.fault.as_deref()), (Outcome::Win, None));
        assert_eq!(r.moves.split_whitespace().count(), 4);
    })
    .await;
}

/// The start position without white's queen and rooks: black (the bot) is a queen and two
/// rooks up, and no mate comes within a few moves; white to move.
const WINNING_FOR_BLACK: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/1NB1KBN1 w kq - 0 1";

/// White's move after `moves` from [`WINNING_FOR_BLACK`]: a knight move when there is one (it
/// opens nothing in front of the king), else the first legal move.
fn white_move(moves: &[String]) -> String {
    let game = Game::from_uci_moves(Some(WINNING_FOR_BLACK), moves, false).unwrap();
    let legal = game.legal_moves();
    let knight = legal
        .iter()
        .find(|m| m.role() == shakmaty::Role::Knight)
        .unwrap_or(&legal[0]);
    game.to_uci(*knight)
}

/// A drain whose abort is overtaken: at the end of the grace the bot (white, one move made)
/// aborts, Lichess answers 200, but the opponent's first move landed first, so the game goes
/// on. The bot leaves it running at once with its word in the chat, unresigned and open for
/// the restart, instead of waiting for an end that never comes until the daemon's stop limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abort_overtaken_by_the_opponents_first_move_leaves_the_game_running() {
    bounded(async {
        let bot = "overtaken1";
        let options = Options {
            shutdown_grace_s: 1,
            ..Options::default()
        };
        let (sb, dir, run) = playing(bot, &["Alice"], &options).await;
        let mut spec = ChallengeSpec::clock(60, 0);
        spec.color = ChallengeColor::Black;
        let id = sb.challenge("alice", bot, &spec).unwrap().id.game_id();
        wait_plies(&sb, &id, 1).await;
        // Always legal after white's first move: white cannot reach f6 or give check.
        sb.overtake_next_abort(&id, "g8f6");

        let started = std::time::Instant::now();
        let records = drain(run).await;
        let took = started.elapsed();
        assert!(
            took < Duration::from_secs(8),
            "the daemon waited {took:?} for a game its abort could no longer end"
        );
        let game = sb.game(&id).unwrap();
        assert_eq!(game.status, GameStatus::Started, "{game:?}");
        assert_eq!(
            game.moves.len(),
            2,
            "the overtaking move was played: {game:?}"
        );
        let said = said_by(&game, bot);
        assert!(
            said.contains(&LEAVE_CHAT),
            "the bot says it will be back: {said:?}"
        );
        assert!(
            !records.iter().any(|r| r.game_id == id),
            "a game left running was recorded"
        );
        assert_eq!(
            open_game_ids(dir.path()),
            [id],
            "the game left running stays open"
        );
    })
    .await;
}

/// A drain that runs out of grace with two games still running: the one without moves is
/// aborted (Lichess allows it) and recorded with a shutdown fault; the one under way, which the
/// level is winning by a queen and two rooks, is neither resigned nor recorded: it is left
/// running on the server with a word in the chat and stays open; the restarted daemon takes it
/// up again, plays on in it, and records the win once, marked as resumed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_that_runs_out_of_grace_aborts_what_it_may_and_leaves_a_won_game_for_the_restart() {
    bounded(async {
        let bot = "grace1";
        let options = Options {
            shutdown_grace_s: 1,
            ..Options::default()
        };
        let (sb, dir, run) = playing(bot, &["Alice", "Bob"], &options).await;
        let unmoved = human_game(&sb, "alice", bot).await;
        let won = human_game_from(&sb, "bob", bot, Some(WINNING_FOR_BLACK)).await;
        play(&sb, "bob", &won, &white_move(&[]));
        let so_far = wait_plies(&sb, &won, 2).await;
        // The bot to move when the drain begins.
        play(&sb, "bob", &won, &white_move(&so_far.moves));
        sb.wait_until("both games followed", Duration::from_secs(10), |w| {
            let followed = |id: &GameId| w.games.get(id).is_some_and(|e| !e.streams.is_empty());
            (followed(&unmoved) && followed(&won)).then_some(())
        })
        .await
        .unwrap();

        let started = std::time::Instant::now();
        let records = drain(run).await;
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "the daemon took {:?} to exit",
            started.elapsed()
        );

        let aborted = sb.game(&unmoved).unwrap();
        assert_eq!(aborted.status, GameStatus::Aborted);
        let r = record_of(&records, &unmoved);
        assert_eq!((r.status.as_str(), r.result), ("aborted", Outcome::None));
        assert_eq!(r.fault_kind(), Some(fault::SHUTDOWN), "{r:?}");

        let left = sb.game(&won).unwrap();
        assert_eq!(
            left.status,
            GameStatus::Started,
            "the shutdown ended a game the level was winning"
        );
        assert_eq!(
            said_by(&left, bot),
            [LEAVE_CHAT],
            "the bot says it will be back"
        );
        assert!(
            !records.iter().any(|r| r.game_id == won),
            "a game left running was recorded"
        );
        assert_eq!(
            open_game_ids(dir.path()),
            std::slice::from_ref(&won),
            "the game left running stays open"
        );

        // The restart takes the game up again and plays on in it.
        let second = start_daemon(&sb, dir.path(), bot, &options).await;
        let plies = left.moves.len();
        let bot_to_move = plies % 2 == 1;
        if !bot_to_move {
            play(&sb, "bob", &won, &white_move(&left.moves));
        }
        let after = wait_plies(&sb, &won, plies + if bot_to_move { 1 } else { 2 }).await;
        assert!(!after.is_over(), "{:?}", after.status);
        sb.act("bob", &won, Action::Resign).unwrap();
        wait_recorded(&second.results, &won).await;
        let records = drain(second).await;
        let r = record_of(&records, &won);
        assert_eq!((r.result, r.fault.as_deref()), (Outcome::Win, None));
        assert_eq!(r.after_restart, Some(AfterRestart::Resumed));
        assert!(open_games(&first_results(dir.path())).is_empty());
    })
    .await;
}

/// A 429 makes the account wait (every request, moves in all its games included); a game lost
/// on time meanwhile is recorded with a `rate_limited` fault, which calibration leaves out.
/// The same clock without the 429 is no flag.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loss_on_time_during_a_429_pause_is_recorded_as_rate_limited_and_not_calibrated() {
    bounded(async {
        let bot = "pause1";
        let options = Options {
            rate_limit_pause: Duration::from_secs(3),
            ..Options::default()
        };
        let (sb, _dir, run) = playing(bot, &["Alice"], &options).await;
        let id = human_game(&sb, "alice", bot).await;
        let low_clock = |sb: &Sandbox| {
            sb.with_world(|w| {
                let game = &mut w.games.get_mut(&id).unwrap().game;
                game.set_remaining(Color::Black, 1_500, tokio::time::Instant::now());
            })
        };
        play(&sb, "alice", &id, "e2e4");
        wait_plies(&sb, &id, 2).await;

        // A second and a half on our clock is plenty for a level-1 move ...
        low_clock(&sb);
        play(&sb, "alice", &id, "d2d4");
        let so_far = wait_plies(&sb, &id, 4).await;
        assert!(!sb.game(&id).unwrap().is_over());

        // ... but not when the account must first wait out a 429 pause. (Any legal move: the
        // level's reply may have given check.)
        low_clock(&sb);
        sb.fail_next(bot, 1, 429);
        let position = Game::from_uci_moves(None, &so_far.moves, false).unwrap();
        let reply = position.to_uci(position.legal_moves()[0]);
        play(&sb, "alice", &id, &reply);
        let game = wait_over(&sb, &id).await;
        assert_eq!(
            (game.status, game.winner),
            (GameStatus::Outoftime, Some(Color::White))
        );
        assert!(
            sb.request_stats(bot).faulted >= 1,
            "the 429 was never served"
        );
        wait_recorded(&run.results, &id).await;
        let records = drain(run).await;
        let r = record_of(&records, &id);
        assert_eq!((r.result, r.status.as_str()), (Outcome::Loss, "outoftime"));
        assert_eq!(r.fault_kind(), Some(fault::RATE_LIMITED), "{r:?}");

        let filter = Filter::new(
            r.perf.as_str(),
            ladder::calibration::select::Opponents::All,
            Versions::Range(r.header.coefficients_version, r.header.coefficients_version),
        );
        let selection = select(std::slice::from_ref(r), &filter);
        assert_eq!((selection.used, selection.excluded.fault), (0, 1));
        // Without the fault the very same game would count: the fault is what leaves it out.
        let mut clean = r.clone();
        clean.fault = None;
        assert_eq!(select(&[clean], &filter).used, 1);
    })
    .await;
}

/// The sandbox's game export behaves like Lichess's: PGN unless JSON is asked for, and an
/// ongoing game's moves lag three plies (the settling above only trusts finished exports).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_game_export_is_pgn_by_default_and_lags_while_the_game_runs() {
    bounded(async {
        let bot = "export1";
        let (sb, _dir, run) = playing(bot, &["Alice"], &Options::default()).await;
        let id = human_game(&sb, "alice", bot).await;
        play(&sb, "alice", &id, "e2e4");
        wait_plies(&sb, &id, 2).await;
        play(&sb, "alice", &id, "d2d4");
        wait_plies(&sb, &id, 4).await;

        let url = format!("{}/game/export/{id}", sb.base_url());
        let pgn = reqwest::get(&url).await.unwrap().text().await.unwrap();
        assert!(pgn.starts_with("[Event \"Casual Bullet game\"]"), "{pgn}");
        assert!(
            pgn.contains("[Result \"*\"]") && pgn.contains("1. e4 *"),
            "{pgn}"
        );
        let client = sb.client(bot).unwrap();
        let ongoing = client.export_game(&id).await.unwrap();
        assert_eq!(ongoing.status, GameStatus::Started);
        assert_eq!(ongoing.moves.as_deref(), Some("e4"), "4 plies, 3 held back");

        sb.act("alice", &id, Action::Resign).unwrap();
        let over = client.export_game(&id).await.unwrap();
        assert_eq!(over.status, GameStatus::Resign);
        assert_eq!(over.moves.unwrap().split_whitespace().count(), 4);
        assert!(
            client
                .export_game(&GameId::new("nosuchgame"))
                .await
                .is_err_and(|e| matches!(e, ladder::lichess::LichessError::NotFound { .. }))
        );
        drain(run).await;
    })
    .await;
}
