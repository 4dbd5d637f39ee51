//! The real `ladder run` process under the signals systemd sends it, against the sandbox on
//! 127.0.0.1: SIGHUP reloads the coefficients for new games while a running game keeps its
//! parameters; SIGTERM drains (no new games, running games may finish) and a second SIGTERM
//! stops at once; SIGKILL during a game that is then lost on time leaves a record after the
//! restart. The token reaches the process only through its environment. Under systemd
//! (`Type=notify`) it says READY=1, pings the watchdog and says STOPPING=1. And `ladder run
//! --sandbox`, started as a new user would from any directory, says what is going on and, at
//! exit, where the games went.

mod common {
    pub mod collected;
    pub mod config;
    pub mod files;
    pub mod process;
}

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::collected::Daemon;
use common::config::{account_table, ladder_toml};
use common::files::shipped_coefficients;
use common::process::ladder_run;

use ladder::levels::{Coefficients, LevelParams};
use ladder::lichess::{ChallengeColor, GameId, Token};
use ladder::results::read_results;
use ladder::sandbox::{AccountConfig, ChallengeSpec, ChallengerConfig, Sandbox, SandboxConfig};

const TOKEN_ENV: &str = "LADDER_SIGNALS_TEST_TOKEN";

/// A sandbox with one bot, a human who never moves and a challenger who plays.
async fn sandbox(bot: &str) -> Sandbox {
    let mut config = SandboxConfig::with_bots(&[bot]);
    config.keepalive_interval = Duration::from_millis(500);
    config.seed = None;
    config.accounts.push(AccountConfig::human("Alice"));
    let mut rita = ChallengerConfig::new("Rita");
    rita.interval = None;
    rita.think_time = Duration::from_millis(10);
    config.challengers.push(rita);
    Sandbox::start(config).await.unwrap()
}

fn write_setup(dir: &Path, base_url: &str, bot: &str) {
    shipped_coefficients(dir);
    let config = ladder_toml(
        base_url,
        "results = \"results.jsonl\"\ncoefficients = \"calibration/coefficients.toml\"\n\
         search_threads = 1\nabort_after_s = 120\nshutdown_grace_s = 60\nstatus_interval_s = 1\n",
        "min_initial_s = 30\nmax_games = 4\n",
    ) + &account_table(bot, TOKEN_ENV, 1, "");
    std::fs::write(dir.join("accounts.toml"), config).unwrap();
}

impl Daemon {
    /// `ladder run --config <dir>/accounts.toml` with the token in its environment.
    fn command(dir: &Path, token: &str) -> Command {
        let mut command = ladder_run(&dir.join("accounts.toml"));
        command.env(TOKEN_ENV, token);
        command
    }

    fn spawn(dir: &Path, token: &str) -> Daemon {
        Daemon::start(Daemon::command(dir, token))
    }

    /// Starts `command` away from any systemd that runs the tests.
    fn start(mut command: Command) -> Daemon {
        command
            .env_remove("NOTIFY_SOCKET")
            .env_remove("WATCHDOG_USEC")
            .env_remove("WATCHDOG_PID");
        Daemon::start_as_is(command)
    }

    /// Starts `command` with info logging in the plain style and collects its stderr.
    fn start_as_is(command: Command) -> Daemon {
        Daemon::collect(command, None)
    }

    /// Waits until the log has a line containing every one of `parts`.
    async fn wait_for_line(&self, parts: &[&str], within: Duration) {
        self.wait_for_log(
            &format!("no log line with {parts:?} within {within:?}"),
            within,
            |log| log.lines().any(|l| parts.iter().all(|p| l.contains(p))),
        )
        .await;
    }

    async fn wait_for_exit(&mut self, within: Duration) -> std::process::ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if start.elapsed() > within {
                self.child.kill().ok();
                panic!("the daemon did not exit within {within:?}:\n{}", self.log());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// A daemon process playing `bot`, in a game against a human who took white and never moves:
/// the game stays open for as long as the test needs.
struct Running {
    sb: Sandbox,
    dir: tempfile::TempDir,
    token: Token,
    daemon: Daemon,
    game: GameId,
}

async fn daemon_with_open_game(bot: &str) -> Running {
    let sb = sandbox(bot).await;
    let dir = tempfile::tempdir().unwrap();
    write_setup(dir.path(), sb.base_url(), bot);
    let token = sb.token(bot).unwrap();
    let daemon = Daemon::spawn(dir.path(), token.expose());
    daemon
        .wait_for_line(&["event stream open"], Duration::from_secs(20))
        .await;
    let mut spec = ChallengeSpec::clock(180, 0);
    spec.color = ChallengeColor::White;
    let game = sb.challenge("alice", bot, &spec).unwrap().id.game_id();
    daemon
        .wait_for_line(&["game started", game.as_str()], Duration::from_secs(20))
        .await;
    Running {
        sb,
        dir,
        token,
        daemon,
        game,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_gives_new_games_new_coefficients_and_running_games_keep_theirs() {
    let bot = "sighup1";
    let Running {
        sb,
        dir,
        token,
        mut daemon,
        game: old,
    } = daemon_with_open_game(bot).await;

    let mut next = Coefficients::builtin();
    next.version = 2;
    next.n0 *= 2.0;
    std::fs::write(
        dir.path().join("calibration/coefficients.toml"),
        next.to_toml(),
    )
    .unwrap();
    daemon.signal("HUP");
    daemon
        .wait_for_line(
            &["reload: coefficients for new games"],
            Duration::from_secs(20),
        )
        .await;

    let new = sb
        .challenge("Rita", bot, &ChallengeSpec::clock(60, 0))
        .unwrap()
        .id
        .game_id();
    sb.wait_until("the new game to finish", Duration::from_secs(60), |w| {
        w.summary(&new).filter(|g| g.is_over()).map(|_| ())
    })
    .await
    .unwrap();
    sb.act("alice", &old, ladder::sandbox::Action::Abort)
        .unwrap();

    // The periodic status line counts both finished games (the aborted one too).
    daemon
        .wait_for_line(
            &["status: 0 games running", &format!("today: {bot} 2")],
            Duration::from_secs(10),
        )
        .await;

    daemon.signal("TERM");
    let status = daemon.wait_for_exit(Duration::from_secs(30)).await;
    assert!(status.success(), "exit status {status}:\n{}", daemon.log());

    let records = read_results(&[dir.path().join("results.jsonl")])
        .unwrap()
        .records;
    let find = |id: &GameId| {
        records
            .iter()
            .find(|r| r.game_id == *id)
            .unwrap_or_else(|| panic!("game {id} not recorded: {records:?}"))
    };
    let v1 = LevelParams::new(&Coefficients::builtin(), 1.0);
    let v2 = LevelParams::new(&next, 1.0);
    let (old, new) = (find(&old), find(&new));
    assert_eq!(
        (old.header.coefficients_version, old.header.engine.nodes),
        (Coefficients::builtin().version, v1.nodes),
        "the running game kept its parameters"
    );
    assert_eq!(
        (new.header.coefficients_version, new.header.engine.nodes),
        (2, v2.nodes),
        "the new game took the reloaded coefficients"
    );
    assert!(
        !daemon.log().contains(token.expose()),
        "the token was logged"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_sigterm_drains_and_second_sigterm_stops_now() {
    let bot = "sigterm1";
    let Running {
        sb,
        dir,
        mut daemon,
        game,
        ..
    } = daemon_with_open_game(bot).await;

    daemon.signal("TERM");
    daemon
        .wait_for_line(&["shutting down"], Duration::from_secs(10))
        .await;
    // Draining: a new challenge is declined, and the running game keeps the process alive.
    let refused = sb
        .challenge("Rita", bot, &ChallengeSpec::clock(60, 0))
        .unwrap()
        .id;
    let start = Instant::now();
    while !sb.declined().iter().any(|c| c.id == refused) {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the challenge made while draining was not declined:\n{}",
            daemon.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        daemon.alive(),
        "the daemon exited while a game was running:\n{}",
        daemon.log()
    );
    assert!(
        sb.game(&refused.game_id()).is_none(),
        "a game started while draining"
    );

    daemon.signal("TERM");
    let status = daemon.wait_for_exit(Duration::from_secs(10)).await;
    assert!(
        status.code().is_some(),
        "killed instead of exiting: {status}"
    );
    // The second signal names the game it leaves open, and the exit summary repeats it.
    let log = daemon.log();
    assert!(
        log.lines()
            .any(|l| l.contains("stopping now: 1 game left open") && l.contains(game.as_str())),
        "the stop did not name the game it abandons:\n{log}"
    );
    assert!(
        log.lines()
            .any(|l| l.contains("left running on Lichess: 1 game") && l.contains(game.as_str())),
        "{log}"
    );
    assert!(
        sb.game(&game)
            .is_some_and(|g| g.status == ladder::lichess::GameStatus::Started),
        "the game was ended instead of left running"
    );
    // Whatever was written is whole: every line of the results file parses.
    let path = dir.path().join("results.jsonl");
    if path.exists() {
        let read = read_results(&[path]).unwrap();
        assert!(read.warnings.is_empty(), "{:?}", read.warnings);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_during_a_game_lost_on_time_meanwhile_the_restart_records_it_once() {
    let bot = "sigkill1";
    let Running {
        sb,
        dir,
        token,
        mut daemon,
        game,
    } = daemon_with_open_game(bot).await;
    let play = |uci: &str| sb.play_move("alice", &game, uci).unwrap();
    play("e2e4");
    sb.wait_until("the bot's reply", Duration::from_secs(20), |w| {
        w.summary(&game).filter(|g| g.moves.len() >= 2).map(|_| ())
    })
    .await
    .unwrap();
    daemon.signal("KILL");
    daemon.wait_for_exit(Duration::from_secs(10)).await;

    // While nobody plays for the bot, its clock runs out.
    play("d2d4");
    sb.with_world(|w| {
        let g = &mut w.games.get_mut(&game).unwrap().game;
        g.set_remaining(
            ladder::lichess::Color::Black,
            200,
            tokio::time::Instant::now(),
        );
    });
    let over = sb
        .wait_until("the flag", Duration::from_secs(10), |w| {
            w.summary(&game).filter(|g| g.is_over())
        })
        .await
        .unwrap();
    assert_eq!(over.status, ladder::lichess::GameStatus::Outoftime);

    let mut daemon = Daemon::spawn(dir.path(), token.expose());
    daemon
        .wait_for_line(&["settled", game.as_str()], Duration::from_secs(20))
        .await;
    daemon.signal("TERM");
    let status = daemon.wait_for_exit(Duration::from_secs(20)).await;
    assert!(status.success(), "exit status {status}:\n{}", daemon.log());
    let read = read_results(&[dir.path().join("results.jsonl")]).unwrap();
    assert!(read.warnings.is_empty(), "{:?}", read.warnings);
    let ours: Vec<_> = read.records.iter().filter(|r| r.game_id == game).collect();
    assert_eq!(ours.len(), 1, "{:?}", read.records);
    let r = ours[0];
    assert_eq!(
        (r.result, r.status.as_str()),
        (ladder::results::Outcome::Loss, "outoftime")
    );
    assert_eq!(r.moves.split_whitespace().count(), over.moves.len());
    assert_eq!(
        r.after_restart,
        Some(ladder::results::AfterRestart::Settled)
    );
    assert_eq!(r.fault_kind(), Some(ladder::results::fault::DAEMON_DOWN));
}

/// What a process sent to the notification socket the test owns, one datagram per entry.
struct NotifySocket {
    path: std::path::PathBuf,
    messages: Arc<Mutex<Vec<String>>>,
}

impl NotifySocket {
    fn bind(dir: &Path) -> NotifySocket {
        let path = dir.join("notify.sock");
        let socket = std::os::unix::net::UnixDatagram::bind(&path).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let messages = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&messages);
        // Lives until the test process ends: it only reads.
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 4096];
            loop {
                if let Ok(n) = socket.recv(&mut buf) {
                    let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                    sink.lock().unwrap().push(text);
                }
            }
        });
        NotifySocket { path, messages }
    }

    /// The datagrams that carry `KEY=value` as one of their lines.
    fn with(&self, assignment: &str) -> usize {
        self.messages
            .lock()
            .unwrap()
            .iter()
            .filter(|m| m.lines().any(|l| l == assignment))
            .count()
    }

    fn all(&self) -> Vec<String> {
        self.messages.lock().unwrap().clone()
    }

    async fn wait_for(&self, assignment: &str, count: usize, within: Duration, log: &Daemon) {
        let start = Instant::now();
        while self.with(assignment) < count {
            assert!(
                start.elapsed() < within,
                "fewer than {count} {assignment} within {within:?}: {:?}\n{}",
                self.all(),
                log.log()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Under systemd: READY=1 once every account has made its first connection attempt — one of
/// them with a token Lichess rejects, which must not hold the start back —, WATCHDOG=1 again
/// and again at half of WATCHDOG_USEC, STATUS= with the status line, STOPPING=1 on SIGTERM.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn systemd_hears_ready_watchdog_pings_status_and_stopping() {
    let bot = "notify1";
    let sb = sandbox(bot).await;
    let dir = tempfile::tempdir().unwrap();
    write_setup(dir.path(), sb.base_url(), bot);
    let bad_env = "LADDER_SIGNALS_TEST_BAD_TOKEN";
    let mut config = std::fs::read_to_string(dir.path().join("accounts.toml")).unwrap();
    config.push_str(&account_table("notify2", bad_env, 2, ""));
    std::fs::write(dir.path().join("accounts.toml"), config).unwrap();
    let socket = NotifySocket::bind(dir.path());

    let token = sb.token(bot).unwrap();
    let mut command = Daemon::command(dir.path(), token.expose());
    command
        .env(bad_env, "lip_notknowntothesandbox0")
        .env("NOTIFY_SOCKET", &socket.path)
        .env("WATCHDOG_USEC", "1000000")
        .env_remove("WATCHDOG_PID");
    let mut daemon = Daemon::start_as_is(command);

    socket
        .wait_for("READY=1", 1, Duration::from_secs(30), &daemon)
        .await;
    let log = daemon.log();
    assert!(
        log.lines()
            .any(|l| l.contains("ERROR") && l.contains("notify2") && l.contains("rejected")),
        "READY=1 came before the bad account's first check was over:\n{log}"
    );
    assert!(
        log.lines()
            .any(|l| l.contains("ready: 1 of 2 accounts connected") && l.contains("notify2")),
        "{log}"
    );
    // Pings at half of the 1 s timeout: several within a few seconds, from a live supervisor.
    let pings = socket.with("WATCHDOG=1");
    socket
        .wait_for("WATCHDOG=1", pings + 4, Duration::from_secs(15), &daemon)
        .await;
    assert!(
        socket
            .all()
            .iter()
            .any(|m| m.lines().any(|l| l.starts_with("STATUS=ready: 1 of 2"))),
        "{:?}",
        socket.all()
    );
    assert_eq!(socket.with("STOPPING=1"), 0, "{:?}", socket.all());

    daemon.signal("TERM");
    socket
        .wait_for("STOPPING=1", 1, Duration::from_secs(10), &daemon)
        .await;
    let status = daemon.wait_for_exit(Duration::from_secs(30)).await;
    assert!(status.success(), "exit status {status}:\n{}", daemon.log());
    assert_eq!(socket.with("READY=1"), 1, "{:?}", socket.all());
    assert!(
        !daemon.log().contains(token.expose()),
        "the token was logged"
    );
}

/// `ladder run --sandbox` as a new user would start it, in an empty directory: at once it says
/// where the sandbox is and who plays whom, per-move lines stay at debug level, a progress line
/// with the score comes early, Ctrl-C says how many games are still running and the grace left,
/// no game is resigned when the grace runs out (those still running are named as left
/// unfinished), and the exit summary counts the games and names the results and PGN files,
/// which are in the directory it was started from.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_sandbox_run_from_any_directory_explains_itself() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_ladder"));
    command.args(["run", "--sandbox"]).current_dir(dir.path());
    let mut daemon = Daemon::start(command);
    // At once: where the sandbox is and who plays whom. The simulated challengers' first
    // challenges come after 20 s; the progress line earlier.
    let explained: [(&[&str], u64); 5] = [
        (&["sandbox up at http://127.0.0.1:"], 30),
        (
            &["12 accounts play: ladder-l1 (level 1, target 450 lichess-blitz)"],
            5,
        ),
        (
            &[
                "challenger RandomRita (96, random moves)",
                "every account accepts",
            ],
            5,
        ),
        (&["challenger BOT BulletBot", "every account declines"], 5),
        (&["sandbox ", "finished 0: none"], 30),
    ];
    for (parts, within_s) in explained {
        daemon
            .wait_for_line(parts, Duration::from_secs(within_s))
            .await;
    }
    // A later progress line names a game being played or a score.
    daemon
        .wait_for_log(
            "no progress line with a game",
            Duration::from_secs(120),
            |log| {
                log.lines().any(|l| {
                    l.contains("INFO sandbox ") && (l.contains(" vs ") || l.contains(" (ladder-l"))
                })
            },
        )
        .await;
    // Ctrl-C while a game is running (a game lasts many seconds: the bots take their time).
    daemon
        .wait_for_log("no game running", Duration::from_secs(120), |log| {
            log.matches("game started").count() > log.matches("game over").count()
        })
        .await;

    daemon.signal("INT");
    daemon
        .wait_for_line(
            &["shutting down", "still running may finish within 30s"],
            Duration::from_secs(10),
        )
        .await;
    // While games run, a draining line tells the grace left; a game may also end within a
    // second or two of the signal (a short game near its end), and then the daemon stops
    // before any draining line is due.
    daemon
        .wait_for_log(
            "neither a draining line nor the stop",
            Duration::from_secs(20),
            |log| {
                log.lines().any(|l| {
                    (l.contains("draining: ") && l.contains("of grace left"))
                        || l.contains("daemon stopped")
                })
            },
        )
        .await;
    // Games still running after the grace are left unfinished (the sandbox's games end with
    // it), never resigned: the process exits by itself.
    let status = daemon.wait_for_exit(Duration::from_secs(90)).await;
    assert!(status.success(), "exit status {status}:\n{}", daemon.log());

    let log = daemon.log();
    let after = |prefix: &str| -> String {
        log.lines()
            .find_map(|l| l.split_once(prefix).map(|(_, rest)| rest.to_string()))
            .unwrap_or_else(|| panic!("no line with {prefix:?}:\n{log}"))
    };
    let games: usize = after("games this run: ")
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let results = std::path::PathBuf::from(after("results: ").trim());
    let pgn = std::path::PathBuf::from(after("PGN: ").trim());
    let here = dir.path().canonicalize().unwrap();
    assert!(results.is_absolute(), "{}", results.display());
    assert_eq!(
        results.canonicalize().unwrap(),
        here.join("sandbox-results.jsonl")
    );
    assert_eq!(
        pgn.canonicalize().unwrap(),
        here.join("sandbox-results.pgn")
    );
    let lines = std::fs::read_to_string(&results)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count();
    // The game that was running at Ctrl-C finished within the grace and was recorded, or was
    // left unfinished and named so.
    let unfinished: usize = log
        .lines()
        .find_map(|l| l.split_once("left unfinished: "))
        .map_or(0, |(_, rest)| {
            rest.split_whitespace().next().unwrap().parse().unwrap()
        });
    assert!(
        games + unfinished >= 1,
        "the game that was running is neither recorded nor named unfinished:\n{log}"
    );
    assert_eq!(games, lines, "{log}");
    let resigned_by_shutdown: Vec<_> = read_results(std::slice::from_ref(&results))
        .unwrap()
        .records
        .into_iter()
        .filter(|r| r.fault_kind() == Some(ladder::results::fault::SHUTDOWN))
        .filter(|r| r.status != "aborted")
        .collect();
    assert!(
        resigned_by_shutdown.is_empty(),
        "games ended by the shutdown other than by an abort: {resigned_by_shutdown:?}"
    );
    assert!(
        !log.contains("game resigned"),
        "a game was resigned at the shutdown:\n{log}"
    );
    let pgn_games = std::fs::read_to_string(&pgn)
        .unwrap()
        .matches("[Event ")
        .count();
    assert_eq!(pgn_games, games);
    assert!(
        !log.lines()
            .any(|l| l.contains(" INFO ") && l.contains(": move ")),
        "per-move lines at info level:\n{log}"
    );
}
