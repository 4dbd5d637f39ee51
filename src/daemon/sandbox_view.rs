//! What a sandbox run (`ladder run --sandbox`) tells the person watching it: at once, who plays
//! whom (the accounts with their levels; each simulated challenger with its strength, time
//! controls, and which accounts' challenge policies accept it), then a short progress line:
//! the games being played and the score per level so far.

use std::time::Duration;

use crate::config::Config;
use crate::levels::Coefficients;
use crate::lichess::TimeControl;
use crate::logging::show_elapsed;
use crate::player::seat::{MoverStyle, PlayerKind};
use crate::sandbox::{ChallengerConfig, GameSummary};

use super::policy::{self, ChallengeFacts, Decision, Load};
use super::scoreboard::Tally;

/// `2 accounts play: ladder-l1 (level 1, target 450 lichess-blitz), ladder-l2 (level 2,
/// target 660 lichess-blitz)`: the targets are the ladder's, from `coefficients`.
pub fn accounts_line(config: &Config, coefficients: &Coefficients) -> String {
    let targets = coefficients.targets();
    let accounts: Vec<String> = config
        .accounts
        .iter()
        .map(|a| {
            format!(
                "{} (level {}, target {:.0} {})",
                a.username,
                a.level,
                targets.target(a.level),
                targets.scale
            )
        })
        .collect();
    format!(
        "{} account{} play: {}",
        accounts.len(),
        if accounts.len() == 1 { "" } else { "s" },
        accounts.join(", ")
    )
}

/// One simulated challenger: who it is, what it challenges with, and who accepts it, e.g.
/// `RandomRita (94, random moves) challenges a random account every 20s at 1+0, 3+2 (casual):
/// every account accepts`.
pub fn challenger_line(challenger: &ChallengerConfig, config: &Config) -> String {
    let bot = challenger.title.as_deref() == Some("BOT");
    let strength = match &challenger.player {
        PlayerKind::Mover(MoverStyle::Random) => "random moves".to_string(),
        PlayerKind::Mover(style) => format!("the {} mover", style.name()),
        PlayerKind::Level(level) => format!("the ladder's engine at level {level}"),
        PlayerKind::Uci { command, .. } => format!("the engine {}", command.program.display()),
    };
    let whom = match challenger.targets.as_slice() {
        [] => "a random account".to_string(),
        targets => targets.join(" or "),
    };
    let when = match challenger.interval {
        Some(every) => format!("every {}", show_elapsed(every)),
        None => "only when asked".to_string(),
    };
    let clocks: Vec<String> = challenger
        .time_controls
        .iter()
        .map(
            |&(limit, increment)| match TimeControl::clock(limit, increment) {
                TimeControl::Clock { show: Some(s), .. } => s,
                other => other.to_string(),
            },
        )
        .collect();
    let standard = ["standard".to_string()];
    let variants = if challenger.variants.is_empty() {
        &standard[..]
    } else {
        &challenger.variants[..]
    };
    let mut what = clocks.join(", ");
    if variants.iter().any(|v| v != "standard") {
        what.push_str(&format!(" ({})", variants.join(", ")));
    }
    what.push_str(if challenger.rated {
        ", rated"
    } else {
        ", casual"
    });

    // The account's own policy decides, as it will when the challenge comes (load aside).
    let mut accepting = Vec::new();
    let mut refusal = None;
    for account in &config.accounts {
        let mut accepts = false;
        for &(limit, increment) in &challenger.time_controls {
            for variant in variants {
                let time_control = TimeControl::clock(limit, increment);
                let facts = ChallengeFacts {
                    challenger_id: challenger.name.to_lowercase(),
                    challenger_is_bot: bot,
                    challenger_is_anonymous: false,
                    variant: variant.clone(),
                    speed: time_control.speed(),
                    rated: challenger.rated,
                    time_control,
                };
                match policy::decide(&account.challenge, &facts, Load::default()) {
                    Decision::Accept => accepts = true,
                    Decision::Decline(reason) => {
                        refusal.get_or_insert(reason.as_str());
                    }
                }
            }
        }
        if accepts {
            accepting.push(account.username.as_str());
        }
    }
    let answer = if accepting.len() == config.accounts.len() {
        "every account accepts".to_string()
    } else if accepting.is_empty() {
        format!(
            "every account declines (challenge policy: {})",
            refusal.unwrap_or("generic")
        )
    } else {
        format!(
            "{} accept{}, the others decline (challenge policy: {})",
            accepting.join(", "),
            if accepting.len() == 1 { "s" } else { "" },
            refusal.unwrap_or("generic")
        )
    };
    format!(
        "challenger {}{} ({}, {strength}) challenges {whom} {when} at {what}: {answer}",
        if bot { "BOT " } else { "" },
        challenger.name,
        challenger.rating,
    )
}

/// The short progress line, e.g. `sandbox 1m 10s: playing ladder-l3 vs RandomRita, ClubCarl vs
/// ladder-l7; finished 3: level 1 (ladder-l1) 1½/2, level 7 (ladder-l7) 0/1`.
pub fn progress_line(since_start: Duration, games: &[GameSummary], tally: &Tally) -> String {
    let playing: Vec<String> = games
        .iter()
        .filter(|g| !g.is_over())
        .map(|g| format!("{} vs {}", g.white, g.black))
        .collect();
    let playing = if playing.is_empty() {
        "no game playing".to_string()
    } else {
        format!("playing {}", playing.join(", "))
    };
    format!(
        "sandbox {}: {playing}; finished {}: {tally}",
        show_elapsed(since_start),
        tally.games
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn config() -> Config {
        Config::parse(
            r#"
[lichess]
base_url = "http://127.0.0.1:9"

[challenge]
min_initial_s = 60
accept_bots = false

[[accounts]]
username = "ladder-l1"
token_env = "X"
level = 1

[[accounts]]
username = "ladder-l2"
token_env = "Y"
level = 2
[accounts.challenge]
min_initial_s = 180
"#,
            Path::new("accounts.toml"),
        )
        .unwrap()
    }

    #[test]
    fn the_intro_says_who_plays_whom_as_the_policies_decide() {
        let config = config();
        let shipped = Coefficients::builtin();
        let t = shipped.targets();
        assert_eq!(
            accounts_line(&config, &shipped),
            format!(
                "2 accounts play: ladder-l1 (level 1, target {:.0} {s}), \
                 ladder-l2 (level 2, target {:.0} {s})",
                t.target(1.0),
                t.target(2.0),
                s = t.scale
            )
        );
        let mut rita = ChallengerConfig::new("RandomRita");
        rita.rating = 800;
        rita.time_controls = vec![(60, 0), (180, 2)];
        rita.interval = Some(Duration::from_secs(20));
        assert_eq!(
            challenger_line(&rita, &config),
            "challenger RandomRita (800, random moves) challenges a random account every 20s \
             at 1+0, 3+2, casual: every account accepts"
        );
        rita.time_controls = vec![(60, 0)];
        assert!(
            challenger_line(&rita, &config)
                .ends_with("ladder-l1 accepts, the others decline (challenge policy: tooFast)"),
            "{}",
            challenger_line(&rita, &config)
        );
        let mut bot = ChallengerConfig::new("BulletBot");
        bot.title = Some("BOT".into());
        bot.player = PlayerKind::Level(6.0);
        bot.interval = Some(Duration::from_secs(45));
        assert!(
            challenger_line(&bot, &config).starts_with(
                "challenger BOT BulletBot (1500, the ladder's engine at level 6) challenges"
            ) && challenger_line(&bot, &config)
                .ends_with("every account declines (challenge policy: noBot)"),
            "{}",
            challenger_line(&bot, &config)
        );
    }

    /// Issue 22: one set of targets. What `ladder check`, the sandbox, calibration's default,
    /// `ladder levels` and the README's table say each level of the committed accounts.toml
    /// aims at are the same numbers, all read from the coefficients' [targets]; and the
    /// sandbox's challengers advertise the ratings their players measure.
    #[test]
    fn one_set_of_targets_everywhere() {
        let shipped = Coefficients::builtin();
        let ladder = shipped.targets();
        let config = Config::parse(
            include_str!("../../accounts.toml"),
            Path::new("accounts.toml"),
        )
        .unwrap();
        let calibration = crate::calibration::pipeline::Targets::of(&shipped);
        let sandbox = accounts_line(&config, &shipped);
        let readme = include_str!("../../README.md");
        // The section's first table (later tables of the section measure other things).
        let readme_table: Vec<&str> = readme
            .split("## The levels today")
            .nth(1)
            .unwrap()
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .filter(|l| l.starts_with("| ") && l[2..].starts_with(|c: char| c.is_ascii_digit()))
            .collect();
        assert_eq!(readme_table.len(), config.accounts.len());
        for (account, readme_row) in config.accounts.iter().zip(readme_table) {
            let level = account.level;
            let target = ladder.target(level);
            let whole = format!("{target:.0}");
            // ladder check
            let check = crate::check::ladder_row(account, Some(&shipped)).target;
            assert_eq!(check, format!("{whole} {}", ladder.scale));
            // the sandbox's introduction
            assert!(
                sandbox.contains(&format!(
                    "{} (level {level}, target {whole} {})",
                    account.username, ladder.scale
                )),
                "{sandbox}"
            );
            // calibration without target flags
            assert_eq!(calibration.target(level), Some(target));
            // ladder levels: the target column
            let table = crate::levels::table::render(&shipped, &[level]);
            let key = crate::levels::level_key(level);
            let cell = crate::levels::table::tests::cell(&table, &key, "target");
            assert_eq!(cell, whole, "{table}");
            // the README's table of the levels today: | level | target | measured | ...
            let cells: Vec<&str> = readme_row.split('|').map(str::trim).collect();
            assert_eq!(cells[1], crate::levels::level_key(level));
            assert_eq!(cells[2], whole, "README: {readme_row}");
            assert_eq!(
                cells[3],
                format!("{:.0}", shipped.rating_of(level).unwrap()),
                "README: {readme_row}"
            );
        }
        assert!(
            readme.contains(&format!("{} + {} (L − 1)", ladder.from, ladder.step)),
            "the README names the targets' line"
        );
        // The sandbox's challengers: a level's rating as calibrated, a mover's as the anchors
        // measure it.
        let names: Vec<String> = config.accounts.iter().map(|a| a.username.clone()).collect();
        let demo = crate::sandbox::SandboxConfig::demo(&names);
        for challenger in &demo.challengers {
            let measured = match &challenger.player {
                PlayerKind::Level(level) => shipped.rating_of(*level).unwrap(),
                PlayerKind::Mover(style) => crate::anchors::AnchorsFile::builtin()
                    .get(style.name())
                    .unwrap()
                    .fitted
                    .rating
                    .unwrap(),
                PlayerKind::Uci { .. } => unreachable!("the demo runs no external engine"),
            };
            assert_eq!(
                challenger.rating,
                measured.round() as i32,
                "{}",
                challenger.name
            );
        }
    }
}
