//! The daemon's clients with the sandbox's tokens.

use std::collections::HashMap;
use std::sync::Arc;

use ladder::daemon::supervisor::ClientFactory;
use ladder::lichess::{ClientConfig, Token};
use ladder::sandbox::Sandbox;

/// Clients with the sandbox's tokens of `names`, configured by `tune`.
pub fn token_clients(
    sandbox: &Sandbox,
    names: &[&str],
    tune: impl Fn(ClientConfig) -> ClientConfig + Send + Sync + 'static,
) -> ClientFactory {
    let tokens: HashMap<String, Token> = names
        .iter()
        .map(|n| (n.to_lowercase(), sandbox.token(n).unwrap()))
        .collect();
    Arc::new(move |account, base_url| {
        let token = tokens
            .get(&account.username.to_lowercase())
            .cloned()
            .ok_or("no token")?;
        Ok(tune(ClientConfig::new(base_url, token)))
    })
}
