//! Reading the files a person writes (accounts.toml, coefficients.toml, the anchors, openings)
//! with errors a person can act on: one error type that names the file, the line and the key,
//! TOML parsing that names the key of every syntax, type or missing-field error, and the line of
//! a byte offset for the other readers' own errors.

use std::path::Path;

/// A problem with a file a person writes; always names the file, and the line where one applies.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    /// Syntax errors, unknown or mistyped keys (the message names the key when there is one).
    #[error("{path}:{line}: {message}")]
    Parse {
        path: String,
        line: usize,
        message: String,
    },
    /// A value that parses but makes no sense.
    #[error("{path}:{line}: {key}: {problem}")]
    Invalid {
        path: String,
        line: usize,
        key: String,
        problem: String,
    },
    /// A file that parses but holds nothing usable.
    #[error("{path}: {problem}")]
    Empty { path: String, problem: String },
}

impl FileError {
    /// The error of a value at byte `offset` of `text`, a file named `origin`.
    pub fn invalid(
        origin: &str,
        text: &str,
        offset: usize,
        key: &str,
        problem: impl Into<String>,
    ) -> FileError {
        FileError::Invalid {
            path: origin.to_string(),
            line: line_of(text, offset),
            key: key.to_string(),
            problem: problem.into(),
        }
    }
}

/// A file's text and the name errors give it: what a validator of the file's values needs to
/// turn a value's span into an error naming the file, the line and the key.
#[derive(Clone, Copy, Debug)]
pub struct FileText<'a> {
    pub text: &'a str,
    pub origin: &'a str,
}

impl FileText<'_> {
    /// The error of the value at `span` (as the caller's error type, which holds a [`FileError`]).
    pub fn invalid<T, E: From<FileError>>(
        &self,
        span: std::ops::Range<usize>,
        key: &str,
        problem: impl Into<String>,
    ) -> Result<T, E> {
        Err(FileError::invalid(self.origin, self.text, span.start, key, problem).into())
    }
}

/// Reads `path` and hands its text to `parse` with the path as the name errors give the file.
pub fn load<T>(
    path: &Path,
    parse: impl FnOnce(&str, &str) -> Result<T, FileError>,
) -> Result<T, FileError> {
    parse(&read_text(path)?, &path.display().to_string())
}

/// The whole text of `path`, or the error that names it.
pub fn read_text(path: &Path) -> Result<String, FileError> {
    std::fs::read_to_string(path).map_err(|source| FileError::Read {
        path: path.display().to_string(),
        source,
    })
}

/// Deserializes `text` of the file named `origin`, as [`from_toml`] with the file's name.
pub fn parse_toml<T: serde::de::DeserializeOwned>(
    text: &str,
    origin: &str,
) -> Result<T, FileError> {
    from_toml(text).map_err(|e| FileError::Parse {
        path: origin.to_string(),
        line: e.line,
        message: e.keyed_message(),
    })
}

/// A TOML syntax, type or missing-field error: its line (0 when toml gives no position), the
/// key it is about (`accounts[2].level`) and toml's message (without the source excerpt, which
/// could hold a secret pasted into the file).
#[derive(Clone, Debug, PartialEq)]
pub struct TomlError {
    pub line: usize,
    pub key: Option<String>,
    pub message: String,
}

impl TomlError {
    /// "key: message", or the message alone when no key applies (a syntax error).
    pub fn keyed_message(&self) -> String {
        match &self.key {
            Some(key) => format!("{key}: {}", self.message),
            None => self.message.clone(),
        }
    }
}

/// Deserializes `text`, naming the key of a type or missing-field error (through
/// `serde_path_to_error`) as well as toml's line. The one TOML front door of accounts.toml and
/// coefficients.toml.
pub fn from_toml<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, TomlError> {
    serde_path_to_error::deserialize(toml::Deserializer::new(text)).map_err(|e| {
        // Spanned<T> is read through private map keys; they are no part of the user's key.
        let mut key: Vec<String> = Vec::new();
        for segment in e.path().iter() {
            match segment {
                serde_path_to_error::Segment::Seq { index } => match key.last_mut() {
                    Some(last) => last.push_str(&format!("[{index}]")),
                    None => key.push(format!("[{index}]")),
                },
                serde_path_to_error::Segment::Map { key: k }
                | serde_path_to_error::Segment::Enum { variant: k } => {
                    if !k.starts_with("$__") {
                        key.push(k.clone());
                    }
                }
                serde_path_to_error::Segment::Unknown => {}
            }
        }
        let inner = e.into_inner();
        let mut message = inner.message().trim().to_string();
        // "missing field `level`" is about accounts[2].level, not accounts[2].
        if let Some(field) = message
            .strip_prefix("missing field `")
            .and_then(|m| m.strip_suffix('`'))
        {
            key.push(field.to_string());
            message = "missing".to_string();
        }
        // An unknown key's message already names it and the keys allowed there.
        if message.starts_with("unknown field") {
            key.clear();
        }
        TomlError {
            line: inner.span().map_or(0, |s| line_of(text, s.start)),
            key: (!key.is_empty()).then(|| key.join(".")),
            message,
        }
    })
}

/// The 1-based line of a byte offset into `text`.
pub fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}
