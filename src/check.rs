//! `ladder check` and `ladder upgrade`: validate a deployment without playing, and turn a fresh
//! Lichess account into a BOT account.
//!
//! `check` goes through everything `ladder run` will need — accounts.toml, the coefficients, the
//! results directory, every token (and its file's permissions) — then asks Lichess, once per
//! token, whose token it is, whether that account is a BOT and whether the token has the
//! `bot:play` scope. It prints the ladder that would run and every problem with what to do about
//! it, and fails when there is any problem. Tokens never appear in what it prints.

use std::fmt::Write as _;
use std::io::{BufRead, IsTerminal, Write as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use serde::Deserialize;

use crate::config::{Account, Config, TokenSource};
use crate::levels::{Coefficients, LevelParams};
use crate::lichess::token_file_permission_problem;

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
    pub nodes: u64,
    pub noise_cp: f64,
    pub hash_mb: usize,
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
                "\nthe ladder that would run:\n{:<22} {:>6} {:>16} {:>9} {:>9} {:>5}  {:<34} lichess",
                "account", "level", "target", "nodes", "noise_cp", "hash", "token"
            );
            for r in &self.rows {
                let _ = writeln!(
                    out,
                    "{:<22} {:>6} {:>16} {:>9} {:>9.1} {:>4}M  {:<34} {}",
                    r.account,
                    crate::levels::level_key(r.level),
                    r.target,
                    r.nodes,
                    r.noise_cp,
                    r.hash_mb,
                    r.token_source,
                    r.lichess
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
            let fix = match e {
                crate::config::ConfigError::Read { .. } => format!(
                    "give the right path with --config, or create {} (see docs/operating.md)",
                    config_path.display()
                ),
                _ => "correct that line of the file (accounts.toml in the repository is a \
                      commented example)"
                    .to_string(),
            };
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
            let fix = match &e {
                crate::levels::CoefficientsError::Read { .. } => format!(
                    "copy calibration/coefficients.toml from the repository to {} (or point \
                     daemon.coefficients at it)",
                    config.daemon.coefficients.display()
                ),
                _ => "correct the file, or restore a good version from calibration/history/ \
                      (see docs/operating.md, rolling back)"
                    .to_string(),
            };
            report.error("coefficients", e.to_string(), fix);
            None
        }
    };

    let client = if online {
        match http_client() {
            Ok(c) => Some(c),
            Err(e) => {
                report.error(
                    "lichess",
                    format!("cannot build the HTTP client: {e}"),
                    "this is a bug; report it",
                );
                None
            }
        }
    } else {
        None
    };

    for account in &config.accounts {
        let row = check_account(
            account,
            coefficients.as_ref(),
            &config.lichess.base_url,
            client.as_ref(),
            &mut report,
        )
        .await;
        report.rows.push(row);
    }
    report
}

/// The daemon appends to the results log: its directory must exist (systemd's StateDirectory=
/// creates it) and the file, if present, must be a file.
fn check_results_dir(results: &Path, report: &mut Report) {
    let dir = results.parent().unwrap_or(Path::new("."));
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    if !dir.is_dir() {
        report.error(
            "results",
            format!("directory {} does not exist", dir.display()),
            format!(
                "create it (mkdir -p {}), or point daemon.results somewhere that exists; under \
                 systemd, StateDirectory=ladder creates /var/lib/ladder",
                dir.display()
            ),
        );
    } else if results.exists() && !results.is_file() {
        report.error(
            "results",
            format!("{} exists and is not a file", results.display()),
            "point daemon.results at a file (it is created on the first game)",
        );
    }
}

async fn check_account(
    account: &Account,
    coefficients: Option<&Coefficients>,
    base_url: &str,
    client: Option<&reqwest::Client>,
    report: &mut Report,
) -> LadderRow {
    let subject = format!("account {}", account.username);
    let params = coefficients.map(|c| LevelParams::new(c, account.level));
    let mut row = LadderRow {
        account: account.username.clone(),
        level: account.level,
        target: format!("{} {}", account.target_rating, account.target_perf),
        nodes: params.as_ref().map_or(0, |p| p.nodes),
        noise_cp: params.as_ref().map_or(f64::NAN, |p| p.noise_cp),
        hash_mb: params.as_ref().map_or(0, |p| p.hash_mb),
        token_source: match &account.token {
            TokenSource::Env(var) => format!("env {var}"),
            TokenSource::File(path) => format!("file {}", path.display()),
        },
        lichess: "not asked".into(),
    };

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
    let token = match account.load_token() {
        Ok(token) => token,
        Err(e) => {
            let fix = match &account.token {
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
            };
            // The subject already names the account.
            let problem = match e {
                crate::config::ConfigError::Token { problem, .. } => problem,
                other => other.to_string(),
            };
            report.error(&subject, problem, fix);
            row.lichess = "no token".into();
            return row;
        }
    };

    let Some(client) = client else {
        return row;
    };
    match whoami(client, base_url, &token).await {
        Err(ProbeError::Unauthorized)
            if account_closed(base_url, &account.username, &token).await =>
        {
            row.lichess = "account closed".into();
            report.error(
                &subject,
                format!("the Lichess account {} is closed", account.username),
                "reopen it (log in on Lichess), or remove it from accounts.toml",
            );
        }
        Err(e) => {
            row.lichess = e.short().into();
            report.error(&subject, e.to_string(), e.fix());
        }
        Ok(me) => {
            let mut verdict = Vec::new();
            if !me.username.eq_ignore_ascii_case(&account.username) {
                report.error(
                    &subject,
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
                    &subject,
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
            match &me.scopes {
                Some(scopes) if scopes.iter().any(|s| s == BOT_SCOPE) => {
                    verdict.push(BOT_SCOPE.to_string())
                }
                Some(scopes) => {
                    report.error(
                        &subject,
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
                    verdict.push(format!("no {BOT_SCOPE}"));
                }
                None => {
                    report.warning(
                        &subject,
                        "Lichess did not say which scopes the token has",
                        format!("make sure the token was created with {BOT_SCOPE}"),
                    );
                    verdict.push("scopes unknown".to_string());
                }
            }
            row.lichess = verdict.join(", ");
        }
    }
    row
}

// ---- Talking to Lichess ----

/// Who a token belongs to, as Lichess says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub username: String,
    pub title: Option<String>,
    /// `None` when Lichess did not tell.
    pub scopes: Option<Vec<String>>,
}

impl Identity {
    pub fn is_bot(&self) -> bool {
        self.title.as_deref() == Some("BOT")
    }
}

/// Why Lichess could not tell who a token belongs to. Never carries the token.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("cannot reach Lichess at {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("Lichess rejected the token (HTTP 401): it is revoked, expired or mistyped")]
    Unauthorized,
    #[error("Lichess is rate limiting us (HTTP 429)")]
    RateLimited,
    #[error("Lichess answered HTTP {status} to {what}: {body}")]
    Status {
        what: String,
        status: u16,
        body: String,
    },
    #[error("unexpected answer from Lichess to {what}: {reason}")]
    Malformed { what: String, reason: String },
}

impl ProbeError {
    fn short(&self) -> &'static str {
        match self {
            ProbeError::Unreachable { .. } => "unreachable",
            ProbeError::Unauthorized => "token rejected",
            ProbeError::RateLimited => "rate limited",
            ProbeError::Status { .. } | ProbeError::Malformed { .. } => "error",
        }
    }

    fn fix(&self) -> String {
        match self {
            ProbeError::Unreachable { .. } => {
                "check the network (and lichess.base_url), then run ladder check again".into()
            }
            ProbeError::Unauthorized => format!(
                "create a new token with the {BOT_SCOPE} scope at {TOKEN_URL} while logged in as \
                 this account, and replace the old one"
            ),
            ProbeError::RateLimited => "wait a minute, then run ladder check again".into(),
            ProbeError::Status { .. } | ProbeError::Malformed { .. } => {
                "run ladder check again later; if it persists, check lichess.base_url".into()
            }
        }
    }
}

/// Whether Lichess shows `username` as closed: a closed account's token is rejected like a
/// revoked one, and only its public data (asked without the token) tells them apart.
async fn account_closed(base_url: &str, username: &str, token: &str) -> bool {
    let Ok(token) = crate::lichess::Token::new(token, "the account's token source") else {
        return false;
    };
    let mut config = crate::lichess::ClientConfig::new(base_url, token);
    config.user_agent = crate::lichess::user_agent(Some(username));
    config.backoff.max_attempts = 2;
    match crate::lichess::Client::new(config) {
        Ok(client) => client
            .public_user(username)
            .await
            .is_ok_and(|user| user.disabled),
        Err(_) => false,
    }
}

pub fn http_client() -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .user_agent(concat!("ladder/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(30))
        .build()
}

#[derive(Deserialize)]
struct AccountJson {
    username: String,
    #[serde(default)]
    title: Option<String>,
}

/// `GET /api/account`: the token's user and title; the scopes from the `X-OAuth-Scopes` header
/// that Lichess adds to OAuth responses, or else from `POST /api/token/test` (the documented way).
pub async fn whoami(
    client: &reqwest::Client,
    base_url: &str,
    token: &str,
) -> Result<Identity, ProbeError> {
    let url = format!("{base_url}/api/account");
    let response = client
        .get(&url)
        .bearer_auth(token)
        .send()
        .await
        .map_err(|e| unreachable(base_url, &e))?;
    let response = ok_status(response, "GET /api/account").await?;
    let header_scopes = response
        .headers()
        .get("x-oauth-scopes")
        .and_then(|v| v.to_str().ok())
        .map(parse_scopes);
    let account: AccountJson = response.json().await.map_err(|e| ProbeError::Malformed {
        what: "GET /api/account".into(),
        reason: e.without_url().to_string(),
    })?;
    let scopes = match header_scopes {
        Some(scopes) => Some(scopes),
        None => token_test_scopes(client, base_url, token).await,
    };
    Ok(Identity {
        username: account.username,
        title: account.title,
        scopes,
    })
}

/// `POST /api/token/test` with the token as body: `{"<token>": {"scopes": "a,b", …} | null}`.
/// `None` when the endpoint gives nothing usable (then the scopes stay unknown).
async fn token_test_scopes(
    client: &reqwest::Client,
    base_url: &str,
    token: &str,
) -> Option<Vec<String>> {
    #[derive(Deserialize)]
    struct TokenInfo {
        scopes: String,
    }
    let response = client
        .post(format!("{base_url}/api/token/test"))
        .header(reqwest::header::CONTENT_TYPE, "text/plain")
        .body(token.to_string())
        .send()
        .await
        .ok()?;
    if !response.status().is_success() {
        return None;
    }
    let map: std::collections::HashMap<String, Option<TokenInfo>> = response.json().await.ok()?;
    map.get(token)?
        .as_ref()
        .map(|info| parse_scopes(&info.scopes))
}

fn parse_scopes(header: &str) -> Vec<String> {
    header
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn unreachable(base_url: &str, e: &reqwest::Error) -> ProbeError {
    // The innermost cause says what happened ("Connection refused", a DNS failure); the outer
    // layers only repeat the URL. The token is in a header, never in any of them.
    let reason = if e.is_timeout() {
        "timed out".to_string()
    } else {
        let mut cause: &dyn std::error::Error = e;
        while let Some(inner) = cause.source() {
            cause = inner;
        }
        cause.to_string()
    };
    ProbeError::Unreachable {
        url: base_url.to_string(),
        reason,
    }
}

async fn ok_status(
    response: reqwest::Response,
    what: &str,
) -> Result<reqwest::Response, ProbeError> {
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    match status.as_u16() {
        401 => Err(ProbeError::Unauthorized),
        429 => Err(ProbeError::RateLimited),
        code => {
            let body = response.text().await.unwrap_or_default();
            Err(ProbeError::Status {
                what: what.to_string(),
                status: code,
                body: lichess_error_text(&body),
            })
        }
    }
}

/// Lichess errors are `{"error": "…"}`; show that sentence, or a short prefix of anything else.
fn lichess_error_text(body: &str) -> String {
    #[derive(Deserialize)]
    struct ErrorJson {
        error: String,
    }
    match serde_json::from_str::<ErrorJson>(body) {
        Ok(e) => e.error,
        Err(_) => body.trim().chars().take(200).collect(),
    }
}

// ---- ladder upgrade ----

pub fn run_upgrade(args: UpgradeArgs) -> anyhow::Result<()> {
    let config = Config::load(&args.config)?;
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
    let client = http_client().context("cannot build the HTTP client")?;

    let me = runtime
        .block_on(whoami(&client, base_url, &token))
        .map_err(|e| anyhow::anyhow!("{e}; fix: {}", e.fix()))?;
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
    if let Some(scopes) = &me.scopes
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
        .block_on(upgrade(&client, base_url, &token))
        .map_err(|e| match &e {
            ProbeError::Status { status: 400, .. } => anyhow::anyhow!(
                "{e}\nfix: only an account that has never played a game can become a BOT; create \
                 a fresh account for this level"
            ),
            _ => anyhow::anyhow!("{e}; fix: {}", e.fix()),
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

/// `POST /api/bot/account/upgrade`.
pub async fn upgrade(
    client: &reqwest::Client,
    base_url: &str,
    token: &str,
) -> Result<(), ProbeError> {
    let response = client
        .post(format!("{base_url}/api/bot/account/upgrade"))
        .bearer_auth(token)
        .send()
        .await
        .map_err(|e| unreachable(base_url, &e))?;
    ok_status(response, "POST /api/bot/account/upgrade").await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_header_is_split_and_trimmed() {
        assert_eq!(
            parse_scopes("bot:play, challenge:read,board:play"),
            vec!["bot:play", "challenge:read", "board:play"]
        );
        assert!(parse_scopes("").is_empty());
    }

    #[test]
    fn lichess_error_body_is_shown_as_its_sentence() {
        assert_eq!(
            lichess_error_text(r#"{"error":"This account has already played games"}"#),
            "This account has already played games"
        );
        assert_eq!(lichess_error_text("  <html>oops"), "<html>oops");
    }

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
