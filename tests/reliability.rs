//! What a second reading of the daemon against lila still found (issue 34), end to end against
//! the sandbox over real HTTP on 127.0.0.1: an event stream that closes right after it opens
//! (lila's limit of 30 opens per 10 minutes), a second daemon on the same results log and
//! tokens, the 400 lila answers an accept with when the challenging bot is at its bot-game
//! limit, a claim of victory Lichess refuses at first, and the conversation: chat lines logged,
//! chat commands answered in their room, no goodbye after an abort.

mod common {
    pub mod alice;
    pub mod challenges;
    pub mod config;
    pub mod daemon;
    pub mod logs;
    pub mod sandbox;
    pub mod tokens;
}

use std::path::Path;
use std::time::Duration;

use common::alice::{alice_challenges, alice_leaves_and_is_claimed_against, open_game_with_alice};
use common::challenges::{as_white, declined_reason, game_under_way_with};
use common::config::{account_table, ladder_toml};
use common::daemon::{Running, bounded_by, launch, spec};
use common::logs::{capture_logs, logs, wait_log, wait_log_after};
use common::sandbox::{challenger, quick, sandbox_config};
use common::tokens::token_clients;
use ladder::config::Config;
use ladder::lichess::{
    ChallengeColor, ChatRoom, ClientConfig, GameId, GameStatus, OpenBudgetPolicy, ReconnectPolicy,
};
use ladder::results::{GameRecord, Outcome, read_results};
use ladder::sandbox::{AccountConfig, Action, ChallengeSpec, GameSummary, Sandbox};

const TEST_TIMEOUT: Duration = Duration::from_secs(90);

/// Runs the test `f` with the daemon's logs captured, failing it past [`TEST_TIMEOUT`].
async fn bounded<F: std::future::Future<Output = ()>>(f: F) {
    capture_logs();
    bounded_by(TEST_TIMEOUT, f).await;
}

/// A sandbox with `bots`, scriptable challengers (a name starting with `Robo` is a BOT) and
/// the person Alice.
async fn sandbox(bots: &[&str], challengers: &[&str]) -> Sandbox {
    let mut config = sandbox_config(bots);
    config.accounts.push(AccountConfig::human("Alice"));
    config.challengers.extend(challengers.iter().map(|name| {
        let mut c = challenger(name);
        if name.starts_with("Robo") {
            c.title = Some("BOT".into());
        }
        c
    }));
    Sandbox::start(config).await.unwrap()
}

/// The daemon playing `bots` at level 1 from `dir`, its clients configured by `tune`, aborting
/// a game whose opponent makes no first move in `abort_after_s`.
async fn start_daemon(
    sb: &Sandbox,
    dir: &Path,
    bots: &[&str],
    tune: fn(ClientConfig) -> ClientConfig,
    abort_after_s: u64,
) -> anyhow::Result<Running> {
    let mut text = ladder_toml(
        sb.base_url(),
        &format!(
            "search_threads = 2\nmax_games = 20\nabort_after_s = {abort_after_s}\n\
             shutdown_grace_s = 30\n"
        ),
        "accept_bots = true\nmin_initial_s = 30\nmax_games = 4\nmax_games_per_opponent = 2\n",
    );
    for bot in bots {
        text.push_str(&account_table(
            bot,
            "LADDER_TEST_UNUSED",
            1,
            "goodbye = \"GG {opponent}\"\n",
        ));
    }
    let config = Config::parse(&text, &dir.join("accounts.toml"))?;
    launch(spec(config, token_clients(sb, bots, tune), dir)).await
}

/// The first-move abort (seconds) of the tests that do not wait for one.
const ABORT_AFTER_S: u64 = 20;

/// The sandbox of `bots`, `challengers` and Alice, and the daemon playing `bots` from a new
/// temporary directory (as [`start_daemon`]), once it follows each bot's event stream.
async fn playing(
    bots: &[&str],
    challengers: &[&str],
    tune: fn(ClientConfig) -> ClientConfig,
    abort_after_s: u64,
) -> (Sandbox, tempfile::TempDir, Running) {
    let sb = sandbox(bots, challengers).await;
    let dir = tempfile::tempdir().unwrap();
    let run = start_daemon(&sb, dir.path(), bots, tune, abort_after_s)
        .await
        .unwrap();
    for bot in bots {
        sb.wait_event_stream(bot, Duration::from_secs(10))
            .await
            .unwrap();
    }
    (sb, dir, run)
}

/// Waits until `bot` follows game `id` (its game stream is open in the sandbox).
async fn wait_game_stream(sb: &Sandbox, id: &GameId, bot: &str) {
    sb.wait_until("the bot's game stream", Duration::from_secs(10), |w| {
        w.games
            .get(id)
            .filter(|e| e.streams.contains_key(bot))
            .map(|_| ())
    })
    .await
    .unwrap();
}

async fn stop_now(run: Running) {
    run.daemon.shutdown().await;
    run.daemon.shutdown().await;
    run.daemon.join().await.unwrap();
}

/// The most opens of `opens` (sorted) within any `window`.
fn most_in_window(opens: &[tokio::time::Instant], window: Duration) -> usize {
    (0..opens.len())
        .map(|i| {
            opens[i..]
                .iter()
                .take_while(|&&at| at.duration_since(opens[i]) < window)
                .count()
        })
        .max()
        .unwrap_or(0)
}

// ---------------------------------------------------------------- the flapping stream

/// A budget of 4 opens per 5 s and reconnects that would come every 0.1-0.2 s: the budget
/// holds, whatever the pacing does.
fn small_budget(c: ClientConfig) -> ClientConfig {
    let mut c = quick(c);
    c.event_stream_opens = OpenBudgetPolicy {
        max: 4,
        window: Duration::from_secs(5),
    };
    c.stream_reconnect = ReconnectPolicy {
        base: Duration::from_millis(100),
        cap: Duration::from_millis(200),
        stable_after: Duration::from_secs(60),
    };
    c
}

/// An event stream that closes as soon as it opens (a second process on the token, a proxy)
/// never makes the daemon open it more often than its budget allows (lila: 30 per 10 min,
/// then a 429 that pauses the whole account); once the stream holds again, the account plays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_closes_at_once_is_never_opened_beyond_the_budget() {
    bounded(async {
        let bots = ["flap1"];
        let (sb, _dir, run) = playing(&bots, &["Rita"], small_budget, ABORT_AFTER_S).await;
        let offset = logs().len();
        sb.flap_event_stream("flap1", Duration::from_secs(8));
        tokio::time::sleep(Duration::from_secs(8)).await;
        // The wait for the budget is said.
        wait_log_after(
            offset,
            "of the wait for the open budget",
            Duration::from_secs(1),
            |l| l.contains("before opening it again"),
        )
        .await;
        let opens = sb.event_stream_opens("flap1");
        assert!(
            opens.len() >= 4,
            "the daemon gave up reconnecting: {opens:?}"
        );
        let most = most_in_window(&opens, Duration::from_secs(5));
        assert!(most <= 4, "{most} opens within 5 s (budget 4)");
        // The stream holds again: the account plays.
        sb.wait_event_stream("flap1", Duration::from_secs(10))
            .await
            .unwrap();
        game_under_way_with(&sb, "Rita", "flap1", 60).await;
        stop_now(run).await;
    })
    .await;
}

/// Opening the event stream fails for a while (500s): each retry of an open is an open to lila, so the budget counts the attempts, not the calls (a call retried six times on
/// 5xx was six opens against lila's 30 per 10 minutes); once Lichess answers, the account plays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_of_an_event_stream_open_are_opens_within_the_budget() {
    bounded(async {
        let bots = ["retry1"];
        let (sb, _dir, run) = playing(&bots, &["Rita"], small_budget, ABORT_AFTER_S).await;
        sb.fail_event_stream("retry1", Duration::from_secs(8), 500);
        tokio::time::sleep(Duration::from_secs(8)).await;
        let opens: Vec<tokio::time::Instant> = sb
            .requests_of("retry1")
            .into_iter()
            .filter(|(_, path)| path.contains("/api/stream/event"))
            .map(|(at, _)| at)
            .collect();
        assert!(opens.len() >= 4, "the daemon gave up: {opens:?}");
        let most = most_in_window(&opens, Duration::from_secs(5));
        assert!(most <= 4, "{most} open attempts within 5 s (budget 4)");
        sb.wait_event_stream("retry1", Duration::from_secs(30))
            .await
            .unwrap();
        game_under_way_with(&sb, "Rita", "retry1", 60).await;
        stop_now(run).await;
    })
    .await;
}

/// The reopened stream replays the running game at once, then closes: those events must not
/// start the reconnect waits over. Doubling from 0.5 s, 12 s of flapping see at most 6 opens
/// (0, 0.5, 1, 2, 4, 8 s at the quickest); waits reset by every replay (0.5-1.5 s each) would
/// have made at least 8.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_on_a_stream_that_closes_at_once_does_not_reset_the_waits() {
    bounded(async {
        let bots = ["flap2"];
        let (sb, _dir, run) = playing(&bots, &["Rita"], quick, ABORT_AFTER_S).await;
        // A running game: every reopened stream replays its gameStart.
        game_under_way_with(&sb, "Rita", "flap2", 600).await;
        let before = sb.event_stream_opens("flap2").len();
        sb.flap_event_stream("flap2", Duration::from_secs(12));
        tokio::time::sleep(Duration::from_secs(12)).await;
        let during = sb.event_stream_opens("flap2").len() - before;
        assert!(
            (2..=6).contains(&during),
            "{during} opens in 12 s of a stream that closes at once"
        );
        stop_now(run).await;
    })
    .await;
}

// ---------------------------------------------------------------- one daemon per results log

/// A second daemon on the same results log (and so the same tokens' files) is refused at
/// start with an error naming the process that holds them; the first plays on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_daemon_on_the_same_results_log_is_refused_naming_the_first() {
    bounded(async {
        let bots = ["twice1"];
        let (sb, dir, first) = playing(&bots, &["Rita"], quick, ABORT_AFTER_S).await;
        let err = match start_daemon(&sb, dir.path(), &bots, quick, ABORT_AFTER_S).await {
            Ok(_) => panic!("a second daemon started on the same results log"),
            Err(e) => format!("{e:#}"),
        };
        assert!(
            err.contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
        assert!(err.contains("results.jsonl"), "{err}");
        // The first daemon plays.
        game_under_way_with(&sb, "Rita", "twice1", 60).await;
        stop_now(first).await;
        // Once the first has stopped, the log is free.
        let again = start_daemon(&sb, dir.path(), &bots, quick, ABORT_AFTER_S)
            .await
            .unwrap();
        stop_now(again).await;
    })
    .await;
}

// ---------------------------------------------------------------- the challenger's bot limit

/// lila answers the accept of a bot's challenge with HTTP 400 (`ratelimit.key`
/// `bot.vsBot.day`) when the *challenger* played its 100 bot games today: the challenge is
/// declined (`later`) at once instead of left to expire, and our own bot games go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accept_refused_for_the_challengers_bot_limit_declines_the_challenge() {
    bounded(async {
        let bots = ["lim1"];
        let (sb, _dir, run) = playing(&bots, &["RoboRita", "RoboRon"], quick, ABORT_AFTER_S).await;
        sb.challenger_bot_limit_reached("lim1", Duration::from_secs(3600));
        let refused = as_white(&sb, "RoboRita", "lim1");
        assert_eq!(declined_reason(&sb, &refused).await, "later");
        // Refused for good: no longer an open game that settling asks Lichess about.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while ladder::daemon::open_games::read_open(&run.results)
            .unwrap()
            .iter()
            .any(|g| g.game_id == refused.game_id())
        {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the refused accept is still an open game"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // The limit was the challenger's: another bot's challenge is played.
        sb.clear_faults("lim1");
        game_under_way_with(&sb, "RoboRon", "lim1", 60).await;
        stop_now(run).await;
    })
    .await;
}

// ---------------------------------------------------------------- a refused claim

/// Alice leaves and Lichess refuses the first two claims (our turn, or not allowed yet): the
/// bot claims again until Lichess allows it, instead of waiting out her whole clock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_claim_is_tried_again_until_lichess_allows_it() {
    bounded(async {
        let bots = ["reclaim1"];
        let (sb, _dir, run) = playing(&bots, &[], quick, ABORT_AFTER_S).await;
        let id = open_game_with_alice(&sb, "reclaim1").await;
        sb.refuse_next_claims(&id, 2);
        alice_leaves_and_is_claimed_against(&sb, &id, Duration::from_secs(20)).await;
        let record = record_of(&run, &id).await;
        assert_eq!(record.fault_kind(), Some("opponent_gone"), "{record:?}");
        stop_now(run).await;
    })
    .await;
}

/// The record of game `id` in the daemon's results file, once written (it follows the game's
/// end).
async fn record_of(run: &Running, id: &GameId) -> GameRecord {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let records = read_results(std::slice::from_ref(&run.results))
            .map(|r| r.records)
            .unwrap_or_default();
        if let Some(r) = records.into_iter().find(|r| r.game_id == *id) {
            return r;
        }
        assert!(tokio::time::Instant::now() < deadline, "never recorded");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Lichess finds the bot gone (here marked so while the bot's answers are held up) and Alice
/// claims the game on the bot's turn: the record says how it was lost (a fault: no strength
/// in it), not a plain loss that would count against the level.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_claimed_against_the_bot_is_recorded_with_a_fault() {
    bounded(async {
        let bots = ["gone1"];
        let (sb, _dir, run) = playing(&bots, &[], quick, ABORT_AFTER_S).await;
        let id = open_game_with_alice(&sb, "gone1").await;
        // The bot's reply to her next move is held up: it is still its turn when she claims.
        sb.delay_responses(
            "gone1",
            Duration::from_secs(2),
            Some(Duration::from_secs(3)),
        );
        sb.play_move("alice", &id, "d2d4").unwrap();
        sb.set_gone(&id, "gone1", true, Duration::ZERO).unwrap();
        sb.act("alice", &id, Action::ClaimVictory).unwrap();
        let game = sb.game(&id).unwrap();
        assert_eq!(game.status, GameStatus::Timeout, "{game:?}");
        let record = record_of(&run, &id).await;
        assert_eq!(record.result, Outcome::Loss, "{record:?}");
        assert_eq!(record.fault_kind(), Some("claimed_against"), "{record:?}");
        stop_now(run).await;
    })
    .await;
}

/// Alice leaves and comes back before the bot may claim: lila then says nothing (it tells of a
/// return only after an absence long enough to be claimed), so the countdown the bot heard
/// simply stops. The bot claims at most twice (each refused claim reloads her board) and the
/// game goes on; it used to claim every 3 s, twenty times.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_opponent_back_before_the_claim_is_not_claimed_against_again_and_again() {
    bounded(async {
        let bots = ["back1"];
        let (sb, _dir, run) = playing(&bots, &[], quick, ABORT_AFTER_S).await;
        let id = open_game_with_alice(&sb, "back1").await;
        sb.set_gone(&id, "alice", true, Duration::from_secs(2))
            .unwrap();
        tokio::time::sleep(Duration::from_secs(1)).await;
        sb.set_gone(&id, "alice", false, Duration::ZERO).unwrap();
        tokio::time::sleep(Duration::from_secs(12)).await;
        let claims = sb
            .requests_of("back1")
            .into_iter()
            .filter(|(_, path)| path.contains("/claim-"))
            .count();
        assert!(claims <= 2, "{claims} claims");
        assert_eq!(sb.game(&id).unwrap().status, GameStatus::Started);
        stop_now(run).await;
    })
    .await;
}

/// The first-move abort fails (every answer to the bot is a 500 for 4 s, past the client's
/// retries): it is made again after another wait, and the game Alice never moves in ends
/// aborted instead of holding a slot for good (lila never ends such a game by itself).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_first_move_abort_is_made_again() {
    bounded(async {
        let bots = ["abort1"];
        let (sb, _dir, run) = playing(&bots, &[], quick, 2).await;
        let id = alice_challenges(&sb, "abort1", ChallengeColor::White);
        wait_game_stream(&sb, &id, "abort1").await;
        sb.fail_for("abort1", Duration::from_secs(4), 500);
        wait_log("the abort failing", Duration::from_secs(8), |l| {
            l.contains(&format!("game={id}")) && l.contains("abort") && l.contains("trying again")
        })
        .await;
        let games = sb.wait_finished(1, Duration::from_secs(15)).await.unwrap();
        let game = games.iter().find(|g| g.id == id).unwrap();
        assert_eq!(game.status, GameStatus::Aborted, "{game:?}");
        stop_now(run).await;
    })
    .await;
}

// ---------------------------------------------------------------- the conversation

/// Alice challenges `bot` with White and says `text` in `room` once the game has started.
async fn alice_says(sb: &Sandbox, id: &GameId, room: ChatRoom, text: &str) {
    sb.act(
        "alice",
        id,
        Action::Chat {
            room,
            text: text.to_string(),
        },
    )
    .unwrap();
}

/// The lines `who` said in `room` of the game so far.
fn said(sb: &Sandbox, id: &GameId, who: &str, room: ChatRoom) -> Vec<String> {
    lines_of(sb.game(id), who, room)
}

/// The lines `who` said in `room` of `game`.
fn lines_of(game: Option<GameSummary>, who: &str, room: ChatRoom) -> Vec<String> {
    game.map(|g| {
        g.chat
            .iter()
            .filter(|l| l.room == room && l.username.eq_ignore_ascii_case(who))
            .map(|l| l.text.clone())
            .collect()
    })
    .unwrap_or_default()
}

/// `!wait` before her first move gives Alice more time than the first-move abort's 3 s; the
/// answer comes in the room the command came from (`!level` from the spectators' room is
/// answered there, with the level); her lines are in the log with the game's id; an unknown
/// command is answered once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_commands_are_answered_in_their_room_and_wait_delays_the_abort() {
    bounded(async {
        let bots = ["chat1"];
        let (sb, _dir, run) = playing(&bots, &[], quick, 3).await;
        let id = alice_challenges(&sb, "chat1", ChallengeColor::White);
        // Said once the bot follows the game: a line before its stream opens is not its.
        wait_game_stream(&sb, &id, "chat1").await;
        alice_says(&sb, &id, ChatRoom::Player, "!wait").await;
        sb.wait_until("the answer to !wait", Duration::from_secs(5), |w| {
            (!lines_of(w.summary(&id), "chat1", ChatRoom::Player).is_empty()).then_some(())
        })
        .await
        .unwrap();
        assert!(
            said(&sb, &id, "chat1", ChatRoom::Player)[0].contains("take your time"),
            "{:?}",
            said(&sb, &id, "chat1", ChatRoom::Player)
        );
        // Past the 3 s abort: still waiting for her.
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(sb.game(&id).unwrap().status, GameStatus::Started);
        alice_says(&sb, &id, ChatRoom::Spectator, "!level").await;
        let level = sb
            .wait_until("the answer to !level", Duration::from_secs(5), |w| {
                lines_of(w.summary(&id), "chat1", ChatRoom::Spectator)
                    .first()
                    .cloned()
            })
            .await
            .unwrap();
        assert!(level.starts_with("Level 1: aims at "), "{level}");
        tokio::time::sleep(Duration::from_millis(3100)).await;
        alice_says(&sb, &id, ChatRoom::Player, "!xyzzy").await;
        tokio::time::sleep(Duration::from_millis(3100)).await;
        alice_says(&sb, &id, ChatRoom::Player, "!plugh").await;
        tokio::time::sleep(Duration::from_millis(1000)).await;
        let player = said(&sb, &id, "chat1", ChatRoom::Player);
        assert_eq!(
            player.iter().filter(|l| l.contains("do not know")).count(),
            1,
            "{player:?}"
        );
        let tag = format!("game={id}");
        wait_log(
            "with Alice's !wait and the game's id",
            Duration::from_secs(1),
            |l| l.contains(&tag) && l.contains("chat") && l.contains("!wait"),
        )
        .await;
        stop_now(run).await;
    })
    .await;
}

/// An accept still on its way when the daemon is asked to drain: the game it starts has an
/// actor and is played to its end before the daemon exits (lila ends a game nobody plays as
/// `noStart`, against the bot).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accept_in_flight_at_a_drain_gets_its_game_played() {
    bounded(async {
        let bots = ["late1"];
        let (sb, _dir, run) = playing(&bots, &["Rita"], quick, ABORT_AFTER_S).await;
        // Every answer to the bot takes 1.5 s for a while: the accept is in flight.
        sb.delay_responses(
            "late1",
            Duration::from_millis(1500),
            Some(Duration::from_secs(4)),
        );
        let challenge = sb
            .challenge("Rita", "late1", &ChallengeSpec::clock(60, 0))
            .unwrap();
        let id = challenge.id.game_id();
        wait_log("the accept goes out", Duration::from_secs(5), |l| {
            l.contains(challenge.id.as_str()) && l.contains("challenge accepted")
        })
        .await;
        run.daemon.shutdown().await;
        run.daemon.join().await.unwrap();
        let game = sb.game(&id).expect("the accepted challenge became a game");
        assert!(game.is_over(), "{game:?}");
        assert_ne!(game.status, GameStatus::NoStart, "{game:?}");
        assert_ne!(game.status, GameStatus::Aborted, "{game:?}");
        assert!(game.moves.len() >= 2, "the bot never moved: {game:?}");
    })
    .await;
}

/// An account whose check hangs (every answer to it takes a minute; each try times out after
/// 5 s and is tried again) does not hold up a drain of a daemon with no game: it exits at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_account_check_does_not_hold_up_the_shutdown() {
    bounded(async {
        let bots = ["hang1", "fine1"];
        let sb = sandbox(&bots, &[]).await;
        sb.delay_responses("hang1", Duration::from_secs(60), None);
        let dir = tempfile::tempdir().unwrap();
        let run = start_daemon(&sb, dir.path(), &bots, quick, ABORT_AFTER_S)
            .await
            .unwrap();
        sb.wait_event_stream("fine1", Duration::from_secs(10))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_secs(1)).await;
        let asked = std::time::Instant::now();
        run.daemon.shutdown().await;
        run.daemon.join().await.unwrap();
        let took = asked.elapsed();
        assert!(took < Duration::from_secs(4), "the shutdown took {took:?}");
    })
    .await;
}

/// Chat is no move: spectators talking every half second do not keep the bot from aborting a
/// game whose first move never comes (2 s here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spectator_chat_does_not_postpone_the_first_move_abort() {
    bounded(async {
        let bots = ["talk1"];
        let (sb, _dir, run) = playing(&bots, &[], quick, 2).await;
        let id = alice_challenges(&sb, "talk1", ChallengeColor::White);
        let started = tokio::time::Instant::now();
        while !sb.game(&id).is_some_and(|g| g.is_over()) {
            assert!(started.elapsed() < Duration::from_secs(10), "never aborted");
            if sb.game(&id).is_some() {
                alice_says(&sb, &id, ChatRoom::Spectator, "who wins?").await;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        assert_eq!(sb.game(&id).unwrap().status, GameStatus::Aborted);
        stop_now(run).await;
    })
    .await;
}

/// A game the bot aborts (no first move from the opponent) gets no goodbye: there was no game.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_the_bot_aborts_gets_no_goodbye() {
    bounded(async {
        let bots = ["bye1"];
        let (sb, _dir, run) = playing(&bots, &[], quick, 2).await;
        let id = alice_challenges(&sb, "bye1", ChallengeColor::White);
        let games = sb.wait_finished(1, Duration::from_secs(15)).await.unwrap();
        let game = games.iter().find(|g| g.id == id).unwrap();
        assert_eq!(game.status, GameStatus::Aborted, "{game:?}");
        // The record is written before the goodbye would be said: give it time to come.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let lines = said(&sb, &id, "bye1", ChatRoom::Player);
        assert!(lines.iter().all(|l| !l.starts_with("GG")), "{lines:?}");
        stop_now(run).await;
    })
    .await;
}
