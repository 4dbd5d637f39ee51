//! accounts.toml: the daemon's configuration types, defaults and validation.
