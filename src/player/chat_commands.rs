//! The chat commands people expect of a Lichess bot (lichess-bot has them): `!help`, `!level`
//! (the level, its target and rating, what it plays like) and `!wait` (more time before the
//! first-move abort, once a game, for the opponent only); an unknown command is answered once,
//! politely. What a game's [`ChatDesk`] answers is built from the level's numbers and fixed
//! sentences only — never the sender's text, a token or a path — and is rate-limited per game;
//! the limit holds back what is said, never the wait granted. Pure: the caller passes the time
//! and carries out the answer (to the room the command came from).

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
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Answer {
    /// Give the opponent [`WAIT_EXTENSION`] more before the first-move abort.
    pub extend: bool,
    /// Say this (in the room the command came from); `None` when the game's answers are
    /// spent or come too fast.
    pub say: Option<String>,
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
    /// The answer to `command`. `from_opponent`: said in the players' room by the opponent
    /// (a spectator's `!wait` gives no time: the wait is the opponent's to ask);
    /// `awaiting_first_move`: the opponent has not moved yet, so the first-move abort is armed.
    /// The wait is granted even when the answer is held back by the rate limit: an opponent
    /// who typed `!help` and then `!wait` is not aborted for typing fast.
    pub fn answer(
        &mut self,
        command: &Command,
        facts: &LevelFacts,
        from_opponent: bool,
        awaiting_first_move: bool,
        now: Instant,
    ) -> Answer {
        let extend =
            *command == Command::Wait && from_opponent && awaiting_first_move && !self.wait_given;
        self.wait_given |= extend;
        let held_back = self.answers >= MAX_ANSWERS
            || self
                .last_answer
                .is_some_and(|at| now.duration_since(at) < ANSWER_GAP);
        if held_back {
            return Answer { extend, say: None };
        }
        let text = match command {
            Command::Help => "Commands: !level (how strong I play), !wait (more time for your \
                              first move), !help."
                .to_string(),
            Command::Level => level_text(facts),
            Command::Wait if extend => format!(
                "Sure, take your time: I wait {} more seconds for your first move.",
                WAIT_EXTENSION.as_secs()
            ),
            Command::Wait if !from_opponent => {
                "Only my opponent can ask me to wait for a first move.".to_string()
            }
            Command::Wait if !awaiting_first_move => {
                "The game is under way: no first move to wait for.".to_string()
            }
            Command::Wait => "I am already waiting longer for your first move.".to_string(),
            Command::Unknown if self.unknown_answered => return Answer { extend, say: None },
            Command::Unknown => {
                self.unknown_answered = true;
                "Sorry, I do not know that command. Try !help.".to_string()
            }
        };
        self.answers += 1;
        self.last_answer = Some(now);
        Answer {
            extend,
            say: Some(text),
        }
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
    fn wait_is_given_once_to_the_opponent_and_only_before_the_first_move() {
        let mut desk = ChatDesk::default();
        let start = Instant::now();
        let answer = desk.answer(&Command::Wait, &facts(), true, true, start);
        assert!(answer.extend, "{answer:?}");
        assert!(answer.say.unwrap().contains("take your time"));
        let again = desk.answer(&Command::Wait, &facts(), true, true, start + ANSWER_GAP);
        assert!(!again.extend && again.say.is_some(), "{again:?}");
        let mut late = ChatDesk::default();
        let answer = late.answer(&Command::Wait, &facts(), true, false, start);
        assert!(!answer.extend && answer.say.is_some(), "{answer:?}");
        // A spectator's !wait is answered and gives no time; the opponent's own still does.
        let mut watched = ChatDesk::default();
        let answer = watched.answer(&Command::Wait, &facts(), false, true, start);
        assert!(!answer.extend, "{answer:?}");
        assert!(answer.say.unwrap().contains("Only my opponent"));
        let answer = watched.answer(&Command::Wait, &facts(), true, true, start + ANSWER_GAP);
        assert!(answer.extend, "{answer:?}");
    }

    /// `!help` then `!wait` a second later: the second answer is held back by the gap, the
    /// wait is granted all the same.
    #[test]
    fn a_wait_asked_too_soon_after_another_command_is_still_granted() {
        let mut desk = ChatDesk::default();
        let start = Instant::now();
        let help = desk.answer(&Command::Help, &facts(), true, true, start);
        assert!(help.say.is_some() && !help.extend);
        let wait = desk.answer(
            &Command::Wait,
            &facts(),
            true,
            true,
            start + Duration::from_secs(1),
        );
        assert_eq!(
            wait,
            Answer {
                extend: true,
                say: None
            }
        );
    }

    #[test]
    fn answers_are_rate_limited_and_an_unknown_command_is_answered_once() {
        let mut desk = ChatDesk::default();
        let start = Instant::now();
        let says = |desk: &mut ChatDesk, command: Command, at: Instant| {
            desk.answer(&command, &facts(), true, false, at)
                .say
                .is_some()
        };
        assert!(says(&mut desk, Command::Unknown, start));
        // Too soon, then answered-before.
        assert!(!says(&mut desk, Command::Help, start));
        let later = start + ANSWER_GAP;
        assert!(!says(&mut desk, Command::Unknown, later));
        let mut at = later;
        let mut answered = 1;
        for _ in 0..30 {
            if says(&mut desk, Command::Level, at) {
                answered += 1;
            }
            at += ANSWER_GAP;
        }
        assert_eq!(answered, MAX_ANSWERS);
    }
}
