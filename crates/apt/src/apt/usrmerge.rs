//! Merged /usr: the base's `bin -> usr/bin` links ([`UsrMerge`]), and on `scratch` whether the
//! packages come from a release whose root filesystem is merged ([`on_scratch`]).
//!
//! Debian 13 (trixie) requires merged /usr: base-files 13 ships `bin -> usr/bin`, `sbin ->
//! usr/sbin`, `lib -> usr/lib` and (amd64) `lib64 -> usr/lib64`, and its libc6 ships the
//! dynamic loader only as `usr/lib64/ld-linux-x86-64.so.2`, so nothing linked against it runs
//! without the `lib64` link (its ELF interpreter is `/lib64/ld-linux-x86-64.so.2`). On
//! `scratch` there is no base to read the links from; [`on_scratch`] decides from the packages:
//! the links a package ships (base-files 13), else, when libc6 ships its dynamic loader under
//! `usr/` and nothing under `bin`, `sbin`, `lib` or `lib64` (trixie's; bookworm's ships
//! `lib64/ld-linux-x86-64.so.2`), the links base-files 13 would have made. Paths under the links are then installed through them
//! (`bin/x` at `usr/bin/x`), as dpkg does on a merged system.

use std::collections::BTreeMap;

/// The base image's merged-/usr symlinks: top-level directory → where it points (`bin` →
/// `usr/bin`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UsrMerge {
    map: BTreeMap<String, String>,
}

/// The directories merged-/usr systems turn into symlinks.
pub const USR_MERGE_DIRS: [&str; 6] = ["bin", "sbin", "lib", "lib64", "lib32", "libx32"];

/// The links base-files 13 always ships (its postinst adds `lib32`, `libx32` and the
/// architecture's `lib64` when `/usr/NAME` exists).
const ALWAYS: [&str; 3] = ["bin", "sbin", "lib"];

impl UsrMerge {
    /// No rewriting (a base without merged /usr, or no base).
    pub fn none() -> UsrMerge {
        UsrMerge::default()
    }

    /// All of [`USR_MERGE_DIRS`] → `usr/NAME`.
    pub fn all() -> UsrMerge {
        UsrMerge {
            map: USR_MERGE_DIRS
                .iter()
                .map(|d| (d.to_string(), format!("usr/{d}")))
                .collect(),
        }
    }

    /// From the base's top-level symlinks, given as (path, target) pairs as in a tar
    /// (`bin`, `usr/bin` or `/usr/bin`). Only [`USR_MERGE_DIRS`] pointing at `usr/SAME` count.
    pub fn from_symlinks<'a>(links: impl IntoIterator<Item = (&'a str, &'a str)>) -> UsrMerge {
        let mut map = BTreeMap::new();
        for (path, target) in links {
            if let Some(t) = merge_link(path, target) {
                map.insert(path_of(path).to_string(), t);
            }
        }
        UsrMerge { map }
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The links, as (path, target) pairs (`bin`, `usr/bin`).
    pub fn links(&self) -> impl Iterator<Item = (&str, &str)> {
        self.map.iter().map(|(p, t)| (p.as_str(), t.as_str()))
    }

    /// Rewrites a normalized relative path (no leading `/`, directories without the trailing
    /// `/`).
    pub fn rewrite(&self, path: &str) -> String {
        let (first, rest) = match path.split_once('/') {
            Some((f, r)) => (f, Some(r)),
            None => (path, None),
        };
        match (self.map.get(first), rest) {
            (Some(t), Some(r)) => format!("{t}/{r}"),
            (Some(t), None) => t.clone(),
            (None, _) => path.to_string(),
        }
    }
}

fn path_of(path: &str) -> &str {
    path.trim_start_matches("./").trim_matches('/')
}

/// `usr/NAME` when `path -> target` is a merged-/usr link (`bin -> usr/bin`, `/usr/bin`).
pub fn merge_link(path: &str, target: &str) -> Option<String> {
    let path = path_of(path);
    let target = target.trim_start_matches('/').trim_end_matches('/');
    let target = target.strip_prefix("./").unwrap_or(target);
    (USR_MERGE_DIRS.contains(&path) && target == format!("usr/{path}")).then(|| target.to_string())
}

/// One package's data, as [`on_scratch`] needs it: each path (normalized, not rewritten) and
/// its symlink target when it is one.
pub struct Shipped<'a> {
    pub package: &'a str,
    pub paths: Vec<(&'a str, Option<&'a str>)>,
}

/// What [`on_scratch`] decided: the rewrite, and the links no package ships that the layer
/// must hold (base-files 13's, when base-files is not installed).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScratchMerge {
    pub usr: UsrMerge,
    /// (link, target, the package it is added for), sorted.
    pub added: Vec<(String, String, String)>,
}

/// Whether the packages, installed on `scratch`, make a merged-/usr system (see the module
/// documentation), and the links that takes.
pub fn on_scratch(debs: &[Shipped<'_>]) -> ScratchMerge {
    let shipped: Vec<(&str, &str)> = debs
        .iter()
        .flat_map(|d| d.paths.iter())
        .filter_map(|(p, t)| Some((*p, (*t)?)))
        .filter(|(p, t)| merge_link(p, t).is_some())
        .collect();
    if !shipped.is_empty() {
        return ScratchMerge {
            usr: UsrMerge::from_symlinks(shipped),
            added: Vec::new(),
        };
    }
    let Some(libc) = debs.iter().find(|d| d.package == "libc6") else {
        return ScratchMerge::default();
    };
    let top = |p: &str| p.split('/').next().unwrap_or("").to_string();
    let loader = |p: &str| {
        let name = p.rsplit('/').next().unwrap_or(p);
        name.starts_with("ld") && name.contains(".so")
    };
    let usr_loader = libc
        .paths
        .iter()
        .any(|(p, _)| p.starts_with("usr/") && loader(p));
    if !usr_loader
        || libc
            .paths
            .iter()
            .any(|(p, _)| USR_MERGE_DIRS.contains(&top(p).as_str()))
    {
        return ScratchMerge::default();
    }
    // base-files 13: bin, sbin, lib; lib32, lib64, libx32 where /usr/NAME exists (a package
    // ships it, or ships paths under NAME that now land there).
    let used = |d: &str| {
        debs.iter().flat_map(|x| x.paths.iter()).any(|(p, _)| {
            let p = p.strip_prefix("usr/").unwrap_or(p);
            top(p) == d
        })
    };
    let mut added: Vec<(String, String, String)> = USR_MERGE_DIRS
        .iter()
        .filter(|d| ALWAYS.contains(d) || used(d))
        .map(|d| (d.to_string(), format!("usr/{d}"), libc.package.to_string()))
        .collect();
    added.sort();
    ScratchMerge {
        usr: UsrMerge::from_symlinks(added.iter().map(|(p, t, _)| (p.as_str(), t.as_str()))),
        added,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usr_merge_rewrites() {
        let u = UsrMerge::from_symlinks([
            ("bin", "usr/bin"),
            ("./sbin", "/usr/sbin"),
            ("lib", "usr/lib"),
            ("lib64", "usr/lib"), // not usr/lib64: ignored
            ("etc", "usr/etc"),   // not a merged-/usr dir
        ]);
        assert_eq!(u.rewrite("bin/ls"), "usr/bin/ls");
        assert_eq!(u.rewrite("bin"), "usr/bin");
        assert_eq!(u.rewrite("sbin/x"), "usr/sbin/x");
        assert_eq!(u.rewrite("lib64/ld.so"), "lib64/ld.so");
        assert_eq!(u.rewrite("binary/x"), "binary/x");
        assert_eq!(u.rewrite("usr/bin/x"), "usr/bin/x");
        assert_eq!(UsrMerge::none().rewrite("bin/ls"), "bin/ls");
        assert_eq!(UsrMerge::all().rewrite("libx32/a"), "usr/libx32/a");
    }

    fn deb<'a>(package: &'a str, paths: &[(&'a str, Option<&'a str>)]) -> Shipped<'a> {
        Shipped {
            package,
            paths: paths.to_vec(),
        }
    }

    #[test]
    fn scratch_merge_from_base_files_libc6_or_neither() {
        // base-files 13 ships the links: they are the rewrite, nothing is added.
        let bf = deb(
            "base-files",
            &[
                ("bin", Some("usr/bin")),
                ("lib64", Some("usr/lib64")),
                ("usr/lib64", None),
            ],
        );
        let sh = deb("dash", &[("bin/sh", Some("dash")), ("usr/bin/dash", None)]);
        let m = on_scratch(&[bf, sh]);
        assert!(m.added.is_empty());
        assert_eq!(m.usr.rewrite("bin/sh"), "usr/bin/sh");
        assert_eq!(m.usr.rewrite("lib64/x"), "usr/lib64/x");
        assert_eq!(m.usr.rewrite("sbin/x"), "sbin/x");
        // trixie's libc6 (only /usr): base-files 13's links are added, lib64 since it is used.
        let trixie = deb(
            "libc6",
            &[
                ("usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", None),
                (
                    "usr/lib64/ld-linux-x86-64.so.2",
                    Some("../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"),
                ),
            ],
        );
        let m = on_scratch(&[trixie]);
        let names: Vec<&str> = m.added.iter().map(|a| a.0.as_str()).collect();
        assert_eq!(names, ["bin", "lib", "lib64", "sbin"]);
        assert!(m
            .added
            .iter()
            .all(|(p, t, k)| *t == format!("usr/{p}") && k == "libc6"));
        assert_eq!(m.usr.rewrite("bin/x"), "usr/bin/x");
        // bookworm's libc6 ships lib64/ and lib/: not merged, nothing added.
        let bookworm = deb(
            "libc6",
            &[(
                "lib64/ld-linux-x86-64.so.2",
                Some("/lib/x86_64-linux-gnu/ld.so"),
            )],
        );
        assert_eq!(on_scratch(&[bookworm]), ScratchMerge::default());
        // A libc6 without a loader says nothing; no libc6, no links: as before.
        assert_eq!(
            on_scratch(&[deb("libc6", &[("usr/lib/libc.so.6", None)])]),
            ScratchMerge::default()
        );
        assert_eq!(
            on_scratch(&[deb("tzdata", &[("usr/share/zoneinfo", None)])]),
            ScratchMerge::default()
        );
    }
}
