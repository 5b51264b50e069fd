//! `[python] lock = "uv.lock"` in the wheel step: the packages from uv's lock
//! ([`crate::python::uvlock`]) for the interpreter and the recipe's selection, what the lock's
//! `[python-packages] target` records of that selection, and uv's `--locked` check against
//! the project's pyproject.toml.

use std::path::Path;

use super::SystemError;
use crate::python::pylock::LockedPackage;
use crate::python::uvlock::{self, Selection, UvLockError};
use crate::python::Interpreter;
use crate::recipe::PythonPackages;

/// The project's pyproject.toml beside the uv.lock, when there is one.
fn pyproject(lock: &Path) -> Option<String> {
    let p = lock.parent()?.join("pyproject.toml");
    fs_err::read_to_string(p).ok()
}

/// What the lock's `target` adds for a uv.lock: the selection, so that choosing other extras
/// or groups chooses the wheels again. Empty for other files.
pub fn selection_suffix(pkgs: &PythonPackages) -> String {
    let PythonPackages::UvLock {
        selection, path, ..
    } = pkgs
    else {
        return String::new();
    };
    let list =
        |s: &std::collections::BTreeSet<String>| s.iter().cloned().collect::<Vec<_>>().join(",");
    let groups = match &selection.groups {
        Some(g) => list(g),
        // uv's default groups come from pyproject.toml: its text is what they depend on.
        None => format!(
            "default:{}",
            pyproject(path)
                .map(|t| crate::digest::Digest::of(t.as_bytes()).hex()[..12].to_string())
                .unwrap_or_else(|| "dev".into())
        ),
    };
    format!(
        " uv extras={} groups={}{}",
        list(&selection.extras),
        groups,
        if selection.no_dev { " no-dev" } else { "" }
    )
}

/// Why the uv.lock no longer answers its project's pyproject.toml, if it does not.
pub fn stale(pkgs: &PythonPackages, lock: &[u8]) -> Option<String> {
    let PythonPackages::UvLock { path, written, .. } = pkgs else {
        return None;
    };
    let text = std::str::from_utf8(lock).ok()?;
    let why = uvlock::stale(text, &pyproject(path)?)?;
    Some(format!(
        "{written} is stale: pyproject.toml's requirements are not the ones it was resolved for \
         ({why}); run `uv lock` and commit it (as `uv sync --locked` would say)"
    ))
}

/// The packages of the uv.lock at `path` for `interp` and `selection`.
pub fn packages(
    text: &str,
    path: &Path,
    interp: &Interpreter,
    selection: &Selection,
) -> Result<Vec<LockedPackage>, SystemError> {
    uvlock::parse(text, interp, selection, pyproject(path).as_deref()).map_err(|e| {
        let placed = match &e {
            UvLockError::Toml { .. } => true,
            UvLockError::Invalid { at, .. } | UvLockError::Unsupported { at, .. } => at.0.is_some(),
            _ => false,
        };
        let sep = if placed { ":" } else { ": " };
        SystemError::Python {
            problem: format!("{}{sep}{}", path.display(), crate::diag::chain(&e)),
        }
    })
}
