//! A sandbox for one bot, the people who play it and Rita.

use ladder::sandbox::{AccountConfig, SandboxConfig};

use super::sandbox::{challenger, sandbox_config};

/// One bot, the given people, and Rita (random moves, challenges only when asked).
pub fn one_bot_config(bot: &str, humans: &[&str]) -> SandboxConfig {
    let mut config = sandbox_config(&[bot]);
    for human in humans {
        config.accounts.push(AccountConfig::human(human));
    }
    config.challengers.push(challenger("Rita"));
    config
}
