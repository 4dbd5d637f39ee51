//! Sandbox configuration: the accounts it knows (bots and humans, each with a token), the
//! simulated challengers and how they behave (who plays their moves is a [`PlayerKind`], the
//! same description the arena seats: a level, a built-in mover, an external engine), and the
//! timings (keep-alive interval, first-move timeout, challenge expiry).
//! `SandboxConfig::demo` is the default of `ladder run --sandbox`.

use std::time::Duration;

use crate::anchors::{Anchor, AnchorsFile};
use crate::lichess::Token;
use crate::player::seat::{MoverStyle, PlayerKind};

/// An account of the sandbox that a client (the daemon, a test) logs in with.
#[derive(Clone, Debug, PartialEq)]
pub struct AccountConfig {
    pub username: String,
    /// The bearer token this account is recognised by.
    pub token: String,
    /// A BOT account (`title: "BOT"`); bot endpoints refuse others.
    pub bot: bool,
    /// A title other than BOT (GM, WFM, ...).
    pub title: Option<String>,
    /// Rating in every perf at start.
    pub rating: i32,
    pub provisional: bool,
    /// Games played before the sandbox started (an account with games cannot be upgraded).
    pub games_played: u32,
    /// The token's OAuth scopes, which `/api/account` then names as Lichess does (the
    /// `X-OAuth-Scopes` header) and the bot upgrade requires `bot:play` of; `None`: the
    /// sandbox says nothing of scopes and asks for none.
    pub scopes: Option<Vec<String>>,
}

impl AccountConfig {
    /// A bot account with the conventional sandbox token ([`sandbox_token`]).
    pub fn bot(username: &str) -> AccountConfig {
        AccountConfig {
            username: username.to_string(),
            token: sandbox_token_string(username),
            bot: true,
            title: None,
            rating: 1500,
            provisional: true,
            games_played: 0,
            scopes: None,
        }
    }

    /// A human (non-bot) account with the conventional sandbox token.
    pub fn human(username: &str) -> AccountConfig {
        AccountConfig {
            bot: false,
            ..AccountConfig::bot(username)
        }
    }
}

fn sandbox_token_string(username: &str) -> String {
    let clean: String = username
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("lip_sandbox_{}", clean.to_ascii_lowercase())
}

/// The token a sandbox account gets when none is configured: `lip_sandbox_<username>`.
pub fn sandbox_token(username: &str) -> Token {
    Token::new(&sandbox_token_string(username), "sandbox").expect("sandbox tokens are valid")
}

/// The rating a simulated challenger's player has, on the ladder's scale: a level's from the
/// calibrated ratings of the coefficients it plays with (the built-in ones, interpolated for
/// a fractional level), a mover's and an external engine's from the anchor of the built-in
/// anchors file that plays the same way. `None` when there is none (a level outside the rated
/// ones, an engine that is no anchor, an anchor not yet fitted).
pub fn advertised_rating(player: &PlayerKind) -> Option<i32> {
    let rating = match player {
        PlayerKind::Level(level) => crate::levels::Coefficients::builtin().rating_of(*level)?,
        kind => {
            AnchorsFile::builtin()
                .anchors
                .iter()
                .find(|a| a.kind == *kind)?
                .fitted
                .rating?
        }
    };
    Some(rating.round() as i32)
}

/// A simulated opponent: an account that challenges bots and plays its games in-process.
#[derive(Clone, Debug, PartialEq)]
pub struct ChallengerConfig {
    pub name: String,
    pub rating: i32,
    pub provisional: bool,
    /// `Some("BOT")` makes this challenger a bot; other titles are cosmetic.
    pub title: Option<String>,
    /// Bots to challenge (usernames); empty means every bot account.
    pub targets: Vec<String>,
    /// Time controls to challenge with, (initial seconds, increment seconds), in rotation.
    /// Empty means correspondence-free unlimited games are never sent: use at least one.
    pub time_controls: Vec<(u32, u32)>,
    /// Variant keys in rotation (`standard`, `chess960`, ...).
    pub variants: Vec<String>,
    pub rated: bool,
    /// Time between two challenges; `None` challenges only when asked (control API).
    pub interval: Option<Duration>,
    /// No new challenge while this many of its games are running.
    pub max_games: usize,
    /// Who plays its moves (seated as the arena seats it, with no clock).
    pub player: PlayerKind,
    /// Pause before each move.
    pub think_time: Duration,
    /// Chance per move of offering a draw with it.
    pub draw_offer_chance: f64,
    /// Chance per move (after its own move) of proposing a takeback.
    pub takeback_chance: f64,
    /// Accept the bot's draw offers.
    pub accept_draws: bool,
    /// Accept the bot's takeback proposals.
    pub accept_takebacks: bool,
}

impl ChallengerConfig {
    /// A random mover that challenges every bot at 1+0 every few seconds.
    pub fn new(name: &str) -> ChallengerConfig {
        ChallengerConfig {
            name: name.to_string(),
            rating: 1500,
            provisional: false,
            title: None,
            targets: Vec::new(),
            time_controls: vec![(60, 0)],
            variants: vec!["standard".to_string()],
            rated: false,
            interval: Some(Duration::from_secs(5)),
            max_games: 1,
            player: PlayerKind::Mover(MoverStyle::Random),
            think_time: Duration::from_millis(200),
            draw_offer_chance: 0.0,
            takeback_chance: 0.0,
            accept_draws: false,
            accept_takebacks: false,
        }
    }

    /// A person who plays as `anchor`: rated at the anchor's fitted rating (not provisional), no
    /// title, moving at once, never offering draws or takebacks, accepting neither, and
    /// challenging one game at a time with the defaults of [`ChallengerConfig::new`] otherwise.
    /// Its moves are the anchor's as the arena plays it (the anchor's own per-move limits, no
    /// clock), so a game against it is played the way the anchor's rating was measured. An
    /// anchor without a fitted rating cannot pose as a rated person.
    pub fn anchor(name: &str, anchor: &Anchor) -> Result<ChallengerConfig, String> {
        let rating = anchor
            .fitted
            .rating
            .ok_or_else(|| format!("anchor {} has no fitted rating", anchor.name))?;
        Ok(ChallengerConfig {
            rating: rating.round() as i32,
            provisional: false,
            title: None,
            player: anchor.kind.clone(),
            think_time: Duration::ZERO,
            draw_offer_chance: 0.0,
            takeback_chance: 0.0,
            accept_draws: false,
            accept_takebacks: false,
            max_games: 1,
            ..ChallengerConfig::new(name)
        })
    }

    /// The token tests can use to act as this challenger over HTTP.
    pub fn token(&self) -> Token {
        sandbox_token(&self.name)
    }
}

/// Everything the sandbox needs to start.
#[derive(Clone, Debug, PartialEq)]
pub struct SandboxConfig {
    pub accounts: Vec<AccountConfig>,
    pub challengers: Vec<ChallengerConfig>,
    /// Empty line on every stream this often (Lichess: 7 s).
    pub keepalive_interval: Duration,
    /// A side that does not make its first move within this is `noStart` (aborted).
    pub no_start_timeout: Duration,
    /// A real-time challenge not answered within this is canceled (Lichess: 20 s).
    pub challenge_timeout: Duration,
    /// Seed of the sandbox's randomness (ids, colors, random movers); `None` = entropy.
    pub seed: Option<u64>,
    /// The newest requests the request log keeps (older ones are dropped and counted), so a
    /// sandbox left running for days holds a bounded log.
    pub request_log_cap: usize,
}

impl Default for SandboxConfig {
    fn default() -> SandboxConfig {
        SandboxConfig {
            accounts: Vec::new(),
            challengers: Vec::new(),
            keepalive_interval: Duration::from_secs(7),
            no_start_timeout: Duration::from_secs(30),
            challenge_timeout: Duration::from_secs(20),
            seed: None,
            request_log_cap: 200_000,
        }
    }
}

impl SandboxConfig {
    /// Bot accounts with sandbox tokens and no challengers (tests add their own).
    pub fn with_bots(bots: &[&str]) -> SandboxConfig {
        SandboxConfig {
            accounts: bots.iter().map(|b| AccountConfig::bot(b)).collect(),
            ..SandboxConfig::default()
        }
    }

    /// The default of `ladder run --sandbox`: the given bots plus a few challengers of
    /// different strengths and habits, so every level sees games, declines and draws. Each
    /// advertises the rating its player has on the ladder's scale ([`advertised_rating`]).
    pub fn demo<S: AsRef<str>>(bots: &[S]) -> SandboxConfig {
        let names: Vec<&str> = bots.iter().map(|b| b.as_ref()).collect();
        let mut patzer = ChallengerConfig::new("RandomRita");
        patzer.rating = advertised_rating(&patzer.player).unwrap_or(patzer.rating);
        patzer.provisional = true;
        patzer.time_controls = vec![(60, 0), (180, 2)];
        patzer.interval = Some(Duration::from_secs(20));
        patzer.think_time = Duration::from_millis(500);
        patzer.takeback_chance = 0.02;

        let mut club = ChallengerConfig::new("ClubCarl");
        club.time_controls = vec![(180, 2), (300, 3)];
        club.rated = true;
        club.interval = Some(Duration::from_secs(30));
        club.player = PlayerKind::Level(3.0);
        club.rating = advertised_rating(&club.player).unwrap_or(club.rating);
        club.think_time = Duration::from_secs(1);
        club.draw_offer_chance = 0.01;
        club.accept_draws = true;

        let mut fast = ChallengerConfig::new("BulletBot");
        fast.title = Some("BOT".to_string());
        fast.time_controls = vec![(30, 0), (60, 1), (3 * 60, 0)];
        fast.variants = vec!["standard".to_string(), "chess960".to_string()];
        fast.rated = true;
        fast.interval = Some(Duration::from_secs(45));
        fast.player = PlayerKind::Level(6.0);
        fast.rating = advertised_rating(&fast.player).unwrap_or(fast.rating);
        fast.think_time = Duration::from_millis(100);

        SandboxConfig {
            accounts: names.iter().map(|b| AccountConfig::bot(b)).collect(),
            challengers: vec![patzer, club, fast],
            ..SandboxConfig::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_anchor_challenger_is_a_person_at_the_anchor_rating() {
        let anchors = AnchorsFile::builtin();
        let greedy = anchors.get("greedy").unwrap();
        let c = ChallengerConfig::anchor("GreedyGus", greedy).unwrap();
        assert_eq!(c.rating as f64, greedy.fitted.rating.unwrap().round());
        assert_eq!(c.player, PlayerKind::Mover(MoverStyle::Greedy));
        assert_eq!((c.title, c.provisional), (None, false));
        assert_eq!(c.think_time, Duration::ZERO);
        assert_eq!((c.draw_offer_chance, c.takeback_chance), (0.0, 0.0));
        let unrated = anchors
            .anchors
            .iter()
            .find(|a| a.fitted.rating.is_none())
            .unwrap();
        let err = ChallengerConfig::anchor("x", unrated).unwrap_err();
        assert!(err.contains(&unrated.name), "{err}");
    }
}
