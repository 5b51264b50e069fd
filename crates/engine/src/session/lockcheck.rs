//! The lock against the recipe: what `--locked`, `--offline`, `vendor` and `mirror --recipe`
//! check before they use a lock.

use std::path::Path;

use crate::digest::Digest;
use crate::lock::{Lock, LockError};

/// What differs between the recipe's inputs and what this lock pinned for them, one phrase
/// per change (`base reference a → b`, `[apt] package `x` added`, `python archive changed`);
/// empty when the lock answers the recipe. Wheels are not compared (builds do not produce
/// them yet).
pub fn lock_changes(lock: &Lock, recipe: &crate::recipe::Recipe) -> Vec<String> {
    use crate::recipe::{Base, PythonSource};
    let mut out = Vec::new();
    // A one-platform recipe's lock holds no platform sections (a view never has any).
    if !recipe.is_multi_platform() && !lock.platforms.is_empty() {
        let names: Vec<&str> = lock.platforms.keys().map(String::as_str).collect();
        out.push(format!(
            "the lock has sections for several platforms ({}); the recipe builds one",
            names.join(", ")
        ));
    }
    match (&recipe.base, &lock.base) {
        (Base::Scratch, None) => {}
        (Base::Scratch, Some(b)) => out.push(format!(
            "base {} removed (the recipe builds on scratch)",
            b.reference
        )),
        (Base::Image { reference }, locked) => {
            let name = reference
                .parse::<crate::registry::Reference>()
                .map(|r| r.to_string())
                .unwrap_or_else(|_| reference.clone());
            let platform = recipe.image.platform.to_string();
            match locked {
                None => out.push(format!("base {name} is not pinned")),
                Some(b) => {
                    if b.reference != name {
                        out.push(format!("base reference {} → {name}", b.reference));
                    }
                    if b.platform != platform {
                        out.push(format!("base platform {} → {platform}", b.platform));
                    }
                }
            }
        }
    }
    match (&recipe.apt, &lock.apt) {
        (None, None) => {}
        (None, Some(_)) => out.push("[apt] removed".into()),
        (Some(apt), locked) => {
            if let Some(what) = crate::system::apt::stale(apt, locked.as_ref(), None) {
                out.push(format!("[apt] {what}"));
            }
        }
    }
    let archive = match recipe.python.as_ref().map(|p| &p.source) {
        Some(PythonSource::Archive(a)) => Some((a.written.as_str(), a.sha256)),
        _ => None,
    };
    match (archive, &lock.python) {
        (None, None) => {}
        (None, Some(p)) => out.push(format!("python archive {} removed", p.url)),
        (Some((url, _)), None) => out.push(format!("python archive {url} added")),
        (Some((url, sha)), Some(p)) => {
            if p.url != url {
                out.push(format!("python archive URL {} → {url}", p.url));
            }
            if p.sha256 != sha {
                out.push(format!("python archive sha256 {} → {sha}", p.sha256));
            }
        }
    }
    let packages = recipe.python.as_ref().and_then(|p| p.packages.as_ref());
    match (packages, &lock.python_packages) {
        (None, None) => {}
        (None, Some(p)) => out.push(format!("python packages ({}) removed", p.file)),
        (Some(pk), None) => out.push(format!("python packages {} added", pk.written())),
        (Some(pk), Some(l)) => {
            if l.file == pk.written() {
                match fs_err::read(pk.path()) {
                    Ok(b) if Digest::of(&b) == l.sha256 => {}
                    Ok(_) => out.push(format!("{} changed", l.file)),
                    Err(e) => out.push(format!("{}: {e}", l.file)),
                }
            } else {
                out.push(format!(
                    "python packages file {} → {}",
                    l.file,
                    pk.written()
                ));
            }
        }
    }
    out
}

/// `--locked` (and `--offline`): the recipe's lock, which must match the recipe (and exist,
/// unless the recipe pins nothing).
pub fn load_checked_lock(
    recipe: &crate::recipe::Recipe,
    recipe_path: &Path,
    mode: &'static str,
) -> Result<Lock, LockError> {
    let path = Lock::path_for(recipe_path);
    let loaded = Lock::load_view(&path, recipe.lock_view().as_deref())?;
    check_lock(loaded, recipe, recipe_path, mode)
}

/// [`load_checked_lock`] of a lock already read (`None`: there is no lock file).
pub fn check_lock(
    loaded: Option<Lock>,
    recipe: &crate::recipe::Recipe,
    recipe_path: &Path,
    mode: &'static str,
) -> Result<Lock, LockError> {
    let path = Lock::path_for(recipe_path);
    let Some(lock) = loaded else {
        // No lock is fine for a recipe with nothing to pin (scratch base, no [apt]/[python]).
        if lock_changes(&Lock::new(), recipe).is_empty() {
            return Ok(Lock::new());
        }
        return Err(LockError::Missing {
            mode,
            path,
            recipe: recipe_path.to_path_buf(),
        });
    };
    let changes = lock_changes(&lock, recipe);
    if !changes.is_empty() {
        return Err(LockError::Stale {
            mode,
            path,
            recipe: recipe_path.to_path_buf(),
            changes,
        });
    }
    Ok(lock)
}
