//! accounts.toml: the daemon's configuration types, defaults and validation.
//!
//! Every error names the file, the line and the key ("accounts.toml:23: accounts[2].level: must
//! be > 0"): syntax and unknown keys come from toml's spanned errors, semantic checks read the
//! spans kept by [`toml::Spanned`]. Tokens are never part of the file: an account names an
//! environment variable or a file (systemd credentials) to read it from.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use crate::lichess::{MAX_CHAT_CHARS, Speed, Token};
use crate::player::chat::{LONGEST_USERNAME, longest_line};
use crate::player::conduct::{Conduct, NEVER_RESIGN_BELOW};
use crate::player::think::{DEFAULT_MAX_THINK, ThinkMode, ThinkSettings};
use crate::toml_file::{FileError, FileText};

/// Variants the engine can play (the `variant.key` of a challenge).
pub const VARIANTS: &[&str] = &["standard", "chess960", "fromPosition"];

/// Speeds an account may accept: those Lichess lets a bot play.
pub fn bot_speeds() -> impl Iterator<Item = Speed> {
    Speed::ALL.into_iter().filter(|s| s.bots_may_play())
}

/// The speeds an account's `speeds` may name: those of [`bot_speeds`] with a real-time clock.
pub fn real_time_bot_speeds() -> impl Iterator<Item = Speed> {
    bot_speeds().filter(|s| *s != Speed::Correspondence)
}

fn list<T: std::fmt::Display>(items: impl Iterator<Item = T>) -> String {
    items.map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
}

/// Search threads at most: one per core on any machine this runs on, well under the units'
/// TasksMax (256 for the daemon).
pub const MAX_SEARCH_THREADS: i64 = 64;
/// Games at once, over all accounts or for one account.
pub const MAX_GAMES: i64 = 1000;
/// Move overhead at most (a minute of every move would be no game).
pub const MAX_MOVE_OVERHEAD_MS: i64 = 60_000;
/// Durations in seconds at most: a day.
pub const DAY_S: i64 = 86_400;
/// Correspondence days per move (Lichess offers up to 14).
pub const MAX_DAYS: i64 = 365;
/// `max_think_s` at most (ten minutes on one move is no longer a game of chess).
pub const MAX_THINK_S: i64 = 600;
/// `takebacks` per game at most.
pub const MAX_TAKEBACKS: i64 = 100;

/// Why a key has the upper bound it has, for the error message.
fn limit_reason(key: &str) -> &'static str {
    match key {
        "search_threads" => " (threads share the cores; the unit's TasksMax is 256)",
        "max_think_s" => " (ten minutes)",
        k if k.ends_with("_s") => " (one day)",
        _ => "",
    }
}

/// A configuration problem.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be read, or a key is unknown, mistyped or makes no sense.
    #[error(transparent)]
    File(#[from] FileError),
    /// A token that cannot be loaded. Never carries the token itself.
    #[error("account {account}: {problem}")]
    Token { account: String, problem: String },
}

impl ConfigError {
    /// What to do about it, for a person at a terminal (`path` is the file asked for).
    pub fn fix(&self, path: &Path) -> String {
        match self {
            ConfigError::File(FileError::Read { .. }) if !path.exists() => format!(
                "give the right path with --config, or create {}: copy accounts.toml from the \
                 repository (the ladder's twelve accounts, commented) and put your accounts and \
                 token settings in it (docs/operating.md, \"Configure\"); `ladder run \
                 --sandbox` needs no accounts.toml",
                path.display()
            ),
            ConfigError::File(FileError::Read { .. }) => format!(
                "make {} readable by the user that runs ladder",
                path.display()
            ),
            ConfigError::File(_) => "correct that line of the file (accounts.toml in the \
                                     repository is a commented example)"
                .to_string(),
            ConfigError::Token { .. } => {
                "`ladder check` says, per account, where its token is looked for and how to \
                 provide it"
                    .to_string()
            }
        }
    }
}

/// The whole file.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The file this was loaded from (relative paths in it are relative to its directory).
    pub path: PathBuf,
    pub lichess: LichessConfig,
    pub daemon: DaemonConfig,
    pub accounts: Vec<Account>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct LichessConfig {
    /// `https://lichess.org`, or a loopback `http://` URL (the sandbox, tests).
    pub base_url: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct DaemonConfig {
    pub results: PathBuf,
    pub coefficients: PathBuf,
    /// Blocking search threads shared by every account.
    pub search_threads: usize,
    /// Games running at once over all accounts.
    pub max_games: usize,
    /// Subtracted from our clock for network and server latency.
    pub move_overhead_ms: u64,
    /// Abort a game whose opponent has not made a first move after this long.
    pub abort_after_s: u64,
    /// After SIGTERM, running games may finish for this long.
    pub shutdown_grace_s: u64,
    /// How often the one-line status (games running, queued, games today) is logged.
    pub status_interval_s: u64,
}

/// Which challenges an account accepts.
#[derive(Clone, Debug, PartialEq)]
pub struct ChallengePolicy {
    pub variants: Vec<String>,
    pub speeds: Vec<Speed>,
    /// Initial clock, seconds (`min_initial_s`, `max_initial_s`).
    pub initial_s: Bounds,
    /// Increment, seconds (`min_increment_s`, `max_increment_s`).
    pub increment_s: Bounds,
    /// Correspondence days per move (`min_days`, `max_days`; only if "correspondence" is in
    /// `speeds`).
    pub days: Bounds,
    pub rated: bool,
    pub casual: bool,
    pub accept_bots: bool,
    /// Accept challenges from people who are not logged in (`challenger: null`); declined
    /// by default.
    pub accept_anonymous: bool,
    /// Games of this account at once.
    pub max_games: usize,
    /// Games of this account against the same opponent at once.
    pub max_games_per_opponent: usize,
    /// People's challenges that wait, unanswered, while every slot is busy, to be accepted
    /// (the oldest first) when one frees; 0: busy means an at-once `later` decline.
    pub max_waiting: usize,
    /// Lichess user ids (lowercase) whose challenges are declined.
    pub block: Vec<String>,
}

/// The least and the most a challenge's clock or days per move may be, both inclusive; in
/// accounts.toml the keys `min_NAME` and `max_NAME`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    pub min: u64,
    pub max: u64,
}

impl Default for ChallengePolicy {
    fn default() -> Self {
        ChallengePolicy {
            variants: vec!["standard".into()],
            speeds: vec![Speed::Bullet, Speed::Blitz, Speed::Rapid],
            initial_s: Bounds { min: 60, max: 1800 },
            increment_s: Bounds { min: 0, max: 30 },
            days: Bounds { min: 1, max: 14 },
            rated: true,
            casual: true,
            accept_bots: true,
            accept_anonymous: false,
            max_games: 2,
            max_games_per_opponent: 1,
            max_waiting: 2,
            block: Vec::new(),
        }
    }
}

/// Where an account's token comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenSource {
    Env(String),
    File(PathBuf),
    /// A systemd credential (`token_file = "credential:NAME"`): the file NAME in
    /// `$CREDENTIALS_DIRECTORY`, looked up only when the token is read, so commands that need no
    /// token (calibration from the local results) load the file outside the daemon's unit.
    Credential(String),
}

impl TokenSource {
    /// The file the token is read from (`None` for an environment variable); a credential
    /// outside its unit is an error saying what to do.
    pub fn file(&self) -> Option<Result<PathBuf, String>> {
        match self {
            TokenSource::Env(_) => None,
            TokenSource::File(path) => Some(Ok(path.clone())),
            TokenSource::Credential(name) => Some(crate::credentials::credential_path(
                name,
                std::env::var_os(crate::credentials::CREDENTIALS_DIRECTORY).as_deref(),
            )),
        }
    }

    /// The setting as accounts.toml spells it, for messages (never the token).
    pub fn setting(&self) -> String {
        match self {
            TokenSource::Env(var) => format!("token_env = {var:?}"),
            TokenSource::File(path) => format!("token_file = {:?}", path.display().to_string()),
            TokenSource::Credential(name) => format!(
                "token_file = \"{}{name}\"",
                crate::credentials::CREDENTIAL_PREFIX
            ),
        }
    }
}

/// What an account says to its opponent in the player room, each line with `{me}`/`{opponent}`
/// substituted; `None`: nothing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChatLines {
    /// Sent when a game starts.
    pub greeting: Option<String>,
    /// Sent when a game ends (not after an abort: there was no game).
    pub goodbye: Option<String>,
    /// Sent to the spectators' room when a game starts (who plays, what the level is).
    pub spectator_greeting: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Account {
    /// Lichess username (as displayed).
    pub username: String,
    pub token: TokenSource,
    /// The account's level; its target is the ladder's for that level (the coefficients'
    /// `[targets]`, [`crate::levels::Coefficients::targets`]), never set per account.
    pub level: f64,
    pub chat_lines: ChatLines,
    pub challenge: ChallengePolicy,
    /// `think_time` and `max_think_s`: how the account paces its moves.
    pub think: ThinkSettings,
    /// `takebacks`, `accept_draws`, `resign` (defaults by level: [`Conduct::defaults_for`]).
    pub conduct: Conduct,
}

impl Account {
    /// The Lichess user id (lowercase username).
    pub fn id(&self) -> String {
        self.username.to_lowercase()
    }

    /// Reads the token (validated by [`Token::new`]). Errors name the account and the setting
    /// and say where the token was looked for, never what it is. A token file that other users
    /// can read is logged as a warning ([`crate::credentials::warn_if_exposed`]), so `run`
    /// says so at start-up as `check` does.
    pub fn load_token(&self) -> Result<Token, ConfigError> {
        if let Some(Ok(path)) = self.token.file() {
            crate::credentials::warn_if_exposed(&path);
        }
        self.read_token()
    }

    /// [`Account::load_token`] without the warning, for `check`, which reports it itself.
    pub fn read_token(&self) -> Result<Token, ConfigError> {
        let problem = |problem: String| ConfigError::Token {
            account: self.username.clone(),
            problem: format!("{}: {problem}", self.token.setting()),
        };
        let (raw, origin) = match (&self.token, self.token.file()) {
            (TokenSource::Env(var), _) => (
                std::env::var(var)
                    .map_err(|_| problem(format!("environment variable {var} is not set")))?,
                format!("environment variable {var}"),
            ),
            (_, Some(Ok(path))) => (
                std::fs::read_to_string(&path)
                    .map_err(|e| problem(format!("cannot read {}: {e}", path.display())))?,
                format!("token file {}", path.display()),
            ),
            (_, Some(Err(why))) => return Err(problem(why)),
            (_, None) => unreachable!("only token_env has no file"),
        };
        Token::new(&raw, &origin).map_err(|e| problem(e.to_string()))
    }
}

impl Config {
    /// Reads and validates `path`.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = crate::toml_file::read_text(path)?;
        Config::parse(&text, path)
    }

    /// [`Config::load`] for a command: the error carries what to do about it.
    pub fn load_or_explain(path: &Path) -> anyhow::Result<Config> {
        Config::load(path).map_err(|e| {
            let fix = e.fix(path);
            crate::exit::with_fix(e, fix)
        })
    }

    /// Parses and validates `text`; `path` names the file in errors and anchors relative paths.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let origin = path.file_name().map_or_else(
            || path.display().to_string(),
            |f| f.to_string_lossy().into(),
        );
        let raw: RawConfig = crate::toml_file::parse_toml(text, &origin)?;
        let base_dir = path.parent().unwrap_or(Path::new(""));
        Validator {
            file: FileText {
                text,
                origin: &origin,
            },
        }
        .build(raw, path, base_dir)
    }

    pub fn account(&self, username: &str) -> Option<&Account> {
        self.accounts
            .iter()
            .find(|a| a.username.eq_ignore_ascii_case(username))
    }
}

// ---- The file as written: every key optional where a default exists, spans kept. ----

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    lichess: Option<RawLichess>,
    #[serde(default)]
    daemon: Option<RawDaemon>,
    #[serde(default)]
    challenge: Option<RawChallenge>,
    #[serde(default)]
    accounts: Vec<Spanned<RawAccount>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLichess {
    base_url: Option<Spanned<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawDaemon {
    results: Option<String>,
    coefficients: Option<String>,
    search_threads: Option<Spanned<i64>>,
    max_games: Option<Spanned<i64>>,
    move_overhead_ms: Option<Spanned<i64>>,
    abort_after_s: Option<Spanned<i64>>,
    shutdown_grace_s: Option<Spanned<i64>>,
    status_interval_s: Option<Spanned<i64>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawChallenge {
    variants: Option<Spanned<Vec<String>>>,
    speeds: Option<Spanned<Vec<String>>>,
    min_initial_s: Option<Spanned<i64>>,
    max_initial_s: Option<Spanned<i64>>,
    min_increment_s: Option<Spanned<i64>>,
    max_increment_s: Option<Spanned<i64>>,
    min_days: Option<Spanned<i64>>,
    max_days: Option<Spanned<i64>>,
    rated: Option<bool>,
    casual: Option<bool>,
    accept_bots: Option<bool>,
    accept_anonymous: Option<bool>,
    max_games: Option<Spanned<i64>>,
    max_games_per_opponent: Option<Spanned<i64>>,
    max_waiting: Option<Spanned<i64>>,
    block: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAccount {
    username: Spanned<String>,
    token_env: Option<Spanned<String>>,
    token_file: Option<Spanned<String>>,
    level: Spanned<f64>,
    /// No longer read: refused with what to do instead ([`Validator::no_own_target`]).
    #[serde(default)]
    target_rating: Option<Spanned<toml::Value>>,
    #[serde(default)]
    target_perf: Option<Spanned<toml::Value>>,
    greeting: Option<Spanned<String>>,
    goodbye: Option<Spanned<String>>,
    spectator_greeting: Option<Spanned<String>>,
    think_time: Option<Spanned<String>>,
    max_think_s: Option<Spanned<i64>>,
    takebacks: Option<Spanned<i64>>,
    accept_draws: Option<bool>,
    resign: Option<Spanned<bool>>,
    #[serde(default)]
    challenge: Option<RawChallenge>,
}

/// Turns the file as written into a [`Config`], checking every value where its span is known.
struct Validator<'a> {
    file: FileText<'a>,
}

impl Validator<'_> {
    /// An integer in `bounds` with its default. The upper bounds keep every accepted value
    /// usable: a duration that overflows when added to the clock, or more threads than the
    /// unit's TasksMax, would panic or abort long after the file was accepted.
    fn count(
        &self,
        value: &Option<Spanned<i64>>,
        key: &str,
        bounds: std::ops::RangeInclusive<i64>,
        default: u64,
    ) -> Result<u64, ConfigError> {
        match value {
            None => Ok(default),
            Some(v) if *v.get_ref() < *bounds.start() => {
                self.file
                    .invalid(v.span(), key, format!("must be >= {}", bounds.start()))
            }
            Some(v) if *v.get_ref() > *bounds.end() => self.file.invalid(
                v.span(),
                key,
                format!(
                    "must be <= {}{}",
                    bounds.end(),
                    limit_reason(key.rsplit('.').next().unwrap_or(key))
                ),
            ),
            Some(v) => Ok(*v.get_ref() as u64),
        }
    }

    /// The whole file, section by section: `[lichess]`, `[daemon]`, the `[challenge]` defaults,
    /// then every `[[accounts]]` (which may override those defaults).
    fn build(&self, raw: RawConfig, path: &Path, base_dir: &Path) -> Result<Config, ConfigError> {
        let base_url = self.base_url(raw.lichess)?;
        let daemon = self.daemon(raw.daemon.unwrap_or_default(), base_dir)?;
        let defaults = self.challenge(
            &raw.challenge.unwrap_or_default(),
            ChallengePolicy::default(),
            "challenge",
        )?;
        let accounts = self.accounts(&raw.accounts, &defaults, base_dir)?;
        Ok(Config {
            path: path.to_path_buf(),
            lichess: LichessConfig { base_url },
            daemon,
            accounts,
        })
    }

    /// `lichess.base_url` without a trailing slash; Lichess itself when absent.
    fn base_url(&self, raw: Option<RawLichess>) -> Result<String, ConfigError> {
        match raw.and_then(|l| l.base_url) {
            None => Ok("https://lichess.org".to_string()),
            Some(url) => {
                self.check_url(&url)?;
                Ok(url.get_ref().trim_end_matches('/').to_string())
            }
        }
    }

    /// `[daemon]`: paths relative to the file's directory, every count within its bounds.
    fn daemon(&self, d: RawDaemon, base_dir: &Path) -> Result<DaemonConfig, ConfigError> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let resolve = |p: Option<String>, default: &str| {
            let p = PathBuf::from(p.unwrap_or_else(|| default.to_string()));
            if p.is_absolute() { p } else { base_dir.join(p) }
        };
        Ok(DaemonConfig {
            results: resolve(d.results, "calibration/results.jsonl"),
            coefficients: resolve(d.coefficients, "calibration/coefficients.toml"),
            search_threads: self.count(
                &d.search_threads,
                "daemon.search_threads",
                1..=MAX_SEARCH_THREADS,
                (cores as u64).min(MAX_SEARCH_THREADS as u64),
            )? as usize,
            max_games: self.count(&d.max_games, "daemon.max_games", 1..=MAX_GAMES, 20)? as usize,
            move_overhead_ms: self.count(
                &d.move_overhead_ms,
                "daemon.move_overhead_ms",
                0..=MAX_MOVE_OVERHEAD_MS,
                300,
            )?,
            abort_after_s: self.count(&d.abort_after_s, "daemon.abort_after_s", 1..=DAY_S, 30)?,
            shutdown_grace_s: self.count(
                &d.shutdown_grace_s,
                "daemon.shutdown_grace_s",
                0..=DAY_S,
                1800,
            )?,
            // Often enough to see the daemon is alive in `journalctl -f`, rarely enough not
            // to drown the games.
            status_interval_s: self.count(
                &d.status_interval_s,
                "daemon.status_interval_s",
                1..=DAY_S,
                300,
            )?,
        })
    }

    /// Every `[[accounts]]` in order, at least one, no username twice.
    fn accounts(
        &self,
        raw: &[Spanned<RawAccount>],
        defaults: &ChallengePolicy,
        base_dir: &Path,
    ) -> Result<Vec<Account>, ConfigError> {
        if raw.is_empty() {
            return self
                .file
                .invalid(0..0, "accounts", "no [[accounts]] configured");
        }
        let mut names = HashSet::new();
        raw.iter()
            .enumerate()
            .map(|(i, spanned)| self.account(i, spanned, defaults, base_dir, &mut names))
            .collect()
    }

    /// Account `i`, its keys checked one after the other (the first problem is the one
    /// reported); `names` holds the (lowercase) usernames of the accounts before it.
    fn account(
        &self,
        i: usize,
        spanned: &Spanned<RawAccount>,
        defaults: &ChallengePolicy,
        base_dir: &Path,
        names: &mut HashSet<String>,
    ) -> Result<Account, ConfigError> {
        let key = |k: &str| format!("accounts[{i}].{k}");
        let a = spanned.get_ref();
        let username = self.username(&a.username, &key("username"), names)?;
        let token = self.token_source(a, spanned.span(), key, base_dir)?;
        let level = *a.level.get_ref();
        // The results log's own range: a record of a level outside it is skipped by every
        // reader, so the games would be played and lost.
        let most = *crate::results::LEVEL_RANGE.end();
        if !(level.is_finite() && level > 0.0 && level <= most) {
            return self.file.invalid(
                a.level.span(),
                &key("level"),
                format!("must be > 0 and at most {most}"),
            );
        }
        self.no_own_target(a, key)?;
        let chat_lines = ChatLines {
            greeting: self.chat_line(&a.greeting, &key("greeting"))?,
            goodbye: self.chat_line(&a.goodbye, &key("goodbye"))?,
            spectator_greeting: self
                .chat_line(&a.spectator_greeting, &key("spectator_greeting"))?,
        };
        let challenge = match &a.challenge {
            None => defaults.clone(),
            Some(c) => self.challenge(c, defaults.clone(), &key("challenge"))?,
        };
        let think = self.think(a, key)?;
        let conduct = self.conduct(a, level, key)?;
        Ok(Account {
            username,
            token,
            level,
            chat_lines,
            challenge,
            think,
            conduct,
        })
    }

    /// A Lichess username (letters, digits, `_` and `-`) not in `names`, which it joins.
    fn username(
        &self,
        raw: &Spanned<String>,
        key: &str,
        names: &mut HashSet<String>,
    ) -> Result<String, ConfigError> {
        let username = raw.get_ref().trim().to_string();
        if username.is_empty()
            || !username
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return self.file.invalid(raw.span(), key, "not a Lichess username");
        }
        if !names.insert(username.to_lowercase()) {
            return self.file.invalid(raw.span(), key, "appears twice");
        }
        Ok(username)
    }

    /// Where the account's token comes from: `token_env` or `token_file`, exactly one of them.
    fn token_source(
        &self,
        a: &RawAccount,
        account_span: std::ops::Range<usize>,
        key: impl Fn(&str) -> String,
        base_dir: &Path,
    ) -> Result<TokenSource, ConfigError> {
        match (&a.token_env, &a.token_file) {
            (Some(env), None) => {
                if let Err(problem) = crate::credentials::check_token_env(env.get_ref()) {
                    return self.file.invalid(env.span(), &key("token_env"), problem);
                }
                Ok(TokenSource::Env(env.get_ref().clone()))
            }
            (None, Some(file)) => {
                if let Err(problem) = crate::credentials::check_token_file(file.get_ref()) {
                    return self.file.invalid(file.span(), &key("token_file"), problem);
                }
                // `credential:NAME` is a systemd credential (src/credentials.rs), looked up
                // when the token is read.
                match crate::credentials::credential_name(file.get_ref()) {
                    Some(Ok(name)) => Ok(TokenSource::Credential(name)),
                    Some(Err(problem)) => {
                        self.file.invalid(file.span(), &key("token_file"), problem)
                    }
                    None => Ok(TokenSource::File(crate::credentials::token_file_path(
                        file.get_ref(),
                        base_dir,
                    ))),
                }
            }
            (Some(env), Some(_)) => self.file.invalid(
                env.span(),
                &key("token_env"),
                "give token_env or token_file, not both",
            ),
            (None, None) => self.file.invalid(
                account_span,
                &key("token_env"),
                "missing: give token_env or token_file",
            ),
        }
    }

    /// `target_rating` and `target_perf` (accepted before issue 22) are refused: the ladder has
    /// one set of targets on one scale, the coefficients file's `[targets]`, and an account's
    /// own number would pull its level toward another scale. The error says what to change.
    fn no_own_target(
        &self,
        a: &RawAccount,
        key: impl Fn(&str) -> String,
    ) -> Result<(), ConfigError> {
        for (name, value) in [
            ("target_rating", &a.target_rating),
            ("target_perf", &a.target_perf),
        ] {
            if let Some(v) = value {
                return self.file.invalid(
                    v.span(),
                    &key(name),
                    format!(
                        "targets are no longer set per account: delete target_rating and \
                         target_perf from every [[accounts]]; every level's target is the \
                         ladder's, written once in the coefficients file's [targets] \
                         (shipped: {}; `ladder levels` prints them)",
                        crate::levels::Coefficients::builtin().targets().describe()
                    ),
                );
            }
        }
        Ok(())
    }

    /// A greeting or goodbye that fits a chat message once the names are filled in; a blank
    /// one is none.
    fn chat_line(
        &self,
        line: &Option<Spanned<String>>,
        key: &str,
    ) -> Result<Option<String>, ConfigError> {
        match line {
            None => Ok(None),
            Some(l) if l.get_ref().trim().is_empty() => Ok(None),
            Some(l) if longest_line(l.get_ref()) > MAX_CHAT_CHARS => self.file.invalid(
                l.span(),
                key,
                format!("longer than {MAX_CHAT_CHARS} characters once {{me}}/{{opponent}} are filled ({LONGEST_USERNAME} characters each)"),
            ),
            Some(l) => Ok(Some(l.get_ref().clone())),
        }
    }

    /// `think_time` and `max_think_s`: how the account paces its moves.
    fn think(
        &self,
        a: &RawAccount,
        key: impl Fn(&str) -> String,
    ) -> Result<ThinkSettings, ConfigError> {
        let mode = match &a.think_time {
            None => ThinkSettings::default().mode,
            Some(t) => match ThinkMode::parse(t.get_ref()) {
                Some(mode) => mode,
                None => {
                    return self.file.invalid(
                        t.span(),
                        &key("think_time"),
                        "must be \"human\" or \"fast\"",
                    );
                }
            },
        };
        Ok(ThinkSettings {
            mode,
            max_think: Duration::from_secs(self.count(
                &a.max_think_s,
                &key("max_think_s"),
                1..=MAX_THINK_S,
                DEFAULT_MAX_THINK.as_secs(),
            )?),
        })
    }

    /// `resign`, `takebacks` and `accept_draws`, with the defaults of the account's `level`.
    fn conduct(
        &self,
        a: &RawAccount,
        level: f64,
        key: impl Fn(&str) -> String,
    ) -> Result<Conduct, ConfigError> {
        let level_defaults = Conduct::defaults_for(level);
        let resign = match &a.resign {
            None => level_defaults.resign,
            Some(r) if *r.get_ref() && level < NEVER_RESIGN_BELOW => {
                return self.file.invalid(
                    r.span(),
                    &key("resign"),
                    format!(
                        "levels below {NEVER_RESIGN_BELOW} never resign (their opponents must learn to mate)"
                    ),
                );
            }
            Some(r) => *r.get_ref(),
        };
        Ok(Conduct {
            takebacks: self.count(
                &a.takebacks,
                &key("takebacks"),
                0..=MAX_TAKEBACKS,
                u64::from(level_defaults.takebacks),
            )? as u32,
            accept_draws: a.accept_draws.unwrap_or(level_defaults.accept_draws),
            resign,
        })
    }

    /// The client's rule (plain http leaks the token: only to this machine), with the line.
    fn check_url(&self, url: &Spanned<String>) -> Result<(), ConfigError> {
        match crate::lichess::validate_base_url(url.get_ref()) {
            Ok(_) => Ok(()),
            Err(crate::lichess::LichessError::BadBaseUrl { reason, .. }) => {
                self.file.invalid(url.span(), "lichess.base_url", reason)
            }
            Err(other) => self
                .file
                .invalid(url.span(), "lichess.base_url", other.to_string()),
        }
    }

    /// `base` with the keys given in `raw` replaced, then checked as a whole.
    fn challenge(
        &self,
        raw: &RawChallenge,
        base: ChallengePolicy,
        prefix: &str,
    ) -> Result<ChallengePolicy, ConfigError> {
        let key = |k: &str| format!("{prefix}.{k}");
        let mut p = base;
        if let Some(v) = &raw.variants {
            p.variants = self.variants(v, &key("variants"))?;
        }
        if let Some(v) = &raw.speeds {
            p.speeds = self.speeds(v, &key("speeds"))?;
        }
        self.challenge_counts(raw, &mut p, key)?;
        if let Some(v) = raw.rated {
            p.rated = v;
        }
        if let Some(v) = raw.casual {
            p.casual = v;
        }
        if let Some(v) = raw.accept_bots {
            p.accept_bots = v;
        }
        if let Some(v) = raw.accept_anonymous {
            p.accept_anonymous = v;
        }
        if let Some(v) = &raw.block {
            p.block = v.iter().map(|u| u.to_lowercase()).collect();
        }
        for (name, bounds, (lo_raw, hi_raw)) in [
            (
                "initial_s",
                p.initial_s,
                (&raw.min_initial_s, &raw.max_initial_s),
            ),
            (
                "increment_s",
                p.increment_s,
                (&raw.min_increment_s, &raw.max_increment_s),
            ),
            ("days", p.days, (&raw.min_days, &raw.max_days)),
        ] {
            self.min_not_above_max(bounds, &key(&format!("max_{name}")), hi_raw, lo_raw)?;
        }
        Ok(p)
    }

    /// `variants`: each one the engine can play.
    fn variants(&self, v: &Spanned<Vec<String>>, key: &str) -> Result<Vec<String>, ConfigError> {
        if let Some(bad) = v.get_ref().iter().find(|x| !VARIANTS.contains(&x.as_str())) {
            return self.file.invalid(
                v.span(),
                key,
                format!("unknown variant {bad:?} (known: {})", VARIANTS.join(", ")),
            );
        }
        Ok(v.get_ref().clone())
    }

    /// `speeds`: each one a real-time speed Lichess lets a bot play. Correspondence and
    /// unlimited games are refused: the first-move abort, the game slots and the shutdown's
    /// grace period all assume a game that ends within hours.
    fn speeds(&self, v: &Spanned<Vec<String>>, key: &str) -> Result<Vec<Speed>, ConfigError> {
        let mut speeds = Vec::new();
        for name in v.get_ref() {
            if name == "unlimited" || matches!(name.parse::<Speed>(), Ok(Speed::Correspondence)) {
                return self.file.invalid(
                    v.span(),
                    key,
                    format!(
                        "{name:?} games are not played by the ladder: the first-move abort, the \
                         game slots and the shutdown assume real-time play (use: {})",
                        list(real_time_bot_speeds())
                    ),
                );
            }
            match name.parse::<Speed>() {
                Ok(speed) if speed.bots_may_play() => speeds.push(speed),
                _ => {
                    return self.file.invalid(
                        v.span(),
                        key,
                        format!(
                            "unknown speed {name:?} (bots may play: {})",
                            list(real_time_bot_speeds())
                        ),
                    );
                }
            }
        }
        Ok(speeds)
    }

    /// The clock, day and game-count bounds of a challenge policy given in `raw`, each within
    /// its own limits (their order is checked once all are known).
    fn challenge_counts(
        &self,
        raw: &RawChallenge,
        p: &mut ChallengePolicy,
        key: impl Fn(&str) -> String,
    ) -> Result<(), ConfigError> {
        for (name, limits, bounds, (lo_raw, hi_raw)) in [
            (
                "initial_s",
                0..=DAY_S,
                &mut p.initial_s,
                (&raw.min_initial_s, &raw.max_initial_s),
            ),
            (
                "increment_s",
                0..=DAY_S,
                &mut p.increment_s,
                (&raw.min_increment_s, &raw.max_increment_s),
            ),
            (
                "days",
                1..=MAX_DAYS,
                &mut p.days,
                (&raw.min_days, &raw.max_days),
            ),
        ] {
            bounds.min = self.count(
                lo_raw,
                &key(&format!("min_{name}")),
                limits.clone(),
                bounds.min,
            )?;
            bounds.max = self.count(hi_raw, &key(&format!("max_{name}")), limits, bounds.max)?;
        }
        for (value, name, field) in [
            (&raw.max_games, "max_games", &mut p.max_games),
            (
                &raw.max_games_per_opponent,
                "max_games_per_opponent",
                &mut p.max_games_per_opponent,
            ),
        ] {
            *field = self.count(value, &key(name), 1..=MAX_GAMES, *field as u64)? as usize;
        }
        p.max_waiting = self.count(
            &raw.max_waiting,
            &key("max_waiting"),
            0..=MAX_GAMES,
            p.max_waiting as u64,
        )? as usize;
        Ok(())
    }

    /// A maximum (`hi`, key `hi_key`) not below its minimum; the error points at the maximum's
    /// line, or the minimum's when only that one was given.
    fn min_not_above_max(
        &self,
        Bounds { min: lo, max: hi }: Bounds,
        hi_key: &str,
        hi_raw: &Option<Spanned<i64>>,
        lo_raw: &Option<Spanned<i64>>,
    ) -> Result<(), ConfigError> {
        if lo > hi {
            let s = hi_raw
                .as_ref()
                .or(lo_raw.as_ref())
                .map_or(0..0, |s| s.span());
            return self
                .file
                .invalid(s, hi_key, format!("must not be below min ({hi} < {lo})"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
[[accounts]]
username = "ladder-l1"
token_env = "LADDER_TOKEN_L1"
level = 1
"#;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("/etc/ladder/accounts.toml"))
    }

    /// Why `text` is refused.
    fn refusal(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn defaults_fill_what_is_missing_and_paths_are_relative_to_the_file() {
        let c = parse(MINIMAL).unwrap();
        assert_eq!(c.lichess.base_url, "https://lichess.org");
        assert_eq!(
            c.daemon.results,
            PathBuf::from("/etc/ladder/calibration/results.jsonl")
        );
        assert_eq!(c.accounts[0].challenge, ChallengePolicy::default());
        assert_eq!(
            c.accounts[0].token,
            TokenSource::Env("LADDER_TOKEN_L1".into())
        );
    }

    #[test]
    fn committed_accounts_toml_is_the_twelve_level_blitz_ladder() {
        let c = parse(include_str!("../accounts.toml")).unwrap();
        let levels: Vec<f64> = c.accounts.iter().map(|a| a.level).collect();
        assert_eq!(levels, (1..=12).map(f64::from).collect::<Vec<_>>());
        for a in &c.accounts {
            assert!(matches!(&a.token, TokenSource::Env(v) if v.starts_with("LADDER_TOKEN_L")));
        }
    }

    #[test]
    fn an_own_target_is_refused_with_what_to_change() {
        // Before issue 22 every account set its target, on another scale than the ladder's.
        for key in ["target_rating = 600", "target_perf = \"blitz\""] {
            let err = refusal(&format!("{MINIMAL}{key}\n"));
            let name = key.split(' ').next().unwrap();
            assert!(
                err.starts_with(&format!(
                    "accounts.toml:6: accounts[0].{name}: targets are no longer set per \
                     account: delete target_rating and target_perf"
                )),
                "{err}"
            );
            assert!(err.contains("coefficients file's [targets]"), "{err}");
        }
    }

    #[test]
    fn account_overrides_only_the_keys_it_names() {
        let text = format!(
            "[challenge]\nmax_games = 3\naccept_bots = false\n{MINIMAL}[accounts.challenge]\nmax_games = 5\n"
        );
        let c = parse(&text).unwrap();
        let p = &c.accounts[0].challenge;
        assert_eq!(p.max_games, 5);
        assert!(!p.accept_bots, "the file-wide default still applies");
    }

    #[test]
    fn semantic_error_names_key_and_line() {
        for bad in ["level = 0", "level = 150"] {
            let text = MINIMAL.replace("level = 1", bad);
            let err = refusal(&text);
            assert_eq!(
                err,
                "accounts.toml:5: accounts[0].level: must be > 0 and at most 100"
            );
        }
    }

    #[test]
    fn think_time_and_conduct_default_by_level_and_are_validated() {
        let c = parse(MINIMAL).unwrap();
        let a = &c.accounts[0];
        assert_eq!(a.think.mode, ThinkMode::Human, "people play the ladder");
        assert_eq!(a.think.max_think, DEFAULT_MAX_THINK);
        assert_eq!(a.conduct, Conduct::defaults_for(1.0));
        assert_eq!(a.conduct.takebacks, 2);
        assert!(!a.conduct.resign);

        let text = MINIMAL.replace(
            "level = 1",
            "level = 7\nthink_time = \"human\"\nmax_think_s = 12\ntakebacks = 1\naccept_draws = false",
        );
        let a = parse(&text).unwrap().accounts.remove(0);
        assert_eq!(a.think.mode, ThinkMode::Human);
        assert_eq!(a.think.max_think, Duration::from_secs(12));
        assert_eq!(a.conduct.takebacks, 1);
        assert!(!a.conduct.accept_draws);
        assert!(a.conduct.resign, "level 7 resigns by default");

        let bad =
            |extra: &str| refusal(&MINIMAL.replace("level = 1", &format!("level = 1\n{extra}")));
        assert_eq!(
            bad("think_time = \"slow\""),
            "accounts.toml:6: accounts[0].think_time: must be \"human\" or \"fast\""
        );
        assert_eq!(
            bad("max_think_s = 0"),
            "accounts.toml:6: accounts[0].max_think_s: must be >= 1"
        );
        assert!(bad("takebacks = -1").contains("accounts[0].takebacks: must be >= 0"));
        assert!(
            bad("resign = true")
                .starts_with("accounts.toml:6: accounts[0].resign: levels below 3 never resign"),
            "{}",
            bad("resign = true")
        );
    }

    #[test]
    fn unknown_key_is_an_error_with_its_line() {
        let text = MINIMAL.replace("level = 1", "levle = 1");
        let err = refusal(&text);
        assert!(err.starts_with("accounts.toml:5:"), "{err}");
        assert!(err.contains("levle"), "{err}");
    }

    #[test]
    fn chat_lines_that_cannot_fit_are_refused() {
        let text = format!(
            "{MINIMAL}greeting = \"{}\"\n",
            "a".repeat(120) + "{opponent}"
        );
        let err = refusal(&text);
        assert!(err.contains("accounts[0].greeting"), "{err}");
    }

    #[test]
    fn plain_http_only_to_loopback() {
        let ok = format!("[lichess]\nbase_url = \"http://127.0.0.1:9000/\"\n{MINIMAL}");
        assert_eq!(
            parse(&ok).unwrap().lichess.base_url,
            "http://127.0.0.1:9000"
        );
        let err = refusal(&format!(
            "[lichess]\nbase_url = \"http://example.org\"\n{MINIMAL}"
        ));
        assert!(
            err.starts_with("accounts.toml:2: lichess.base_url:"),
            "{err}"
        );
    }

    #[test]
    fn token_errors_never_show_the_token() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tok");
        std::fs::write(&file, "lip_secret value\n").unwrap();
        let text = MINIMAL.replace(
            "token_env = \"LADDER_TOKEN_L1\"",
            &format!("token_file = {:?}", file.display().to_string()),
        );
        let c = parse(&text).unwrap();
        let err = c.accounts[0].load_token().unwrap_err().to_string();
        assert!(!err.contains("lip_secret"), "{err}");
        std::fs::write(&file, "lip_secret\n").unwrap();
        assert_eq!(c.accounts[0].load_token().unwrap().expose(), "lip_secret");
    }

    #[test]
    fn values_that_would_overflow_or_exhaust_the_system_are_refused_by_key() {
        let cases = [
            (
                "[daemon]\nstatus_interval_s = 9223372036854775807\n",
                "accounts.toml:2: daemon.status_interval_s: must be <= 86400",
            ),
            (
                "[daemon]\nsearch_threads = 300\n",
                "accounts.toml:2: daemon.search_threads: must be <= 64",
            ),
            (
                "[daemon]\nshutdown_grace_s = 9223372036854775807\n",
                "accounts.toml:2: daemon.shutdown_grace_s: must be <= 86400",
            ),
            (
                "[daemon]\nmax_games = 9223372036854775807\n",
                "accounts.toml:2: daemon.max_games: must be <= 1000",
            ),
            (
                "[challenge]\nmax_initial_s = 9223372036854775807\n",
                "accounts.toml:2: challenge.max_initial_s: must be <= 86400",
            ),
        ];
        for (head, want) in cases {
            let err = refusal(&format!("{head}{MINIMAL}"));
            assert!(err.starts_with(want), "{err}");
        }
        let ok = parse(&format!(
            "[daemon]\nsearch_threads = 64\nstatus_interval_s = 86400\n{MINIMAL}"
        ))
        .unwrap();
        assert_eq!(ok.daemon.search_threads, 64);
    }

    #[test]
    fn type_and_missing_field_errors_name_the_key_and_line() {
        let cases = [
            (
                MINIMAL.replace("level = 1", "level = \"one\""),
                ":5: accounts[0].level: invalid type",
            ),
            (
                MINIMAL.replace("level = 1\n", ""),
                "accounts[0].level: missing",
            ),
            (
                format!("[daemon]\nmax_games = \"many\"\n{MINIMAL}"),
                ":2: daemon.max_games: invalid type",
            ),
            (
                format!("{MINIMAL}[accounts.challenge]\nspeeds = \"blitz\"\n"),
                ":7: accounts[0].challenge.speeds: invalid type",
            ),
        ];
        for (text, want) in cases {
            let err = refusal(&text);
            assert!(
                err.starts_with("accounts.toml:") && err.contains(want),
                "{err}"
            );
        }
    }

    #[test]
    fn correspondence_and_unlimited_are_refused_with_the_reason() {
        for name in ["correspondence", "unlimited"] {
            let err = refusal(&format!(
                "{MINIMAL}[accounts.challenge]\nspeeds = [\"blitz\", \"{name}\"]\n"
            ));
            assert!(
                err.contains(":7: accounts[0].challenge.speeds: ")
                    && err.contains(&format!("{name:?} games are not played"))
                    && err.contains("real-time play")
                    && err.contains("bullet, blitz, rapid, classical"),
                "{err}"
            );
        }
    }

    #[test]
    fn a_token_pasted_into_token_env_or_token_file_is_refused_without_being_shown() {
        let token = "lip_Zx8kQ2mN5pR7tV9wY1aB";
        let err = refusal(&MINIMAL.replace("LADDER_TOKEN_L1", token));
        assert!(
            err.starts_with("accounts.toml:4: accounts[0].token_env: looks like a token"),
            "{err}"
        );
        assert!(!err.contains("Zx8kQ2mN5pR7tV9wY1aB"), "{err}");
        let pasted = MINIMAL.replace(
            "token_env = \"LADDER_TOKEN_L1\"",
            &format!("token_file = \"{token}\""),
        );
        let err = refusal(&pasted);
        assert!(
            err.starts_with("accounts.toml:4: accounts[0].token_file: looks like a token"),
            "{err}"
        );
        assert!(!err.contains("Zx8kQ2mN5pR7tV9wY1aB"), "{err}");
        let err = refusal(&MINIMAL.replace("LADDER_TOKEN_L1", "my token"));
        assert!(
            err.contains("token_env: must be the name of an environment variable"),
            "{err}"
        );
    }

    #[test]
    fn a_credential_is_looked_up_only_when_the_token_is_read() {
        let text = MINIMAL.replace(
            "token_env = \"LADDER_TOKEN_L1\"",
            "token_file = \"credential:ladder_l1\"",
        );
        // No $CREDENTIALS_DIRECTORY here: the file loads, only reading the token fails, and
        // the error names the account and its setting.
        let c = parse(&text).expect("loading the config needs no credential");
        assert_eq!(
            c.accounts[0].token,
            TokenSource::Credential("ladder_l1".into())
        );
        if std::env::var_os(crate::credentials::CREDENTIALS_DIRECTORY).is_none() {
            let err = c.accounts[0].load_token().unwrap_err().to_string();
            assert!(
                err.starts_with("account ladder-l1: token_file = \"credential:ladder_l1\": ")
                    && err.contains("CREDENTIALS_DIRECTORY is not set"),
                "{err}"
            );
        }
        let bad = MINIMAL.replace(
            "token_env = \"LADDER_TOKEN_L1\"",
            "token_file = \"credential:../x\"",
        );
        let err = refusal(&bad);
        assert!(
            err.starts_with("accounts.toml:4: accounts[0].token_file:"),
            "{err}"
        );
    }
}
