//! Settings of the long benchmarks, from the environment.

use std::str::FromStr;

/// The value of the environment variable `key`, or `default` when it is not set; a value
/// that does not parse stops the test with its name.
pub fn env_or<T: FromStr>(key: &str, default: T) -> T {
    match std::env::var(key) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{key}={v:?} is not a valid value")),
        Err(_) => default,
    }
}
