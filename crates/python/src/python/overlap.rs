//! Paths that several wheels of one image install.
//!
//! pip and uv install wheels one after the other into one tree, so a path two wheels ship is
//! simply written twice. Real wheel sets do this on purpose: the eleven `nvidia-*-cu12` wheels
//! of a PyTorch lock each ship the same empty `nvidia/__init__.py`. ocibuild installs wheels
//! into several layers, each a complete install of its wheels, so it decides up front, for the
//! whole image, what every shared path becomes ([`resolve`]):
//!
//! - the same bytes and mode from several wheels: accepted. A grouped layer writes the file
//!   once; separate layers each keep their copy (overlay shows one), and every wheel's RECORD
//!   lists it, as after pip;
//! - different bytes or mode: an error naming both wheels and both sha256s, unless the recipe
//!   says `[python] overlap = "last"`: then the wheel later in lock order installs it, and the
//!   earlier wheels leave it out (of their layer and of their RECORD);
//! - a file in one wheel where another has a directory: always an error.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::interpreter::Interpreter;
use super::wheel_types::{scheme_json, ContentConflict, WheelError, WheelFileAt, INSTALL_VERSION};
use crate::digest::Digest;

/// `[python] overlap`: two wheels installing the same path with different content (or mode).
/// The same path with the same bytes and mode is always accepted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Overlap {
    /// `"error"` (the default): the build fails, naming both wheels and both sha256s.
    #[default]
    Error,
    /// `"last"`: the wheel later in lock order (by normalized name) installs the file; the
    /// earlier wheels' layers and RECORDs leave it out.
    Last,
}

/// One file a wheel installs: its layer path (no leading `/`), content sha256, mode and size.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstalledFile {
    pub path: String,
    pub sha256: Digest,
    pub mode: u32,
    pub size: u64,
}

/// Every file one wheel installs for one interpreter, sorted by path.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listing {
    pub files: Vec<InstalledFile>,
}

/// What [`resolve`] decided for a set of wheels (indices are positions in its input).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overlaps {
    /// Per wheel: the paths it leaves out because a later wheel's different file wins.
    pub excluded: Vec<BTreeSet<String>>,
    /// Paths several wheels install with the same bytes and mode → those wheels.
    pub shared: BTreeMap<String, Vec<usize>>,
    /// Paths whose content differed, under `overlap = "last"` → (winner, the others).
    pub replaced: BTreeMap<String, (usize, Vec<usize>)>,
}

impl Overlaps {
    /// The same decisions with wheel `k` renamed `order[k]` (from sorted positions back to the
    /// caller's).
    pub fn reindexed(self, order: &[usize]) -> Overlaps {
        let map = |k: usize| order.get(k).copied().unwrap_or(k);
        let mut excluded = vec![BTreeSet::new(); self.excluded.len()];
        for (k, x) in self.excluded.into_iter().enumerate() {
            if let Some(slot) = excluded.get_mut(map(k)) {
                *slot = x;
            }
        }
        Overlaps {
            excluded,
            shared: self
                .shared
                .into_iter()
                .map(|(p, ws)| (p, ws.into_iter().map(map).collect()))
                .collect(),
            replaced: self
                .replaced
                .into_iter()
                .map(|(p, (w, others))| (p, (map(w), others.into_iter().map(map).collect())))
                .collect(),
        }
    }
}

/// Decides every shared path of `wheels` (in lock order: `(wheel file name, listing)`).
pub fn resolve(wheels: &[(&str, &Listing)], policy: Overlap) -> Result<Overlaps, WheelError> {
    let mut by_path: BTreeMap<&str, Vec<(usize, &InstalledFile)>> = BTreeMap::new();
    for (wi, (_, listing)) in wheels.iter().enumerate() {
        for f in &listing.files {
            by_path.entry(f.path.as_str()).or_default().push((wi, f));
        }
    }
    // A file where another wheel has files beneath it.
    for (path, owners) in &by_path {
        let mut cur: &str = path;
        while let Some(i) = cur.rfind('/') {
            cur = &cur[..i];
            if let Some(file) = by_path.get(cur) {
                return Err(WheelError::FileOverDirectory {
                    path: cur.to_string(),
                    file_wheel: wheels[file[0].0].0.to_string(),
                    dir_wheel: wheels[owners[0].0].0.to_string(),
                });
            }
        }
    }
    let mut out = Overlaps {
        excluded: vec![BTreeSet::new(); wheels.len()],
        ..Overlaps::default()
    };
    for (path, owners) in by_path.into_iter().filter(|(_, o)| o.len() > 1) {
        let (first_wheel, first) = owners[0];
        let differs = owners
            .iter()
            .find(|(_, f)| (f.sha256, f.mode) != (first.sha256, first.mode));
        match (differs, policy) {
            (None, _) => {
                out.shared
                    .insert(path.to_string(), owners.iter().map(|(w, _)| *w).collect());
            }
            (Some((other_wheel, other)), Overlap::Error) => {
                return Err(WheelError::ContentConflict(Box::new(ContentConflict {
                    path: path.to_string(),
                    first: at(wheels[first_wheel].0, first),
                    second: at(wheels[*other_wheel].0, other),
                })));
            }
            (Some(_), Overlap::Last) => {
                let (winner, _) = owners[owners.len() - 1];
                let losers: Vec<usize> =
                    owners[..owners.len() - 1].iter().map(|(w, _)| *w).collect();
                for &l in &losers {
                    out.excluded[l].insert(path.to_string());
                }
                out.replaced.insert(path.to_string(), (winner, losers));
            }
        }
    }
    Ok(out)
}

fn at(wheel: &str, f: &InstalledFile) -> WheelFileAt {
    WheelFileAt {
        wheel: wheel.to_string(),
        sha256: f.sha256,
        mode: f.mode,
    }
}

/// The key under which [`super::wheel::list_wheel`]'s result for this wheel and interpreter
/// is cached: what the listing is a function of (the install rules' version, the wheel's
/// sha256, the executable and the scheme).
pub fn listing_key(sha256: &Digest, interp: &Interpreter) -> Result<Digest, WheelError> {
    let v = serde_json::json!({
        "kind": "python-wheel-files",
        "install": INSTALL_VERSION,
        "sha256": sha256.to_string(),
        "executable": interp.executable,
        "scheme": scheme_json(interp),
    });
    Ok(Digest::of(&crate::json::to_canonical_vec(
        "wheel listing key",
        &v,
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, content: &[u8], mode: u32) -> InstalledFile {
        InstalledFile {
            path: path.into(),
            sha256: Digest::of(content),
            mode,
            size: content.len() as u64,
        }
    }

    fn listing(files: Vec<InstalledFile>) -> Listing {
        Listing { files }
    }

    #[test]
    fn identical_files_are_shared() {
        let a = listing(vec![file("s/nvidia/__init__.py", b"", 0o644)]);
        let b = listing(vec![
            file("s/nvidia/__init__.py", b"", 0o644),
            file("s/nvidia/x/a.so", b"x", 0o755),
        ]);
        let o = resolve(&[("a.whl", &a), ("b.whl", &b)], Overlap::Error).unwrap();
        assert_eq!(o.shared["s/nvidia/__init__.py"], vec![0, 1]);
        assert!(o.excluded.iter().all(BTreeSet::is_empty));
        assert!(o.replaced.is_empty());
    }

    #[test]
    fn different_content_or_mode_conflicts_unless_last() {
        let a = listing(vec![file("s/p/x.py", b"1", 0o644)]);
        let b = listing(vec![file("s/p/x.py", b"2", 0o644)]);
        let c = listing(vec![file("s/p/x.py", b"1", 0o755)]);
        for other in [&b, &c] {
            let e = resolve(&[("a.whl", &a), ("b.whl", other)], Overlap::Error)
                .unwrap_err()
                .to_string();
            assert!(e.contains("a.whl") && e.contains("b.whl") && e.contains("/s/p/x.py"));
            assert!(e.contains(&Digest::of(b"1").hex()), "{e}");
            let theirs = if std::ptr::eq(other, &raw const b) {
                b"2"
            } else {
                b"1"
            };
            assert!(
                e.contains(&format!(
                    "(sha256 {}, mode {:o})",
                    Digest::of(theirs).hex(),
                    other.files[0].mode
                )),
                "{e}"
            );
        }
        let o = resolve(
            &[("a.whl", &a), ("b.whl", &b), ("c.whl", &c)],
            Overlap::Last,
        )
        .unwrap();
        assert_eq!(o.replaced["s/p/x.py"], (2, vec![0, 1]));
        assert!(o.excluded[0].contains("s/p/x.py") && o.excluded[1].contains("s/p/x.py"));
        assert!(o.excluded[2].is_empty());
    }

    #[test]
    fn a_file_over_a_directory_is_an_error_under_any_policy() {
        let a = listing(vec![file("s/p", b"file", 0o644)]);
        let b = listing(vec![file("s/p/x.py", b"", 0o644)]);
        for policy in [Overlap::Error, Overlap::Last] {
            let e = resolve(&[("a.whl", &a), ("b.whl", &b)], policy)
                .unwrap_err()
                .to_string();
            assert_eq!(
                e,
                "`/s/p` is a file in a.whl and a directory in b.whl (which installs files \
                 beneath it): no install order gives both"
            );
        }
    }
}
