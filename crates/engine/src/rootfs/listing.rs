//! The image's file system as far as ocibuild knows it: paths (with link targets) stacked
//! from its layers, and whether a path resolves in it, links followed as the kernel follows
//! them. `system::listing` reads layers into it; the rootfs step checks account shells
//! against it.

use std::collections::BTreeMap;

/// The most links followed resolving one path (the kernel's limit).
const MAX_LINKS: usize = 40;

/// The paths of an image's layers, stacked: normalized path (`usr/bin/sh`) → link target for
/// a symlink, `None` for anything else.
#[derive(Clone, Debug, Default)]
pub struct Listing {
    entries: BTreeMap<String, Option<String>>,
    /// The entries that are directories, with their mode, uid and gid (where the layers they
    /// came from were read with them: `system::listing`'s).
    dirs: BTreeMap<String, DirMeta>,
    /// Directories of layers not looked into (a `[[layer]]` at `/app`): a path under one is
    /// taken to be there.
    assumed: Vec<String>,
}

/// A directory's permission bits and owner, as a layer wrote them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DirMeta {
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
}

impl DirMeta {
    /// A directory made where there was none: the layer writer's 0755, owned by root.
    pub const NEW: DirMeta = DirMeta {
        mode: 0o755,
        uid: 0,
        gid: 0,
    };
}

/// What a path is in the image, as far as the listing knows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    Missing,
    Dir(DirMeta),
    Symlink(String),
    /// A file, or anything else that is not a directory or a link.
    Other,
}

/// `./usr/bin/` → `usr/bin`.
pub fn normalize(p: &str) -> String {
    p.split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect::<Vec<_>>()
        .join("/")
}

impl Listing {
    /// Removes `path` and everything under it (a whiteout).
    pub fn remove(&mut self, path: &str) {
        let under = format!("{path}/");
        self.entries
            .retain(|p, _| p != path && !p.starts_with(&under));
        self.dirs.retain(|p, _| p != path && !p.starts_with(&under));
    }

    /// What `path` (normalized, relative: `usr/bin`) is, its own last component not followed.
    pub fn kind(&self, path: &str) -> Kind {
        match self.entries.get(path) {
            None => Kind::Missing,
            Some(Some(t)) => Kind::Symlink(t.clone()),
            Some(None) => match self.dirs.get(path) {
                Some(m) => Kind::Dir(*m),
                None => Kind::Other,
            },
        }
    }

    /// Adds directories with their metadata (over what is there; their entries are added by
    /// [`Listing::extend`]).
    pub fn extend_dirs(&mut self, dirs: impl IntoIterator<Item = (String, DirMeta)>) {
        for (p, m) in dirs {
            self.dirs.insert(p, m);
        }
    }

    /// Removes everything under the directory `dir` (an opaque whiteout; `""`: the root).
    pub fn clear_under(&mut self, dir: &str) {
        if dir.is_empty() {
            self.entries.clear();
            self.dirs.clear();
            return;
        }
        let under = format!("{dir}/");
        self.entries.retain(|p, _| !p.starts_with(&under));
        self.dirs.retain(|p, _| !p.starts_with(&under));
    }

    /// Takes every path under the directory `dir` to be there (a layer not looked into).
    pub fn assume(&mut self, dir: &str) {
        self.assumed.push(normalize(dir));
    }

    /// Adds entries (path → link target), over what is there.
    pub fn extend(&mut self, entries: impl IntoIterator<Item = (String, Option<String>)>) {
        for (p, t) in entries {
            // A later layer's non-directory replaces a directory's metadata.
            self.dirs.remove(&p);
            self.entries.insert(p, t);
        }
    }

    /// A listing of these entries (path → link target), for tests and callers that know them.
    pub fn of(entries: impl IntoIterator<Item = (String, Option<String>)>) -> Listing {
        Listing {
            entries: entries
                .into_iter()
                .map(|(p, t)| (normalize(&p), t))
                .collect(),
            dirs: BTreeMap::new(),
            assumed: Vec::new(),
        }
    }

    /// Whether the absolute `path` names something in the image, its links (in any
    /// component) followed as the kernel would, within the image.
    pub fn resolves(&self, path: &str) -> bool {
        let mut todo: Vec<String> = components(path).into_iter().rev().collect();
        let mut at: Vec<String> = Vec::new();
        let mut links = 0;
        while let Some(c) = todo.pop() {
            match c.as_str() {
                "." => continue,
                ".." => {
                    at.pop();
                    continue;
                }
                _ => {}
            }
            at.push(c);
            let here = at.join("/");
            match self.entries.get(&here) {
                // Not listed: there if under a layer not looked into (its parents are
                // directories then).
                None => {
                    let under = |a: &String| {
                        a.is_empty() || here == *a || here.starts_with(&format!("{a}/"))
                    };
                    if self.assumed.iter().any(under) {
                        return true;
                    }
                    if !self
                        .assumed
                        .iter()
                        .any(|a| a.starts_with(&format!("{here}/")))
                    {
                        return false;
                    }
                }
                Some(None) => {}
                Some(Some(target)) => {
                    links += 1;
                    if links > MAX_LINKS {
                        return false;
                    }
                    at.pop();
                    if target.starts_with('/') {
                        at.clear();
                    }
                    todo.extend(components(target).into_iter().rev());
                }
            }
        }
        true
    }
}

fn components(p: &str) -> Vec<String> {
    p.split('/')
        .filter(|c| !c.is_empty())
        .map(String::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::Listing;

    #[test]
    fn paths_resolve_through_links() {
        let l = Listing::of([
            ("bin".to_string(), Some("usr/bin".to_string())),
            ("usr".into(), None),
            ("usr/bin".into(), None),
            ("usr/bin/dash".into(), None),
            ("usr/bin/sh".into(), Some("dash".into())),
            ("usr/sbin".into(), None),
            (
                "usr/sbin/nologin".into(),
                Some("/usr/bin/../bin/dash".into()),
            ),
            ("loop".into(), Some("loop".into())),
            ("dangling".into(), Some("/nowhere".into())),
        ]);
        assert!(l.resolves("/bin/sh"));
        assert!(l.resolves("/usr/bin/sh"));
        assert!(l.resolves("/usr/sbin/nologin"));
        // `..` after a link is taken from where the link led, as the kernel does.
        assert!(l.resolves("/bin/../bin/dash"));
        assert!(!l.resolves("/bin/../usr/bin/dash"));
        assert!(!l.resolves("/bin/bash"));
        assert!(!l.resolves("/loop"));
        assert!(!l.resolves("/dangling"));
        assert!(!Listing::default().resolves("/bin/sh"));
        let mut l = l;
        l.assume("/opt/tools");
        assert!(l.resolves("/opt/tools/sh"));
        assert!(!l.resolves("/opt/other"));
        l.remove("usr/bin");
        assert!(!l.resolves("/bin/sh"));
    }
}
