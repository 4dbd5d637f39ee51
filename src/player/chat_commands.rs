//! The chat commands people expect of a Lichess bot (lichess-bot has them): `!help`, `!level`
//! (the level, its target and rating, what it plays like) and `!wait` (more time before the
//! first-move abort, once a game); an unknown command is answered once, politely. What a
//! game's [`ChatDesk`] answers is built from the level's numbers and fixed sentences only —
//! never the sender's text, a token or a path — and is rate-limited per game. Pure: the
//! caller passes the time and carries out the answer (to the room the command came from).

use std::time::{Duration, Instant};

use crate::lichess::MAX_CHAT_CHARS;

/// How much longer `!wait` lets the opponent take over the first move.
pub const WAIT_EXTENSION: Duration = Duration::from_secs(60);
/// At least this long between two answers in one game.
pub const ANSWER_GAP: Duration = Duration::from_secs(3);
/// Answers per game at most (a person typing `!level` a hundred times gets ten).
pub const MAX_ANSWERS: u32 = 10;

/// A command read from a chat line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    Help,
    Level,
    Wait,
    Unknown,
}

impl Command {
    /// The command a chat line is, if it is one (`!level`, `!Level please`).
    pub fn parse(text: &str) -> Option<Command> {
        let word = text.trim().strip_prefix('!')?.split_whitespace().next()?;
        Some(match word.to_ascii_lowercase().as_str() {
            "help" | "commands" => Command::Help,
            "level" | "elo" | "rating" => Command::Level,
            "wait" => Command::Wait,
            _ => Command::Unknown,
        })
    }
}

/// What `!level` tells about the level the game is played at.
#[derive(Clone, Debug, PartialEq)]
pub struct LevelFacts {
    pub level: f64,
    /// The rating the level aims at, and the scale it is on ("lichess-blitz").
    pub target: Option<(f64, String)>,
    /// The rating calibration measured (or interpolated) for the level, with where it comes
    /// from ("calibrated 2026-11-22 from 1830 games").
    pub rating: Option<(f64, String)>,
    /// The 95% half-width of that rating, when calibration measured one for this level.
    pub interval: Option<f64>,
}

/// What the game actor does about a command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// Say this (in the room the command came from).
    Say(String),
    /// Say this and give the opponent [`WAIT_EXTENSION`] more before the first-move abort.
    Extend(String),
}

/// One game's answers to chat commands: what was answered, and when.
#[derive(Clone, Debug, Default)]
pub struct ChatDesk {
    last_answer: Option<Instant>,
    answers: u32,
    wait_given: bool,
    unknown_answered: bool,
}

impl ChatDesk {
    /// The reply to `command`, or `None` when the game's answers are spent or come too fast
    /// (the command is then ignored). `awaiting_first_move`: the opponent has not moved yet, so
    /// the first-move abort is armed.
    pub fn answer(
        &mut self,
        command: &Command,
        facts: &LevelFacts,
        awaiting_first_move: bool,
        now: Instant,
    ) -> Option<Reply> {
        if self.answers >= MAX_ANSWERS
            || self
                .last_answer
                .is_some_and(|at| now.duration_since(at) < ANSWER_GAP)
        {
            return None;
        }
        let reply = match command {
            Command::Help => Reply::Say(
                "Commands: !level (how strong I play), !wait (more time for your first move), \
                 !help."
                    .to_string(),
            ),
            Command::Level => Reply::Say(level_text(facts)),
            Command::Wait if !awaiting_first_move => {
                Reply::Say("The game is under way: no first move to wait for.".to_string())
            }
            Command::Wait if self.wait_given => {
                Reply::Say("I am already waiting longer for your first move.".to_string())
            }
            Command::Wait => {
                self.wait_given = true;
                Reply::Extend(format!(
                    "Sure, take your time: I wait {} more seconds for your first move.",
                    WAIT_EXTENSION.as_secs()
                ))
            }
            Command::Unknown if self.unknown_answered => return None,
            Command::Unknown => {
                self.unknown_answered = true;
                Reply::Say("Sorry, I do not know that command. Try !help.".to_string())
            }
        };
        self.answers += 1;
        self.last_answer = Some(now);
        Some(reply)
    }
}

/// "Level 3: aims at 870 (lichess-blitz), rated 912 (calibrated …). Plays like a club
/// beginner: …", cut to what Lichess accepts.
pub fn level_text(facts: &LevelFacts) -> String {
    let mut text = format!("Level {}", show_level(facts.level));
    if let Some((target, scale)) = &facts.target {
        text.push_str(&format!(": aims at {target:.0} ({scale})"));
    }
    if let Some((rating, source)) = &facts.rating {
        match facts.interval {
            Some(half_width) => {
                text.push_str(&format!(", rated {rating:.0} ± {half_width:.0} ({source})"))
            }
            None => text.push_str(&format!(", rated {rating:.0} ({source})")),
        }
    }
    text.push_str(". ");
    text.push_str(plays_like(facts.target.as_ref().map(|t| t.0)));
    text.chars().take(MAX_CHAT_CHARS).collect()
}

fn show_level(level: f64) -> String {
    if level.fract() == 0.0 {
        format!("{level:.0}")
    } else {
        format!("{level}")
    }
}

/// What a level of this target rating plays like, in a sentence.
fn plays_like(target: Option<f64>) -> &'static str {
    match target {
        Some(t) if t < 900.0 => "Plays like a beginner: misses threats, hangs pieces.",
        Some(t) if t < 1400.0 => "Plays like a casual player: sees simple tactics.",
        Some(t) if t < 1900.0 => "Plays like a club player: solid, some slips.",
        Some(t) if t < 2300.0 => "Plays like a strong club player.",
        Some(_) => "Plays like an expert: few mistakes.",
        None => "Plays at its level's strength.",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> LevelFacts {
        LevelFacts {
            level: 3.0,
            target: Some((870.0, "lichess-blitz".into())),
            rating: Some((912.4, "calibrated from 1830 games".into())),
            interval: Some(61.0),
        }
    }

    #[test]
    fn commands_are_read_from_lines_that_start_with_a_bang() {
        assert_eq!(Command::parse("!help"), Some(Command::Help));
        assert_eq!(Command::parse("  !Level please"), Some(Command::Level));
        assert_eq!(Command::parse("!wait"), Some(Command::Wait));
        assert_eq!(Command::parse("!xyzzy"), Some(Command::Unknown));
        assert_eq!(Command::parse("hello !help"), None);
        assert_eq!(Command::parse("!"), None);
        assert_eq!(Command::parse("gg"), None);
    }

    #[test]
    fn level_tells_the_level_its_target_and_rating_within_lichess_limit() {
        let text = level_text(&facts());
        assert!(
            text.starts_with("Level 3: aims at 870 (lichess-blitz), rated 912 ± 61 (calibrated"),
            "{text}"
        );
        assert!(text.contains("beginner"), "{text}");
        assert!(text.chars().count() <= MAX_CHAT_CHARS);
        let bare = level_text(&LevelFacts {
            level: 2.5,
            target: None,
            rating: None,
            interval: None,
        });
        assert!(bare.starts_with("Level 2.5. "), "{bare}");
    }

    #[test]
    fn wait_is_given_once_and_only_before_the_first_move() {
        let mut desk = ChatDesk::default();
        let start = Instant::now();
        let reply = desk.answer(&Command::Wait, &facts(), true, start);
        assert!(matches!(reply, Some(Reply::Extend(_))), "{reply:?}");
        let again = desk.answer(&Command::Wait, &facts(), true, start + ANSWER_GAP);
        assert!(matches!(again, Some(Reply::Say(_))), "{again:?}");
        let mut late = ChatDesk::default();
        assert!(matches!(
            late.answer(&Command::Wait, &facts(), false, start),
            Some(Reply::Say(_))
        ));
    }

    #[test]
    fn answers_are_rate_limited_and_an_unknown_command_is_answered_once() {
        let mut desk = ChatDesk::default();
        let start = Instant::now();
        assert!(
            desk.answer(&Command::Unknown, &facts(), false, start)
                .is_some()
        );
        // Too soon, then answered-before.
        assert!(
            desk.answer(&Command::Help, &facts(), false, start)
                .is_none()
        );
        let later = start + ANSWER_GAP;
        assert!(
            desk.answer(&Command::Unknown, &facts(), false, later)
                .is_none()
        );
        let mut at = later;
        let mut answered = 1;
        for _ in 0..30 {
            if desk.answer(&Command::Level, &facts(), false, at).is_some() {
                answered += 1;
            }
            at += ANSWER_GAP;
        }
        assert_eq!(answered, MAX_ANSWERS);
    }
}
