//! The text of a test's accounts.toml.

use std::fmt::Display;

/// The `[lichess]`, `[daemon]` and `[challenge]` tables: Lichess at `base_url`, a move
/// overhead of 100 ms and the given lines of `[daemon]` and `[challenge]` (each line ending in
/// a newline; `max_waiting = 0` unless they set it); the accounts follow ([`account_table`]).
pub fn ladder_toml(base_url: &str, daemon: &str, challenge: &str) -> String {
    // A busy account declines at once (`later`) unless the test is about the queue: the
    // tests of load, limits and faults expect the decline.
    let queue = if challenge.contains("max_waiting") {
        ""
    } else {
        "max_waiting = 0\n"
    };
    format!(
        "\n[lichess]\nbase_url = \"{base_url}\"\n\n[daemon]\nmove_overhead_ms = 100\n{daemon}\n\
         [challenge]\n{queue}{challenge}"
    )
}

/// An `[[accounts]]` table: `username` at `level`, its token in the variable `token_env`,
/// and the given `extra` lines (each ending in a newline).
pub fn account_table(username: &str, token_env: &str, level: impl Display, extra: &str) -> String {
    // Tests play fast: the default think time is a person's ("human").
    let think_time = if extra.contains("think_time") {
        ""
    } else {
        "think_time = \"fast\"\n"
    };
    format!(
        "\n[[accounts]]\nusername = \"{username}\"\ntoken_env = \"{token_env}\"\nlevel = {level}\n\
         {think_time}{extra}"
    )
}
