//! systemd credentials: `token_file = "credential:NAME"` in accounts.toml names the file NAME in
//! `$CREDENTIALS_DIRECTORY`, the private, read-only directory systemd fills from the unit's
//! `LoadCredential=` lines (systemd.exec(5)). The config stays the same on every host, and the
//! tokens never sit in a path the service user could write or other users could read.

use std::path::{Path, PathBuf};

/// The prefix that marks a systemd credential in `token_file`.
pub const CREDENTIAL_PREFIX: &str = "credential:";

/// The environment variable systemd sets to the unit's credentials directory.
pub const CREDENTIALS_DIRECTORY: &str = "CREDENTIALS_DIRECTORY";

/// The path a `token_file` value names: `credential:NAME` → `$CREDENTIALS_DIRECTORY/NAME`;
/// an absolute path as is; a relative path from `base_dir` (the config file's directory).
/// The error is a sentence saying what to do.
pub fn resolve_token_file(value: &str, base_dir: &Path) -> Result<PathBuf, String> {
    let Some(name) = value.strip_prefix(CREDENTIAL_PREFIX) else {
        let path = PathBuf::from(value);
        return Ok(if path.is_absolute() {
            path
        } else {
            base_dir.join(path)
        });
    };
    credential_path(name, std::env::var_os(CREDENTIALS_DIRECTORY).as_deref())
}

/// `dir/name`, checking that `name` is one credential id and that the directory is known.
pub fn credential_path(name: &str, dir: Option<&std::ffi::OsStr>) -> Result<PathBuf, String> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(format!(
            "`{CREDENTIAL_PREFIX}{name}` must name one credential, e.g. `{CREDENTIAL_PREFIX}ladder_l1`"
        ));
    }
    match dir {
        Some(dir) if !dir.is_empty() => Ok(Path::new(dir).join(name)),
        _ => Err(format!(
            "`{CREDENTIAL_PREFIX}{name}` is a systemd credential but ${CREDENTIALS_DIRECTORY} is not \
             set: run under the unit's LoadCredential= (for `ladder check`: systemd-run, see \
             docs/operating.md) or set {CREDENTIALS_DIRECTORY} to the directory holding `{name}`"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

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
            resolve_token_file("/etc/ladder/tokens/l1", base),
            Ok(PathBuf::from("/etc/ladder/tokens/l1"))
        );
        assert_eq!(
            resolve_token_file("tokens/l1", base),
            Ok(PathBuf::from("/etc/ladder/tokens/l1"))
        );
    }
}
