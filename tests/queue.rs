//! The challenge queue, against the sandbox over real HTTP on 127.0.0.1: a person who
//! challenges while every slot is busy is not turned away but plays when a slot frees, the
//! oldest first; past the account's `max_waiting`, and for bots, it is an at-once `later`; a
//! challenge canceled while it waits is forgotten.

mod common {
    pub mod config;
    pub mod daemon;
    pub mod logs;
    pub mod one_bot;
    pub mod sandbox;
    pub mod tokens;
}

use std::path::Path;
use std::time::Duration;

use common::config::{account_table, ladder_toml};
use common::daemon::{Running, bounded_by, launch, spec};
use common::logs::{capture_logs, wait_log};
use common::one_bot::one_bot_config;
use common::sandbox::{challenger, quick};
use common::tokens::token_clients;

use ladder::config::Config;
use ladder::lichess::{ChallengeColor, ChallengeId, GameId, GameStatus};
use ladder::results::read_results;
use ladder::sandbox::{Action, ChallengeSpec, Sandbox};

const TEST_TIMEOUT: Duration = Duration::from_secs(90);

/// The sandbox of `bot`, Ann, Bob, Cat, Rita and the bot RoboRita, and the daemon playing
/// `bot` one game at a time with `max_waiting` people allowed to wait, busy with Ann's game
/// (Ann, White, never moves: it runs until she resigns).
async fn busy(bot: &str, max_waiting: usize) -> (Sandbox, tempfile::TempDir, Running, GameId) {
    let mut config = one_bot_config(bot, &["Ann", "Bob", "Cat"]);
    let mut robo = challenger("RoboRita");
    robo.title = Some("BOT".into());
    config.challengers.push(robo);
    let sb = Sandbox::start(config).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let run = start_daemon(&sb, dir.path(), bot, max_waiting).await;
    sb.wait_event_stream(bot, Duration::from_secs(10))
        .await
        .unwrap();
    let first = challenge(&sb, "ann", bot).game_id();
    started(&sb, &first).await;
    (sb, dir, run, first)
}

async fn start_daemon(sb: &Sandbox, dir: &Path, bot: &str, max_waiting: usize) -> Running {
    let text = ladder_toml(
        sb.base_url(),
        "search_threads = 1\nmax_games = 4\nabort_after_s = 60\nshutdown_grace_s = 1\n\
         status_interval_s = 1\n",
        &format!(
            "min_initial_s = 15\nmax_games = 1\naccept_bots = true\nmax_waiting = {max_waiting}\n"
        ),
    ) + &account_table(bot, "LADDER_TEST_UNUSED", 3, "");
    let config = Config::parse(&text, &dir.join("accounts.toml")).unwrap();
    let clients = token_clients(sb, &[bot], quick);
    launch(spec(config, clients, dir)).await.unwrap()
}

/// A casual 3+0 challenge in which `from` plays White (a person here never moves: the game
/// runs until it is resigned).
fn challenge(sb: &Sandbox, from: &str, to: &str) -> ChallengeId {
    let mut spec = ChallengeSpec::clock(180, 0);
    spec.color = ChallengeColor::White;
    sb.challenge(from, to, &spec).unwrap().id
}

async fn started(sb: &Sandbox, id: &GameId) {
    sb.wait_until("the game starts", Duration::from_secs(10), |w| {
        w.summary(id)
            .filter(|g| g.status == GameStatus::Started)
            .map(|_| ())
    })
    .await
    .unwrap();
}

async fn declined_later(sb: &Sandbox, id: &ChallengeId) {
    let key = sb
        .wait_until("the decline", Duration::from_secs(10), |w| {
            w.declined
                .iter()
                .find(|c| c.id == *id)
                .and_then(|c| c.decline_reason_key.clone())
        })
        .await
        .unwrap();
    assert_eq!(key, "later", "{id}");
}

fn is_answered(sb: &Sandbox, id: &ChallengeId) -> bool {
    sb.declined().iter().any(|c| c.id == *id) || sb.games().iter().any(|g| g.id == id.game_id())
}

/// Stops the daemon; the first game, resigned, is in its results.
/// Runs a test with the logs captured, within [`TEST_TIMEOUT`].
async fn bounded(test: impl std::future::Future<Output = ()>) {
    capture_logs();
    bounded_by(TEST_TIMEOUT, test).await;
}

async fn finish(run: Running, first: &GameId) {
    run.daemon.shutdown().await;
    run.daemon.join().await.unwrap();
    let read = read_results(&[run.results]).unwrap();
    assert!(read.records.iter().any(|r| r.game_id == *first));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_who_challenges_while_every_slot_is_busy_plays_when_one_frees() {
    bounded(async {
        let (sb, _dir, run, first) = busy("queue1", 1).await;
        // Bob waits; Cat is one too many; a bot never waits.
        let bob = challenge(&sb, "bob", "queue1");
        wait_log("Bob's challenge waits", Duration::from_secs(5), |l| {
            l.contains(bob.as_str()) && l.contains("waits for one")
        })
        .await;
        let cat = challenge(&sb, "cat", "queue1");
        declined_later(&sb, &cat).await;
        let robo = challenge(&sb, "RoboRita", "queue1");
        declined_later(&sb, &robo).await;
        assert!(
            !is_answered(&sb, &bob),
            "Bob was answered while the slot was busy"
        );
        // The status line counts him as waiting.
        wait_log(
            "the status line with Bob waiting",
            Duration::from_secs(5),
            |l| l.contains("status:") && l.contains("queue1 0 (1 playing, 1 queued)"),
        )
        .await;

        // The slot frees: Bob's challenge is accepted and his game starts.
        sb.act("ann", &first, Action::Resign).unwrap();
        started(&sb, &bob.game_id()).await;
        finish(run, &first).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_challenge_canceled_while_it_waits_is_forgotten() {
    bounded(async {
        let (sb, _dir, run, first) = busy("queue2", 2).await;
        let bob = challenge(&sb, "bob", "queue2");
        let cat = challenge(&sb, "cat", "queue2");
        wait_log("both wait", Duration::from_secs(5), |l| {
            l.contains(cat.as_str()) && l.contains("waits for one")
        })
        .await;
        sb.with_world(|w| w.cancel_challenge(Some("bob"), &bob))
            .unwrap();
        wait_log(
            "Bob's challenge is forgotten",
            Duration::from_secs(5),
            |l| l.contains(bob.as_str()) && l.contains("forgotten"),
        )
        .await;

        // The slot frees: Cat, the one still waiting, plays; Bob's game never exists.
        sb.act("ann", &first, Action::Resign).unwrap();
        started(&sb, &cat.game_id()).await;
        assert!(sb.game(&bob.game_id()).is_none());
        finish(run, &first).await;
    })
    .await;
}
