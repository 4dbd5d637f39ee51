//! The account side of reliability, end to end against the sandbox over real HTTP on 127.0.0.1:
//! a revoked token or a closed account never stops the other accounts and is retried until it
//! works again; Lichess down at start-up is waited out; lowering `max_games` by reload takes
//! effect without drift; the daily bot-game limit counts across restarts, and Lichess's 429 on
//! accept for it closes bot challenges without delaying running games; challenge answers take
//! no pace, and a 429 silences only the account that got it, for as long as it asks; one
//! client per account, so many reconnects never put two requests of a token in flight; an
//! anonymous challenger is answered; each account names itself in the User-Agent.

mod common {
    pub mod challenges;
    pub mod config;
    pub mod daemon;
    pub mod files;
    pub mod logs;
    pub mod sandbox;
}

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::challenges::{as_white, declined_reason, game_under_way, game_under_way_with};
use common::config::{account_table, ladder_toml};
use common::daemon::{bounded_by, launch, spec};
use common::files::shipped_coefficients;
use common::logs::{capture_logs, logs, wait_log, wait_log_after};
use common::sandbox::{challenger, quick, sandbox_config};
use ladder::config::Config;
use ladder::daemon::supervisor::ClientFactory;
use ladder::daemon::{DaemonHandle, DaemonSpec};
use ladder::levels::Coefficients;
use ladder::lichess::{
    BackoffPolicy, ClientConfig, GameId, GameStatus, PacingPolicy, ReconnectPolicy, RetryPolicy,
    TimeControl,
};
use ladder::results::{Outcome, ResultsLog, sample_record};
use ladder::sandbox::{
    AccountConfig, Action, ChallengeSpec, ChallengerConfig, Sandbox, SandboxConfig, sandbox_token,
};

// ---------------------------------------------------------------- harness

const TEST_TIMEOUT: Duration = Duration::from_secs(90);

async fn bounded<F: std::future::Future<Output = ()>>(f: F) {
    bounded_by(TEST_TIMEOUT, f).await
}

/// The bots and the challengers, the sandbox's quick settings.
fn config_with(bots: &[&str], challengers: &[ChallengerConfig]) -> SandboxConfig {
    let mut config = sandbox_config(bots);
    config.challengers = challengers.to_vec();
    config
}

async fn sandbox(bots: &[&str], challengers: &[ChallengerConfig]) -> Sandbox {
    Sandbox::start(config_with(bots, challengers))
        .await
        .unwrap()
}

fn config_text(url: &str, bots: &[&str], max_games: usize) -> String {
    let mut text = ladder_toml(
        url,
        &format!(
            "search_threads = 1\nmax_games = {max_games}\nabort_after_s = 60\n\
             shutdown_grace_s = 30\nstatus_interval_s = 1\n"
        ),
        "accept_bots = true\nmin_initial_s = 30\nmax_games = 4\nmax_games_per_opponent = 2\n",
    );
    for bot in bots {
        text.push_str(&account_table(bot, "LADDER_TEST_UNUSED", 1, ""));
    }
    text
}

/// Short timeouts, pauses and retries, so faults resolve within a test.
fn tuned(c: ClientConfig) -> ClientConfig {
    let mut c = quick(c);
    c.backoff = BackoffPolicy {
        cap: Duration::from_millis(300),
        max_attempts: 3,
        ..c.backoff
    };
    c.account_retry = RetryPolicy {
        first: Duration::from_millis(300),
        cap: Duration::from_secs(1),
    };
    c.pacing = PacingPolicy {
        interval: Duration::from_millis(10),
        burst: 50,
    };
    c
}

/// [`tuned`], with event-stream reconnects after 50-200 ms whatever happened before.
fn quick_reconnects(c: ClientConfig) -> ClientConfig {
    let mut c = tuned(c);
    c.stream_reconnect = ReconnectPolicy {
        base: Duration::from_millis(50),
        cap: Duration::from_millis(200),
        stable_after: Duration::from_secs(60),
    };
    c
}

/// The sandbox's conventional tokens (`lip_sandbox_<name>`): they work before the sandbox
/// itself is up.
fn clients(tune: fn(ClientConfig) -> ClientConfig) -> ClientFactory {
    Arc::new(move |account, base_url| {
        Ok(tune(ClientConfig::new(
            base_url,
            sandbox_token(&account.username),
        )))
    })
}

async fn start_daemon(
    url: &str,
    dir: &Path,
    bots: &[&str],
    max_games: usize,
    tune: fn(ClientConfig) -> ClientConfig,
) -> (DaemonHandle, PathBuf) {
    let config_path = dir.join("accounts.toml");
    std::fs::write(&config_path, config_text(url, bots, max_games)).unwrap();
    let coefficients = shipped_coefficients(dir);
    let run = launch(DaemonSpec {
        coefficients: Coefficients::load(&coefficients).unwrap(),
        reload_from_disk: true,
        ..spec(Config::load(&config_path).unwrap(), clients(tune), dir)
    })
    .await
    .expect("the daemon starts whatever Lichess says about its accounts");
    (run.daemon, run.results)
}

async fn stop_now(daemon: DaemonHandle) {
    daemon.shutdown().await;
    daemon.shutdown().await;
    daemon.join().await.unwrap();
}

async fn stream_open(sb: &Sandbox, bot: &str, timeout: Duration) {
    sb.wait_event_stream(bot, timeout).await.unwrap();
}

/// Lichess back: the event stream of `bot` opens within 30 s and Rita's game is under way;
/// then the daemon stops.
async fn plays_when_back(sb: &Sandbox, bot: &str, daemon: DaemonHandle) {
    stream_open(sb, bot, Duration::from_secs(30)).await;
    game_under_way_with(sb, "Rita", bot, 60).await;
    stop_now(daemon).await;
}

/// A challenge (`from` white) that the daemon declines with `later`.
async fn later(sb: &Sandbox, from: &str, to: &str) {
    let id = as_white(sb, from, to);
    assert_eq!(declined_reason(sb, &id).await, "later", "{from} -> {to}");
}

// ---------------------------------------------------------------- one bad account

/// One account's token is revoked and another account is closed while the daemon runs: the
/// third keeps playing; the log (ERROR) and the status line name both, with the reason and no
/// token; the revoked one plays again by itself once its token works again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoked_and_closed_accounts_never_stop_the_others_and_recover_by_themselves() {
    capture_logs();
    bounded(async {
        let bots = ["okay1", "revoked1", "closed1"];
        let sb = sandbox(&bots, &[challenger("Rita")]).await;
        let dir = tempfile::tempdir().unwrap();
        let (daemon, _) = start_daemon(sb.base_url(), dir.path(), &bots, 20, tuned).await;
        for bot in bots {
            stream_open(&sb, bot, Duration::from_secs(10)).await;
        }
        assert!(sb.revoke_token("revoked1"));
        assert!(sb.close_account("closed1"));

        let error = |bot: &'static str, reason: &'static str| {
            move |l: &str| l.contains("ERROR") && l.contains(bot) && l.contains(reason)
        };
        wait_log(
            "naming revoked1",
            Duration::from_secs(10),
            error("revoked1", "token was rejected"),
        )
        .await;
        wait_log(
            "naming closed1",
            Duration::from_secs(10),
            error("closed1", "account is closed"),
        )
        .await;
        let status = wait_log("with both bad accounts", Duration::from_secs(10), |l| {
            l.contains("status: ")
                && l.contains("revoked1 (token rejected, retry in")
                && l.contains("closed1 (account closed, retry in")
        })
        .await;
        assert!(!status.contains("okay1 ("), "okay1 is fine: {status}");

        // The healthy account plays on.
        game_under_way_with(&sb, "Rita", "okay1", 60).await;

        // Retried with backoff while revoked (several checks), then it recovers by itself.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let checks = logs()
            .lines()
            .filter(|l| l.contains("ERROR") && l.contains("revoked1"))
            .count();
        assert!(checks >= 2, "revoked1 was checked {checks} times");
        assert!(sb.restore_token("revoked1"));
        stream_open(&sb, "revoked1", Duration::from_secs(10)).await;
        wait_log("saying revoked1 plays again", Duration::from_secs(5), |l| {
            l.contains("revoked1") && l.contains("plays again")
        })
        .await;
        game_under_way_with(&sb, "Rita", "revoked1", 60).await;
        // The closed account is still retried, never playing.
        assert!(!sb.with_world(|w| w.event_streams.contains_key("closed1")));

        stop_now(daemon).await;
        let all = logs();
        for bot in bots {
            assert!(
                !all.contains(sandbox_token(bot).expose()),
                "a token was logged"
            );
        }
    })
    .await;
}

/// Lichess not listening yet when the daemon starts (connection refused): the daemon waits and
/// plays once it is up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lichess_not_listening_at_start_is_waited_out() {
    capture_logs();
    bounded(async {
        let bots = ["early1"];
        // A port nobody listens on (yet).
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("http://127.0.0.1:{port}");
        let dir = tempfile::tempdir().unwrap();
        let (daemon, _) = start_daemon(&url, dir.path(), &bots, 20, tuned).await;
        wait_log("about the outage", Duration::from_secs(15), |l| {
            l.contains("early1") && l.contains("cannot reach Lichess")
        })
        .await;
        let sb = Sandbox::start_on(port, config_with(&bots, &[challenger("Rita")]))
            .await
            .unwrap();
        plays_when_back(&sb, "early1", daemon).await;
    })
    .await;
}

/// Lichess answering 503 to everything at start: the daemon waits (the status line says why)
/// and plays once it answers again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lichess_answering_503_at_start_is_waited_out() {
    capture_logs();
    bounded(async {
        let bots = ["down1"];
        let sb = sandbox(&bots, &[challenger("Rita")]).await;
        sb.set_outage(Some(503));
        let dir = tempfile::tempdir().unwrap();
        let (daemon, _) = start_daemon(sb.base_url(), dir.path(), &bots, 20, tuned).await;
        wait_log("with the outage", Duration::from_secs(15), |l| {
            l.contains("status: ") && l.contains("down1 (Lichess unreachable, retry in")
        })
        .await;
        sb.set_outage(None);
        plays_when_back(&sb, "down1", daemon).await;
    })
    .await;
}

// ---------------------------------------------------------------- max_games on reload

/// Reload lowering `max_games` below the running count: no new game starts until fewer games
/// than the new cap run; raising it again admits exactly up to the new value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lowering_max_games_by_reload_waits_for_games_to_end_and_raising_never_exceeds_it() {
    capture_logs();
    bounded(async {
        let bots = ["cap1", "cap2"];
        let humans = [
            "Alice", "Bob", "Cara", "Dora", "Eve", "Fred", "Gina", "Hank", "Ivan",
        ];
        let mut config = config_with(&bots, &[]);
        config
            .accounts
            .extend(humans.iter().map(|h| AccountConfig::human(h)));
        let sb = Sandbox::start(config).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (daemon, _) = start_daemon(sb.base_url(), dir.path(), &bots, 3, tuned).await;
        stream_open(&sb, "cap1", Duration::from_secs(10)).await;
        stream_open(&sb, "cap2", Duration::from_secs(10)).await;

        // Three games in which the humans (white) never move: they run until we end them.
        let mut running = Vec::new();
        for (human, bot) in [("alice", "cap1"), ("bob", "cap1"), ("cara", "cap2")] {
            let id = as_white(&sb, human, bot).game_id();
            sb.wait_until("the game starts", Duration::from_secs(10), |w| {
                w.summary(&id)
                    .filter(|g| g.status == GameStatus::Started)
                    .map(|_| ())
            })
            .await
            .unwrap();
            running.push((human, id));
        }

        // Rewrites the file with `max_games = to` and reloads until the daemon applies it.
        let reload_cap = |from: usize, to: usize| {
            std::fs::write(
                dir.path().join("accounts.toml"),
                config_text(sb.base_url(), &bots, to),
            )
            .unwrap();
            let daemon = &daemon;
            async move {
                daemon.reload().await;
                let change = format!("max_games {from} -> {to}");
                wait_log(&change, Duration::from_secs(5), |l| l.contains(&change)).await;
            }
        };
        reload_cap(3, 1).await;

        // Ends the oldest running game and waits until the daemon counts `left` games (the
        // status line, every second, counts the games the accounts still hold).
        let end_one = |running: &mut Vec<(&str, GameId)>, left: usize| {
            let (human, id) = running.remove(0);
            let offset = logs().len();
            sb.act(human, &id, Action::Abort).unwrap();
            async move {
                wait_log_after(offset, "with fewer games", Duration::from_secs(10), |l| {
                    l.contains("cap1") && l.contains(&format!("status: {left} game"))
                })
                .await;
            }
        };
        later(&sb, "dora", "cap2").await; // 3 running, cap 1
        end_one(&mut running, 2).await;
        later(&sb, "eve", "cap1").await; // 2 running, cap 1
        end_one(&mut running, 1).await;
        later(&sb, "fred", "cap1").await; // 1 running, cap 1
        end_one(&mut running, 0).await;
        let accepted = as_white(&sb, "gina", "cap2").game_id(); // 0 running, cap 1
        sb.wait_until("gina's game starts", Duration::from_secs(10), |w| {
            w.summary(&accepted).map(|_| ())
        })
        .await
        .unwrap();

        reload_cap(1, 2).await;
        let second = as_white(&sb, "hank", "cap1").game_id();
        sb.wait_until("hank's game starts", Duration::from_secs(10), |w| {
            w.summary(&second).map(|_| ())
        })
        .await
        .unwrap();
        later(&sb, "ivan", "cap1").await; // 2 running, cap 2: never more than configured

        let started = sb
            .games()
            .iter()
            .filter(|g| g.status == GameStatus::Started)
            .count();
        assert_eq!(started, 2);
        stop_now(daemon).await;
    })
    .await;
}

// ---------------------------------------------------------------- accounts removed and added back

/// An account removed by reload finishes its game and stops; added back while it still plays,
/// it starts again once that game is over, and added back after it stopped, it starts at once:
/// either way it takes challenges again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_account_removed_and_added_back_by_reloads_plays_again() {
    capture_logs();
    bounded(async {
        let bots = ["stay1", "back1"];
        let mut config = config_with(&bots, &[challenger("Rita")]);
        config.accounts.push(AccountConfig::human("Alice"));
        let sb = Sandbox::start(config).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (daemon, _) = start_daemon(sb.base_url(), dir.path(), &bots, 20, tuned).await;
        stream_open(&sb, "stay1", Duration::from_secs(10)).await;
        stream_open(&sb, "back1", Duration::from_secs(10)).await;
        let write_config = |bots: &[&str]| {
            std::fs::write(
                dir.path().join("accounts.toml"),
                config_text(sb.base_url(), bots, 20),
            )
            .unwrap()
        };
        let reload_and_wait = |what: &'static str| {
            let daemon = &daemon;
            let offset = logs().len();
            async move {
                daemon.reload().await;
                wait_log_after(offset, what, Duration::from_secs(10), |l| {
                    l.contains("back1") && l.contains(what)
                })
                .await;
            }
        };

        // Alice (white) never moves: back1 still plays her when it is removed and added back.
        let held = as_white(&sb, "alice", "back1").game_id();
        sb.wait_until("alice's game starts", Duration::from_secs(10), |w| {
            w.summary(&held)
                .filter(|g| g.status == GameStatus::Started)
                .map(|_| ())
        })
        .await
        .unwrap();
        write_config(&["stay1"]);
        reload_and_wait("account removed").await;
        write_config(&bots);
        let offset = logs().len();
        daemon.reload().await;
        wait_log_after(offset, "the reload", Duration::from_secs(10), |l| {
            l.contains("reload: coefficients for new games")
        })
        .await;
        let offset = logs().len();
        sb.act("alice", &held, Action::Abort).unwrap();
        wait_log_after(
            offset,
            "back1 starting again",
            Duration::from_secs(10),
            |l| l.contains("back1") && l.contains("added back: starting it again"),
        )
        .await;
        let game = game_under_way_with(&sb, "Rita", "back1", 60).await;
        sb.act("rita", &game, Action::Resign).unwrap();

        // Removed with no game, it stops; added back, it starts at once.
        write_config(&["stay1"]);
        let offset = logs().len();
        daemon.reload().await;
        wait_log_after(offset, "back1 stopped", Duration::from_secs(10), |l| {
            l.contains("back1") && l.contains("account stopped")
        })
        .await;
        write_config(&bots);
        reload_and_wait("new account started").await;
        game_under_way_with(&sb, "Rita", "back1", 60).await;
        game_under_way_with(&sb, "Rita", "stay1", 60).await;
        stop_now(daemon).await;
    })
    .await;
}

// ---------------------------------------------------------------- Lichess's limits

fn unix_ms_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// 99 bot games in lila's current window in the results log (an earlier run): one more bot
/// game is accepted, the next bot challenge is declined with `later`, a human is still
/// welcome. A bot game of an earlier window (30 h ago: its window closed 6 h ago) does not
/// count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bot_games_stop_at_lichess_daily_limit_counted_across_restarts() {
    capture_logs();
    bounded(async {
        let bots = ["botday1"];
        let mut robo = challenger("RoboRita");
        robo.title = Some("BOT".into());
        let mut robo2 = challenger("RoboRon");
        robo2.title = Some("BOT".into());
        let sb = sandbox(&bots, &[robo, robo2, challenger("Rita")]).await;
        let dir = tempfile::tempdir().unwrap();
        {
            let mut log = ResultsLog::open(&dir.path().join("results.jsonl")).unwrap();
            let now = unix_ms_now();
            for i in 0..99 {
                let mut r = sample_record(&format!("old{i:03}"), Outcome::Draw);
                r.header.account = "botday1".into();
                r.opponent.bot = true;
                r.started_at_ms = now - i;
                r.finished_at_ms = now;
                log.append(&r).unwrap();
            }
            // A human game and a bot game of an earlier window do not count.
            let mut human = sample_record("human0", Outcome::Win);
            human.header.account = "botday1".into();
            human.started_at_ms = now;
            log.append(&human).unwrap();
            let mut old = sample_record("yday0", Outcome::Win);
            old.header.account = "botday1".into();
            old.opponent.bot = true;
            old.started_at_ms = now - 30 * 3_600_000;
            log.append(&old).unwrap();
        }
        let (daemon, _) = start_daemon(sb.base_url(), dir.path(), &bots, 20, tuned).await;
        stream_open(&sb, "botday1", Duration::from_secs(10)).await;
        game_under_way_with(&sb, "RoboRita", "botday1", 60).await;
        let over = sb
            .challenge("RoboRon", "botday1", &ChallengeSpec::clock(60, 0))
            .unwrap()
            .id;
        assert_eq!(declined_reason(&sb, &over).await, "later");
        game_under_way_with(&sb, "Rita", "botday1", 60).await;
        stop_now(daemon).await;
    })
    .await;
}

fn slow_pacing(c: ClientConfig) -> ClientConfig {
    let mut c = tuned(c);
    c.pacing = PacingPolicy {
        interval: Duration::from_secs(2),
        burst: 1,
    };
    c.rate_limit.pause = Duration::from_millis(1500);
    c
}

/// Challenge answers of two accounts take no turns of the pacer of challenge creations (lila
/// limits creations per IP, not answers, and a person's challenge expires in 20 s), and a 429
/// on one account never holds the other's answers. Each account names itself in the
/// User-Agent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn challenge_answers_are_not_held_to_the_creation_pace_nor_to_another_accounts_429() {
    capture_logs();
    bounded(async {
        let bots = ["pace1", "pace2"];
        let sb = sandbox(&bots, &[challenger("Rita"), challenger("Carl")]).await;
        let dir = tempfile::tempdir().unwrap();
        let (daemon, _) = start_daemon(sb.base_url(), dir.path(), &bots, 20, slow_pacing).await;
        stream_open(&sb, "pace1", Duration::from_secs(10)).await;
        stream_open(&sb, "pace2", Duration::from_secs(10)).await;
        let version = env!("CARGO_PKG_VERSION");
        assert_eq!(
            sb.user_agent("pace1").as_deref(),
            Some(format!("ladder/{version} user:pace1").as_str())
        );
        assert_eq!(
            sb.user_agent("pace2").as_deref(),
            Some(format!("ladder/{version} user:pace2").as_str())
        );

        // Correspondence challenges: declined (tooSlow) at once, no game to wait for.
        let corr = ChallengeSpec {
            time_control: TimeControl::Correspondence {
                days_per_turn: Some(3),
            },
            ..ChallengeSpec::clock(60, 0)
        };
        let mut ids = Vec::new();
        for (from, to) in [
            ("Rita", "pace1"),
            ("Carl", "pace2"),
            ("Rita", "pace2"),
            ("Carl", "pace1"),
        ] {
            ids.push(sb.challenge(from, to, &corr).unwrap().id);
        }
        for id in &ids {
            assert_eq!(declined_reason(&sb, id).await, "tooslow");
        }
        let calls = sb.challenge_calls();
        assert_eq!(calls.len(), 4, "{calls:?}");
        let accounts: std::collections::HashSet<&str> =
            calls.iter().map(|(_, a)| a.as_str()).collect();
        assert_eq!(accounts.len(), 2);
        // Held to the creation pace (one call per 2 s) the 4 answers would span 6 s; unpaced
        // they take a few milliseconds.
        let span = calls[3].0 - calls[0].0;
        assert!(span < Duration::from_secs(2), "4 answers took {span:?}");

        // A 429 on pace1's decline pauses pace1 only: pace2 answers at once.
        sb.fail_next("pace1", 1, 429);
        let first = sb.challenge("Rita", "pace1", &corr).unwrap().id;
        sb.wait_until("the 429", Duration::from_secs(5), |w| {
            (w.challenge_calls.len() > 4).then_some(())
        })
        .await
        .unwrap();
        let second = sb.challenge("Carl", "pace2", &corr).unwrap().id;
        assert_eq!(declined_reason(&sb, &second).await, "tooslow");
        assert_eq!(declined_reason(&sb, &first).await, "tooslow");
        let calls = sb.challenge_calls();
        let limited_at = calls[4].0;
        let pace2_at = calls
            .iter()
            .skip(5)
            .find(|(_, a)| a == "pace2")
            .expect("pace2 answered")
            .0;
        assert!(
            pace2_at - limited_at < Duration::from_millis(1000),
            "pace2 answered {:?} after pace1's 429: held by another account's pause",
            pace2_at - limited_at
        );
        let pace1_again = calls
            .iter()
            .skip(5)
            .find(|(_, a)| a == "pace1")
            .expect("pace1 answered after its pause")
            .0;
        assert!(
            pace1_again - limited_at >= Duration::from_millis(1400),
            "pace1 answered again {:?} after its own 429",
            pace1_again - limited_at
        );
        stop_now(daemon).await;
    })
    .await;
}

/// Like `tuned`, with a policy pause of 3 s after a 429: long enough that a pause of the wrong
/// account, or a pause where there should be none, shows.
fn long_pause(c: ClientConfig) -> ClientConfig {
    let mut c = tuned(c);
    c.rate_limit.pause = Duration::from_secs(3);
    c
}

/// An accept held back by a 429 longer than the wait for its `gameStart` (30 s) keeps its
/// slot all the while: a second challenge meanwhile is declined as the busy account's, not
/// accepted too and played over the account's `max_games` when the pause ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accept_held_back_by_a_long_429_keeps_its_slot() {
    capture_logs();
    bounded(async {
        let mut config = config_with(&["hold1"], &[]);
        config
            .accounts
            .extend(["Alice", "Bob"].iter().map(|h| AccountConfig::human(h)));
        // People's challenges stay open while their page is (the sandbox's 20 s is shorter
        // than the pause).
        config.challenge_timeout = Duration::from_secs(60);
        let sb = Sandbox::start(config).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let config_path = dir.path().join("accounts.toml");
        let mut text = ladder_toml(
            sb.base_url(),
            "search_threads = 1\nmax_games = 20\n",
            "accept_bots = true\nmin_initial_s = 30\nmax_games = 1\n",
        );
        text.push_str(&account_table("hold1", "LADDER_TEST_UNUSED", 1, ""));
        std::fs::write(&config_path, text).unwrap();
        let run = launch(DaemonSpec {
            coefficients: Coefficients::load(&shipped_coefficients(dir.path())).unwrap(),
            ..spec(
                Config::load(&config_path).unwrap(),
                clients(tuned),
                dir.path(),
            )
        })
        .await
        .unwrap();
        stream_open(&sb, "hold1", Duration::from_secs(10)).await;
        sb.rate_limit_next("hold1", 1, Duration::from_secs(36));
        let first = as_white(&sb, "alice", "hold1").game_id();
        tokio::time::sleep(Duration::from_secs(32)).await;
        // The accept still waits out the pause: Bob meets a busy account.
        later(&sb, "bob", "hold1").await;
        sb.wait_until("alice's game starts", Duration::from_secs(10), |w| {
            w.summary(&first).map(|_| ())
        })
        .await
        .unwrap();
        stop_now(run.daemon).await;
    })
    .await;
}

/// A 429 that asks for 6 s (the policy's pause being 3 s) silences its account for the whole
/// 6 s — its health check after a dropped event stream included — while the other account
/// answers a challenge at once and plays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_silences_only_its_own_account_for_as_long_as_it_asks() {
    capture_logs();
    bounded(async {
        let bots = ["quiet1", "loud2"];
        let sb = Sandbox::start(config_with(
            &bots,
            &[challenger("Rita"), challenger("Carl")],
        ))
        .await
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (daemon, _) = start_daemon(sb.base_url(), dir.path(), &bots, 20, long_pause).await;
        stream_open(&sb, "quiet1", Duration::from_secs(10)).await;
        stream_open(&sb, "loud2", Duration::from_secs(10)).await;
        let asked = Duration::from_secs(6);
        sb.rate_limit_next("quiet1", 1, asked);
        // A correspondence challenge: quiet1's decline meets the 429.
        let corr = ChallengeSpec {
            time_control: TimeControl::Correspondence {
                days_per_turn: Some(3),
            },
            ..ChallengeSpec::clock(60, 0)
        };
        let first = sb.challenge("Rita", "quiet1", &corr).unwrap().id;
        let limited_at = sb
            .wait_until("quiet1's 429", Duration::from_secs(5), |w| {
                w.served_faults
                    .iter()
                    .find(|f| f.account == "quiet1" && f.status == 429)
                    .map(|f| f.at)
            })
            .await
            .unwrap();
        // quiet1 must check itself again (a new event stream starts with a health check).
        sb.drop_event_stream("quiet1");
        // loud2 answers at once and plays.
        let game = as_white(&sb, "Carl", "loud2").game_id();
        game_under_way(&sb, &game, Duration::from_secs(5)).await;
        let answered_at = sb
            .challenge_calls()
            .iter()
            .find(|(at, a)| a == "loud2" && *at > limited_at)
            .expect("loud2 answered")
            .0;
        assert!(
            answered_at - limited_at < Duration::from_millis(2000),
            "loud2 answered {:?} after quiet1's 429",
            answered_at - limited_at
        );
        // quiet1 asks nothing of Lichess for the whole wait, then answers and plays on.
        assert_eq!(declined_reason(&sb, &first).await, "tooslow");
        stream_open(&sb, "quiet1", Duration::from_secs(10)).await;
        let after: Vec<Duration> = sb
            .requests_of("quiet1")
            .into_iter()
            .filter(|(at, _)| *at > limited_at)
            .map(|(at, _)| at - limited_at)
            .collect();
        assert!(!after.is_empty());
        assert!(
            after.iter().all(|&d| d >= asked),
            "quiet1 called Lichess within the {asked:?} its 429 asked for: {after:?}"
        );
        stop_now(daemon).await;
    })
    .await;
}

/// Lichess refuses an accept with its 429 for the bot-game limit (`bot.vsBot.day`, an hour
/// left): no pause follows — the running game against a person goes on move after move —
/// the refused challenge and further bot challenges are declined with `later`, and people are
/// still welcome.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bot_limit_answer_closes_bot_challenges_and_never_delays_running_games() {
    capture_logs();
    bounded(async {
        let bots = ["cap1"];
        let mut robo = challenger("RoboRita");
        robo.title = Some("BOT".into());
        let mut robo2 = challenger("RoboRon");
        robo2.title = Some("BOT".into());
        let sb = Sandbox::start(config_with(
            &bots,
            &[robo, robo2, challenger("Rita"), challenger("Carl")],
        ))
        .await
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (daemon, _) = start_daemon(sb.base_url(), dir.path(), &bots, 20, long_pause).await;
        stream_open(&sb, "cap1", Duration::from_secs(10)).await;
        let human = as_white(&sb, "Rita", "cap1").game_id();
        game_under_way(&sb, &human, Duration::from_secs(10)).await;
        sb.bot_limit_reached("cap1", Duration::from_secs(3600));
        let log_at = logs().len();
        let refused = as_white(&sb, "RoboRita", "cap1");
        wait_log_after(
            log_at,
            "the bot-game limit refusal",
            Duration::from_secs(10),
            |l| l.contains("refused the accept for the bot-game limit"),
        )
        .await;
        let plies = sb.game(&human).unwrap().moves.len();
        // A pause of the account (3 s here, a minute on Lichess) would hold these moves.
        sb.wait_until(
            "the running game goes on",
            Duration::from_millis(2500),
            |w| {
                w.summary(&human)
                    .filter(|g| g.moves.len() >= plies + 2 || g.is_over())
                    .map(|_| ())
            },
        )
        .await
        .unwrap();
        let over = sb
            .challenge("RoboRon", "cap1", &ChallengeSpec::clock(60, 0))
            .unwrap()
            .id;
        assert_eq!(declined_reason(&sb, &over).await, "later");
        // The challenge whose accept Lichess refused is answered too, not left to expire.
        assert_eq!(declined_reason(&sb, &refused).await, "later");
        let person = as_white(&sb, "Carl", "cap1").game_id();
        game_under_way(&sb, &person, Duration::from_secs(10)).await;
        stop_now(daemon).await;
    })
    .await;
}

/// One client per account for the daemon's lifetime: the event stream is dropped ten
/// times while two games run and every response is slowed (so two requests in flight at once
/// would be seen): no two requests of the token ever overlap, and the games go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_stream_reconnects_never_put_two_requests_of_one_token_in_flight() {
    capture_logs();
    bounded(async {
        let bots = ["onec1"];
        // People who take their time: the games outlast the reconnects. The reconnect waits
        // are kept short: ten drops in a row would otherwise grow them past the test's patience
        // (a stream that closes young never starts them over).
        let slow = |name: &str| {
            let mut c = challenger(name);
            c.think_time = Duration::from_millis(300);
            c
        };
        let sb = Sandbox::start(config_with(&bots, &[slow("Rita"), slow("Carl")]))
            .await
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (daemon, _) =
            start_daemon(sb.base_url(), dir.path(), &bots, 20, quick_reconnects).await;
        stream_open(&sb, "onec1", Duration::from_secs(10)).await;
        let a = as_white(&sb, "Rita", "onec1").game_id();
        let b = as_white(&sb, "Carl", "onec1").game_id();
        game_under_way(&sb, &a, Duration::from_secs(10)).await;
        game_under_way(&sb, &b, Duration::from_secs(10)).await;
        sb.delay_responses("onec1", Duration::from_millis(20), None);
        let opens = |w: &ladder::sandbox::World| {
            w.event_stream_opens
                .iter()
                .filter(|(_, account)| account == "onec1")
                .count()
        };
        let plies =
            |sb: &Sandbox| sb.game(&a).unwrap().moves.len() + sb.game(&b).unwrap().moves.len();
        let before = plies(&sb);
        for _ in 0..10 {
            let n = sb.with_world(|w| opens(w));
            sb.drop_event_stream("onec1");
            if let Err(e) = sb
                .wait_until("the event stream reopened", Duration::from_secs(10), |w| {
                    (opens(w) > n).then_some(())
                })
                .await
            {
                let text = logs();
                let ours: Vec<&str> = text.lines().filter(|l| l.contains("onec1")).collect();
                panic!(
                    "{e}; its last log lines:\n{}",
                    ours[ours.len().saturating_sub(40)..].join("\n")
                );
            }
        }
        let stats = sb.request_stats("onec1");
        assert_eq!(
            stats.max_in_flight, 1,
            "two requests of one token at once: {stats:?}"
        );
        assert!(stats.total >= 30, "{stats:?}");
        assert!(plies(&sb) > before, "the games stopped");
        stop_now(daemon).await;
    })
    .await;
}

/// A challenge from a person who is not logged in (`challenger: null`) is read and answered
/// by the policy: declined by default, saying a rated game (one needs an account) is welcome.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anonymous_challenger_is_answered_by_the_policy() {
    capture_logs();
    bounded(async {
        let bots = ["anon1"];
        let mut config = config_with(&bots, &[]);
        config.accounts.push(AccountConfig::human("Alice"));
        let sb = Sandbox::start(config).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (daemon, _) = start_daemon(sb.base_url(), dir.path(), &bots, 20, tuned).await;
        stream_open(&sb, "anon1", Duration::from_secs(10)).await;
        let id = sb
            .challenge_as("Alice", "anon1", &ChallengeSpec::clock(180, 2), true)
            .unwrap()
            .id;
        assert_eq!(declined_reason(&sb, &id).await, "rated");
        stop_now(daemon).await;
    })
    .await;
}

// ---------------------------------------------------------------- ladder check

/// `ladder check` asks about every account, not stopping at the first bad one: each row says
/// what is wrong with that account, and the check fails when any is bad.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_reports_every_bad_account_in_its_row() {
    capture_logs();
    bounded(async {
        let bots = ["fine1", "revoked2", "closed2"];
        let sb = sandbox(&bots, &[]).await;
        sb.revoke_token("revoked2");
        sb.close_account("closed2");
        let dir = tempfile::tempdir().unwrap();
        let mut text = config_text(sb.base_url(), &[], 20);
        for bot in bots {
            let file = dir.path().join(format!("{bot}.token"));
            std::fs::write(&file, sandbox_token(bot).expose()).unwrap();
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
            }
            text.push_str(&format!(
                "\n[[accounts]]\nusername = \"{bot}\"\ntoken_file = \"{}\"\nlevel = 1\n",
                file.display()
            ));
        }
        let config_path = dir.path().join("accounts.toml");
        std::fs::write(&config_path, text).unwrap();
        shipped_coefficients(dir.path());

        let report = ladder::check::check(&config_path, true).await;
        let row = |name: &str| {
            report
                .rows
                .iter()
                .find(|r| r.account == name)
                .unwrap_or_else(|| panic!("no row for {name}: {:?}", report.rows))
                .lichess
                .clone()
        };
        assert!(row("fine1").contains("BOT"), "{}", report.render());
        assert_eq!(row("revoked2"), "token rejected", "{}", report.render());
        assert_eq!(row("closed2"), "account closed", "{}", report.render());
        assert_eq!(report.errors(), 2, "{}", report.render());
        let shown = report.render();
        for bot in bots {
            assert!(!shown.contains(sandbox_token(bot).expose()), "{shown}");
        }
    })
    .await;
}
