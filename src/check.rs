//! `ladder check` and `ladder upgrade`: validate a deployment without playing, and turn a fresh
//! Lichess account into a BOT account.
//!
//! `check` goes through everything `ladder run` will need — accounts.toml, the coefficients, the
//! results directory, every token (and its file's permissions) — then asks Lichess, once per
//! token, whose token it is (for a rejected token: whether the account was closed), whether
//! that account is a BOT and whether the token has the `bot:play` scope. It prints the ladder
//! that would run and every problem with what to do about it, and fails when there is any
//! problem. Tokens never appear in what it prints. Lichess is
//! asked through [`crate::lichess::Client`], like everything else.

use std::fmt::Write as _;
use std::io::{BufRead, IsTerminal, Write as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;

use crate::config::{Account, Config, TokenSource};
use crate::levels::{Coefficients, LevelParams};
use crate::lichess::{
    BackoffPolicy, Client, ClientConfig, LichessError, RateLimitPolicy, SharedLimits, Token,
    TokenOwner, token_file_permission_problem, user_agent,
};

/// The OAuth scope a bot token needs.
pub const BOT_SCOPE: &str = "bot:play";

/// Where a Lichess user creates a token with the bot scope already ticked.
pub const TOKEN_URL: &str = "https://lichess.org/account/oauth/token/create?scopes[]=bot:play";

/// `ladder check` options.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The accounts file to check.
    #[arg(long, default_value = "accounts.toml")]
    pub config: PathBuf,
    /// Check files and tokens only; do not ask Lichess.
    #[arg(long)]
    pub offline: bool,
}

/// `ladder upgrade` options.
#[derive(Debug, clap::Args)]
pub struct UpgradeArgs {
    /// The account (username in accounts.toml) to upgrade.
    pub account: String,
    /// The accounts file that names the account and its token.
    #[arg(long, default_value = "accounts.toml")]
    pub config: PathBuf,
    /// Do not ask for confirmation.
    #[arg(long)]
    pub yes: bool,
}

// ---- Findings and the report ----

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

/// One problem: what it is about, what is wrong, and what to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub severity: Severity,
    pub subject: String,
    pub problem: String,
    pub fix: String,
}

/// One account of the ladder as it would run.
#[derive(Clone, Debug)]
pub struct LadderRow {
    pub account: String,
    pub level: f64,
    pub target: String,
    /// Nodes, noise and hash of the level; `None` when the coefficients do not load.
    pub engine: Option<(u64, f64, usize)>,
    /// Where the token comes from (never the token).
    pub token_source: String,
    /// What Lichess said ("BOT, bot:play"), "not asked", or a short failure.
    pub lichess: String,
}

/// Everything `ladder check` found.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub config: String,
    pub facts: Vec<(String, String)>,
    pub rows: Vec<LadderRow>,
    pub findings: Vec<Finding>,
}

impl Report {
    fn error(&mut self, subject: &str, problem: impl Into<String>, fix: impl Into<String>) {
        self.push(Severity::Error, subject, problem, fix);
    }

    fn warning(&mut self, subject: &str, problem: impl Into<String>, fix: impl Into<String>) {
        self.push(Severity::Warning, subject, problem, fix);
    }

    fn push(
        &mut self,
        severity: Severity,
        subject: &str,
        problem: impl Into<String>,
        fix: impl Into<String>,
    ) {
        self.findings.push(Finding {
            severity,
            subject: subject.to_string(),
            problem: problem.into(),
            fix: fix.into(),
        });
    }

    pub fn errors(&self) -> usize {
        self.count(Severity::Error)
    }

    pub fn warnings(&self) -> usize {
        self.count(Severity::Warning)
    }

    fn count(&self, severity: Severity) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == severity)
            .count()
    }

    /// The text `ladder check` prints.
    pub fn render(&self) -> String {
        let mut out = format!("ladder check: {}\n", self.config);
        for (key, value) in &self.facts {
            let _ = writeln!(out, "  {key:<13} {value}");
        }
        if !self.rows.is_empty() {
            let _ = writeln!(
                out,
                "\nthe ladder that would run:\n{:<22} {:>6} {:>18} {:>9} {:>9} {:>5}  {:<34} lichess",
                "account", "level", "target", "nodes", "noise_cp", "hash", "token"
            );
            for r in &self.rows {
                // Without coefficients there are no engine parameters to show (the error below
                // says why).
                let (nodes, noise, hash) = match r.engine {
                    Some((nodes, noise, hash)) => {
                        (nodes.to_string(), format!("{noise:.1}"), format!("{hash}M"))
                    }
                    None => ("-".to_string(), "-".to_string(), "-".to_string()),
                };
                let _ = writeln!(
                    out,
                    "{:<22} {:>6} {:>18} {:>9} {:>9} {:>5}  {:<34} {}",
                    r.account,
                    crate::levels::level_key(r.level),
                    r.target,
                    nodes,
                    noise,
                    hash,
                    r.token_source,
                    r.lichess
                );
            }
            if self.rows.iter().any(|r| r.engine.is_none()) {
                let _ = writeln!(
                    out,
                    "(no nodes, noise or hash: the coefficients file does not load; see below)"
                );
            }
        }
        if !self.findings.is_empty() {
            out.push('\n');
        }
        for f in &self.findings {
            let tag = match f.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
            };
            let _ = writeln!(out, "{tag}: {}: {}", f.subject, f.problem);
            let _ = writeln!(out, "  fix: {}", f.fix);
        }
        let (e, w) = (self.errors(), self.warnings());
        let _ = writeln!(
            out,
            "\n{}",
            match (e, w) {
                (0, 0) => "ok: no problems found".to_string(),
                (0, w) => format!("ok, with {w} warning{}", plural(w)),
                (e, w) => format!("{e} problem{}, {w} warning{}", plural(e), plural(w)),
            }
        );
        out
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

// ---- ladder check ----

pub fn run_check(args: CheckArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let report = runtime.block_on(check(&args.config, !args.offline));
    print!("{}", report.render());
    std::io::stdout().flush().ok();
    match report.errors() {
        0 => Ok(()),
        n => anyhow::bail!(
            "{n} problem{} found in {}; see the fixes above",
            plural(n),
            args.config.display()
        ),
    }
}

/// Checks the deployment described by `config_path`; asks Lichess when `online`.
pub async fn check(config_path: &Path, online: bool) -> Report {
    let mut report = Report {
        config: config_path.display().to_string(),
        ..Report::default()
    };
    let config = match Config::load(config_path) {
        Ok(config) => config,
        Err(e) => {
            let fix = e.fix(config_path);
            report.error("config", e.to_string(), fix);
            return report;
        }
    };
    report
        .facts
        .push(("lichess".into(), config.lichess.base_url.clone()));
    report.facts.push((
        "results".into(),
        config.daemon.results.display().to_string(),
    ));
    check_results_dir(&config.daemon.results, &mut report);

    let coefficients = match Coefficients::load(&config.daemon.coefficients) {
        Ok(c) => {
            report.facts.push((
                "coefficients".into(),
                format!(
                    "{} (version {})",
                    config.daemon.coefficients.display(),
                    c.version
                ),
            ));
            Some(c)
        }
        Err(e) => {
            report.facts.push((
                "coefficients".into(),
                config.daemon.coefficients.display().to_string(),
            ));
            let fix = crate::levels::coefficients_fix(&e, &config.daemon.coefficients);
            report.error("coefficients", e.to_string(), fix);
            None
        }
    };

    let base_url = online.then_some(config.lichess.base_url.as_str());
    // The daemon's shared limits of each token: a check takes turns with it and keeps out of
    // its 429 pauses.
    let shared_dir = SharedLimits::dir_for_results(
        &std::path::absolute(&config.daemon.results).unwrap_or(config.daemon.results.clone()),
    );
    for account in &config.accounts {
        let row = check_account(
            account,
            coefficients.as_ref(),
            base_url,
            &shared_dir,
            &mut report,
        )
        .await;
        report.rows.push(row);
    }
    report
}

/// The daemon appends to the results log, creating its directory if need be (as `ladder run`
/// does): a directory that does not exist yet is said next to the path, not a problem; a path
/// through a file, or a results path that is a directory, is.
fn check_results_dir(results: &Path, report: &mut Report) {
    let dir = results.parent().unwrap_or(Path::new("."));
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    if !dir.is_dir() {
        let blocking = dir.ancestors().find(|a| a.exists() && !a.is_dir());
        if let Some(file) = blocking {
            report.error(
                "results",
                format!(
                    "directory {} cannot be created: {} is a file",
                    dir.display(),
                    file.display()
                ),
                "point daemon.results at a file in a directory (it is created on the first run)",
            );
        } else if let Some((_, value)) = report.facts.iter_mut().find(|(k, _)| k == "results") {
            value.push_str(&format!(
                " (directory {} does not exist yet: `ladder run` creates it)",
                dir.display()
            ));
        }
    } else if results.exists() && !results.is_file() {
        report.error(
            "results",
            format!("{} exists and is not a file", results.display()),
            "point daemon.results at a file (it is created on the first game)",
        );
    }
}

/// Checks one account's token source and, when `base_url` is given, asks Lichess about it.
async fn check_account(
    account: &Account,
    coefficients: Option<&Coefficients>,
    base_url: Option<&str>,
    shared_dir: &Path,
    report: &mut Report,
) -> LadderRow {
    let subject = format!("account {}", account.username);
    let mut row = ladder_row(account, coefficients);
    if let TokenSource::File(path) = &account.token
        && let Some(problem) = token_file_permission_problem(path)
    {
        report.warning(
            &subject,
            problem,
            format!(
                "chmod 600 {} (owned by the user that runs ladder), or hand it over as a systemd \
                 credential (token_file = \"credential:NAME\")",
                path.display()
            ),
        );
    }
    let token = match account.read_token() {
        Ok(token) => token,
        Err(e) => {
            // The subject already names the account.
            let problem = match e {
                crate::config::ConfigError::Token { problem, .. } => problem,
                other => other.to_string(),
            };
            report.error(&subject, problem, token_fix(&account.token));
            row.lichess = "no token".into();
            return row;
        }
    };
    if let Some(base_url) = base_url {
        let shared = SharedLimits::new(shared_dir, &account.username);
        row.lichess = ask_lichess(account, token, base_url, shared, &subject, report).await;
    }
    row
}

/// The account's row of the ladder, before Lichess is asked: its level's parameters (when the
/// coefficients loaded) and where its token comes from.
pub fn ladder_row(account: &Account, coefficients: Option<&Coefficients>) -> LadderRow {
    let params = coefficients.map(|c| LevelParams::new(c, account.level));
    LadderRow {
        account: account.username.clone(),
        level: account.level,
        target: coefficients.map_or("-".to_string(), |c| {
            let targets = c.targets();
            format!("{:.0} {}", targets.target(account.level), targets.scale)
        }),
        engine: params.as_ref().map(|p| (p.nodes, p.noise_cp, p.hash_mb)),
        token_source: match &account.token {
            TokenSource::Env(var) => format!("env {var}"),
            TokenSource::File(path) => format!("file {}", path.display()),
            TokenSource::Credential(name) => match account.token.file() {
                Some(Ok(path)) => format!("file {}", path.display()),
                _ => format!("credential {name}"),
            },
        },
        lichess: "not asked".into(),
    }
}

/// What to do about a token that cannot be read from `source`.
fn token_fix(source: &TokenSource) -> String {
    match source {
        TokenSource::Env(var) => format!(
            "export {var}=<the account's token> before running ladder (create one with \
             the bot:play scope at {TOKEN_URL}), or use token_file instead"
        ),
        TokenSource::File(path) if !path.exists() => format!(
            "write the account's token (one line, scope bot:play, from {TOKEN_URL}) to {}, \
             or correct token_file",
            path.display()
        ),
        TokenSource::File(path) => format!(
            "make {} a readable file holding only the token: owned by the user that runs \
             ladder, mode 600",
            path.display()
        ),
        TokenSource::Credential(_) => "run ladder the way its unit does (LoadCredential=; \
             for `ladder check`: systemd-run, see docs/operating.md) or use a token_file \
             path"
            .to_string(),
    }
}

/// Asks Lichess whose `token` this is (and, for a rejected token, whether the account was
/// closed); every problem goes to `report`. Returns the row's Lichess column. A token in a
/// 429 pause another process recorded (the daemon, `calibrate --fetch`) is not asked about:
/// a call now would lengthen the pause of the daemon's games.
async fn ask_lichess(
    account: &Account,
    token: Token,
    base_url: &str,
    shared: SharedLimits,
    subject: &str,
    report: &mut Report,
) -> String {
    if let Some(until) = shared.paused_until() {
        let left = until
            .duration_since(std::time::SystemTime::now())
            .unwrap_or_default();
        report.warning(
            subject,
            format!(
                "Lichess asked this token to pause (HTTP 429) for another {}; not asked now",
                crate::logging::show_wait(left)
            ),
            "run `ladder check` again after the pause",
        );
        return "paused (429)".into();
    }
    let client = match client(base_url, &account.username, token, shared) {
        Ok(client) => client,
        Err(e) => {
            let failure = Failure::of(&e, base_url);
            report.error(subject, failure.problem, failure.fix);
            return failure.short.into();
        }
    };
    match client.token_owner().await {
        // A closed account's token is rejected like a revoked one: only the account's public
        // data, asked without the token, tells them apart.
        Err(LichessError::TokenRejected { .. })
            if client
                .public_user(&account.username)
                .await
                .is_ok_and(|user| user.disabled) =>
        {
            report.error(
                subject,
                format!("the Lichess account {} is closed", account.username),
                "reopen it (log in on Lichess), or remove it from accounts.toml",
            );
            "account closed".into()
        }
        Err(e) => {
            let failure = Failure::of(&e, base_url);
            report.error(subject, failure.problem, failure.fix);
            failure.short.into()
        }
        Ok(owner) => owner_verdict(account, owner, subject, report),
    }
}

/// Whether the token's `owner` is the account, a BOT, and gave the token the bot scope; every
/// problem goes to `report`. Returns the verdict for the row ("BOT, bot:play").
fn owner_verdict(
    account: &Account,
    owner: TokenOwner,
    subject: &str,
    report: &mut Report,
) -> String {
    let TokenOwner {
        account: me,
        scopes,
    } = owner;
    let mut verdict = Vec::new();
    if !me.username.eq_ignore_ascii_case(&account.username) {
        report.error(
            subject,
            format!(
                "the token belongs to {}, not {}",
                me.username, account.username
            ),
            format!(
                "give {} a token created while logged in as {} (or correct username)",
                account.username, account.username
            ),
        );
        verdict.push(format!("token of {}", me.username));
    }
    if me.is_bot() {
        verdict.push("BOT".to_string());
    } else {
        report.error(
            subject,
            format!(
                "{} is not a BOT account (title: {})",
                me.username,
                me.title.as_deref().unwrap_or("none")
            ),
            format!(
                "upgrade it with `ladder upgrade {} --config <accounts.toml>` (irreversible; \
                 only an account that has never played a game can be upgraded)",
                account.username
            ),
        );
        verdict.push("not a BOT".to_string());
    }
    verdict.push(scope_verdict(scopes.as_deref(), subject, report));
    verdict.join(", ")
}

/// Whether the token's `scopes` (when Lichess said) hold [`BOT_SCOPE`].
fn scope_verdict(scopes: Option<&[String]>, subject: &str, report: &mut Report) -> String {
    match scopes {
        Some(scopes) if scopes.iter().any(|s| s == BOT_SCOPE) => BOT_SCOPE.to_string(),
        Some(scopes) => {
            report.error(
                subject,
                format!(
                    "the token lacks the {BOT_SCOPE} scope (it has: {})",
                    if scopes.is_empty() {
                        "none".to_string()
                    } else {
                        scopes.join(", ")
                    }
                ),
                format!(
                    "create a new token with {BOT_SCOPE} at {TOKEN_URL} and replace the old one"
                ),
            );
            format!("no {BOT_SCOPE}")
        }
        None => {
            report.warning(
                subject,
                "Lichess did not say which scopes the token has",
                format!("make sure the token was created with {BOT_SCOPE}"),
            );
            "scopes unknown".to_string()
        }
    }
}

// ---- Talking to Lichess ----

/// A client for one account's token, paced for a command someone is waiting on: one retry
/// after a network error or 5xx, and no minute-long pause after a 429 (they run the command
/// again). It names the account in its User-Agent, as the daemon's clients do.
fn client(
    base_url: &str,
    username: &str,
    token: Token,
    shared: SharedLimits,
) -> Result<Client, LichessError> {
    let mut config = ClientConfig::new(base_url, token);
    config.shared_limits = Some(shared);
    config.user_agent = user_agent(Some(username));
    config.backoff = BackoffPolicy {
        base: Duration::from_millis(250),
        cap: Duration::from_secs(1),
        max_attempts: 2,
    };
    config.rate_limit = RateLimitPolicy {
        pause: Duration::ZERO,
        max_attempts: 1,
    };
    config.request_timeout = Duration::from_secs(30);
    Client::new(config)
}

/// A failed Lichess call as `check` reports it.
struct Failure {
    problem: String,
    /// For the ladder table.
    short: &'static str,
    fix: String,
}

impl Failure {
    fn of(e: &LichessError, base_url: &str) -> Failure {
        match e {
            LichessError::TokenRejected { .. } => Failure {
                problem: "Lichess rejected the token (HTTP 401): it is revoked, expired or \
                          mistyped"
                    .into(),
                short: "token rejected",
                fix: format!(
                    "create a new token with the {BOT_SCOPE} scope at {TOKEN_URL} while logged \
                     in as this account, and replace the old one"
                ),
            },
            LichessError::Unavailable { last, .. } => Failure {
                problem: format!("cannot reach Lichess at {base_url}: {last}"),
                short: "unreachable",
                fix: "check the network (and lichess.base_url), then run ladder check again".into(),
            },
            LichessError::RateLimited { .. } => Failure {
                problem: "Lichess is rate limiting us (HTTP 429)".into(),
                short: "rate limited",
                fix: "wait a minute, then run ladder check again".into(),
            },
            other => Failure {
                problem: other.to_string(),
                short: "error",
                fix: "run ladder check again later; if it persists, check lichess.base_url".into(),
            },
        }
    }
}

// ---- ladder upgrade ----

pub fn run_upgrade(args: UpgradeArgs) -> anyhow::Result<()> {
    let config = Config::load_or_explain(&args.config)?;
    let account = config.account(&args.account).with_context(|| {
        format!(
            "{} has no account {} (it has: {})",
            args.config.display(),
            args.account,
            config
                .accounts
                .iter()
                .map(|a| a.username.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    })?;
    let token = account.load_token()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let base_url = config.lichess.base_url.as_str();
    let shared = SharedLimits::new(
        SharedLimits::dir_for_results(
            &std::path::absolute(&config.daemon.results).unwrap_or(config.daemon.results.clone()),
        ),
        &account.username,
    );
    let client = client(base_url, &account.username, token, shared)?;
    let fail = |e: &LichessError| {
        let failure = Failure::of(e, base_url);
        anyhow::anyhow!("{}; fix: {}", failure.problem, failure.fix)
    };

    let TokenOwner {
        account: me,
        scopes,
    } = runtime
        .block_on(client.token_owner())
        .map_err(|e| fail(&e))?;
    if !me.username.eq_ignore_ascii_case(&account.username) {
        anyhow::bail!(
            "the token of {} belongs to {}: refusing to upgrade another account; give {} its own token",
            account.username,
            me.username,
            account.username
        );
    }
    if me.is_bot() {
        println!("{} is already a BOT account: nothing to do.", me.username);
        return Ok(());
    }
    if let Some(scopes) = &scopes
        && !scopes.iter().any(|s| s == BOT_SCOPE)
    {
        anyhow::bail!(
            "the token of {} lacks the {BOT_SCOPE} scope, which the upgrade needs; create one at {TOKEN_URL}",
            me.username
        );
    }

    println!(
        "This turns the Lichess account {name} into a BOT account.\n\
         It is irreversible: {name} will only ever play as a bot (challenge games through the Bot \
         API, no pools, no tournaments for humans).\n\
         Lichess refuses the upgrade if {name} has already played a game.",
        name = me.username
    );
    if !args.yes && !confirm(&me.username)? {
        println!("Not upgraded.");
        return Ok(());
    }
    runtime
        .block_on(client.upgrade_to_bot())
        .map_err(|e| match &e {
            LichessError::BadRequest { .. } => anyhow::anyhow!(
                "{e}\nfix: only an account that has never played a game can become a BOT; create \
                 a fresh account for this level"
            ),
            _ => fail(&e),
        })?;
    println!("{} is now a BOT account.", me.username);
    Ok(())
}

/// Asks on stdin; only `yes` upgrades. A closed stdin says no.
fn confirm(username: &str) -> anyhow::Result<bool> {
    print!("Type yes to upgrade {username}: ");
    std::io::stdout().flush().ok();
    let mut line = String::new();
    let stdin = std::io::stdin();
    if stdin
        .lock()
        .read_line(&mut line)
        .context("cannot read the answer")?
        == 0
    {
        if !stdin.is_terminal() {
            println!();
            println!("(no answer on stdin: pass --yes to upgrade without asking)");
        }
        return Ok(false);
    }
    Ok(line.trim().eq_ignore_ascii_case("yes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_lists_each_problem_with_its_fix_and_counts() {
        let mut report = Report {
            config: "a.toml".into(),
            ..Report::default()
        };
        assert!(report.render().contains("ok: no problems found"));
        report.warning("account x", "file open", "chmod 600 f");
        assert!(report.render().contains("ok, with 1 warning"));
        report.error("account y", "no token", "export Y");
        let text = report.render();
        assert!(
            text.contains("error: account y: no token\n  fix: export Y"),
            "{text}"
        );
        assert!(
            text.contains("warning: account x: file open\n  fix: chmod 600 f"),
            "{text}"
        );
        assert!(text.contains("1 problem, 1 warning"), "{text}");
        assert_eq!(report.errors(), 1);
    }
}
