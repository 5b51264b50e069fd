//! Usage errors found after clap parsed the command line (exit status 2, as clap's own), and
//! the registry flags every command takes: `--authfile`, `--creds`, `--cert-dir`, checked here
//! before anything is read from or written to a registry.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::registry::auth::{Credential, Secret};

/// The exit status of a usage error (clap's).
pub(super) const EXIT_USAGE: u8 = 2;

/// A value on the command line that cannot be used: the command did nothing.
#[derive(Debug, thiserror::Error)]
pub(super) enum UsageError {
    #[error("--creds: {problem}; give --creds USER:PASSWORD")]
    Creds { problem: &'static str },
    #[error("--authfile")]
    AuthFile(#[source] crate::bounded::Error),
    #[error("--cert-dir `{}`: {problem}", crate::bounded::clip_path(path))]
    CertDir { path: PathBuf, problem: String },
}

/// Whether `e` is a usage error: a [`UsageError`], an image reference the command line
/// wrote that is no form the command takes ([`crate::imageref::ImageRefError`]), or a
/// `--build-arg` the recipe does not declare.
pub(super) fn is_usage(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<UsageError>().is_some()
            || c.downcast_ref::<crate::imageref::ImageRefError>().is_some()
            || c.downcast_ref::<crate::recipe::RecipeError>()
                .is_some_and(|r| {
                    matches!(
                        r,
                        crate::recipe::RecipeError::Override {
                            flag: "--build-arg",
                            ..
                        }
                    )
                })
            || c.downcast_ref::<crate::import::ImportError>()
                .is_some_and(ocibuild_engine::import::ImportError::is_usage)
    })
}

/// `--creds` as written, never shown: its `Debug` prints `***` (clap's value parser never
/// fails on it, so clap never quotes it either); [`CredsArg::credential`] checks it.
#[derive(Clone)]
pub(super) struct CredsArg(Secret);

impl fmt::Debug for CredsArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CredsArg(***)")
    }
}

impl CredsArg {
    /// clap's value parser: takes anything, so that no clap message quotes the password.
    pub(super) fn parse(s: &str) -> Result<CredsArg, std::convert::Infallible> {
        Ok(CredsArg(Secret::new(s)))
    }

    /// `USER:PASSWORD` (split at the first `:`; the password may hold more), both non-empty.
    pub(super) fn credential(&self) -> Result<Credential, UsageError> {
        let problem = |problem| UsageError::Creds { problem };
        let Some((user, password)) = self.0.expose().split_once(':') else {
            return Err(problem("no `:PASSWORD` after the user name"));
        };
        if user.is_empty() {
            return Err(problem("no user name before the `:`"));
        }
        if password.is_empty() {
            return Err(problem("the password is empty"));
        }
        Ok(Credential::Basic {
            username: user.to_string(),
            password: Secret::new(password),
        })
    }
}

/// `--authfile FILE`: a regular file that can be read (a FIFO is refused without blocking),
/// so a typo does not leave the command anonymous.
pub(super) fn check_authfile(path: &Path) -> Result<(), UsageError> {
    crate::bounded::read_regular(path, crate::bounded::MAX_TEXT_FILE)
        .map(drop)
        .map_err(UsageError::AuthFile)
}

/// `--cert-dir DIR`: an existing directory.
pub(super) fn check_cert_dir(path: &Path) -> Result<(), UsageError> {
    let bad = |problem: String| UsageError::CertDir {
        path: path.to_path_buf(),
        problem,
    };
    match fs_err::metadata(path) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(m) if m.is_file() => Err(bad("is a file, not a directory".into())),
        Ok(m) => Err(bad(format!(
            "is {}, not a directory",
            crate::bounded::kind_of(m.file_type())
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(bad("no such directory".into())),
        Err(_) => Err(bad("cannot be read".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creds_need_a_user_and_a_password_and_never_show_them() {
        let c = |s: &str| CredsArg::parse(s).unwrap().credential();
        assert_eq!(
            c("alice:pa:ss").unwrap(),
            Credential::Basic {
                username: "alice".into(),
                password: Secret::new("pa:ss")
            }
        );
        for (bad, why) in [
            (":hunter2", "no user name"),
            ("alice", "no `:PASSWORD`"),
            ("alice:", "password is empty"),
            ("", "no `:PASSWORD`"),
        ] {
            let e = c(bad).unwrap_err().to_string();
            assert!(
                e.contains(why) && e.ends_with("give --creds USER:PASSWORD"),
                "{e}"
            );
            assert!(!e.contains("hunter2"), "{e}");
        }
        let arg = CredsArg::parse("alice:hunter2").unwrap();
        assert!(!format!("{arg:?}").contains("hunter2"));
        assert!(!format!("{:?}", arg.credential().unwrap()).contains("hunter2"));
    }

    #[test]
    fn authfile_and_cert_dir_are_checked() {
        let t = tempfile::tempdir().unwrap();
        let e = check_authfile(t.path()).unwrap_err();
        assert!(
            crate::diag::chain(&e).contains("is a directory, not a regular file"),
            "{}",
            crate::diag::chain(&e)
        );
        assert!(check_authfile(&t.path().join("missing.json")).is_err());
        let f = t.path().join("auth.json");
        fs_err::write(&f, "{}").unwrap();
        check_authfile(&f).unwrap();
        check_cert_dir(t.path()).unwrap();
        let e = check_cert_dir(&f).unwrap_err().to_string();
        assert!(e.ends_with("is a file, not a directory"), "{e}");
        let e = check_cert_dir(&t.path().join("nope"))
            .unwrap_err()
            .to_string();
        assert!(e.ends_with("no such directory"), "{e}");
    }
}
