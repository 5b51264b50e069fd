//! Scanning copy sources into contract-ordered entries (metadata only).

use std::collections::btree_map::{BTreeMap, Entry as MapEntry};
use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::FileType;

use super::ignore::{IgnoreMatcher, IgnoreState};
use super::{CopySpec, Entry, EntryKind, LayerError, ModePolicy, StatKey};
use crate::fsat::{self, Dir, Meta};

/// Walk the sources (metadata only, no content read except an open() check that each regular
/// file is readable) and return the layer's entries in contract order:
///
/// - sorted by path bytes, parents before children, ancestors of each `dest` synthesized
///   (mode 0755, uid/gid 0, zero [`StatKey`]);
/// - a top-level `src` that is a symlink is resolved (like `docker COPY`); every symlink beneath
///   a directory source is kept as a symlink, target verbatim, never followed;
/// - regular files sharing (dev, ino) with nlink > 1 (and the same mode/uid/gid) become
///   hardlinks to the first of them in sorted order;
/// - an excluded directory is pruned unless a `!` pattern could re-include something beneath
///   it; it is then emitted (with its own metadata) only if something beneath it is included;
/// - the same path from two specs: identical directories merge, a synthesized ancestor yields to
///   a real directory, anything else is a [`LayerError::Conflict`] naming both sources.
///
/// Every name beneath a directory source is listed, `lstat`ed and opened through its directory's
/// handle ([`crate::fsat`]), never through a symlink: a directory swapped for a symlink during
/// the walk is [`LayerError::Replaced`]. Regular files are read later through a
/// [`super::HostReader`], which checks that each is the inode listed here.
///
/// Sockets, FIFOs and device nodes are [`LayerError::Unsupported`] (unless ignored); non-UTF-8
/// names are [`LayerError::NonUtf8`] (unless ignored: patterns match names as bytes).
pub fn scan(specs: &[CopySpec]) -> Result<Vec<Entry>, LayerError> {
    let mut acc = Acc::default();
    for spec in specs {
        scan_spec(spec, &mut acc)?;
    }
    let mut entries: Vec<Entry> = std::mem::take(&mut acc.map)
        .into_values()
        .map(|(e, _)| e)
        .collect();
    entries.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    link_hardlinks(&mut entries, &acc.multi_link);
    Ok(entries)
}

/// Where an entry came from, for conflict messages.
#[derive(Clone, Debug)]
enum Origin {
    Synthesized(String),
    Host(PathBuf),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Synthesized(dest) => {
                write!(f, "the parent directories of destination `{dest}`")
            }
            Origin::Host(p) => write!(f, "{}", p.display()),
        }
    }
}

/// Entries keyed by path without the trailing "/", so a file and a directory of the same name
/// collide.
#[derive(Default)]
struct Acc {
    map: BTreeMap<String, (Entry, Origin)>,
    /// (dev, ino) of regular files with nlink > 1.
    multi_link: HashSet<(u64, u64)>,
}

impl Acc {
    fn insert(&mut self, entry: Entry, origin: Origin, nlink: u64) -> Result<(), LayerError> {
        let key = entry.path.trim_end_matches('/').to_string();
        match self.map.entry(key) {
            MapEntry::Vacant(v) => {
                if matches!(entry.kind, EntryKind::File { .. }) && nlink > 1 {
                    self.multi_link.insert((entry.stat.dev, entry.stat.ino));
                }
                v.insert((entry, origin));
                Ok(())
            }
            MapEntry::Occupied(mut o) => {
                let (old, old_origin) = o.get();
                let both_dirs = old.kind == EntryKind::Dir && entry.kind == EntryKind::Dir;
                let same = old.mode == entry.mode && old.uid == entry.uid && old.gid == entry.gid;
                match (old_origin, &origin) {
                    _ if both_dirs && same => Ok(()),
                    (_, Origin::Synthesized(_)) if both_dirs => Ok(()),
                    (Origin::Synthesized(_), Origin::Host(_)) if both_dirs => {
                        o.insert((entry, origin));
                        Ok(())
                    }
                    _ => Err(LayerError::Conflict {
                        path: o.key().clone(),
                        first: old_origin.to_string(),
                        second: origin.to_string(),
                    }),
                }
            }
        }
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> LayerError + '_ {
    move |source| LayerError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// An error opening a name below a source: a name that became a symlink (or a directory that
/// became something else) since it was listed is [`LayerError::Replaced`], never followed.
fn open_err(path: &Path) -> impl FnOnce(std::io::Error) -> LayerError + '_ {
    move |source| {
        if fsat::is_replaced(&source) {
            LayerError::Replaced {
                path: path.to_path_buf(),
            }
        } else {
            LayerError::Io {
                path: path.to_path_buf(),
                source,
            }
        }
    }
}

/// The destination as components; a file destination ending in "/" gets the source's name.
fn dest_components(spec: &CopySpec, is_file: bool) -> Result<Vec<String>, LayerError> {
    let bad = |reason| LayerError::InvalidDest {
        src: spec.src.clone(),
        dest: spec.dest.clone(),
        reason,
    };
    if !spec.dest.starts_with('/') {
        return Err(bad("must be an absolute path"));
    }
    if spec.dest.contains('\0') {
        return Err(bad("contains a NUL byte"));
    }
    let mut comps = Vec::new();
    for c in spec.dest.split('/') {
        match c {
            "" | "." => {}
            ".." => return Err(bad("contains a `..` component")),
            c => comps.push(c.to_string()),
        }
    }
    if is_file && (spec.dest.ends_with('/') || comps.is_empty()) {
        let name = spec
            .src
            .file_name()
            .ok_or_else(|| bad("the source has no file name"))?;
        let name = name.to_str().ok_or_else(|| LayerError::NonUtf8 {
            path: spec.src.clone(),
        })?;
        if name.starts_with(".wh.") {
            return Err(LayerError::Whiteout {
                path: spec.src.clone(),
            });
        }
        comps.push(name.to_string());
    }
    Ok(comps)
}

fn stat_key(m: &Meta) -> StatKey {
    StatKey {
        dev: m.dev,
        ino: m.ino,
        size: m.size,
        mtime_ns: m.mtime_ns,
        ctime_ns: m.ctime_ns,
        mode: m.mode,
    }
}

fn scan_spec(spec: &CopySpec, acc: &mut Acc) -> Result<(), LayerError> {
    // Follows a top-level symlink, like docker COPY.
    let meta = Meta::from(&fs_err::metadata(&spec.src).map_err(io_err(&spec.src))?);
    let is_file = meta.is_file();
    let comps = dest_components(spec, is_file)?;
    // Ancestors of the destination are synthesized; the destination itself is the source.
    let mut path = String::new();
    for c in comps.iter().take(comps.len().saturating_sub(1)) {
        path.push_str(c);
        path.push('/');
        let synth = Entry {
            path: path.clone(),
            kind: EntryKind::Dir,
            mode: 0o755,
            uid: 0,
            gid: 0,
            stat: StatKey::default(),
        };
        acc.insert(synth, Origin::Synthesized(spec.dest.clone()), 1)?;
    }
    let origin = Origin::Host(spec.src.clone());
    let Some(last) = comps.last() else {
        // A directory copied to "/": its contents land at the root, the root has no entry.
        return walk_source(spec, acc, "");
    };
    path.push_str(last);
    if meta.is_dir() {
        path.push('/');
        acc.insert(make_entry(spec, &spec.src, &path, &meta, None)?, origin, 1)?;
        walk_source(spec, acc, &path)
    } else {
        acc.insert(
            make_entry(spec, &spec.src, &path, &meta, None)?,
            origin,
            meta.nlink,
        )
    }
}

/// Walks a directory source into `tar` (a tar dir path with trailing "/", or "" for the root).
fn walk_source(spec: &CopySpec, acc: &mut Acc, tar: &str) -> Result<(), LayerError> {
    let ignore = IgnoreMatcher::new(&spec.ignore).map_err(|e| LayerError::IgnorePattern {
        src: spec.src.clone(),
        pattern: e.pattern,
        reason: e.reason,
    })?;
    let root = ignore.root();
    // The source itself may be a symlink (followed, like docker COPY); nothing beneath it is
    // ever followed: every name is opened relative to its directory's handle.
    let dir = Dir::open_root(&spec.src, true).map_err(open_err(&spec.src))?;
    let mut w = Walker { spec, ignore, acc };
    w.walk_dir(&dir, &spec.src, &root, Some(tar))?;
    Ok(())
}

struct Walker<'a> {
    spec: &'a CopySpec,
    ignore: IgnoreMatcher,
    acc: &'a mut Acc,
}

impl Walker<'_> {
    /// Walks the children of `dir` (the handle of `host`), whose ignore state is `state` (matching is carried from a
    /// directory to its children, so no path is matched twice). `tar` is the tar path, with a
    /// trailing "/" or empty at the root; `None` beneath a name that is not UTF-8, where only
    /// excluded entries may be (an included one has no tar path: [`LayerError::NonUtf8`]).
    /// Returns how many entries were added beneath.
    fn walk_dir(
        &mut self,
        dir: &Dir,
        host: &Path,
        state: &IgnoreState,
        tar: Option<&str>,
    ) -> Result<usize, LayerError> {
        let mut children = dir.names().map_err(io_err(host))?;
        // Order does not matter for the result (entries are sorted at the end); sorting (by
        // name bytes) keeps error reporting deterministic too.
        children.sort();
        let mut added = 0;
        for name in children {
            let host_child = host.join(&name);
            let child_state = self.ignore.child(state, name.as_bytes());
            let excluded = self.ignore.excluded_at(&child_state);
            // A whiteout name in a layer deletes what the layers below have at that path (and
            // `.wh..wh..opq` everything beside it): never copied from a host tree or a step's
            // output.
            if !excluded && name.as_bytes().starts_with(b".wh.") {
                return Err(LayerError::Whiteout { path: host_child });
            }
            let meta = dir.stat(&name).map_err(io_err(&host_child))?;
            // The tar path, when the name (and every name above it) is UTF-8.
            let tar_child = tar.zip(name.to_str()).map(|(t, n)| format!("{t}{n}"));
            let non_utf8 = || LayerError::NonUtf8 {
                path: host_child.clone(),
            };
            if meta.is_dir() {
                if excluded && !self.ignore.may_reinclude_beneath_at(&child_state) {
                    continue;
                }
                if !excluded && tar_child.is_none() {
                    return Err(non_utf8());
                }
                let tar_child = tar_child.map(|t| t + "/");
                // A directory swapped for a symlink since the `lstat` is refused here, not
                // followed.
                let sub = dir.open_dir(&name).map_err(open_err(&host_child))?;
                let beneath =
                    self.walk_dir(&sub, &host_child, &child_state, tar_child.as_deref())?;
                drop(sub);
                if !excluded || beneath > 0 {
                    let tar_child = tar_child.ok_or_else(non_utf8)?;
                    let e = make_entry(self.spec, &host_child, &tar_child, &meta, None)?;
                    self.acc.insert(e, Origin::Host(host_child), 1)?;
                    added += beneath + 1;
                }
            } else if !excluded {
                let tar_child = tar_child.ok_or_else(non_utf8)?;
                let at = Some((dir, name.as_os_str()));
                let e = make_entry(self.spec, &host_child, &tar_child, &meta, at)?;
                self.acc.insert(e, Origin::Host(host_child), meta.nlink)?;
                added += 1;
            }
        }
        Ok(added)
    }
}

/// One entry from host metadata (`lstat` beneath a source, `stat` for the source itself).
/// `at`: the directory handle and name of an entry beneath a source, through which its open
/// check and its link target go (the source itself is opened by its path).
fn make_entry(
    spec: &CopySpec,
    host: &Path,
    tar: &str,
    meta: &Meta,
    at: Option<(&Dir, &OsStr)>,
) -> Result<Entry, LayerError> {
    let host_mode = meta.mode & 0o7777;
    let (kind, normalized) = match meta.file_type() {
        FileType::Directory => (EntryKind::Dir, 0o755),
        FileType::RegularFile => {
            // The open() check: fail at scan time, not halfway through writing the layer.
            match at {
                Some((dir, name)) => drop(dir.open_file(name).map_err(open_err(host))?),
                None => drop(fs_err::File::open(host).map_err(io_err(host))?),
            }
            let exec = if host_mode & 0o111 != 0 { 0o755 } else { 0o644 };
            (
                EntryKind::File {
                    src: host.to_path_buf(),
                    size: meta.size,
                },
                exec,
            )
        }
        FileType::Symlink => {
            let target = match at {
                // EINVAL: no longer a symlink since the `lstat` (swapped): refused as such.
                Some((dir, name)) => dir.read_link(name).map_err(|source| {
                    if source.raw_os_error() == Some(libc::EINVAL) {
                        LayerError::Replaced {
                            path: host.to_path_buf(),
                        }
                    } else {
                        LayerError::Io {
                            path: host.to_path_buf(),
                            source,
                        }
                    }
                })?,
                None => fs_err::read_link(host).map_err(io_err(host))?.into(),
            };
            let target = target.to_str().ok_or_else(|| LayerError::NonUtf8 {
                path: host.to_path_buf(),
            })?;
            (
                EntryKind::Symlink {
                    target: target.to_string(),
                },
                0o777,
            )
        }
        other => {
            return Err(LayerError::Unsupported {
                path: host.to_path_buf(),
                kind: fsat::kind_name(other),
            })
        }
    };
    let mode = match spec.mode {
        ModePolicy::Normalize => normalized,
        ModePolicy::Preserve => host_mode,
    };
    Ok(Entry {
        path: tar.to_string(),
        kind,
        mode,
        uid: spec.uid,
        gid: spec.gid,
        stat: stat_key(meta),
    })
}

/// Regular files with nlink > 1 sharing (dev, ino), mode and owner: the first in sorted order
/// stays a file, later ones become hardlinks to it.
fn link_hardlinks(entries: &mut [Entry], multi_link: &HashSet<(u64, u64)>) {
    let mut first: HashMap<(u64, u64, u32, u32, u32), String> = HashMap::new();
    for e in entries.iter_mut() {
        let EntryKind::File { .. } = e.kind else {
            continue;
        };
        if !multi_link.contains(&(e.stat.dev, e.stat.ino)) {
            continue;
        }
        let key = (e.stat.dev, e.stat.ino, e.mode, e.uid, e.gid);
        match first.get(&key) {
            Some(target) => {
                e.kind = EntryKind::Hardlink {
                    target: target.clone(),
                }
            }
            None => {
                first.insert(key, e.path.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(src: &Path, dest: &str) -> CopySpec {
        CopySpec {
            src: src.to_path_buf(),
            dest: dest.into(),
            ignore: vec![],
            uid: 1000,
            gid: 1000,
            mode: ModePolicy::Normalize,
        }
    }

    fn paths(entries: &[Entry]) -> Vec<&str> {
        entries.iter().map(|e| e.path.as_str()).collect()
    }

    #[test]
    fn file_dest_forms_and_synthesized_parents() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("app.conf");
        fs_err::write(&f, "x").unwrap();
        let e = scan(&[spec(&f, "/etc/app.conf")]).unwrap();
        assert_eq!(paths(&e), ["etc/", "etc/app.conf"]);
        assert_eq!(
            (e[0].mode, e[0].uid, e[0].stat),
            (0o755, 0, StatKey::default())
        );
        assert_eq!((e[1].mode, e[1].uid), (0o644, 1000));
        let e = scan(&[spec(&f, "/usr/./local//etc/")]).unwrap();
        assert_eq!(
            paths(&e),
            [
                "usr/",
                "usr/local/",
                "usr/local/etc/",
                "usr/local/etc/app.conf"
            ]
        );
        assert_eq!(paths(&scan(&[spec(&f, "/")]).unwrap()), ["app.conf"]);
        for bad in ["relative", "/a/../b"] {
            assert!(matches!(
                scan(&[spec(&f, bad)]),
                Err(LayerError::InvalidDest { .. })
            ));
        }
    }

    #[test]
    fn merges_and_conflicts() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a");
        fs_err::create_dir(&a).unwrap();
        fs_err::write(a.join("x"), "1").unwrap();
        let f = d.path().join("f");
        fs_err::write(&f, "2").unwrap();
        // Synthesized "opt/" yields to the real dir "opt/" (uid 1000), in either order.
        for order in [
            [spec(&f, "/opt/app/f"), spec(&a, "/opt")],
            [spec(&a, "/opt"), spec(&f, "/opt/app/f")],
        ] {
            let e = scan(&order).unwrap();
            assert_eq!(paths(&e), ["opt/", "opt/app/", "opt/app/f", "opt/x"]);
            assert_eq!(e[0].uid, 1000);
        }
        // Identical directories merge; the same file twice is still a conflict.
        let empty = d.path().join("empty");
        fs_err::create_dir(&empty).unwrap();
        assert_eq!(
            paths(&scan(&[spec(&empty, "/a"), spec(&a, "/a")]).unwrap()),
            ["a/", "a/x"]
        );
        assert!(matches!(
            scan(&[spec(&a, "/a"), spec(&a, "/a")]),
            Err(LayerError::Conflict { .. })
        ));
        // A file where a directory is needed, or the same file path twice: errors naming both.
        let err = scan(&[spec(&f, "/opt"), spec(&a, "/opt")])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&f.display().to_string()) && err.contains(&a.display().to_string()),
            "{err}"
        );
        let err = scan(&[spec(&f, "/opt"), spec(&f, "/opt/x")]).unwrap_err();
        assert!(matches!(err, LayerError::Conflict { .. }), "{err}");
        let mut other = spec(&a, "/a");
        other.uid = 5;
        assert!(matches!(
            scan(&[spec(&a, "/a"), other]),
            Err(LayerError::Conflict { .. })
        ));
    }

    #[test]
    fn ignore_prunes_and_reincludes() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        for p in ["build/sub", "src", "target/debug"] {
            fs_err::create_dir_all(root.join(p)).unwrap();
        }
        for p in [
            "build/sub/keep.txt",
            "build/drop",
            "src/main.rs",
            "target/debug/x",
        ] {
            fs_err::write(root.join(p), p).unwrap();
        }
        let mut s = spec(root, "/app");
        s.ignore = vec![
            "build".into(),
            "target".into(),
            "!build/sub/keep.txt".into(),
        ];
        // Unreadable but pruned: proves `target` is never read.
        let e = scan(&[s]).unwrap();
        assert_eq!(
            paths(&e),
            [
                "app/",
                "app/build/",
                "app/build/sub/",
                "app/build/sub/keep.txt",
                "app/src/",
                "app/src/main.rs"
            ]
        );
    }

    #[cfg(unix)]
    #[test]
    fn fifo_is_unsupported_unless_ignored() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("pipe");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let err = scan(&[spec(d.path(), "/x")]).unwrap_err();
        assert!(
            matches!(&err, LayerError::Unsupported { path, .. } if *path == fifo),
            "{err}"
        );
        assert!(err.to_string().contains("FIFO"));
        let mut s = spec(d.path(), "/x");
        s.ignore = vec!["pipe".into()];
        assert_eq!(paths(&scan(&[s]).unwrap()), ["x/"]);
    }

    #[test]
    fn non_utf8_names_are_errors() {
        use std::os::unix::ffi::OsStrExt;
        let d = tempfile::tempdir().unwrap();
        let bad = d.path().join(std::ffi::OsStr::from_bytes(b"bad\xff"));
        fs_err::write(&bad, "x").unwrap();
        let err = scan(&[spec(d.path(), "/x")]).unwrap_err();
        assert!(
            matches!(&err, LayerError::NonUtf8 { path } if *path == bad),
            "{err}"
        );
    }

    #[test]
    fn non_utf8_names_can_be_ignored() {
        use std::os::unix::ffi::OsStrExt;
        let d = tempfile::tempdir().unwrap();
        let bad = d.path().join(std::ffi::OsStr::from_bytes(b"bad\xff"));
        fs_err::write(&bad, "x").unwrap();
        let dir = d.path().join(std::ffi::OsStr::from_bytes(b"d\xfe"));
        fs_err::create_dir(&dir).unwrap();
        fs_err::write(dir.join("keep"), "x").unwrap();
        fs_err::write(d.path().join("ok"), "x").unwrap();
        let with = |ignore: &[&str]| {
            let mut s = spec(d.path(), "/x");
            s.ignore = ignore
                .iter()
                .map(std::string::ToString::to_string)
                .collect();
            scan(&[s])
        };
        assert_eq!(paths(&with(&["bad*", "d?"]).unwrap()), ["x/", "x/ok"]);
        assert_eq!(paths(&with(&["*", "!ok"]).unwrap()), ["x/", "x/ok"]);
        // A directory that is excluded but read (a `!` pattern might re-include beneath it) is
        // fine while nothing beneath it is included.
        assert_eq!(
            paths(&with(&["bad?", "d*", "!d*/other"]).unwrap()),
            ["x/", "x/ok"]
        );
        // Not ignored: an error naming the first such entry in name order; beneath an excluded
        // directory, the entry re-included.
        for (ignore, path) in [
            (&["d*"][..], bad.clone()),
            (&["bad*"][..], dir.clone()),
            (&["bad*", "d*", "!d*/keep"][..], dir.join("keep")),
        ] {
            let err = with(ignore).unwrap_err();
            assert!(
                matches!(&err, LayerError::NonUtf8 { path: p } if *p == path),
                "{ignore:?}: {err}"
            );
        }
    }
}
