//! systemd credentials: `token_file = "credential:NAME"` in accounts.toml names the file NAME in
//! `$CREDENTIALS_DIRECTORY`, the private, read-only directory systemd fills from the unit's
//! `LoadCredential=` lines (systemd.exec(5)). The config stays the same on every host, and the
//! tokens never sit in a path the service user could write or other users could read.
//!
//! Also the rules every token setting follows, wherever it is read: a `token_env` value must be
//! the name of an environment variable (a pasted token is refused without being shown), and a
//! token file that other users can read is reported ([`token_file_permission_problem`]: `ladder
//! check` lists it, reading the token logs it, so `ladder run` warns at start-up).

use std::path::{Path, PathBuf};

/// The prefix that marks a systemd credential in `token_file`.
pub const CREDENTIAL_PREFIX: &str = "credential:";

/// The environment variable systemd sets to the unit's credentials directory.
pub const CREDENTIALS_DIRECTORY: &str = "CREDENTIALS_DIRECTORY";

/// The path a plain `token_file` value (not a credential) names: an absolute path as is, a
/// relative path from `base_dir` (the config file's directory).
pub fn token_file_path(value: &str, base_dir: &Path) -> PathBuf {
    let path = PathBuf::from(value);
    if path.is_absolute() {
        path
    } else {
        base_dir.join(path)
    }
}

/// The credential name of a `token_file` value, `None` for a plain path. The name is checked
/// to be one credential id; the directory is looked up only when the token is read.
pub fn credential_name(value: &str) -> Option<Result<String, String>> {
    let name = value.strip_prefix(CREDENTIAL_PREFIX)?;
    Some(check_credential_name(name).map(|()| name.to_string()))
}

fn check_credential_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(format!(
            "`{CREDENTIAL_PREFIX}{name}` must name one credential, e.g. `{CREDENTIAL_PREFIX}ladder_l1`"
        ));
    }
    Ok(())
}

/// `dir/name`, checking that `name` is one credential id and that the directory is known.
pub fn credential_path(name: &str, dir: Option<&std::ffi::OsStr>) -> Result<PathBuf, String> {
    check_credential_name(name)?;
    match dir {
        Some(dir) if !dir.is_empty() => Ok(Path::new(dir).join(name)),
        _ => Err(format!(
            "`{CREDENTIAL_PREFIX}{name}` is a systemd credential but ${CREDENTIALS_DIRECTORY} is not \
             set: run under the unit's LoadCredential= (for `ladder check`: systemd-run, see \
             docs/operating.md) or set {CREDENTIALS_DIRECTORY} to the directory holding `{name}`"
        )),
    }
}

/// Checks a `token_env` value: it must name an environment variable (`LADDER_TOKEN_L1`). A
/// value that looks like a token itself (pasted by mistake) is refused with a message that
/// says so and never repeats the value, nor does any other refusal here.
pub fn check_token_env(value: &str) -> Result<(), String> {
    if looks_like_token(value) {
        return Err(
            "looks like a token itself, not the name of an environment variable (the \
                    value is not shown): put the token in a variable or a file and name that \
                    here, e.g. token_env = \"LADDER_TOKEN_L1\", and revoke the pasted token if \
                    this file was shared"
                .to_string(),
        );
    }
    let mut chars = value.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') || value.len() > 100 {
        return Err(
            "must be the name of an environment variable: letters, digits and '_', not \
                    starting with a digit (e.g. LADDER_TOKEN_L1)"
                .to_string(),
        );
    }
    Ok(())
}

/// A `token_file` value (a path, or `credential:NAME`) must not be the token itself: it would
/// be shown in every message that names the file. Refused without being shown.
pub fn check_token_file(value: &str) -> Result<(), String> {
    let name = value.strip_prefix(CREDENTIAL_PREFIX).unwrap_or(value);
    if !name.contains(['/', '\\']) && looks_like_token(name) {
        return Err(
            "looks like a token itself, not a file (the value is not shown): put the token in \
             a file readable only by the daemon's user and name that file here, e.g. \
             token_file = \"/etc/ladder/l1.token\", and revoke the pasted token if this file \
             was shared"
                .to_string(),
        );
    }
    Ok(())
}

/// A Lichess token (`lip_` + 20 letters and digits; older ones are 16 without the prefix) as
/// opposed to a variable name, which by convention is upper case.
fn looks_like_token(value: &str) -> bool {
    let v = value.trim();
    let lower = v.to_ascii_lowercase();
    let mixed_case_with_digits = v.chars().any(|c| c.is_ascii_lowercase())
        && v.chars().any(|c| c.is_ascii_uppercase())
        && v.chars().any(|c| c.is_ascii_digit());
    lower.starts_with("lip_")
        || lower.starts_with("bearer ")
        || (v.len() >= 16 && mixed_case_with_digits && !v.contains('_'))
}

/// A sentence describing why a token file's permissions are too open (readable by group or
/// others), or `None` when they are fine or cannot be inspected.
pub fn token_file_permission_problem(path: &Path) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).ok()?.permissions().mode();
        if mode & 0o077 != 0 {
            return Some(format!(
                "token file {} is accessible by group or others (mode {:o}); run chmod 600 on it",
                path.display(),
                mode & 0o777
            ));
        }
        None
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Logs [`token_file_permission_problem`] as a warning: every command that reads a token file
/// (`run` at start-up, `calibrate --fetch`) says so, not only `check`.
pub fn warn_if_exposed(path: &Path) {
    if let Some(problem) = token_file_permission_problem(path) {
        tracing::warn!("{problem}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_files::temp_file;
    use std::ffi::OsStr;

    #[test]
    fn a_token_pasted_as_the_token_file_is_refused_without_being_shown() {
        for pasted in [
            "lip_AbCdEf1234567890abcd",
            "credential:lip_AbCdEf1234567890abcd",
            "AbCdEf1234567890",
        ] {
            let problem = check_token_file(pasted).expect_err(pasted);
            assert!(!problem.contains("AbCdEf"), "{problem}");
        }
        for file in [
            "/etc/ladder/l1.token",
            "tokens/LadderBot2026Level12",
            "credential:ladder_l1",
            "l1.token",
        ] {
            assert_eq!(check_token_file(file), Ok(()), "{file}");
        }
    }

    #[test]
    fn credential_names_a_file_in_the_credentials_directory() {
        assert_eq!(
            credential_path(
                "ladder_l1",
                Some(OsStr::new("/run/credentials/ladder.service"))
            ),
            Ok(PathBuf::from("/run/credentials/ladder.service/ladder_l1"))
        );
    }

    #[test]
    fn missing_directory_or_bad_name_says_what_to_do() {
        let err = credential_path("ladder_l1", None).unwrap_err();
        assert!(err.contains("CREDENTIALS_DIRECTORY"), "{err}");
        assert!(err.contains("LoadCredential="), "{err}");
        for bad in ["", "../etc/shadow", "a/b", ".."] {
            assert!(
                credential_path(bad, Some(OsStr::new("/run/c"))).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn plain_paths_are_absolute_or_relative_to_the_config() {
        let base = Path::new("/etc/ladder");
        assert_eq!(
            token_file_path("/etc/ladder/tokens/l1", base),
            PathBuf::from("/etc/ladder/tokens/l1")
        );
        assert_eq!(
            token_file_path("tokens/l1", base),
            PathBuf::from("/etc/ladder/tokens/l1")
        );
        assert_eq!(credential_name("tokens/l1"), None);
        assert_eq!(
            credential_name("credential:ladder_l1"),
            Some(Ok("ladder_l1".to_string()))
        );
        assert!(matches!(credential_name("credential:../x"), Some(Err(_))));
    }

    #[test]
    fn token_env_must_name_a_variable_and_a_pasted_token_is_not_repeated() {
        assert_eq!(check_token_env("LADDER_TOKEN_L1"), Ok(()));
        assert_eq!(check_token_env("_tok2"), Ok(()));
        for pasted in [
            "lip_AbCdEf0123456789xyzW",
            "Bearer lip_AbCdEf0123456789xyzW",
            "AbCdEf0123456789",
        ] {
            let err = check_token_env(pasted).unwrap_err();
            assert!(err.contains("looks like a token"), "{err}");
            assert!(!err.contains(pasted) && !err.contains("AbCdEf"), "{err}");
        }
        for bad in ["", "1ABC", "MY-TOKEN", "A B"] {
            let err = check_token_env(bad).unwrap_err();
            assert!(
                err.contains("name of an environment variable"),
                "{bad}: {err}"
            );
        }
    }

    #[cfg(unix)]
    #[test]
    fn open_token_file_is_flagged() {
        use std::os::unix::fs::PermissionsExt;
        let (_dir, path) = temp_file("token");
        std::fs::write(&path, "lip_abc\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let problem = token_file_permission_problem(&path).unwrap();
        assert!(problem.contains("mode 644"), "{problem}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(token_file_permission_problem(&path).is_none());
    }
}
