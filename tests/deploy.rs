//! Deployment: the systemd units pass `systemd-analyze verify` and the security bar, and
//! `ladder check` / `ladder upgrade` (the real binary) judge deployments correctly against the
//! project's Lichess sandbox, its accounts and their tokens' scopes set as each test needs.

mod common {
    pub mod stderr;
    pub mod tools;
}

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::stderr::read_until_line;
use common::tools::installed;
use ladder::sandbox::{AccountConfig, Sandbox, SandboxConfig};

const LADDER: &str = env!("CARGO_BIN_EXE_ladder");
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/deploy");
const UNITS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/systemd");

// ---- systemd units ----

fn systemd_analyze() -> Option<&'static str> {
    installed(
        "systemd-analyze",
        "systemd-analyze is not installed; the unit files were not verified",
    )
    .then_some("systemd-analyze")
}

/// The units with ExecStart pointing at the binary just built, in a temporary directory
/// (verify checks that the executable exists).
fn units_for_test() -> (tempfile::TempDir, Vec<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for name in [
        "ladder.service",
        "ladder-calibrate.service",
        "ladder-calibrate.timer",
    ] {
        let text = std::fs::read_to_string(Path::new(UNITS).join(name)).unwrap();
        assert!(
            name.ends_with(".timer") || text.contains("/usr/local/bin/ladder "),
            "{name} runs /usr/local/bin/ladder, as docs/operating.md installs it"
        );
        let path = dir.path().join(name);
        std::fs::write(&path, text.replace("/usr/local/bin/ladder", LADDER)).unwrap();
        paths.push(path);
    }
    (dir, paths)
}

#[test]
fn systemd_accepts_every_unit() {
    let Some(analyze) = systemd_analyze() else {
        return;
    };
    let (_dir, units) = units_for_test();
    let out = Command::new(analyze)
        .arg("verify")
        .args(&units)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "verify failed:\n{stderr}");
    // verify only warns about unknown keys or misplaced settings; any word about our units is
    // a mistake in them.
    let about_ours: Vec<&str> = stderr.lines().filter(|l| l.contains("ladder")).collect();
    assert!(about_ours.is_empty(), "verify complained:\n{stderr}");
}

#[test]
fn services_are_hardened_to_exposure_2_or_less() {
    let Some(analyze) = systemd_analyze() else {
        return;
    };
    let (_dir, units) = units_for_test();
    for unit in units.iter().filter(|u| u.extension().unwrap() == "service") {
        let out = Command::new(analyze)
            .args(["security", "--offline=true"])
            .arg(unit)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        // "→ Overall exposure level for ladder.service: 1.1 OK 🙂"
        let line = stdout
            .lines()
            .find(|l| l.contains("Overall exposure level"))
            .unwrap_or_else(|| panic!("no exposure line for {unit:?}:\n{stdout}"));
        let level: f64 = line
            .rsplit_once(": ")
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("cannot parse {line:?}"));
        assert!(level <= 2.0, "{unit:?}: exposure {level} > 2.0\n{stdout}");
    }
}

#[test]
fn daemon_unit_matches_the_daemon() {
    let unit = std::fs::read_to_string(Path::new(UNITS).join("ladder.service")).unwrap();
    for line in [
        "ExecReload=/bin/kill -HUP $MAINPID",
        "KillSignal=SIGTERM",
        "Restart=on-failure",
        "StateDirectory=ladder",
        "LoadCredential=ladder:/etc/ladder/tokens",
    ] {
        assert!(unit.lines().any(|l| l == line), "missing {line}");
    }
    // systemd must wait longer than the grace period the daemon gives running games.
    let stop = unit
        .lines()
        .find_map(|l| l.strip_prefix("TimeoutStopSec="))
        .unwrap();
    let stop_s: u64 = stop.strip_suffix("min").unwrap().parse::<u64>().unwrap() * 60;
    let grace = ladder::config::Config::parse(
        include_str!("../accounts.toml"),
        Path::new("/etc/ladder/accounts.toml"),
    )
    .unwrap()
    .daemon
    .shutdown_grace_s;
    assert!(stop_s > grace, "TimeoutStopSec {stop_s}s <= grace {grace}s");

    // Type=notify: the daemon says READY=1 (at the latest READY_LIMIT after its start) and
    // pings the watchdog from its supervisor; systemd must wait longer than that for the start.
    for line in ["Type=notify", "NotifyAccess=main"] {
        assert!(unit.lines().any(|l| l == line), "missing {line}");
    }
    let setting = |key: &str| -> u64 {
        let value = unit
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or_else(|| panic!("missing {key}"));
        match (value.strip_suffix("min"), value.strip_suffix('s')) {
            (Some(min), _) => min.parse::<u64>().unwrap() * 60,
            (None, Some(s)) => s.parse().unwrap(),
            (None, None) => panic!("{key}{value}: write it in s or min"),
        }
    };
    let ready_limit = ladder::daemon::notify::READY_LIMIT.as_secs();
    let start_s = setting("TimeoutStartSec=");
    assert!(
        start_s > ready_limit,
        "TimeoutStartSec {start_s}s <= the daemon's readiness limit {ready_limit}s"
    );
    assert!(
        setting("WatchdogSec=") >= 10,
        "a watchdog that fires on a busy machine"
    );
}

// ---- Lichess: the project's sandbox, with the accounts a test needs ----

const TOKEN_L1: &str = "lip_TestTokenL1";
const TOKEN_L2: &str = "lip_TestTokenL2";

/// A sandbox account `username` whose token is `token` with these OAuth `scopes`.
fn account(username: &str, token: &str, bot: bool, scopes: &[&str]) -> AccountConfig {
    let base = if bot {
        AccountConfig::bot(username)
    } else {
        AccountConfig::human(username)
    };
    AccountConfig {
        token: token.to_string(),
        scopes: Some(scopes.iter().map(|s| s.to_string()).collect()),
        ..base
    }
}

/// Starts the sandbox with these accounts on a thread of its own, where it serves until the
/// test ends.
fn sandbox(accounts: Vec<AccountConfig>) -> Arc<Sandbox> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let config = SandboxConfig {
                accounts,
                ..SandboxConfig::default()
            };
            // This thread keeps it too: the test may keep only its URL.
            let sandbox = Arc::new(Sandbox::start(config).await.unwrap());
            tx.send(sandbox.clone()).unwrap();
            std::future::pending::<()>().await;
        });
    });
    rx.recv().unwrap()
}

/// Both accounts are bots with bot:play tokens.
fn good_lichess() -> Arc<Sandbox> {
    sandbox(vec![
        account("Ladder-L1", TOKEN_L1, true, &["bot:play"]),
        account("ladder-l2", TOKEN_L2, true, &["challenge:read", "bot:play"]),
    ])
}

/// Ladder-L1 is a bot; ladder-l2 has a bot:play token but is not upgraded yet.
fn l2_not_yet_a_bot() -> Arc<Sandbox> {
    sandbox(vec![
        account("Ladder-L1", TOKEN_L1, true, &["bot:play"]),
        account("ladder-l2", TOKEN_L2, false, &["bot:play"]),
    ])
}

// ---- a deployment on disk ----

struct Deployment {
    dir: tempfile::TempDir,
    config: PathBuf,
    token_file: PathBuf,
}

/// A deployment against a Lichess that knows both accounts as bots with good tokens.
fn good_deployment() -> Deployment {
    deployment(good_lichess().base_url())
}

/// [`good_deployment`], its token file's mode set to `mode` (600 there).
fn good_deployment_with_token_mode(mode: u32) -> Deployment {
    let d = good_deployment();
    set_mode(&d.token_file, mode);
    d
}

/// Replaces `from` with `to` in the deployment's accounts.toml.
fn edit_config(d: &Deployment, from: &str, to: &str) {
    let text = std::fs::read_to_string(&d.config)
        .unwrap()
        .replace(from, to);
    std::fs::write(&d.config, text).unwrap();
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// accounts.toml (L1 from an environment variable, L2 from a 0600 file), the coefficients and
/// the state directory, all readable by other users except the token file.
fn deployment(base_url: &str) -> Deployment {
    let dir = tempfile::tempdir().unwrap();
    set_mode(dir.path(), 0o755);
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    set_mode(&state, 0o755);
    let coefficients = state.join("coefficients.toml");
    std::fs::copy(Path::new(FIXTURES).join("coefficients.toml"), &coefficients).unwrap();
    set_mode(&coefficients, 0o644);
    let token_file = dir.path().join("token-l2");
    std::fs::write(&token_file, format!("{TOKEN_L2}\n")).unwrap();
    set_mode(&token_file, 0o600);
    let config = dir.path().join("accounts.toml");
    write_config(
        &config,
        base_url,
        dir.path(),
        &token_file.display().to_string(),
    );
    Deployment {
        dir,
        config,
        token_file,
    }
}

fn write_config(config: &Path, base_url: &str, dir: &Path, token_file: &str) {
    let text = std::fs::read_to_string(Path::new(FIXTURES).join("accounts.toml"))
        .unwrap()
        .replace("@BASE_URL@", base_url)
        .replace("@DIR@", &dir.display().to_string())
        .replace("@TOKEN_FILE_L2@", token_file);
    std::fs::write(config, text).unwrap();
    set_mode(config, 0o644);
}

/// Runs the binary with a clean environment: only `env` on top of PATH.
fn ladder(args: &[&str], env: &[(&str, &str)], stdin: &str) -> Output {
    ladder_as(None, args, env, stdin)
}

fn ladder_as(prefix: Option<&[&str]>, args: &[&str], env: &[(&str, &str)], stdin: &str) -> Output {
    let mut command = match prefix {
        Some(prefix) => {
            let mut c = Command::new(prefix[0]);
            c.args(&prefix[1..]).arg(LADDER);
            c
        }
        None => Command::new(LADDER),
    };
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("LADDER_LOG_STYLE", "plain")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).ok();
    child.wait_with_output().unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn check(d: &Deployment, env: &[(&str, &str)]) -> (bool, String) {
    let out = ladder(&["check", "--config", d.config.to_str().unwrap()], env, "");
    let all = text(&out);
    assert!(
        !all.contains(TOKEN_L1) && !all.contains(TOKEN_L2),
        "a token was printed:\n{all}"
    );
    (out.status.success(), all)
}

/// `ladder check` fails, and what it prints holds every one of `expected`.
fn check_fails(d: &Deployment, env: &[(&str, &str)], expected: &[&str]) {
    let (ok, out) = check(d, env);
    assert!(!ok, "{out}");
    assert_contains_all(&out, expected);
}

/// `text` holds every one of `parts`.
fn assert_contains_all(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "{text}");
    }
}

const ENV_L1: (&str, &str) = ("LADDER_TEST_TOKEN_L1", TOKEN_L1);

// ---- ladder check ----

#[test]
fn good_setup_passes_and_shows_the_ladder() {
    let d = good_deployment();
    let (ok, out) = check(&d, &[ENV_L1]);
    assert!(ok, "{out}");
    assert!(out.contains("ok: no problems found"), "{out}");
    // The ladder as it would run: level 1 and 2 with their targets, node budgets, noise and
    // hash from the deployment's coefficients ([targets] 600 + 200 (L − 1); n0 = 16, b = 2,
    // s0 = 133, d = 0.75, 1 MB).
    let row = |name: &str| {
        out.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no row for {name}:\n{out}"))
            .split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let l1 = row("Ladder-L1");
    assert_eq!(
        &l1[1..7],
        ["1", "600", "lichess-blitz", "32", "99.8", "1M"],
        "{out}"
    );
    assert!(out.contains("env LADDER_TEST_TOKEN_L1"), "{out}");
    let l2 = row("ladder-l2");
    assert_eq!(
        &l2[1..7],
        ["2", "800", "lichess-blitz", "64", "74.8", "1M"],
        "{out}"
    );
    assert!(l2.join(" ").contains("BOT, bot:play"), "{out}");
    assert!(out.contains("(version 1)"), "{out}");
}

#[test]
fn missing_token_fails_and_says_how_to_provide_it() {
    let d = good_deployment();
    check_fails(
        &d,
        &[],
        &[
            "error: account Ladder-L1: ",
            "LADDER_TEST_TOKEN_L1",
            "fix: export LADDER_TEST_TOKEN_L1=",
            "1 problem",
            // The other account is still checked.
            "BOT, bot:play",
        ],
    );
}

#[test]
fn unreadable_token_file_fails() {
    let d = good_deployment_with_token_mode(0o000);
    // Root reads any file: run as nobody then, which is what a service user meets.
    let is_root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    let prefix: Option<&[&str]> = is_root.then_some(&[
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
    ]);
    let out = ladder_as(
        prefix,
        &["check", "--config", d.config.to_str().unwrap()],
        &[ENV_L1],
        "",
    );
    let out_text = text(&out);
    assert!(!out.status.success(), "{out_text}");
    assert_contains_all(
        &out_text,
        &[
            "error: account ladder-l2: ",
            "token_file = ",
            "cannot read",
            "Permission denied",
            "mode 600",
        ],
    );
}

#[test]
fn token_file_readable_by_others_is_a_warning() {
    let d = good_deployment_with_token_mode(0o644);
    let (ok, out) = check(&d, &[ENV_L1]);
    assert!(ok, "a warning alone does not fail:\n{out}");
    assert_contains_all(
        &out,
        &[
            "warning: account ladder-l2: token file",
            "mode 644",
            "fix: chmod 600",
            "ok, with 1 warning",
        ],
    );
}

/// `ladder run` says at start-up what `ladder check` says about a token file others can read.
#[test]
fn run_warns_about_a_token_file_others_can_read() {
    let d = good_deployment_with_token_mode(0o644);
    let mut child = Command::new(LADDER)
        .args(["run", "--config", d.config.to_str().unwrap()])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("LADDER_LOG_STYLE", "plain")
        .env(ENV_L1.0, ENV_L1.1)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let token_file = format!("token file {}", d.token_file.display());
    let (warned, log) = read_until_line(&mut child, Duration::from_secs(60), |line| {
        line.contains("WARN") && line.contains(&token_file) && line.contains("mode 644")
    });
    assert!(warned, "{log}");
    assert!(!log.contains(TOKEN_L1) && !log.contains(TOKEN_L2), "{log}");
}

/// A token pasted into `token_env` is refused by name, and never shown by `check`.
#[test]
fn a_token_pasted_into_token_env_is_never_shown() {
    let d = good_deployment();
    edit_config(&d, "\"LADDER_TEST_TOKEN_L1\"", &format!("{TOKEN_L1:?}"));
    check_fails(
        &d,
        &[ENV_L1],
        &["accounts[0].token_env: looks like a token"],
    );
}

#[test]
fn non_bot_account_fails_and_points_to_upgrade() {
    let lichess = l2_not_yet_a_bot();
    let d = deployment(lichess.base_url());
    check_fails(
        &d,
        &[ENV_L1],
        &[
            "error: account ladder-l2: ladder-l2 is not a BOT account",
            "fix: upgrade it with `ladder upgrade ladder-l2",
        ],
    );
}

#[test]
fn wrong_owner_missing_scope_and_rejected_token_fail() {
    let lichess = sandbox(vec![
        // L1's variable holds another user's token, which also lacks bot:play.
        account("someone-else", TOKEN_L1, true, &["challenge:read"]),
        // L2's token is unknown to Lichess (revoked).
    ]);
    let d = deployment(lichess.base_url());
    check_fails(
        &d,
        &[ENV_L1],
        &[
            "the token belongs to someone-else, not Ladder-L1",
            "lacks the bot:play scope (it has: challenge:read)",
            "error: account ladder-l2: Lichess rejected the token (HTTP 401)",
            "3 problems",
        ],
    );
}

#[test]
fn malformed_config_fails_with_its_line() {
    let d = good_deployment();
    edit_config(&d, "level = 2", "level = \"two\"");
    check_fails(
        &d,
        &[ENV_L1],
        &["error: config: accounts.toml:", "fix: correct that line"],
    );

    let missing = d.dir.path().join("nope.toml");
    let out = ladder(&["check", "--config", missing.to_str().unwrap()], &[], "");
    assert!(!out.status.success());
    assert!(text(&out).contains("fix: give the right path with --config"));
}

/// Missing coefficients fail the check; a missing state directory does not, since `ladder
/// run` creates it: the check says so beside the results path.
#[test]
fn missing_coefficients_fail_and_a_missing_state_directory_is_said_to_be_created() {
    let d = good_deployment();
    std::fs::remove_dir_all(d.dir.path().join("state")).unwrap();
    check_fails(
        &d,
        &[ENV_L1],
        &[
            "copy calibration/coefficients.toml",
            "does not exist yet: `ladder run` creates it",
        ],
    );
    let (_, out) = check(&d, &[ENV_L1]);
    assert!(!out.contains("error: results"), "{out}");
}

#[test]
fn systemd_credential_token_is_read_from_the_credentials_directory() {
    let lichess = good_lichess();
    let url = lichess.base_url();
    let d = deployment(url);
    let credentials = d.dir.path().join("credentials");
    std::fs::create_dir(&credentials).unwrap();
    std::fs::rename(&d.token_file, credentials.join("ladder_l2")).unwrap();
    write_config(&d.config, url, d.dir.path(), "credential:ladder_l2");
    let dir = credentials.to_str().unwrap();
    let (ok, out) = check(&d, &[ENV_L1, ("CREDENTIALS_DIRECTORY", dir)]);
    assert!(ok, "{out}");
    assert!(out.contains(&format!("file {dir}/ladder_l2")), "{out}");

    // Outside systemd the credential cannot be found: the message says where it is looked for.
    check_fails(
        &d,
        &[ENV_L1],
        &["$CREDENTIALS_DIRECTORY is not set", "systemd-run"],
    );
}

#[test]
fn offline_check_does_not_ask_lichess() {
    // Nothing listens on this port: an online check would fail.
    let d = deployment("http://127.0.0.1:9");
    let out = ladder(
        &["check", "--offline", "--config", d.config.to_str().unwrap()],
        &[ENV_L1],
        "",
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("not asked"));
    let (ok, out) = check(&d, &[ENV_L1]);
    assert!(!ok);
    assert!(out.contains("cannot reach Lichess"), "{out}");
}

// ---- ladder upgrade ----

#[test]
fn upgrade_asks_first_and_then_makes_a_bot() {
    let lichess = l2_not_yet_a_bot();
    let d = deployment(lichess.base_url());
    let config = d.config.to_str().unwrap();
    let is_bot = || lichess.with_world(|w| w.account("ladder-l2").unwrap().bot);

    let out = ladder(&["upgrade", "ladder-l2", "--config", config], &[], "no\n");
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("irreversible"), "{}", text(&out));
    assert!(text(&out).contains("Not upgraded."));
    assert!(!is_bot(), "upgraded without a yes");

    // No answer at all (stdin closed) is a no too.
    let out = ladder(&["upgrade", "ladder-l2", "--config", config], &[], "");
    assert!(text(&out).contains("pass --yes"), "{}", text(&out));
    assert!(!is_bot());

    let out = ladder(&["upgrade", "ladder-l2", "--config", config], &[], "yes\n");
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("ladder-l2 is now a BOT account"));
    assert!(is_bot());

    // Idempotent from the operator's side, and check now passes.
    let out = ladder(
        &["upgrade", "ladder-l2", "--config", config, "--yes"],
        &[],
        "",
    );
    assert!(
        text(&out).contains("already a BOT account"),
        "{}",
        text(&out)
    );
    let (ok, out) = check(&d, &[ENV_L1]);
    assert!(ok, "{out}");
}

#[test]
fn upgrade_refused_by_lichess_explains_why() {
    let played = AccountConfig {
        games_played: 12,
        ..account("ladder-l2", TOKEN_L2, false, &["bot:play"])
    };
    let lichess = sandbox(vec![played]);
    let d = deployment(lichess.base_url());
    let config = d.config.to_str().unwrap();
    let out = ladder(
        &["upgrade", "ladder-l2", "--config", config, "--yes"],
        &[],
        "",
    );
    assert!(!out.status.success());
    let t = text(&out);
    assert!(t.contains("This account has already played games"), "{t}");
    assert!(t.contains("never played a game"), "{t}");

    let out = ladder(&["upgrade", "nobody", "--config", config, "--yes"], &[], "");
    assert!(!out.status.success());
    assert!(
        text(&out).contains("has no account nobody (it has: Ladder-L1, ladder-l2)"),
        "{}",
        text(&out)
    );
}

// ---- against the sandbox's own tokens ----

/// A deployment whose tokens are the sandbox's tokens for the two accounts.
fn sandbox_deployment(url: &str) -> (Deployment, String) {
    let d = deployment(url);
    let l1 = ladder::sandbox::sandbox_token("Ladder-L1")
        .expose()
        .to_string();
    let l2 = ladder::sandbox::sandbox_token("ladder-l2")
        .expose()
        .to_string();
    std::fs::write(&d.token_file, format!("{l2}\n")).unwrap();
    (d, l1)
}

#[test]
fn check_and_upgrade_against_the_sandbox() {
    let lichess = sandbox(vec![
        AccountConfig::bot("Ladder-L1"),
        AccountConfig::human("ladder-l2"),
    ]);
    let (d, l1) = sandbox_deployment(lichess.base_url());
    let config = d.config.to_str().unwrap();
    let env = [("LADDER_TEST_TOKEN_L1", l1.as_str())];
    let run = |args: &[&str], stdin: &str| {
        let out = ladder(args, &env, stdin);
        (out.status.success(), text(&out))
    };

    let (ok, out) = run(&["check", "--config", config], "");
    assert!(!ok, "{out}");
    assert!(out.contains("ladder-l2 is not a BOT account"), "{out}");
    assert!(!out.contains("error: account Ladder-L1"), "{out}");

    let (ok, out) = run(&["upgrade", "ladder-l2", "--config", config, "--yes"], "");
    assert!(ok, "{out}");
    assert!(out.contains("ladder-l2 is now a BOT account"), "{out}");

    // Both are bots now. The sandbox does not send the token's scopes: a warning, not a
    // failure.
    let (ok, out) = run(&["check", "--config", config], "");
    assert!(ok, "{out}");
    assert!(out.contains("did not say which scopes"), "{out}");
}

// ---- the operator's guide ----

/// The accounts.toml shown in docs/operating.md is a valid configuration whose credentials
/// resolve under systemd.
#[test]
fn documented_configuration_is_valid() {
    let guide = include_str!("../docs/operating.md");
    let toml = guide
        .split("```toml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a toml block in docs/operating.md");
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("accounts.toml");
    std::fs::write(&config, toml).unwrap();
    let credentials = dir.path().join("credentials");
    std::fs::create_dir(&credentials).unwrap();
    for name in ["ladder_l1", "ladder_l2"] {
        std::fs::write(credentials.join(name), "lip_doc\n").unwrap();
        set_mode(&credentials.join(name), 0o400);
    }
    let out = ladder(
        &["check", "--offline", "--config", config.to_str().unwrap()],
        &[("CREDENTIALS_DIRECTORY", credentials.to_str().unwrap())],
        "",
    );
    let t = text(&out);
    assert!(!t.contains("error: config"), "{t}");
    assert!(!t.contains("error: account"), "{t}");
    for account in ["ladder-l1", "ladder-l2"] {
        assert!(
            t.lines()
                .any(|l| l.starts_with(account) && l.contains("/ladder_l")),
            "{t}"
        );
    }
}

/// ladder-calibrate.service's ExecStartPre/ExecStartPost, run with a stand-in `systemctl`:
/// the daemon is reloaded when the coefficients changed, and only then.
#[test]
fn calibration_reloads_the_daemon_only_when_coefficients_change() {
    let unit = std::fs::read_to_string(Path::new(UNITS).join("ladder-calibrate.service")).unwrap();
    let command = |key: &str| {
        unit.lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or_else(|| panic!("no {key}"))
            .to_string()
    };
    let (pre, post) = (command("ExecStartPre=-"), command("ExecStartPost=+"));
    let dir = tempfile::tempdir().unwrap();
    let (state, runtime, bin) = (
        dir.path().join("state"),
        dir.path().join("run"),
        dir.path().join("bin"),
    );
    for d in [&state, &runtime.join("ladder-calibrate"), &bin] {
        std::fs::create_dir_all(d).unwrap();
    }
    let calls = dir.path().join("systemctl-calls");
    let fake = bin.join("systemctl");
    std::fs::write(
        &fake,
        format!("#!/bin/sh\necho \"$@\" >> {}\n", calls.display()),
    )
    .unwrap();
    set_mode(&fake, 0o755);
    // The unit's paths and specifiers, pointed at the temporary directory.
    let localize = |c: &str| {
        c.replace("/var/lib/ladder", state.to_str().unwrap())
            .replace("%t", runtime.to_str().unwrap())
            .replace("/bin/sh -c ", "")
    };
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let sh = |c: &str| {
        // The unit's single quotes delimit the script for systemd; sh -c takes it the same way.
        let script = localize(c);
        let script = script.trim_matches('\'');
        Command::new("/bin/sh")
            .args(["-c", script])
            .env("PATH", &path)
            .status()
            .unwrap()
    };
    let coefficients = state.join("coefficients.toml");
    let reloads = || {
        std::fs::read_to_string(&calls)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };

    // A run that leaves the file alone: no reload.
    std::fs::write(&coefficients, "version = 1\n").unwrap();
    sh(&pre);
    assert!(sh(&post).success());
    assert!(reloads().is_empty(), "{:?}", reloads());

    // A run that writes a new version: one reload of the daemon.
    sh(&pre);
    std::fs::write(&coefficients, "version = 2\n").unwrap();
    assert!(sh(&post).success());
    assert_eq!(reloads(), ["try-reload-or-restart ladder.service"]);
}

/// ladder-calibrate.service's exact command line, run as the timer starts it: the unit's
/// environment and working directory, accounts whose tokens are systemd credentials, and no
/// `$CREDENTIALS_DIRECTORY` (the unit loads no credentials: calibrating from the local results
/// needs no token). It reads the results, applies a new version and writes the report; a
/// renamed flag or a token looked up too early would fail the timer on every host.
#[test]
fn calibration_unit_runs_as_the_timer_starts_it() {
    let unit = std::fs::read_to_string(Path::new(UNITS).join("ladder-calibrate.service")).unwrap();
    let value = |key: &str| -> Vec<String> {
        unit.lines()
            .filter_map(|l| l.strip_prefix(key))
            .map(str::to_string)
            .collect()
    };
    let exec = value("ExecStart=");
    assert_eq!(exec.len(), 1, "one ExecStart: {exec:?}");
    let exec = exec[0]
        .strip_prefix("/usr/local/bin/ladder ")
        .expect("ExecStart runs /usr/local/bin/ladder");
    assert!(
        !exec.contains("--fetch") && !exec.contains("--lichess-ratings")
            || unit.lines().any(|l| l.starts_with("LoadCredential=")),
        "a command that reads tokens needs the unit to load them"
    );
    let environment: Vec<(String, String)> = value("Environment=")
        .iter()
        .flat_map(|v| v.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .filter_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            Some((k.to_string(), v.to_string()))
        })
        .collect();
    assert!(
        environment
            .iter()
            .all(|(k, _)| k != "CREDENTIALS_DIRECTORY"),
        "{environment:?}"
    );

    let dir = tempfile::tempdir().unwrap();
    let (etc, state) = (dir.path().join("etc"), dir.path().join("state"));
    std::fs::create_dir(&etc).unwrap();
    std::fs::create_dir(&state).unwrap();
    let coefficients = state.join("coefficients.toml");
    std::fs::copy(Path::new(FIXTURES).join("coefficients.toml"), &coefficients).unwrap();
    let config = etc.join("accounts.toml");
    std::fs::write(
        &config,
        format!(
            "[daemon]\nresults = \"{s}/results.jsonl\"\ncoefficients = \"{s}/coefficients.toml\"\n\n\
             [[accounts]]\nusername = \"ladder-l1\"\ntoken_file = \"credential:ladder_l1\"\n\
             level = 1\n\n\
             [[accounts]]\nusername = \"ladder-l2\"\ntoken_file = \"credential:ladder_l2\"\n\
             level = 2\n",
            s = state.display()
        ),
    )
    .unwrap();
    // 40 games a level: level 1 scores 75% against its 600 target (it must move), level 2 50%.
    let mut log = ladder::results::ResultsLog::open(&state.join("results.jsonl")).unwrap();
    for level in [1u32, 2] {
        for i in 0..40 {
            let result = match (level, i % 4) {
                (1, 0) | (2, 0 | 1) => ladder::results::Outcome::Loss,
                _ => ladder::results::Outcome::Win,
            };
            let mut r = ladder::results::sample_record(&format!("l{level}-{i}"), result);
            r.header.account = format!("ladder-l{level}");
            r.header.level = f64::from(level);
            r.opponent.rating = Some(400.0 + 200.0 * f64::from(level));
            log.append(&r).unwrap();
        }
    }
    drop(log);

    let args: Vec<String> = exec
        .split_whitespace()
        .map(|a| {
            a.replace("/etc/ladder", etc.to_str().unwrap())
                .replace("/var/lib/ladder", state.to_str().unwrap())
        })
        .collect();
    assert!(args.iter().any(|a| a == "--apply"), "{exec}");
    let out = Command::new(LADDER)
        .args(&args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("LADDER_LOG_STYLE", "journal")
        .envs(environment.iter().map(|(k, v)| (k, v)))
        .current_dir(&state)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    let now = ladder::levels::Coefficients::load(&coefficients).unwrap();
    assert_eq!(now.version, 2, "{t}");
    assert!(state.join("history/coefficients-v1.toml").exists(), "{t}");
    assert!(state.join("report/calibration.md").exists(), "{t}");

    // --fetch does read the tokens: without the credentials it stops, naming the account and
    // its setting, and writes nothing.
    let out = Command::new(LADDER)
        .args(&args)
        .arg("--fetch")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(environment.iter().map(|(k, v)| (k, v)))
        .current_dir(&state)
        .output()
        .unwrap();
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(
        t.contains("account ladder-l1: token_file = \"credential:ladder_l1\"")
            && t.contains("CREDENTIALS_DIRECTORY is not set"),
        "{t}"
    );
    assert_eq!(
        ladder::levels::Coefficients::load(&coefficients).unwrap(),
        now
    );
}
