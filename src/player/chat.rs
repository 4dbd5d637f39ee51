//! What an account says in a game's player chat: the `greeting` and `goodbye` templates of
//! accounts.toml with `{me}` and `{opponent}` filled in, cut to what Lichess accepts, and
//! [`LEAVE_CHAT`] when the shutdown leaves a game running on Lichess, and the conduct
//! lines ([`RESIGN_CHAT`], [`TAKEBACKS_USED_CHAT`]). Config validation
//! asks [`longest_line`] whether a template can fit.

use crate::lichess::MAX_CHAT_CHARS;

/// Lichess usernames are at most this long: a template is checked filled with names this long.
pub const LONGEST_USERNAME: usize = 30;

/// What we say when the shutdown grace period has run out and the game is left running on
/// Lichess, to be resumed when the daemon is back (never resigned for the operator's sake).
pub const LEAVE_CHAT: &str = "I have to step away for a moment \u{2014} I will be back to finish \
                              this game. If I am not back in time, the game is yours.";

/// Said before resigning a lost game.
pub const RESIGN_CHAT: &str = "I resign \u{2014} well played, {opponent}!";

/// Said when a takeback is declined because the game's takebacks are used up.
pub const TAKEBACKS_USED_CHAT: &str = "Sorry, no more takebacks in this game.";

/// `template` with `{me}` and `{opponent}` filled in, cut to [`MAX_CHAT_CHARS`] characters.
pub fn chat_line(template: &str, me: &str, opponent: &str) -> String {
    fill(template, me, opponent)
        .chars()
        .take(MAX_CHAT_CHARS)
        .collect()
}

/// How many characters `template` can take once filled, with the longest usernames.
pub fn longest_line(template: &str) -> usize {
    let name = "x".repeat(LONGEST_USERNAME);
    fill(template, &name, &name).chars().count()
}

fn fill(template: &str, me: &str, opponent: &str) -> String {
    template.replace("{me}", me).replace("{opponent}", opponent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_are_filled_and_cut_to_the_lichess_limit() {
        assert_eq!(
            chat_line("Hi {opponent}, I am {me}", "L1", "bob"),
            "Hi bob, I am L1"
        );
        let long = "a".repeat(130) + "{opponent}";
        assert_eq!(longest_line(&long), 160);
        assert_eq!(chat_line(&long, "me", "bob").chars().count(), 133);
        assert_eq!(
            chat_line(&long, "me", &"b".repeat(30)).chars().count(),
            MAX_CHAT_CHARS
        );
        assert!(LEAVE_CHAT.chars().count() <= MAX_CHAT_CHARS);
    }
}
