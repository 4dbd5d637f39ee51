//! The API token: a newtype that never prints itself, validated once where it enters (the
//! config's `token_env` / `token_file`, the sandbox), and the check on a token file's
//! permissions.

use std::fmt;

/// A Lichess personal access token. `Debug` and `Display` print `lip_***`, so a token that
/// ends up in a log line or an error message by accident reveals nothing.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

/// Why a text is not a token. Never carries the text.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
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
}
