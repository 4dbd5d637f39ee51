//! The API token: a newtype that never prints itself, loaded from an environment variable or a
//! file (systemd credentials), with a check on the file's permissions.

use std::fmt;
use std::path::Path;

/// A Lichess personal access token. `Debug` and `Display` print `lip_***`, so a token that
/// ends up in a log line or an error message by accident reveals nothing.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

/// Why a token could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("environment variable {name} is not set")]
    MissingEnv { name: String },
    #[error("environment variable {name} is not valid unicode")]
    NotUnicode { name: String },
    #[error("cannot read token file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("token from {origin} is empty")]
    Empty { origin: String },
    /// The spec says tokens match `^[A-Za-z0-9_]+$`; anything else is a copy-paste accident
    /// (quotes, a `Bearer ` prefix) that Lichess would reject with a less helpful 401.
    #[error("token from {origin} contains characters other than A-Z, a-z, 0-9 and _")]
    BadCharacters { origin: String },
}

impl Token {
    /// Wraps a token, trimming surrounding whitespace and validating its alphabet.
    pub fn new(raw: &str, origin: &str) -> Result<Token, TokenError> {
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            return Err(TokenError::Empty {
                origin: origin.to_string(),
            });
        }
        if !trimmed
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            return Err(TokenError::BadCharacters {
                origin: origin.to_string(),
            });
        }
        Ok(Token(trimmed.to_string()))
    }

    /// Reads the token from an environment variable.
    pub fn from_env(name: &str) -> Result<Token, TokenError> {
        match std::env::var(name) {
            Ok(value) => Token::new(&value, &format!("environment variable {name}")),
            Err(std::env::VarError::NotPresent) => Err(TokenError::MissingEnv {
                name: name.to_string(),
            }),
            Err(std::env::VarError::NotUnicode(_)) => Err(TokenError::NotUnicode {
                name: name.to_string(),
            }),
        }
    }

    /// Reads the token from a file, warning when the file is readable by group or others.
    pub fn from_file(path: &Path) -> Result<Token, TokenError> {
        if let Some(problem) = token_file_permission_problem(path) {
            tracing::warn!("{problem}");
        }
        let text = std::fs::read_to_string(path).map_err(|source| TokenError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Token::new(&text, &format!("file {}", path.display()))
    }

    /// The secret itself, for the `Authorization` header only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("lip_***")
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("lip_***")
    }
}

/// The permission rule lives with the other token-setting rules.
pub use crate::credentials::token_file_permission_problem;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_is_redacted_and_trimmed() {
        let token = Token::new("  lip_secret123\n", "test").unwrap();
        assert_eq!(token.expose(), "lip_secret123");
        assert_eq!(format!("{token}"), "lip_***");
        assert_eq!(format!("{token:?}"), "lip_***");
        assert!(!format!("{:?}", Some(&token)).contains("secret"));
    }

    #[test]
    fn bad_tokens_are_refused_without_echoing_them() {
        let err = Token::new("Bearer lip_secret", "test").unwrap_err();
        assert!(!err.to_string().contains("secret"));
        assert!(matches!(
            Token::new(" \n", "x"),
            Err(TokenError::Empty { .. })
        ));
    }

    #[test]
    fn missing_env_var_is_named_in_the_error() {
        let err = Token::from_env("LADDER_TEST_SURELY_UNSET_TOKEN_VAR").unwrap_err();
        assert!(matches!(err, TokenError::MissingEnv { .. }));
        assert!(
            err.to_string()
                .contains("LADDER_TEST_SURELY_UNSET_TOKEN_VAR")
        );
    }

    #[cfg(unix)]
    #[test]
    fn open_token_file_is_flagged() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "lip_abc\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(token_file_permission_problem(&path).is_some());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(token_file_permission_problem(&path).is_none());
        assert_eq!(Token::from_file(&path).unwrap().expose(), "lip_abc");
    }
}
